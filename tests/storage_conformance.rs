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
//! cargo test --test storage_conformance
//! CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
//!   CHROMEDRIVER=/usr/bin/chromedriver WASM_BINDGEN_TEST_TIMEOUT=300 \
//!   cargo test --target wasm32-unknown-unknown --no-default-features \
//!   --features js --test storage_conformance
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

#[cfg(all(target_arch = "wasm32", feature = "js"))]
use memtide::storage::IndexedDbStorage;

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

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
    #[cfg(all(target_arch = "wasm32", feature = "js"))]
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

/// Asserts the store holds exactly `model`, through both `scan` and `get`.
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
mod fs_storage_log {
    use std::fs;
    use std::path::{Path, PathBuf};

    use memtide::storage::{FsStorage, Storage, StorageError};

    use super::*;

    /// An [`FsStorage`] in its own temporary directory.
    pub(crate) struct FsBackend {
        // Declared first so the store closes before the directory is removed.
        store: FsStorage,
        dir: tempfile::TempDir,
    }

    impl Storage for FsBackend {
        fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
            self.store.get(key)
        }
        fn scan(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
            self.store.scan(prefix)
        }
        fn commit(&mut self, batch: &Batch) -> Result<(), StorageError> {
            self.store.commit(batch)
        }
    }

    impl Backend for FsBackend {
        async fn fresh() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let store = FsStorage::open(dir.path()).unwrap();
            FsBackend { store, dir }
        }

        async fn reopen(self) -> Self {
            let FsBackend { store, dir } = self;
            drop(store);
            let store = FsStorage::open(dir.path()).unwrap();
            FsBackend { store, dir }
        }

        async fn raw_contents(&self) -> Vec<Vec<u8>> {
            files_in(self.dir.path())
                .iter()
                .map(|path| fs::read(path).unwrap())
                .collect()
        }
    }

    /// Every regular file under `dir`, recursively.
    fn files_in(dir: &Path) -> Vec<PathBuf> {
        let mut files = Vec::new();
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files.extend(files_in(&path));
            } else {
                files.push(path);
            }
        }
        files
    }

    /// Header and checksum of a frame (`docs/format.md`).
    const MIN_FRAME_LEN: usize = 18;

    fn log_path(dir: &Path) -> PathBuf {
        dir.join("store.log")
    }

    fn snapshot(store: &FsStorage) -> Pairs {
        store.scan("").unwrap()
    }

    fn expect_corrupt(dir: &Path) -> String {
        match FsStorage::open(dir) {
            Err(StorageError::Corrupt(message)) => message,
            other => panic!("expected Corrupt, got {other:?}"),
        }
    }

    /// A store holding two appended frames: A, then B, which overwrites a key
    /// of A and adds one (no deletes, so B is appended, not compacted).
    /// Returns the state after A, the length of A's frame and the whole log.
    fn two_frames(dir: &Path) -> (Pairs, usize, Vec<u8>) {
        let mut store = FsStorage::open(dir).unwrap();
        store
            .commit(&batch(&[
                ("item/1", Some(b"first")),
                ("item/2", Some(b"second")),
            ]))
            .unwrap();
        let after_a = snapshot(&store);
        let a_len = fs::read(log_path(dir)).unwrap().len();
        store
            .commit(&batch(&[
                ("item/1", Some(b"changed by B")),
                ("item/3", Some(b"third")),
            ]))
            .unwrap();
        drop(store);
        let log = fs::read(log_path(dir)).unwrap();
        assert!(log.len() > a_len);
        (after_a, a_len, log)
    }

    #[test]
    fn a_torn_last_frame_at_any_length_reads_as_never_committed() {
        let dir = tempfile::tempdir().unwrap();
        let (after_a, a_len, log) = two_frames(dir.path());
        for cut in a_len..log.len() {
            fs::write(log_path(dir.path()), &log[..cut]).unwrap();
            let mut store = FsStorage::open(dir.path()).unwrap();
            assert_eq!(snapshot(&store), after_a, "log cut at byte {cut}");
            assert_eq!(fs::read(log_path(dir.path())).unwrap(), &log[..a_len]);
            let cut_tag = cut.to_string().into_bytes();
            store
                .commit(&batch(&[("item/after", Some(&cut_tag))]))
                .unwrap();
            drop(store);
            let store = FsStorage::open(dir.path()).unwrap();
            let mut expected = after_a.clone();
            expected.push(("item/after".to_string(), cut_tag));
            assert_eq!(snapshot(&store), expected, "log cut at byte {cut}");
        }
    }

    #[test]
    fn a_bit_flip_in_an_earlier_frame_is_corrupt_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (_, a_len, log) = two_frames(dir.path());
        for at in 0..a_len {
            let mut damaged = log.clone();
            damaged[at] ^= 1 << (at % 8);
            fs::write(log_path(dir.path()), &damaged).unwrap();
            let message = expect_corrupt(dir.path());
            assert!(message.contains("offset 0"), "flip at {at}: {message}");
            assert_eq!(fs::read(log_path(dir.path())).unwrap(), damaged);
            assert!(!dir.path().join("LOCK").exists());
        }
    }

    /// A crash during an append can leave the last frame with any mix of
    /// written and unwritten bytes, and that frame's commit never returned:
    /// so a last frame failing its checksum reads as not committed. Frames
    /// before it were synced before the next append began, so damage there is
    /// reported instead. A length field that shrank is the one damage to the
    /// last frame that no torn append produces (bytes would follow the frame
    /// it declares): that is reported as corrupt.
    #[test]
    fn a_bit_flip_in_the_last_frame_reads_as_a_torn_append() {
        let dir = tempfile::tempdir().unwrap();
        let (after_a, a_len, log) = two_frames(dir.path());
        let length_field = a_len + 6..a_len + 10;
        for at in (a_len..log.len()).filter(|at| !length_field.contains(at)) {
            let mut damaged = log.clone();
            damaged[at] ^= 1 << (at % 8);
            fs::write(log_path(dir.path()), &damaged).unwrap();
            let store = FsStorage::open(dir.path()).unwrap();
            assert_eq!(snapshot(&store), after_a, "flip at byte {at}");
            assert_eq!(fs::read(log_path(dir.path())).unwrap(), &log[..a_len]);
        }
        // The length field set outright: shorter than the frame is corrupt;
        // longer, or too short to be a frame at all, is a torn append.
        let b_len = log.len() - a_len;
        for (declared, torn) in [
            (b_len - 1, false),
            (b_len + 1, true),
            (MIN_FRAME_LEN - 1, true),
        ] {
            let mut damaged = log.clone();
            damaged[length_field.clone()].copy_from_slice(&(declared as u32).to_le_bytes());
            fs::write(log_path(dir.path()), &damaged).unwrap();
            if torn {
                let store = FsStorage::open(dir.path()).unwrap();
                assert_eq!(snapshot(&store), after_a, "declared length {declared}");
            } else {
                let message = expect_corrupt(dir.path());
                assert!(message.contains(&format!("offset {a_len}")), "{message}");
            }
        }
    }

    #[test]
    fn a_leftover_compaction_file_is_ignored_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let (_, _, log) = two_frames(dir.path());
        let before = snapshot(&FsStorage::open(dir.path()).unwrap());
        let tmp = dir.path().join("store.log.tmp");
        fs::write(
            &tmp,
            [&log[..log.len() / 2], b"garbage".as_slice()].concat(),
        )
        .unwrap();
        let store = FsStorage::open(dir.path()).unwrap();
        assert_eq!(snapshot(&store), before);
        assert!(!tmp.exists());
    }

    #[test]
    fn an_empty_batch_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = FsStorage::open(dir.path()).unwrap();
        store.commit(&batch(&[("k", Some(b"v"))])).unwrap();
        let log = fs::read(log_path(dir.path())).unwrap();
        store.commit(&Batch::new()).unwrap();
        assert_eq!(fs::read(log_path(dir.path())).unwrap(), log);
    }

    #[test]
    fn the_log_is_compacted_once_garbage_outweighs_live_data() {
        const THRESHOLD: u64 = 64 * 1024;
        let dir = tempfile::tempdir().unwrap();
        let mut store = FsStorage::open(dir.path()).unwrap();
        let log_len = || fs::metadata(log_path(dir.path())).unwrap().len();
        // Every batch overwrites the same two keys, so every frame (and the
        // compacted log, one frame of the live pairs) has the same length.
        let overwrite = |store: &mut FsStorage, round: u8| {
            let value = vec![round; 4096];
            let pairs = [
                ("item/hot", Some(&value[..])),
                ("item/cold", Some(&b"c"[..])),
            ];
            store.commit(&batch(&pairs)).unwrap();
        };
        overwrite(&mut store, 0);
        let frame_len = log_len();
        let mut previous = frame_len;
        let mut compactions = 0;
        for round in 1..40 {
            overwrite(&mut store, round);
            let len = log_len();
            if previous + frame_len < THRESHOLD {
                assert_eq!(len, previous + frame_len, "round {round} was not appended");
            } else {
                assert_eq!(len, frame_len, "round {round} did not compact");
                compactions += 1;
            }
            previous = len;
        }
        assert_eq!(compactions, 2);
        drop(store);
        let store = FsStorage::open(dir.path()).unwrap();
        assert_eq!(store.get("item/hot").unwrap(), Some(vec![39; 4096]));
        assert_eq!(store.get("item/cold").unwrap(), Some(b"c".to_vec()));
    }

    #[test]
    fn a_second_open_fails_while_the_first_is_alive() {
        let dir = tempfile::tempdir().unwrap();
        let first = FsStorage::open(dir.path()).unwrap();
        match FsStorage::open(dir.path()) {
            Err(StorageError::Backend(message)) => {
                assert!(
                    message.contains("store is locked by another process"),
                    "{message}"
                );
            }
            other => panic!("expected a lock error, got {other:?}"),
        }
        drop(first);
        assert!(!dir.path().join("LOCK").exists());
        let reopened = FsStorage::open(dir.path()).unwrap();
        assert!(dir.path().join("LOCK").exists());
        drop(reopened);
    }

    #[test]
    fn an_unreadable_lock_is_respected() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("LOCK"), "not a pid").unwrap();
        assert!(matches!(
            FsStorage::open(dir.path()),
            Err(StorageError::Backend(_))
        ));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_lock_left_by_a_dead_process_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        // Above the kernel's pid limit (2^22), so never a live process.
        fs::write(dir.path().join("LOCK"), "4294967295").unwrap();
        let mut store = FsStorage::open(dir.path()).unwrap();
        store.commit(&batch(&[("k", Some(b"v"))])).unwrap();
        let holder = fs::read_to_string(dir.path().join("LOCK")).unwrap();
        assert_eq!(holder, std::process::id().to_string());
    }
}

// ------------------------------------ IndexedDB backend and browser tests

#[cfg(all(target_arch = "wasm32", feature = "js"))]
mod browser {
    use std::future::Future;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::task::{Context, Poll, Waker};

    use js_sys::{Array, Function, Object, Promise, Reflect, Uint8Array};
    use memtide::storage::{AsyncStorage, Expect, IndexedDbStorage};
    use wasm_bindgen::closure::Closure;
    use wasm_bindgen::{JsCast, JsValue};
    use wasm_bindgen_futures::JsFuture;
    use wasm_bindgen_test::wasm_bindgen_test;
    use web_sys::{Event, IdbDatabase, IdbFactory, IdbRequest};

    use super::*;

    static DATABASES: AtomicU32 = AtomicU32::new(0);

    /// A database name no other test (or earlier run) uses.
    fn unique_name(tag: &str) -> String {
        format!(
            "memtide-test-{tag}-{}-{}-{}",
            js_sys::Date::now(),
            DATABASES.fetch_add(1, Ordering::Relaxed),
            (js_sys::Math::random() * 1e9) as u64
        )
    }

    impl Backend for IndexedDbStorage {
        async fn fresh() -> Self {
            IndexedDbStorage::open(&unique_name("suite")).await.unwrap()
        }

        /// Closes the connection and opens the database again by name.
        async fn reopen(self) -> Self {
            let name = self.name().to_string();
            self.close();
            drop(self);
            IndexedDbStorage::open(&name).await.unwrap()
        }

        /// Every key and value of the object store, read through a
        /// connection of its own.
        async fn raw_contents(&self) -> Vec<Vec<u8>> {
            raw_dump(self.name())
                .await
                .into_iter()
                .map(|(key, value)| [key.as_bytes(), &value].concat())
                .collect()
        }
    }

    // ------------------------------------------- raw IndexedDB access

    fn factory() -> IdbFactory {
        Reflect::get(&js_sys::global(), &"indexedDB".into())
            .unwrap()
            .unchecked_into()
    }

    /// The request's result, or its error.
    async fn settle(request: &IdbRequest) -> Result<JsValue, JsValue> {
        let mut functions = None;
        let promise = Promise::new(&mut |resolve, reject| functions = Some((resolve, reject)));
        let (resolve, reject) = functions.unwrap();
        let on_success = {
            let request = request.clone();
            Closure::<dyn FnMut(Event)>::new(move |_: Event| {
                resolve
                    .call1(&JsValue::UNDEFINED, &request.result().unwrap())
                    .unwrap();
            })
        };
        let on_error = {
            let request = request.clone();
            Closure::<dyn FnMut(Event)>::new(move |event: Event| {
                event.prevent_default();
                let error = request
                    .error()
                    .unwrap()
                    .map_or(JsValue::NULL, JsValue::from);
                reject.call1(&JsValue::UNDEFINED, &error).unwrap();
            })
        };
        request.set_onsuccess(Some(on_success.as_ref().unchecked_ref()));
        request.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        let result = JsFuture::from(promise).await;
        request.set_onsuccess(None);
        request.set_onerror(None);
        result
    }

    /// Opens `name` at `version` (the current one when `None`), creating
    /// `stores` if an upgrade runs.
    async fn raw_open(name: &str, version: Option<u32>, stores: &[&str]) -> IdbDatabase {
        let request = match version {
            Some(version) => factory().open_with_u32(name, version),
            None => factory().open(name),
        }
        .unwrap();
        let on_upgrade = {
            let request = request.clone();
            let stores: Vec<String> = stores.iter().map(|s| s.to_string()).collect();
            Closure::<dyn FnMut(Event)>::new(move |_: Event| {
                let db: IdbDatabase = request.result().unwrap().unchecked_into();
                for store in &stores {
                    db.create_object_store(store).unwrap();
                }
            })
        };
        request.set_onupgradeneeded(Some(on_upgrade.as_ref().unchecked_ref()));
        let db = settle(&request).await.unwrap().unchecked_into();
        request.set_onupgradeneeded(None);
        db
    }

    /// Every pair of the `kv` store of `name`, in IndexedDB's key order; a
    /// value that is not bytes reads as `typeof value`.
    async fn raw_dump(name: &str) -> Vec<(String, Vec<u8>)> {
        let db = raw_open(name, None, &[]).await;
        let read = |all_keys: bool| {
            let store = db
                .transaction_with_str("kv")
                .unwrap()
                .object_store("kv")
                .unwrap();
            if all_keys {
                store.get_all_keys().unwrap()
            } else {
                store.get_all().unwrap()
            }
        };
        let keys: Array = settle(&read(true)).await.unwrap().unchecked_into();
        let values: Array = settle(&read(false)).await.unwrap().unchecked_into();
        db.close();
        assert_eq!(keys.length(), values.length());
        keys.iter()
            .zip(values.iter())
            .map(|(key, value)| {
                let bytes = match value.dyn_ref::<Uint8Array>() {
                    Some(array) => array.to_vec(),
                    None => value.js_typeof().as_string().unwrap().into_bytes(),
                };
                (key.as_string().unwrap(), bytes)
            })
            .collect()
    }

    /// Puts `value` (any JavaScript value) under `key`, bypassing memtide.
    async fn raw_put(name: &str, key: &str, value: &JsValue) {
        let db = raw_open(name, None, &[]).await;
        let tx = db
            .transaction_with_str_and_mode("kv", web_sys::IdbTransactionMode::Readwrite)
            .unwrap();
        let request = tx
            .object_store("kv")
            .unwrap()
            .put_with_key(value, &key.into());
        settle(&request.unwrap()).await.unwrap();
        // Closing waits for the transaction; later transactions see it.
        db.close();
    }

    fn pairs(entries: &[(&str, &[u8])]) -> Pairs {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_vec()))
            .collect()
    }

    fn manifest(value: &'static [u8]) -> Expect<'static> {
        Expect {
            key: "meta/manifest",
            value: Some(value),
        }
    }

    // --------------------------------------------------------- tests

    #[wasm_bindgen_test]
    async fn reopen_after_close_restores_exact_state() {
        let name = unique_name("reopen");
        let mut store = IndexedDbStorage::open(&name).await.unwrap();
        let first = batch(&[
            ("item/a", Some(b"1")),
            ("item/\u{1f600}", Some(b"smile")),
            ("item/\u{e000}", Some(b"")),
            ("meta/manifest", Some(&[0, 255, 7])),
        ]);
        commit(&mut store, &first).await.unwrap();
        let second = batch(&[
            ("item/a", Some(b"one")),
            ("item/b", Some(b"")),
            ("item/\u{e000}", None),
        ]);
        commit(&mut store, &second).await.unwrap();
        let state = store.scan("").await.unwrap();
        let expected = pairs(&[
            ("item/a", b"one"),
            ("item/b", b""),
            ("item/\u{1f600}", b"smile"),
            ("meta/manifest", &[0, 255, 7]),
        ]);
        assert_eq!(state, expected);
        let raw = raw_dump(&name).await;
        assert_eq!(raw.len(), 4);
        let db = raw_open(&name, None, &[]).await;
        assert_eq!(db.version(), f64::from(IndexedDbStorage::SCHEMA_VERSION));
        let stores = db.object_store_names();
        assert_eq!(stores.length(), 1);
        assert!(stores.contains(IndexedDbStorage::STORE));
        db.close();

        store.close();
        match store.get("item/a").await {
            Err(StorageError::Backend(message)) => assert!(message.contains("closed"), "{message}"),
            other => panic!("expected a closed-connection error, got {other:?}"),
        }
        let late = batch(&[("item/late", Some(b"x"))]);
        assert!(matches!(
            commit(&mut store, &late).await,
            Err(StorageError::Backend(_))
        ));
        drop(store);

        let store = IndexedDbStorage::open(&name).await.unwrap();
        assert_eq!(store.scan("").await.unwrap(), expected);
        for (key, value) in &expected {
            assert_eq!(store.get(key).await.unwrap().as_ref(), Some(value), "{key}");
        }
        assert_eq!(store.get("item/\u{e000}").await.unwrap(), None);
        assert_eq!(raw_dump(&name).await, raw);
        drop(store);
        IndexedDbStorage::delete_database(&name).await.unwrap();
    }

    /// Two connections to one database are two tabs: a commit whose
    /// expectation another tab invalidated is refused whole, and of two
    /// racing commits on the same expectation exactly one applies.
    #[wasm_bindgen_test]
    async fn a_failed_expectation_writes_nothing_across_connections() {
        let name = unique_name("tabs");
        let mut tab_a = IndexedDbStorage::open(&name).await.unwrap();
        let mut tab_b = IndexedDbStorage::open(&name).await.unwrap();
        let absent = Expect {
            key: "meta/manifest",
            value: None,
        };
        let v1 = batch(&[("meta/manifest", Some(b"v1")), ("item/1", Some(b"one"))]);
        tab_a.commit(&v1, Some(absent)).await.unwrap();
        let v2 = batch(&[("meta/manifest", Some(b"v2")), ("item/2", Some(b"two"))]);
        tab_b.commit(&v2, Some(manifest(b"v1"))).await.unwrap();

        // Tab A still believes the manifest is v1.
        let stale = batch(&[
            ("item/1", None),
            ("item/3", Some(b"three")),
            ("meta/manifest", Some(b"v2 from a")),
        ]);
        match tab_a.commit(&stale, Some(manifest(b"v1"))).await {
            Err(StorageError::Conflict(message)) => {
                assert!(message.contains("meta/manifest"), "{message}")
            }
            other => panic!("expected a conflict, got {other:?}"),
        }
        let expected = pairs(&[
            ("item/1", b"one"),
            ("item/2", b"two"),
            ("meta/manifest", b"v2"),
        ]);
        assert_eq!(tab_a.scan("").await.unwrap(), expected);
        assert_eq!(tab_b.scan("").await.unwrap(), expected);
        assert_eq!(raw_dump(&name).await, expected);

        // Both tabs commit at once, both expecting v2.
        let from_a = batch(&[("meta/manifest", Some(b"v3 a")), ("item/a", Some(b"a"))]);
        let from_b = batch(&[("meta/manifest", Some(b"v3 b")), ("item/b", Some(b"b"))]);
        let (a, b) = futures_util::future::join(
            tab_a.commit(&from_a, Some(manifest(b"v2"))),
            tab_b.commit(&from_b, Some(manifest(b"v2"))),
        )
        .await;
        let (winner, loser, manifest_value) = match (a, b) {
            (Ok(()), Err(StorageError::Conflict(_))) => ("item/a", "item/b", &b"v3 a"[..]),
            (Err(StorageError::Conflict(_)), Ok(())) => ("item/b", "item/a", &b"v3 b"[..]),
            other => panic!("expected one commit and one conflict, got {other:?}"),
        };
        let raw = raw_dump(&name).await;
        let raw_keys = keys(&raw);
        assert!(
            raw_keys.contains(&winner) && !raw_keys.contains(&loser),
            "{raw_keys:?}"
        );
        assert_eq!(
            tab_b.get("meta/manifest").await.unwrap().as_deref(),
            Some(manifest_value)
        );
        assert_eq!(tab_a.scan("").await.unwrap(), raw);
        drop((tab_a, tab_b));
        IndexedDbStorage::delete_database(&name).await.unwrap();
    }

    #[wasm_bindgen_test]
    async fn an_aborted_transaction_writes_nothing() {
        let name = unique_name("abort");
        let mut store = IndexedDbStorage::open(&name).await.unwrap();
        let base = batch(&[("item/1", Some(b"one")), ("meta/manifest", Some(b"v1"))]);
        commit(&mut store, &base).await.unwrap();
        let before = raw_dump(&name).await;

        // A commit dropped after it issued its writes aborts its transaction.
        let mut big = Batch::new();
        for i in 0..1000 {
            big.put(format!("item/big/{i:04}"), vec![7; 1000]);
        }
        big.delete("item/1");
        big.put("meta/manifest", b"v2".to_vec());
        {
            let mut pending = std::pin::pin!(store.commit(&big, None));
            let poll = pending
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop()));
            assert!(matches!(poll, Poll::Pending));
        }
        assert_eq!(raw_dump(&name).await, before);
        assert_eq!(store.scan("").await.unwrap(), before);

        // A failure inside the transaction, after its read: the expected key
        // holds something that is not bytes, so the check fails and aborts.
        raw_put(&name, "meta/odd", &JsValue::from_str("not bytes")).await;
        let before = raw_dump(&name).await;
        let odd = Expect {
            key: "meta/odd",
            value: None,
        };
        match store.commit(&big, Some(odd)).await {
            Err(StorageError::Corrupt(message)) => {
                assert!(message.contains("meta/odd"), "{message}")
            }
            other => panic!("expected Corrupt, got {other:?}"),
        }
        assert_eq!(raw_dump(&name).await, before);
        // The same batch commits once the expectation is one that holds.
        store.commit(&big, Some(manifest(b"v1"))).await.unwrap();
        assert_eq!(store.scan("item/big/").await.unwrap().len(), 1000);
        assert_eq!(store.get("item/1").await.unwrap(), None);
        drop(store);
        IndexedDbStorage::delete_database(&name).await.unwrap();
    }

    fn dom_exception(message: &str, name: &str) -> JsValue {
        let constructor: Function = Reflect::get(&js_sys::global(), &"DOMException".into())
            .unwrap()
            .unchecked_into();
        Reflect::construct(&constructor, &Array::of2(&message.into(), &name.into())).unwrap()
    }

    #[wasm_bindgen_test]
    fn dom_exception_names_map_to_storage_errors() {
        let map = IndexedDbStorage::storage_error;
        let quota = dom_exception("the disk is full", "QuotaExceededError");
        match map("committing", &quota) {
            StorageError::QuotaExceeded(message) => {
                assert!(message.starts_with("committing: "), "{message}");
                assert!(
                    message.contains("QuotaExceededError: the disk is full"),
                    "{message}"
                );
                assert!(message.contains("nothing was written"), "{message}");
            }
            other => panic!("expected QuotaExceeded, got {other:?}"),
        }
        // The legacy numeric code of a quota error, whatever the name.
        let legacy = Object::new();
        Reflect::set(
            &legacy,
            &"name".into(),
            &"NS_ERROR_DOM_QUOTA_REACHED".into(),
        )
        .unwrap();
        Reflect::set(&legacy, &"code".into(), &22.into()).unwrap();
        assert!(matches!(
            map("committing", &legacy),
            StorageError::QuotaExceeded(_)
        ));

        let backend = |error: &JsValue| match map("opening", error) {
            StorageError::Backend(message) => message,
            other => panic!("expected Backend, got {other:?}"),
        };
        let version = backend(&dom_exception("requested 1, have 2", "VersionError"));
        assert!(
            version.contains("VersionError: requested 1, have 2"),
            "{version}"
        );
        assert!(version.contains("newer version of memtide"), "{version}");
        let closed = backend(&dom_exception("closing", "InvalidStateError"));
        assert!(closed.contains("open the store again"), "{closed}");
        let unknown = backend(&dom_exception("io", "UnknownError"));
        assert!(unknown.contains("UnknownError: io"), "{unknown}");
        let constraint = backend(&dom_exception("dup", "ConstraintError"));
        assert_eq!(constraint, "opening: ConstraintError: dup");
        let type_error = backend(&js_sys::TypeError::new("not a function").into());
        assert_eq!(type_error, "opening: TypeError: not a function");
        assert!(backend(&JsValue::NULL).contains("no error was reported"));
        assert!(backend(&JsValue::from_str("plain text")).contains("plain text"));
    }

    /// A real `QuotaExceededError`: `webdriver.json` caps Chromium's storage
    /// pool at 256 MiB (`--enable-features=StorageQuotaSettings:
    /// PoolSizeBytes/268435456`, so 192 MiB for this origin). Commits of
    /// 8 MiB (incompressible) go in until one fails: it must be
    /// `QuotaExceeded` and leave the store as it was.
    #[wasm_bindgen_test]
    async fn a_real_quota_error_is_quota_exceeded_and_writes_nothing() {
        const CHUNK: usize = 8 << 20;
        const LIMIT_MIB: usize = 1024;
        let name = unique_name("quota");
        let mut store = IndexedDbStorage::open(&name).await.unwrap();
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut noise = |len: usize| -> Vec<u8> {
            let mut bytes = Vec::with_capacity(len + 8);
            while bytes.len() < len {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                bytes.extend_from_slice(&seed.to_le_bytes());
            }
            bytes.truncate(len);
            bytes
        };
        let mut committed = 0;
        let error = loop {
            assert!(
                committed * CHUNK < LIMIT_MIB << 20,
                "no quota error after {LIMIT_MIB} MiB: is the quota cap of webdriver.json in effect?"
            );
            let chunk = batch(&[
                (&format!("item/chunk/{committed:04}"), Some(&noise(CHUNK))),
                ("meta/manifest", Some(format!("{committed}").as_bytes())),
            ]);
            match commit(&mut store, &chunk).await {
                Ok(()) => committed += 1,
                Err(error) => break error,
            }
        };
        match error {
            StorageError::QuotaExceeded(message) => {
                assert!(message.contains("QuotaExceededError"), "{message}")
            }
            other => panic!("expected QuotaExceeded, got {other:?}"),
        }
        assert!(committed > 0, "the first 8 MiB should fit");
        let last = (committed - 1).to_string();
        assert_eq!(
            store.get("meta/manifest").await.unwrap().as_deref(),
            Some(last.as_bytes())
        );
        let chunks = store.scan("item/chunk/").await.unwrap();
        assert_eq!(chunks.len(), committed);
        assert_eq!(
            keys(&chunks).last().copied(),
            Some(format!("item/chunk/{:04}", committed - 1).as_str())
        );
        // Deleting the database gives the space back.
        drop(store);
        IndexedDbStorage::delete_database(&name).await.unwrap();
        let mut store = IndexedDbStorage::open(&name).await.unwrap();
        let again = batch(&[("item/chunk/0000", Some(&noise(CHUNK)))]);
        commit(&mut store, &again).await.unwrap();
        drop(store);
        IndexedDbStorage::delete_database(&name).await.unwrap();
    }

    /// Another connection deleting (or upgrading) the database makes this
    /// one close itself instead of blocking it.
    #[wasm_bindgen_test]
    async fn a_versionchange_closes_the_connection() {
        let name = unique_name("versionchange");
        let mut store = IndexedDbStorage::open(&name).await.unwrap();
        commit(&mut store, &batch(&[("item/1", Some(b"one"))]))
            .await
            .unwrap();
        IndexedDbStorage::delete_database(&name).await.unwrap();
        match store.get("item/1").await {
            Err(StorageError::Backend(message)) => assert!(message.contains("closed"), "{message}"),
            other => panic!("expected a closed-connection error, got {other:?}"),
        }
        let store = IndexedDbStorage::open(&name).await.unwrap();
        assert!(store.scan("").await.unwrap().is_empty());
        drop(store);
        IndexedDbStorage::delete_database(&name).await.unwrap();
    }

    #[wasm_bindgen_test]
    async fn a_foreign_or_newer_database_is_refused() {
        let foreign = unique_name("foreign");
        raw_open(&foreign, Some(1), &["other"]).await.close();
        match IndexedDbStorage::open(&foreign).await {
            Err(StorageError::Backend(message)) => {
                assert!(message.contains("not created by memtide"), "{message}")
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        let newer = unique_name("newer");
        raw_open(&newer, Some(2), &["kv"]).await.close();
        match IndexedDbStorage::open(&newer).await {
            Err(StorageError::Backend(message)) => {
                assert!(message.contains("VersionError"), "{message}");
                assert!(message.contains("newer version of memtide"), "{message}");
            }
            other => panic!("expected a version error, got {other:?}"),
        }
        IndexedDbStorage::delete_database(&foreign).await.unwrap();
        IndexedDbStorage::delete_database(&newer).await.unwrap();
    }

    #[wasm_bindgen_test]
    async fn open_without_an_indexeddb_global_is_a_clear_error() {
        let global = js_sys::global();
        let key = JsValue::from_str("indexedDB");
        let own = Object::get_own_property_descriptor(&global, &key);
        let hidden = Object::new();
        Reflect::set(&hidden, &"value".into(), &JsValue::UNDEFINED).unwrap();
        Reflect::set(&hidden, &"configurable".into(), &JsValue::TRUE).unwrap();
        Object::define_property(&global, &key, &hidden);
        let result = IndexedDbStorage::open("memtide-test-no-indexeddb").await;
        let deleted = IndexedDbStorage::delete_database("memtide-test-no-indexeddb").await;
        if own.is_undefined() {
            Reflect::delete_property(&global, &key).unwrap();
        } else {
            Object::define_property(&global, &key, &own.unchecked_into());
        }
        match result {
            Err(StorageError::Backend(message)) => {
                assert!(message.contains("no `indexedDB`"), "{message}")
            }
            other => panic!("expected a Backend error, got {other:?}"),
        }
        assert!(matches!(deleted, Err(StorageError::Backend(_))));
        assert!(factory().is_object());
    }

    #[wasm_bindgen_test]
    async fn request_persistence_answers() {
        let granted = IndexedDbStorage::request_persistence().await.unwrap();
        // Headless Chromium may grant or refuse; either is an answer.
        let _: bool = granted;
    }
}
