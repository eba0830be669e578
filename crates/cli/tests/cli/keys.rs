//! `upsert`, `history` and the `--meta` filters of the `memtide` binary.

use serde_json::{json, Value};

use crate::commands::{fails, ok};

fn keyed(text: &str, key: &str, metadata: Value) -> String {
    json!({"text": text, "scope": {"userId": "u", "workspaceId": "w"}, "key": key, "metadata": metadata})
        .to_string()
        + "\n"
}

#[test]
fn upsert_replaces_by_key_and_history_lists_the_changes() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path();
    let first = ok(
        store,
        &["upsert"],
        &keyed("prefers tea", "drink", json!({"from": "chat"})),
    );
    assert_eq!(first[0]["outcome"], "added");
    let id = first[0]["id"].as_str().unwrap().to_string();
    let second = ok(
        store,
        &["upsert"],
        &keyed("prefers coffee", "drink", json!({"from": "chat"})),
    );
    assert_eq!(second[0]["outcome"], "replaced");
    assert_eq!(second[0]["id"], id.as_str());
    let item = &ok(store, &["get", &id], "")[0];
    assert_eq!(item["text"], "prefers coffee");
    assert_eq!(item["key"], "drink");
    assert_eq!(item["metadata"], json!({"from": "chat"}));
    let history = ok(store, &["history", &id], "");
    let events: Vec<&str> = history
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["created", "replaced"]);
    assert_eq!(history[1]["fields"], json!(["text"]));
    assert!(history[1].get("previousText").is_none());
    // `ingest` refuses a key in use; `upsert` a line without a key.
    let err = fails(
        store,
        &["ingest"],
        &keyed("prefers water", "drink", json!({})),
    );
    assert!(err.starts_with("error[INVALID_INPUT]"), "{err}");
    let no_key = json!({"text": "x", "scope": {"userId": "u", "workspaceId": "w"}}).to_string();
    let err = fails(store, &["upsert"], &no_key);
    assert!(err.contains("line 1") && err.contains("key"), "{err}");
    let err = fails(store, &["history", "nosuchid"], "");
    assert!(err.starts_with("error[NOT_FOUND]"), "{err}");
}

#[test]
fn meta_filters_select_by_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path();
    let lines = [
        json!({"text": "kite festival in april", "scope": {"userId": "u", "workspaceId": "w"}, "metadata": {"topic": "kite", "n": 1}}),
        json!({"text": "the shop closed", "scope": {"userId": "u", "workspaceId": "w"}, "metadata": {"topic": "shop"}}),
        json!({"text": "no metadata here", "scope": {"userId": "u", "workspaceId": "w"}}),
    ]
    .iter()
    .map(|v| v.to_string() + "\n")
    .collect::<String>();
    ok(store, &["ingest"], &lines);
    let listed = ok(
        store,
        &["list", "--meta", "topic=kite", "--meta", "n=1"],
        "",
    );
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["text"], "kite festival in april");
    let export = ok(store, &["export", "--meta", "topic=\"shop\""], "");
    assert_eq!(export[0]["itemCount"], 1);
    let stats = ok(store, &["stats", "--meta", "topic=kite"], "");
    assert_eq!(stats[0]["items"], 1);
    let deleted = ok(
        store,
        &[
            "delete-all",
            "--user",
            "u",
            "--meta",
            "topic=shop",
            "--hard",
        ],
        "",
    );
    assert_eq!(deleted[0]["deleted"], 1);
    assert_eq!(ok(store, &["list"], "").len(), 2);
}
