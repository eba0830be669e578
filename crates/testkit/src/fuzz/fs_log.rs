//! Target `fs_log`: opening a native directory store (`FsStorage`) whose
//! `store.log` holds untrusted bytes, then a `Memory` on it.
//!
//! The first byte picks a mode:
//! * even: the rest is the whole log;
//! * odd: the rest is read (with `arbitrary`) as batches to commit through
//!   `FsStorage` and a tail of garbage appended to the log after them, as a
//!   torn append or damage would leave it.
//!
//! Invariants: opening gives `Ok` or `StorageError::Corrupt`, never a panic
//! or another error; a store that opened reopens to the same pairs (the torn
//! tail it cut off stays cut); `Memory::open` on it gives `Ok`, `CORRUPT` or
//! `VERSION_MISMATCH`. In the odd mode a tail that does not start with a
//! frame's magic either is cut off (the committed batches are the state) or
//! makes the open fail as `Corrupt`.
//!
//! The directory lives in `/dev/shm` where it exists (no disk in the hot
//! loop), else in the system's temporary directory.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use arbitrary::{Arbitrary, Unstructured};
use memtide::storage::{Batch, FsStorage, Storage, StorageError};
use memtide::Memory;

use super::{assert_code, env};

/// The log file inside a store directory (`docs/format.md`, section 3).
const LOG_FILE: &str = "store.log";

/// One commit: puts (`Some`) and deletes of keys from a small set.
#[derive(Debug, Arbitrary)]
struct Commit(Vec<(u8, Option<Vec<u8>>)>);

/// See the module documentation.
pub fn check(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let dir = ScratchDir::new();
    if mode % 2 == 0 {
        fs::write(dir.0.join(LOG_FILE), rest).expect("write the log");
        open_and_check(&dir);
        return;
    }
    let mut input = Unstructured::new(rest);
    let Ok(commits) = Vec::<Commit>::arbitrary(&mut input) else {
        return;
    };
    let tail = input.take_rest();
    let mut model = BTreeMap::new();
    {
        let mut store = FsStorage::open(&dir.0).expect("a new store opens");
        for Commit(ops) in commits.iter().take(8) {
            let mut batch = Batch::new();
            for (key, value) in ops {
                let key = format!("k/{}", key % 16);
                match value {
                    Some(v) => batch.put(key, v.clone()),
                    None => batch.delete(key),
                }
            }
            store.commit(&batch).expect("a commit on tmpfs succeeds");
            for (key, value) in batch.ops() {
                match value {
                    Some(v) => model.insert(key.to_string(), v.to_vec()),
                    None => model.remove(key),
                };
            }
        }
    }
    let mut log = fs::OpenOptions::new()
        .append(true)
        .open(dir.0.join(LOG_FILE))
        .expect("open the log");
    log.write_all(tail).expect("append the tail");
    drop(log);
    if let Some(pairs) = open_and_check(&dir) {
        if !tail.starts_with(b"MNLG") {
            assert_eq!(pairs, model, "a garbage tail changed the committed state");
        }
    }
}

/// Opens the store, checks the invariants and returns its pairs when it
/// opened.
fn open_and_check(dir: &ScratchDir) -> Option<BTreeMap<String, Vec<u8>>> {
    let store = match FsStorage::open(&dir.0) {
        Ok(store) => store,
        Err(StorageError::Corrupt(_)) => return None,
        Err(other) => panic!("open failed with a non-CORRUPT error: {other:?}"),
    };
    let pairs: BTreeMap<_, _> = store.scan("").expect("scan").into_iter().collect();
    drop(store);
    let store = FsStorage::open(&dir.0).expect("a store that opened reopens");
    let again: BTreeMap<_, _> = store.scan("").expect("scan").into_iter().collect();
    assert_eq!(again, pairs, "reopening changed the pairs");
    if let Err(error) = Memory::open(store, env(), Default::default()) {
        assert_code(&error, &["CORRUPT", "VERSION_MISMATCH"], "Memory::open");
    }
    Some(pairs)
}

/// An empty directory, removed on drop.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new() -> ScratchDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let shm = PathBuf::from("/dev/shm");
        let base = if shm.is_dir() {
            shm
        } else {
            std::env::temp_dir()
        };
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("memtide-fuzz-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("create the scratch directory");
        ScratchDir(dir)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}
