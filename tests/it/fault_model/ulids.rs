//! The run whose ids are real ULIDs and whose memories have embeddings: the
//! layout's key map holds `item/<ULID>` and `vec/<ULID>` by the ULID's
//! value, an embedding's key sharing its memory's (`src/layout/keys.rs`),
//! which the `m000001` ids of the other runs never take.

use std::sync::Arc;

use memtide::codec::decode_vector;
use memtide::embed::Embedder;
use memtide::env::{Environment, UlidGenerator};
use memtide::index::Int8Vector;
use memtide::layout::stored_records;

use super::*;

/// How a run's stores are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ids {
    /// Ids `m000001`, `m000002`, … and no model: every key is held as text.
    Sequential,
    /// Ids from a seeded ULID generator and [`WordEmbedder`] attached at
    /// every open, so each memory has both keys held by one ULID.
    UlidsWithVectors,
}

/// The environment of every run: the clock at `T0`, and the ids [`Ids`]
/// names. Deterministic, so a failing sequence replays.
pub(super) enum TestEnv {
    Sequential(FixedEnvironment),
    Ulids { ids: UlidGenerator, state: u64 },
}

impl TestEnv {
    pub(super) fn new(ids: Ids) -> Self {
        match ids {
            Ids::Sequential => TestEnv::Sequential(FixedEnvironment::new(Timestamp(T0))),
            Ids::UlidsWithVectors => TestEnv::Ulids {
                ids: UlidGenerator::default(),
                state: 0x9E37_79B9_7F4A_7C15,
            },
        }
    }
}

/// splitmix64: the random bits of each ULID.
fn next_random(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Environment for TestEnv {
    fn now(&self) -> Timestamp {
        Timestamp(T0)
    }

    fn new_id(&mut self, newest: Option<&str>) -> String {
        match self {
            TestEnv::Sequential(env) => env.new_id(newest),
            TestEnv::Ulids { ids, state } => {
                let mut random = [0u8; 10];
                random[..8].copy_from_slice(&next_random(state).to_le_bytes());
                random[8..].copy_from_slice(&next_random(state).to_le_bytes()[..2]);
                ids.next(T0, random, newest)
            }
        }
    }
}

/// Components of [`WordEmbedder`]'s vectors: an embedding record of two
/// memories passes the layout's direct-write threshold (16 KiB), so an
/// ingest of two or more goes straight to a segment and segments merge,
/// while one memory's goes to the log.
const DIMS: usize = 8_200;

/// Embeds a text as the normalized sum of a few components per word,
/// chosen by the word's hash: texts that share no word are orthogonal,
/// and each text's vector is its own (the check below compares them).
pub(super) struct WordEmbedder;

impl Embedder for WordEmbedder {
    fn model_id(&self) -> &str {
        "fault-model-words"
    }
    fn dimensions(&self) -> usize {
        DIMS
    }
    fn embed_batch(&self, texts: &[&str]) -> memtide::Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|text| embed(text)).collect())
    }
    fn count_tokens(&self, text: &str) -> usize {
        text.split_whitespace().count()
    }
}

fn embed(text: &str) -> Vec<f32> {
    let mut v = vec![0.0f32; DIMS];
    for word in text.split_whitespace() {
        let mut hash = word.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        for weight in 1..=3 {
            v[(next_random(&mut hash) % DIMS as u64) as usize] += weight as f32;
        }
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    v.iter().map(|x| x / norm).collect()
}

/// Attaches the model when `ids` says so (a write: the first open of a
/// store records the model; later ones find every memory embedded).
pub(super) fn attach<S: AsyncStorage>(
    mem: &mut AsyncMemory<S, TestEnv>,
    ids: Ids,
) -> Result<(), Error> {
    if ids == Ids::UlidsWithVectors {
        block_on(mem.set_embedder(Arc::new(WordEmbedder)))?;
    }
    Ok(())
}

/// The durable records as they are, before any open (which would embed a
/// memory whose embedding was lost): every memory of `model` has its
/// `item/` key and a `vec/` key holding its own text's embedding, and no
/// other `item/` or `vec/` key is stored.
pub(super) fn check_keys<S: AsyncStorage>(storage: &S, model: &Model) -> Result<(), TestCaseError> {
    let records = block_on(stored_records(storage))
        .map_err(|e| TestCaseError::fail(format!("reading the records: {e}")))?;
    let ids = |prefix: &str| -> BTreeSet<String> {
        records
            .keys()
            .filter_map(|key| key.strip_prefix(prefix))
            .map(str::to_string)
            .collect()
    };
    let expected: BTreeSet<String> = model.items.keys().cloned().collect();
    prop_assert_eq!(&ids("item/"), &expected, "the memories' keys");
    prop_assert_eq!(&ids("vec/"), &expected, "the embeddings' keys");
    for (id, item) in &model.items {
        let stored = records
            .get(&format!("vec/{id}"))
            .map(|bytes| decode_vector(bytes).map(|decoded| decoded.vector));
        let wanted = Int8Vector::quantize(&embed(&item.text));
        prop_assert!(
            matches!(&stored, Some(Ok(vector)) if *vector == wanted),
            "the embedding stored under vec/{} is not its text's",
            id
        );
    }
    Ok(())
}
