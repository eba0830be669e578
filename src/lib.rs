//! # memtide
//!
//! Long-term memory for LLM chat clients that runs where the chat runs: a
//! browser tab, an edge function, Node, or any WebAssembly component host.
//!
//! memtide ingests what the user and the assistant said, keeps it deduplicated
//! and scoped, finds what matters for the next request and renders it as a
//! bounded, cited block for the prompt:
//!
//! ```text
//! ingest(items)   -> normalize, redact, dedupe, index, persist
//! retrieve(query) -> policy filter -> BM25 -> scope preference -> ranked hits
//! inject(query)   -> retrieve -> select within a token budget -> cited block
//! ```
//!
//! The core ([`Engine`]) does no I/O: it is a deterministic state machine whose
//! writes come out as [`storage::Batch`]es. [`Memory`] ties it to a
//! [`storage::Storage`] backend and an [`env::Environment`] (clock and ids).
//!
//! ```
//! use memtide::{Memory, MemoryInput, RetrieveQuery, Scope};
//! use memtide::storage::MemoryStorage;
//! use memtide::env::FixedEnvironment;
//! use memtide::item::Timestamp;
//!
//! let env = FixedEnvironment::new(Timestamp(1_700_000_000_000));
//! let mut mem = Memory::open(MemoryStorage::new(), env, Default::default()).unwrap();
//! let scope = Scope::workspace("alice", "home");
//! mem.ingest(vec![MemoryInput::new("I drink my coffee as a cortado", scope.clone())]).unwrap();
//! let hits = mem.retrieve(&RetrieveQuery::new("how do I take my coffee?", scope)).unwrap();
//! assert_eq!(hits[0].item.text, "I drink my coffee as a cortado");
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod codec;
pub mod dedupe;
pub mod embed;
pub mod engine;
pub mod env;
pub mod error;
pub mod files;
pub mod hot_file;
pub mod index;
pub mod inject;
pub mod item;
mod keys;
pub mod memory;
pub mod memory_tool;
pub mod policy;
pub mod rank;
pub mod storage;
pub mod text;

pub use engine::{
    Config, DeleteAllResult, Engine, ImportResult, IngestOutcome, IngestReason, IngestResult,
    InjectQuery, ListPage, ListQuery, MemoryInput, MemoryPatch, RetrieveHit, RetrieveQuery, Stats,
    EXPORT_FORMAT, EXPORT_VERSION,
};
pub use error::{Error, Result};
pub use files::{FileSync, FileSyncOutcome, StoredFile};
pub use inject::{InjectFormat, Injection};
pub use item::{
    Kind, LineRange, MemoryItem, Privacy, Scope, ScopeFilter, Source, SourceKind, Status, Timestamp,
};
pub use memory::{AsyncMemory, Memory};

/// The README's Rust examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
