//! Helpers shared by memtide's tests, its LoCoMo example and its fuzz
//! targets, written once here instead of once per test file:
//!
//! * [`faults`]: in-memory stores that fail on command — [`faults::MapKv`]
//!   (an [`memtide::storage::AsyncKeyValue`]) and [`faults::FailingStorage`]
//!   (a [`memtide::storage::Storage`] wrapper);
//! * [`block_on`]: runs a storage future that completes at once;
//! * [`store`]: the store every API test starts from, and its scope;
//! * [`rng`]: a seeded generator (also used by memtide's unit tests);
//! * [`model`]: the MiniLM model files and their golden outputs;
//! * [`locomo`]: the LoCoMo retrieval-quality protocol;
//! * [`fuzz`]: the checks of the cargo-fuzz targets (`fuzz/`), which
//!   memtide's tests replay on stable Rust.
//!
//! Memtide's unit tests (inside `src/`) see a second copy of memtide's types
//! through this crate, so they use only [`rng`].

use std::future::Future;

pub mod faults;
#[cfg(not(target_arch = "wasm32"))]
pub mod fuzz;
#[cfg(not(target_arch = "wasm32"))]
pub mod locomo;
pub mod model;
pub mod rng;
pub mod store;

/// Runs a future that completes without waiting — every future of an
/// in-memory or native store does — and returns its output; panics if it
/// waits.
pub fn block_on<F: Future>(future: F) -> F::Output {
    memtide::memory::block_on(future).expect("a storage future that never waits")
}
