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
//! use memtide::Timestamp;
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

// The public API is the crate root, `storage`, `env` and `embed`: what a
// Rust program needs to keep memories. Everything else is internal; the
// feature `testing` (turned on by crates/testkit for the tests and the fuzz
// checks) makes the internal modules public so they can be tested below the
// API. A module is declared once, here, with its visibility chosen by it.
macro_rules! internal {
    ($($name:ident;)*) => {$(
        #[cfg(feature = "testing")]
        pub mod $name;
        #[cfg(not(feature = "testing"))]
        mod $name;
    )*};
}

pub mod embed;
pub mod env;
pub mod progress;
pub mod storage;

internal! {
    codec;
    dedupe;
    engine;
    error;
    fast_hash;
    files;
    history;
    hot_file;
    index;
    inject;
    item;
    json_len;
    keys;
    layout;
    memory;
    metadata;
    memory_tool;
    messages;
    operations;
    room;
    policy;
    rank;
    relative_time;
    retention;
    str_list;
    text;
}

pub use dedupe::{NearDuplicateAction, NearDuplicateConfig};
pub use engine::{
    Config, DeleteAllResult, ImportResult, IngestOutcome, IngestReason, IngestResult, InjectQuery,
    Limits, ListPage, ListQuery, MemoryInput, MemoryPatch, PurgeResult, RetrieveHit, RetrieveQuery,
    ScopeOrder, Sessions, Stats, EXPORT_FORMAT, EXPORT_VERSION,
};
pub use engine::{SummaryContext, SummaryInput, SummaryQuery};
pub use error::{Error, Result};
pub use files::{FileSync, FileSyncOutcome, StoredFile};
pub use history::{HistoryEvent, HistoryKind};
pub use hot_file::HotFileSync;
pub use index::Bm25Params;
pub use inject::{Citation, Dropped, InjectFormat, Injection};
pub use item::{
    Kind, LineRange, MemoryItem, MergeRecord, Privacy, Role, Scope, ScopeFilter, Source,
    SourceKind, Status, Timestamp,
};
pub use memory::{block_on, AsyncMemory, Memory};
pub use memory_tool::MemoryToolResult;
pub use messages::{MessageIngestResult, MessageOptions, PartType};
pub use metadata::Metadata;
pub use operations::{
    parse_operations, Operation, OperationsRequest, OperationsResult, Supersession,
};
pub use policy::Admission;
pub use rank::{RankParams, ScoreBreakdown};
pub use retention::{RetentionConfig, ScopeRetention};
pub use text::markdown::ChunkParams;
pub use text::tokens::{EstimatedTokens, TokenCounter};
pub use text::{SecretsConfig, SECRET_MARKER};

/// The README's Rust examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
