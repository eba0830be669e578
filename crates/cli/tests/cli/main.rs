//! The tests of the `memtide` binary, in one test binary: its commands
//! (`commands`; files in `files`; keys, metadata and history in `keys`; with a
//! model in `model`), and the table of hostile inputs of
//! `tests/data/adversarial.json` through the Rust API and this binary
//! (`adversarial`; the npm package and the component run the same table in
//! `tests/js/` and `tests/wit/`). They live here because only this package's
//! tests can run the binary it builds.

mod adversarial;
mod commands;
mod files;
mod keys;
#[cfg(feature = "semantic")]
mod model;
mod operations;
mod summaries;
