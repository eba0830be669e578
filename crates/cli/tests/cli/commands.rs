//! Integration tests of the `memtide` binary: every call runs the real
//! executable on a temporary store with a fixed clock.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

pub(crate) const NOW: &str = "2024-05-01T12:00:00Z";

/// A `memtide` command that ignores the caller's `MEMTIDE_MODEL_DIR` (the test
/// script sets it), so it runs lexical-only unless given `--model`.
pub(crate) fn memtide_command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_memtide"));
    command.env_remove("MEMTIDE_MODEL_DIR");
    command
}

/// Runs `memtide --store DIR --now NOW ARGS…` with `stdin` as standard input.
pub(crate) fn memtide(store: &Path, args: &[&str], stdin: &str) -> Output {
    let mut command = memtide_command();
    command.arg("--store").arg(store).args(["--now", NOW]);
    run(command.args(args), stdin)
}

pub(crate) fn run(command: &mut Command, stdin: &str) -> Output {
    command
        .stdin(if stdin.is_empty() {
            Stdio::null()
        } else {
            Stdio::piped()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    if let Some(mut input) = child.stdin.take() {
        // A command refused before it reads its input (a usage error)
        // closes the pipe: its exit status says so, not this write.
        if let Err(e) = input.write_all(stdin.as_bytes()) {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
        }
    }
    child.wait_with_output().unwrap()
}

/// Runs a command that must succeed and returns its stdout lines as JSON.
pub(crate) fn ok(store: &Path, args: &[&str], stdin: &str) -> Vec<Value> {
    let out = memtide(store, args, stdin);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "memtide {args:?} failed: {stderr}");
    assert!(stderr.is_empty(), "{stderr}");
    stdout_lines(&out)
}

pub(crate) fn stdout_lines(out: &Output) -> Vec<Value> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Runs a command that must fail with exit status 1; returns its stderr.
pub(crate) fn fails(store: &Path, args: &[&str], stdin: &str) -> String {
    let out = memtide(store, args, stdin);
    assert_eq!(out.status.code(), Some(1), "memtide {args:?} should fail");
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

/// JSON Lines of inputs, one per `(text, workspace)`.
pub(crate) fn inputs(memories: &[(&str, &str)]) -> String {
    memories
        .iter()
        .map(|(text, workspace)| {
            json!({"text": text, "scope": {"userId": "u", "workspaceId": workspace}}).to_string()
                + "\n"
        })
        .collect()
}

pub(crate) fn query(text: &str, extra: Value) -> String {
    let mut query = json!({"text": text, "scope": {"userId": "u", "workspaceId": "w"}});
    if let (Some(q), Value::Object(extra)) = (query.as_object_mut(), extra) {
        q.extend(extra);
    }
    query.to_string() + "\n"
}

pub(crate) fn keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

pub(crate) fn ids(items: &[Value]) -> Vec<&str> {
    items
        .iter()
        .map(|item| item["id"].as_str().unwrap())
        .collect()
}

#[test]
fn ingest_retrieve_and_inject_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path();
    let added = ok(
        store,
        &["ingest"],
        &inputs(&[
            ("I drink my coffee as a cortado", "w"),
            ("The deploy script lives in ops/deploy.sh", "w"),
            ("Coffee in the other workspace is filter coffee", "w2"),
        ]),
    );
    assert_eq!(
        added,
        [
            json!({"id": "m000001", "outcome": "added"}),
            json!({"id": "m000002", "outcome": "added"}),
            json!({"id": "m000003", "outcome": "added"}),
        ]
    );

    let queries =
        query("how do I take my coffee?", json!({})) + &query("coffee", json!({"explain": true}));
    let answers = ok(store, &["retrieve"], &queries);
    assert_eq!(answers.len(), 2);
    let plain = &answers[0]["results"];
    assert_eq!(ids(plain.as_array().unwrap()), ["m000001"]);
    let hit = &plain[0];
    assert_eq!(
        keys(hit),
        [
            "citation",
            "createdAt",
            "id",
            "kind",
            "relevance",
            "scope",
            "score",
            "source",
            "text"
        ]
    );
    assert_eq!(hit["citation"], "memory:m000001");
    assert_eq!(hit["text"], "I drink my coffee as a cortado");
    assert_eq!(hit["kind"], "episodic");
    assert_eq!(hit["scope"], json!({"userId": "u", "workspaceId": "w"}));
    assert_eq!(hit["source"], json!({"kind": "manual", "ref": ""}));
    assert_eq!(hit["createdAt"], "2024-05-01T12:00:00.000Z");
    assert!(hit["score"].as_f64().unwrap() > 0.0);
    // "coffee" held, "take" held by no memory: each weighs as a term one of
    // the workspace's two memories holds, so half the query is covered.
    assert!((hit["relevance"].as_f64().unwrap() - 0.5).abs() < 1e-6);
    let explained = &answers[1]["results"][0];
    assert_eq!(explained["id"], "m000001");
    assert_eq!(
        keys(&explained["explain"]),
        [
            "combined",
            "coverage",
            "fused",
            "inherited",
            "lexical",
            "relevance",
            "scopeMultiplier",
            "speakerFactor",
            "timeFactor"
        ]
    );
    assert_eq!(explained["explain"]["fused"], explained["score"]);
    assert_eq!(
        explained["policy"],
        json!({"scopeFields": ["userId", "workspaceId"], "status": "approved", "pii": false, "filters": []})
    );
    assert!(answers[0]["results"][0].get("policy").is_none());

    let injected = ok(
        store,
        &["inject"],
        &query("coffee", json!({"budgetTokens": 500})),
    );
    let injection = &injected[0];
    assert_eq!(
        keys(injection),
        [
            "block",
            "citations",
            "dropped",
            "estimated",
            "tokens",
            "used"
        ]
    );
    assert_eq!(injection["used"], json!(["m000001"]));
    assert_eq!(
        injection["citations"],
        json!([{"tag": "m1", "id": "m000001"}])
    );
    assert_eq!(injection["dropped"], json!([]));
    assert_eq!(injection["estimated"], true);
    assert!(injection["tokens"].as_u64().unwrap() > 0);
    let block = injection["block"].as_str().unwrap();
    assert!(
        block.contains("- [m1] ") && block.contains("cortado"),
        "{block}"
    );
    assert!(!block.contains("filter coffee"), "{block}");

    // The relevance gate: the JSON field, else the flag, else the default
    // (0 for retrieve, 0.3 for inject). Dry runs, so usage stays as it is.
    let coffee = query("how do I take my coffee?", json!({"dryRun": true}));
    let gated = ok(store, &["retrieve", "--min-relevance", "0.6"], &coffee);
    assert_eq!(gated[0]["results"], json!([]));
    let own = query(
        "how do I take my coffee?",
        json!({"dryRun": true, "minRelevance": 0.4}),
    );
    let kept = ok(store, &["retrieve", "--min-relevance", "0.6"], &own);
    assert_eq!(ids(kept[0]["results"].as_array().unwrap()), ["m000001"]);
    let unrelated = query(
        "Which trombone teacher in Oslo likes coffee?",
        json!({"dryRun": true, "budgetTokens": 500}),
    );
    let silent = ok(store, &["inject"], &unrelated);
    assert_eq!(
        (&silent[0]["block"], &silent[0]["used"]),
        (&json!(""), &json!([]))
    );
    let open = ok(store, &["inject", "--min-relevance", "0"], &unrelated);
    assert_eq!(open[0]["used"], json!(["m000001"]));
    let refused = memtide(store, &["retrieve", "--min-relevance", "2"], &coffee);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("minRelevance"));

    // Two retrievals and one injection, each in its own process, were recorded.
    let item = &ok(store, &["get", "m000001"], "")[0];
    assert_eq!(item["usageCount"], 3);
    assert_eq!(item["lastUsedAt"], "2024-05-01T12:00:00.000Z");
}

#[test]
fn duplicates_merge_and_no_memory_lines_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let lines = inputs(&[("I like green tea", "w")])
        + "\n"
        + &inputs(&[
            ("I like green tea", "w"),
            ("<no-memory> my pin is 1234", "w"),
        ]);
    let results = ok(dir.path(), &["ingest"], &lines);
    assert_eq!(
        results,
        [
            json!({"id": "m000001", "outcome": "added"}),
            json!({"id": "m000001", "outcome": "merged", "reason": "duplicate"}),
            json!({"id": null, "outcome": "skipped", "reason": "noMemory"}),
        ]
    );
    assert_eq!(ids(&ok(dir.path(), &["list"], "")), ["m000001"]);
}

#[test]
fn a_malformed_line_fails_the_whole_ingest() {
    let dir = tempfile::tempdir().unwrap();
    let good = inputs(&[("first", "w"), ("second", "w")]);
    let lines = good.clone() + "{\"text\": \"third\", \"scope\": \n" + &good;
    let stderr = fails(dir.path(), &["ingest"], &lines);
    assert!(stderr.starts_with("error[INVALID_INPUT]: "), "{stderr}");
    assert!(stderr.contains("line 3: "), "{stderr}");
    assert_eq!(ok(dir.path(), &["list"], ""), Vec::<Value>::new());

    let unknown = r#"{"text":"x","scope":{"userId":"u","workspaceId":"w"},"colour":"red"}"#;
    let stderr = fails(dir.path(), &["ingest"], &format!("\n{unknown}\n"));
    assert!(
        stderr.contains("line 2: unknown field `colour`"),
        "{stderr}"
    );
    assert_eq!(ok(dir.path(), &["list"], ""), Vec::<Value>::new());

    // Lines that parse but break the engine's rules are named too, before
    // anything is stored.
    let empty_user = r#"{"text":"x","scope":{"userId":"","workspaceId":"w"}}"#;
    let stderr = fails(dir.path(), &["ingest"], &format!("{good}{empty_user}\n"));
    assert!(stderr.contains("line 3: scope.userId"), "{stderr}");
    let huge = json!({"text": "x".repeat(70_000), "scope": {"userId": "u", "workspaceId": "w"}});
    let stderr = fails(dir.path(), &["ingest"], &format!("{good}\n{huge}\n"));
    assert!(
        stderr.starts_with("error[TOO_LARGE]: line 4: text"),
        "{stderr}"
    );
    let limit_zero = query("cargo", json!({"limit": 0}));
    let stderr = fails(
        dir.path(),
        &["retrieve"],
        &(query("cargo", json!({})) + &limit_zero),
    );
    assert!(stderr.contains("line 2: limit"), "{stderr}");
    assert_eq!(ok(dir.path(), &["list"], ""), Vec::<Value>::new());
}

#[test]
fn queries_are_all_parsed_before_any_runs() {
    let dir = tempfile::tempdir().unwrap();
    ok(
        dir.path(),
        &["ingest"],
        &inputs(&[("the build uses cargo", "w")]),
    );
    let lines = query("cargo", json!({})) + &query("cargo", json!({"limits": 3}));
    let stderr = fails(dir.path(), &["retrieve"], &lines);
    assert!(
        stderr.contains("line 2: unknown field `limits`"),
        "{stderr}"
    );
    let stderr = fails(dir.path(), &["inject"], &query("cargo", json!({})));
    assert!(
        stderr.contains("line 1: missing field `budgetTokens`"),
        "{stderr}"
    );
    // The valid first query did not run: the memory was never marked used.
    assert_eq!(ok(dir.path(), &["get", "m000001"], "")[0]["usageCount"], 0);
}

#[test]
fn list_pages_follow_cursors() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path();
    let lines: String = (1..=5)
        .map(|day| {
            json!({
                "text": format!("note number {day}"),
                "scope": {"userId": "u", "workspaceId": "w"},
                "createdAt": format!("2024-01-0{day}T00:00:00Z"),
            })
            .to_string()
                + "\n"
        })
        .collect();
    ok(store, &["ingest"], &lines);

    let first = ok(store, &["list", "--limit", "2"], "");
    assert_eq!(ids(&first[..2]), ["m000005", "m000004"]);
    let cursor = first[2]["nextCursor"].as_str().unwrap();
    assert_eq!(keys(&first[2]), ["nextCursor"]);
    let second = ok(store, &["list", "--limit", "2", "--cursor", cursor], "");
    assert_eq!(ids(&second[..2]), ["m000003", "m000002"]);
    let cursor = second[2]["nextCursor"].as_str().unwrap();
    let last = ok(store, &["list", "--limit", "2", "--cursor", cursor], "");
    assert_eq!(ids(&last), ["m000001"]);

    let all = ok(store, &["list", "--all", "--limit", "2"], "");
    assert_eq!(all.len(), 5);
    assert_eq!(all[..2], first[..2]);
    assert_eq!(all[4], last[0]);
    assert_eq!(ok(store, &["list", "--all"], ""), all);
}

#[test]
fn update_changes_status_and_text() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path();
    let pending = json!({
        "text": "I drink my coffee as a cortado",
        "scope": {"userId": "u", "workspaceId": "w"},
        "status": "pending",
    });
    ok(store, &["ingest"], &(pending.to_string() + "\n"));
    assert_eq!(
        ok(store, &["retrieve"], &query("cortado", json!({})))[0]["results"],
        json!([])
    );

    let approved = &ok(store, &["update", "m000001"], r#"{"status":"approved"}"#)[0];
    assert_eq!(approved["status"], "approved");
    assert_eq!(approved["id"], "m000001");
    let hits = ok(
        store,
        &["retrieve"],
        &query("cortado", json!({"dryRun": true})),
    );
    assert_eq!(ids(hits[0]["results"].as_array().unwrap()), ["m000001"]);

    let changed = &ok(
        store,
        &["update", "m000001"],
        r#"{"text":"I switched to oolong tea"}"#,
    )[0];
    assert_eq!(changed["text"], "I switched to oolong tea");
    let answers = ok(
        store,
        &["retrieve"],
        &(query("oolong", json!({})) + &query("cortado", json!({}))),
    );
    assert_eq!(answers[0]["results"][0]["text"], "I switched to oolong tea");
    assert_eq!(answers[1]["results"], json!([]));

    let stderr = fails(store, &["update", "m000001"], r#"{"colour":"red"}"#);
    assert!(stderr.starts_with("error[INVALID_INPUT]: "), "{stderr}");
    let stderr = fails(store, &["update", "m000042"], r#"{"pinned":true}"#);
    assert!(stderr.starts_with("error[NOT_FOUND]: "), "{stderr}");
}

#[test]
fn delete_soft_then_hard_and_delete_all_by_scope() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path();
    ok(
        store,
        &["ingest"],
        &inputs(&[
            ("alpha", "w"),
            ("beta", "w"),
            ("gamma", "w"),
            ("delta", "w2"),
        ]),
    );

    let soft = ok(store, &["delete", "m000001"], "");
    assert_eq!(
        soft,
        [json!({"id": "m000001", "deleted": true, "hard": false})]
    );
    assert_eq!(
        ok(store, &["get", "m000001"], "")[0]["deletedAt"],
        "2024-05-01T12:00:00.000Z"
    );
    assert!(!ids(&ok(store, &["list"], "")).contains(&"m000001"));
    assert!(ids(&ok(store, &["list", "--include-deleted"], "")).contains(&"m000001"));

    let hard = ok(store, &["delete", "m000001", "--hard"], "");
    assert_eq!(
        hard,
        [json!({"id": "m000001", "deleted": true, "hard": true})]
    );
    let stderr = fails(store, &["get", "m000001"], "");
    assert!(stderr.starts_with("error[NOT_FOUND]: "), "{stderr}");

    let result = ok(
        store,
        &["delete-all", "--user", "u", "--workspace", "w"],
        "",
    );
    assert_eq!(
        result,
        [json!({"deleted": 2, "hard": false, "summaries": 0})]
    );
    assert_eq!(ids(&ok(store, &["list"], "")), ["m000004"]);
    let other = ok(store, &["list", "--workspace", "w2"], "");
    assert_eq!(other[0]["text"], "delta");
    assert!(other[0].get("deletedAt").is_none());

    let erased = ok(
        store,
        &["delete-all", "--user", "u", "--workspace", "w", "--hard"],
        "",
    );
    assert_eq!(
        erased,
        [json!({"deleted": 2, "hard": true, "summaries": 0})]
    );
    assert_eq!(
        ids(&ok(store, &["list", "--include-deleted"], "")),
        ["m000004"]
    );
}

#[test]
fn export_imports_into_a_fresh_store_and_stats_count() {
    let source = tempfile::tempdir().unwrap();
    let target = tempfile::tempdir().unwrap();
    ok(
        source.path(),
        &["ingest"],
        &inputs(&[("alpha", "w"), ("beta", "w"), ("gamma", "w2")]),
    );
    ok(source.path(), &["delete", "m000002"], "");
    ok(source.path(), &["update", "m000003"], r#"{"pinned":true}"#);

    let export = memtide(source.path(), &["export"], "");
    assert!(export.status.success());
    let document: Value = serde_json::from_slice(&export.stdout).unwrap();
    assert_eq!(document["format"], "mnemo-export");
    assert_eq!(document["itemCount"], 3);

    let imported = ok(
        target.path(),
        &["import"],
        std::str::from_utf8(&export.stdout).unwrap(),
    );
    assert_eq!(
        imported,
        [json!({"added": 3, "replaced": 0, "merged": 0, "files": 0})]
    );
    let listing = ["list", "--all", "--include-deleted"];
    assert_eq!(
        ok(source.path(), &listing, ""),
        ok(target.path(), &listing, "")
    );

    let stats = &ok(target.path(), &["stats"], "")[0];
    assert_eq!(stats["items"], 3);
    assert_eq!(stats["active"], 2);
    assert_eq!(stats["deleted"], 1);
    assert_eq!(stats["pinned"], 1);
    assert_eq!(stats["tenants"], 2);
    let scoped = &ok(
        target.path(),
        &["stats", "--user", "u", "--workspace", "w2"],
        "",
    )[0];
    assert_eq!(scoped["items"], 1);

    let stderr = fails(
        target.path(),
        &["import"],
        "{\"format\":\"something-else\"}",
    );
    assert!(stderr.starts_with("error["), "{stderr}");
}

/// A command leaves the engine's memory to the operating system at exit
/// (`crates/cli/src/open.rs`) but still releases the store: its `LOCK` is
/// gone after success and after failure alike.
#[test]
fn every_command_releases_the_store_lock() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path();
    let lock = store.join("LOCK");
    ok(
        store,
        &["ingest"],
        &inputs(&[("the lock goes with the process", "w")]),
    );
    assert!(!lock.exists(), "after ingest");
    assert_eq!(ok(store, &["stats"], "")[0]["items"], 1);
    assert!(!lock.exists(), "after stats");
    fails(store, &["get", "m999999"], "");
    assert!(!lock.exists(), "after a failed command");
    let hits = ok(store, &["retrieve"], &query("lock", json!({})));
    assert_eq!(hits[0]["results"].as_array().map(Vec::len), Some(1));
    assert!(!lock.exists(), "after retrieve");
}

#[test]
fn a_second_process_sees_the_first_ones_data() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("nested").join("store");
    ok(
        &store,
        &["ingest"],
        &inputs(&[("persisted across processes", "w")]),
    );
    let item = &ok(&store, &["get", "m000001"], "")[0];
    assert_eq!(item["text"], "persisted across processes");
    // A later process without `--now` uses the system clock and random ids.
    let mut command = memtide_command();
    let out = run(
        command.arg("--store").arg(&store).arg("ingest"),
        &inputs(&[("fresh", "w")]),
    );
    assert!(out.status.success());
    let id = stdout_lines(&out)[0]["id"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 26, "{id}");
    assert_eq!(ids(&ok(&store, &["list", "--all"], "")).len(), 2);
}

#[test]
fn bad_ids_and_usage_errors_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let stderr = fails(dir.path(), &["get", "../etc/passwd"], "");
    assert!(stderr.starts_with("error[INVALID_INPUT]: "), "{stderr}");
    let stderr = fails(dir.path(), &["list", "--limit", "0"], "");
    assert!(stderr.starts_with("error[INVALID_INPUT]: "), "{stderr}");

    let out = run(
        memtide_command().env_remove("MEMTIDE_STORE").arg("list"),
        "",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--store"));
    let out = run(
        memtide_command()
            .arg("stats")
            .env("MEMTIDE_STORE", dir.path()),
        "",
    );
    assert!(out.status.success());

    for args in [
        &["delete-all"][..],
        &["list", "--pinned", "maybe"],
        &["list", "--kind", "opinion"],
    ] {
        assert_eq!(
            memtide(dir.path(), args, "").status.code(),
            Some(2),
            "{args:?}"
        );
    }
    let out = run(
        memtide_command().args(["--store", "x", "--now", "yesterday", "list"]),
        "",
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_closed_stdout_is_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let many: Vec<(String, &str)> = (0..400)
        .map(|i| (format!("memory number {i} about things"), "w"))
        .collect();
    let pairs: Vec<(&str, &str)> = many.iter().map(|(t, w)| (t.as_str(), *w)).collect();
    ok(dir.path(), &["ingest"], &inputs(&pairs));

    let mut child = memtide_command()
        .arg("--store")
        .arg(dir.path())
        .arg("export")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the read end at once: the export (far above a pipe's buffer)
    // then hits a broken pipe.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
    assert!(out.status.success());
}

#[test]
fn config_files_set_secrets_and_retention_and_purge_expired_erases() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let config = dir.path().join("config.json");
    std::fs::write(
        &config,
        r#"{"retention": {"scopes": [{"scope": {"userId": "u", "workspaceId": "w"}, "days": 1}]}}"#,
    )
    .unwrap();
    let config_arg = config.to_str().unwrap();
    let key = "sk-proj-4f9Qd2LrT8xVb1NzK7mWc3YpHs6JeA0u";
    let memories = [
        json!({"text": format!("the deploy key is {key}"), "scope": {"userId": "u", "workspaceId": "keep"}}),
        json!({"text": "an old note about the lighthouse keeper", "scope": {"userId": "u", "workspaceId": "w"},
               "createdAt": "2024-04-01T00:00:00Z"}),
    ];
    let lines: String = memories.iter().map(|m| m.to_string() + "\n").collect();
    let added = ok(&store, &["--config", config_arg, "ingest"], &lines);
    assert_eq!(added.len(), 2);
    let kept = &ok(&store, &["get", "m000001"], "")[0];
    assert_eq!(kept["text"], "the deploy key is [secret]");
    assert!(!std::fs::read_dir(&store)
        .unwrap()
        .flat_map(|entry| std::fs::read(entry.unwrap().path()))
        .any(|bytes| bytes.windows(key.len()).any(|w| w == key.as_bytes())));
    let purged = ok(&store, &["--config", config_arg, "purge-expired"], "");
    assert_eq!(purged, [json!({"purged": 1})]);
    let stderr = fails(&store, &["get", "m000002"], "");
    assert!(stderr.starts_with("error[NOT_FOUND]: "), "{stderr}");
    // Turned off by the config, the key is kept as written.
    let off = dir.path().join("off.json");
    std::fs::write(&off, r#"{"secrets": {"redact": false}}"#).unwrap();
    let line = json!({"text": format!("the staging key is {key}"), "scope": {"userId": "u", "workspaceId": "keep"}});
    let added = ok(
        &store,
        &["--config", off.to_str().unwrap(), "ingest"],
        &(line.to_string() + "\n"),
    );
    let id = added[0]["id"].as_str().unwrap();
    assert_eq!(
        ok(&store, &["get", id], "")[0]["text"],
        format!("the staging key is {key}")
    );
    // A config that is not one is a typed error.
    std::fs::write(&off, r#"{"secrets": {"redact": "no"}}"#).unwrap();
    let stderr = fails(&store, &["--config", off.to_str().unwrap(), "stats"], "");
    assert!(stderr.starts_with("error[INVALID_INPUT]: "), "{stderr}");
}

#[test]
fn ingest_messages_reads_a_conversation_and_list_filters_by_role() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path();
    let conversation = json!([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "name": "Caroline", "content": "I repaint my bike every spring."},
        {"role": "assistant", "content": [
            {"type": "text", "text": "A fresh coat keeps the rust away."},
            {"type": "tool-call", "toolCallId": "c1", "toolName": "note", "input": {"bike": true}}]},
    ])
    .to_string();
    let scope = ["--user", "alice", "--workspace", "w"];
    let args: Vec<&str> = ["ingest-messages"].iter().chain(&scope).copied().collect();
    let results = ok(store, &args, &conversation);
    assert_eq!(
        results,
        [
            json!({"message": 1, "part": 0, "id": "m000001", "outcome": "added"}),
            json!({"message": 2, "part": 0, "id": "m000002", "outcome": "added"}),
        ]
    );
    let mut with_tools = args.clone();
    with_tools.extend([
        "--include",
        "text",
        "--include",
        "toolCall",
        "--speaker",
        "assistant=Bot",
        "--role",
        "assistant",
    ]);
    let results = ok(store, &with_tools, &conversation);
    // The text, now said by Bot, is another voice than the unnamed
    // assistant's: a memory of its own, not a duplicate.
    assert_eq!(results.len(), 2, "the text and the call added");
    assert_eq!(results[0]["outcome"], "added");
    assert_ne!(results[0]["id"], "m000002");
    assert_eq!(results[1]["part"], 1);
    let call = &ok(store, &["get", results[1]["id"].as_str().unwrap()], "")[0];
    assert_eq!(call["text"], "tool call note: {\"bike\":true}");
    assert_eq!(call["speaker"], "Bot");
    assert_eq!(call["source"]["kind"], "tool");

    let users = ok(store, &["list", "--role", "user"], "");
    assert_eq!(users.len(), 1);
    assert_eq!(users[0]["speaker"], "Caroline");
    assert_eq!(users[0]["role"], "user");

    // `update` corrects who said it; the role filter and the history follow.
    let fixed = &ok(
        store,
        &["update", "m000001"],
        r#"{"role":"assistant","speaker":"Melanie"}"#,
    )[0];
    assert_eq!(
        (&fixed["role"], &fixed["speaker"]),
        (&json!("assistant"), &json!("Melanie"))
    );
    assert!(ok(store, &["list", "--role", "user"], "").is_empty());
    let history = ok(store, &["history", "m000001"], "");
    assert_eq!(
        history.last().unwrap()["fields"],
        json!(["role", "speaker"])
    );
    let err = fails(store, &["update", "m000001"], r#"{"role":"narrator"}"#);
    assert!(err.starts_with("error[INVALID_INPUT]: "), "{err}");

    let err = fails(
        store,
        &args,
        "[{\"role\": \"narrator\", \"content\": \"x\"}]",
    );
    assert!(
        err.starts_with("error[INVALID_INPUT]: ") && err.contains("messages[0]: role"),
        "{err}"
    );
    let err = fails(store, &args, "{\"role\": \"user\"}");
    assert!(err.starts_with("error[INVALID_INPUT]"), "{err}");
    let usage = memtide(store, &["ingest-messages", "--user", "alice"], "[]");
    assert_eq!(usage.status.code(), Some(2), "--workspace is required");
}
