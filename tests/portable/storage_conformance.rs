//! The storage contract (see `memtide::storage`), checked against every backend,
//! native and in the browser.
//!
//! Each generic `async fn` below takes a [`Backend`]; `conformance_suite!`
//! instantiates all of them per backend. Natively each test drives its future
//! with [`memtide_testkit::block_on`], a poll-once executor (the futures of
//! native backends never wait); in wasm32 they are `wasm_bindgen_test`s run
//! in a browser:
//!
//! ```text
//! cargo test --test portable storage_conformance
//! CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
//!   CHROMEDRIVER=/usr/bin/chromedriver WASM_BINDGEN_TEST_TIMEOUT=300 \
//!   cargo test --target wasm32-unknown-unknown --no-default-features \
//!   --features semantic --test portable storage_conformance
//! ```
//!
//! A new backend joins by implementing [`Backend`] and adding one line to the
//! macro call. The module `fs_storage_log` holds crash tests specific to
//! `FsStorage` and its log format (`docs/format.md`); the module `browser`
//! tests what only IndexedDB has: connections shared between tabs,
//! transactions, browser errors.

use std::collections::BTreeMap;

use memtide::storage::{Batch, Expect, KvStorage, MemoryStorage, StorageError};
use memtide::storage::{JOURNAL_PREFIX, MAX_KEY_BYTES};
use memtide_testkit::faults::MapKv;

#[cfg(target_arch = "wasm32")]
use memtide_js::IndexedDbStorage;

/// Key-value pairs as `scan` returns them.
type Pairs = Vec<(String, Vec<u8>)>;

/// A backend under test. Its storage methods are those of
/// [`memtide::storage::AsyncStorage`].
#[allow(async_fn_in_trait)]
trait Backend: memtide::storage::AsyncStorage + Sized {
    /// An empty store.
    async fn fresh() -> Self;
    /// Closes the store and opens it again: what survives is what the backend
    /// persisted.
    async fn reopen(self) -> Self;
    /// Every byte blob the backend controls (files, records), for the check
    /// that a deleted value is erased.
    async fn raw_contents(&self) -> Vec<Vec<u8>>;
}

impl Backend for MemoryStorage {
    async fn fresh() -> Self {
        MemoryStorage::new()
    }

    /// A memory store lives only in its value: reopening it is keeping it.
    async fn reopen(self) -> Self {
        self
    }

    async fn raw_contents(&self) -> Vec<Vec<u8>> {
        self.entries()
            .map(|(key, value)| [key.as_bytes(), value].concat())
            .collect()
    }
}

impl<const ATOMIC: bool> Backend for KvStorage<MapKv<ATOMIC>> {
    async fn fresh() -> Self {
        KvStorage::open(MapKv::default()).await.unwrap()
    }

    /// A new [`KvStorage`] over the same map: what another process sees.
    async fn reopen(self) -> Self {
        KvStorage::open(self.into_inner()).await.unwrap()
    }

    async fn raw_contents(&self) -> Vec<Vec<u8>> {
        let map = self.inner().map();
        assert!(map.keys().all(|k| !k.starts_with(JOURNAL_PREFIX)));
        map.iter()
            .map(|(key, value)| [key.as_bytes(), value].concat())
            .collect()
    }
}

/// One test per suite function for `$backend`: a `#[test]` natively, a
/// `#[wasm_bindgen_test]` in wasm32.
macro_rules! suite_tests {
    ($backend:ty; $($test:ident,)*) => {$(
        #[cfg(not(target_arch = "wasm32"))]
        #[test]
        fn $test() {
            memtide_testkit::block_on(super::$test::<$backend>());
        }
        #[cfg(target_arch = "wasm32")]
        #[wasm_bindgen_test::wasm_bindgen_test]
        async fn $test() {
            super::$test::<$backend>().await;
        }
    )*};
}

macro_rules! conformance_suite {
    ($($(#[$attr:meta])* $name:ident: $backend:ty,)*) => {$(
        $(#[$attr])*
        mod $name {
            use super::*;

            suite_tests! { $backend;
                get_scan_and_commit_basics,
                scan_is_prefix_exact_and_key_sorted,
                the_later_op_on_a_key_in_one_batch_wins,
                an_empty_batch_changes_nothing,
                key_limits_are_enforced_before_anything_applies,
                values_are_opaque_bytes,
                a_4_mib_value_round_trips,
                ten_thousand_keys_round_trip,
                a_deleted_value_is_erased,
                an_expired_memory_is_erased_by_purge,
                either_side_of_a_supersession_is_erased_by_a_hard_delete,
                a_summary_is_erased_with_its_source,
                a_random_history_matches_a_model_across_reopens,
                expectations_guard_commits,
            }
        }
    )*};
}

conformance_suite! {
    memory_storage: MemoryStorage,
    kv_storage_journal: KvStorage<MapKv<false>>,
    kv_storage_atomic_batch: KvStorage<MapKv<true>>,
    #[cfg(all(feature = "fs", not(target_arch = "wasm32")))]
    fs_storage: fs_storage_log::FsBackend,
    #[cfg(target_arch = "wasm32")]
    indexed_db: IndexedDbStorage,
}

// ---------------------------------------------------------------- helpers

fn batch(ops: &[(&str, Option<&[u8]>)]) -> Batch {
    let mut batch = Batch::new();
    for &(key, value) in ops {
        match value {
            Some(v) => batch.put(key, v.to_vec()),
            None => batch.delete(key),
        }
    }
    batch
}

fn keys(pairs: &[(String, Vec<u8>)]) -> Vec<&str> {
    pairs.iter().map(|(k, _)| k.as_str()).collect()
}

/// Commits `batch` without an expectation.
async fn commit<B: Backend>(store: &mut B, batch: &Batch) -> Result<(), StorageError> {
    store.commit(batch, None).await
}

/// Asserts the store holds exactly `model`, through `scan`, `get` and
/// `get_many` (every key, with an absent one among them, in a scrambled
/// order).
async fn assert_holds<B: Backend>(store: &B, model: &BTreeMap<String, Vec<u8>>) {
    let expected: Pairs = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(store.scan("").await.unwrap(), expected);
    for (key, value) in model {
        assert_eq!(
            store.get(key).await.unwrap().as_ref(),
            Some(value),
            "key {key}"
        );
    }
    let absent = "get-many/absent";
    assert!(!model.contains_key(absent));
    let mut asked: Vec<&str> = model.keys().map(String::as_str).rev().collect();
    asked.insert(asked.len() / 2, absent);
    let values: Vec<Option<Vec<u8>>> = asked.iter().map(|k| model.get(*k).cloned()).collect();
    assert_eq!(store.get_many(&asked).await.unwrap(), values);
    assert!(store.get_many(&[]).await.unwrap().is_empty());
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

// ---------------------------------------------------------- shared suite

async fn get_scan_and_commit_basics<B: Backend>() {
    let mut store = B::fresh().await;
    assert_eq!(store.get("item/a").await.unwrap(), None);
    assert!(store.scan("").await.unwrap().is_empty());

    commit(
        &mut store,
        &batch(&[("item/a", Some(b"1")), ("item/b", Some(b"2"))]),
    )
    .await
    .unwrap();
    assert_eq!(store.get("item/a").await.unwrap(), Some(b"1".to_vec()));
    assert_eq!(store.get("item/b").await.unwrap(), Some(b"2".to_vec()));
    assert_eq!(store.get("item/c").await.unwrap(), None);

    commit(
        &mut store,
        &batch(&[
            ("item/a", Some(b"one")),
            ("item/b", None),
            ("item/never", None),
        ]),
    )
    .await
    .unwrap();
    let expected = BTreeMap::from([("item/a".to_string(), b"one".to_vec())]);
    assert_holds(&store, &expected).await;
    let store = store.reopen().await;
    assert_holds(&store, &expected).await;
    assert_eq!(store.get("item/b").await.unwrap(), None);
}

/// The keys [`scan_is_prefix_exact_and_key_sorted`] writes, in key (UTF-8
/// byte) order. The last three sort differently by UTF-16 code units (the
/// astral character's surrogates come before U+E000), as IndexedDB orders.
const SORTED_KEYS: [&str; 13] = [
    "i",
    "item",
    "item/",
    "item/a",
    "item/ab",
    "item/b",
    "item0",
    "itemx",
    "meta/manifest",
    "é",
    "\u{e000}",
    "\u{ffff}",
    "\u{1f600}",
];

async fn check_scans<B: Backend>(store: &B) {
    let all = store.scan("").await.unwrap();
    for (key, value) in &all {
        assert_eq!(*value, key.bytes().rev().collect::<Vec<u8>>());
    }
    assert_eq!(keys(&all), SORTED_KEYS);
    let cases: [(&str, &[&str]); 9] = [
        ("item/", &["item/", "item/a", "item/ab", "item/b"]),
        ("item/a", &["item/a", "item/ab"]),
        (
            "item",
            &[
                "item", "item/", "item/a", "item/ab", "item/b", "item0", "itemx",
            ],
        ),
        ("é", &["é"]),
        ("\u{ffff}", &["\u{ffff}"]),
        ("\u{1f600}", &["\u{1f600}"]),
        ("\u{e000}", &["\u{e000}"]),
        ("item/c", &[]),
        ("zzz", &[]),
    ];
    for (prefix, expected) in cases {
        assert_eq!(
            keys(&store.scan(prefix).await.unwrap()),
            expected,
            "{prefix}"
        );
    }
}

async fn scan_is_prefix_exact_and_key_sorted<B: Backend>() {
    let mut store = B::fresh().await;
    // Written out of order over two batches; values are the keys reversed.
    let first = ["itemx", "\u{1f600}", "item/b", "é", "item", "meta/manifest"];
    let second = [
        "item/ab", "\u{ffff}", "i", "item0", "\u{e000}", "item/", "item/a",
    ];
    for group in [&first[..], &second[..]] {
        let mut b = Batch::new();
        for key in group {
            b.put(*key, key.bytes().rev().collect());
        }
        commit(&mut store, &b).await.unwrap();
    }
    check_scans(&store).await;
    let mut store = store.reopen().await;
    check_scans(&store).await;

    commit(&mut store, &batch(&[("item/a", None)]))
        .await
        .unwrap();
    assert_eq!(keys(&store.scan("item/a").await.unwrap()), ["item/ab"]);
    let store = store.reopen().await;
    assert_eq!(keys(&store.scan("item/a").await.unwrap()), ["item/ab"]);
}

async fn the_later_op_on_a_key_in_one_batch_wins<B: Backend>() {
    let mut store = B::fresh().await;
    commit(
        &mut store,
        &batch(&[
            ("put-then-delete", Some(b"old")),
            ("delete-then-put", Some(b"old")),
        ]),
    )
    .await
    .unwrap();
    let mut b = Batch::new();
    b.put("put-then-delete", b"new".to_vec());
    b.delete("put-then-delete");
    b.delete("delete-then-put");
    b.put("delete-then-put", b"new".to_vec());
    b.put("put-then-put", b"first".to_vec());
    b.put("put-then-put", b"second".to_vec());
    commit(&mut store, &b).await.unwrap();
    let expected = BTreeMap::from([
        ("delete-then-put".to_string(), b"new".to_vec()),
        ("put-then-put".to_string(), b"second".to_vec()),
    ]);
    assert_holds(&store, &expected).await;
    assert_holds(&store.reopen().await, &expected).await;
}

async fn an_empty_batch_changes_nothing<B: Backend>() {
    let mut store = B::fresh().await;
    commit(&mut store, &Batch::new()).await.unwrap();
    assert!(store.scan("").await.unwrap().is_empty());
    commit(&mut store, &batch(&[("k", Some(b"v"))]))
        .await
        .unwrap();
    commit(&mut store, &Batch::new()).await.unwrap();
    let expected = BTreeMap::from([("k".to_string(), b"v".to_vec())]);
    assert_holds(&store, &expected).await;
    assert_holds(&store.reopen().await, &expected).await;
}

async fn key_limits_are_enforced_before_anything_applies<B: Backend>() {
    let mut store = B::fresh().await;
    let longest_ascii = "k".repeat(MAX_KEY_BYTES);
    let longest_multibyte = "é".repeat(MAX_KEY_BYTES / 2);
    assert_eq!(longest_multibyte.len(), MAX_KEY_BYTES);
    commit(
        &mut store,
        &batch(&[
            (&longest_ascii, Some(b"ascii")),
            (&longest_multibyte, Some(b"multibyte")),
            ("existing", Some(b"kept")),
        ]),
    )
    .await
    .unwrap();
    let expected = BTreeMap::from([
        (longest_ascii.clone(), b"ascii".to_vec()),
        (longest_multibyte.clone(), b"multibyte".to_vec()),
        ("existing".to_string(), b"kept".to_vec()),
    ]);
    assert_holds(&store, &expected).await;

    // Bad keys sort both before ("") and after (the rest) the valid ops.
    let too_long_ascii = "z".repeat(MAX_KEY_BYTES + 1);
    let too_long_multibyte = format!("{longest_multibyte}x");
    for bad in ["", too_long_ascii.as_str(), too_long_multibyte.as_str()] {
        let rejected = batch(&[
            ("existing", None),
            ("item/new", Some(b"new")),
            (&longest_ascii, Some(b"changed")),
            (bad, Some(b"bad")),
        ]);
        assert!(
            commit(&mut store, &rejected).await.is_err(),
            "key of {} bytes",
            bad.len()
        );
        assert_holds(&store, &expected).await;
        let deleting_bad = batch(&[("item/new", Some(b"new")), (bad, None)]);
        assert!(
            commit(&mut store, &deleting_bad).await.is_err(),
            "delete of {} bytes",
            bad.len()
        );
        assert_holds(&store, &expected).await;
    }
    assert_holds(&store.reopen().await, &expected).await;
}

async fn values_are_opaque_bytes<B: Backend>() {
    let mut store = B::fresh().await;
    let every_byte: Vec<u8> = (0..=255).collect();
    let every_byte_reversed: Vec<u8> = (0..=255).rev().collect();
    commit(
        &mut store,
        &batch(&[
            ("bytes", Some(&every_byte)),
            ("reversed", Some(&every_byte_reversed)),
            ("empty", Some(b"")),
            ("nul", Some(b"\0")),
        ]),
    )
    .await
    .unwrap();
    assert_eq!(store.get("empty").await.unwrap(), Some(Vec::new()));
    let expected = BTreeMap::from([
        ("bytes".to_string(), every_byte.clone()),
        ("empty".to_string(), Vec::new()),
        ("nul".to_string(), vec![0]),
        ("reversed".to_string(), every_byte_reversed),
    ]);
    assert_holds(&store, &expected).await;
    let store = store.reopen().await;
    assert_holds(&store, &expected).await;
    assert_eq!(store.get("empty").await.unwrap(), Some(Vec::new()));
}

async fn a_4_mib_value_round_trips<B: Backend>() {
    let mut store = B::fresh().await;
    let large: Vec<u8> = (0..4 << 20).map(|i: u32| (i % 251) as u8).collect();
    commit(
        &mut store,
        &batch(&[("large", Some(&large)), ("small", Some(b"s"))]),
    )
    .await
    .unwrap();
    assert_eq!(store.get("large").await.unwrap().as_ref(), Some(&large));
    let store = store.reopen().await;
    assert_eq!(store.get("large").await.unwrap().as_ref(), Some(&large));
    assert_eq!(store.get("small").await.unwrap(), Some(b"s".to_vec()));
}

async fn ten_thousand_keys_round_trip<B: Backend>() {
    let mut store = B::fresh().await;
    let mut model = BTreeMap::new();
    // Ten batches, written in descending key order.
    for chunk in (0..10u32).rev() {
        let mut b = Batch::new();
        for i in (chunk * 1000..(chunk + 1) * 1000).rev() {
            let key = format!("item/{i:05}");
            b.put(key.clone(), i.to_le_bytes().to_vec());
            model.insert(key, i.to_le_bytes().to_vec());
        }
        commit(&mut store, &b).await.unwrap();
    }
    assert_eq!(store.scan("").await.unwrap().len(), 10_000);
    assert_holds(&store, &model).await;
    let store = store.reopen().await;
    assert_holds(&store, &model).await;
    let tail = store.scan("item/0999").await.unwrap();
    let expected: Vec<String> = (9990..10_000).map(|i| format!("item/{i:05}")).collect();
    assert_eq!(keys(&tail), expected);
}

async fn assert_erased<B: Backend>(store: &B, marker: &[u8]) {
    assert!(!store
        .raw_contents()
        .await
        .iter()
        .any(|blob| contains(blob, marker)));
    assert_eq!(store.get("item/secret").await.unwrap(), None);
    assert_eq!(
        keys(&store.scan("item/").await.unwrap()),
        ["item/keep", "item/more", "item/other"]
    );
}

async fn a_deleted_value_is_erased<B: Backend>() {
    const MARKER: &[u8] = b"erase-me-5b0c9f1e-marker";
    let mut store = B::fresh().await;
    let secret = |version: u8| [b"\x00prefix".as_slice(), MARKER, &[version]].concat();
    commit(
        &mut store,
        &batch(&[("item/secret", Some(&secret(1))), ("item/keep", Some(b"k"))]),
    )
    .await
    .unwrap();
    commit(&mut store, &batch(&[("item/secret", Some(&secret(2)))]))
        .await
        .unwrap();
    commit(&mut store, &batch(&[("item/other", Some(b"o"))]))
        .await
        .unwrap();
    assert!(
        store
            .raw_contents()
            .await
            .iter()
            .any(|blob| contains(blob, MARKER)),
        "the marker must be found before the delete for this test to mean anything"
    );

    commit(
        &mut store,
        &batch(&[("item/secret", None), ("item/more", Some(b"m"))]),
    )
    .await
    .unwrap();
    assert_erased(&store, MARKER).await;
    assert_erased(&store.reopen().await, MARKER).await;
}

/// The engine over `store`, with the default configuration and a fixed
/// clock: what the cases that go through the engine open and reopen.
async fn engine<B: Backend>(store: B) -> memtide::AsyncMemory<B, memtide::env::FixedEnvironment> {
    memtide::AsyncMemory::open(
        store,
        memtide::env::FixedEnvironment::new(memtide::Timestamp(1_700_000_000_000)),
        memtide::Config::default(),
    )
    .await
    .unwrap()
}

/// The engine over the backend: a hard delete of a summary's source
/// erases the summary in the same commit, so no byte of either text
/// remains, in any version the layout wrote (`docs/memory-model.md`,
/// "Summaries").
async fn a_summary_is_erased_with_its_source<B: Backend>() {
    use memtide::{MemoryInput, Scope, SummaryInput};
    const SOURCE: &str = "summarize-me-7c2e source";
    const SUMMARY: &str = "digest-4b9d summary";
    let scope = Scope::workspace("alice", "home");
    let mut mem = engine(B::fresh().await).await;
    let ids: Vec<String> = mem
        .ingest(vec![
            MemoryInput::new(format!("the {SOURCE} text"), scope.clone()),
            MemoryInput::new("a memory that stays", scope.clone()),
        ])
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id.unwrap())
        .collect();
    for version in ["first", "second"] {
        let input = SummaryInput {
            scope: scope.clone(),
            text: format!("the {SUMMARY}, {version} version"),
            sources: ids.clone(),
        };
        mem.store_summary(input).await.unwrap();
    }
    let found =
        |blobs: &[Vec<u8>], marker: &str| blobs.iter().any(|b| contains(b, marker.as_bytes()));
    let before = mem.storage().raw_contents().await;
    assert!(
        found(&before, SOURCE) && found(&before, SUMMARY),
        "both texts must be stored before the delete for this test to mean anything"
    );
    mem.delete(&ids[0], true).await.unwrap();
    let store = mem.into_storage();
    let after = store.raw_contents().await;
    assert!(!found(&after, SOURCE) && !found(&after, SUMMARY));
    let store = store.reopen().await;
    assert!(!found(&store.raw_contents().await, SUMMARY));
    let reopened = engine(store).await;
    assert_eq!(reopened.stats(&Default::default()).items, 1);
}

/// The engine over the backend: after `purgeExpired`, no byte of an
/// expired memory's text remains, in any version the layout wrote
/// (`docs/memory-model.md`, "Expiry and erasure").
async fn an_expired_memory_is_erased_by_purge<B: Backend>() {
    use memtide::{MemoryInput, MemoryPatch, Privacy, Scope, Timestamp};
    const MARKER: &str = "expire-me-3f1a9c marker";
    let scope = Scope::workspace("alice", "home");
    let mut mem = engine(B::fresh().await).await;
    let expiring = MemoryInput {
        privacy: Some(Privacy {
            retention_days: Some(1),
            ..Privacy::default()
        }),
        ..MemoryInput::new(format!("the {MARKER} first version"), scope.clone())
    };
    let id = mem.ingest(vec![expiring]).await.unwrap()[0]
        .id
        .clone()
        .unwrap();
    // A second version of the text, so two versions are stored somewhere.
    mem.update(
        &id,
        MemoryPatch {
            text: Some(format!("the {MARKER} second version")),
            ..MemoryPatch::default()
        },
    )
    .await
    .unwrap();
    mem.ingest(vec![MemoryInput::new("a memory that stays", scope)])
        .await
        .unwrap();
    let found = |blobs: Vec<Vec<u8>>| blobs.iter().any(|b| contains(b, MARKER.as_bytes()));
    assert!(
        found(mem.storage().raw_contents().await),
        "the marker must be stored before the purge for this test to mean anything"
    );
    mem.env_mut().advance_ms(2 * Timestamp::DAY_MS);
    assert_eq!(mem.purge_expired().await.unwrap().purged, 1);
    assert!(!found(mem.storage().raw_contents().await));
    let store = mem.into_storage().reopen().await;
    assert!(!found(store.raw_contents().await));
    let reopened = engine(store).await;
    assert_eq!(reopened.stats(&Default::default()).items, 1);
}

/// The engine over the backend: a hard delete of a superseded memory, then
/// of its successor, leaves no byte of either's text and no record naming
/// either's id, in any version the layout wrote (`docs/memory-model.md`,
/// "Supersession").
async fn either_side_of_a_supersession_is_erased_by_a_hard_delete<B: Backend>() {
    use memtide::{IngestOutcome, MemoryInput, Scope};
    const OLD: &str = "cortado-7d21e0 marker";
    const NEW: &str = "flat-white-9b44c2 marker";
    let scope = Scope::workspace("alice", "home");
    let mut mem = engine(B::fresh().await).await;
    let keyed = |text: &str| MemoryInput {
        key: Some("coffee".into()),
        supersede: Some(true),
        ..MemoryInput::new(format!("I take my coffee as a {text}"), scope.clone())
    };
    let old = mem.upsert(vec![keyed(OLD)]).await.unwrap()[0]
        .id
        .clone()
        .unwrap();
    let new = mem.upsert(vec![keyed(NEW)]).await.unwrap();
    assert_eq!(new[0].outcome, IngestOutcome::Superseded);
    let new = new[0].id.clone().unwrap();
    mem.ingest(vec![MemoryInput::new("a memory that stays", scope)])
        .await
        .unwrap();
    let found =
        |blobs: &[Vec<u8>], needle: &str| blobs.iter().any(|b| contains(b, needle.as_bytes()));
    let blobs = mem.storage().raw_contents().await;
    assert!(
        found(&blobs, OLD) && found(&blobs, NEW),
        "both texts must be stored before the deletes for this test to mean anything"
    );
    mem.delete(&old, true).await.unwrap();
    let blobs = mem.storage().raw_contents().await;
    assert!(!found(&blobs, OLD) && !found(&blobs, &old));
    assert!(found(&blobs, NEW));
    mem.delete(&new, true).await.unwrap();
    let blobs = mem.storage().raw_contents().await;
    assert!(!found(&blobs, NEW) && !found(&blobs, &new));
    let store = mem.into_storage().reopen().await;
    let blobs = store.raw_contents().await;
    assert!(
        !found(&blobs, OLD) && !found(&blobs, NEW) && !found(&blobs, &old) && !found(&blobs, &new)
    );
    let reopened = engine(store).await;
    assert_eq!(reopened.stats(&Default::default()).items, 1);
}

/// Mixed puts, overwrites and deletes from a fixed-seed generator, checked
/// against a `BTreeMap` after every commit and after reopens.
async fn a_random_history_matches_a_model_across_reopens<B: Backend>() {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |bound: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % bound
    };
    let mut store = B::fresh().await;
    let mut model: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for round in 0..60 {
        let mut b = Batch::new();
        let mut effect = model.clone();
        for _ in 0..=next(6) {
            let key = format!("item/{}", next(20));
            if next(4) == 0 {
                b.delete(key.clone());
                effect.remove(&key);
            } else {
                let value: Vec<u8> = (0..next(64)).map(|_| next(256) as u8).collect();
                b.put(key.clone(), value.clone());
                effect.insert(key, value);
            }
        }
        commit(&mut store, &b).await.unwrap();
        model = effect;
        assert_holds(&store, &model).await;
        if round % 10 == 9 {
            store = store.reopen().await;
            assert_holds(&store, &model).await;
        }
    }
}

/// A commit with an [`Expect`]ation applies only while the key holds the
/// expected value (or is absent, for `None`); otherwise it is a `Conflict`
/// and changes nothing.
async fn expectations_guard_commits<B: Backend>() {
    let mut store = B::fresh().await;
    let absent = Expect {
        key: "meta/manifest",
        value: None,
    };
    let v1 = batch(&[("meta/manifest", Some(b"v1")), ("item/1", Some(b"one"))]);
    store.commit(&v1, Some(absent)).await.unwrap();
    let expected = BTreeMap::from([
        ("item/1".to_string(), b"one".to_vec()),
        ("meta/manifest".to_string(), b"v1".to_vec()),
    ]);
    let stale = [
        absent,
        Expect {
            key: "meta/manifest",
            value: Some(b"v0"),
        },
        Expect {
            key: "meta/manifest",
            value: Some(b""),
        },
        Expect {
            key: "item/none",
            value: Some(b"v1"),
        },
    ];
    for expect in stale {
        let change = batch(&[
            ("meta/manifest", Some(b"v2")),
            ("item/1", None),
            ("item/2", Some(b"two")),
        ]);
        match store.commit(&change, Some(expect)).await {
            Err(StorageError::Conflict(_)) => {}
            other => panic!("expected a conflict for {expect:?}, got {other:?}"),
        }
        assert_holds(&store, &expected).await;
        // An empty batch checks the expectation too.
        let empty = store.commit(&Batch::new(), Some(expect)).await;
        assert!(
            matches!(empty, Err(StorageError::Conflict(_))),
            "{expect:?}"
        );
    }
    let current = Expect {
        key: "meta/manifest",
        value: Some(b"v1"),
    };
    store.commit(&Batch::new(), Some(current)).await.unwrap();
    let v2 = batch(&[("meta/manifest", Some(b"v2")), ("item/1", None)]);
    store.commit(&v2, Some(current)).await.unwrap();
    let expected = BTreeMap::from([("meta/manifest".to_string(), b"v2".to_vec())]);
    assert_holds(&store, &expected).await;
    assert_holds(&store.reopen().await, &expected).await;
}

// ------------------------------------- FsStorage backend and crash tests

#[cfg(all(feature = "fs", not(target_arch = "wasm32")))]
mod fs_storage_log;

// ------------------------------------ IndexedDB backend and browser tests

#[cfg(target_arch = "wasm32")]
mod browser;
