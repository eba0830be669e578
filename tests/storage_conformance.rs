//! The storage contract (see `mnemo::storage`), checked against every backend.
//!
//! Each generic function below takes a [`Backend`]; `conformance_suite!`
//! instantiates all of them per backend. A new backend joins by implementing
//! [`Backend`] and adding one line to the macro call. The module `fs_storage_log`
//! at the end holds crash tests specific to `FsStorage` and its log format
//! (`docs/format.md`).

use std::collections::BTreeMap;

use mnemo::storage::{Batch, MemoryStorage, Storage, MAX_KEY_BYTES};

/// Key-value pairs as `scan` returns them.
type Pairs = Vec<(String, Vec<u8>)>;

/// A backend under test.
trait Backend: Storage + Sized {
    /// An empty store.
    fn fresh() -> Self;
    /// Closes the store and opens it again: what survives is what the backend
    /// persisted.
    fn reopen(self) -> Self;
    /// Every byte blob the backend controls (files, records), for the check
    /// that a deleted value is erased.
    fn raw_contents(&self) -> Vec<Vec<u8>>;
}

impl Backend for MemoryStorage {
    fn fresh() -> Self {
        MemoryStorage::new()
    }

    /// A memory store lives only in its value: reopening it is keeping it.
    fn reopen(self) -> Self {
        self
    }

    fn raw_contents(&self) -> Vec<Vec<u8>> {
        self.entries()
            .map(|(key, value)| [key.as_bytes(), value].concat())
            .collect()
    }
}

macro_rules! conformance_suite {
    ($($(#[$attr:meta])* $name:ident: $backend:ty,)*) => {$(
        $(#[$attr])*
        mod $name {
            use super::*;

            #[test]
            fn get_scan_and_commit_basics() {
                super::get_scan_and_commit_basics::<$backend>();
            }
            #[test]
            fn scan_is_prefix_exact_and_key_sorted() {
                super::scan_is_prefix_exact_and_key_sorted::<$backend>();
            }
            #[test]
            fn the_later_op_on_a_key_in_one_batch_wins() {
                super::the_later_op_on_a_key_in_one_batch_wins::<$backend>();
            }
            #[test]
            fn an_empty_batch_changes_nothing() {
                super::an_empty_batch_changes_nothing::<$backend>();
            }
            #[test]
            fn key_limits_are_enforced_before_anything_applies() {
                super::key_limits_are_enforced_before_anything_applies::<$backend>();
            }
            #[test]
            fn values_are_opaque_bytes() {
                super::values_are_opaque_bytes::<$backend>();
            }
            #[test]
            fn a_4_mib_value_round_trips() {
                super::a_4_mib_value_round_trips::<$backend>();
            }
            #[test]
            fn ten_thousand_keys_round_trip() {
                super::ten_thousand_keys_round_trip::<$backend>();
            }
            #[test]
            fn a_deleted_value_is_erased() {
                super::a_deleted_value_is_erased::<$backend>();
            }
            #[test]
            fn a_random_history_matches_a_model_across_reopens() {
                super::a_random_history_matches_a_model_across_reopens::<$backend>();
            }
        }
    )*};
}

conformance_suite! {
    memory_storage: MemoryStorage,
    #[cfg(feature = "fs")]
    fs_storage: fs_storage_log::FsBackend,
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

/// Asserts the store holds exactly `model`, through both `scan` and `get`.
fn assert_holds(store: &impl Storage, model: &BTreeMap<String, Vec<u8>>) {
    let expected: Pairs = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(store.scan("").unwrap(), expected);
    for (key, value) in model {
        assert_eq!(store.get(key).unwrap().as_ref(), Some(value), "key {key}");
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

// ---------------------------------------------------------- shared suite

fn get_scan_and_commit_basics<B: Backend>() {
    let mut store = B::fresh();
    assert_eq!(store.get("item/a").unwrap(), None);
    assert!(store.scan("").unwrap().is_empty());

    store
        .commit(&batch(&[("item/a", Some(b"1")), ("item/b", Some(b"2"))]))
        .unwrap();
    assert_eq!(store.get("item/a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(store.get("item/b").unwrap(), Some(b"2".to_vec()));
    assert_eq!(store.get("item/c").unwrap(), None);

    store
        .commit(&batch(&[
            ("item/a", Some(b"one")),
            ("item/b", None),
            ("item/never", None),
        ]))
        .unwrap();
    let expected = BTreeMap::from([("item/a".to_string(), b"one".to_vec())]);
    assert_holds(&store, &expected);
    let store = store.reopen();
    assert_holds(&store, &expected);
    assert_eq!(store.get("item/b").unwrap(), None);
}

fn scan_is_prefix_exact_and_key_sorted<B: Backend>() {
    let mut store = B::fresh();
    // Written out of order over two batches; values are the keys reversed.
    let first = ["itemx", "item/b", "é", "item", "meta/manifest"];
    let second = ["item/ab", "i", "item0", "item/", "item/a"];
    for group in [first, second] {
        let mut b = Batch::new();
        for key in group {
            b.put(key, key.bytes().rev().collect());
        }
        store.commit(&b).unwrap();
    }
    let check = |store: &B| {
        let all = store.scan("").unwrap();
        for (key, value) in &all {
            assert_eq!(*value, key.bytes().rev().collect::<Vec<u8>>());
        }
        assert_eq!(
            keys(&all),
            [
                "i",
                "item",
                "item/",
                "item/a",
                "item/ab",
                "item/b",
                "item0",
                "itemx",
                "meta/manifest",
                "é"
            ]
        );
        let scanned = |prefix: &str| store.scan(prefix).unwrap();
        assert_eq!(
            keys(&scanned("item/")),
            ["item/", "item/a", "item/ab", "item/b"]
        );
        assert_eq!(keys(&scanned("item/a")), ["item/a", "item/ab"]);
        assert_eq!(
            keys(&scanned("item")),
            ["item", "item/", "item/a", "item/ab", "item/b", "item0", "itemx"]
        );
        assert_eq!(keys(&scanned("é")), ["é"]);
        assert!(scanned("item/c").is_empty());
        assert!(scanned("zzz").is_empty());
    };
    check(&store);
    let mut store = store.reopen();
    check(&store);

    store.commit(&batch(&[("item/a", None)])).unwrap();
    assert_eq!(keys(&store.scan("item/a").unwrap()), ["item/ab"]);
    let store = store.reopen();
    assert_eq!(keys(&store.scan("item/a").unwrap()), ["item/ab"]);
}

fn the_later_op_on_a_key_in_one_batch_wins<B: Backend>() {
    let mut store = B::fresh();
    store
        .commit(&batch(&[
            ("put-then-delete", Some(b"old")),
            ("delete-then-put", Some(b"old")),
        ]))
        .unwrap();
    let mut b = Batch::new();
    b.put("put-then-delete", b"new".to_vec());
    b.delete("put-then-delete");
    b.delete("delete-then-put");
    b.put("delete-then-put", b"new".to_vec());
    b.put("put-then-put", b"first".to_vec());
    b.put("put-then-put", b"second".to_vec());
    store.commit(&b).unwrap();
    let expected = BTreeMap::from([
        ("delete-then-put".to_string(), b"new".to_vec()),
        ("put-then-put".to_string(), b"second".to_vec()),
    ]);
    assert_holds(&store, &expected);
    assert_holds(&store.reopen(), &expected);
}

fn an_empty_batch_changes_nothing<B: Backend>() {
    let mut store = B::fresh();
    store.commit(&Batch::new()).unwrap();
    assert!(store.scan("").unwrap().is_empty());
    store.commit(&batch(&[("k", Some(b"v"))])).unwrap();
    store.commit(&Batch::new()).unwrap();
    let expected = BTreeMap::from([("k".to_string(), b"v".to_vec())]);
    assert_holds(&store, &expected);
    assert_holds(&store.reopen(), &expected);
}

fn key_limits_are_enforced_before_anything_applies<B: Backend>() {
    let mut store = B::fresh();
    let longest_ascii = "k".repeat(MAX_KEY_BYTES);
    let longest_multibyte = "é".repeat(MAX_KEY_BYTES / 2);
    assert_eq!(longest_multibyte.len(), MAX_KEY_BYTES);
    store
        .commit(&batch(&[
            (&longest_ascii, Some(b"ascii")),
            (&longest_multibyte, Some(b"multibyte")),
            ("existing", Some(b"kept")),
        ]))
        .unwrap();
    let expected = BTreeMap::from([
        (longest_ascii.clone(), b"ascii".to_vec()),
        (longest_multibyte.clone(), b"multibyte".to_vec()),
        ("existing".to_string(), b"kept".to_vec()),
    ]);
    assert_holds(&store, &expected);

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
            store.commit(&rejected).is_err(),
            "key of {} bytes",
            bad.len()
        );
        assert_holds(&store, &expected);
        let deleting_bad = batch(&[("item/new", Some(b"new")), (bad, None)]);
        assert!(
            store.commit(&deleting_bad).is_err(),
            "delete of {} bytes",
            bad.len()
        );
        assert_holds(&store, &expected);
    }
    assert_holds(&store.reopen(), &expected);
}

fn values_are_opaque_bytes<B: Backend>() {
    let mut store = B::fresh();
    let every_byte: Vec<u8> = (0..=255).collect();
    let every_byte_reversed: Vec<u8> = (0..=255).rev().collect();
    store
        .commit(&batch(&[
            ("bytes", Some(&every_byte)),
            ("reversed", Some(&every_byte_reversed)),
            ("empty", Some(b"")),
            ("nul", Some(b"\0")),
        ]))
        .unwrap();
    assert_eq!(store.get("empty").unwrap(), Some(Vec::new()));
    let expected = BTreeMap::from([
        ("bytes".to_string(), every_byte.clone()),
        ("empty".to_string(), Vec::new()),
        ("nul".to_string(), vec![0]),
        ("reversed".to_string(), every_byte_reversed),
    ]);
    assert_holds(&store, &expected);
    let store = store.reopen();
    assert_holds(&store, &expected);
    assert_eq!(store.get("empty").unwrap(), Some(Vec::new()));
}

fn a_4_mib_value_round_trips<B: Backend>() {
    let mut store = B::fresh();
    let large: Vec<u8> = (0..4 << 20).map(|i: u32| (i % 251) as u8).collect();
    store
        .commit(&batch(&[("large", Some(&large)), ("small", Some(b"s"))]))
        .unwrap();
    assert_eq!(store.get("large").unwrap().as_ref(), Some(&large));
    let store = store.reopen();
    assert_eq!(store.get("large").unwrap().as_ref(), Some(&large));
    assert_eq!(store.get("small").unwrap(), Some(b"s".to_vec()));
}

fn ten_thousand_keys_round_trip<B: Backend>() {
    let mut store = B::fresh();
    let mut model = BTreeMap::new();
    // Ten batches, written in descending key order.
    for chunk in (0..10u32).rev() {
        let mut b = Batch::new();
        for i in (chunk * 1000..(chunk + 1) * 1000).rev() {
            let key = format!("item/{i:05}");
            b.put(key.clone(), i.to_le_bytes().to_vec());
            model.insert(key, i.to_le_bytes().to_vec());
        }
        store.commit(&b).unwrap();
    }
    assert_eq!(store.scan("").unwrap().len(), 10_000);
    assert_holds(&store, &model);
    let store = store.reopen();
    assert_holds(&store, &model);
    let tail = store.scan("item/0999").unwrap();
    let expected: Vec<String> = (9990..10_000).map(|i| format!("item/{i:05}")).collect();
    assert_eq!(keys(&tail), expected);
}

fn a_deleted_value_is_erased<B: Backend>() {
    const MARKER: &[u8] = b"erase-me-5b0c9f1e-marker";
    let mut store = B::fresh();
    let secret = |version: u8| [b"\x00prefix".as_slice(), MARKER, &[version]].concat();
    store
        .commit(&batch(&[
            ("item/secret", Some(&secret(1))),
            ("item/keep", Some(b"k")),
        ]))
        .unwrap();
    store
        .commit(&batch(&[("item/secret", Some(&secret(2)))]))
        .unwrap();
    store.commit(&batch(&[("item/other", Some(b"o"))])).unwrap();
    assert!(
        store
            .raw_contents()
            .iter()
            .any(|blob| contains(blob, MARKER)),
        "the marker must be found before the delete for this test to mean anything"
    );

    store
        .commit(&batch(&[("item/secret", None), ("item/more", Some(b"m"))]))
        .unwrap();
    let erased = |store: &B| {
        assert!(!store
            .raw_contents()
            .iter()
            .any(|blob| contains(blob, MARKER)));
        assert_eq!(store.get("item/secret").unwrap(), None);
        assert_eq!(
            keys(&store.scan("item/").unwrap()),
            ["item/keep", "item/more", "item/other"]
        );
    };
    erased(&store);
    erased(&store.reopen());
}

/// Mixed puts, overwrites and deletes from a fixed-seed generator, checked
/// against a `BTreeMap` after every commit and after reopens.
fn a_random_history_matches_a_model_across_reopens<B: Backend>() {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |bound: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % bound
    };
    let mut store = B::fresh();
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
        store.commit(&b).unwrap();
        model = effect;
        assert_holds(&store, &model);
        if round % 10 == 9 {
            store = store.reopen();
            assert_holds(&store, &model);
        }
    }
}

// ------------------------------------- FsStorage backend and crash tests

#[cfg(feature = "fs")]
mod fs_storage_log {
    use std::fs;
    use std::path::{Path, PathBuf};

    use mnemo::storage::{FsStorage, StorageError};

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
        fn fresh() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let store = FsStorage::open(dir.path()).unwrap();
            FsBackend { store, dir }
        }

        fn reopen(self) -> Self {
            let FsBackend { store, dir } = self;
            drop(store);
            let store = FsStorage::open(dir.path()).unwrap();
            FsBackend { store, dir }
        }

        fn raw_contents(&self) -> Vec<Vec<u8>> {
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
