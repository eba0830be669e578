//! Target `kv_journal`: `KvStorage` (the storage contract over a store with
//! single-key writes) and its roll-forward journal, over an in-memory
//! `AsyncKeyValue`.
//!
//! The first byte picks a mode:
//! * even: the rest is read (with `arbitrary`) as the store's pairs, keys
//!   under `journal/` included. With `seal` set the check writes a valid
//!   commit record (`docs/format.md`, section 4) over the `journal/op/`
//!   frames present, so the frames' decoder runs past the digest.
//!   `KvStorage::open` gives `Ok` (no `journal/` key is left, and opening
//!   again changes nothing) or `StorageError::Corrupt`; `Memory`'s open on
//!   it gives `Ok`, `CORRUPT` or `VERSION_MISMATCH`.
//! * odd: the rest is a list of batches committed one after the other,
//!   each with a write (counted from the commit's start) at which the store
//!   fails, as a crashed or failing host would. After every commit, a
//!   `KvStorage` opened on what the store holds shows the state before or
//!   after the batch, never a mixture, and exactly the state after when
//!   the commit returned `Ok`.

use std::collections::BTreeMap;

use arbitrary::{Arbitrary, Unstructured};
use memtide::storage::{AsyncStorage, Batch, KvStorage, StorageError, JOURNAL_PREFIX};
use memtide::AsyncMemory;

use super::{assert_code, env};
use crate::block_on;
use crate::faults::MapKv;

/// Keys of the journal (`docs/format.md`, section 4).
const COMMIT_KEY: &str = "journal/commit";
const FRAME_KEY_PREFIX: &str = "journal/op/";

/// A key of the even mode.
#[derive(Debug, Arbitrary)]
enum Key {
    Commit,
    Frame(u8),
    Data(u8),
    Other(String),
}

#[derive(Debug, Arbitrary)]
struct Stored {
    pairs: Vec<(Key, Vec<u8>)>,
    seal: bool,
}

/// A batch of the odd mode: ops on a few keys, and the write at which the
/// store starts failing (none when it is past the commit's writes).
#[derive(Debug, Arbitrary)]
struct Step {
    ops: Vec<(u8, Option<Vec<u8>>)>,
    fail_at: u8,
}

/// See the module documentation.
pub fn check(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let mut input = Unstructured::new(rest);
    if mode % 2 == 0 {
        if let Ok(stored) = Stored::arbitrary_take_rest(input) {
            check_stored(stored);
        }
    } else if let Ok(steps) = Vec::<Step>::arbitrary(&mut input) {
        check_steps(&steps);
    }
}

fn check_stored(stored: Stored) {
    let kv: MapKv = MapKv::default();
    for (key, value) in stored.pairs {
        let key = match key {
            Key::Commit => COMMIT_KEY.to_string(),
            Key::Frame(n) => format!("{FRAME_KEY_PREFIX}{:06}", n % 4),
            Key::Data(n) => format!("item/{}", n % 8),
            Key::Other(key) => key,
        };
        kv.insert(key, value);
    }
    if stored.seal {
        let record = commit_record(&kv.map());
        kv.insert(COMMIT_KEY.to_string(), record);
    }
    let storage = match block_on(KvStorage::open(kv)) {
        Ok(storage) => storage,
        Err(StorageError::Corrupt(_)) => return,
        Err(other) => panic!("open failed with a non-CORRUPT error: {other:?}"),
    };
    let kv = storage.into_inner();
    assert!(
        !kv.map().keys().any(|k| k.starts_with(JOURNAL_PREFIX)),
        "a journal key survived the open"
    );
    let recovered = kv.map().clone();
    let again = block_on(KvStorage::open(kv)).expect("a recovered store reopens");
    assert_eq!(*again.inner().map(), recovered, "reopening changed the store");
    if let Err(error) = block_on(AsyncMemory::open(again, env(), Default::default())) {
        assert_code(&error, &["CORRUPT", "VERSION_MISMATCH"], "AsyncMemory::open");
    }
}

/// A valid commit record over the consecutive frames `journal/op/000000…`.
fn commit_record(map: &BTreeMap<String, Vec<u8>>) -> Vec<u8> {
    let mut frames = Vec::new();
    while let Some(frame) = map.get(&format!("{FRAME_KEY_PREFIX}{:06}", frames.len())) {
        frames.push(frame.as_slice());
    }
    let digest = sha256(&frames.concat());
    let mut record = b"MNJC".to_vec();
    record.extend_from_slice(&(frames.len() as u32).to_le_bytes());
    record.extend_from_slice(&digest);
    let crc = crc32(&record);
    record.extend_from_slice(&crc.to_le_bytes());
    record
}

fn check_steps(steps: &[Step]) {
    let kv: MapKv = MapKv::default();
    let mut state: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for step in steps.iter().take(16) {
        let mut batch = Batch::new();
        for (key, value) in &step.ops {
            let key = format!("item/{}", key % 8);
            match value {
                Some(v) => batch.put(key, v.clone()),
                None => batch.delete(key),
            }
        }
        let mut after = state.clone();
        for (key, value) in batch.ops() {
            match value {
                Some(v) => after.insert(key.to_string(), v.to_vec()),
                None => after.remove(key),
            };
        }
        // Clones of `kv` share its map: each `KvStorage` below is another
        // host process on the same store.
        kv.trigger().arm_sticky(usize::from(step.fail_at));
        let mut storage = block_on(KvStorage::open(kv.clone())).expect("the store opens");
        let committed = block_on(AsyncStorage::commit(&mut storage, &batch, None));
        // The host comes back: a new KvStorage over what the store holds.
        drop(storage);
        kv.trigger().disarm();
        let reopened = block_on(KvStorage::open(kv.clone())).expect("the store reopens");
        let seen: BTreeMap<_, _> = block_on(AsyncStorage::scan(&reopened, ""))
            .expect("scan")
            .into_iter()
            .collect();
        if committed.is_ok() {
            assert_eq!(seen, after, "a committed batch is not all there");
        } else {
            assert!(
                seen == state || seen == after,
                "a failed commit left a mixture"
            );
        }
        state = seen;
    }
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}

fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}
