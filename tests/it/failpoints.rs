//! Failure injection (`docs/design.md`, "Policies", 8): a storage commit that fails leaves
//! the store exactly as it was, in memory and on reopen, and the store keeps
//! working; a torn or damaged store is refused on open with `CORRUPT`.
//!
//! [`FailingStorage`] wraps a real backend and refuses the N-th commit before
//! applying any of it, as the storage contract allows. The main property runs
//! a random operation sequence once cleanly, then once per commit position with
//! that commit failing. The operations include syncing files and memory tool
//! writes, so a failed file write leaves the old file and its old chunks.

use proptest::prelude::*;
use proptest::sample::Index;

use memtide::env::FixedEnvironment;
use memtide::storage::{Batch, MemoryStorage, Storage};
use memtide::{
    Config, Error, InjectQuery, ListQuery, Memory, MemoryInput, MemoryItem, MemoryPatch,
    RetrieveQuery, Scope, ScopeFilter, Source, Status, Timestamp,
};
use memtide_testkit::faults::{FailingStorage, Failure};
use memtide_testkit::store::T0;

const VOCAB: [&str; 6] = ["coffee", "berlin", "guitar", "marathon", "sushi", "violin"];

type Mem = Memory<FailingStorage<MemoryStorage>, FixedEnvironment>;

fn open(storage: FailingStorage<MemoryStorage>, env: FixedEnvironment) -> Mem {
    Memory::open(storage, env, Config::default()).unwrap()
}

fn fresh(storage: FailingStorage<MemoryStorage>) -> Mem {
    open(storage, FixedEnvironment::new(Timestamp(T0)))
}

fn entries(storage: &MemoryStorage) -> Vec<(String, Vec<u8>)> {
    storage
        .entries()
        .map(|(k, v)| (k.to_string(), v.to_vec()))
        .collect()
}

fn scopes() -> [Scope; 4] {
    [
        Scope::workspace("u0", "w0"),
        Scope::workspace("u0", "w0").with_project("p0"),
        Scope::workspace("u0", "w1"),
        Scope::workspace("u1", "w0"),
    ]
}

// ----- operations -------------------------------------------------------------

#[derive(Debug, Clone)]
struct InputSpec {
    scope: usize,
    words: Vec<usize>,
    status: Status,
    pinned: bool,
}

impl InputSpec {
    fn input(&self) -> MemoryInput {
        MemoryInput {
            status: Some(self.status),
            pinned: Some(self.pinned),
            ..MemoryInput::new(phrase(&self.words), scopes()[self.scope].clone())
        }
    }
}

fn phrase(words: &[usize]) -> String {
    words
        .iter()
        .map(|&w| VOCAB[w])
        .collect::<Vec<_>>()
        .join(" ")
}

#[derive(Debug, Clone)]
enum Op {
    Ingest(Vec<InputSpec>),
    Retrieve {
        scope: usize,
        words: Vec<usize>,
        dry_run: bool,
    },
    Inject {
        scope: usize,
        words: Vec<usize>,
        dry_run: bool,
    },
    Update {
        target: Index,
        text: Option<Vec<usize>>,
        status: Option<Status>,
        deleted: Option<bool>,
    },
    Delete {
        target: Index,
        hard: bool,
    },
    DeleteAll {
        user: usize,
        hard: bool,
    },
    /// Imports the export of another store built from these inputs (its ids
    /// collide with this store's, so some memories are replaced).
    ImportForeign(Vec<InputSpec>),
    /// Imports this store's own export.
    ImportOwn,
    AdvanceMinutes(i64),
    /// Syncs file `file` of a scope with one line per phrase.
    SyncFile {
        scope: usize,
        file: usize,
        lines: Vec<Vec<usize>>,
    },
    /// Runs a memory tool call in a scope.
    MemoryTool {
        scope: usize,
        input: serde_json::Value,
    },
}

/// Paths of synced files.
const FILES: [&str; 2] = ["MEMORY.md", "notes/USER.md"];
/// Paths the memory tool works on.
const TOOL_PATHS: [&str; 3] = ["/memories/a.md", "/memories/d/b.md", "/memories/d"];

/// The id `target` picks among the stored memories, or an unknown id.
fn pick(mem: &Mem, target: &Index) -> String {
    let mut ids: Vec<String> = mem.engine().items().map(|i| i.id.clone()).collect();
    ids.sort();
    ids.push("m999999".to_string());
    ids[target.index(ids.len())].clone()
}

fn describe<T: serde::Serialize>(result: Result<T, Error>) -> String {
    match result {
        Ok(value) => serde_json::to_string(&value).unwrap(),
        Err(e) => format!("error {}", e.code()),
    }
}

/// Runs `op` and describes its outcome (the value's JSON or the error code).
fn run(mem: &mut Mem, op: &Op) -> String {
    match op {
        Op::Ingest(specs) => describe(mem.ingest(specs.iter().map(InputSpec::input).collect())),
        Op::Retrieve {
            scope,
            words,
            dry_run,
        } => {
            let query = RetrieveQuery {
                dry_run: *dry_run,
                ..RetrieveQuery::new(phrase(words), scopes()[*scope].clone())
            };
            describe(mem.retrieve(&query))
        }
        Op::Inject {
            scope,
            words,
            dry_run,
        } => {
            let query = RetrieveQuery {
                dry_run: *dry_run,
                ..RetrieveQuery::new(phrase(words), scopes()[*scope].clone())
            };
            describe(mem.inject(&InjectQuery::new(query, 300)))
        }
        Op::Update {
            target,
            text,
            status,
            deleted,
        } => {
            let patch = MemoryPatch {
                text: text.as_deref().map(phrase),
                status: *status,
                deleted: *deleted,
                ..MemoryPatch::default()
            };
            let id = pick(mem, target);
            describe(mem.update(&id, patch))
        }
        Op::Delete { target, hard } => {
            let id = pick(mem, target);
            describe(mem.delete(&id, *hard))
        }
        Op::DeleteAll { user, hard } => {
            let filter = ScopeFilter {
                user_id: Some(format!("u{user}")),
                ..ScopeFilter::default()
            };
            describe(mem.delete_all(&filter, *hard))
        }
        Op::ImportForeign(specs) => {
            let mut donor = fresh(FailingStorage::new(MemoryStorage::new()));
            donor
                .ingest(specs.iter().map(InputSpec::input).collect())
                .unwrap();
            describe(mem.import(&donor.export()))
        }
        Op::ImportOwn => {
            let data = mem.export();
            describe(mem.import(&data))
        }
        Op::AdvanceMinutes(minutes) => {
            mem.env_mut().advance_ms(minutes * 60_000);
            String::new()
        }
        Op::SyncFile { scope, file, lines } => {
            let content: Vec<String> = lines.iter().map(|words| phrase(words)).collect();
            describe(mem.sync_file(&scopes()[*scope], FILES[*file], &content.join("\n")))
        }
        Op::MemoryTool { scope, input } => describe(mem.memory_tool(&scopes()[*scope], input)),
    }
}

/// Everything a caller can observe without writing: the export, the full
/// listing, statistics, dry-run retrievals in every scope, and the stored
/// pairs.
#[derive(Debug, PartialEq)]
struct Snapshot {
    export: String,
    listing: Vec<MemoryItem>,
    stats: String,
    retrievals: Vec<String>,
    stored: Vec<(String, Vec<u8>)>,
}

impl Snapshot {
    fn take(mem: &mut Mem) -> Snapshot {
        let listing = mem
            .list(&ListQuery {
                include_deleted: true,
                limit: Some(1000),
                ..ListQuery::default()
            })
            .unwrap()
            .items;
        let retrievals = scopes()
            .into_iter()
            .map(|scope| {
                let query = RetrieveQuery {
                    dry_run: true,
                    include_pending: true,
                    limit: Some(1000),
                    ..RetrieveQuery::new(VOCAB.join(" "), scope)
                };
                describe(mem.retrieve(&query))
            })
            .collect();
        Snapshot {
            export: mem.export(),
            listing,
            stats: serde_json::to_string(&mem.stats(&ScopeFilter::default())).unwrap(),
            retrievals,
            stored: entries(&mem.storage().inner),
        }
    }

    /// A storage holding exactly the snapshot's pairs.
    fn stored_storage(&self) -> MemoryStorage {
        let mut storage = MemoryStorage::new();
        let mut batch = Batch::new();
        for (key, value) in &self.stored {
            batch.put(key.clone(), value.clone());
        }
        storage.commit(&batch).unwrap();
        storage
    }
}

// ----- strategies ---------------------------------------------------------------

fn words() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0..VOCAB.len(), 1..=3)
}

fn status() -> impl Strategy<Value = Status> {
    prop_oneof![
        Just(Status::Approved),
        Just(Status::Pending),
        Just(Status::Rejected)
    ]
}

fn input_spec() -> impl Strategy<Value = InputSpec> {
    (
        0..scopes().len(),
        words(),
        status(),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(scope, words, status, pinned)| InputSpec {
            scope,
            words,
            status,
            pinned,
        })
}

fn inputs() -> impl Strategy<Value = Vec<InputSpec>> {
    prop::collection::vec(input_spec(), 1..=4)
}

fn tool_input() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::json;
    let path = || prop::sample::select(TOOL_PATHS.to_vec());
    prop_oneof![
        (path(), words()).prop_map(|(p, w)| json!({"command": "create", "path": p, "file_text": phrase(&w)})),
        (path(), 0..VOCAB.len(), words()).prop_map(|(p, old, new)| {
            json!({"command": "str_replace", "path": p, "old_str": VOCAB[old], "new_str": phrase(&new)})
        }),
        (path(), words()).prop_map(|(p, w)| json!({"command": "insert", "path": p, "insert_line": 0, "insert_text": phrase(&w)})),
        path().prop_map(|p| json!({"command": "delete", "path": p})),
        (path(), path()).prop_map(|(a, b)| json!({"command": "rename", "old_path": a, "new_path": b})),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let scope = 0..scopes().len();
    prop_oneof![
        2 => (scope.clone(), 0..FILES.len(), prop::collection::vec(words(), 0..6))
            .prop_map(|(scope, file, lines)| Op::SyncFile { scope, file, lines }),
        2 => (scope.clone(), tool_input()).prop_map(|(scope, input)| Op::MemoryTool { scope, input }),
        5 => inputs().prop_map(Op::Ingest),
        2 => (scope.clone(), words(), prop::bool::weighted(0.3))
            .prop_map(|(scope, words, dry_run)| Op::Retrieve { scope, words, dry_run }),
        2 => (scope, words(), prop::bool::weighted(0.3))
            .prop_map(|(scope, words, dry_run)| Op::Inject { scope, words, dry_run }),
        3 => (any::<Index>(), prop::option::of(words()), prop::option::of(status()), prop::option::weighted(0.3, any::<bool>()))
            .prop_map(|(target, text, status, deleted)| Op::Update { target, text, status, deleted }),
        2 => (any::<Index>(), any::<bool>()).prop_map(|(target, hard)| Op::Delete { target, hard }),
        1 => (0..2usize, any::<bool>()).prop_map(|(user, hard)| Op::DeleteAll { user, hard }),
        1 => inputs().prop_map(Op::ImportForeign),
        1 => Just(Op::ImportOwn),
        1 => (1..=90i64).prop_map(Op::AdvanceMinutes),
    ]
}

fn ops(len: std::ops::Range<usize>) -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(), len)
}

// ----- properties -----------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// For every commit the sequence makes, a run in which that commit fails
    /// reports the storage error, leaves memory and storage as they were
    /// before the operation (also after a reopen), and then continues exactly
    /// like a run that never attempted the failed operation.
    #[test]
    fn a_failed_commit_changes_nothing_and_the_store_keeps_working(ops in ops(1..14)) {
        let mut clean = fresh(FailingStorage::new(MemoryStorage::new()));
        let expected: Vec<String> = ops.iter().map(|op| run(&mut clean, op)).collect();
        let total_commits = clean.storage().commits;

        for fail_at in 0..total_commits {
            let failure = if fail_at % 2 == 0 { Failure::Quota } else { Failure::Backend };
            let mut mem = fresh(FailingStorage::failing_at(MemoryStorage::new(), fail_at, failure));
            let mut failed = false;
            for (i, op) in ops.iter().enumerate() {
                let before = Snapshot::take(&mut mem);
                let outcome = run(&mut mem, op);
                if mem.storage().commits <= fail_at {
                    prop_assert_eq!(&outcome, &expected[i], "op {} before the failure", i);
                    continue;
                }
                prop_assert_eq!(outcome, format!("error {}", failure.code()), "op {} {:?}", i, op);
                prop_assert_eq!(&Snapshot::take(&mut mem), &before, "the failed {:?} left traces", op);
                let env = mem.env_mut().clone();
                let inner = mem.storage().inner.clone();
                let mut reopened = open(FailingStorage::new(inner), env.clone());
                prop_assert_eq!(&Snapshot::take(&mut reopened), &before, "reopen after the failed {:?}", op);

                let mut unfaulted = open(FailingStorage::new(before.stored_storage()), env);
                for later in &ops[i + 1..] {
                    prop_assert_eq!(run(&mut mem, later), run(&mut unfaulted, later), "{:?} after the failure", later);
                }
                prop_assert_eq!(Snapshot::take(&mut mem), Snapshot::take(&mut unfaulted));
                failed = true;
                break;
            }
            prop_assert!(failed, "commit {} was never attempted", fail_at);
        }
    }

    /// An ingest batch with one invalid input fails as a whole: nothing is
    /// committed and nothing changes, merges into existing memories and into
    /// earlier inputs of the batch included.
    #[test]
    fn an_invalid_input_fails_the_whole_ingest_batch(
        existing in inputs(),
        mut batch in prop::collection::vec(input_spec(), 0..6),
        copy_existing in any::<Index>(),
        bad_at in any::<Index>(),
        bad_kind in 0..5usize,
    ) {
        let mut mem = fresh(FailingStorage::new(MemoryStorage::new()));
        mem.ingest(existing.iter().map(InputSpec::input).collect()).unwrap();
        batch.push(copy_existing.get(&existing).clone());
        let mut inputs: Vec<MemoryInput> = batch.iter().map(InputSpec::input).collect();
        let valid = inputs.clone();
        let position = bad_at.index(inputs.len() + 1);
        let mut bad = MemoryInput::new("coffee", scopes()[0].clone());
        match bad_kind {
            0 => bad.text = " \n\t ".into(),
            1 => bad.scope.user_id = String::new(),
            2 => bad.tags = Some(vec!["ok".into(), "bell\u{7}".into()]),
            3 => bad.source = Some(Source { reference: "line\nbreak".into(), ..Source::default() }),
            _ => bad.text = "coffee ".repeat(10_000),
        }
        inputs.insert(position, bad);

        let before = Snapshot::take(&mut mem);
        let commits = mem.storage().commits;
        let err = mem.ingest(inputs).unwrap_err();
        let want = if bad_kind == 4 { "TOO_LARGE" } else { "INVALID_INPUT" };
        prop_assert_eq!(err.code(), want, "{}", err);
        if want == "INVALID_INPUT" {
            prop_assert!(err.to_string().contains(&format!("inputs[{position}]")), "{}", err);
        }
        prop_assert_eq!(mem.storage().commits, commits, "a failed batch was committed");
        prop_assert_eq!(&Snapshot::take(&mut mem), &before);
        mem.ingest(valid).unwrap();
    }

    /// Applying only part of a batch the engine wrote (a torn write) yields a
    /// store that either opens to exactly the state before or after the
    /// write, or is refused as `CORRUPT`.
    #[test]
    fn a_torn_write_is_refused_or_equals_a_whole_state(
        ops in ops(1..12),
        choice in any::<Index>(),
        mask in prop::collection::vec(any::<bool>(), 64),
    ) {
        let mut mem = fresh(FailingStorage::new(MemoryStorage::new()));
        let mut writes = Vec::new();
        for op in &ops {
            let pre = mem.storage().inner.clone();
            let commits = mem.storage().commits;
            run(&mut mem, op);
            if mem.storage().commits > commits {
                let batch = mem.storage().last_batch.clone().unwrap();
                writes.push((pre, batch, mem.storage().inner.clone()));
            }
        }
        prop_assume!(!writes.is_empty());
        let (pre, batch, post) = choice.get(&writes);
        let ops_in_batch: Vec<(&str, Option<&[u8]>)> = batch.ops().collect();
        let mut keep: Vec<bool> = (0..ops_in_batch.len()).map(|i| mask[i % mask.len()]).collect();
        if keep.iter().all(|&k| k) {
            keep[0] = false;
        } else if !keep.iter().any(|&k| k) {
            keep[0] = true;
        }
        let mut part = Batch::new();
        for ((key, value), kept) in ops_in_batch.into_iter().zip(keep) {
            match (value, kept) {
                (Some(v), true) => part.put(key, v.to_vec()),
                (None, true) => part.delete(key),
                (_, false) => {}
            }
        }
        let mut torn = pre.clone();
        torn.commit(&part).unwrap();
        let env = FixedEnvironment::new(Timestamp(T0));
        match Memory::open(torn.clone(), env, Config::default()) {
            Ok(_) => {
                let state = entries(&torn);
                prop_assert!(state == entries(pre) || state == entries(post), "a mixed state opened");
            }
            Err(e) => prop_assert_eq!(e.code(), "CORRUPT", "{}", e),
        }
    }

    /// Flipping any bits of any one byte of any stored record (a memory or the
    /// manifest) makes the store refuse to open with `CORRUPT`.
    #[test]
    fn a_damaged_record_is_corrupt(
        ops in ops(1..12),
        victim in any::<Index>(),
        offset in any::<Index>(),
        flip in 1..=255u8,
    ) {
        let mut mem = fresh(FailingStorage::new(MemoryStorage::new()));
        for op in &ops {
            run(&mut mem, op);
        }
        let mut storage = mem.into_storage().inner;
        let records = entries(&storage);
        prop_assume!(!records.is_empty());
        let (key, mut value) = victim.get(&records).clone();
        let at = offset.index(value.len());
        value[at] ^= flip;
        let mut damage = Batch::new();
        damage.put(key, value);
        storage.commit(&damage).unwrap();
        let err = Memory::open(storage, FixedEnvironment::new(Timestamp(T0)), Config::default()).err();
        prop_assert_eq!(err.map(|e| e.code()), Some("CORRUPT"));
    }
}

/// Both storage failure kinds reach the caller with their own codes, change
/// nothing, and the next write succeeds.
#[test]
fn storage_failures_keep_their_error_codes() {
    for (failure, code) in [
        (Failure::Quota, "QUOTA_EXCEEDED"),
        (Failure::Backend, "STORAGE"),
    ] {
        let mut mem = fresh(FailingStorage::failing_at(MemoryStorage::new(), 0, failure));
        let input = || {
            vec![MemoryInput::new(
                "I drink my coffee in Berlin",
                scopes()[0].clone(),
            )]
        };
        let err = mem.ingest(input()).unwrap_err();
        assert_eq!(err.code(), code);
        match failure {
            Failure::Quota => assert!(matches!(err, Error::QuotaExceeded(_)), "{err:?}"),
            Failure::Backend => assert!(matches!(err, Error::Storage(_)), "{err:?}"),
        }
        assert!(mem.engine().is_empty());
        assert_eq!(mem.storage().inner.entries().count(), 0);
        mem.ingest(input()).unwrap();
        assert_eq!(mem.engine().len(), 1);
        assert_eq!(
            mem.storage().inner.entries().count(),
            1,
            "the manifest, whose log holds the memory"
        );
    }
}

/// Removing any one segment behind the engine's back makes the store refuse
/// to open with `CORRUPT`: the manifest names it, and no newer commit
/// replaced it.
#[test]
fn a_missing_segment_is_corrupt() {
    let mut mem = fresh(FailingStorage::new(MemoryStorage::new()));
    for batch in 0..3 {
        let inputs = (0..120)
            .map(|i| {
                let text = format!(
                    "note {batch} {i} about {} and {}",
                    VOCAB[i % 6],
                    VOCAB[(i + batch) % 6]
                );
                MemoryInput::new(text, scopes()[i % 4].clone())
            })
            .collect();
        mem.ingest(inputs).unwrap();
    }
    let storage = mem.into_storage().inner;
    let segments: Vec<String> = storage
        .entries()
        .map(|(k, _)| k.to_string())
        .filter(|k| k.starts_with("seg/"))
        .collect();
    assert!(segments.len() >= 2, "{segments:?}");
    for victim in segments {
        let mut torn = storage.clone();
        let mut tear = Batch::new();
        tear.delete(victim.clone());
        torn.commit(&tear).unwrap();
        let err = Memory::open(
            torn,
            FixedEnvironment::new(Timestamp(T0)),
            Config::default(),
        )
        .err();
        assert_eq!(err.map(|e| e.code()), Some("CORRUPT"), "{victim}");
    }
}
