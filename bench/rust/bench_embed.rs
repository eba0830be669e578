//! Native reference of the embedding section of `bench/`: memtide's MiniLM
//! (tract) natively, on the same inputs as the wasm runs.
//!
//! ```text
//! cargo run --release --example bench_embed -- REQUEST.json
//! ```
//!
//! The request (written by `bench/sections/embed.mjs`) holds the model
//! directory, the repetition counts and the texts; the answer on stdout is
//! raw samples in milliseconds (the caller takes medians) and the
//! embeddings of the agreement sentences.

use std::path::PathBuf;
use std::time::Instant;

use memtide::embed::{Embedder, MiniLm};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    model_dir: PathBuf,
    load_runs: usize,
    warmup: usize,
    runs: usize,
    /// Texts whose single-text latency is measured (16 and 128 tokens).
    latency_texts: Vec<String>,
    /// The throughput corpus, embedded in batches of `batch`.
    sentences: Vec<String>,
    batch: usize,
    throughput_runs: usize,
    /// Sentences whose embeddings are returned.
    agreement: Vec<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Answer {
    load_ms: Vec<f64>,
    /// One list of samples per latency text.
    latency_ms: Vec<Vec<f64>>,
    throughput_ms: Vec<f64>,
    embeddings: Vec<Vec<f32>>,
}

type Failure = Box<dyn std::error::Error>;

fn millis(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}

/// `runs` timings of `work` after `warmup` untimed calls.
fn samples(
    warmup: usize,
    runs: usize,
    mut work: impl FnMut() -> memtide::Result<()>,
) -> memtide::Result<Vec<f64>> {
    for _ in 0..warmup {
        work()?;
    }
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            work().map(|()| millis(start))
        })
        .collect()
}

fn run() -> Result<(), Failure> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: bench_embed REQUEST.json")?;
    let request: Request = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let mut load_ms = Vec::new();
    let mut model = None;
    for _ in 0..request.load_runs.max(1) {
        let start = Instant::now();
        model = Some(MiniLm::from_dir(&request.model_dir)?);
        load_ms.push(millis(start));
    }
    let model = model.ok_or("no model loaded")?;
    let latency_ms = request
        .latency_texts
        .iter()
        .map(|text| {
            samples(request.warmup, request.runs, || {
                model.embed_batch(&[text]).map(drop)
            })
        })
        .collect::<Result<_, _>>()?;
    let sentences: Vec<&str> = request.sentences.iter().map(String::as_str).collect();
    let throughput_ms = samples(1, request.throughput_runs, || {
        sentences
            .chunks(request.batch.max(1))
            .try_for_each(|chunk| model.embed_batch(chunk).map(drop))
    })?;
    let agreement: Vec<&str> = request.agreement.iter().map(String::as_str).collect();
    let embeddings = model.embed_batch(&agreement)?;
    let answer = Answer {
        load_ms,
        latency_ms,
        throughput_ms,
        embeddings,
    };
    println!("{}", serde_json::to_string(&answer)?);
    Ok(())
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("bench_embed: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
