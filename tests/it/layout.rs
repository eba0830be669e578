//! The segmented layout (`docs/format.md`, section 2.2): stores of formats
//! 1 to 3 migrate on open, in one commit that a crash at any write leaves
//! undone or done; opening and writing cost a handful of storage operations;
//! compaction keeps every commit bounded; a hard delete erases every
//! version of a text from every segment and the log.

use std::collections::BTreeMap;
use std::path::Path;

use memtide::codec::decoded_items;
use memtide::env::FixedEnvironment;
use memtide::storage::{FsStorage, KvStorage, MemoryStorage, Storage};
use memtide::text::analysed_texts;
use memtide::{
    block_on, AsyncMemory, Memory, MemoryInput, MemoryPatch, RetrieveQuery, Scope, Timestamp,
};
use memtide_testkit::faults::{FailingStorage, MapKv};
use memtide_testkit::store::{holds, records, T0};

type Kv = KvStorage<MapKv>;

fn env() -> FixedEnvironment {
    FixedEnvironment::new(Timestamp(T0))
}

fn fixture(version: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/stores")
        .join(version)
}

/// An export without its time, to compare what two stores hold.
fn contents(export: &str) -> serde_json::Value {
    let mut value: serde_json::Value = serde_json::from_str(export).unwrap();
    value.as_object_mut().unwrap().remove("exportedAt");
    value
}

/// The key-value pairs of a fixture's directory store, read without
/// opening it as memtide (so nothing is migrated).
fn fixture_pairs(version: &str) -> BTreeMap<String, Vec<u8>> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture(version).join("store.log"),
        dir.path().join("store.log"),
    )
    .unwrap();
    let storage = FsStorage::open(dir.path()).unwrap();
    storage.scan("").unwrap().into_iter().collect()
}

/// A fixture of an older format (`tests/data/stores/README.md`): what its
/// export says it holds, and its key-value pairs, its manifest checked to
/// be of `format`.
fn old_fixture(version: &str, format: u16) -> (serde_json::Value, BTreeMap<String, Vec<u8>>) {
    let expected =
        contents(&std::fs::read_to_string(fixture(version).join("export.json")).unwrap());
    let pairs = fixture_pairs(version);
    let manifest = &pairs["meta/manifest"];
    assert_eq!(u16::from_le_bytes([manifest[4], manifest[5]]), format);
    (expected, pairs)
}

fn kv_with(pairs: &BTreeMap<String, Vec<u8>>) -> MapKv {
    let kv = MapKv::default();
    for (key, value) in pairs {
        kv.insert(key.clone(), value.clone());
    }
    kv
}

type KvMem = AsyncMemory<Kv, FixedEnvironment>;

fn open_kv(kv: &MapKv) -> memtide::Result<KvMem> {
    let storage = block_on(KvStorage::open(kv.clone()))??;
    block_on(AsyncMemory::open(storage, env(), Default::default()))?
}

/// Runs a call of a store over [`MapKv`], which answers at once.
fn now<T>(call: impl std::future::Future<Output = memtide::Result<T>>) -> memtide::Result<T> {
    block_on(call)?
}

/// How many memory records the log of `manifest` holds: each record's key
/// (`item/…`) is in the frame as it is, and no text of these tests holds
/// `item/`.
fn log_memories(manifest: &[u8]) -> usize {
    manifest.windows(5).filter(|w| w == b"item/").count()
}

fn storage_manifest(storage: &MemoryStorage) -> Vec<u8> {
    storage.get("meta/manifest").unwrap().unwrap()
}

fn only_layout_keys<'a>(keys: impl Iterator<Item = &'a str>) -> bool {
    keys.into_iter()
        .all(|k| k == "meta/manifest" || k.starts_with("seg/"))
}

#[test]
fn stores_of_formats_1_to_3_migrate_on_open_and_hold_the_same() {
    for version in ["v1", "v2", "v3"] {
        let expected =
            contents(&std::fs::read_to_string(fixture(version).join("export.json")).unwrap());
        let pairs = fixture_pairs(version);
        assert!(pairs.keys().any(|k| k.starts_with("item/")), "{version}");

        // In a directory, as the CLI keeps it.
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(
            fixture(version).join("store.log"),
            dir.path().join("store.log"),
        )
        .unwrap();
        let mem = Memory::open(
            FsStorage::open(dir.path()).unwrap(),
            env(),
            Default::default(),
        )
        .unwrap();
        assert_eq!(contents(&mem.export()), expected, "{version}");
        let stored = mem.storage().scan("").unwrap();
        assert!(
            only_layout_keys(stored.iter().map(|(k, _)| k.as_str())),
            "{version}: {stored:?}"
        );
        let manifest = mem.storage().get("meta/manifest").unwrap().unwrap();
        assert_eq!(u16::from_le_bytes([manifest[4], manifest[5]]), 7);
        drop(mem);
        let again = Memory::open(
            FsStorage::open(dir.path()).unwrap(),
            env(),
            Default::default(),
        )
        .unwrap();
        assert_eq!(contents(&again.export()), expected, "{version} reopened");

        // In a key-value store without batches, through the journal.
        let kv = kv_with(&pairs);
        let mem = open_kv(&kv).unwrap();
        assert_eq!(
            contents(&mem.export()),
            expected,
            "{version} in a key-value store"
        );
        assert!(
            only_layout_keys(kv.map().keys().map(String::as_str)),
            "{version}"
        );
        assert_eq!(contents(&open_kv(&kv).unwrap().export()), expected);
    }
}

#[test]
fn the_model_and_embeddings_of_a_format_3_store_survive_its_migration() {
    let kv = kv_with(&fixture_pairs("v3"));
    let mem = open_kv(&kv).unwrap();
    let stats = mem.stats(&Default::default());
    assert_eq!(stats.model.as_deref(), Some("fixture-words-16"));
    assert!(stats.embedded > 0);
    assert_eq!(stats.embedded, stats.items);
}

/// Crashes at each write in turn: the first open fails at write `k` and
/// the process dies; the next open (no fault) finds the old store or the
/// migrated one, never a mixture, and reads the same memories.
#[test]
fn a_crash_at_any_write_of_a_migration_leaves_the_store_readable() {
    let pairs = fixture_pairs("v2");
    let expected = contents(&std::fs::read_to_string(fixture("v2").join("export.json")).unwrap());
    let mut crashes = 0;
    for k in 0.. {
        let kv = kv_with(&pairs);
        kv.trigger().arm(k);
        let first = open_kv(&kv);
        if !kv.trigger().disarm() {
            assert!(first.is_ok());
            break;
        }
        crashes += 1;
        drop(first);
        let mem = open_kv(&kv).unwrap();
        assert_eq!(contents(&mem.export()), expected, "crash at write {k}");
        assert!(
            only_layout_keys(kv.map().keys().map(String::as_str)),
            "crash at write {k}"
        );
    }
    assert!(crashes > 3, "the migration wrote {crashes} times");
}

fn note(i: usize) -> MemoryInput {
    let topics = [
        "coffee", "berlin", "guitar", "marathon", "sushi", "violin", "garden",
    ];
    let text = format!(
        "note {i}: we talked about {} and {} on day {}, and agreed to meet again",
        topics[i % 7],
        topics[(i / 7) % 7],
        i % 31
    );
    MemoryInput::new(text, Scope::workspace("alice", "home"))
}

/// The store's memories, for comparing what a reopen finds.
fn memories(kv: &MapKv) -> serde_json::Value {
    contents(&open_kv(kv).unwrap().export())
}

/// Single ingests cross several log folds and merges; each commit that
/// compacts is crashed at each of its writes in turn, and the store
/// reopened after the crash holds the memories from before the commit or
/// after it.
#[test]
fn a_crash_at_any_write_of_a_compaction_leaves_the_state_before_or_after() {
    let kv = MapKv::default();
    let mut mem = open_kv(&kv).unwrap();
    let mut crashes = 0;
    let mut compactions = 0;
    for i in 0..420 {
        let snapshot = kv.map().clone();
        let segments_before = segment_keys(&kv);
        now(mem.ingest(vec![note(i)])).unwrap();
        if segment_keys(&kv) == segments_before {
            continue;
        }
        compactions += 1;
        let before = memories(&kv_with(&snapshot));
        let after = memories(&kv);
        for k in 0.. {
            let trial = kv_with(&snapshot);
            trial.trigger().arm(k);
            let outcome = open_kv(&trial).and_then(|mut copy| now(copy.ingest(vec![note(i)])));
            if !trial.trigger().disarm() {
                outcome.unwrap();
                break;
            }
            crashes += 1;
            let found = memories(&trial);
            assert!(
                found == before || found == after,
                "ingest {i}, crash at write {k}: a mixed state"
            );
        }
    }
    assert!(compactions >= 5, "{compactions} compactions");
    assert!(
        crashes >= 5 * compactions,
        "{crashes} crashes in {compactions} compactions"
    );
}

fn segment_keys(kv: &MapKv) -> Vec<String> {
    kv.map()
        .keys()
        .filter(|k| k.starts_with("seg/"))
        .cloned()
        .collect()
}

#[test]
fn opening_and_writing_cost_a_handful_of_storage_operations() {
    let kv = MapKv::default();
    let mut mem = open_kv(&kv).unwrap();
    // `MEMTIDE_LAYOUT_MEMORIES` measures other sizes (the closing figures
    // of docs/benchmarks.md used 10,000).
    let memories = std::env::var("MEMTIDE_LAYOUT_MEMORIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000);
    let start = kv.operations();
    for i in 0..memories {
        now(mem.ingest(vec![note(i)])).unwrap();
    }
    let per_ingest = (kv.operations() - start) as f64 / memories as f64;
    let start = kv.operations();
    let mut reopened = open_kv(&kv).unwrap();
    let query = RetrieveQuery::new(
        "when do we meet about the guitar",
        Scope::workspace("alice", "home"),
    );
    assert!(!now(reopened.retrieve(&query)).unwrap().is_empty());
    let open_and_answer = kv.operations() - start;
    eprintln!(
        "{memories} memories: {per_ingest:.2} operations per single ingest; open and one answer: {open_and_answer} operations; {} segments",
        segment_keys(&kv).len()
    );
    assert!(per_ingest <= 4.0, "{per_ingest} operations per ingest");
    assert!(
        open_and_answer <= 50,
        "{open_and_answer} operations to open and answer"
    );
}

#[test]
fn compaction_keeps_few_segments_and_bounds_every_commit() {
    let mut mem = Memory::open(
        FailingStorage::new(MemoryStorage::new()),
        env(),
        Default::default(),
    )
    .unwrap();
    let mut largest = 0;
    for i in 0..3_000 {
        mem.ingest(vec![note(i)]).unwrap();
        let written: usize = mem
            .storage()
            .last_batch
            .iter()
            .flat_map(|b| b.ops())
            .map(|(k, v)| k.len() + v.map_or(0, <[u8]>::len))
            .sum();
        largest = largest.max(written);
    }
    let stored = mem.storage().inner.entries().count();
    let manifest = mem.storage().inner.get("meta/manifest").unwrap().unwrap();
    eprintln!(
        "3000 single ingests: {stored} keys, largest commit {largest} bytes, manifest {} bytes",
        manifest.len()
    );
    assert!(stored <= 24, "{stored} keys");
    assert!(largest <= 3 << 20, "a commit wrote {largest} bytes");
    assert!(
        manifest.len() <= 80 << 10,
        "manifest of {} bytes",
        manifest.len()
    );
}

#[test]
fn a_hard_delete_erases_every_version_from_every_segment_and_the_log() {
    let secret = b"zebra-4471";
    // The term the lexical parts hold for `Qüxtlçab` (folded): postings
    // reveal terms, so they are erased with the text.
    let term = b"quxtlcab";
    let mut mem = Memory::open(MemoryStorage::new(), env(), Default::default()).unwrap();
    let home = Scope::workspace("alice", "home");
    let id = mem
        .ingest(vec![MemoryInput::new(
            "the vault code is zebra-4471 at the Qüxtlçab gate",
            home.clone(),
        )])
        .unwrap()[0]
        .id
        .clone()
        .unwrap();
    // Versions of the memory in the log, folded into segments, then
    // shadowed by newer versions in newer segments.
    for round in 0..4 {
        for i in 0..80 {
            mem.ingest(vec![note(round * 100 + i)]).unwrap();
        }
        let patch = MemoryPatch {
            tags: Some(vec![format!("round-{round}")]),
            ..Default::default()
        };
        mem.update(&id, patch).unwrap();
        mem.retrieve(&RetrieveQuery::new("vault code", home.clone()))
            .unwrap();
    }
    let versions = mem
        .storage()
        .entries()
        .filter(|(_, v)| v.windows(secret.len()).any(|w| w == secret))
        .count();
    assert!(versions >= 2, "the text is in {versions} values");
    assert!(holds(mem.storage(), term), "no lexical part holds the term");
    assert!(records(mem.storage()).contains_key(&format!("item/{id}")));
    mem.delete(&id, true).unwrap();
    assert!(
        !holds(mem.storage(), secret),
        "a byte of the erased text remains"
    );
    assert!(
        !holds(mem.storage(), term),
        "a term of the erased text remains"
    );
    let reopened = Memory::open(mem.storage().clone(), env(), Default::default()).unwrap();
    assert!(reopened.get(&id).is_err());
}

/// A new text erases the old one as a hard delete does: from the segments
/// holding earlier versions, not only from the log.
#[test]
fn a_new_text_erases_the_old_from_every_segment_and_the_log() {
    let secret = b"zebra-4471";
    let term = b"quxtlcab";
    let mut mem = Memory::open(MemoryStorage::new(), env(), Default::default()).unwrap();
    let home = Scope::workspace("alice", "home");
    // A bulk ingest goes to a segment of its own, which no later commit
    // has a reason to merge.
    let mut inputs = vec![MemoryInput::new(
        "the vault code is zebra-4471 at the Qüxtlçab gate",
        home.clone(),
    )];
    inputs.extend((0..300).map(note));
    let id = mem.ingest(inputs).unwrap()[0].id.clone().unwrap();
    // A version in the log too.
    let patch = MemoryPatch {
        tags: Some(vec!["vault".to_string()]),
        ..Default::default()
    };
    mem.update(&id, patch).unwrap();
    assert!(holds(mem.storage(), secret) && holds(mem.storage(), term));
    let items = mem.stats(&Default::default()).items;
    let patch = MemoryPatch {
        text: Some("the vault code was changed".to_string()),
        ..Default::default()
    };
    mem.update(&id, patch).unwrap();
    assert!(
        !holds(mem.storage(), secret),
        "a byte of the replaced text remains"
    );
    assert!(
        !holds(mem.storage(), term),
        "a term of the replaced text remains"
    );
    let reopened = Memory::open(mem.storage().clone(), env(), Default::default()).unwrap();
    let item = reopened.get(&id).unwrap();
    assert_eq!(
        (item.text.as_str(), item.tags.clone()),
        ("the vault code was changed", vec!["vault".to_string()])
    );
    assert_eq!(reopened.stats(&Default::default()).items, items);
    assert_eq!(
        reopened.list(&Default::default()).unwrap().items.len(),
        mem.list(&Default::default()).unwrap().items.len()
    );
}

/// Two instances on one store, as two browser tabs or two requests are.
fn pair(kv: &MapKv) -> (KvMem, KvMem) {
    (open_kv(kv).unwrap(), open_kv(kv).unwrap())
}

#[test]
fn a_refresh_applies_what_another_writer_committed_reading_only_new_segments() {
    let kv = MapKv::default();
    let (mut a, mut b) = pair(&kv);
    for i in 0..600 {
        now(a.ingest(vec![note(i)])).unwrap();
    }
    assert!(now(b.refresh()).unwrap());
    assert_eq!(contents(&b.export()), contents(&a.export()));
    let held = segment_keys(&kv);
    assert!(held.len() >= 3, "{held:?}");

    // More writes by `a`: new memories, an edit, a soft and a hard delete,
    // and the compactions they bring.
    let ids: Vec<String> = (0..3)
        .map(|i| {
            now(a.ingest(vec![note(1_000 + i)])).unwrap()[0]
                .id
                .clone()
                .unwrap()
        })
        .collect();
    for i in 600..700 {
        now(a.ingest(vec![note(i)])).unwrap();
    }
    let patch = MemoryPatch {
        tags: Some(vec!["edited".into()]),
        ..Default::default()
    };
    now(a.update(&ids[0], patch)).unwrap();
    now(a.delete(&ids[1], false)).unwrap();
    now(a.delete(&ids[2], true)).unwrap();
    let fresh: Vec<String> = segment_keys(&kv)
        .into_iter()
        .filter(|k| !held.contains(k))
        .collect();
    assert!(
        segment_keys(&kv).iter().any(|k| held.contains(k)),
        "a segment `b` holds is still there, so a full read would cost more"
    );

    let before = kv.operations();
    assert!(now(b.refresh()).unwrap());
    let reads = kv.operations() - before;
    assert_eq!(contents(&b.export()), contents(&a.export()));
    assert!(b.get(&ids[2]).is_err());
    assert_eq!(b.get(&ids[0]).unwrap().tags, ["edited"]);
    assert!(
        reads <= 2 + fresh.len(),
        "{reads} operations to refresh over {} new segments",
        fresh.len()
    );
    assert!(!now(b.refresh()).unwrap(), "nothing new");
    let query = RetrieveQuery::new("note 650 guitar", Scope::workspace("alice", "home"));
    assert!(!now(b.retrieve(&query)).unwrap().is_empty());
}

#[test]
fn a_conflicting_write_catches_up_and_commits_on_the_newest_state() {
    let kv = MapKv::default();
    let (mut a, mut b) = pair(&kv);
    now(a.ingest(vec![note(0)])).unwrap();
    now(b.refresh()).unwrap();
    for i in 1..200 {
        now(a.ingest(vec![note(i)])).unwrap();
    }
    let items = a.stats(&Default::default()).items;
    // `b`'s view is 199 commits old: its write conflicts, catches up and is
    // decided again on the store as `a` left it (an exact duplicate of a
    // memory `b` had not seen merges into it).
    let before = kv.operations();
    let id = now(b.ingest(vec![note(150)])).unwrap()[0]
        .id
        .clone()
        .unwrap();
    let spent = kv.operations() - before;
    assert_eq!(b.stats(&Default::default()).items, items);
    assert_eq!(b.get(&id).unwrap().merged_from.len(), 1);
    now(a.refresh()).unwrap();
    assert_eq!(contents(&a.export()), contents(&b.export()));
    let reopened = open_kv(&kv).unwrap();
    assert_eq!(contents(&reopened.export()), contents(&b.export()));
    eprintln!("a write on a view 199 commits old: {spent} operations");
}

/// Segments carry the lexical part of their memories (format 5): opening
/// a store analyses only the texts of the log, none a segment holds.
#[test]
fn opening_analyses_no_text_that_a_segment_holds() {
    let mut mem = Memory::open(MemoryStorage::new(), env(), Default::default()).unwrap();
    // Enough bytes in one ingest to go straight to segments.
    let ids: Vec<String> = mem
        .ingest((0..300).map(note).collect())
        .unwrap()
        .into_iter()
        .map(|r| r.id.unwrap())
        .collect();
    mem.delete(&ids[3], false).unwrap();
    let storage = mem.storage().clone();
    assert!(!storage.scan("seg/").unwrap().is_empty());
    let before = (analysed_texts(), decoded_items());
    let reopened = Memory::open(storage, env(), Default::default()).unwrap();
    assert_eq!(
        analysed_texts() - before.0,
        0,
        "opening analysed a stored text"
    );
    // Format 6: the memories come from the segments' catalog rows; only
    // the log's (the soft-deleted one) are decoded from JSON.
    assert_eq!(
        decoded_items() - before.1,
        log_memories(&storage_manifest(reopened.storage())),
        "opening decoded a segment's memory from JSON"
    );
    assert_eq!(contents(&reopened.export()), contents(&mem.export()));
    // A memory of the log is analysed on open: the log has no lexical part.
    mem.ingest(vec![MemoryInput::new(
        "a single new note about the harbour",
        Scope::workspace("alice", "home"),
    )])
    .unwrap();
    let before = (analysed_texts(), decoded_items());
    Memory::open(mem.storage().clone(), env(), Default::default()).unwrap();
    assert_eq!(analysed_texts() - before.0, 1);
    // The log: the soft-deleted memory and the new one.
    assert_eq!(decoded_items() - before.1, 2);
    assert_eq!(log_memories(&storage_manifest(mem.storage())), 2);
}

/// The oracle: a store indexed from its lexical parts answers every query
/// exactly as the same records indexed by analysing their texts.
#[test]
fn lexical_parts_answer_as_analysing_the_texts_does() {
    let mut mem = Memory::open(MemoryStorage::new(), env(), Default::default()).unwrap();
    let ids: Vec<String> = mem
        .ingest((0..400).map(note).collect())
        .unwrap()
        .into_iter()
        .map(|r| r.id.unwrap())
        .collect();
    for id in ids.iter().step_by(37) {
        mem.delete(id, false).unwrap();
    }
    for id in ids.iter().skip(5).step_by(41) {
        mem.delete(id, true).unwrap();
    }
    mem.ingest((400..460).map(note).collect()).unwrap();
    let stored = records(mem.storage());
    // Formats 1 to 3 kept no lexical part: opening one analyses every text.
    let mut analysed = Memory::open(
        memtide_testkit::store::legacy_store(&stored, None),
        env(),
        Default::default(),
    )
    .unwrap();
    let mut counted = Memory::open(mem.storage().clone(), env(), Default::default()).unwrap();
    assert!(!analysed.storage().scan("seg/").unwrap().is_empty());
    let home = Scope::workspace("alice", "home");
    for query in [
        "coffee in berlin",
        "when do we meet about the guitar",
        "sushi violin garden marathon",
        "day 17",
        "note 233",
        "nothing here matches",
    ] {
        let mut query = RetrieveQuery::new(query, home.clone());
        query.dry_run = true;
        query.limit = Some(20);
        let expected = serde_json::to_value(analysed.retrieve(&query).unwrap()).unwrap();
        let found = serde_json::to_value(counted.retrieve(&query).unwrap()).unwrap();
        assert_eq!(found, expected, "{}", query.text);
    }
}

/// A store of format 4 (segments without lexical parts, as builds before
/// them wrote it) opens, and each later commit rewrites one of its
/// segments with a lexical part.
#[test]
fn a_store_of_format_4_opens_and_gains_lexical_parts() {
    let (expected, pairs) = old_fixture("v4", 4);
    let old_segments: Vec<&String> = pairs.keys().filter(|k| k.starts_with("seg/")).collect();
    assert!(!old_segments.is_empty());
    let kv = kv_with(&pairs);
    let before = analysed_texts();
    let mut mem = open_kv(&kv).unwrap();
    let first_open = analysed_texts() - before;
    assert_eq!(contents(&mem.export()), expected);
    let scope = Scope::workspace("carol", "garden");
    let query = RetrieveQuery::new("which bed got water", scope.clone());
    let answer = now(mem.retrieve(&query)).unwrap();
    assert!(!answer.is_empty());
    now(mem.ingest(vec![MemoryInput::new(
        "the shed key hangs by the door",
        scope.clone(),
    )]))
    .unwrap();
    let manifest = kv.map()["meta/manifest"].clone();
    assert_eq!(u16::from_le_bytes([manifest[4], manifest[5]]), 7);
    for key in old_segments {
        assert!(!kv.map().contains_key(key), "{key} was not rewritten");
    }
    for (key, value) in kv.map().iter().filter(|(k, _)| k.starts_with("seg/")) {
        assert_eq!(u16::from_le_bytes([value[4], value[5]]), 7, "{key}");
    }
    let before = analysed_texts();
    let mut again = open_kv(&kv).unwrap();
    // Only the log's memories are analysed now (one more: the new one),
    // not the 68 garden notes of the segment (80 written, near-duplicates
    // merged, one erased).
    let second_open = analysed_texts() - before;
    assert!(
        second_open + 68 <= first_open + 1,
        "{first_open} texts analysed, then {second_open}"
    );
    let mut dry = query.clone();
    dry.dry_run = true;
    let mut first = query;
    first.dry_run = true;
    assert_eq!(
        serde_json::to_value(now(again.retrieve(&dry)).unwrap()).unwrap(),
        serde_json::to_value(now(mem.retrieve(&first)).unwrap()).unwrap()
    );
}

/// A store of format 5 (segments with lexical parts, embeddings in
/// segments, as the build before catalog parts wrote it) opens and holds
/// what its export says, with its model and embeddings; the next commit
/// rewrites its segment in format 7, after which opening decodes only the
/// log's memories from JSON.
#[test]
fn a_store_of_format_5_opens_and_gains_catalog_parts() {
    let (expected, pairs) = old_fixture("v5", 5);
    let kv = kv_with(&pairs);
    let old_segments: Vec<&String> = pairs.keys().filter(|k| k.starts_with("seg/")).collect();
    assert!(!old_segments.is_empty());
    let before = decoded_items();
    let mut mem = open_kv(&kv).unwrap();
    let first_open = decoded_items() - before;
    assert_eq!(contents(&mem.export()), expected);
    let stats = mem.stats(&Default::default());
    assert_eq!(stats.model.as_deref(), Some("fixture-words-16"));
    assert_eq!(stats.embedded, 10);
    let scope = Scope::workspace("carol", "garden");
    let mut query = RetrieveQuery::new("which bed got water", scope.clone());
    query.dry_run = true;
    let answer = serde_json::to_value(now(mem.retrieve(&query)).unwrap()).unwrap();
    assert!(!answer.as_array().unwrap().is_empty());
    now(mem.ingest(vec![MemoryInput::new(
        "the shed key hangs by the door",
        scope.clone(),
    )]))
    .unwrap();
    for key in old_segments {
        assert!(!kv.map().contains_key(key), "{key} was not rewritten");
    }
    for (key, value) in kv.map().iter().filter(|(k, _)| k.starts_with("seg/")) {
        assert_eq!(u16::from_le_bytes([value[4], value[5]]), 7, "{key}");
    }
    let before = decoded_items();
    let mut again = open_kv(&kv).unwrap();
    let second_open = decoded_items() - before;
    // Only the log's memories are decoded from JSON now, none of the
    // segment's.
    let in_log = log_memories(&kv.map()["meta/manifest"]);
    assert_eq!(first_open, 90);
    assert!(in_log < 30, "{in_log} memories in the log");
    assert_eq!(second_open, in_log);
    assert_eq!(contents(&again.export()), contents(&mem.export()));
    assert_eq!(
        serde_json::to_value(now(again.retrieve(&query)).unwrap()).unwrap(),
        serde_json::to_value(now(mem.retrieve(&query)).unwrap()).unwrap()
    );
}

/// A store of format 6 (catalog rows that write the id of the memory
/// they follow, and every update time, as the build before format 7
/// wrote them) opens and holds what its export says; later commits
/// rewrite its segments in format 7, whose rows name the row before them
/// instead, and the store reopens to the same memories and answers.
#[test]
fn a_store_of_format_6_opens_and_its_rows_lose_what_they_repeat() {
    let (expected, pairs) = old_fixture("v6", 6);
    let old_segments: Vec<&String> = pairs.keys().filter(|k| k.starts_with("seg/")).collect();
    assert_eq!(old_segments.len(), 2);
    let kv = kv_with(&pairs);
    let mut mem = open_kv(&kv).unwrap();
    assert_eq!(contents(&mem.export()), expected);
    let walk = Scope {
        session_id: Some("walk".into()),
        ..Scope::workspace("carol", "garden")
    };
    let mut query = RetrieveQuery::new("which bed needs compost", walk.clone());
    query.dry_run = true;
    let answer = serde_json::to_value(now(mem.retrieve(&query)).unwrap()).unwrap();
    assert!(!answer.as_array().unwrap().is_empty());
    // Each commit rewrites at most one old segment besides its own work.
    for n in 0..4 {
        now(mem.ingest(vec![MemoryInput::new(
            format!("the gate latch {n} sticks"),
            walk.clone(),
        )]))
        .unwrap();
    }
    for key in old_segments {
        assert!(!kv.map().contains_key(key), "{key} was not rewritten");
    }
    let segments: Vec<(String, Vec<u8>)> = kv
        .map()
        .clone()
        .into_iter()
        .filter(|(k, _)| k.starts_with("seg/"))
        .collect();
    assert!(!segments.is_empty());
    for (key, value) in &segments {
        assert_eq!(u16::from_le_bytes([value[4], value[5]]), 7, "{key}");
    }
    let mut again = open_kv(&kv).unwrap();
    assert_eq!(contents(&again.export()), contents(&mem.export()));
    assert_eq!(
        serde_json::to_value(now(again.retrieve(&query)).unwrap()).unwrap(),
        serde_json::to_value(now(mem.retrieve(&query)).unwrap()).unwrap()
    );
    // What the old store held is still there, as its export says.
    let old: serde_json::Value = expected["items"].clone();
    let now_held = contents(&again.export())["items"].clone();
    for item in old.as_array().unwrap() {
        assert!(
            now_held.as_array().unwrap().contains(item),
            "{}",
            item["id"]
        );
    }
}
