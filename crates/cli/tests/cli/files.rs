//! The file commands of the `memtide` binary: `md-sync`, the memory tool,
//! hot files, and files carried by `export`.

use serde_json::{json, Value};

use crate::commands::{fails, ids, inputs, memtide, ok, query};

const SCOPE_ARGS: [&str; 4] = ["--user", "u", "--workspace", "w"];

/// `args` followed by the scope options.
fn scoped<'a>(args: &[&'a str]) -> Vec<&'a str> {
    args.iter().copied().chain(SCOPE_ARGS).collect()
}

#[test]
fn export_carries_files_and_selects_scopes() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let notes = dir.path().join("MEMORY.md");
    std::fs::write(&notes, "# Notes\n\nThe kettle is descaled monthly.\n").unwrap();
    ok(
        &store,
        &scoped(&["md", "sync", notes.to_str().unwrap(), "--as", "MEMORY.md"]),
        "",
    );
    ok(&store, &["ingest"], &inputs(&[("elsewhere", "other")]));
    let whole = memtide(&store, &["export"], "");
    let document: Value = serde_json::from_slice(&whole.stdout).unwrap();
    assert_eq!(
        (document["version"].clone(), document["fileCount"].clone()),
        (json!(2), json!(1))
    );
    let other = memtide(
        &store,
        &["export", "--user", "u", "--workspace", "other"],
        "",
    );
    let selected: Value = serde_json::from_slice(&other.stdout).unwrap();
    assert_eq!(
        selected["filter"],
        json!({"userId": "u", "workspaceId": "other"})
    );
    assert_eq!(selected["itemCount"], 1);
    assert!(selected.get("files").is_none());

    let target = dir.path().join("copy");
    let imported = ok(
        &target,
        &["import"],
        std::str::from_utf8(&whole.stdout).unwrap(),
    );
    assert_eq!(imported[0]["files"], 1);
    let again = ok(
        &target,
        &scoped(&["md", "sync", notes.to_str().unwrap(), "--as", "MEMORY.md"]),
        "",
    );
    assert_eq!(
        again[0]["outcome"], "unchanged",
        "the file came with its hash"
    );
}

#[test]
fn md_sync_indexes_a_file_once_and_replaces_its_chunks_on_change() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let notes = dir.path().join("MEMORY.md");
    std::fs::write(
        &notes,
        "# Notes\n\nThe espresso machine is descaled on Sundays.\n",
    )
    .unwrap();
    let notes_arg = notes.to_str().unwrap();
    let first = ok(
        &store,
        &scoped(&["md", "sync", notes_arg, "--as", "MEMORY.md"]),
        "",
    );
    assert_eq!(
        first,
        [json!({"path": "MEMORY.md", "outcome": "created", "chunks": ["m000001"], "removed": 0})]
    );
    let again = ok(
        &store,
        &scoped(&["md", "sync", notes_arg, "--as", "MEMORY.md"]),
        "",
    );
    assert_eq!(again[0]["outcome"], "unchanged");
    std::fs::write(
        &notes,
        "# Notes\n\nThe espresso machine is descaled on Mondays.\n",
    )
    .unwrap();
    let changed = ok(
        &store,
        &scoped(&["md", "sync", notes_arg, "--as", "MEMORY.md"]),
        "",
    );
    assert_eq!(
        changed,
        [json!({"path": "MEMORY.md", "outcome": "updated", "chunks": ["m000002"], "removed": 1})]
    );
    let hits = ok(
        &store,
        &["retrieve"],
        &query("when is the espresso machine descaled", json!({})),
    );
    let results = hits[0]["results"].as_array().unwrap();
    assert_eq!(ids(results), ["m000002"]);
    assert_eq!(results[0]["citation"], "MEMORY.md#L1-L3");
    assert!(results[0]["text"].as_str().unwrap().contains("Mondays"));
    let removed = ok(&store, &scoped(&["md", "remove", "MEMORY.md"]), "");
    assert_eq!(removed, [json!({"path": "MEMORY.md", "removed": true})]);
    let stderr = fails(&store, &scoped(&["md", "sync", "missing.md"]), "");
    assert!(stderr.starts_with("error[IO]: "), "{stderr}");
    let stderr = fails(
        &store,
        &scoped(&["md", "sync", notes_arg, notes_arg, "--as", "x.md"]),
        "",
    );
    assert!(stderr.starts_with("error[INVALID_INPUT]: "), "{stderr}");
    // The scope is required.
    assert_eq!(
        memtide(&store, &["md", "sync", notes_arg], "")
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn memory_tool_runs_one_call_from_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path();
    let call = |input: Value| ok(store, &scoped(&["memory-tool"]), &input.to_string());
    assert_eq!(
        call(
            json!({"command": "create", "path": "/memories/prefs.md", "file_text": "coffee: cortado\n"})
        ),
        [json!({"content": "File created successfully at: /memories/prefs.md", "isError": false})]
    );
    assert_eq!(
        call(json!({"command": "view", "path": "/memories/prefs.md"})),
        [
            json!({"content": "Here's the content of /memories/prefs.md with line numbers:\n     1\tcoffee: cortado\n     2\t", "isError": false})
        ]
    );
    assert_eq!(
        call(json!({"command": "view", "path": "/memories/../etc/passwd"})),
        [
            json!({"content": "Error: The path /memories/../etc/passwd is not allowed: `.` and `..` path segments are not allowed", "isError": true})
        ]
    );
    let hits = ok(store, &["retrieve"], &query("cortado", json!({})));
    assert_eq!(hits[0]["results"][0]["citation"], "/memories/prefs.md#L1");
    let stderr = fails(store, &scoped(&["memory-tool"]), "{not json");
    assert!(
        stderr.starts_with("error[INVALID_INPUT]: invalid input: tool input: "),
        "{stderr}"
    );
}

#[test]
fn hot_sync_reads_edits_back_and_rewrites_the_block() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let user_md = dir.path().join("USER.md");
    let user_arg = user_md.to_str().unwrap();
    let pinned = json!({"text": "I take my coffee black", "pinned": true, "scope": {"userId": "u", "workspaceId": "w"}});
    ok(&store, &["ingest"], &format!("{pinned}\n"));
    std::fs::write(&user_md, "# About me\n").unwrap();
    let out = memtide(&store, &scoped(&["hot", "render", user_arg]), "");
    assert!(out.status.success());
    let block = "<!-- mnemo:begin pinned -->\n- I take my coffee black <!-- mnemo:id=m000001 -->\n<!-- mnemo:end pinned -->\n";
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("# About me\n\n{block}")
    );
    assert_eq!(
        std::fs::read_to_string(&user_md).unwrap(),
        "# About me\n",
        "render wrote the file"
    );

    let synced = ok(&store, &scoped(&["hot", "sync", user_arg]), "");
    assert_eq!(synced[0]["changed"], true);
    assert_eq!(
        synced[0]["sync"],
        json!({"added": [], "updated": [], "pinned": [], "unpinned": []})
    );
    let written = std::fs::read_to_string(&user_md).unwrap();
    assert_eq!(written, format!("# About me\n\n{block}"));

    // A human edits the block: one text changed, one line added.
    let edited = written
        .replace("coffee black", "coffee as a cortado")
        .replace("<!-- mnemo:end", "- I live in Berlin\n<!-- mnemo:end");
    std::fs::write(&user_md, edited).unwrap();
    let synced = ok(&store, &scoped(&["hot", "sync", user_arg]), "");
    assert_eq!(
        synced[0]["sync"],
        json!({"added": ["m000002"], "updated": ["m000001"], "pinned": [], "unpinned": []})
    );
    assert_eq!(
        std::fs::read_to_string(&user_md).unwrap(),
        "# About me\n\n<!-- mnemo:begin pinned -->\n- I take my coffee as a cortado <!-- mnemo:id=m000001 -->\n- I live in Berlin <!-- mnemo:id=m000002 -->\n<!-- mnemo:end pinned -->\n"
    );
    let again = ok(&store, &scoped(&["hot", "sync", user_arg]), "");
    assert_eq!(again[0]["changed"], false);
    let item = &ok(&store, &["get", "m000002"], "")[0];
    assert_eq!(item["source"]["ref"], user_arg.replace('\\', "/"));
}
