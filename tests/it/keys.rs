//! Metadata and its filters, caller keys with `upsert`, and each memory's
//! history (`docs/design.md`, "Keys, metadata and history").

use memtide::{
    Error, HistoryKind, IngestOutcome, ListQuery, MemoryInput, MemoryPatch, Metadata,
    RetrieveQuery, ScopeFilter, Status,
};
use memtide_testkit::store::{contains, open, record_bytes, records, reopen, scope};
use serde_json::{json, Value};

fn meta(v: Value) -> Metadata {
    match v {
        Value::Object(m) => m,
        _ => panic!("metadata is an object"),
    }
}

fn keyed(text: &str, key: &str, metadata: Value) -> MemoryInput {
    MemoryInput {
        key: Some(key.to_string()),
        metadata: Some(meta(metadata)),
        ..MemoryInput::new(text, scope())
    }
}

fn with_meta(text: &str, metadata: Value) -> MemoryInput {
    MemoryInput {
        metadata: Some(meta(metadata)),
        ..MemoryInput::new(text, scope())
    }
}

#[test]
fn metadata_filters_retrieve_list_export_and_delete_all() {
    let mut mem = open();
    let results = mem
        .ingest(vec![
            with_meta(
                "the kite festival is in april",
                json!({"topic": "kite", "n": 1}),
            ),
            with_meta("the kite string is red", json!({"topic": "kite", "n": 2})),
            with_meta("the kite shop closed", json!({"topic": "shop"})),
            MemoryInput::new("a kite without metadata", scope()),
        ])
        .unwrap();
    let ids: Vec<String> = results.into_iter().map(|r| r.id.unwrap()).collect();
    let mut query = RetrieveQuery::new("kite", scope());
    query.metadata = Some(meta(json!({"topic": "kite"})));
    query.dry_run = true;
    let mut hits: Vec<String> = mem
        .retrieve(&query)
        .unwrap()
        .into_iter()
        .map(|h| h.item.id)
        .collect();
    hits.sort();
    assert_eq!(hits, vec![ids[0].clone(), ids[1].clone()]);
    query.metadata = Some(meta(json!({"topic": "kite", "n": 2.0})));
    let hits = mem.retrieve(&query).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].item.id, ids[1]);
    assert_eq!(
        hits[0].item.metadata,
        Some(meta(json!({"topic": "kite", "n": 2})))
    );

    let filter = ScopeFilter {
        metadata: Some(meta(json!({"topic": "shop"}))),
        ..ScopeFilter::from(&scope())
    };
    let page = mem
        .list(&ListQuery {
            scope: filter.clone(),
            ..ListQuery::default()
        })
        .unwrap();
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.items[0].id, ids[2]);
    let export = mem.export_filtered(&filter);
    assert!(export.contains("kite shop") && !export.contains("festival"));

    let kite = ScopeFilter {
        metadata: Some(meta(json!({"topic": "kite"}))),
        ..ScopeFilter::from(&scope())
    };
    let deleted = mem.delete_all(&kite, true).unwrap();
    assert_eq!(deleted.deleted, 2);
    assert!(mem.get(&ids[0]).is_err() && mem.get(&ids[1]).is_err());
    assert!(mem.get(&ids[2]).is_ok() && mem.get(&ids[3]).is_ok());
    let bytes = record_bytes(mem.storage());
    assert!(!contains(&bytes, "festival") && !contains(&bytes, "string is red"));
}

#[test]
fn metadata_past_the_limit_is_too_large_and_must_be_an_object() {
    let mut mem = open();
    let big = json!({"blob": "x".repeat(16 * 1024)});
    let err = mem
        .ingest(vec![with_meta("a note", big.clone())])
        .unwrap_err();
    assert_eq!(err.code(), "TOO_LARGE");
    assert!(err.to_string().contains("inputs[0]: metadata"), "{err}");
    let id = mem
        .ingest(vec![with_meta("a note", json!({"a": 1}))])
        .unwrap()[0]
        .id
        .clone()
        .unwrap();
    let patch = MemoryPatch {
        metadata: Some(meta(big)),
        ..MemoryPatch::default()
    };
    assert_eq!(mem.update(&id, patch).unwrap_err().code(), "TOO_LARGE");
    let not_object = r#"{"text":"t","scope":{"userId":"u","workspaceId":"w"},"metadata":[1]}"#;
    assert!(serde_json::from_str::<MemoryInput>(not_object).is_err());
    // `{}` clears the metadata.
    let patch = MemoryPatch {
        metadata: Some(Metadata::new()),
        ..MemoryPatch::default()
    };
    assert_eq!(mem.update(&id, patch).unwrap().metadata, None);
}

#[test]
fn upsert_replaces_the_memory_holding_a_key_in_one_commit() {
    let mut mem = open();
    let first = mem
        .upsert(vec![keyed("prefers tea", "drink", json!({"v": 1}))])
        .unwrap()
        .remove(0);
    assert_eq!(first.outcome, IngestOutcome::Added);
    let id = first.id.unwrap();
    let second = mem
        .upsert(vec![keyed("prefers coffee", "drink", json!({"v": 2}))])
        .unwrap()
        .remove(0);
    assert_eq!(second.outcome, IngestOutcome::Replaced);
    assert_eq!(second.id.as_deref(), Some(id.as_str()));
    let item = mem.get(&id).unwrap();
    assert_eq!(item.text, "prefers coffee");
    assert_eq!(item.metadata, Some(meta(json!({"v": 2}))));
    assert_eq!(mem.get_by_key(&scope(), "drink").unwrap().id, id);
    assert_eq!(mem.list(&ListQuery::default()).unwrap().items.len(), 1);
    // The old text is searchable no more.
    let query = RetrieveQuery {
        dry_run: true,
        ..RetrieveQuery::new("tea", scope())
    };
    assert!(mem.retrieve(&query).unwrap().is_empty());
    // The same key in another scope is another memory.
    let other = mem
        .upsert(vec![MemoryInput {
            key: Some("drink".into()),
            ..MemoryInput::new("prefers water", scope().with_project("p"))
        }])
        .unwrap()
        .remove(0);
    assert_eq!(other.outcome, IngestOutcome::Added);
    assert_ne!(other.id.as_deref(), Some(id.as_str()));
}

#[test]
fn keys_are_unique_and_keyed_memories_are_never_merged() {
    let mut mem = open();
    let plain = mem
        .ingest(vec![MemoryInput::new("likes green tea", scope())])
        .unwrap()
        .remove(0);
    // The same text under a key is its own memory, not a duplicate.
    let keyed_one = mem
        .ingest(vec![keyed("likes green tea", "tea", json!({}))])
        .unwrap()
        .remove(0);
    assert_eq!(keyed_one.outcome, IngestOutcome::Added);
    assert_ne!(keyed_one.id, plain.id);
    // ingest refuses a key in use, or used twice in a batch.
    let err = mem
        .ingest(vec![keyed("other", "tea", json!({}))])
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
    let err = mem
        .ingest(vec![keyed("a", "k", json!({})), keyed("b", "k", json!({}))])
        .unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
    // upsert needs a key; a bad key is refused.
    let err = mem
        .upsert(vec![MemoryInput::new("no key", scope())])
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
    let err = mem.upsert(vec![keyed("x", "", json!({}))]).unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
    // A hard delete frees the key.
    let id = keyed_one.id.unwrap();
    mem.delete(&id, true).unwrap();
    assert!(mem.get_by_key(&scope(), "tea").is_none());
    let again = mem
        .ingest(vec![keyed("likes black tea", "tea", json!({}))])
        .unwrap()
        .remove(0);
    assert_eq!(again.outcome, IngestOutcome::Added);
}

#[test]
fn history_records_changes_without_texts_survives_reopen_and_dies_with_a_hard_delete() {
    let mut mem = open();
    let id = mem
        .upsert(vec![keyed("the locker code is 4411", "locker", json!({}))])
        .unwrap()
        .remove(0)
        .id
        .unwrap();
    mem.upsert(vec![keyed("the locker code is 9922", "locker", json!({}))])
        .unwrap();
    mem.update(
        &id,
        MemoryPatch {
            status: Some(Status::Pending),
            pinned: Some(true),
            tags: Some(vec!["codes".into()]),
            ..MemoryPatch::default()
        },
    )
    .unwrap();
    mem.delete(&id, false).unwrap();
    mem.update(
        &id,
        MemoryPatch {
            deleted: Some(false),
            ..MemoryPatch::default()
        },
    )
    .unwrap();
    let mem = reopen(mem);
    let history = mem.history(&id).unwrap();
    let kinds: Vec<HistoryKind> = history.iter().map(|e| e.event).collect();
    assert_eq!(
        kinds,
        [
            HistoryKind::Created,
            HistoryKind::Replaced,
            HistoryKind::Updated,
            HistoryKind::Status,
            HistoryKind::Pinned,
            HistoryKind::Deleted,
            HistoryKind::Restored,
        ]
    );
    assert_eq!(history[1].fields, ["text"]);
    assert_eq!(history[2].fields, ["tags"]);
    assert_eq!(history[3].status, Some(Status::Pending));
    assert_eq!(history[4].pinned, Some(true));
    let mut mem = mem;
    // The replaced text is erased at once: history names the field only.
    let bytes = record_bytes(mem.storage());
    assert!(!contains(&bytes, "4411") && contains(&bytes, "9922"));
    mem.delete(&id, true).unwrap();
    let bytes = record_bytes(mem.storage());
    assert!(!contains(&bytes, "4411") && !contains(&bytes, "9922"));
    assert_eq!(mem.history(&id).unwrap_err().code(), "NOT_FOUND");
}

#[test]
fn merges_show_in_history_and_history_is_bounded() {
    let mut mem = open();
    let id = mem
        .ingest(vec![MemoryInput::new("walks the dog at seven", scope())])
        .unwrap()
        .remove(0)
        .id
        .unwrap();
    mem.ingest(vec![MemoryInput::new("walks the dog at seven", scope())])
        .unwrap();
    for i in 0..40 {
        mem.update(
            &id,
            MemoryPatch {
                pinned: Some(i % 2 == 0),
                ..MemoryPatch::default()
            },
        )
        .unwrap();
    }
    let history = mem.history(&id).unwrap();
    assert_eq!(history[0].event, HistoryKind::Created);
    assert_eq!(history[1].event, HistoryKind::Merged);
    let limit = mem.config().limits.max_history_events;
    assert_eq!(mem.get(&id).unwrap().history.len(), limit);
    assert_eq!(history.len(), 2 + limit);
}

#[test]
fn stores_without_the_new_fields_keep_their_record_versions() {
    let mut mem = open();
    mem.ingest(vec![MemoryInput::new("plain memory", scope())])
        .unwrap();
    mem.ingest(vec![with_meta("with metadata", json!({"a": 1}))])
        .unwrap();
    let versions: Vec<u16> = records(mem.storage())
        .iter()
        .filter(|(k, _)| k.starts_with("item/"))
        .map(|(_, v)| memtide::codec::record_version(v))
        .collect();
    let mut versions = versions;
    versions.sort();
    assert_eq!(versions, [1, 5]);
}

#[test]
fn exports_of_keyed_memories_are_version_3_and_import_with_their_keys() {
    let mut mem = open();
    mem.ingest(vec![MemoryInput::new("plain memory", scope())])
        .unwrap();
    let plain_export: Value = serde_json::from_str(&mem.export()).unwrap();
    assert_eq!(plain_export["version"], 1);
    let id = mem
        .upsert(vec![keyed("prefers tea", "drink", json!({"v": 1}))])
        .unwrap()
        .remove(0)
        .id
        .unwrap();
    mem.upsert(vec![keyed("prefers coffee", "drink", json!({"v": 2}))])
        .unwrap();
    let export = mem.export();
    let document: Value = serde_json::from_str(&export).unwrap();
    assert_eq!(document["version"], 3);
    assert!(document.get("files").is_none());
    let mut copy = open();
    let result = copy.import(&export).unwrap();
    assert_eq!(result.added, 2);
    let item = copy.get_by_key(&scope(), "drink").unwrap();
    assert_eq!(item.id, id);
    assert_eq!(item.metadata, Some(meta(json!({"v": 2}))));
    assert_eq!(copy.history(&id).unwrap(), mem.history(&id).unwrap());
    // An import may not give a key to a second memory of the scope. (The
    // fixed environment makes the same ids in every store: the fillers take
    // the ids of the export's memories, so the keyed one is another id.)
    let mut other = open();
    other
        .ingest(vec![
            MemoryInput::new("filler one", scope()),
            MemoryInput::new("filler two", scope()),
        ])
        .unwrap();
    let juice = other
        .upsert(vec![keyed("prefers juice", "drink", json!({}))])
        .unwrap()
        .remove(0);
    assert_ne!(juice.id.as_deref(), Some(id.as_str()));
    assert_eq!(other.import(&export).unwrap_err().code(), "INVALID_INPUT");
    assert_eq!(other.list(&ListQuery::default()).unwrap().items.len(), 3);
}
