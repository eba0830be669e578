//! The native section of `bench/`: memtide's own speed and memory figures,
//! natively, with no peer (it prints figures and asserts nothing about
//! them). `bash bench/run.sh --sections native` builds and runs it with the
//! run's sizes; by hand:
//!
//! ```text
//! cargo run --release --example bench_native -- [--model DIR] [--sizes 1000,10000,100000] [--retrieval-only]
//! ```
//!
//! The model directory defaults to `$MEMTIDE_MODEL_DIR`, else to the one
//! `scripts/fetch-model.sh --print-dir` names (run the script first). A
//! counting global allocator measures the heap. Sections:
//!
//! 1. **Model**: load time, heap after load (and its peak during the load),
//!    median latency of one 16- and one 128-token text, 32 short texts
//!    batched against one at a time, and the heap peak of a 32×256 batch.
//! 2. **Ingest**: memories per second through [`Memory::ingest`] (batches of
//!    256) for the 788 turns of the bundled LoCoMo dev set, with the model
//!    and lexical-only.
//! 3. **Retrieval** at each size: a store of that many memories in one
//!    scope (two LoCoMo turns joined per memory), its ingest time, its heap
//!    per 10 000 memories (with the share held by the in-memory storage
//!    backend's records, which a browser keeps in IndexedDB), and hybrid retrieve latency (p50/p95 over the
//!    dev-set questions) *excluding the query embedding*: the vectors come
//!    from a cheap hashed bag-of-words embedder, so building 100 000 memories
//!    does not take an hour of model time. Add the 16-token latency of
//!    section 1 for a real query's embedding.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use memtide::embed::{Embedder, MiniLm};
use memtide::env::FixedEnvironment;
use memtide::storage::MemoryStorage;
use memtide::{Memory, MemoryInput, RetrieveQuery, Scope, Timestamp};
use serde::Deserialize;

#[path = "counting_alloc.rs"]
mod counting_alloc;

use counting_alloc::{live, peak, reset_peak, CountingAllocator};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

type Failure = Box<dyn std::error::Error>;

/// The command line: `--model DIR`, `--sizes N,N,…`, `--retrieval-only`.
struct Options {
    model: Option<PathBuf>,
    sizes: Vec<usize>,
    /// Skips the model and ingest sections.
    retrieval_only: bool,
}

fn options() -> Result<Options, Failure> {
    let mut options = Options {
        model: std::env::var_os("MEMTIDE_MODEL_DIR")
            .filter(|dir| !dir.is_empty())
            .map(PathBuf::from),
        sizes: vec![1_000, 10_000, 100_000],
        retrieval_only: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--model" => options.model = Some(args.next().ok_or("--model needs a DIR")?.into()),
            "--sizes" => {
                let list = args.next().ok_or("--sizes needs a list")?;
                options.sizes = list.split(',').map(str::parse).collect::<Result<_, _>>()?;
            }
            "--retrieval-only" => options.retrieval_only = true,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    Ok(options)
}

/// The model directory: the option, else the fetch script's directory.
fn model_dir(given: Option<PathBuf>) -> Result<PathBuf, Failure> {
    if let Some(dir) = given {
        return Ok(dir);
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/fetch-model.sh");
    let output = std::process::Command::new("bash")
        .args([script, "--print-dir"])
        .output()?;
    let stdout = String::from_utf8(output.stdout)?;
    let dir = stdout
        .lines()
        .last()
        .ok_or("the fetch script printed no directory")?;
    Ok(PathBuf::from(dir))
}

#[derive(Deserialize)]
struct Dataset {
    conversations: Vec<Conversation>,
}

#[derive(Deserialize)]
struct Conversation {
    sessions: Vec<Session>,
    questions: Vec<Question>,
}

#[derive(Deserialize)]
struct Session {
    turns: Vec<Turn>,
}

#[derive(Deserialize)]
struct Turn {
    speaker: String,
    text: String,
}

#[derive(Deserialize)]
struct Question {
    question: String,
}

/// The dev set's turns (`Speaker: text`) and questions.
fn corpus() -> Result<(Vec<String>, Vec<String>), Failure> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/locomo_dev.json");
    let dataset: Dataset = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let mut turns = Vec::new();
    let mut questions = Vec::new();
    for conversation in dataset.conversations {
        for session in conversation.sessions {
            for turn in session.turns {
                turns.push(format!("{}: {}", turn.speaker, turn.text));
            }
        }
        questions.extend(conversation.questions.into_iter().map(|q| q.question));
    }
    Ok((turns, questions))
}

/// A text of exactly `tokens` model tokens, `[CLS]` and `[SEP]` included.
fn text_of(model: &MiniLm, tokens: usize) -> Result<String, Failure> {
    let words = [
        "the", "memory", "of", "this", "chat", "is", "kept", "in", "a", "tab",
    ];
    // Each word is one token: the text grows a token at a time.
    let text = words
        .iter()
        .cycle()
        .take(tokens.saturating_sub(2))
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    let count = model.token_ids(&text).len();
    if count != tokens {
        return Err(format!("the {tokens}-token text has {count} tokens").into());
    }
    Ok(text)
}

/// The median of `runs` timings of `work`, after two warm-up runs.
fn median_time(
    runs: usize,
    mut work: impl FnMut() -> memtide::Result<()>,
) -> memtide::Result<Duration> {
    for _ in 0..2 {
        work()?;
    }
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        work()?;
        times.push(start.elapsed());
    }
    times.sort();
    Ok(times[times.len() / 2])
}

/// Section 1; returns the loaded model.
fn model_figures(dir: &std::path::Path) -> Result<MiniLm, Failure> {
    println!("## Model");
    let before = live();
    reset_peak();
    let start = Instant::now();
    let model = MiniLm::from_dir(dir)?;
    let load_time = start.elapsed();
    let load_peak = peak() - before;
    println!("model                {}", model.model_id());
    println!("load                 {load_time:.2?}");
    println!(
        "heap after load      {} ({} peak during load)",
        mib(live() - before),
        mib(load_peak)
    );
    for tokens in [16, 128] {
        let text = text_of(&model, tokens)?;
        let latency = median_time(20, || model.embed_batch(&[&text]).map(drop))?;
        println!("embed {tokens:>3} tokens     {latency:.2?} (median of 20)");
    }
    let short = text_of(&model, 16)?;
    let batch = vec![short.as_str(); 32];
    let batched = median_time(5, || model.embed_batch(&batch).map(drop))?;
    let one_by_one = median_time(5, || {
        batch
            .iter()
            .try_for_each(|text| model.embed_batch(&[text]).map(drop))
    })?;
    println!("32 × 16 tokens       {batched:.2?} batched, {one_by_one:.2?} one at a time");
    let long = text_of(&model, 256)?;
    let batch = vec![long.as_str(); 32];
    let before_batch = live();
    reset_peak();
    let start = Instant::now();
    model.embed_batch(&batch)?;
    println!(
        "32 × 256 tokens      {:.2?}, heap peak {} above the loaded model",
        start.elapsed(),
        mib(peak() - before_batch)
    );
    Ok(model)
}

fn open_memory() -> memtide::Result<Memory<MemoryStorage, FixedEnvironment>> {
    let env = FixedEnvironment::new(Timestamp(1_700_000_000_000));
    Memory::open(MemoryStorage::new(), env, Default::default())
}

fn scope() -> Scope {
    Scope::workspace("bench", "main")
}

/// Ingests `texts` in batches of `batch`; returns the time taken.
fn ingest_all(
    memory: &mut Memory<MemoryStorage, FixedEnvironment>,
    texts: &[String],
    batch: usize,
) -> memtide::Result<Duration> {
    let start = Instant::now();
    for chunk in texts.chunks(batch) {
        let inputs = chunk
            .iter()
            .map(|text| MemoryInput::new(text.clone(), scope()))
            .collect();
        memory.ingest(inputs)?;
    }
    Ok(start.elapsed())
}

/// Section 2.
fn ingest_figures(model: &MiniLm, turns: &[String]) -> Result<(), Failure> {
    println!("\n## Ingest ({} LoCoMo turns, batches of 256)", turns.len());
    for (mode, embedder) in [
        ("hybrid", Some(Arc::new(model.clone()) as Arc<dyn Embedder>)),
        ("lexical", None),
    ] {
        let mut memory = open_memory()?;
        if let Some(embedder) = embedder {
            memory.set_embedder(embedder)?;
        }
        let elapsed = ingest_all(&mut memory, turns, 256)?;
        println!(
            "{mode:<8}             {:.0} memories/s ({elapsed:.2?})",
            turns.len() as f64 / elapsed.as_secs_f64()
        );
    }
    Ok(())
}

/// A cheap stand-in for the model in the retrieval section: the normalized
/// sum of one pseudo-random vector per lowercase word, so texts sharing
/// words get similar vectors, as with a real model.
struct HashedBagOfWords;

impl HashedBagOfWords {
    const DIMENSIONS: usize = 384;

    fn embed(text: &str) -> Vec<f32> {
        let mut vector = vec![0.0f32; Self::DIMENSIONS];
        for word in text.split(|c: char| !c.is_alphanumeric()) {
            if word.is_empty() {
                continue;
            }
            // FNV-1a of the word seeds a xorshift stream of components.
            let mut state = word
                .to_lowercase()
                .bytes()
                .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                    (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
                });
            for component in &mut vector {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                *component += (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
            }
        }
        let norm = vector
            .iter()
            .map(|x| x * x)
            .sum::<f32>()
            .sqrt()
            .max(f32::MIN_POSITIVE);
        vector.iter_mut().for_each(|x| *x /= norm);
        vector
    }
}

impl Embedder for HashedBagOfWords {
    fn model_id(&self) -> &str {
        "bench-hashed-bag-of-words/384"
    }

    fn dimensions(&self) -> usize {
        Self::DIMENSIONS
    }

    fn embed_batch(&self, texts: &[&str]) -> memtide::Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|text| Self::embed(text)).collect())
    }

    fn count_tokens(&self, text: &str) -> usize {
        text.split_whitespace().count()
    }
}

/// `count` distinct memory texts, each two dev-set turns joined.
fn synthetic_texts(turns: &[String], count: usize) -> Vec<String> {
    let n = turns.len();
    (0..count)
        .map(|i| {
            let (first, second) = (i % n, (i / n + 1 + i) % n);
            format!("{} {}", turns[first], turns[second])
        })
        .collect()
}

/// Section 3, for one size.
fn retrieval_figures(turns: &[String], questions: &[String], size: usize) -> Result<(), Failure> {
    let texts = synthetic_texts(turns, size);
    let before = live();
    let mut memory = open_memory()?;
    memory.set_embedder(Arc::new(HashedBagOfWords))?;
    let ingest_time = ingest_all(&mut memory, &texts, 10_000)?;
    let heap = live() - before;
    let stats = memory.stats(&Default::default());
    let mut latencies = Vec::with_capacity(questions.len());
    for question in questions.iter().cycle().take(questions.len().max(200)) {
        let mut query = RetrieveQuery::new(question.clone(), scope());
        query.dry_run = true;
        let start = Instant::now();
        let hits = memory.retrieve(&query)?;
        latencies.push(start.elapsed());
        std::hint::black_box(hits);
    }
    latencies.sort();
    let percentile = |p: usize| latencies[(latencies.len() - 1) * p / 100];
    let per_10k = |bytes: usize| mib(bytes * 10_000 / stats.items.max(1));
    println!(
        "{size:>7} memories  ingest {ingest_time:>9.2?} ({:>6.0}/s)  \
         heap per 10k {} ({} of it stored records)  retrieve p50 {:>9.2?} p95 {:>9.2?}  \
         ({} stored)",
        size as f64 / ingest_time.as_secs_f64(),
        per_10k(heap),
        per_10k(stats.stored_bytes),
        percentile(50),
        percentile(95),
        stats.items,
    );
    Ok(())
}

fn run() -> Result<(), Failure> {
    let options = options()?;
    let (turns, questions) = corpus()?;
    if !options.retrieval_only {
        let model = model_figures(&model_dir(options.model)?)?;
        ingest_figures(&model, &turns)?;
    }
    println!("\n## Retrieval (hybrid, one scope, query embedding excluded)");
    for size in options.sizes {
        retrieval_figures(&turns, &questions, size)?;
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("bench: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
