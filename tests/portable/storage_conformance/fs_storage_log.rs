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
