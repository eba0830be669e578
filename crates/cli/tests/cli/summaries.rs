//! `summary-context` and `store-summary` of the `memtide` binary: a host
//! runs its own model between the two.

use serde_json::{json, Value};

use crate::commands::{fails, ok};

fn session_scope() -> Value {
    json!({"userId": "u", "workspaceId": "w", "sessionId": "s1"})
}

#[test]
fn a_host_reads_the_context_and_stores_the_summary_its_model_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path();
    let lines: String = ["we planned a trip to Lisbon", "the door code is 4417"]
        .iter()
        .map(|t| json!({"text": t, "scope": session_scope()}).to_string() + "\n")
        .collect();
    let ids: Vec<String> = ok(store, &["ingest"], &lines)
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    let query = json!({"scope": session_scope()}).to_string();
    let context = &ok(store, &["summary-context"], &query)[0];
    let texts: Vec<&str> = context["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        ["we planned a trip to Lisbon", "the door code is 4417"]
    );
    assert!(context.get("previous").is_none());

    let summary =
        json!({"scope": session_scope(), "text": "Lisbon trip; door code 4417.", "sources": ids});
    let stored = &ok(store, &["store-summary"], &summary.to_string())[0];
    assert_eq!(stored["kind"], "summary");
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(stored["summaryOf"], json!(sorted));
    let id = stored["id"].as_str().unwrap().to_string();
    let context = &ok(store, &["summary-context"], &query)[0];
    assert_eq!(context["previous"]["id"], id.as_str());
    let again = json!({"scope": session_scope(), "text": "A Lisbon trip.", "sources": [ids[0]]});
    assert_eq!(
        ok(store, &["store-summary"], &again.to_string())[0]["id"],
        id.as_str()
    );

    // Erasing its source erases it.
    ok(store, &["delete", &ids[0], "--hard"], "");
    let err = fails(store, &["get", &id], "");
    assert!(err.starts_with("error[NOT_FOUND]"), "{err}");

    let err = fails(store, &["store-summary"], "not json");
    assert!(err.starts_with("error[INVALID_INPUT]"), "{err}");
    let outside = json!({"scope": {"userId": "u", "workspaceId": "w", "sessionId": "s2"}, "text": "x", "sources": [ids[1]]});
    let err = fails(store, &["store-summary"], &outside.to_string());
    assert!(
        err.starts_with("error[INVALID_INPUT]") && err.contains("scope"),
        "{err}"
    );
    let unknown = json!({"scope": session_scope(), "text": "x", "sources": ["nosuchid"]});
    let err = fails(store, &["store-summary"], &unknown.to_string());
    assert!(err.starts_with("error[NOT_FOUND]"), "{err}");
}

#[test]
fn a_summary_withdrawn_longer_ago_than_its_history_keeps_comes_back_with_its_source() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path();
    let line = json!({"text": "the door code is 4417", "scope": session_scope()}).to_string();
    let source = ok(store, &["ingest"], &line)[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let summary = json!({"scope": session_scope(), "text": "Door code 4417.", "sources": [source]});
    let id = ok(store, &["store-summary"], &summary.to_string())[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    ok(store, &["delete", &source], "");
    assert_eq!(ok(store, &["get", &id], "")[0]["withdrawn"], true);
    // One event more than the 32 the history keeps, each by a process of
    // its own: the `withdrawn` event drops out.
    for i in 0..33 {
        let patch = json!({"pinned": i % 2 == 0}).to_string();
        ok(store, &["update", &id], &patch);
    }
    let events = ok(store, &["history", &id], "");
    assert!(
        events.iter().all(|e| e["event"] != "withdrawn"),
        "{events:?}"
    );
    ok(store, &["update", &source], r#"{"deleted": false}"#);
    let back = &ok(store, &["get", &id], "")[0];
    assert!(
        back.get("deletedAt").is_none() && back.get("withdrawn").is_none(),
        "{back}"
    );
    let events = ok(store, &["history", &id], "");
    assert_eq!(events.last().unwrap()["event"], "restored");
}
