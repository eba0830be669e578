//! Builds a lexical store natively, for profiling the ingest path that the
//! package's build in `bench/sections/lexical.mjs` runs (the same engine and
//! layout over an in-memory backend, batches of `--batch` memories in one
//! scope, no model) and for checking that a change to it keeps the store's
//! bytes: the clock and ids are fixed (`FixedEnvironment`), so two builds of
//! the same texts give the same pairs, and the digest printed at the end is
//! comparable between two versions of the code.
//!
//! ```text
//! cargo run --release --example build_store -- [--batch 1000] [--vectors FILE] < texts.jsonl
//! ```
//!
//! With `--vectors FILE` (one vector per text, in order, each 384
//! little-endian `f32`s: `bench/lib/corpus.mjs`'s vectors) the build is the
//! retrieval section's hybrid build (`bench/lib/engines.mjs`): an embedder
//! answers each text with its given vector, and the `i`-th memory of a
//! build of `n` is created `n - i` hours before the clock, so no memory
//! follows another.
//!
//! stdin: JSON Lines, one text (a JSON string) per line. stdout: the time
//! of each tenth of the build, then the number of keys, their bytes and a
//! SHA-256 of every pair in key order, then what the commits wrote to
//! segments (`seg/<n>`, `docs/format.md`): values and bytes, the commits
//! that deleted a segment (a merge, or a rewrite for a delete), and the
//! segment bytes written per segment byte stored at the end, less one: how
//! many times, on average, compaction wrote a stored byte again (the
//! merges' rewrites per memory ingested, where memories take about the
//! same room).

use std::collections::HashMap;
use std::io::BufRead;
use std::sync::Arc;
use std::time::Instant;

use memtide::embed::Embedder;
use memtide::env::FixedEnvironment;
use memtide::storage::{Batch, MemoryStorage, Storage, StorageError};
use memtide::{Memory, MemoryInput, Scope, Timestamp};
use sha2::{Digest, Sha256};

#[path = "given_vectors.rs"]
mod given_vectors;

type Failure = Box<dyn std::error::Error>;

/// Where a segment's value is stored (`docs/format.md`, section 2.2).
const SEGMENT_PREFIX: &str = "seg/";

/// The clock of every build.
const NOW_MS: i64 = 1_790_000_000_000;
/// The given vectors' dimension (`bench/lib/corpus.mjs`).
const DIMENSIONS: usize = 384;
/// The step between two memories' creation times with given vectors: more
/// than the 30-minute thread gap.
const HOUR_MS: i64 = 3_600_000;

/// An embedder answering each text with its given vector.
struct Given(HashMap<String, Vec<f32>>);

impl Embedder for Given {
    fn model_id(&self) -> &str {
        "bench-given/384"
    }

    fn dimensions(&self) -> usize {
        DIMENSIONS
    }

    fn embed_batch(&self, texts: &[&str]) -> memtide::Result<Vec<Vec<f32>>> {
        texts
            .iter()
            .map(|text| {
                self.0
                    .get(*text)
                    .cloned()
                    .ok_or_else(|| memtide::Error::Model(format!("no vector given for {text:?}")))
            })
            .collect()
    }

    fn count_tokens(&self, text: &str) -> usize {
        text.split_whitespace().count()
    }
}

/// [`MemoryStorage`] counting what the commits write to segments.
#[derive(Default)]
struct Counting {
    inner: MemoryStorage,
    segments_put: u64,
    segment_bytes_put: u64,
    commits_deleting_a_segment: u64,
}

impl Storage for Counting {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.inner.get(key)
    }

    fn scan(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        self.inner.scan(prefix)
    }

    fn commit(&mut self, batch: &Batch) -> Result<(), StorageError> {
        self.inner.commit(batch)?;
        let mut deletes = false;
        for (_, value) in batch
            .ops()
            .filter(|(key, _)| key.starts_with(SEGMENT_PREFIX))
        {
            match value {
                Some(value) => {
                    self.segments_put += 1;
                    self.segment_bytes_put += value.len() as u64;
                }
                None => deletes = true,
            }
        }
        self.commits_deleting_a_segment += u64::from(deletes);
        Ok(())
    }
}

fn run() -> Result<(), Failure> {
    let mut batch = 1000;
    let mut vectors_file = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--batch" => batch = args.next().ok_or("--batch needs a value")?.parse()?,
            "--vectors" => vectors_file = Some(args.next().ok_or("--vectors needs a file")?),
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let batch = batch.max(1);
    let mut texts = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        if !line.trim().is_empty() {
            texts.push(serde_json::from_str::<String>(&line)?);
        }
    }
    let env = FixedEnvironment::new(Timestamp(NOW_MS));
    let mut memory = Memory::open(Counting::default(), env, Default::default())?;
    if let Some(path) = &vectors_file {
        let vectors = given_vectors::read(path.as_ref(), &texts, DIMENSIONS)?;
        memory.set_embedder(Arc::new(Given(vectors)))?;
    }
    let scope = Scope::workspace("bench", "main");
    let batches = texts.len().div_ceil(batch);
    let mut tenth_start = Instant::now();
    let start = tenth_start;
    let total = texts.len() as i64;
    for (done, chunk) in texts.chunks(batch).enumerate() {
        let first = (done * batch) as i64;
        let inputs = chunk
            .iter()
            .zip(first..)
            .map(|(text, i)| {
                let mut input = MemoryInput::new(text.clone(), scope.clone());
                if vectors_file.is_some() {
                    input.created_at = Some(Timestamp(NOW_MS - (total - i) * HOUR_MS));
                }
                input
            })
            .collect();
        memory.ingest(inputs)?;
        if (done + 1) * 10 / batches > done * 10 / batches {
            println!(
                "batches to {}: {:.0?}",
                (done + 1) * batch,
                tenth_start.elapsed()
            );
            tenth_start = Instant::now();
        }
    }
    println!("build: {:.0?}", start.elapsed());
    let pairs = memory.storage().scan("")?;
    let mut digest = Sha256::new();
    let mut bytes = 0;
    for (key, value) in &pairs {
        for part in [key.as_bytes(), value.as_slice()] {
            digest.update((part.len() as u64).to_le_bytes());
            digest.update(part);
        }
        bytes += key.len() + value.len();
    }
    let hex: String = digest
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    println!("keys: {}, bytes: {bytes}, sha256: {hex}", pairs.len());
    let counting = memory.storage();
    let stored: usize = pairs
        .iter()
        .filter(|(key, _)| key.starts_with(SEGMENT_PREFIX))
        .map(|(_, value)| value.len())
        .sum();
    println!(
        "segments written: {}, bytes: {}, commits deleting a segment: {}, rewritten per byte stored: {:.3}",
        counting.segments_put,
        counting.segment_bytes_put,
        counting.commits_deleting_a_segment,
        counting.segment_bytes_put as f64 / stored.max(1) as f64 - 1.0,
    );
    Ok(())
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("build_store: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
