//! The engine: memtide's state machine, without I/O.
//!
//! [`Engine`] holds every item and the indexes over them. Each write operation
//! takes a [`Txn`], mutates the in-memory state and records how to undo it;
//! the caller then asks [`Engine::batch_for`] for the records it changed
//! ([`Changes`] of `item/`, `vec/` and `file/` keys: a memory as the engine
//! holds it, other records encoded), persists them, and on failure calls [`Engine::rollback`] so memory and
//! storage never disagree.
//! [`crate::Memory`] does exactly this for a synchronous
//! [`crate::storage::Storage`]; the JavaScript bindings do it around an async
//! commit.
//!
//! One room per responsibility:
//!
//! - `api`: the requests and answers of the operations ([`Config`],
//!   [`MemoryInput`], [`RetrieveQuery`], [`Stats`], …);
//! - `catalog`: the memories and the secondary keys kept in step with them;
//! - `duplicate`: the key of exact duplicates (scope, voice, text);
//! - `vectors`: embeddings, the model, the context vectors of ranking;
//! - `txn`: the undo log, rollback, and the records a write changed;
//! - `ingest`: ingest, input validation, deduplication, threading;
//! - `upsert`: caller keys, replacing a keyed memory, history;
//! - `supersede`: a newer memory taking an older one's place;
//! - `operations`: checking and applying an extractor's operations;
//! - `search`: retrieval, injection, policy explanations;
//! - `admin`: get, list, update, delete, stats;
//! - `purge`: erasing expired memories;
//! - `summary`: summaries of a scope, linked to their sources;
//! - `files`: stored files and their chunks;
//! - `export`: export and import.
//!
//! What is judged rather than kept lives outside: the ranking steps in
//! [`crate::rank`], the choice among near-duplicates in [`crate::dedupe`],
//! what a query may see in [`crate::policy`]; the storage keys in
//! `crate::keys`.

mod admin;
mod api;
mod catalog;
mod doc_map;
mod duplicate;
mod export;
mod files;
mod followers;
mod held;
mod ingest;
mod interner;
mod load;
mod purge;
mod sorted_keys;
mod operations;
mod search;
mod supersede;
mod summary;
mod txn;
mod upsert;
mod vectors;

pub use api::{
    Config, DeleteAllResult, IngestOutcome, IngestReason, IngestResult, InjectQuery, Limits,
    ListPage, ListQuery, MemoryInput, MemoryPatch, PurgeResult, RetrieveHit, RetrieveQuery,
    ScopeOrder, Sessions, Stats,
};
pub use summary::{SummaryContext, SummaryInput, SummaryQuery};
pub use export::{ImportResult, EXPORT_FORMAT, EXPORT_VERSION};
#[cfg(test)]
pub(crate) use duplicate::Voice;
pub(crate) use ingest::{text_to_store, Captured};
pub(crate) use held::HeldMemory;
pub(crate) use load::Loader;
pub use txn::{Change, Changes, Summary, Txn};

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use crate::keys::VECTOR_PREFIX;
use crate::embed::Embedder;
use crate::error::Result;
use crate::files::StoredFile;
use crate::index::bm25::TermCounts;
use crate::index::{Bm25Index, Int8Vector, VectorIndex};
use crate::item::{MemoryItem, Scope, Tenant};
use catalog::{Entries, FastMap, FastSet, Id, TimeKeys};
use sorted_keys::SortedKeys;
use doc_map::DocMap;
use followers::Followers;
use duplicate::Duplicates;
use interner::Interner;
use files::FileKey;
use load::Record;
use vectors::StoredVector;

/// A record as a store holds it, to load: its bytes, or the memory a
/// segment's catalog part holds as a row (`docs/format.md`, section 2.2)
/// or an embedding, already decoded.
pub(crate) enum Stored {
    Bytes(Vec<u8>),
    Item(Box<MemoryItem>),
    /// A memory kept as its row in its segment's catalog part, decoded
    /// when it is read.
    Row(Box<dyn HeldMemory>),
    /// An embedding record of int8 codes, decoded by the reader so its
    /// bytes are not copied.
    Vector(Int8Vector),
}

/// A memory's terms as the lexical part of the segment holding its
/// record counts them (`docs/format.md`, section 2.2): `Some(Some(terms))`
/// for a memory the lexical index holds, `Some(None)` for one it does not
/// (soft-deleted), `None` when no part counted them (a record of the log,
/// of a segment of format 4, or not a memory): its text is analysed.
pub(crate) type Counted = Option<Option<TermCounts>>;

/// The memory state machine. See the module documentation.
pub struct Engine {
    config: Config,
    // The catalog: changed only by `set` (catalog.rs), which keeps every
    // key below in step, up to the lexical indexes.
    entries: Entries,
    doc_owner: Vec<Option<Id>>,
    free_docs: Vec<u32>,
    /// Each scope of a memory in `by_key`, `by_scope_time` or `by_summary`,
    /// once: their keys share it, and `by_hash` hashes its address.
    scopes: Interner<Scope>,
    /// The memory holding each text of a scope said in a voice
    /// (`duplicate.rs`), by doc number: what an exact duplicate merges
    /// into. Each memory in it has a doc, soft-deleted ones too (their
    /// text is suppressed), and its doc is freed only once the memory is
    /// erased, which takes it out first.
    by_hash: Duplicates,
    /// The memory holding each caller key of a scope.
    by_key: FastMap<(Arc<Scope>, String), Id>,
    by_created: SortedKeys<(i64, Id)>,
    by_scope_time: SortedKeys<(Arc<Scope>, i64, Id)>,
    /// Each memory that expires, by when ([`crate::RetentionConfig::expires_at`]
    /// under `config`, which no engine changes) and doc number:
    /// `purge_expired` takes the expired from the front instead of judging
    /// every memory (`purge.rs`). Built by the first purge, in one pass
    /// over the memories, then kept by `set`: an engine that never purges
    /// (a read, a store without a policy) pays nothing for it. A memory
    /// that never expires has no key. By doc rather than id: the keys
    /// compare as integers and hold no reference to the id.
    by_expiry: Option<BTreeSet<(i64, u32)>>,
    /// The memories that follow each memory in its conversation.
    followers: Followers,
    pinned: BTreeSet<String>,
    /// The largest ULID among the ids ever held: new ids are made after it
    /// (`Environment::new_id`), so memories that share a timestamp
    /// keep the order they came in, across instances too.
    newest_ulid: Option<Id>,
    lexical: FastMap<Tenant, Bm25Index>,
    // Embeddings: changed only by `set_vector` (vectors.rs), which keeps
    // the vector indexes in step. Each is held once: by its tenant's index
    // (`vector_docs`) or here.
    /// Own embedding (key `vec/<id>`) of each memory that has one and that
    /// no vector index holds (soft-deleted, or refused by the index), by
    /// the memory's doc number: no copy of its id.
    embeddings: FastMap<u32, StoredVector>,
    /// Per tenant, the own embeddings of its live memories, each linked to
    /// the one of the memory it follows: the index scores their context
    /// vectors (see [`crate::rank`]).
    vectors: FastMap<Arc<Tenant>, VectorIndex>,
    /// Docs present in `vectors`, with their tenant: the allocation of
    /// `vectors`' key, shared rather than two strings per doc.
    vector_docs: DocMap<Arc<Tenant>>,
    /// The model the stored embeddings come from.
    model_id: Option<String>,
    embedder: Option<Arc<dyn Embedder>>,
    /// Embeddings computed ahead of an operation, by text, so a host can
    /// compute them in batches and stop between two (`crate::progress`);
    /// `embed` takes them from here. Emptied after the operation.
    prepared: HashMap<String, Vec<f32>>,
    // Files: changed only by `set_file` (files.rs); `set` keeps
    // `file_chunks` in step.
    /// Every stored file (key `file/…`).
    files: BTreeMap<FileKey, StoredFile>,
    /// The chunks of each file (memories with `sourceLines`), by file.
    file_chunks: HashMap<FileKey, BTreeSet<String>>,
    /// The summary `summarize` keeps for each scope (one per exact scope).
    by_summary: FastMap<Arc<Scope>, String>,
    /// The summaries that list each memory among their sources.
    summaries: FastMap<String, Vec<String>>,
    /// Keys of `by_created` and `by_scope_time` not in their trees yet,
    /// while `apply_counted` runs (`catalog.rs`).
    deferred_times: Option<TimeKeys>,
}

impl Engine {
    /// An empty engine.
    pub fn new(config: Config) -> Self {
        Engine {
            config,
            entries: Entries::default(),
            doc_owner: Vec::new(),
            free_docs: Vec::new(),
            scopes: Interner::default(),
            by_hash: Duplicates::default(),
            by_key: FastMap::default(),
            by_created: SortedKeys::default(),
            by_scope_time: SortedKeys::default(),
            by_expiry: None,
            followers: Followers::default(),
            pinned: BTreeSet::new(),
            newest_ulid: None,
            lexical: FastMap::default(),
            embeddings: FastMap::default(),
            vectors: FastMap::default(),
            vector_docs: DocMap::default(),
            model_id: None,
            embedder: None,
            prepared: HashMap::new(),
            files: BTreeMap::new(),
            file_chunks: HashMap::new(),
            by_summary: FastMap::default(),
            summaries: FastMap::default(),
            deferred_times: None,
        }
    }

    /// Rebuilds an engine from its records: `item/…`, `vec/…` and `file/…`
    /// keys with their record bytes (`docs/format.md`, section 2), in any
    /// order, each key once, and the model the embeddings come from.
    /// Whoever read them checked that they are the whole store
    /// (`crate::layout`).
    pub fn load(
        config: Config,
        records: Vec<(String, Vec<u8>)>,
        model_id: Option<String>,
    ) -> Result<Engine> {
        let mut records = records;
        // In key order: memories take their doc numbers in that order.
        records.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let embeddings = records
            .iter()
            .filter(|(key, _)| key.starts_with(VECTOR_PREFIX))
            .count();
        let mut loader = Loader::new(config, model_id, 0, embeddings)?;
        for (key, bytes) in records {
            loader.put(&key, Stored::Bytes(bytes), None, None)?;
        }
        loader.finish()
    }

    /// Applies records another writer committed: each key with its new
    /// record (bytes, or a memory decoded from a catalog row), or `None`
    /// when it was deleted; `model_id` is the model
    /// the store's embeddings now come from. Every record is decoded and
    /// checked before anything changes, so an error (`CORRUPT`) leaves the
    /// engine as it was.
    ///
    /// Each record comes with the terms of its memory as counted when it
    /// was stored ([`Counted`]): those memories' texts are not analysed
    /// again; a memory whose record disagrees with its counts about being
    /// indexed is `CORRUPT`.
    pub(crate) fn apply_counted(
        &mut self,
        mut changes: Vec<(String, Option<Stored>, Counted)>,
        model_id: Option<String>,
    ) -> Result<()> {
        // Deletes first, embeddings before their memories; then puts,
        // files and memories before embeddings (`file/` < `item/` < `vec/`).
        // Keys are distinct, so a stable sort gives the one order; it
        // merges the sorted runs a store's segments give (`layout/read.rs`)
        // instead of sorting them again.
        changes.sort_by(|a, b| match (&a.1, &b.1) {
            (None, Some(_)) => std::cmp::Ordering::Less,
            (Some(_), None) => std::cmp::Ordering::Greater,
            (None, None) => b.0.cmp(&a.0),
            (Some(_), Some(_)) => a.0.cmp(&b.0),
        });
        let mut decoded = Vec::with_capacity(changes.len());
        let mut gone: FastSet<&str> = FastSet::default();
        let mut added: FastSet<&str> = FastSet::default();
        // The embeddings loaded come after every memory (see the order
        // above): before the first goes in, the vector structures are
        // sized for them all, of the first one's length.
        let mut loaded: Vec<&str> = Vec::new();
        let mut first_loaded = None;
        for (key, slot, counted) in changes.iter_mut() {
            let key: &String = key;
            // Taken: a memory decoded from a row moves into the engine.
            let record = load::decode(key, slot.take(), counted.take())?;
            match &record {
                Record::Item(id, None, _) => {
                    gone.insert(*id);
                }
                Record::Item(id, Some(_), _) => {
                    added.insert(*id);
                }
                Record::Vector(id, Some(vector)) => {
                    let held = self.entries.contains_key(*id) && !gone.contains(id);
                    if !held && !added.contains(id) {
                        return Err(load::no_memory(id));
                    }
                    first_loaded.get_or_insert((decoded.len(), vector.vector.len()));
                    loaded.push(*id);
                }
                _ => {}
            }
            decoded.push(record);
        }
        if model_id.is_some() {
            self.model_id = model_id;
        }
        self.defer_time_keys();
        self.reserve_items(added.len());
        for (at, record) in decoded.into_iter().enumerate() {
            if let Some((_, dimensions)) = first_loaded.filter(|&(first, _)| first == at) {
                self.reserve_vectors(&loaded, dimensions);
            }
            self.apply_record(record);
        }
        self.end_memories();
        if first_loaded.is_some() {
            self.drop_empty_vector_indexes();
        }
        Ok(())
    }

    /// The engine's settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    #[cfg(any(test, feature = "testing"))]
    /// Number of memories (including soft-deleted ones).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    #[cfg(any(test, feature = "testing"))]
    /// Number of memories held undecoded, as their rows in their segments.
    pub fn held_memories(&self) -> usize {
        self.entries.values().filter(|e| e.is_held()).count()
    }

    #[cfg(any(test, feature = "testing"))]
    /// True when the store holds no memory at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every memory, in no particular order (a memory held undecoded is
    /// decoded for the iterator and not kept).
    pub fn items(&self) -> impl Iterator<Item = Cow<'_, MemoryItem>> {
        self.entries.values().map(|e| e.item())
    }

    #[cfg(any(test, feature = "testing"))]
    /// True when the lexical index of `tenant` holds `term` (an analysed
    /// term, see [`terms`](crate::text::terms)).
    pub fn lexical_index_has_term(&self, tenant: &Tenant, term: &str) -> bool {
        self.lexical.get(tenant).is_some_and(|ix| ix.has_term(term))
    }
}
