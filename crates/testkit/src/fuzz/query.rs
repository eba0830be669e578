//! Target `query`: the request types parsed from JSON by serde, as the CLI
//! and the JavaScript bindings parse them, then run on a small store.
//!
//! The first byte picks the type and the operation; the second picks a
//! memory (for `update`) or a flag (`hard` for `deleteAll`); the rest is the
//! JSON. Invariants, beyond "never a panic":
//! * `RetrieveQuery` → `retrieve`: at most `limit` (default 10) hits, each
//!   visible from the query's scope, approved (or pending when asked),
//!   neither deleted, expired nor private, PII only when asked; a dry run
//!   changes nothing;
//! * `InjectQuery` → `inject`: the block's estimated tokens are `tokens`,
//!   within the budget; every used memory is cited once; an empty block
//!   uses nothing;
//! * `ListQuery` → `list`: at most `limit` (default 50) items, each matching
//!   the scope filter;
//! * `MemoryPatch` → `update`, `Vec<MemoryInput>` → `ingest`, `ScopeFilter`
//!   → `deleteAll` and `stats`: on success the store reopens to the same
//!   export and that export imports into a fresh store;
//! * `Config` → `Memory::open` on the store, then an ingest, a retrieval and
//!   an injection;
//! * every failure is `INVALID_INPUT`, `TOO_LARGE` or `NOT_FOUND`, and
//!   changes nothing.

use memtide::{EstimatedTokens, TokenCounter};
use memtide::storage::MemoryStorage;
use memtide::{
    Config, InjectQuery, ListQuery, Memory, MemoryInput, MemoryPatch, RetrieveQuery, Scope,
    ScopeFilter, Status,
};
use serde::de::DeserializeOwned;

use super::{assert_code, env, seeded_memory, seeded_storage, TestMemory, NOW};

const INPUT_ERRORS: &[&str] = &["INVALID_INPUT", "TOO_LARGE", "NOT_FOUND"];

/// See the module documentation.
pub fn check(data: &[u8]) {
    let [op, arg, json @ ..] = data else {
        return;
    };
    match op % 7 {
        0 => with_parsed(json, |q: RetrieveQuery| retrieve(&q)),
        1 => with_parsed(json, |q: InjectQuery| inject(&q)),
        2 => with_parsed(json, |q: ListQuery| list(&q)),
        3 => with_parsed(json, |patch: MemoryPatch| {
            let mut mem = seeded_memory();
            let ids: Vec<String> = mem.engine().items().map(|i| i.id.clone()).collect();
            let id = ids[usize::from(*arg) % ids.len()].clone();
            write(&mut mem, |mem| mem.update(&id, patch).map(drop));
        }),
        4 => with_parsed(json, |inputs: Vec<MemoryInput>| {
            let n = inputs.len();
            write(&mut seeded_memory(), |mem| {
                let results = mem.ingest(inputs)?;
                assert_eq!(results.len(), n, "one result per input");
                Ok(())
            });
        }),
        5 => with_parsed(json, |filter: ScopeFilter| {
            let mut mem = seeded_memory();
            let hard = arg % 2 == 1;
            write(&mut mem, |mem| mem.delete_all(&filter, hard).map(drop));
            let left = mem.stats(&filter).items;
            if hard && filter.user_id.is_some() {
                assert_eq!(left, 0, "a hard deleteAll left memories");
            }
        }),
        _ => with_parsed(json, config),
    }
}

/// Parses `json` as `T` and runs `then` on it; malformed JSON is the
/// parser's typed error and ends the check.
fn with_parsed<T: DeserializeOwned>(json: &[u8], then: impl FnOnce(T)) {
    if let Ok(value) = serde_json::from_slice(json) {
        then(value);
    }
}

fn retrieve(query: &RetrieveQuery) {
    let mut mem = seeded_memory();
    let before = mem.export();
    match mem.retrieve(query) {
        Ok(hits) => {
            assert!(hits.len() <= query.limit.unwrap_or(10), "more hits than the limit");
            for hit in &hits {
                let item = &hit.item;
                let all_sessions = query.sessions == memtide::Sessions::All;
                assert!(item.scope.is_visible_across(&query.scope, all_sessions), "cross-scope hit");
                let status_ok = item.status == Status::Approved
                    || (query.include_pending && item.status == Status::Pending);
                assert!(status_ok, "a {:?} hit", item.status);
                assert!(!item.is_deleted() && !item.is_expired(NOW), "a deleted or expired hit");
                assert!(!item.privacy.private, "a private hit");
                assert!(query.include_pii || !item.privacy.pii, "a PII hit");
            }
            if query.dry_run {
                assert_eq!(mem.export(), before, "a dry run changed the store");
            }
        }
        Err(error) => {
            assert_code(&error, INPUT_ERRORS, "retrieve");
            assert_eq!(mem.export(), before, "a failed retrieval changed the store");
        }
    }
}

fn inject(query: &InjectQuery) {
    let mut mem = seeded_memory();
    let before = mem.export();
    match mem.inject(query) {
        Ok(injection) => {
            assert!(injection.tokens <= query.budget_tokens, "over the budget");
            assert!(injection.estimated);
            assert_eq!(EstimatedTokens.count(&injection.block), injection.tokens);
            assert_eq!(injection.block.is_empty(), injection.used.is_empty());
            assert_eq!(injection.citations.len(), injection.used.len());
            for (n, (citation, id)) in injection.citations.iter().zip(&injection.used).enumerate() {
                assert_eq!((citation.tag.clone(), &citation.id), (format!("m{}", n + 1), id));
                let tag = format!("[{}]", citation.tag);
                assert_eq!(injection.block.matches(&tag).count(), 1, "{tag}");
            }
        }
        Err(error) => {
            assert_code(&error, INPUT_ERRORS, "inject");
            assert_eq!(mem.export(), before, "a failed injection changed the store");
        }
    }
}

fn list(query: &ListQuery) {
    let mem = seeded_memory();
    match mem.list(query) {
        Ok(page) => {
            assert!(page.items.len() <= query.limit.unwrap_or(50), "more than the limit");
            for item in &page.items {
                assert!(query.scope.matches(&item.scope), "an item outside the filter");
            }
        }
        Err(error) => assert_code(&error, INPUT_ERRORS, "list"),
    }
}

/// Runs a write; on success the store reopens to the same export, which
/// imports into a fresh store; on failure nothing changed.
fn write(mem: &mut TestMemory, op: impl FnOnce(&mut TestMemory) -> memtide::Result<()>) {
    let before = mem.export();
    match op(mem) {
        Ok(()) => {
            let after = mem.export();
            let reopened = Memory::open(mem.storage().clone(), env(), Default::default())
                .expect("the store reopens after a write");
            assert_eq!(reopened.export(), after, "the reopened store differs");
            let mut fresh = Memory::open(MemoryStorage::new(), env(), Default::default())
                .expect("an empty store opens");
            if let Err(error) = fresh.import(&after) {
                panic!("the export does not import into a fresh store: {error}");
            }
        }
        Err(error) => {
            assert_code(&error, INPUT_ERRORS, "write");
            assert_eq!(mem.export(), before, "a failed write changed the store");
        }
    }
}

fn config(config: Config) {
    let mut mem = match Memory::open(seeded_storage(), env(), config) {
        Ok(mem) => mem,
        Err(error) => return assert_code(&error, &["INVALID_INPUT"], "open with a config"),
    };
    let scope = Scope::workspace("alice", "home");
    let inputs = vec![
        MemoryInput::new("I drink my coffee as a cortado, every day", scope.clone()),
        MemoryInput::new("Tomatoes and roses in the garden", scope.clone().with_project("garden")),
    ];
    if let Err(error) = mem.ingest(inputs) {
        assert_code(&error, INPUT_ERRORS, "ingest with a config");
    }
    let query = RetrieveQuery::new("coffee garden", scope.with_project("garden"));
    if let Err(error) = mem.retrieve(&query) {
        assert_code(&error, INPUT_ERRORS, "retrieve with a config");
    }
    match mem.inject(&InjectQuery::new(query, 120)) {
        Ok(injection) => assert!(injection.tokens <= 120, "over the budget"),
        Err(error) => assert_code(&error, INPUT_ERRORS, "inject with a config"),
    }
}
