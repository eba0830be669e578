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
use memtide::storage::{
    AsyncKeyValue, AsyncStorage, Batch, Expect, KvOp, KvStorage, StorageError, JOURNAL_PREFIX,
};
use memtide::AsyncMemory;

use super::{assert_code, block_on, env};

/// Keys of the journal (`docs/format.md`, section 4).
const COMMIT_KEY: &str = "journal/commit";
const FRAME_KEY_PREFIX: &str = "journal/op/";

/// An in-memory store of single-key writes whose writes fail from the
/// `fail_at`-th on (counting from 0).
#[derive(Debug, Default, Clone)]
pub struct Kv {
    map: BTreeMap<String, Vec<u8>>,
    writes: usize,
    fail_at: Option<usize>,
}

impl Kv {
    fn write(&mut self) -> Result<(), StorageError> {
        self.writes += 1;
        match self.fail_at {
            Some(at) if self.writes > at => Err(StorageError::Backend("injected failure".into())),
            _ => Ok(()),
        }
    }
}

impl AsyncKeyValue for Kv {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.map.get(key).cloned())
    }
    async fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        self.write()?;
        self.map.insert(key.to_string(), value.to_vec());
        Ok(())
    }
    async fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        self.write()?;
        self.map.remove(key);
        Ok(())
    }
    async fn list(&self, prefix: &str) -> Result<Vec<String>, StorageError> {
        Ok(self
            .map
            .keys()
            .filter(|k| k.starts_with(prefix))
            .cloned()
            .collect())
    }
    fn has_atomic_batch(&self) -> bool {
        false
    }
    async fn batch(&mut self, _: &[KvOp<'_>], _: Option<Expect<'_>>) -> Result<(), StorageError> {
        Err(StorageError::Backend("no atomic batch".into()))
    }
}

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
    let mut kv = Kv::default();
    for (key, value) in stored.pairs {
        let key = match key {
            Key::Commit => COMMIT_KEY.to_string(),
            Key::Frame(n) => format!("{FRAME_KEY_PREFIX}{:06}", n % 4),
            Key::Data(n) => format!("item/{}", n % 8),
            Key::Other(key) => key,
        };
        kv.map.insert(key, value);
    }
    if stored.seal {
        kv.map.insert(COMMIT_KEY.to_string(), commit_record(&kv.map));
    }
    let storage = match block_on(KvStorage::open(kv)) {
        Ok(storage) => storage,
        Err(StorageError::Corrupt(_)) => return,
        Err(other) => panic!("open failed with a non-CORRUPT error: {other:?}"),
    };
    let kv = storage.into_inner();
    assert!(
        !kv.map.keys().any(|k| k.starts_with(JOURNAL_PREFIX)),
        "a journal key survived the open"
    );
    let again = block_on(KvStorage::open(kv.clone())).expect("a recovered store reopens");
    assert_eq!(again.inner().map, kv.map, "reopening changed the store");
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
    let mut kv = Kv::default();
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
        kv.writes = 0;
        kv.fail_at = Some(usize::from(step.fail_at));
        let mut storage = block_on(KvStorage::open(kv.clone())).expect("the store opens");
        let committed = block_on(AsyncStorage::commit(&mut storage, &batch, None));
        // The host comes back: a new KvStorage over what the store holds.
        kv = storage.into_inner();
        kv.fail_at = None;
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
        kv = reopened.into_inner();
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
