//! Builds a lexical store natively, for profiling the ingest path that the
//! package's build in `bench/sections/lexical.mjs` runs (the same engine and
//! layout over an in-memory backend, batches of `--batch` memories in one
//! scope, no model) and for checking that a change to it keeps the store's
//! bytes: the clock and ids are fixed (`FixedEnvironment`), so two builds of
//! the same texts give the same pairs, and the digest printed at the end is
//! comparable between two versions of the code.
//!
//! ```text
//! cargo run --release --example build_store -- [--batch 1000] < texts.jsonl
//! ```
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

use std::io::BufRead;
use std::time::Instant;

use memtide::env::FixedEnvironment;
use memtide::storage::{Batch, MemoryStorage, Storage, StorageError};
use memtide::{Memory, MemoryInput, Scope, Timestamp};
use sha2::{Digest, Sha256};

type Failure = Box<dyn std::error::Error>;

/// Where a segment's value is stored (`docs/format.md`, section 2.2).
const SEGMENT_PREFIX: &str = "seg/";

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
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--batch" => batch = args.next().ok_or("--batch needs a value")?.parse()?,
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
    let env = FixedEnvironment::new(Timestamp(1_790_000_000_000));
    let mut memory = Memory::open(Counting::default(), env, Default::default())?;
    let scope = Scope::workspace("bench", "main");
    let batches = texts.len().div_ceil(batch);
    let mut tenth_start = Instant::now();
    let start = tenth_start;
    for (done, chunk) in texts.chunks(batch).enumerate() {
        let inputs = chunk
            .iter()
            .map(|text| MemoryInput::new(text.clone(), scope.clone()))
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
