//! Bench-only WebAssembly entry points for `bench/` (not part of the npm
//! package, whose API embeds only with the model it is given and has no
//! `embed` call):
//!
//! - [`BenchEmbedder`]: memtide's MiniLM (tract) on its own, for the
//!   embedding section: the same `MiniLm` the package runs.
//! - [`BenchStore`]: a `Memory` over in-memory storage whose embedder returns
//!   vectors the benchmark registered beforehand, for the retrieval section:
//!   synthetic 384-d vectors, and queries timed without their embedding.
//!
//! Built by `bench/run.sh` with
//! `cargo build --release -p memtide-js-model --example bench_wasm --target wasm32-unknown-unknown`
//! (an example of crates/js-model, the package's model module, whose
//! JavaScript randomness it needs).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use js_sys::Uint8Array;
use memtide::embed::{Embedder, MiniLm};
use memtide::env::FixedEnvironment;
use memtide::storage::MemoryStorage;
use memtide::{IngestOutcome, Memory, MemoryInput, RetrieveQuery, Scope, Timestamp};
use memtide_js_model::HostFile;
use wasm_bindgen::prelude::*;

/// Dimensions of the synthetic vectors (MiniLM's).
const DIMENSIONS: usize = 384;
/// The store's clock; memories are created before it.
const NOW_MS: i64 = 1_700_000_000_000;

fn js_error(error: impl std::fmt::Display) -> JsError {
    JsError::new(&error.to_string())
}

/// Bytes of this instance's linear memory (it never shrinks: also the peak).
#[wasm_bindgen(js_name = memoryBytes)]
pub fn memory_bytes() -> f64 {
    core::arch::wasm32::memory_size::<0>() as f64 * 65536.0
}

/// memtide's MiniLM, loaded from the ONNX bytes and `tokenizer.json`.
#[wasm_bindgen]
pub struct BenchEmbedder(MiniLm);

#[wasm_bindgen]
impl BenchEmbedder {
    /// Loaded as the package's model module loads it: the file read from
    /// the host's buffer a window at a time.
    #[wasm_bindgen(constructor)]
    pub fn new(onnx: Uint8Array, tokenizer: &str) -> Result<BenchEmbedder, JsError> {
        MiniLm::from_file(HostFile(onnx), tokenizer)
            .map(BenchEmbedder)
            .map_err(js_error)
    }

    /// The embeddings of `texts` (one `embed_batch` call), row after row.
    pub fn embed(&self, texts: Vec<String>) -> Result<Vec<f32>, JsError> {
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let rows = self.0.embed_batch(&texts).map_err(js_error)?;
        Ok(rows.concat())
    }

    /// Model tokens of `text`, `[CLS]` and `[SEP]` included.
    pub fn tokens(&self, text: &str) -> usize {
        self.0.token_ids(text).len()
    }
}

/// An embedder answering with the vectors registered for each text.
#[derive(Default)]
struct Lookup(Mutex<HashMap<String, Vec<f32>>>);

impl Lookup {
    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<f32>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Embedder for Lookup {
    fn model_id(&self) -> &str {
        "bench-lookup/384"
    }

    fn dimensions(&self) -> usize {
        DIMENSIONS
    }

    fn embed_batch(&self, texts: &[&str]) -> memtide::Result<Vec<Vec<f32>>> {
        let table = self.table();
        texts
            .iter()
            .map(|text| {
                table.get(*text).cloned().ok_or_else(|| {
                    memtide::Error::Model(format!("no vector registered for {text:?}"))
                })
            })
            .collect()
    }

    fn count_tokens(&self, text: &str) -> usize {
        text.split_whitespace().count()
    }
}

/// A store of one scope fed precomputed vectors.
#[wasm_bindgen]
pub struct BenchStore {
    memory: Memory<MemoryStorage, FixedEnvironment>,
    lookup: Arc<Lookup>,
}

fn scope() -> Scope {
    Scope::workspace("bench", "main")
}

/// Registers `vectors` (row after row) for `texts`.
fn register(lookup: &Lookup, texts: &[String], vectors: &[f32]) -> Result<(), JsError> {
    if vectors.len() != texts.len() * DIMENSIONS {
        return Err(js_error(format!(
            "{} texts need {} vector components, got {}",
            texts.len(),
            texts.len() * DIMENSIONS,
            vectors.len()
        )));
    }
    let mut table = lookup.table();
    for (text, vector) in texts.iter().zip(vectors.chunks_exact(DIMENSIONS)) {
        table.insert(text.clone(), vector.to_vec());
    }
    Ok(())
}

#[wasm_bindgen]
impl BenchStore {
    #[wasm_bindgen(constructor)]
    pub fn new() -> Result<BenchStore, JsError> {
        let env = FixedEnvironment::new(Timestamp(NOW_MS));
        let mut memory =
            Memory::open(MemoryStorage::new(), env, Default::default()).map_err(js_error)?;
        let lookup = Arc::new(Lookup::default());
        memory.set_embedder(lookup.clone()).map_err(js_error)?;
        Ok(BenchStore { memory, lookup })
    }

    /// Ingests `texts` with their `vectors`, the `i`-th created `age_ms(i)`
    /// before the clock (`first_age_ms - i * step_ms`); a step above the
    /// thread gap keeps each memory's context vector its own vector.
    /// Returns one id per text, `""` where nothing was added.
    pub fn ingest(
        &mut self,
        texts: Vec<String>,
        vectors: Vec<f32>,
        first_age_ms: f64,
        step_ms: f64,
    ) -> Result<Vec<String>, JsError> {
        register(&self.lookup, &texts, &vectors)?;
        let inputs = texts
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let mut input = MemoryInput::new(text.clone(), scope());
                let age = first_age_ms - i as f64 * step_ms;
                input.created_at = Some(Timestamp(NOW_MS - age as i64));
                input
            })
            .collect();
        let results = self.memory.ingest(inputs);
        self.lookup.table().clear();
        Ok(results
            .map_err(js_error)?
            .into_iter()
            .map(|r| match (r.outcome, r.id) {
                (IngestOutcome::Added, Some(id)) => id,
                _ => String::new(),
            })
            .collect())
    }

    /// The ids of the best `limit` hits for `text`, whose embedding is
    /// `vector` (dry run: nothing is marked used).
    pub fn search(
        &mut self,
        text: String,
        vector: Vec<f32>,
        limit: usize,
    ) -> Result<Vec<String>, JsError> {
        let texts = [text];
        register(&self.lookup, &texts, &vector)?;
        let [text] = texts;
        let mut query = RetrieveQuery::new(text, scope());
        query.limit = Some(limit);
        query.dry_run = true;
        let hits = self.memory.retrieve(&query);
        self.lookup.table().clear();
        Ok(hits
            .map_err(js_error)?
            .into_iter()
            .map(|hit| hit.item.id)
            .collect())
    }
}
