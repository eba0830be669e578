//! Fills a store with embedded memories natively, for the wasm memory
//! section of `bench/` (`bench/sections/wasmmem.mjs --model`): embedding
//! 100,000 texts with the model in WebAssembly takes far longer than
//! natively, and the section measures the package *opening* such a store,
//! not filling it. The store is the one the package would write: the same
//! engine and layout over an in-memory backend, the same model (so the
//! package, given the same files, finds every memory embedded with its
//! model and embeds none on open), ingests of `--batch` memories in one
//! scope.
//!
//! ```text
//! cargo run --release --example fill_store -- --model DIR [--batch 1000] [--threads 2] [--given-vectors FILE] [--measure-open] < texts.jsonl > store.jsonl
//! ```
//!
//! stdin: JSON Lines, one text (a JSON string) per line. With
//! `--measure-open`, after filling, it opens the store once more natively
//! (`Memory::open` over the filled in-memory backend, with the model) and
//! prints to stderr the heap the open took, counted by the global
//! allocator: live bytes before (the stored records, the model and any
//! given vectors), the peak while opening, and live bytes after (the
//! engine added); the breakdown of `docs/speed.md`'s wasm-memory
//! sections, natively (64-bit pointers). With `--given-vectors FILE` (one vector per text, in order, each the model's
//! dimension of little-endian `f32`s) those vectors are stored under the
//! model's id instead of embedding the texts (the model's tokenizer still
//! counts tokens). That is for sizes where the
//! model's time is out of reach (100,000 texts: most of an hour on a
//! shared machine): a store's bytes and memory do not depend on the
//! values of its int8 codes, which the section checks by comparing both
//! kinds of store at a size where both are feasible. stdout: the store's
//! pairs, one `[key, base64 value]` JSON array per line (the format the
//! section's Map adapter loads). Progress goes to stderr.

use std::collections::HashMap;
use std::io::{BufRead, BufWriter, Write};
use std::path::PathBuf;
use std::sync::Arc;

use memtide::embed::{Embedder, MiniLm};
use memtide::env::SystemEnvironment;
use memtide::storage::{MemoryStorage, Storage};
use memtide::{Memory, MemoryInput, Scope};

type Failure = Box<dyn std::error::Error>;

// The heap figures of `--measure-open`.
#[path = "counting_alloc.rs"]
mod counting_alloc;
#[path = "given_vectors.rs"]
mod given_vectors;

use counting_alloc::{live, peak, reset_peak, CountingAllocator};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

const MIB: f64 = 1024.0 * 1024.0;

/// The command line.
struct Options {
    model: PathBuf,
    batch: usize,
    threads: usize,
    given_vectors: Option<PathBuf>,
    measure_open: bool,
}

fn options() -> Result<Options, Failure> {
    let mut model = std::env::var_os("MEMTIDE_MODEL_DIR")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from);
    let (mut batch, mut threads, mut given_vectors, mut measure_open) = (1000, 1, None, false);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--model" => model = Some(value()?.into()),
            "--batch" => batch = value()?.parse()?,
            "--threads" => threads = value()?.parse()?,
            "--given-vectors" => given_vectors = Some(value()?.into()),
            "--measure-open" => measure_open = true,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    Ok(Options {
        model: model.ok_or("--model DIR (or MEMTIDE_MODEL_DIR) is required")?,
        batch: batch.max(1),
        threads: threads.max(1),
        given_vectors,
        measure_open,
    })
}

/// The model, each batch split over `threads` threads (the embeddings are
/// the model's own: each text is embedded alone by one clone).
struct Parallel {
    model: MiniLm,
    threads: usize,
}

impl Embedder for Parallel {
    fn model_id(&self) -> &str {
        self.model.model_id()
    }

    fn dimensions(&self) -> usize {
        self.model.dimensions()
    }

    fn embed_batch(&self, texts: &[&str]) -> memtide::Result<Vec<Vec<f32>>> {
        let share = texts.len().div_ceil(self.threads).max(1);
        let parts: Vec<memtide::Result<Vec<Vec<f32>>>> = std::thread::scope(|scope| {
            let running: Vec<_> = texts
                .chunks(share)
                .map(|part| {
                    let model = self.model.clone();
                    scope.spawn(move || model.embed_batch(part))
                })
                .collect();
            running
                .into_iter()
                .map(|thread| {
                    thread
                        .join()
                        .unwrap_or_else(|_| Err(memtide::Error::Model("a thread panicked".into())))
                })
                .collect()
        });
        let mut vectors = Vec::with_capacity(texts.len());
        for part in parts {
            vectors.extend(part?);
        }
        Ok(vectors)
    }

    fn count_tokens(&self, text: &str) -> usize {
        self.model.count_tokens(text)
    }
}

/// The vectors given with the texts, under the model's id.
struct Given {
    model: MiniLm,
    vectors: HashMap<String, Vec<f32>>,
}

impl Embedder for Given {
    fn model_id(&self) -> &str {
        self.model.model_id()
    }

    fn dimensions(&self) -> usize {
        self.model.dimensions()
    }

    fn embed_batch(&self, texts: &[&str]) -> memtide::Result<Vec<Vec<f32>>> {
        texts
            .iter()
            .map(|text| {
                self.vectors.get(*text).cloned().ok_or_else(|| {
                    memtide::Error::Model(format!("no vector was given for {text:?}"))
                })
            })
            .collect()
    }

    fn count_tokens(&self, text: &str) -> usize {
        self.model.count_tokens(text)
    }
}

/// Standard base64 with padding (the section decodes it with `Buffer`).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let n = group
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= group.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn run() -> Result<(), Failure> {
    let options = options()?;
    let model = MiniLm::from_dir(&options.model)?;
    let mut texts = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        if !line.trim().is_empty() {
            texts.push(serde_json::from_str::<String>(&line)?);
        }
    }
    let embedder: Arc<dyn Embedder> = match &options.given_vectors {
        Some(file) => {
            let vectors = given_vectors::read(file, &texts, model.dimensions())?;
            Arc::new(Given { model, vectors })
        }
        None => Arc::new(Parallel {
            model,
            threads: options.threads,
        }),
    };
    let mut memory = Memory::open(
        MemoryStorage::new(),
        SystemEnvironment::default(),
        Default::default(),
    )?;
    memory.set_embedder(embedder)?;
    let scope = Scope::workspace("bench", "main");
    let start = std::time::Instant::now();
    for (done, chunk) in texts.chunks(options.batch).enumerate() {
        let inputs = chunk
            .iter()
            .map(|text| MemoryInput::new(text.clone(), scope.clone()))
            .collect();
        memory.ingest(inputs)?;
        eprintln!(
            "fill_store: {} of {} memories ({:.0?})",
            (done * options.batch + chunk.len()),
            texts.len(),
            start.elapsed()
        );
    }
    let mut out = BufWriter::new(std::io::stdout().lock());
    for (key, value) in memory.storage().scan("")? {
        writeln!(out, "{}", serde_json::to_string(&(key, base64(&value)))?)?;
    }
    out.flush()?;
    drop(out);
    if options.measure_open {
        let (storage, engine) = memory.into_parts();
        let embedder = engine.embedder().cloned();
        drop(engine);
        measure_open(storage, embedder)?;
    }
    Ok(())
}

/// Opens the filled store once more and reports the heap the open took
/// (see the top).
fn measure_open(
    storage: MemoryStorage,
    embedder: Option<Arc<dyn Embedder>>,
) -> Result<(), Failure> {
    reset_peak();
    let stored = live();
    let mut memory = Memory::open(storage, SystemEnvironment::default(), Default::default())?;
    if let Some(embedder) = embedder {
        memory.set_embedder(embedder)?;
    }
    let (highest, after) = (peak(), live());
    eprintln!(
        "fill_store: open: live before {:.1} MiB (records and the model), peak {:.1} MiB (+{:.1}), after {:.1} MiB (+{:.1}: the engine)",
        stored as f64 / MIB,
        highest as f64 / MIB,
        (highest - stored) as f64 / MIB,
        after as f64 / MIB,
        after.saturating_sub(stored) as f64 / MIB
    );
    Ok(())
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("fill_store: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_pads_like_the_standard() {
        assert_eq!(super::base64(b""), "");
        assert_eq!(super::base64(b"f"), "Zg==");
        assert_eq!(super::base64(b"fo"), "Zm8=");
        assert_eq!(super::base64(b"foo"), "Zm9v");
        assert_eq!(super::base64(&[0xfb, 0xff]), "+/8=");
    }
}
