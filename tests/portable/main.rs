//! The tests that run natively and, compiled to wasm32, in headless Chromium
//! (`scripts/test-browser.sh`): the storage contract (with IndexedDB in the
//! browser), the MiniLM golden vectors, the vector scores and the SIMD
//! kernels. A binary apart from `tests/it/` because the browser build takes
//! one binary and has neither proptest, tempfile nor the directory store that
//! `tests/it/` uses.

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

mod embed_golden;
mod int_dot;
mod storage_conformance;
mod vector_scores;
mod wasm_gemm;
