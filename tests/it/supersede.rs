//! Facts that change and an extractor's operations
//! (`docs/memory-model.md`, "Supersession" and "Extraction"): `upsert`
//! with `supersede`, `applyOperations`, what a superseded memory is to
//! each surface, erasure of either side, and that a list of operations is
//! applied whole or not at all (a property test against a brute-force
//! oracle of which lists are valid).

use std::cell::Cell;

use memtide::env::Environment;
use memtide::storage::MemoryStorage;
use memtide::{
    parse_operations, Config, HistoryKind, IngestOutcome, InjectQuery, ListQuery, Memory,
    MemoryInput, Operation, OperationsRequest, RetrieveQuery, Scope, Timestamp,
};
use memtide_testkit::store::{contains, open, record_bytes, records, scope, Mem};
use proptest::prelude::*;

fn coffee(text: &str, supersede: bool) -> MemoryInput {
    MemoryInput {
        key: Some("coffee".into()),
        supersede: supersede.then_some(true),
        ..MemoryInput::new(text, scope())
    }
}

fn ids_retrieved(mem: &mut Mem, text: &str) -> Vec<String> {
    let query = RetrieveQuery {
        dry_run: true,
        ..RetrieveQuery::new(text, scope())
    };
    mem.retrieve(&query)
        .unwrap()
        .into_iter()
        .map(|h| h.item.id)
        .collect()
}

fn listed(mem: &Mem, include_superseded: bool) -> Vec<String> {
    let query = ListQuery {
        include_superseded,
        ..Default::default()
    };
    mem.list(&query)
        .unwrap()
        .items
        .into_iter()
        .map(|i| i.id)
        .collect()
}

/// A store where "cortado" (key `coffee`) was superseded by "flat white".
fn changed_coffee() -> (Mem, String, String) {
    let mut mem = open();
    let old = mem
        .upsert(vec![coffee("I take my coffee as a cortado", false)])
        .unwrap();
    let old = old[0].id.clone().unwrap();
    mem.env_mut().advance_ms(60_000);
    let new = mem
        .upsert(vec![coffee("I switched to flat white coffee", true)])
        .unwrap();
    assert_eq!(new[0].outcome, IngestOutcome::Superseded);
    let new = new[0].id.clone().unwrap();
    assert_ne!(old, new);
    (mem, old, new)
}

#[test]
fn a_superseded_memory_leaves_retrieval_inject_and_list_but_stays_readable() {
    let (mut mem, old, new) = changed_coffee();
    let old_item = mem.get(&old).unwrap();
    assert!(old_item.superseded_at.is_some());
    assert_eq!(old_item.superseded_by.as_deref(), Some(new.as_str()));
    assert_eq!(old_item.text, "I take my coffee as a cortado");
    assert_eq!(mem.get(&new).unwrap().supersedes, vec![old.clone()]);
    assert_eq!(mem.get_by_key(&scope(), "coffee").unwrap().id, new);

    assert_eq!(
        ids_retrieved(&mut mem, "coffee cortado flat white"),
        vec![new.clone()]
    );
    let injection = mem
        .inject(&InjectQuery::new(
            RetrieveQuery {
                dry_run: true,
                min_relevance: Some(0.0),
                ..RetrieveQuery::new("which coffee do I take", scope())
            },
            500,
        ))
        .unwrap();
    assert_eq!(injection.used, vec![new.clone()]);
    assert!(injection.block.contains("flat white") && !injection.block.contains("cortado"));
    assert_eq!(listed(&mem, false), vec![new.clone()]);
    assert_eq!(listed(&mem, true), vec![new.clone(), old.clone()]);
    let export = mem.export();
    assert!(export.contains("cortado") && export.contains("\"supersededBy\""));
    // An export imports back, into this store and into an empty one, links and keys intact.
    let imported = mem.import(&export).unwrap();
    assert_eq!((imported.replaced, imported.added), (2, 0));
    let mut copy = open();
    assert_eq!(copy.import(&export).unwrap().added, 2);
    assert_eq!(copy.get_by_key(&scope(), "coffee").unwrap().id, new);
    assert_eq!(
        copy.get(&old).unwrap().superseded_by.as_deref(),
        Some(new.as_str())
    );
    assert_eq!(
        ids_retrieved(&mut copy, "coffee cortado flat white"),
        vec![new.clone()]
    );
    let stats = mem.stats(&Default::default());
    assert_eq!((stats.items, stats.active), (2, 1));

    let events = |id: &str| -> Vec<(HistoryKind, Option<String>)> {
        mem.history(id)
            .unwrap()
            .into_iter()
            .map(|e| (e.event, e.other))
            .collect()
    };
    assert_eq!(
        events(&old),
        vec![
            (HistoryKind::Created, None),
            (HistoryKind::Superseded, Some(new.clone()))
        ]
    );
    assert_eq!(
        events(&new),
        vec![
            (HistoryKind::Created, None),
            (HistoryKind::Supersedes, Some(old.clone()))
        ]
    );
    // History holds ids, never a text.
    let history = serde_json::to_string(&mem.history(&old).unwrap()).unwrap();
    assert!(!history.contains("cortado"));

    // The same text said again is a new fact, not a merge into the old one.
    let again = mem
        .ingest(vec![MemoryInput::new(
            "I take my coffee as a cortado",
            scope(),
        )])
        .unwrap();
    assert_eq!(again[0].outcome, IngestOutcome::Added);

    // It all persists.
    let storage = mem.into_storage();
    let reopened = memtide::Memory::open(
        storage,
        memtide::env::FixedEnvironment::new(memtide::Timestamp(memtide_testkit::store::T0)),
        Default::default(),
    )
    .unwrap();
    assert_eq!(
        reopened.get(&old).unwrap().superseded_by.as_deref(),
        Some(new.as_str())
    );
    assert_eq!(reopened.get_by_key(&scope(), "coffee").unwrap().id, new);
}

#[test]
fn upsert_without_supersede_still_replaces_in_place_and_an_unchanged_text_does_not_supersede() {
    let mut mem = open();
    let first = mem
        .upsert(vec![coffee("I take my coffee as a cortado", false)])
        .unwrap();
    let id = first[0].id.clone().unwrap();
    let replaced = mem
        .upsert(vec![coffee("I take my coffee black", false)])
        .unwrap();
    assert_eq!(
        (replaced[0].outcome, replaced[0].id.clone()),
        (IngestOutcome::Replaced, Some(id.clone()))
    );
    let same = mem
        .upsert(vec![coffee("I take my coffee black", true)])
        .unwrap();
    assert_eq!(
        (same[0].outcome, same[0].id.clone()),
        (IngestOutcome::Replaced, Some(id.clone()))
    );
    assert_eq!(mem.stats(&Default::default()).items, 1);
}

#[test]
fn a_hard_delete_of_either_side_erases_it_and_unlinks_the_other() {
    // The old side.
    let (mut mem, old, new) = changed_coffee();
    mem.delete(&old, true).unwrap();
    let bytes = record_bytes(mem.storage());
    assert!(!contains(&bytes, &old) && !contains(&bytes, "cortado"));
    let successor = mem.get(&new).unwrap();
    assert!(successor.supersedes.is_empty());
    assert!(mem.history(&new).unwrap().iter().all(|e| e.other.is_none()));
    assert_eq!(
        ids_retrieved(&mut mem, "coffee flat white"),
        vec![new.clone()]
    );

    // The new side: the old fact stays superseded, not brought back.
    let (mut mem, old, new) = changed_coffee();
    mem.delete(&new, true).unwrap();
    let bytes = record_bytes(mem.storage());
    assert!(!contains(&bytes, &new) && !contains(&bytes, "flat white"));
    let predecessor = mem.get(&old).unwrap();
    assert!(predecessor.is_superseded() && predecessor.superseded_by.is_none());
    assert!(mem.history(&old).unwrap().iter().all(|e| e.other.is_none()));
    assert!(ids_retrieved(&mut mem, "coffee cortado").is_empty());
    assert!(mem.get_by_key(&scope(), "coffee").is_none());
}

fn add(text: &str) -> Operation {
    Operation::Add {
        text: text.into(),
        kind: None,
        tags: None,
        key: None,
        metadata: None,
    }
}

fn update(id: &str, text: &str) -> Operation {
    Operation::Update {
        id: id.into(),
        text: text.into(),
        kind: None,
        tags: None,
        key: None,
        metadata: None,
    }
}

fn request(allowed: &[&str], operations: Vec<Operation>) -> OperationsRequest {
    OperationsRequest {
        scope: scope(),
        allowed: allowed.iter().map(|s| s.to_string()).collect(),
        operations,
    }
}

fn seeded() -> (Mem, Vec<String>) {
    let mut mem = open();
    let inputs = [
        (
            "I take my coffee as a cortado",
            scope(),
            memtide::Kind::Preference,
        ),
        ("My sister lives in Lisbon", scope(), memtide::Kind::Fact),
        ("I am learning the cello", scope(), memtide::Kind::Fact),
        (
            "Bob keeps a red bicycle",
            Scope::workspace("bob", "home"),
            memtide::Kind::Fact,
        ),
    ];
    let ids = inputs
        .into_iter()
        .map(|(text, scope, kind)| {
            mem.env_mut().advance_ms(1_000);
            let input = MemoryInput {
                kind: Some(kind),
                ..MemoryInput::new(text, scope)
            };
            mem.ingest(vec![input]).unwrap()[0].id.clone().unwrap()
        })
        .collect();
    (mem, ids)
}

#[test]
fn an_extractors_operations_apply_in_one_commit() {
    let (mut mem, ids) = seeded();
    let (coffee_id, sister, cello) = (&ids[0], &ids[1], &ids[2]);
    let reply = format!(
        "Here are the operations:\n```json\n[{{\"op\":\"update\",\"id\":\"{coffee_id}\",\"text\":\"I take my coffee as a flat white\"}},\
         {{\"op\":\"delete\",\"id\":\"{cello}\"}},{{\"op\":\"add\",\"text\":\"Prefers oat milk\",\"kind\":\"preference\",\"tags\":[\"coffee\"]}},{{\"op\":\"none\"}}]\n```"
    );
    let operations = parse_operations(&reply, 10_000).unwrap();
    let before = records(mem.storage()).len();
    let result = mem
        .apply_operations(request(&[coffee_id, sister, cello], operations))
        .unwrap();
    assert_eq!(result.added.len(), 2);
    assert_eq!(result.superseded.len(), 1);
    assert_eq!(&result.superseded[0].id, coffee_id);
    assert_eq!(result.deleted, vec![cello.clone()]);
    let successor = mem.get(&result.superseded[0].by).unwrap().clone();
    assert_eq!(successor.text, "I take my coffee as a flat white");
    assert_eq!(
        successor.kind,
        memtide::Kind::Preference,
        "an update keeps the kind"
    );
    assert_eq!(successor.supersedes, vec![coffee_id.clone()]);
    let oat = mem.get(&result.added[1]).unwrap();
    assert_eq!(
        (oat.kind, oat.tags.clone()),
        (memtide::Kind::Preference, vec!["coffee".to_string()])
    );
    assert!(mem.get(cello).unwrap().is_deleted());
    assert_eq!(
        ids_retrieved(&mut mem, "coffee cortado flat white"),
        vec![successor.id.clone()]
    );
    assert_eq!(records(mem.storage()).len(), before + 2);

    // A key: an `add` with a held key supersedes its holder.
    let keyed = |text: &str| Operation::Add {
        text: text.into(),
        kind: None,
        tags: None,
        key: Some("city".into()),
        metadata: None,
    };
    let first = mem
        .apply_operations(request(&[], vec![keyed("I live in Porto")]))
        .unwrap();
    let second = mem
        .apply_operations(request(&[], vec![keyed("I moved to Berlin")]))
        .unwrap();
    assert_eq!(second.superseded[0].id, first.added[0]);
    assert_eq!(
        mem.get_by_key(&scope(), "city").unwrap().text,
        "I moved to Berlin"
    );
}

/// A clock that moves one millisecond each time it is read, as a real one
/// may between two reads of one operation; ids `t000001`, ….
#[derive(Default)]
struct Ticking {
    ms: Cell<i64>,
    ids: u64,
}

impl Environment for Ticking {
    fn now(&self) -> Timestamp {
        let ms = self.ms.get() + 1;
        self.ms.set(ms);
        Timestamp(1_700_000_000_000 + ms)
    }

    fn new_id(&mut self, _newest: Option<&str>) -> String {
        self.ids += 1;
        format!("t{:06}", self.ids)
    }
}

#[test]
fn an_update_gives_the_successor_and_both_links_one_time_on_a_clock_that_ticks() {
    let mut mem =
        Memory::open(MemoryStorage::new(), Ticking::default(), Config::default()).unwrap();
    let old = mem
        .ingest(vec![MemoryInput::new(
            "I take my coffee as a cortado",
            scope(),
        )])
        .unwrap()
        .remove(0)
        .id
        .unwrap();
    let operations = vec![update(&old, "I take my coffee as a flat white")];
    let result = mem.apply_operations(request(&[&old], operations)).unwrap();
    let new = result.superseded[0].by.clone();
    let created = mem.get(&new).unwrap().created_at;
    let events = |id: &str| {
        mem.history(id)
            .unwrap()
            .into_iter()
            .map(|e| (e.event, e.at))
            .collect::<Vec<_>>()
    };
    // The successor is created, then supersedes: never the other way round.
    assert_eq!(
        events(&new),
        [
            (HistoryKind::Created, created),
            (HistoryKind::Supersedes, created)
        ]
    );
    assert_eq!(events(&old)[1], (HistoryKind::Superseded, created));
    assert_eq!(mem.get(&old).unwrap().superseded_at, Some(created));
}

#[test]
fn invalid_operations_change_nothing() {
    let (mut mem, ids) = seeded();
    let (coffee_id, sister, bob) = (ids[0].as_str(), ids[1].as_str(), ids[3].as_str());
    let keyed = |text: &str| Operation::Add {
        text: text.into(),
        kind: None,
        tags: None,
        key: Some("k".into()),
        metadata: None,
    };
    let cases: Vec<(&str, OperationsRequest)> = vec![
        (
            "unknown id",
            request(&["nothere"], vec![add("ok"), update("nothere", "x")]),
        ),
        (
            "not shown",
            request(&[sister], vec![add("ok"), update(coffee_id, "x")]),
        ),
        (
            "outside the scope",
            request(
                &[bob],
                vec![add("ok"), Operation::Delete { id: bob.into() }],
            ),
        ),
        (
            "named twice",
            request(
                &[coffee_id],
                vec![
                    update(coffee_id, "x"),
                    Operation::Delete {
                        id: coffee_id.into(),
                    },
                ],
            ),
        ),
        ("empty text", request(&[], vec![add("ok"), add("  ")])),
        (
            "oversize text",
            request(&[], vec![add("ok"), add(&"a".repeat(70_000))]),
        ),
        (
            "too many",
            request(&[], (0..101).map(|i| add(&format!("fact {i}"))).collect()),
        ),
        ("key twice", request(&[], vec![keyed("one"), keyed("two")])),
        (
            "no-memory update",
            request(
                &[coffee_id],
                vec![update(coffee_id, "<no-memory>x</no-memory>")],
            ),
        ),
    ];
    for (what, request) in cases {
        let before = records(mem.storage());
        let error = mem.apply_operations(request).unwrap_err();
        assert_eq!(error.code(), "INVALID_OPERATIONS", "{what}: {error}");
        assert_eq!(records(mem.storage()), before, "{what}");
    }
    // A chunk of a file changes with its file only.
    let sync = mem
        .sync_file(
            &scope(),
            "notes/MEMORY.md",
            "# Notes\nThe espresso machine is descaled on Sundays.\n",
        )
        .unwrap();
    let chunk = sync.chunks[0].clone();
    let before = records(mem.storage());
    let refused = mem.apply_operations(request(
        &[&chunk],
        vec![Operation::Delete { id: chunk.clone() }],
    ));
    assert_eq!(refused.unwrap_err().code(), "INVALID_OPERATIONS");
    assert_eq!(records(mem.storage()), before);
    // A superseded or deleted memory cannot be named again.
    let done = mem
        .apply_operations(request(
            &[coffee_id],
            vec![update(coffee_id, "flat white now")],
        ))
        .unwrap();
    assert_eq!(done.superseded.len(), 1);
    let again = mem.apply_operations(request(&[coffee_id], vec![update(coffee_id, "espresso")]));
    assert_eq!(again.unwrap_err().code(), "INVALID_OPERATIONS");
}

/// Where an generated operation's id points.
#[derive(Debug, Clone, Copy)]
enum Target {
    /// A live memory of the scope, shown to the extractor.
    Shown(usize),
    /// A live memory of the scope, not shown.
    Hidden,
    /// Another user's memory, shown.
    OtherUser,
    /// No memory.
    Missing,
}

#[derive(Debug, Clone)]
enum GenOp {
    Add(String),
    Update(Target, String),
    Delete(Target),
    None,
}

fn gen_target() -> impl Strategy<Value = Target> {
    prop_oneof![
        6 => (0..3usize).prop_map(Target::Shown),
        1 => Just(Target::Hidden),
        1 => Just(Target::OtherUser),
        1 => Just(Target::Missing),
    ]
}

fn gen_text() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => "[a-z]{3,8}( [a-z]{3,8}){1,4}",
        1 => Just(String::new()),
    ]
}

fn gen_op() -> impl Strategy<Value = GenOp> {
    prop_oneof![
        3 => gen_text().prop_map(GenOp::Add),
        3 => (gen_target(), gen_text()).prop_map(|(t, s)| GenOp::Update(t, s)),
        2 => gen_target().prop_map(GenOp::Delete),
        1 => Just(GenOp::None),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// A random list of operations is applied whole when the oracle says
    /// it is valid, and otherwise refused with the store unchanged.
    #[test]
    fn operations_apply_atomically_or_not_at_all(ops in prop::collection::vec(gen_op(), 0..6)) {
        let (mut mem, ids) = seeded();
        // ids[0..3] are alice's, shown; a fourth of hers is not shown.
        let hidden = mem.ingest(vec![MemoryInput::new("I keep bees on the roof", scope())]).unwrap()[0]
            .id.clone().unwrap();
        let id_of = |t: Target| match t {
            Target::Shown(i) => ids[i].clone(),
            Target::Hidden => hidden.clone(),
            Target::OtherUser => ids[3].clone(),
            Target::Missing => "01NOSUCHMEMORY".to_string(),
        };
        // The oracle: valid iff every text is non-blank, every id is a
        // shown memory of the scope, and no id is named twice.
        let mut named = std::collections::HashSet::new();
        let valid = ops.iter().all(|op| match op {
            GenOp::Add(text) => !text.trim().is_empty(),
            GenOp::Update(t, text) => {
                matches!(t, Target::Shown(i) if named.insert(*i)) && !text.trim().is_empty()
            }
            GenOp::Delete(t) => matches!(t, Target::Shown(i) if named.insert(*i)),
            GenOp::None => true,
        });
        let operations = ops.iter().map(|op| match op {
            GenOp::Add(text) => add(text),
            GenOp::Update(t, text) => update(&id_of(*t), text),
            GenOp::Delete(t) => Operation::Delete { id: id_of(*t) },
            GenOp::None => Operation::None {},
        }).collect();
        let shown: Vec<&str> = ids.iter().map(String::as_str).collect();
        let before = records(mem.storage());
        match mem.apply_operations(request(&shown, operations)) {
            Err(e) => {
                prop_assert!(!valid, "a valid list was refused: {}", e);
                prop_assert_eq!(e.code(), "INVALID_OPERATIONS");
                prop_assert_eq!(records(mem.storage()), before);
            }
            Ok(result) => {
                prop_assert!(valid, "an invalid list was applied");
                for op in &ops {
                    match op {
                        GenOp::Update(t, text) => {
                            let old = mem.get(&id_of(*t)).unwrap().clone();
                            let by = old.superseded_by.clone().expect("superseded");
                            prop_assert_eq!(&mem.get(&by).unwrap().text, text);
                            prop_assert!(result.superseded.iter().any(|s| s.id == old.id && s.by == by));
                        }
                        GenOp::Delete(t) => prop_assert!(mem.get(&id_of(*t)).unwrap().is_deleted()),
                        GenOp::Add(text) => {
                            prop_assert!(mem.list(&ListQuery::default()).unwrap().items.iter().any(|i| &i.text == text));
                        }
                        GenOp::None => {}
                    }
                }
            }
        }
    }
}
