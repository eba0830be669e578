//! Crash consistency under injected faults, checked against a reference
//! model (the reliability issue, part 1).
//!
//! Random operation sequences (ingest with exact duplicates, update, approve
//! and reject, pin, soft and hard delete, restore, deleteAll, export and
//! import, retrieval that marks usage, reopen) run against memtide over a
//! storage backend that injects faults, and against [`Model`]: a plain map of
//! id to memory that applies each operation's documented semantics directly.
//! Three fault families, one backend wrapper each:
//!
//! - [`Flaky`]: the N-th storage call of an operation fails, as an I/O error
//!   or a quota error. Commits are atomic, so the failed operation must
//!   change nothing.
//! - [`Crashing`]: a key-value store without atomic batches (memtide journals
//!   its writes through [`KvStorage`]) whose process dies at the N-th
//!   single-key write, leaving the earlier ones applied. The reopened store
//!   must hold the state before or after the operation, never a mix.
//! - [`Lagging`]: reads return the state of some commits ago (an eventually
//!   consistent store) while writes are compare-and-set on the real state.
//!   A write decided on stale data must never clobber newer data.
//!
//! After every operation the store is reopened from its durable bytes (fault
//! free) and compared with the model: the same memories, field by field; the
//! indexes agreeing with them (every retrievable memory is found by its own
//! text, no other is); the statistics; and no byte of an erased memory's
//! text left in storage.
//!
//! `MEMTIDE_FAULT_SEQUENCES` sets the number of sequences per backend (default
//! 3,400, so 10,200 in all); `MEMTIDE_FAULT_SEQUENCES=100000 cargo test
//! --release --test fault_model` is the soak (docs/reliability.md).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use proptest::prelude::*;
use proptest::sample::Index;

use memtide::dedupe::NearDuplicateConfig;
use memtide::env::FixedEnvironment;
use memtide::storage::{
    AsyncStorage, Batch, Expect, KvStorage, MemoryStorage, Snapshot, Storage, StorageError,
};
use memtide::{
    AsyncMemory, Config, Error, IngestOutcome, IngestReason, Kind, ListQuery, MemoryInput,
    MemoryItem, MemoryPatch, RetrieveQuery, Scope, ScopeFilter, Source, SourceKind, Status,
    Timestamp,
};
use memtide_testkit::block_on;
use memtide_testkit::faults::{MapKv, Trigger};
use memtide_testkit::store::T0;

/// Words no two of which end the same way, so no text of three of them is
/// a substring of another.
const WORDS: [&str; 12] = [
    "amber", "basil", "cobalt", "dune", "ember", "fjord", "granite", "harbor", "indigo", "juniper",
    "kelp", "lagoon",
];
const TEXTS: usize = 10;
const TAGS: [&str; 3] = ["red", "blue", "green"];

/// The text of pool entry `i`: three distinct words.
fn pool_text(i: usize) -> String {
    format!(
        "{} {} {}",
        WORDS[i % 12],
        WORDS[(i + 3) % 12],
        WORDS[(i + 7) % 12]
    )
}

fn scope_of(i: usize) -> Scope {
    match i % 4 {
        0 => Scope::workspace("u1", "w1"),
        1 => Scope::workspace("u1", "w1").with_project("p1"),
        2 => Scope::workspace("u1", "w2"),
        _ => Scope::workspace("u2", "w1"),
    }
}

fn tenant_filter(i: usize) -> ScopeFilter {
    let scope = scope_of([0, 2, 3][i % 3]);
    ScopeFilter {
        user_id: Some(scope.user_id),
        workspace_id: Some(scope.workspace_id),
        ..ScopeFilter::default()
    }
}

fn config() -> Config {
    Config {
        // Exact duplicates only: the model needs no similarity measure.
        near_duplicate: NearDuplicateConfig {
            lexical_threshold: 2.0,
            ..NearDuplicateConfig::default()
        },
        ..Config::default()
    }
}

// ----- the reference model -------------------------------------------------------

/// What the model knows of one memory.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ModelItem {
    text: String,
    scope: Scope,
    kind: Kind,
    status: Status,
    pinned: bool,
    tags: Vec<String>,
    deleted: bool,
    merges: usize,
}

impl ModelItem {
    fn of(item: &MemoryItem) -> Self {
        ModelItem {
            text: item.text.clone(),
            scope: item.scope.clone(),
            kind: item.kind,
            status: item.status,
            pinned: item.pinned,
            tags: item.tags.clone(),
            deleted: item.deleted_at.is_some(),
            merges: item.merged_from.len(),
        }
    }

    fn retrievable(&self) -> bool {
        !self.deleted && self.status == Status::Approved
    }

    /// Folds a duplicate into this memory, as `dedupe::merge_into` documents.
    fn merge(&mut self, tags: &[String], pinned: bool) {
        for tag in tags {
            if !self.tags.contains(tag) {
                self.tags.push(tag.clone());
            }
        }
        self.pinned |= pinned;
        self.merges += 1;
    }
}

/// The expected outcome of one ingested input.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Expected {
    Added,
    Merged(String),
    Suppressed(String),
}

/// The store as the documented semantics say it must be.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Model {
    items: BTreeMap<String, ModelItem>,
    /// Texts hard-deleted and not stored again since: no byte of them may
    /// remain in storage.
    erased: BTreeSet<String>,
}

impl Model {
    fn same_text(&self, scope: &Scope, text: &str) -> Option<String> {
        self.items
            .iter()
            .find(|(_, item)| &item.scope == scope && item.text == text)
            .map(|(id, _)| id.clone())
    }

    fn add(&mut self, id: String, item: ModelItem) {
        self.erased.remove(&item.text);
        self.items.insert(id, item);
    }

    fn erase(&mut self, id: &str) {
        if let Some(item) = self.items.remove(id) {
            self.retire(item.text);
        }
    }

    /// Records `text`, no longer some memory's, as erased unless another
    /// memory still holds it (soft history is not kept).
    fn retire(&mut self, text: String) {
        if self.same_text_anywhere(&text).is_none() {
            self.erased.insert(text);
        }
    }

    fn same_text_anywhere(&self, text: &str) -> Option<&String> {
        self.items
            .iter()
            .find(|(_, item)| item.text == text)
            .map(|(id, _)| id)
    }

    /// Ingests one input (inputs of a batch apply in order); `new_id` names
    /// an added memory (memtide picks ids, the model takes them).
    fn ingest(&mut self, input: &InputSpec, new_id: impl FnOnce() -> String) -> Expected {
        let (scope, text) = (scope_of(input.scope), pool_text(input.text));
        match self.same_text(&scope, &text) {
            Some(id) if self.items[&id].deleted => Expected::Suppressed(id),
            Some(id) => {
                let tags = input.tags();
                if let Some(item) = self.items.get_mut(&id) {
                    item.merge(&tags, input.pinned);
                }
                Expected::Merged(id)
            }
            None => {
                self.add(
                    new_id(),
                    ModelItem {
                        text,
                        scope,
                        kind: input.kind,
                        status: input.status,
                        pinned: input.pinned,
                        tags: input.tags(),
                        deleted: false,
                        merges: 0,
                    },
                );
                Expected::Added
            }
        }
    }

    fn update(&mut self, id: &str, patch: &MemoryPatch) {
        let Some(item) = self.items.get_mut(id) else {
            return;
        };
        let old_text = item.text.clone();
        if let Some(text) = &patch.text {
            item.text = text.clone();
        }
        if let Some(status) = patch.status {
            item.status = status;
        }
        if let Some(pinned) = patch.pinned {
            item.pinned = pinned;
        }
        if let Some(tags) = &patch.tags {
            item.tags = tags.clone();
        }
        if let Some(deleted) = patch.deleted {
            item.deleted = deleted;
        }
        if let Some(text) = &patch.text {
            self.retire(old_text);
            self.erased.remove(text);
        }
    }

    fn delete_all(&mut self, filter: &ScopeFilter, hard: bool) -> usize {
        let ids: Vec<String> = self
            .items
            .iter()
            .filter(|(_, item)| filter.matches(&item.scope) && (hard || !item.deleted))
            .map(|(id, _)| id.clone())
            .collect();
        for id in &ids {
            if hard {
                self.erase(id);
            } else if let Some(item) = self.items.get_mut(id) {
                item.deleted = true;
            }
        }
        ids.len()
    }

    /// Imports a snapshot of an earlier model (an export is sorted by id):
    /// same id replaced, same text and scope merged, else added; an import
    /// that would make two memories identical fails whole.
    fn import(&mut self, snapshot: &BTreeMap<String, ModelItem>) -> Option<(usize, usize, usize)> {
        let mut next = self.clone();
        let (mut added, mut replaced, mut merged) = (0, 0, 0);
        for (id, item) in snapshot {
            let same = next
                .same_text(&item.scope, &item.text)
                .filter(|other| other != id);
            if next.items.contains_key(id) {
                if same.is_some() {
                    return None;
                }
                let old = next.items.insert(id.clone(), item.clone());
                next.erased.remove(&item.text);
                if let Some(old) = old.filter(|old| old.text != item.text) {
                    next.retire(old.text);
                }
                replaced += 1;
            } else if let Some(other) = same {
                if let Some(target) = next.items.get_mut(&other).filter(|t| !t.deleted) {
                    target.merge(&item.tags, item.pinned);
                }
                merged += 1;
            } else {
                next.add(id.clone(), item.clone());
                added += 1;
            }
        }
        *self = next;
        Some((added, replaced, merged))
    }
}

// ----- operations ---------------------------------------------------------------------

#[derive(Debug, Clone)]
struct InputSpec {
    text: usize,
    scope: usize,
    kind: Kind,
    status: Status,
    pinned: bool,
    tags: Vec<usize>,
}

/// The distinct tags named by `indices` into [`TAGS`], in order.
fn tag_names(indices: &[usize]) -> Vec<String> {
    let mut tags: Vec<String> = Vec::new();
    for &t in indices {
        let tag = TAGS[t % TAGS.len()].to_string();
        if !tags.contains(&tag) {
            tags.push(tag);
        }
    }
    tags
}

impl InputSpec {
    fn tags(&self) -> Vec<String> {
        tag_names(&self.tags)
    }

    fn input(&self) -> MemoryInput {
        MemoryInput {
            kind: Some(self.kind),
            status: Some(self.status),
            pinned: Some(self.pinned),
            tags: Some(self.tags()),
            source: Some(Source {
                kind: SourceKind::Message,
                reference: "chat".into(),
                uri: None,
            }),
            ..MemoryInput::new(pool_text(self.text), scope_of(self.scope))
        }
    }
}

#[derive(Debug, Clone)]
struct PatchSpec {
    new_text: bool,
    status: Option<Status>,
    pinned: Option<bool>,
    tags: Option<Vec<usize>>,
    deleted: Option<bool>,
}

#[derive(Debug, Clone)]
enum Op {
    Ingest(Vec<InputSpec>),
    Update(Index, PatchSpec),
    Delete(Index, bool),
    DeleteAll(usize, bool),
    Retrieve(usize, usize),
    Export,
    Import(Index),
    Reopen,
}

fn status() -> impl Strategy<Value = Status> {
    prop_oneof![
        6 => Just(Status::Approved),
        1 => Just(Status::Pending),
        1 => Just(Status::Rejected),
    ]
}

fn input_spec() -> impl Strategy<Value = InputSpec> {
    (
        0..TEXTS,
        0..4usize,
        prop_oneof![
            Just(Kind::Episodic),
            Just(Kind::Fact),
            Just(Kind::Preference)
        ],
        status(),
        prop::bool::weighted(0.2),
        prop::collection::vec(0..3usize, 0..3),
    )
        .prop_map(|(text, scope, kind, status, pinned, tags)| InputSpec {
            text,
            scope,
            kind,
            status,
            pinned,
            tags,
        })
}

fn patch_spec() -> impl Strategy<Value = PatchSpec> {
    (
        prop::bool::weighted(0.3),
        prop::option::weighted(0.4, status()),
        prop::option::weighted(0.3, any::<bool>()),
        prop::option::weighted(0.2, prop::collection::vec(0..3usize, 0..3)),
        prop::option::weighted(0.3, any::<bool>()),
    )
        .prop_map(|(new_text, status, pinned, tags, deleted)| PatchSpec {
            new_text,
            status,
            pinned,
            tags,
            deleted,
        })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => prop::collection::vec(input_spec(), 1..4).prop_map(Op::Ingest),
        4 => (any::<Index>(), patch_spec()).prop_map(|(i, p)| Op::Update(i, p)),
        2 => (any::<Index>(), any::<bool>()).prop_map(|(i, hard)| Op::Delete(i, hard)),
        1 => (0..3usize, any::<bool>()).prop_map(|(t, hard)| Op::DeleteAll(t, hard)),
        1 => (0..TEXTS, 0..4usize).prop_map(|(t, s)| Op::Retrieve(t, s)),
        1 => Just(Op::Export),
        1 => any::<Index>().prop_map(Op::Import),
        1 => Just(Op::Reopen),
    ]
}

/// An operation and the fault armed for it: `(family variant, position)`.
fn steps(len: std::ops::Range<usize>) -> impl Strategy<Value = Vec<(Op, Option<(u8, u8)>)>> {
    prop::collection::vec((op(), prop::option::weighted(0.6, (0..2u8, 0..8u8))), len)
}

// ----- fault-injecting backends ---------------------------------------------------------

/// What one property's run did (each test runs on its own thread).
#[derive(Default)]
struct Counts {
    sequences: Cell<usize>,
    operations: Cell<usize>,
    faults: Cell<usize>,
    /// Operations that succeeded despite their fault (it struck after the
    /// commit point, or a retry got past it).
    survived: Cell<usize>,
}

thread_local! {
    static COUNTS: Counts = Counts::default();
}

fn count_fault() {
    COUNTS.with(|c| c.faults.set(c.faults.get() + 1));
}

/// Disarms `trigger`, counting the fault if it fired.
fn disarm(trigger: &Trigger) -> bool {
    let fired = trigger.disarm();
    if fired {
        count_fault();
    }
    fired
}

/// A backend family the driver can run and reopen.
trait Faulty {
    type Store: AsyncStorage;
    /// True when a failed operation may still have completed (a journal
    /// rolled forward on reopen).
    const MAY_COMPLETE: bool;
    /// True when an armed fault means the operation runs on a view opened
    /// while the fault is active.
    const STALE_VIEW: bool = false;
    /// The error codes an injected fault may surface as.
    const FAULT_CODES: &'static [&'static str];
    /// A store over the shared durable state.
    fn store(&self) -> Self::Store;
    /// Arms a fault for the next operation.
    fn arm(&self, variant: u8, at: u8);
    /// Disarms; true when the fault fired.
    fn disarm(&self) -> bool;
    /// Every durable byte (keys and values).
    fn durable_bytes(&self) -> Vec<u8>;
}

fn bytes_of<'a>(pairs: impl Iterator<Item = (&'a str, &'a [u8])>) -> Vec<u8> {
    pairs
        .flat_map(|(k, v)| k.bytes().chain(v.iter().copied()))
        .collect()
}

/// Commits to a shared in-memory store, checking the expectation.
fn commit_to(
    state: &RefCell<MemoryStorage>,
    batch: &Batch,
    expect: Option<Expect<'_>>,
) -> Result<(), StorageError> {
    block_on(AsyncStorage::commit(
        &mut *state.borrow_mut(),
        batch,
        expect,
    ))
}

/// Atomic storage whose armed call fails with an I/O or a quota error.
#[derive(Clone, Default)]
struct Flaky {
    state: Rc<RefCell<MemoryStorage>>,
    trigger: Rc<Trigger>,
    quota: Rc<Cell<bool>>,
}

impl Flaky {
    fn fault(&self) -> Result<(), StorageError> {
        if !self.trigger.strikes() {
            Ok(())
        } else if self.quota.get() {
            Err(StorageError::QuotaExceeded("injected".into()))
        } else {
            Err(StorageError::Io(std::io::Error::other("injected")))
        }
    }
}

impl AsyncStorage for Flaky {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.fault()?;
        Storage::get(&*self.state.borrow(), key)
    }
    async fn scan(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        self.fault()?;
        Storage::scan(&*self.state.borrow(), prefix)
    }
    async fn commit(
        &mut self,
        batch: &Batch,
        expect: Option<Expect<'_>>,
    ) -> Result<(), StorageError> {
        self.fault()?;
        commit_to(&self.state, batch, expect)
    }
}

impl Faulty for Flaky {
    type Store = Flaky;
    const MAY_COMPLETE: bool = false;
    const FAULT_CODES: &'static [&'static str] = &["STORAGE", "QUOTA_EXCEEDED"];
    fn store(&self) -> Flaky {
        self.clone()
    }
    fn arm(&self, variant: u8, at: u8) {
        self.quota.set(variant == 1);
        self.trigger.arm(usize::from(at % 4));
    }
    fn disarm(&self) -> bool {
        disarm(&self.trigger)
    }
    fn durable_bytes(&self) -> Vec<u8> {
        bytes_of(self.state.borrow().entries())
    }
}

/// A key-value store without atomic batches whose process dies at the armed
/// single-key write (the earlier writes stay applied).
type Crashing = MapKv;

impl Faulty for Crashing {
    type Store = KvStorage<Crashing>;
    const MAY_COMPLETE: bool = true;
    const FAULT_CODES: &'static [&'static str] = &["STORAGE"];
    fn store(&self) -> KvStorage<Crashing> {
        block_on(KvStorage::open(self.clone())).expect("opening the journaled store")
    }
    fn arm(&self, _variant: u8, at: u8) {
        self.trigger().arm(usize::from(at) * 2);
    }
    fn disarm(&self) -> bool {
        disarm(self.trigger())
    }
    fn durable_bytes(&self) -> Vec<u8> {
        bytes_of(self.map().iter().map(|(k, v)| (k.as_str(), v.as_slice())))
    }
}

/// Reads that lag: while armed, they see the state of `lag` commits ago;
/// commits are compare-and-set on the real state.
#[derive(Clone, Default)]
struct Lagging {
    history: Rc<RefCell<Vec<MemoryStorage>>>,
    state: Rc<RefCell<MemoryStorage>>,
    /// Stale reads left to serve, and how many commits behind.
    stale: Rc<Cell<(u8, usize)>>,
    served_stale: Rc<Cell<bool>>,
}

impl Lagging {
    fn read<T>(&self, read: impl Fn(&MemoryStorage) -> T) -> T {
        let (left, lag) = self.stale.get();
        let history = self.history.borrow();
        if left > 0 && lag > 0 && history.len() > lag {
            self.stale.set((left - 1, lag));
            self.served_stale.set(true);
            read(&history[history.len() - 1 - lag])
        } else {
            read(&self.state.borrow())
        }
    }
}

impl AsyncStorage for Lagging {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.read(|s| Storage::get(s, key))
    }
    async fn scan(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        self.read(|s| Storage::scan(s, prefix))
    }
    async fn snapshot(&self, prefixes: &[&str], key: &str) -> Result<Snapshot, StorageError> {
        // One consistent (possibly old) state, as a store with snapshot reads gives.
        self.read(|s| {
            let scans = prefixes
                .iter()
                .map(|p| Storage::scan(s, p))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((scans, Storage::get(s, key)?))
        })
    }
    async fn commit(
        &mut self,
        batch: &Batch,
        expect: Option<Expect<'_>>,
    ) -> Result<(), StorageError> {
        commit_to(&self.state, batch, expect)?;
        let committed = self.state.borrow().clone();
        self.history.borrow_mut().push(committed);
        Ok(())
    }
}

impl Faulty for Lagging {
    type Store = Lagging;
    const MAY_COMPLETE: bool = false;
    const STALE_VIEW: bool = true;
    // A view that never catches up within the retries reports the conflict.
    const FAULT_CODES: &'static [&'static str] = &["STORAGE"];
    fn store(&self) -> Lagging {
        self.clone()
    }
    fn arm(&self, variant: u8, at: u8) {
        self.stale.set((at * 3 + 1, usize::from(variant) + 1));
        self.served_stale.set(false);
    }
    fn disarm(&self) -> bool {
        self.stale.set((0, 0));
        let served = self.served_stale.replace(false);
        if served {
            count_fault();
        }
        served
    }
    fn durable_bytes(&self) -> Vec<u8> {
        bytes_of(self.state.borrow().entries())
    }
}

// ----- the driver -------------------------------------------------------------------------

type Mem<F> = AsyncMemory<<F as Faulty>::Store, FixedEnvironment>;

fn open<F: Faulty>(backend: &F) -> Result<Mem<F>, Error> {
    block_on(AsyncMemory::open(
        backend.store(),
        FixedEnvironment::new(Timestamp(T0)),
        config(),
    ))
}

/// Every memory, deleted ones included.
fn observed<S: AsyncStorage>(
    mem: &AsyncMemory<S, FixedEnvironment>,
) -> BTreeMap<String, ModelItem> {
    let mut items = BTreeMap::new();
    let mut cursor = None;
    loop {
        let page = mem
            .list(&ListQuery {
                include_deleted: true,
                limit: Some(100),
                cursor,
                ..ListQuery::default()
            })
            .expect("listing");
        for item in &page.items {
            items.insert(item.id.clone(), ModelItem::of(item));
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return items,
        }
    }
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// Reopens the durable state without faults and checks it against `model`:
/// items, indexes, statistics and erased texts.
fn check_durable<F: Faulty>(backend: &F, model: &Model) -> Result<(), TestCaseError> {
    let mut mem = open(backend).map_err(|e| TestCaseError::fail(format!("reopen: {e}")))?;
    prop_assert_eq!(&observed(&mem), &model.items, "reopened state");
    for (id, item) in &model.items {
        let query = RetrieveQuery {
            dry_run: true,
            limit: Some(100),
            ..RetrieveQuery::new(item.text.clone(), item.scope.clone())
        };
        let hits = block_on(mem.retrieve(&query)).expect("retrieving");
        let found = hits.iter().any(|h| &h.item.id == id);
        prop_assert_eq!(found, item.retrievable(), "retrieving {} by its text", id);
    }
    let stats = mem.stats(&ScopeFilter::default());
    let count = |f: &dyn Fn(&ModelItem) -> bool| model.items.values().filter(|i| f(i)).count();
    prop_assert_eq!(stats.items, model.items.len());
    prop_assert_eq!(stats.deleted, count(&|i| i.deleted));
    prop_assert_eq!(stats.pending, count(&|i| i.status == Status::Pending));
    prop_assert_eq!(stats.rejected, count(&|i| i.status == Status::Rejected));
    prop_assert_eq!(stats.pinned, count(&|i| i.pinned));
    let bytes = backend.durable_bytes();
    for text in &model.erased {
        prop_assert!(
            !contains(&bytes, text),
            "erased text {:?} still stored",
            text
        );
    }
    Ok(())
}

/// The memories of an export document, as the model sees them.
fn exported_items(data: &str) -> BTreeMap<String, ModelItem> {
    #[derive(serde::Deserialize)]
    struct Export {
        items: Vec<MemoryItem>,
    }
    let export: Export = serde_json::from_str(data).expect("an export parses");
    export
        .items
        .iter()
        .map(|item| (item.id.clone(), ModelItem::of(item)))
        .collect()
}

/// One sequence's state: the store, the model, and the exports taken.
struct Run<F: Faulty> {
    backend: F,
    mem: Mem<F>,
    model: Model,
    exports: Vec<(String, BTreeMap<String, ModelItem>)>,
    renames: usize,
}

impl<F: Faulty + Default> Run<F> {
    fn new() -> Self {
        let backend = F::default();
        let mem = open(&backend).expect("a new store opens");
        Run {
            backend,
            mem,
            model: Model::default(),
            exports: Vec::new(),
            renames: 0,
        }
    }

    fn target(&self, index: &Index) -> Option<String> {
        let ids: Vec<&String> = self.model.items.keys().collect();
        (!ids.is_empty()).then(|| ids[index.index(ids.len())].clone())
    }

    /// Runs `op` on the store and on `model` (a copy of the model before
    /// it); returns the store's result, as a comparable string, and
    /// whether the model expects it to succeed.
    fn apply(&mut self, op: &Op, model: &mut Model) -> (Result<(), Error>, bool) {
        match op {
            Op::Ingest(specs) => {
                let result = block_on(
                    self.mem
                        .ingest(specs.iter().map(InputSpec::input).collect()),
                );
                let Ok(results) = &result else {
                    // Ids of memories a journal adds after all are learnt on recovery.
                    for (i, spec) in specs.iter().enumerate() {
                        model.ingest(spec, || format!("?{i}"));
                    }
                    return (result.map(drop), true);
                };
                for (spec, got) in specs.iter().zip(results) {
                    let id = got.id.clone().unwrap_or_default();
                    let expected = model.ingest(spec, || id.clone());
                    let outcome = (got.outcome, got.reason, got.id.clone());
                    let wanted = match expected {
                        Expected::Added => (IngestOutcome::Added, None, Some(id)),
                        Expected::Merged(id) => (
                            IngestOutcome::Merged,
                            Some(IngestReason::Duplicate),
                            Some(id),
                        ),
                        Expected::Suppressed(id) => (
                            IngestOutcome::Skipped,
                            Some(IngestReason::Suppressed),
                            Some(id),
                        ),
                    };
                    assert_eq!(outcome, wanted, "ingest of {spec:?}");
                }
                (Ok(()), true)
            }
            Op::Update(index, spec) => {
                let Some(id) = self.target(index) else {
                    return (Ok(()), true);
                };
                self.renames += 1;
                let patch = MemoryPatch {
                    text: spec
                        .new_text
                        .then(|| format!("renamed{} {}", self.renames, WORDS[self.renames % 12])),
                    status: spec.status,
                    pinned: spec.pinned,
                    tags: spec.tags.as_deref().map(tag_names),
                    deleted: spec.deleted,
                    ..MemoryPatch::default()
                };
                model.update(&id, &patch);
                (block_on(self.mem.update(&id, patch)).map(drop), true)
            }
            Op::Delete(index, hard) => {
                let Some(id) = self.target(index) else {
                    return (Ok(()), true);
                };
                if *hard {
                    model.erase(&id);
                } else if let Some(item) = model.items.get_mut(&id) {
                    item.deleted = true;
                }
                (block_on(self.mem.delete(&id, *hard)).map(drop), true)
            }
            Op::DeleteAll(tenant, hard) => {
                let filter = tenant_filter(*tenant);
                let expected = model.delete_all(&filter, *hard);
                let result = block_on(self.mem.delete_all(&filter, *hard));
                if let Ok(done) = &result {
                    assert_eq!(done.deleted, expected, "deleteAll count");
                }
                (result.map(drop), true)
            }
            Op::Retrieve(text, scope) => {
                let query = RetrieveQuery::new(pool_text(*text), scope_of(*scope));
                (block_on(self.mem.retrieve(&query)).map(drop), true)
            }
            Op::Export => {
                let data = self.mem.export();
                let snapshot = exported_items(&data);
                self.exports.push((data, snapshot));
                (Ok(()), true)
            }
            Op::Import(index) => {
                let (data, snapshot) = match self.exports.len() {
                    0 => {
                        let data = self.mem.export();
                        let snapshot = exported_items(&data);
                        (data, snapshot)
                    }
                    n => self.exports[index.index(n)].clone(),
                };
                let expected = model.import(&snapshot);
                let result = block_on(self.mem.import(&data));
                if let (Ok(got), Some((added, replaced, merged))) = (&result, expected) {
                    assert_eq!(
                        (got.added, got.replaced, got.merged),
                        (added, replaced, merged),
                        "import counts"
                    );
                }
                (result.map(drop), expected.is_some())
            }
            Op::Reopen => match open(&self.backend) {
                Ok(mem) => {
                    self.mem = mem;
                    (Ok(()), true)
                }
                Err(e) => (Err(e), true),
            },
        }
    }

    /// Runs one step: the operation with its fault, then the checks.
    fn step(&mut self, op: &Op, fault: Option<(u8, u8)>) -> Result<(), TestCaseError> {
        COUNTS.with(|c| c.operations.set(c.operations.get() + 1));
        if let Some((variant, at)) = fault {
            self.backend.arm(variant, at);
            if F::STALE_VIEW {
                // The operation runs on a view opened from stale reads.
                if let Ok(mem) = open(&self.backend) {
                    self.mem = mem;
                }
            }
        }
        let mut after = self.model.clone();
        let (result, should_succeed) = self.apply(op, &mut after);
        let fired = self.backend.disarm();
        match (&result, fired) {
            (Ok(()), fired) => {
                prop_assert!(
                    should_succeed,
                    "{:?} succeeded; the model expected an error",
                    op
                );
                self.model = after;
                if fired {
                    COUNTS.with(|c| c.survived.set(c.survived.get() + 1));
                }
            }
            (Err(e), fired) if !(fired && F::FAULT_CODES.contains(&e.code())) => {
                prop_assert!(!should_succeed, "{:?} failed: {}", op, e);
                // The error the model expects (an import that would make two
                // memories identical) changes nothing, in the live store too.
                prop_assert_eq!(&observed(&self.mem), &self.model.items);
            }
            (Err(e), _) => {
                prop_assert!(
                    F::FAULT_CODES.contains(&e.code()),
                    "{:?}: an injected fault surfaced as {}",
                    op,
                    e
                );
                self.recover(after, e)?;
            }
        }
        block_on(self.mem.refresh()).map_err(|e| TestCaseError::fail(format!("refresh: {e}")))?;
        check_durable(&self.backend, &self.model)
    }

    /// After a failed operation: the durable state is the model's before or
    /// (journaled writes only) after it; the store is reopened when its
    /// process died, else it must have rolled back.
    fn recover(&mut self, mut after: Model, error: &Error) -> Result<(), TestCaseError> {
        let reopened =
            open(&self.backend).map_err(|e| TestCaseError::fail(format!("reopen: {e}")))?;
        let state = observed(&reopened);
        if state != self.model.items {
            prop_assert!(
                F::MAY_COMPLETE,
                "a failed operation changed the store ({})",
                error
            );
            // Completed by the journal: adopt memtide's ids for added memories.
            let placeholders: Vec<String> = after
                .items
                .keys()
                .filter(|id| id.starts_with('?'))
                .cloned()
                .collect();
            for placeholder in placeholders {
                let Some(item) = after.items.remove(&placeholder) else {
                    continue;
                };
                let id = state
                    .iter()
                    .find(|(id, got)| {
                        got.scope == item.scope
                            && got.text == item.text
                            && !self.model.items.contains_key(*id)
                    })
                    .map(|(id, _)| id.clone())
                    .ok_or_else(|| TestCaseError::fail("an added memory is missing"))?;
                after.add(id, item);
            }
            prop_assert_eq!(&state, &after.items, "the state after the operation");
            self.model = after;
            COUNTS.with(|c| c.survived.set(c.survived.get() + 1));
        } else if !F::MAY_COMPLETE && !F::STALE_VIEW {
            // An atomic failure rolls the live store back too.
            prop_assert_eq!(
                &observed(&self.mem),
                &self.model.items,
                "the live store rolled back"
            );
        }
        if F::MAY_COMPLETE {
            self.mem = reopened;
        }
        Ok(())
    }
}

fn sequence<F: Faulty + Default>(steps: &[(Op, Option<(u8, u8)>)]) -> Result<(), TestCaseError> {
    COUNTS.with(|c| c.sequences.set(c.sequences.get() + 1));
    let mut run = Run::<F>::new();
    for (op, fault) in steps {
        run.step(op, *fault)?;
    }
    Ok(())
}

/// Runs `MEMTIDE_FAULT_SEQUENCES` (default 3,400) random sequences on backend
/// `F` and prints what they did.
fn property<F: Faulty + Default>(name: &str) {
    let cases = std::env::var("MEMTIDE_FAULT_SEQUENCES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_400);
    let config = ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let result = proptest::test_runner::TestRunner::new(config)
        .run(&steps(1..12), |steps| sequence::<F>(&steps));
    COUNTS.with(|c| {
        eprintln!(
            "fault_model {name}: {} sequences, {} operations, {} faults injected, {} of them survived (struck after the commit point, or retried past)",
            c.sequences.get(),
            c.operations.get(),
            c.faults.get(),
            c.survived.get(),
        );
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
}

#[test]
fn io_and_quota_failures_change_nothing() {
    property::<Flaky>("io and quota failures");
}

#[test]
fn a_crash_mid_journal_leaves_the_state_before_or_after() {
    property::<Crashing>("crashes mid-journal");
}

#[test]
fn stale_reads_never_clobber_newer_writes() {
    property::<Lagging>("stale reads");
}
