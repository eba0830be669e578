//! Property tests over random multi-tenant workloads: no read ever crosses a
//! scope (retrieval, injection, including what it reports as dropped, list,
//! stats and a filtered export), retrieval and injection honour every
//! exclusion rule (`docs/design.md`, "Policies", 1), exact duplicates never
//! make a second item (policy 4), usage is marked exactly for what was
//! returned (policy 6), a hard delete (or an update replacing a text) leaves
//! neither the id nor the text in any stored byte, and a reopened store
//! answers exactly like the live one.
//!
//! Each case runs a random sequence of operations against a [`Memory`] and,
//! beside it, a small model of which `(scope, normalized text)` pairs exist
//! and whether they are soft-deleted. After every step the store's listing
//! must equal the model, per-scope listings and statistics must count only
//! their scope, and reopening the storage must give the same export.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use proptest::sample::Index;

use memtide::dedupe::{NearDuplicateAction, NearDuplicateConfig};
use memtide::env::FixedEnvironment;
use memtide::storage::MemoryStorage;
use memtide::text;
use memtide::{
    Config, IngestOutcome, IngestReason, InjectQuery, ListQuery, Memory, MemoryInput, MemoryItem,
    MemoryPatch, Privacy, RetrieveHit, RetrieveQuery, Scope, ScopeFilter, Sessions, Status,
    Timestamp,
};
use memtide_testkit::store::T0;

mod oracles;
mod workload;
use oracles::*;
use workload::*;

const DAY_MS: i64 = Timestamp::DAY_MS;
/// Words of every memory and query: few, so queries match across tenants.
/// None of them occurs in the injection block's header.
const VOCAB: [&str; 8] = [
    "coffee", "berlin", "guitar", "marathon", "sushi", "python", "garden", "violin",
];
/// Texts of memories: few, so exact and near duplicates (same words in
/// another order) are frequent.
const PHRASES: [&str; 12] = [
    "coffee",
    "coffee berlin",
    "berlin coffee",
    "guitar marathon",
    "sushi",
    "python garden",
    "violin",
    "garden violin sushi",
    "marathon berlin",
    "coffee guitar",
    "python garden?",
    "sushi coffee violin",
];
/// Only ever written inside `<private>` spans: must never be stored.
const SECRET: &str = "zebra";
/// Number of workspaces per user.
const WORKSPACES: u8 = 2;

type Mem = Memory<MemoryStorage, FixedEnvironment>;

// ----- the harness ----------------------------------------------------------

/// What the model knows of one stored memory.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ModelItem {
    scope: Scope,
    text: String,
    deleted: bool,
}

struct Harness {
    mem: Mem,
    config: Config,
    users: u8,
    /// Every stored memory (soft-deleted ones included), by id.
    model: BTreeMap<String, ModelItem>,
    /// Hard-deleted memories as they were just before deletion.
    erased: Vec<MemoryItem>,
}

fn config(merge_near_duplicates: bool) -> Config {
    Config {
        near_duplicate: NearDuplicateConfig {
            action: if merge_near_duplicates {
                NearDuplicateAction::Merge
            } else {
                NearDuplicateAction::Report
            },
            ..NearDuplicateConfig::default()
        },
        ..Config::default()
    }
}

fn entries(storage: &MemoryStorage) -> Vec<(String, Vec<u8>)> {
    storage
        .entries()
        .map(|(k, v)| (k.to_string(), v.to_vec()))
        .collect()
}

/// Every memory `filter` selects, through `list`, seven at a time, checking
/// the newest-first order across pages.
fn list_all(mem: &Mem, filter: &ScopeFilter, include_deleted: bool) -> Vec<MemoryItem> {
    let mut items: Vec<MemoryItem> = Vec::new();
    let mut cursor = None;
    loop {
        let page = mem
            .list(&ListQuery {
                scope: filter.clone(),
                include_deleted,
                limit: Some(7),
                cursor,
                ..ListQuery::default()
            })
            .unwrap();
        items.extend(page.items);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    for pair in items.windows(2) {
        let key = |i: &MemoryItem| (i.created_at, i.id.clone());
        assert!(
            key(&pair[0]) > key(&pair[1]),
            "list is not newest first: {pair:?}"
        );
    }
    items
}

impl Harness {
    fn new(users: u8, merge_near_duplicates: bool) -> Self {
        let config = config(merge_near_duplicates);
        let env = FixedEnvironment::new(Timestamp(T0));
        Harness {
            mem: Memory::open(MemoryStorage::new(), env, config.clone()).unwrap(),
            config,
            users,
            model: BTreeMap::new(),
            erased: Vec::new(),
        }
    }

    fn now(&mut self) -> Timestamp {
        self.mem.env_mut().now
    }

    fn items(&self) -> BTreeMap<String, MemoryItem> {
        self.mem
            .engine()
            .items()
            .map(|i| (i.id.clone(), i.into_owned()))
            .collect()
    }

    fn reopen(&mut self) -> Mem {
        let env = self.mem.env_mut().clone();
        Memory::open(self.mem.storage().clone(), env, self.config.clone()).unwrap()
    }

    fn step(&mut self, op: &Op) {
        self.mem.env_mut().advance_ms(60_000);
        match op {
            Op::Ingest(specs) => self.ingest(specs),
            Op::Retrieve {
                query,
                default_limit,
            } => self.retrieve(query, *default_limit),
            Op::Inject { query, budget } => self.inject(query, *budget),
            Op::Update { target, patch } => self.update(target, patch),
            Op::Delete { target, hard } => self.delete(target, *hard),
            Op::DeleteAll {
                user,
                workspace,
                project,
                hard,
            } => {
                let filter = ScopeFilter {
                    user_id: Some(format!("u{user}")),
                    workspace_id: workspace.map(|w| format!("w{w}")),
                    project_id: project.map(|p| format!("p{p}")),
                    ..ScopeFilter::default()
                };
                self.delete_all(&filter, *hard);
            }
            Op::AdvanceDays(days) => self.mem.env_mut().advance_ms(i64::from(*days) * DAY_MS),
        }
        self.check_against_model();
        self.check_scoped_reads();
        let reopened = self.reopen();
        assert_eq!(
            reopened.export(),
            self.mem.export(),
            "reopening changed the store"
        );
    }

    /// The model entry holding `text` in exactly `scope`, if any.
    fn find(&self, scope: &Scope, text: &str) -> Option<(&String, &ModelItem)> {
        self.model
            .iter()
            .find(|(_, m)| &m.scope == scope && m.text == text)
    }

    fn ingest(&mut self, specs: &[InputSpec]) {
        let results = self
            .mem
            .ingest(specs.iter().map(InputSpec::input).collect())
            .unwrap();
        assert_eq!(results.len(), specs.len());
        let threshold = self.config.near_duplicate.lexical_threshold;
        let merge_near = self.config.near_duplicate.action == NearDuplicateAction::Merge;
        // Added memories whose fields are checked once the batch is done,
        // unless a later input of the batch merged into them.
        let mut added = BTreeMap::new();
        let mut merged_into = BTreeSet::new();
        for (spec, result) in specs.iter().zip(results) {
            let scope = spec.scope.scope();
            let Some(text) = spec.text.expected() else {
                assert_eq!(result.outcome, IngestOutcome::Skipped);
                assert_eq!(result.reason, Some(IngestReason::NoMemory));
                continue;
            };
            let near = |model: &BTreeMap<String, ModelItem>, id: &str| {
                let m = model
                    .get(id)
                    .unwrap_or_else(|| panic!("{id} is not stored"));
                assert_eq!(m.scope, scope, "near-duplicate across scopes");
                assert!(!m.deleted, "near-duplicate of a deleted memory");
                let overlap = text::term_overlap(&text::terms(&text), &text::terms(&m.text));
                assert!(overlap >= threshold, "`{text}` is not near `{}`", m.text);
            };
            if let Some((id, existing)) = self.find(&scope, &text) {
                let want = if existing.deleted {
                    (IngestOutcome::Skipped, Some(IngestReason::Suppressed))
                } else {
                    (IngestOutcome::Merged, Some(IngestReason::Duplicate))
                };
                assert_eq!(
                    (result.outcome, result.reason),
                    want,
                    "`{text}` in {scope:?}"
                );
                assert_eq!(result.id.as_ref(), Some(id));
                merged_into.insert(id.clone());
                continue;
            }
            let id = result
                .id
                .clone()
                .unwrap_or_else(|| panic!("`{text}` not stored: {result:?}"));
            match result.outcome {
                IngestOutcome::Added => {
                    assert!(!self.model.contains_key(&id), "id {id} reused");
                    assert!(
                        self.erased.iter().all(|e| e.id != id),
                        "erased id {id} reused"
                    );
                    match &result.similar_to {
                        Some(similar) => {
                            assert!(!merge_near, "near-duplicate reported instead of merged");
                            assert_eq!(result.reason, Some(IngestReason::NearDuplicate));
                            near(&self.model, similar);
                        }
                        None => assert_eq!(result.reason, None),
                    }
                    added.insert(id.clone(), spec);
                    self.model.insert(
                        id,
                        ModelItem {
                            scope,
                            text,
                            deleted: false,
                        },
                    );
                }
                IngestOutcome::Merged => {
                    assert!(
                        merge_near,
                        "merged although near-duplicates are only reported"
                    );
                    assert_eq!(result.reason, Some(IngestReason::NearDuplicate));
                    near(&self.model, &id);
                    merged_into.insert(id);
                }
                IngestOutcome::Skipped | IngestOutcome::Replaced | IngestOutcome::Superseded => {
                    panic!("`{text}` skipped, replaced or superseding without a key: {result:?}")
                }
            }
        }
        for (id, spec) in added
            .into_iter()
            .filter(|(id, _)| !merged_into.contains(id))
        {
            let item = self.mem.get(&id).unwrap();
            let want = (spec.status, spec.pinned, spec.privacy);
            assert_eq!(
                (item.status, item.pinned, item.privacy),
                want,
                "{id} as added"
            );
        }
    }

    fn retrieve(&mut self, spec: &QuerySpec, default_limit: bool) {
        let now = self.now();
        let query = RetrieveQuery {
            limit: if default_limit { None } else { Some(1000) },
            ..spec.query()
        };
        let before = self.items();
        let export_before = self.mem.export();
        let stored_before = entries(self.mem.storage());
        let full_query = RetrieveQuery {
            dry_run: true,
            limit: Some(1000),
            ..query.clone()
        };
        let full: Vec<String> = hit_ids(&self.mem.retrieve(&full_query).unwrap());
        let hits = self.mem.retrieve(&query).unwrap();

        let query_terms: BTreeSet<String> = text::terms(&query.text).into_iter().collect();
        let relevant =
            |item: &MemoryItem| visible(item, &query, now) && matches_terms(item, &query_terms);
        let returned: BTreeSet<String> = full.iter().cloned().collect();
        assert_eq!(returned.len(), full.len(), "an item was returned twice");
        for id in &full {
            let item = &before[id];
            assert_out_of_scope_never_seen(item, &query);
            assert!(
                visible(item, &query, now),
                "retrieve {query:?} at {now:?} returned {item:?}"
            );
            assert!(
                relevant(item) || follows_one_of(item, &before, &relevant),
                "retrieve {query:?} returned the unrelated {item:?}"
            );
        }
        for item in before.values().filter(|i| relevant(i)) {
            assert!(
                returned.contains(&item.id),
                "retrieve {query:?} missed {item:?}"
            );
        }
        let limit = query.limit.unwrap_or(10);
        assert_eq!(
            hit_ids(&hits),
            full[..full.len().min(limit)],
            "top {limit} of {query:?}"
        );
        self.check_usage(
            &before,
            &export_before,
            &stored_before,
            &hit_ids(&hits).into_iter().collect(),
            query.dry_run,
            now,
        );
        let after = self.items();
        for hit in &hits {
            assert_eq!(
                hit.item, after[&hit.item.id],
                "a hit is not the stored version"
            );
        }
    }

    fn inject(&mut self, spec: &QuerySpec, budget: usize) {
        let now = self.now();
        let request = InjectQuery::new(spec.query(), budget);
        let query = &request.query;
        let before = self.items();
        let export_before = self.mem.export();
        let stored_before = entries(self.mem.storage());
        let injection = self.mem.inject(&request).unwrap();

        assert!(injection.tokens <= budget);
        let used: BTreeSet<String> = injection.used.iter().cloned().collect();
        assert_eq!(
            used.len(),
            injection.used.len(),
            "an item was injected twice"
        );
        let query_terms: BTreeSet<String> = text::terms(&query.text).into_iter().collect();
        for id in &used {
            let item = &before[id];
            assert_out_of_scope_never_seen(item, query);
            assert!(
                visible(item, query, now),
                "injected a hidden memory: {item:?}"
            );
            assert!(
                item.pinned
                    || matches_terms(item, &query_terms)
                    || follows_one_of(item, &before, &|i| {
                        visible(i, query, now) && matches_terms(i, &query_terms)
                    }),
                "injected an unrelated memory"
            );
        }
        // What the budget left out is reported by id: those must be
        // visible too, or the report itself would reveal them.
        let dropped: BTreeSet<String> = injection.dropped.iter().map(|d| d.id.clone()).collect();
        assert_eq!(
            dropped.len(),
            injection.dropped.len(),
            "an item was dropped twice"
        );
        assert!(used.is_disjoint(&dropped), "an item was used and dropped");
        for id in &dropped {
            let item = before
                .get(id)
                .unwrap_or_else(|| panic!("dropped {id} is not stored"));
            assert_out_of_scope_never_seen(item, query);
            assert!(
                visible(item, query, now),
                "reported a hidden memory as dropped: {item:?}"
            );
        }
        let hidden = before
            .values()
            .filter(|i| !visible(i, query, now))
            .chain(&self.erased);
        for item in hidden {
            assert!(!used.contains(&item.id), "used a hidden memory: {item:?}");
            assert!(
                !dropped.contains(&item.id),
                "dropped a hidden memory: {item:?}"
            );
            assert!(!injection.citations.iter().any(|c| c.id == item.id));
            let quoted_by_used = used.iter().any(|id| before[id].text.contains(&item.text));
            assert!(
                quoted_by_used || !injection.block.contains(&item.text),
                "the block shows the text of hidden {item:?}:\n{}",
                injection.block
            );
        }
        self.check_usage(
            &before,
            &export_before,
            &stored_before,
            &used,
            query.dry_run,
            now,
        );
    }

    /// Exactly the `used` memories got one more use at `now`, or nothing at
    /// all changed for a dry run.
    fn check_usage(
        &self,
        before: &BTreeMap<String, MemoryItem>,
        export_before: &str,
        stored_before: &[(String, Vec<u8>)],
        used: &BTreeSet<String>,
        dry_run: bool,
        now: Timestamp,
    ) {
        if dry_run {
            assert_eq!(
                self.mem.export(),
                export_before,
                "a dry run changed the store"
            );
            assert_eq!(
                entries(self.mem.storage()),
                stored_before,
                "a dry run wrote to storage"
            );
            return;
        }
        let after = self.items();
        assert_eq!(after.len(), before.len());
        for (id, old) in before {
            let mut want = old.clone();
            if used.contains(id) {
                want.usage_count += 1;
                want.last_used_at = Some(now);
            }
            assert_eq!(after.get(id), Some(&want), "usage marking of {id}");
        }
    }

    /// Picks an id among the stored memories, then the erased ones; `true`
    /// when the id was erased.
    fn pick(&self, target: &Index) -> Option<(String, bool)> {
        let total = self.model.len() + self.erased.len();
        if total == 0 {
            return None;
        }
        let i = target.index(total);
        Some(match self.model.keys().nth(i) {
            Some(id) => (id.clone(), false),
            None => (self.erased[i - self.model.len()].id.clone(), true),
        })
    }

    fn update(&mut self, target: &Index, spec: &PatchSpec) {
        let Some((id, erased)) = self.pick(target) else {
            return;
        };
        let export_before = self.mem.export();
        let result = self.mem.update(&id, spec.patch());
        if erased {
            assert_eq!(result.unwrap_err().code(), "NOT_FOUND");
            return;
        }
        let mut model = self.model[&id].clone();
        let new_text = spec.text.as_ref().map(TextSpec::expected);
        let refused = match &new_text {
            Some(None) => true,
            Some(Some(text)) => self
                .find(&model.scope, text)
                .is_some_and(|(other, _)| other != &id),
            None => false,
        };
        if refused {
            assert_eq!(result.unwrap_err().code(), "INVALID_INPUT");
            assert_eq!(
                self.mem.export(),
                export_before,
                "a refused update changed the store"
            );
            return;
        }
        let item = result.unwrap();
        let old_text = model.text.clone();
        if let Some(Some(text)) = new_text {
            model.text = text;
        }
        if let Some(deleted) = spec.deleted {
            model.deleted = deleted;
        }
        assert_eq!(
            (&item.text, item.is_deleted()),
            (&model.text, model.deleted)
        );
        assert_eq!(item.status, spec.status.unwrap_or(item.status));
        assert_eq!(&item, self.mem.get(&id).as_ref().unwrap());
        self.model.insert(id, model);
        if item.text != old_text {
            self.assert_erased_texts_gone(&[old_text]);
        }
    }

    fn delete(&mut self, target: &Index, hard: bool) {
        let Some((id, erased)) = self.pick(target) else {
            return;
        };
        let before = self.mem.get(&id);
        let result = self.mem.delete(&id, hard);
        if erased {
            assert_eq!(result.unwrap_err().code(), "NOT_FOUND");
            return;
        }
        result.unwrap();
        self.forget(before.unwrap(), hard);
    }

    fn delete_all(&mut self, filter: &ScopeFilter, hard: bool) {
        let doomed: Vec<MemoryItem> = self
            .items()
            .into_values()
            .filter(|i| selects(filter, &i.scope) && (hard || !i.is_deleted()))
            .collect();
        let result = self.mem.delete_all(filter, hard).unwrap();
        assert_eq!((result.deleted, result.hard), (doomed.len(), hard));
        for item in doomed {
            self.forget(item, hard);
        }
    }

    /// Records the deletion of `item` in the model and checks it took effect.
    fn forget(&mut self, item: MemoryItem, hard: bool) {
        if hard {
            assert_eq!(self.mem.get(&item.id).unwrap_err().code(), "NOT_FOUND");
            // Erased means gone from storage, except (see the report of
            // this test) as the thread link `follows` of later memories.
            let mentions = |needle: &str, value: &[u8]| {
                value
                    .windows(needle.len())
                    .filter(|w| *w == needle.as_bytes())
                    .count()
            };
            let link = format!("\"follows\":\"{}\"", item.id);
            for (key, value) in self.mem.storage().entries() {
                assert!(
                    !key.contains(&item.id),
                    "erased {} is still stored",
                    item.id
                );
                assert_eq!(
                    mentions(&item.id, value),
                    mentions(&link, value),
                    "{key} mentions erased {}",
                    item.id
                );
            }
            self.model.remove(&item.id);
            let mut texts = vec![item.text.clone()];
            texts.extend(item.merged_from.iter().filter_map(|m| m.text.clone()));
            self.erased.push(item);
            self.assert_erased_texts_gone(&texts);
        } else if let Some(m) = self.model.get_mut(&item.id) {
            m.deleted = true;
        }
    }

    /// No stored byte holds any of `texts` (texts of erased memories, or
    /// replaced by an update), unless a stored memory of any scope still
    /// holds it in its text or its merge records (phrases contain each
    /// other: "coffee" is in "coffee berlin"). Soft-deleted memories keep
    /// their text, by design (it suppresses the same text later).
    fn assert_erased_texts_gone(&self, texts: &[String]) {
        let held: Vec<String> = self
            .mem
            .engine()
            .items()
            .flat_map(|i| {
                let i = i.into_owned();
                std::iter::once(i.text).chain(i.merged_from.into_iter().filter_map(|m| m.text))
            })
            .collect();
        for text in texts {
            if held.iter().any(|h| h.contains(text.as_str())) {
                continue;
            }
            for (key, value) in self.mem.storage().entries() {
                assert!(
                    !value.windows(text.len()).any(|w| w == text.as_bytes()),
                    "{key} still holds the erased text {text:?}"
                );
            }
        }
    }

    /// The whole listing equals the model: one item per `(scope, text)`.
    fn check_against_model(&self) {
        let listed = list_all(&self.mem, &ScopeFilter::default(), true);
        let got: BTreeMap<String, ModelItem> = listed
            .iter()
            .map(|i| {
                let m = ModelItem {
                    scope: i.scope.clone(),
                    text: i.text.clone(),
                    deleted: i.is_deleted(),
                };
                (i.id.clone(), m)
            })
            .collect();
        assert_eq!(got.len(), listed.len(), "list returned an item twice");
        assert_eq!(got, self.model, "the store disagrees with the model");
        let live: BTreeSet<String> = list_all(&self.mem, &ScopeFilter::default(), false)
            .into_iter()
            .map(|i| i.id)
            .collect();
        let want: BTreeSet<String> = self
            .model
            .iter()
            .filter(|(_, m)| !m.deleted)
            .map(|(id, _)| id.clone())
            .collect();
        assert_eq!(live, want, "list without deleted items");
        assert!(
            !self.mem.export().contains(SECRET),
            "a private span was stored"
        );
    }

    /// `list` and `stats` under a scope filter see exactly that filter's
    /// memories.
    fn check_scoped_reads(&self) {
        let items = self.items();
        for filter in probe_filters(self.users) {
            let selected: Vec<&MemoryItem> = items
                .values()
                .filter(|i| selects(&filter, &i.scope))
                .collect();
            let listed: BTreeSet<String> = list_all(&self.mem, &filter, true)
                .into_iter()
                .map(|i| i.id)
                .collect();
            let want: BTreeSet<String> = selected.iter().map(|i| i.id.clone()).collect();
            assert_eq!(listed, want, "list under {filter:?}");
            // The export under the filter holds exactly those memories,
            // field for field.
            let export: serde_json::Value =
                serde_json::from_str(&self.mem.export_filtered(&filter)).unwrap();
            let exported: Vec<MemoryItem> =
                serde_json::from_value(export["items"].clone()).unwrap();
            let expected: Vec<MemoryItem> = selected.iter().map(|i| (*i).clone()).collect();
            assert_eq!(exported, expected, "export under {filter:?}");
            let count = |f: &dyn Fn(&MemoryItem) -> bool| selected.iter().filter(|i| f(i)).count();
            let stats = self.mem.stats(&filter);
            let tenants: BTreeSet<(String, String)> = selected
                .iter()
                .map(|i| (i.scope.user_id.clone(), i.scope.workspace_id.clone()))
                .collect();
            assert_eq!(
                (
                    stats.items,
                    stats.deleted,
                    stats.pending,
                    stats.rejected,
                    stats.pinned,
                    stats.tenants
                ),
                (
                    selected.len(),
                    count(&|i| i.is_deleted()),
                    count(&|i| i.status == Status::Pending),
                    count(&|i| i.status == Status::Rejected),
                    count(&|i| i.pinned),
                    tenants.len(),
                ),
                "stats under {filter:?}"
            );
            assert_eq!(
                stats.active,
                count(&|i| !i.is_deleted() && i.status != Status::Rejected)
            );
            // The lexical indexes of those tenants hold exactly the terms of
            // their live memories: nothing of erased or deleted ones.
            let terms: BTreeSet<(&str, &str, String)> = items
                .values()
                .filter(|i| !i.is_deleted())
                .filter(|i| {
                    tenants.contains(&(i.scope.user_id.clone(), i.scope.workspace_id.clone()))
                })
                .flat_map(|i| {
                    text::terms(&i.text)
                        .into_iter()
                        .map(|t| (i.scope.user_id.as_str(), i.scope.workspace_id.as_str(), t))
                })
                .collect();
            assert_eq!(
                stats.indexed_terms,
                terms.len(),
                "indexed terms under {filter:?}"
            );
        }
    }

    /// A store reopened from a copy of the storage exports the same document
    /// and answers every query with the same hits.
    fn check_reopen_equivalence(&mut self) {
        let mut reopened = self.reopen();
        assert_eq!(reopened.export(), self.mem.export());
        let everything = VOCAB.join(" ");
        for scope in all_scopes(self.users) {
            let query = RetrieveQuery {
                dry_run: true,
                include_pending: true,
                include_pii: true,
                limit: Some(1000),
                ..RetrieveQuery::new(everything.clone(), scope)
            };
            let live = serde_json::to_string(&self.mem.retrieve(&query).unwrap()).unwrap();
            let again = serde_json::to_string(&reopened.retrieve(&query).unwrap()).unwrap();
            assert_eq!(live, again, "reopened store answers {query:?} differently");
        }
        let marking = RetrieveQuery::new(
            everything,
            ScopeSpec {
                user: 0,
                workspace: 0,
                project: Some(0),
                card: true,
                session: false,
            }
            .scope(),
        );
        self.mem.retrieve(&marking).unwrap();
        reopened.retrieve(&marking).unwrap();
        assert_eq!(reopened.export(), self.mem.export());
    }
}

/// A hit made in `query` must be visible from it; in particular a query that
/// does not name a project or card never sees memories that do, nor
/// memories of a session unless it reaches every session (`sessions:
/// "all"`, the default) or names that one.
fn assert_out_of_scope_never_seen(item: &MemoryItem, query: &RetrieveQuery) {
    let all_sessions = query.sessions == Sessions::All;
    let scope = &query.scope;
    assert!(
        item.scope.is_visible_across(scope, all_sessions),
        "{item:?} leaked into {scope:?}"
    );
    let session_bound = !all_sessions;
    let narrower = [
        (true, &scope.project_id, &item.scope.project_id),
        (true, &scope.card_id, &item.scope.card_id),
        (session_bound, &scope.session_id, &item.scope.session_id),
    ];
    for (bound, query_field, item_field) in narrower {
        assert!(
            !bound || query_field.is_some() || item_field.is_none(),
            "{item:?} leaked into {scope:?}"
        );
    }
}

fn workload() -> impl Strategy<Value = (u8, bool, Vec<Op>)> {
    (2u8..=3, any::<bool>()).prop_flat_map(|(users, merge)| {
        (
            Just(users),
            Just(merge),
            prop::collection::vec(op(users), 1..30),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn workloads_keep_tenants_apart_and_obey_the_retrieval_policies(
        (users, merge_near_duplicates, ops) in workload()
    ) {
        let mut harness = Harness::new(users, merge_near_duplicates);
        for op in &ops {
            harness.step(op);
        }
        harness.check_reopen_equivalence();
    }
}
