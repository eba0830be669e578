//! Markdown files as memories (issue 6, item 1): syncing a file stores it
//! with its chunks in one commit, re-syncing unchanged content writes
//! nothing, changed content replaces exactly the file's old chunks, chunks
//! never merge with other memories, files are private to their scope, and
//! hits on chunks cite `path#Lstart-Lend` in retrieval and injection.

use std::collections::BTreeSet;
use std::path::Path;

use proptest::prelude::*;

use memtide::env::FixedEnvironment;
use memtide::storage::{FsStorage, MemoryStorage, Storage};
use memtide::text::markdown::{chunk_markdown, ChunkParams};
use memtide::text::normalize;
use memtide::EstimatedTokens;
use memtide::{
    Config, FileSyncOutcome, IngestOutcome, InjectFormat, InjectQuery, Kind, LineRange, Memory,
    MemoryInput, MemoryItem, MemoryPatch, RetrieveQuery, Scope, SourceKind, Timestamp,
};
use memtide_testkit::store::{legacy_store, open, records, scope, Mem, T0};

const NOTES: &str = "# Notes\n\nThe deploy script lives in ops/deploy.sh.\n\n\
## Coffee\n\nAlice drinks her coffee as a cortado.\n";

/// The live chunks of the file at `path`, in line order.
fn chunks(mem: &Mem, scope: &Scope, path: &str) -> Vec<MemoryItem> {
    let mut items: Vec<MemoryItem> = mem
        .engine()
        .items()
        .filter(|i| i.is_file_chunk() && &i.scope == scope && i.source.reference == path)
        .map(|i| i.into_owned())
        .collect();
    items.sort_by_key(|i| (i.source_lines.map(|l| l.start), i.id.clone()));
    items
}

/// `(lines, text)` of the chunks `content` should have.
fn expected_chunks(content: &str) -> Vec<(LineRange, String)> {
    chunk_markdown(content, ChunkParams::default(), &EstimatedTokens)
        .into_iter()
        .map(|c| {
            let lines = LineRange {
                start: c.start_line,
                end: c.end_line,
            };
            (lines, normalize(&c.text))
        })
        .filter(|(_, text)| !text.is_empty())
        .collect()
}

fn actual_chunks(mem: &Mem, scope: &Scope, path: &str) -> Vec<(LineRange, String)> {
    chunks(mem, scope, path)
        .into_iter()
        .map(|c| (c.source_lines.unwrap(), c.text))
        .collect()
}

#[test]
fn a_synced_file_is_stored_and_chunked_with_its_lines() {
    let mut mem = open();
    let sync = mem.sync_file(&scope(), "notes/MEMORY.md", NOTES).unwrap();
    assert_eq!(sync.outcome, FileSyncOutcome::Created);
    assert_eq!(sync.removed, 0);
    let stored = chunks(&mem, &scope(), "notes/MEMORY.md");
    assert_eq!(
        sync.chunks,
        stored.iter().map(|c| c.id.clone()).collect::<Vec<_>>()
    );
    assert_eq!(stored.len(), 1, "a short file is one chunk");
    let chunk = &stored[0];
    assert_eq!(chunk.kind, Kind::Document);
    assert_eq!(chunk.source.kind, SourceKind::File);
    assert_eq!(chunk.source.reference, "notes/MEMORY.md");
    assert_eq!(chunk.source_lines, Some(LineRange { start: 1, end: 7 }));
    assert_eq!(chunk.citation(), "notes/MEMORY.md#L1-L7");
    let file = mem.file(&scope(), "notes/MEMORY.md").unwrap();
    assert_eq!(file.content, NOTES);
    assert_eq!(file.content_hash, memtide::text::content_hash(NOTES));
}

#[test]
fn private_spans_leave_the_file_and_no_memory_chunks_are_not_indexed() {
    let mut mem = open();
    let content = "public line\n<private>secret\nsecret</private> after\n";
    mem.sync_file(&scope(), "p.md", content).unwrap();
    let file = mem.file(&scope(), "p.md").unwrap();
    assert_eq!(file.content, "public line\n \n after\n");
    assert!(mem.engine().items().all(|i| !i.text.contains("secret")));
    mem.sync_file(&scope(), "q.md", "remember nothing <no-memory>\n")
        .unwrap();
    assert!(chunks(&mem, &scope(), "q.md").is_empty());
    assert!(mem.file(&scope(), "q.md").is_some());
}

#[test]
fn re_syncing_an_unchanged_file_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let open = |dir: &Path| {
        Memory::open(
            FsStorage::open(dir).unwrap(),
            FixedEnvironment::new(Timestamp(T0)),
            Config::default(),
        )
        .unwrap()
    };
    let mut mem = open(dir.path());
    let first = mem.sync_file(&scope(), "MEMORY.md", NOTES).unwrap();
    let log = dir.path().join("store.log");
    let before = std::fs::read(&log).unwrap();
    let again = mem.sync_file(&scope(), "MEMORY.md", NOTES).unwrap();
    assert_eq!(again.outcome, FileSyncOutcome::Unchanged);
    assert_eq!(again.chunks, first.chunks);
    assert_eq!(
        std::fs::read(&log).unwrap(),
        before,
        "a no-op sync wrote to the log"
    );
    drop(mem);
    // Also after a reopen: the hash is stored with the file.
    let mut reopened = open(dir.path());
    let third = reopened.sync_file(&scope(), "MEMORY.md", NOTES).unwrap();
    assert_eq!(third.outcome, FileSyncOutcome::Unchanged);
    assert_eq!(std::fs::read(&log).unwrap(), before);
}

#[test]
fn a_changed_file_replaces_exactly_its_old_chunks() {
    let mut mem = open();
    mem.ingest(vec![MemoryInput::new("Alice likes sushi", scope())])
        .unwrap();
    let other = mem
        .sync_file(&scope(), "other.md", "Unrelated file\n")
        .unwrap();
    let first = mem.sync_file(&scope(), "MEMORY.md", NOTES).unwrap();
    let changed = NOTES.replace("cortado", "flat white");
    let second = mem.sync_file(&scope(), "MEMORY.md", &changed).unwrap();
    assert_eq!(second.outcome, FileSyncOutcome::Updated);
    assert_eq!(second.removed, first.chunks.len());
    for id in &first.chunks {
        assert!(mem.get(id).is_err(), "old chunk {id} survived");
    }
    assert_eq!(
        actual_chunks(&mem, &scope(), "MEMORY.md"),
        expected_chunks(&changed)
    );
    assert_eq!(chunks(&mem, &scope(), "other.md").len(), other.chunks.len());
    assert_eq!(
        mem.engine().len(),
        1 + other.chunks.len() + second.chunks.len()
    );
    assert!(mem.remove_file(&scope(), "MEMORY.md").unwrap());
    assert!(chunks(&mem, &scope(), "MEMORY.md").is_empty());
    assert!(mem.file(&scope(), "MEMORY.md").is_none());
    assert!(!mem.remove_file(&scope(), "MEMORY.md").unwrap());
}

#[test]
fn chunks_never_merge_with_memories_or_each_other() {
    let mut mem = open();
    let text = "Alice drinks her coffee as a cortado.";
    let said = mem.ingest(vec![MemoryInput::new(text, scope())]).unwrap();
    let said_id = said[0].id.clone().unwrap();
    // Two files with the same line, and the same line as a conversation memory.
    mem.sync_file(&scope(), "a.md", text).unwrap();
    mem.sync_file(&scope(), "b.md", text).unwrap();
    assert_eq!(chunks(&mem, &scope(), "a.md").len(), 1);
    assert_eq!(chunks(&mem, &scope(), "b.md").len(), 1);
    // Saying it again merges into the conversation memory, not a chunk.
    let again = mem.ingest(vec![MemoryInput::new(text, scope())]).unwrap();
    assert_eq!(again[0].outcome, IngestOutcome::Merged);
    assert_eq!(again[0].id.as_deref(), Some(said_id.as_str()));
    // A near-duplicate of a chunk is a new memory, not merged into the chunk.
    let near = mem
        .ingest(vec![MemoryInput::new(
            "Alice drinks her coffee as a cortado!",
            scope(),
        )])
        .unwrap();
    assert_ne!(
        near[0].id.as_deref(),
        Some(chunks(&mem, &scope(), "a.md")[0].id.as_str())
    );
    // Changing the files leaves the conversation memories alone.
    mem.sync_file(&scope(), "a.md", "something else").unwrap();
    mem.remove_file(&scope(), "b.md").unwrap();
    assert_eq!(mem.get(&said_id).unwrap().text, text);
    // A chunk's text and source change only with its file.
    let chunk_id = chunks(&mem, &scope(), "a.md")[0].id.clone();
    let patch = MemoryPatch {
        text: Some("edited".into()),
        ..MemoryPatch::default()
    };
    assert_eq!(
        mem.update(&chunk_id, patch).unwrap_err().code(),
        "INVALID_INPUT"
    );
    let pin = MemoryPatch {
        pinned: Some(true),
        ..MemoryPatch::default()
    };
    assert!(mem.update(&chunk_id, pin).unwrap().pinned);
}

#[test]
fn files_are_private_to_their_scope() {
    let mut mem = open();
    let work = Scope::workspace("alice", "work");
    let bob = Scope::workspace("bob", "home");
    mem.sync_file(&scope(), "MEMORY.md", "The wifi password is hunter2")
        .unwrap();
    mem.sync_file(&work, "MEMORY.md", "The standup is at nine")
        .unwrap();
    assert_eq!(mem.file(&bob, "MEMORY.md"), None);
    assert_eq!(
        mem.file(&work, "MEMORY.md").unwrap().content,
        "The standup is at nine"
    );
    // Same path, other scope: its own file, not a no-op or a replacement.
    let bobs = mem
        .sync_file(&bob, "MEMORY.md", "The wifi password is hunter2")
        .unwrap();
    assert_eq!(bobs.outcome, FileSyncOutcome::Created);
    assert_eq!(chunks(&mem, &scope(), "MEMORY.md").len(), 1);
    for (who, other) in [(&work, "hunter2"), (&bob, "standup")] {
        let hits = mem
            .retrieve(&RetrieveQuery::new(other, who.clone()))
            .unwrap();
        assert!(hits.is_empty(), "{who:?} saw {other}");
    }
    let hard = memtide::ScopeFilter::from(&work);
    mem.delete_all(&hard, true).unwrap();
    assert!(
        mem.file(&work, "MEMORY.md").is_none(),
        "erasure keeps files"
    );
    assert!(mem.file(&scope(), "MEMORY.md").is_some());
}

#[test]
fn paths_that_are_taken_or_invalid_are_refused() {
    let mut mem = open();
    mem.sync_file(&scope(), "dir/a.md", "a").unwrap();
    for (path, code) in [
        ("dir", "INVALID_INPUT"),
        ("dir/a.md/b.md", "INVALID_INPUT"),
        ("../etc/passwd", "INVALID_INPUT"),
        ("a\\b", "INVALID_INPUT"),
        ("%2e%2e/x", "INVALID_INPUT"),
        ("", "INVALID_INPUT"),
    ] {
        let err = mem.sync_file(&scope(), path, "x").unwrap_err();
        assert_eq!(err.code(), code, "{path:?}: {err}");
    }
    let big = "x".repeat(Config::default().limits.max_file_bytes + 1);
    assert_eq!(
        mem.sync_file(&scope(), "big.md", &big).unwrap_err().code(),
        "TOO_LARGE"
    );
}

#[test]
fn hits_on_chunks_cite_path_and_lines_in_retrieval_and_both_injection_formats() {
    let mut mem = open();
    let doc: String = (1..=40)
        .map(|i| format!("Line {i} is about the topic number {i} of the notes.\n"))
        .collect::<String>()
        + "The espresso machine is descaled every Sunday.\n";
    mem.sync_file(&scope(), "notes/MEMORY.md", &doc).unwrap();
    mem.ingest(vec![MemoryInput::new(
        "The espresso beans come from Berlin",
        scope(),
    )])
    .unwrap();
    let hits = mem
        .retrieve(&RetrieveQuery::new(
            "when is the espresso machine descaled",
            scope(),
        ))
        .unwrap();
    let top = &hits[0].item;
    let lines = top.source_lines.unwrap();
    assert!(lines.end == 41 && lines.start < 41, "{lines:?}");
    assert_eq!(
        top.citation(),
        format!("notes/MEMORY.md#L{}-L41", lines.start)
    );
    assert!(hits
        .iter()
        .any(|h| h.item.citation().starts_with("memory:")));
    for format in [InjectFormat::Markdown, InjectFormat::Xml] {
        let query = InjectQuery {
            format,
            ..InjectQuery::new(
                RetrieveQuery::new("espresso machine descaled", scope()),
                2000,
            )
        };
        let injection = mem.inject(&query).unwrap();
        let n = injection.used.iter().position(|id| *id == top.id).unwrap();
        let tag = &injection.citations[n].tag;
        let citation = format!("[{tag}] [notes/MEMORY.md#L{}-L41]", lines.start);
        let block = &injection.block;
        assert!(block.contains(&citation), "{format:?}: {block}");
    }
}

#[test]
fn files_survive_a_reopen_and_a_torn_file_write_is_refused() {
    let mut mem = open();
    mem.sync_file(&scope(), "MEMORY.md", NOTES).unwrap();
    let storage = mem.into_storage();
    let reopened = Memory::open(
        storage.clone(),
        FixedEnvironment::new(Timestamp(T0)),
        Config::default(),
    )
    .unwrap();
    assert_eq!(reopened.file(&scope(), "MEMORY.md").unwrap().content, NOTES);
    assert_eq!(chunks(&reopened, &scope(), "MEMORY.md").len(), 1);
    // A store of formats 1 to 3 that lost its file record (a torn write)
    // disagrees with its manifest: refused, not migrated.
    let mut records = records(&storage);
    let mut legacy = legacy_store(&records, None);
    records.retain(|k, _| k.starts_with("file/"));
    let mut tear = memtide::storage::Batch::new();
    for key in records.keys() {
        tear.delete(key.clone());
    }
    legacy.commit(&tear).unwrap();
    let err = Memory::open(
        legacy,
        FixedEnvironment::new(Timestamp(T0)),
        Config::default(),
    )
    .err()
    .unwrap();
    assert_eq!(err.code(), "CORRUPT");
}

/// Each record keeps the oldest version that can hold it, inside the
/// segmented layout too: items are version 1 until they are chunks of a
/// file (version 2, like file records); the manifest is version 5.
#[test]
fn only_records_of_files_use_format_version_2() {
    let versions = |mem: &Mem| -> Vec<(String, u16)> {
        records(mem.storage())
            .into_iter()
            .map(|(k, v)| (k, u16::from_le_bytes([v[4], v[5]])))
            .collect()
    };
    let mut mem = open();
    mem.ingest(vec![MemoryInput::new("plain memory", scope())])
        .unwrap();
    assert!(
        versions(&mem).iter().all(|(_, v)| *v == 1),
        "{:?}",
        versions(&mem)
    );
    let manifest = mem.storage().get("meta/manifest").unwrap().unwrap();
    assert_eq!(u16::from_le_bytes([manifest[4], manifest[5]]), 7);
    mem.sync_file(&scope(), "MEMORY.md", NOTES).unwrap();
    for (key, version) in versions(&mem) {
        let expected = if key.starts_with("item/m000001") {
            1
        } else {
            2
        };
        assert_eq!(version, expected, "{key}");
    }
    mem.remove_file(&scope(), "MEMORY.md").unwrap();
    assert!(
        versions(&mem).iter().all(|(_, v)| *v == 1),
        "{:?}",
        versions(&mem)
    );
}

// ----- export and import ----------------------------------------------------

/// The export with its files changed by `edit` and both counts and
/// checksums recomputed (so validation, not a checksum, decides).
fn edited_export(export: &str, edit: impl FnOnce(&mut serde_json::Value)) -> String {
    use sha2::{Digest, Sha256};
    let mut doc: serde_json::Value = serde_json::from_str(export).unwrap();
    edit(&mut doc["files"]);
    for (part, count, checksum) in [
        ("items", "itemCount", "checksum"),
        ("files", "fileCount", "filesChecksum"),
    ] {
        doc[count] = doc[part].as_array().unwrap().len().into();
        let json = serde_json::to_string(&doc[part]).unwrap();
        let digest: String = Sha256::digest(json.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        doc[checksum] = serde_json::Value::String(digest);
    }
    doc.to_string()
}

#[test]
fn an_export_carries_files_and_an_import_restores_them() {
    let mut mem = open();
    mem.ingest(vec![MemoryInput::new("Alice likes sushi", scope())])
        .unwrap();
    let content = format!("{NOTES}<private>the door code</private>\n");
    mem.sync_file(&scope(), "notes/MEMORY.md", &content)
        .unwrap();
    let bob = Scope::workspace("bob", "home");
    mem.sync_file(&bob, "/memories/bob.md", "Bob keeps bees.\n")
        .unwrap();
    let export = mem.export();
    let doc: serde_json::Value = serde_json::from_str(&export).unwrap();
    assert_eq!(doc["version"], 2);
    assert_eq!(doc["fileCount"], 2);
    assert!(
        !export.contains("door code"),
        "an export holds private text"
    );

    let mut copy = open();
    let result = copy.import(&export).unwrap();
    assert_eq!((result.added, result.files), (3, 2));
    for (s, path) in [
        (scope(), "notes/MEMORY.md"),
        (bob.clone(), "/memories/bob.md"),
    ] {
        assert_eq!(copy.file(&s, path), mem.file(&s, path));
        assert_eq!(chunks(&copy, &s, path), chunks(&mem, &s, path));
    }
    // Exporting the copy gives the same items and files.
    let copied: serde_json::Value = serde_json::from_str(&copy.export()).unwrap();
    assert_eq!(copied["items"], doc["items"]);
    assert_eq!(copied["files"], doc["files"]);
    // The hash came along: re-syncing the same content changes nothing.
    let again = copy
        .sync_file(&scope(), "notes/MEMORY.md", &content)
        .unwrap();
    assert_eq!(again.outcome, FileSyncOutcome::Unchanged);
    let hits = copy
        .retrieve(&RetrieveQuery::new("how does alice drink coffee", scope()))
        .unwrap();
    assert_eq!(hits[0].item.citation(), "notes/MEMORY.md#L1-L7");
    // The memory tool sees the imported tree.
    let view = copy.memory_tool(
        &bob,
        &serde_json::json!({"command": "view", "path": "/memories"}),
    );
    assert!(view.unwrap().content.contains("bob.md"));
}

#[test]
fn an_imported_file_replaces_the_stored_one_and_its_stale_chunks() {
    let mut old = open();
    old.sync_file(&scope(), "MEMORY.md", NOTES).unwrap();
    let first = chunks(&old, &scope(), "MEMORY.md");
    let mut newer = Memory::open(
        MemoryStorage::new(),
        FixedEnvironment::new(Timestamp(T0 + 5)),
        Config::default(),
    )
    .unwrap();
    // `newer` uses up the id of `old`'s chunk and erases it, so the export
    // does not replace that chunk by id: only its file can take it away.
    let filler = newer
        .ingest(vec![MemoryInput::new("filler", scope())])
        .unwrap();
    assert_eq!(filler[0].id.as_deref(), Some(first[0].id.as_str()));
    newer.delete(&first[0].id, true).unwrap();
    let changed = NOTES.replace("cortado", "flat white");
    newer.sync_file(&scope(), "MEMORY.md", &changed).unwrap();
    let result = old.import(&newer.export()).unwrap();
    assert_eq!(result.files, 1);
    assert_eq!(old.file(&scope(), "MEMORY.md").unwrap().content, changed);
    for chunk in &first {
        assert!(
            old.get(&chunk.id).is_err(),
            "stale chunk {} survived",
            chunk.id
        );
    }
    assert_eq!(
        actual_chunks(&old, &scope(), "MEMORY.md"),
        expected_chunks(&changed)
    );
    // Importing the same export again changes nothing.
    let before = old.export();
    let again = old.import(&newer.export()).unwrap();
    assert_eq!((again.added, again.files), (0, 1));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&old.export()).unwrap()["items"],
        serde_json::from_str::<serde_json::Value>(&before).unwrap()["items"]
    );
}

#[test]
fn a_filtered_export_holds_only_the_selected_scopes() {
    let mut mem = open();
    let bob = Scope::workspace("bob", "home");
    mem.ingest(vec![
        MemoryInput::new("alice memory", scope()),
        MemoryInput::new("bob memory", bob.clone()),
    ])
    .unwrap();
    mem.sync_file(&scope(), "a.md", "alice file\n").unwrap();
    let filter = memtide::ScopeFilter {
        user_id: Some("bob".into()),
        ..Default::default()
    };
    let export = mem.export_filtered(&filter);
    let doc: serde_json::Value = serde_json::from_str(&export).unwrap();
    assert_eq!(doc["filter"], serde_json::json!({"userId": "bob"}));
    assert_eq!(doc["version"], 1, "no file selected: version 1");
    let texts: Vec<&str> = doc["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["bob memory"]);
    assert!(!export.contains("alice"));
}

#[test]
fn damaged_or_conflicting_files_in_an_export_are_refused_and_change_nothing() {
    let mut source = open();
    source
        .sync_file(&scope(), "dir/a.md", "first file\n")
        .unwrap();
    source.sync_file(&scope(), "b.md", "second file\n").unwrap();
    let export = source.export();
    let mut mem = open();
    mem.sync_file(&scope(), "c.md", "kept file\n").unwrap();
    let before = mem.export();
    let code = |mem: &mut Mem, data: &str| mem.import(data).unwrap_err().code();

    let flipped = export.replacen("first file", "first fila", 1);
    assert_eq!(code(&mut mem, &flipped), "CORRUPT");
    let unchecked = export.replacen("\"filesChecksum\"", "\"otherChecksum\"", 1);
    assert_eq!(code(&mut mem, &unchecked), "CORRUPT");
    let old_version = export.replacen("\"version\":2", "\"version\":1", 1);
    assert_eq!(code(&mut mem, &old_version), "INVALID_INPUT");
    let newer = export.replacen(
        "\"version\":2",
        &format!("\"version\":{}", memtide::EXPORT_VERSION + 1),
        1,
    );
    assert_eq!(code(&mut mem, &newer), "VERSION_MISMATCH");
    let version_zero = export.replacen("\"version\":2", "\"version\":0", 1);
    assert_eq!(code(&mut mem, &version_zero), "CORRUPT");
    for count in ["\"fileCount\":2", "\"itemCount\":2"] {
        let wrong = export.replacen(count, &count.replace('2', "3"), 1);
        assert_ne!(wrong, export);
        assert_eq!(code(&mut mem, &wrong), "CORRUPT", "{count}");
    }
    let set = |field: &'static str, value: serde_json::Value| {
        edited_export(&export, move |files| files[0][field] = value)
    };
    for path in [
        "../a.md",
        "/memories/%2e%2e/x",
        "a\\b",
        "a\u{0}b",
        "dir//a.md",
        "",
    ] {
        let bad = set("path", serde_json::json!(path));
        assert_eq!(code(&mut mem, &bad), "INVALID_INPUT", "{path:?}");
    }
    let private = set(
        "content",
        serde_json::json!("x <private>secret</private>\n"),
    );
    assert_eq!(code(&mut mem, &private), "INVALID_INPUT");
    let short_hash = set("contentHash", serde_json::json!("abc"));
    assert_eq!(code(&mut mem, &short_hash), "INVALID_INPUT");
    let huge = set("content", serde_json::json!("x".repeat(3 << 20)));
    assert_eq!(code(&mut mem, &huge), "TOO_LARGE");
    let bad_scope = set(
        "scope",
        serde_json::json!({"userId": "", "workspaceId": "w"}),
    );
    assert_eq!(code(&mut mem, &bad_scope), "INVALID_INPUT");
    let duplicate = edited_export(&export, |files| {
        let first = files[0].clone();
        files.as_array_mut().unwrap().push(first);
    });
    assert_eq!(code(&mut mem, &duplicate), "INVALID_INPUT");
    // `dir` as a file beside `dir/a.md`, in the export or in the store.
    let both = set("path", serde_json::json!("dir/a.md/x"));
    assert_eq!(code(&mut mem, &both), "INVALID_INPUT");
    let under_store_file = set("path", serde_json::json!("c.md/x"));
    assert_eq!(code(&mut mem, &under_store_file), "INVALID_INPUT");
    assert_eq!(mem.export(), before, "a refused import changed the store");
    assert_eq!(mem.import(&export).unwrap().files, 2);
}

/// One edit of a file's lines.
#[derive(Debug, Clone)]
enum Edit {
    Replace(prop::sample::Index, String),
    Insert(prop::sample::Index, String),
    Delete(prop::sample::Index),
    Same,
}

fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{2,8}( [a-z]{2,8}){0,8}",
        Just(String::new()),
        Just("```".to_string()),
        "# [a-z ]{1,12}",
        "[a-z]{3,9}( [a-z]{3,9}){30,60}",
    ]
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<prop::sample::Index>(), line()).prop_map(|(at, l)| Edit::Replace(at, l)),
        (any::<prop::sample::Index>(), line()).prop_map(|(at, l)| Edit::Insert(at, l)),
        any::<prop::sample::Index>().prop_map(Edit::Delete),
        Just(Edit::Same),
    ]
}

fn apply(lines: &mut Vec<String>, edit: &Edit) {
    match edit {
        Edit::Replace(at, l) if !lines.is_empty() => {
            let i = at.index(lines.len());
            lines[i] = l.clone();
        }
        Edit::Insert(at, l) => {
            let i = at.index(lines.len() + 1);
            lines.insert(i, l.clone());
        }
        Edit::Delete(at) if !lines.is_empty() => {
            let i = at.index(lines.len());
            lines.remove(i);
        }
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// After any sequence of edits and syncs of two files, each file's
    /// chunks are exactly those its current content cuts into (no stale
    /// chunk, no duplicate), the other file and the conversation memory are
    /// untouched, and a reopen sees the same.
    #[test]
    fn random_edits_leave_exactly_the_current_chunks(
        start in prop::collection::vec(line(), 0..30),
        edits in prop::collection::vec((any::<bool>(), edit()), 1..12),
    ) {
        let mut mem = open();
        mem.ingest(vec![MemoryInput::new("a conversation memory", scope())]).unwrap();
        let paths = ["a.md", "b.md"];
        let mut files = [start.clone(), start];
        for (i, lines) in files.iter().enumerate() {
            mem.sync_file(&scope(), paths[i], &lines.join("\n")).unwrap();
        }
        for (second, edit) in &edits {
            let i = usize::from(*second);
            apply(&mut files[i], edit);
            let content = files[i].join("\n");
            let before: BTreeSet<String> = chunks(&mem, &scope(), paths[i]).into_iter().map(|c| c.id).collect();
            let sync = mem.sync_file(&scope(), paths[i], &content).unwrap();
            let after: BTreeSet<String> = sync.chunks.iter().cloned().collect();
            if sync.outcome == FileSyncOutcome::Unchanged {
                prop_assert_eq!(&after, &before);
            } else {
                prop_assert!(after.is_disjoint(&before), "an old chunk survived");
                prop_assert_eq!(sync.removed, before.len());
            }
            for (j, lines) in files.iter().enumerate() {
                prop_assert_eq!(actual_chunks(&mem, &scope(), paths[j]), expected_chunks(&lines.join("\n")));
            }
            let total: usize = paths.iter().map(|p| chunks(&mem, &scope(), p).len()).sum();
            prop_assert_eq!(mem.engine().len(), total + 1);
        }
        let reopened = Memory::open(mem.into_storage(), FixedEnvironment::new(Timestamp(T0)), Config::default()).unwrap();
        for (j, lines) in files.iter().enumerate() {
            prop_assert_eq!(actual_chunks(&reopened, &scope(), paths[j]), expected_chunks(&lines.join("\n")));
        }
    }
}
