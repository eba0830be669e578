//! Load time, latency and heap use of the MiniLM embedder.
//!
//! ```text
//! cargo run --release --example embed_memory [MODEL_DIR]
//! ```
//!
//! MODEL_DIR defaults to `$MNEMO_MODEL_DIR`, else the directory
//! `scripts/fetch-model.sh --print-dir` names. A counting global allocator
//! measures the heap: live bytes after load (what the loaded model keeps),
//! the peak during load, and the peak while a batch runs.

use std::process::ExitCode;

/// The measurements; they need the embedder, so the `semantic` feature.
#[cfg(feature = "semantic")]
mod measure {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    use mnemo::embed::{Embedder, MiniLm};

    /// The system allocator, counting live and peak bytes.
    struct CountingAllocator;

    static LIVE: AtomicUsize = AtomicUsize::new(0);
    static PEAK: AtomicUsize = AtomicUsize::new(0);

    fn record_growth(bytes: usize) {
        let live = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
        PEAK.fetch_max(live, Ordering::Relaxed);
    }

    // SAFETY: every call is forwarded unchanged to `System`; only counters are
    // updated besides.
    unsafe impl GlobalAlloc for CountingAllocator {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let pointer = unsafe { System.alloc(layout) };
            if !pointer.is_null() {
                record_growth(layout.size());
            }
            pointer
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            let pointer = unsafe { System.alloc_zeroed(layout) };
            if !pointer.is_null() {
                record_growth(layout.size());
            }
            pointer
        }

        unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
            unsafe { System.dealloc(pointer, layout) };
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }

        unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            let new_pointer = unsafe { System.realloc(pointer, layout, new_size) };
            if !new_pointer.is_null() {
                LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
                record_growth(new_size);
            }
            new_pointer
        }
    }

    #[global_allocator]
    static ALLOCATOR: CountingAllocator = CountingAllocator;

    fn mib(bytes: usize) -> String {
        format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
    }

    /// Resets the peak to the live bytes, so the next peak is that of what follows.
    fn reset_peak() {
        PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    fn model_dir() -> Result<PathBuf, String> {
        if let Some(dir) = std::env::args_os().nth(1) {
            return Ok(dir.into());
        }
        if let Some(dir) = std::env::var_os("MNEMO_MODEL_DIR").filter(|d| !d.is_empty()) {
            return Ok(dir.into());
        }
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/fetch-model.sh");
        let output = std::process::Command::new("bash")
            .args([script, "--print-dir"])
            .output()
            .map_err(|e| format!("cannot run {script}: {e}"))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        stdout
            .lines()
            .last()
            .map(PathBuf::from)
            .ok_or_else(|| format!("{script} printed no directory"))
    }

    /// A text of exactly `tokens` model tokens, `[CLS]` and `[SEP]` included.
    fn text_of(model: &MiniLm, tokens: usize) -> Result<String, String> {
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
        if count == tokens {
            Ok(text)
        } else {
            Err(format!("the {tokens}-token text has {count} tokens"))
        }
    }

    /// Median latency of embedding `text` alone, over 10 runs after 2 warm-ups.
    fn median_latency(model: &MiniLm, text: &str) -> Result<Duration, mnemo::Error> {
        for _ in 0..2 {
            model.embed_batch(&[text])?;
        }
        let mut times = Vec::new();
        for _ in 0..10 {
            let start = Instant::now();
            model.embed_batch(&[text])?;
            times.push(start.elapsed());
        }
        times.sort();
        Ok(times[times.len() / 2])
    }

    pub fn run() -> Result<(), String> {
        let dir = model_dir()?;
        let before_load = LIVE.load(Ordering::Relaxed);
        reset_peak();
        let start = Instant::now();
        let model = MiniLm::from_dir(&dir).map_err(|e| e.to_string())?;
        let load_time = start.elapsed();
        let after_load = LIVE.load(Ordering::Relaxed) - before_load;
        let load_peak = PEAK.load(Ordering::Relaxed) - before_load;
        println!("model:               {}", model.model_id());
        println!("load time:           {load_time:.2?}");
        println!(
            "heap after load:     {} live, {} peak during load",
            mib(after_load),
            mib(load_peak)
        );

        for tokens in [16, 128] {
            let text = text_of(&model, tokens)?;
            let latency = median_latency(&model, &text).map_err(|e| e.to_string())?;
            println!("latency {tokens:>3} tokens:  {latency:.2?} (median of 10)");
        }

        let short_text = text_of(&model, 16)?;
        let short_batch: Vec<&str> = vec![short_text.as_str(); 32];
        let start = Instant::now();
        model.embed_batch(&short_batch).map_err(|e| e.to_string())?;
        let batched = start.elapsed();
        let start = Instant::now();
        for text in &short_batch {
            model.embed_batch(&[text]).map_err(|e| e.to_string())?;
        }
        let one_by_one = start.elapsed();
        println!("batch 32x16 tokens:  {batched:.2?} batched, {one_by_one:.2?} one at a time");

        let long_text = text_of(&model, 256)?;
        let batch: Vec<&str> = vec![long_text.as_str(); 32];
        let live_before_batch = LIVE.load(Ordering::Relaxed);
        reset_peak();
        let start = Instant::now();
        let embeddings = model.embed_batch(&batch).map_err(|e| e.to_string())?;
        let batch_time = start.elapsed();
        let batch_peak = PEAK.load(Ordering::Relaxed);
        println!(
            "batch 32x256 tokens: {batch_time:.2?}, heap peak {} ({} above the loaded model)",
            mib(batch_peak - before_load),
            mib(batch_peak - live_before_batch)
        );
        if embeddings.len() != batch.len() {
            return Err("the batch returned the wrong number of embeddings".into());
        }
        Ok(())
    }
}

#[cfg(feature = "semantic")]
fn main() -> ExitCode {
    match measure::run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("embed_memory: {message}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(not(feature = "semantic"))]
fn main() -> ExitCode {
    eprintln!("embed_memory: build with the `semantic` feature");
    ExitCode::FAILURE
}
