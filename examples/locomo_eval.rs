//! Evidence recall of memtide's retrieval on the LoCoMo development set.
//!
//! ```text
//! cargo run --release --example locomo_eval [-- [--model DIR] [path/to/locomo_dev.json]]
//! ```
//!
//! With `--model DIR` (the directory `scripts/fetch-model.sh` prints) the
//! MiniLM model is attached and retrieval is hybrid; without it, lexical.
//! The protocol (`crates/testkit/src/locomo.rs`) is the one memtide's tests
//! hold the retrieval to.

use std::sync::Arc;

use memtide::embed::Embedder;
use memtide_testkit::locomo::evaluate;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let model_dir = match args.iter().position(|a| a == "--model") {
        Some(i) if i + 1 < args.len() => {
            let dir = args.remove(i + 1);
            args.remove(i);
            Some(dir)
        }
        _ => None,
    };
    let path = args
        .pop()
        .unwrap_or_else(|| "tests/data/locomo_dev.json".to_string());
    let run = load_model(model_dir.as_deref()).and_then(|model| {
        let mode = if model.is_some() { "hybrid" } else { "lexical" };
        let json = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
        evaluate(&json, model).map(|r| (mode, r))
    });
    match run {
        Ok((mode, r)) => println!(
            "LoCoMo dev ({} questions, {mode}): recall@1 {:.3}  recall@5 {:.3}  recall@10 {:.3}",
            r.questions, r.at1, r.at5, r.at10
        ),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}

/// Loads MiniLM from a model directory, if one was given.
fn load_model(dir: Option<&str>) -> Result<Option<Arc<dyn Embedder>>, String> {
    let Some(dir) = dir else { return Ok(None) };
    #[cfg(feature = "semantic")]
    {
        memtide::embed::MiniLm::from_dir(std::path::Path::new(dir))
            .map(|m| Some(Arc::new(m) as Arc<dyn Embedder>))
            .map_err(|e| e.to_string())
    }
    #[cfg(not(feature = "semantic"))]
    {
        Err(format!(
            "cannot load {dir}: built without the `semantic` feature"
        ))
    }
}
