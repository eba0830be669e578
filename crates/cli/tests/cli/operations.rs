//! `apply-ops` and `upsert` with `supersede` of the `memtide` binary
//! (`docs/memory-model.md`, "Extraction" and "Supersession").

use serde_json::{json, Value};

use crate::commands::{fails, ok};

const SCOPE: [&str; 4] = ["--user", "u", "--workspace", "w"];

fn ingest(store: &std::path::Path, text: &str) -> String {
    let line =
        json!({"text": text, "scope": {"userId": "u", "workspaceId": "w"}, "kind": "preference"});
    let added = ok(store, &["ingest"], &(line.to_string() + "\n"));
    added[0]["id"].as_str().unwrap().to_string()
}

fn listed(store: &std::path::Path, extra: &[&str]) -> Vec<Value> {
    ok(store, &[&["list"], extra].concat(), "")
}

#[test]
fn apply_ops_applies_a_models_reply_in_one_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path();
    let coffee = ingest(store, "I take my coffee as a cortado");
    let cello = ingest(store, "I am learning the cello");
    let reply = format!(
        "Sure, here they are:\n```json\n[{{\"op\":\"update\",\"id\":\"{coffee}\",\"text\":\"I switched to flat whites\"}},\
         {{\"op\":\"delete\",\"id\":\"{cello}\"}},{{\"op\":\"add\",\"text\":\"Lives in Porto\"}},{{\"op\":\"none\"}}]\n```\n"
    );
    let args = [
        &["apply-ops"],
        &SCOPE[..],
        &["--allow", &coffee, "--allow", &cello],
    ]
    .concat();
    let result = &ok(store, &args, &reply)[0];
    let added: Vec<&str> = result["added"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(added.len(), 2);
    assert_eq!(
        result["superseded"],
        json!([{"id": coffee, "by": added[0]}])
    );
    assert_eq!(result["deleted"], json!([cello]));

    let old = &ok(store, &["get", &coffee], "")[0];
    assert_eq!(old["supersededBy"], added[0]);
    assert!(old["supersededAt"].is_string());
    let new = &ok(store, &["get", added[0]], "")[0];
    assert_eq!(new["text"], "I switched to flat whites");
    assert_eq!(new["kind"], "preference");
    assert_eq!(new["supersedes"], json!([coffee]));
    let history = ok(store, &["history", &coffee], "");
    assert_eq!(history.last().unwrap()["event"], "superseded");
    assert_eq!(history.last().unwrap()["other"], added[0]);

    // Out of retrieval and of the default listing; listed on request.
    let hits = ok(
        store,
        &["retrieve"],
        &(json!({"text": "coffee cortado flat whites", "scope": {"userId": "u", "workspaceId": "w"}}).to_string() + "\n"),
    );
    let ids: Vec<&str> = hits[0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [added[0]]);
    assert!(listed(store, &[])
        .iter()
        .all(|i| i["id"] != coffee.as_str()));
    assert!(listed(store, &["--include-superseded"])
        .iter()
        .any(|i| i["id"] == coffee.as_str()));
}

#[test]
fn apply_ops_refuses_malformed_or_unknown_operations_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path();
    let coffee = ingest(store, "I take my coffee as a cortado");
    let all = ["--include-deleted", "--include-superseded"];
    let before = listed(store, &all);
    let args = [&["apply-ops"], &SCOPE[..], &["--allow", &coffee]].concat();
    for reply in [
        "I found nothing to remember.".to_string(),
        r#"[{"op":"add","text":"ok"},{"op":"merge","id":"x"}]"#.to_string(),
        r#"[{"op":"add","text":"ok"},{"op":"delete","id":"01NOTSHOWN"}]"#.to_string(),
        format!(r#"[{{"op":"add","text":"ok"}},{{"op":"update","id":"{coffee}"}}]"#),
        format!(r#"[{{"op":"add","text":"{}"}}]"#, "a".repeat(70_000)),
    ] {
        let err = fails(store, &args, &reply);
        assert!(err.starts_with("error[INVALID_OPERATIONS]"), "{err}");
    }
    assert_eq!(listed(store, &all), before);
}

#[test]
fn upsert_with_supersede_keeps_the_old_value() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path();
    let line = |text: &str| {
        json!({"text": text, "scope": {"userId": "u", "workspaceId": "w"}, "key": "coffee", "supersede": true})
            .to_string()
            + "\n"
    };
    let first = ok(store, &["upsert"], &line("cortado"));
    assert_eq!(first[0]["outcome"], "added");
    let second = ok(store, &["upsert"], &line("flat white"));
    assert_eq!(second[0]["outcome"], "superseded");
    let old = &ok(store, &["get", first[0]["id"].as_str().unwrap()], "")[0];
    assert_eq!(old["supersededBy"], second[0]["id"]);
    assert_eq!(old["text"], "cortado");
}
