//! Crash consistency under injected faults, checked against a reference
//! model (the reliability issue, part 1).
//!
//! Random operation sequences (ingest with exact duplicates, update, approve
//! and reject, pin, soft and hard delete, restore, deleteAll, export and
//! import, retrieval that marks usage, summaries of a scope, reopen, an
//! extractor's `update` superseding a memory) run against memtide over a
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
//! text left in storage (a summary's text included, erased with any
//! source a hard delete or a new text erases).
//!
//! `MEMTIDE_FAULT_SEQUENCES` sets the number of sequences per backend (default
//! 3,400, so 10,200 in all); `MEMTIDE_FAULT_SEQUENCES=100000 cargo test
//! --release --test it fault_model` is the soak (docs/reliability.md).

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
    AsyncMemory, Config, Error, HistoryKind, IngestOutcome, IngestReason, Kind, ListQuery,
    MemoryInput, MemoryItem, MemoryPatch, Operation, OperationsRequest, RetrieveQuery, Scope,
    ScopeFilter, Source, SourceKind, Status, SummaryInput, Timestamp,
};
use memtide_testkit::block_on;
use memtide_testkit::faults::{MapKv, Trigger};
use memtide_testkit::store::T0;

mod backends;
mod model;
mod ulids;
use backends::*;
use model::*;
use ulids::*;

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
    Supersede(Index),
    /// The summary of scope `.0` over the picked candidates.
    Summarize(usize, Vec<Index>),
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

/// A patch.
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

/// An operation.
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
        2 => any::<Index>().prop_map(Op::Supersede),
        2 => (0..4usize, prop::collection::vec(any::<Index>(), 1..4))
            .prop_map(|(s, picks)| Op::Summarize(s, picks)),
    ]
}

/// An operation and the fault armed for it: `(family variant, position)`.
fn steps(len: std::ops::Range<usize>) -> impl Strategy<Value = Vec<(Op, Option<(u8, u8)>)>> {
    prop::collection::vec((op(), prop::option::weighted(0.6, (0..2u8, 0..8u8))), len)
}

// ----- the driver -------------------------------------------------------------------------

type Mem<F> = AsyncMemory<<F as Faulty>::Store, TestEnv>;

fn open<F: Faulty>(backend: &F, ids: Ids) -> Result<Mem<F>, Error> {
    let mut mem = block_on(AsyncMemory::open(
        backend.store(),
        TestEnv::new(ids),
        config(),
    ))?;
    attach(&mut mem, ids)?;
    Ok(mem)
}

/// Every memory, deleted ones included.
fn observed<S: AsyncStorage>(mem: &AsyncMemory<S, TestEnv>) -> BTreeMap<String, ModelItem> {
    let mut items = BTreeMap::new();
    let mut cursor = None;
    loop {
        let page = mem
            .list(&ListQuery {
                include_deleted: true,
                include_superseded: true,
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
/// items, indexes, statistics and erased texts (and first, with ULID ids,
/// the stored keys and embeddings).
fn check_durable<F: Faulty>(backend: &F, model: &Model, ids: Ids) -> Result<(), TestCaseError> {
    if ids == Ids::UlidsWithVectors {
        check_keys(&backend.store(), model)?;
    }
    let mut mem = open(backend, ids).map_err(|e| TestCaseError::fail(format!("reopen: {e}")))?;
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
    digests: usize,
    ids: Ids,
}

impl<F: Faulty + Default> Run<F> {
    fn new(ids: Ids) -> Self {
        let backend = F::default();
        let mem = open(&backend, ids).expect("a new store opens");
        Run {
            ids,
            backend,
            mem,
            model: Model::default(),
            exports: Vec::new(),
            renames: 0,
            digests: 0,
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
                } else {
                    model.soft_delete(&id);
                }
                (block_on(self.mem.delete(&id, *hard)).map(drop), true)
            }
            Op::DeleteAll(tenant, hard) => {
                let filter = tenant_filter(*tenant);
                let expected = model.delete_all(&filter, *hard);
                let result = block_on(self.mem.delete_all(&filter, *hard));
                if let Ok(done) = &result {
                    assert_eq!((done.deleted, done.summaries), expected, "deleteAll counts");
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
            Op::Supersede(index) => {
                let Some(id) = self.target(index) else {
                    return (Ok(()), true);
                };
                self.renames += 1;
                let text = format!("superseding{} {}", self.renames, WORDS[self.renames % 12]);
                let request = OperationsRequest {
                    scope: model.items[&id].scope.clone(),
                    allowed: vec![id.clone()],
                    operations: vec![Operation::Update {
                        id: id.clone(),
                        text: text.clone(),
                        kind: None,
                        tags: None,
                        key: None,
                        metadata: None,
                    }],
                };
                let result = block_on(self.mem.apply_operations(request));
                let new_id = match &result {
                    Ok(done) => done.superseded[0].by.clone(),
                    // Learnt on recovery, like an ingest's.
                    Err(_) => "?0".to_string(),
                };
                let valid = model.supersede(&id, &text, new_id);
                (result.map(drop), valid)
            }
            Op::Summarize(scope, picks) => {
                let scope = scope_of(*scope);
                let candidates = model.summarizable(&scope);
                if candidates.is_empty() {
                    return (Ok(()), true);
                }
                let sources: Vec<String> = picks
                    .iter()
                    .map(|p| candidates[p.index(candidates.len())].clone())
                    .collect();
                self.digests += 1;
                let text = format!("digest{} {}", self.digests, WORDS[self.digests % 12]);
                let input = SummaryInput {
                    scope: scope.clone(),
                    text: text.clone(),
                    sources: sources.clone(),
                };
                let result = block_on(self.mem.store_summary(input));
                let id = match &result {
                    Ok(item) => item.id.clone(),
                    // Learnt on recovery, as for ingest.
                    Err(_) => "?summary".to_string(),
                };
                model.summarize(&scope, text, sources, || id);
                (result.map(drop), true)
            }
            Op::Reopen => match open(&self.backend, self.ids) {
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
                if let Ok(mem) = open(&self.backend, self.ids) {
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
        check_durable(&self.backend, &self.model, self.ids)
    }

    /// After a failed operation: the durable state is the model's before or
    /// (journaled writes only) after it; the store is reopened when its
    /// process died, else it must have rolled back.
    fn recover(&mut self, mut after: Model, error: &Error) -> Result<(), TestCaseError> {
        let reopened = open(&self.backend, self.ids)
            .map_err(|e| TestCaseError::fail(format!("reopen: {e}")))?;
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

fn sequence<F: Faulty + Default>(
    steps: &[(Op, Option<(u8, u8)>)],
    ids: Ids,
) -> Result<(), TestCaseError> {
    COUNTS.with(|c| c.sequences.set(c.sequences.get() + 1));
    let mut run = Run::<F>::new(ids);
    for (op, fault) in steps {
        run.step(op, *fault)?;
    }
    Ok(())
}

/// Runs `MEMTIDE_FAULT_SEQUENCES` (default `default_cases`) random sequences
/// on backend `F` with ids `ids` and prints what they did.
fn property<F: Faulty + Default>(name: &str, ids: Ids, default_cases: u32) {
    let cases = std::env::var("MEMTIDE_FAULT_SEQUENCES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default_cases);
    let config = ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let result = proptest::test_runner::TestRunner::new(config)
        .run(&steps(1..12), |steps| sequence::<F>(&steps, ids));
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
    property::<Flaky>("io and quota failures", Ids::Sequential, 3_400);
}

#[test]
fn a_crash_mid_journal_leaves_the_state_before_or_after() {
    property::<Crashing>("crashes mid-journal", Ids::Sequential, 3_400);
}

#[test]
fn stale_reads_never_clobber_newer_writes() {
    property::<Lagging>("stale reads", Ids::Sequential, 3_400);
}

/// The crash run again with ULID ids and embeddings: the keys the layout
/// holds by their ULID, through crashes, deletes, merges and reopens.
#[test]
fn a_crash_mid_journal_keeps_ulid_keys_and_their_embeddings() {
    property::<Crashing>("crashes mid-journal, ULID ids", Ids::UlidsWithVectors, 500);
}
