//! [`KvStorage`]: the storage contract on top of a key-value store that may
//! only have single-key writes ([`AsyncKeyValue`]) — a JavaScript object
//! `{get, put, delete, list}`, Cloudflare KV, Deno KV, `localStorage`.
//!
//! When the store applies a batch atomically ([`AsyncKeyValue::batch`]), a
//! commit is that one call, and a store that can compare-and-set checks the
//! commit's [`Expect`]ation in it (safe with several writers, like Deno KV's
//! `atomic().check()`). Otherwise — or when the store answers that a batch
//! is too large to apply atomically ([`StorageError::BatchTooLarge`]) — a
//! commit of more than one op is made all-or-nothing by a roll-forward
//! journal (`docs/format.md`, section 4):
//!
//! 1. the ops are written as frames under `journal/op/<n>`;
//! 2. the commit record `journal/commit` (frame count and SHA-256 of the
//!    frames) is written: **this single-key put is the commit point**;
//! 3. the ops are applied one key at a time;
//! 4. the commit record, then the frames, are deleted.
//!
//! A failure before the commit point removes what was written and returns the
//! error: nothing changed. A failure after it returns `Ok` (the batch is
//! durable): until the batch is applied in full, this [`KvStorage`]'s reads
//! see it over the store's keys, and its next commit (or
//! [`KvStorage::open`], after a crash) finishes it first. A reader therefore
//! sees the whole batch or none of it, provided one writer at a time uses the
//! store (the journal is not a lock between processes).

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use super::frame::{encode_frame, intact_frame_len, parse_frame, Op};
use super::join::join_all;
use super::{AsyncStorage, Batch, Expect, StorageError};
pub use crate::keys::JOURNAL_PREFIX;
use crate::keys::{JOURNAL_COMMIT_KEY, JOURNAL_FRAME_PREFIX};

/// Op bytes per journal frame (an op larger than this gets a frame alone).
const JOURNAL_FRAME_BYTES: usize = 1 << 20;
/// Magic of the commit record.
const COMMIT_MAGIC: [u8; 4] = *b"MNJC";
/// Magic, frame count, SHA-256 of the frames, CRC-32.
const COMMIT_RECORD_LEN: usize = 4 + 4 + 32 + 4;

/// One single-key write: a put (`Some(value)`) or a delete.
pub type KvOp<'a> = (&'a str, Option<&'a [u8]>);

/// A key-value store with single-key operations, the host side of
/// [`KvStorage`]. Keys and values follow the [`super`] contract; `list` may be
/// eventually consistent (a listed key that `get` no longer finds is skipped).
#[allow(async_fn_in_trait)]
pub trait AsyncKeyValue {
    /// The value under `key`, if any.
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError>;
    /// Sets `key` to `value`, durably, before returning.
    async fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError>;
    /// Removes `key` (a missing key is not an error).
    async fn delete(&mut self, key: &str) -> Result<(), StorageError>;
    /// The keys starting with `prefix`, in any order.
    async fn list(&self, prefix: &str) -> Result<Vec<String>, StorageError>;
    /// True when [`AsyncKeyValue::batch`] applies a list of ops atomically.
    fn has_atomic_batch(&self) -> bool;
    /// Applies every op or none; only called when
    /// [`AsyncKeyValue::has_atomic_batch`] is true. A store that can
    /// compare-and-set applies the ops only if `expect` holds, else fails
    /// with [`StorageError::Conflict`] (others may ignore it: [`KvStorage`]
    /// has checked it just before). A batch the store cannot apply
    /// atomically (too many or too large ops) fails with
    /// [`StorageError::BatchTooLarge`], having changed nothing.
    async fn batch(
        &mut self,
        ops: &[KvOp<'_>],
        expect: Option<Expect<'_>>,
    ) -> Result<(), StorageError>;
}

/// [`AsyncStorage`] over an [`AsyncKeyValue`]; see the module documentation.
#[derive(Debug)]
pub struct KvStorage<K> {
    kv: K,
    /// The ops of a committed journal not yet applied in full (a write
    /// failed while applying it): reads see them over the store's keys, and
    /// the next commit finishes the journal first.
    pending: Option<BTreeMap<String, Option<Vec<u8>>>>,
}

impl<K: AsyncKeyValue> KvStorage<K> {
    /// Wraps `kv`, first finishing or discarding a journal a crashed writer
    /// left behind.
    pub async fn open(kv: K) -> Result<KvStorage<K>, StorageError> {
        let mut storage = KvStorage { kv, pending: None };
        storage.recover().await?;
        Ok(storage)
    }

    /// The wrapped store.
    pub fn inner(&self) -> &K {
        &self.kv
    }

    /// Hands back the wrapped store.
    pub fn into_inner(self) -> K {
        self.kv
    }

    /// Finishes the pending journal, if there is one.
    async fn finish(&mut self) -> Result<(), StorageError> {
        match self.pending {
            Some(_) => self.recover().await,
            None => Ok(()),
        }
    }

    /// Applies a committed journal if there is one, then removes every
    /// journal key.
    async fn recover(&mut self) -> Result<(), StorageError> {
        if let Some(record) = self.kv.get(JOURNAL_COMMIT_KEY).await? {
            let (count, digest) = decode_commit_record(&record)?;
            let mut frames = Vec::with_capacity(count);
            let mut hasher = Sha256::new();
            for n in 0..count {
                let frame = self.kv.get(&frame_key(n)).await?.ok_or_else(|| {
                    StorageError::Corrupt(format!("journal frame {n} of {count} is missing"))
                })?;
                hasher.update(&frame);
                frames.push(frame);
            }
            if hasher.finalize().as_slice() != digest {
                return Err(StorageError::Corrupt(
                    "the journal's frames do not match its commit record".into(),
                ));
            }
            for frame in &frames {
                for (key, value) in decode_journal_frame(frame)? {
                    self.apply_one(key, value).await?;
                }
            }
            self.kv.delete(JOURNAL_COMMIT_KEY).await?;
        }
        for key in self.kv.list(JOURNAL_PREFIX).await? {
            self.kv.delete(&key).await?;
        }
        self.pending = None;
        Ok(())
    }

    async fn apply_one(&mut self, key: &str, value: Option<&[u8]>) -> Result<(), StorageError> {
        match value {
            Some(v) => self.kv.put(key, v).await,
            None => self.kv.delete(key).await,
        }
    }

    /// Writes the journal of `ops` up to and including its commit record.
    /// On failure, removes what it wrote (best effort) and returns the error.
    async fn write_journal(&mut self, ops: &[Op<'_>]) -> Result<(), StorageError> {
        let frames = journal_frames(ops)?;
        let mut hasher = Sha256::new();
        let mut written = 0;
        let mut result = Ok(());
        for frame in &frames {
            hasher.update(frame);
            result = self.kv.put(&frame_key(written), frame).await;
            if result.is_err() {
                break;
            }
            written += 1;
        }
        if result.is_ok() {
            let record = encode_commit_record(frames.len(), hasher.finalize().into());
            result = self.kv.put(JOURNAL_COMMIT_KEY, &record).await;
        }
        if result.is_err() {
            for n in 0..written {
                let _ = self.kv.delete(&frame_key(n)).await;
            }
        }
        result
    }
}

impl<K: AsyncKeyValue> AsyncStorage for KvStorage<K> {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        if let Some(value) = self.pending.as_ref().and_then(|ops| ops.get(key)) {
            return Ok(value.clone());
        }
        self.kv.get(key).await
    }

    /// Every key's read started at once: an adapter's reads each travel to
    /// its store (Workers KV, Deno KV), so the segments an open reads take
    /// one round trip instead of one each.
    async fn get_many(&self, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>, StorageError> {
        join_all(keys.iter().map(|key| self.get(key)))
            .await
            .into_iter()
            .collect()
    }

    async fn scan(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        let mut keys = self.kv.list(prefix).await?;
        if let Some(ops) = &self.pending {
            keys.extend(ops.keys().cloned());
        }
        keys.retain(|k| k.starts_with(prefix) && !k.starts_with(JOURNAL_PREFIX));
        keys.sort_unstable();
        keys.dedup();
        let mut pairs = Vec::with_capacity(keys.len());
        for key in keys {
            if let Some(value) = self.get(&key).await? {
                pairs.push((key, value));
            }
        }
        Ok(pairs)
    }

    async fn commit(
        &mut self,
        batch: &Batch,
        expect: Option<Expect<'_>>,
    ) -> Result<(), StorageError> {
        batch.validate_keys()?;
        for (key, _) in batch.ops() {
            if key.starts_with(JOURNAL_PREFIX) {
                return Err(StorageError::Backend(format!(
                    "key `{key}` is under the reserved prefix `{JOURNAL_PREFIX}`"
                )));
            }
        }
        self.finish().await?;
        if let Some(expect) = expect {
            expect.check(self.kv.get(expect.key).await?.as_deref())?;
        }
        let ops: Vec<Op<'_>> = batch.ops().collect();
        match ops.as_slice() {
            [] => return Ok(()),
            // Through the batch even for one key when there is an
            // expectation: a store that can compare-and-set checks it in
            // the same atomic call (the manifest alone is the most common
            // commit, and two writers must not both pass a plain read).
            [(key, value)] if expect.is_none() || !self.kv.has_atomic_batch() => {
                return self.apply_one(key, *value).await
            }
            _ if self.kv.has_atomic_batch() => match self.kv.batch(&ops, expect).await {
                Err(StorageError::BatchTooLarge(_)) => {}
                other => return other,
            },
            _ => {}
        }
        self.write_journal(&ops).await?;
        // Committed. Whatever fails from here on is finished later.
        self.pending = Some(
            ops.iter()
                .map(|(key, value)| (key.to_string(), value.map(<[u8]>::to_vec)))
                .collect(),
        );
        let _ = self.recover().await;
        Ok(())
    }
}

fn frame_key(n: usize) -> String {
    format!("{JOURNAL_FRAME_PREFIX}{n:06}")
}

/// Splits ops into frames of at most [`JOURNAL_FRAME_BYTES`] op bytes.
fn journal_frames(ops: &[Op<'_>]) -> Result<Vec<Vec<u8>>, StorageError> {
    let mut frames = Vec::new();
    let mut start = 0;
    let mut bytes = 0usize;
    for (i, (key, value)) in ops.iter().enumerate() {
        let len = key.len() + value.map_or(0, <[u8]>::len);
        if i > start && bytes + len > JOURNAL_FRAME_BYTES {
            frames.push(encode_frame(&ops[start..i])?);
            start = i;
            bytes = 0;
        }
        bytes += len;
    }
    if start < ops.len() {
        frames.push(encode_frame(&ops[start..])?);
    }
    Ok(frames)
}

fn decode_journal_frame(frame: &[u8]) -> Result<Vec<Op<'_>>, StorageError> {
    let corrupt = |reason: String| StorageError::Corrupt(format!("journal frame: {reason}"));
    if intact_frame_len(frame) != Some(frame.len()) {
        return Err(corrupt("damaged or truncated".into()));
    }
    parse_frame(frame).map_err(corrupt)
}

fn encode_commit_record(frames: usize, digest: [u8; 32]) -> Vec<u8> {
    let mut record = Vec::with_capacity(COMMIT_RECORD_LEN);
    record.extend_from_slice(&COMMIT_MAGIC);
    // A journal has far fewer than 2^32 frames of a megabyte.
    record.extend_from_slice(&u32::try_from(frames).unwrap_or(u32::MAX).to_le_bytes());
    record.extend_from_slice(&digest);
    let crc = crc32fast::hash(&record);
    record.extend_from_slice(&crc.to_le_bytes());
    record
}

fn decode_commit_record(record: &[u8]) -> Result<(usize, [u8; 32]), StorageError> {
    let damaged = || StorageError::Corrupt("the journal's commit record is damaged".into());
    if record.len() != COMMIT_RECORD_LEN || record[..4] != COMMIT_MAGIC {
        return Err(damaged());
    }
    let (body, crc) = record.split_at(COMMIT_RECORD_LEN - 4);
    if crc32fast::hash(body).to_le_bytes() != crc {
        return Err(damaged());
    }
    let count = u32::from_le_bytes([body[4], body[5], body[6], body[7]]);
    let mut digest = [0u8; 32];
    digest.copy_from_slice(&body[8..40]);
    Ok((count as usize, digest))
}

#[cfg(test)]
mod tests {
    use std::cell::{Cell, RefCell};
    use std::collections::BTreeMap;
    use std::rc::Rc;

    use super::*;
    use crate::memory::block_on;

    /// An in-memory [`AsyncKeyValue`] whose `fail_at`-th write (put or
    /// delete, counting from 0) fails, and every later one too while
    /// `fail_after` is set (a process that died).
    #[derive(Clone)]
    struct FaultyKv {
        map: Rc<RefCell<BTreeMap<String, Vec<u8>>>>,
        writes: Rc<Cell<usize>>,
        fail_at: Option<usize>,
        atomic: bool,
        max_batch_ops: usize,
        /// Calls of `batch`.
        batches: Rc<Cell<usize>>,
        /// Reads started.
        reads: Rc<Cell<usize>>,
        /// When set, a read completes only once this many reads have
        /// started: reads made one after another never complete.
        read_gate: Option<usize>,
    }

    impl Default for FaultyKv {
        fn default() -> Self {
            FaultyKv {
                map: Rc::default(),
                writes: Rc::default(),
                fail_at: None,
                atomic: false,
                max_batch_ops: usize::MAX,
                batches: Rc::default(),
                reads: Rc::default(),
                read_gate: None,
            }
        }
    }

    impl FaultyKv {
        fn write(&mut self) -> Result<(), StorageError> {
            let n = self.writes.get();
            self.writes.set(n + 1);
            match self.fail_at {
                Some(at) if n >= at => Err(StorageError::Backend(format!("injected fault {n}"))),
                _ => Ok(()),
            }
        }

        fn snapshot(&self) -> BTreeMap<String, Vec<u8>> {
            self.map.borrow().clone()
        }
    }

    impl AsyncKeyValue for FaultyKv {
        async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
            self.reads.set(self.reads.get() + 1);
            if let Some(gate) = self.read_gate {
                let reads = self.reads.clone();
                std::future::poll_fn(|_| {
                    if reads.get() >= gate {
                        std::task::Poll::Ready(())
                    } else {
                        std::task::Poll::Pending
                    }
                })
                .await;
            }
            Ok(self.map.borrow().get(key).cloned())
        }
        async fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
            self.write()?;
            self.map.borrow_mut().insert(key.into(), value.to_vec());
            Ok(())
        }
        async fn delete(&mut self, key: &str) -> Result<(), StorageError> {
            self.write()?;
            self.map.borrow_mut().remove(key);
            Ok(())
        }
        async fn list(&self, prefix: &str) -> Result<Vec<String>, StorageError> {
            let map = self.map.borrow();
            Ok(map
                .keys()
                .filter(|k| k.starts_with(prefix))
                .cloned()
                .collect())
        }
        fn has_atomic_batch(&self) -> bool {
            self.atomic
        }
        async fn batch(
            &mut self,
            ops: &[KvOp<'_>],
            _expect: Option<Expect<'_>>,
        ) -> Result<(), StorageError> {
            self.batches.set(self.batches.get() + 1);
            if ops.len() > self.max_batch_ops {
                return Err(StorageError::BatchTooLarge(format!("{} ops", ops.len())));
            }
            self.write()?;
            let mut map = self.map.borrow_mut();
            for (key, value) in ops {
                match value {
                    Some(v) => map.insert(key.to_string(), v.to_vec()),
                    None => map.remove(*key),
                };
            }
            Ok(())
        }
    }

    fn batch(ops: &[(&str, Option<&[u8]>)]) -> Batch {
        let mut batch = Batch::new();
        for (key, value) in ops {
            match value {
                Some(v) => batch.put(*key, v.to_vec()),
                None => batch.delete(*key),
            }
        }
        batch
    }

    fn try_open(kv: FaultyKv) -> Result<KvStorage<FaultyKv>, StorageError> {
        block_on(KvStorage::open(kv)).unwrap()
    }

    fn open(kv: FaultyKv) -> KvStorage<FaultyKv> {
        try_open(kv).unwrap()
    }

    fn commit(store: &mut KvStorage<FaultyKv>, b: &Batch) -> Result<(), StorageError> {
        block_on(store.commit(b, None)).unwrap()
    }

    fn data(kv: &FaultyKv) -> BTreeMap<String, Vec<u8>> {
        let mut map = kv.snapshot();
        map.retain(|k, _| !k.starts_with(JOURNAL_PREFIX));
        map
    }

    #[test]
    fn a_fault_at_any_write_leaves_the_batch_whole_or_absent_after_reopen() {
        let before = batch(&[("a", Some(b"1")), ("b", Some(b"2")), ("gone", Some(b"x"))]);
        let big = vec![7u8; JOURNAL_FRAME_BYTES];
        let change = batch(&[
            ("a", Some(b"one")),
            ("big", Some(&big)),
            ("c", Some(b"3")),
            ("gone", None),
        ]);
        let mut expected_after = BTreeMap::new();
        for (k, v) in [("a", &b"one"[..]), ("b", b"2"), ("big", &big), ("c", b"3")] {
            expected_after.insert(k.to_string(), v.to_vec());
        }
        let mut saw = (false, false);
        for fail_at in 0..20 {
            let kv = FaultyKv::default();
            let mut store = open(kv.clone());
            commit(&mut store, &before).unwrap();
            let expected_before = data(&kv);
            kv.writes.set(0);
            store.kv.fail_at = Some(fail_at);
            let result = commit(&mut store, &change);
            // The process dies; a new one opens the same keys.
            let survivor = FaultyKv {
                map: kv.map.clone(),
                ..FaultyKv::default()
            };
            let reopened = open(survivor.clone());
            let state = data(&survivor);
            assert!(survivor
                .snapshot()
                .keys()
                .all(|k| !k.starts_with(JOURNAL_PREFIX)));
            if result.is_ok() {
                assert_eq!(state, expected_after, "fault at write {fail_at}");
                saw.1 = true;
            } else {
                assert_eq!(state, expected_before, "fault at write {fail_at}");
                saw.0 = true;
            }
            let scanned = block_on(reopened.scan("")).unwrap().unwrap();
            assert_eq!(scanned.into_iter().collect::<BTreeMap<_, _>>(), state);
        }
        assert_eq!(
            saw,
            (true, true),
            "faults before and after the commit point"
        );
    }

    #[test]
    fn get_many_starts_every_read_before_any_completes() {
        use std::future::Future;
        use std::task::{Context, Poll, Waker};
        let kv = FaultyKv::default();
        let mut store = open(kv.clone());
        let values = batch(&[("a", Some(b"1")), ("b", Some(b"2")), ("c", Some(b"3"))]);
        commit(&mut store, &values).unwrap();
        store.kv.reads.set(0);
        // Each read waits until all four have started, so reads made one
        // after another would never complete.
        store.kv.read_gate = Some(4);
        let mut read = std::pin::pin!(store.get_many(&["a", "missing", "c", "b"]));
        let mut cx = Context::from_waker(Waker::noop());
        let got = (0..4)
            .find_map(|_| match read.as_mut().poll(&mut cx) {
                Poll::Ready(result) => Some(result),
                Poll::Pending => None,
            })
            .expect("the four reads complete together")
            .unwrap();
        let want = [Some(&b"1"[..]), None, Some(b"3"), Some(b"2")].map(|v| v.map(<[u8]>::to_vec));
        assert_eq!(got, want);
        assert_eq!(kv.reads.get(), 4);
    }

    #[test]
    fn an_unfinished_batch_is_read_and_finished_before_the_next_commit() {
        let kv = FaultyKv::default();
        let mut store = open(kv.clone());
        commit(&mut store, &batch(&[("gone", Some(b"0"))])).unwrap();
        store.kv.writes.set(0);
        // Frames (1) and the commit record (1) succeed, the first apply fails.
        store.kv.fail_at = Some(2);
        let change = batch(&[("a", Some(b"1")), ("b", Some(b"2")), ("gone", None)]);
        commit(&mut store, &change).unwrap();
        assert!(!data(&kv).contains_key("b"), "not applied yet");
        // Reads see the committed batch all the same.
        let read = |key: &str| block_on(store.get(key)).unwrap().unwrap();
        assert_eq!(read("a"), Some(b"1".to_vec()));
        assert_eq!(read("gone"), None);
        let scanned: Vec<String> = block_on(store.scan(""))
            .unwrap()
            .unwrap()
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(scanned, ["a", "b"]);
        store.kv.fail_at = None;
        commit(&mut store, &batch(&[("c", Some(b"3"))])).unwrap();
        assert_eq!(data(&kv).len(), 3);
        assert_eq!(
            block_on(store.get("b")).unwrap().unwrap(),
            Some(b"2".to_vec())
        );
    }

    #[test]
    fn an_atomic_batch_is_used_when_the_store_has_one() {
        let kv = FaultyKv {
            atomic: true,
            ..FaultyKv::default()
        };
        let mut store = open(kv.clone());
        commit(&mut store, &batch(&[("a", Some(b"1")), ("b", Some(b"2"))])).unwrap();
        assert_eq!(kv.writes.get(), 1);
        assert_eq!(data(&kv).len(), 2);
    }

    #[test]
    fn a_single_key_commit_with_an_expectation_uses_the_atomic_batch() {
        let kv = FaultyKv {
            atomic: true,
            ..FaultyKv::default()
        };
        let mut store = open(kv.clone());
        let expect = Expect {
            key: "m",
            value: None,
        };
        let one = batch(&[("m", Some(b"v1"))]);
        block_on(store.commit(&one, Some(expect))).unwrap().unwrap();
        assert_eq!(kv.batches.get(), 1, "the check and the put in one call");
        commit(&mut store, &batch(&[("n", Some(b"1"))])).unwrap();
        assert_eq!(kv.batches.get(), 1, "no expectation: a plain put");
        assert_eq!(data(&kv).len(), 2);
    }

    #[test]
    fn a_batch_too_large_for_the_store_goes_through_the_journal() {
        let kv = FaultyKv {
            atomic: true,
            max_batch_ops: 2,
            ..FaultyKv::default()
        };
        let mut store = open(kv.clone());
        commit(&mut store, &batch(&[("a", Some(b"1")), ("b", Some(b"2"))])).unwrap();
        assert_eq!(kv.writes.get(), 1, "two ops fit one atomic batch");
        let three = batch(&[("c", Some(b"3")), ("d", Some(b"4")), ("e", Some(b"5"))]);
        commit(&mut store, &three).unwrap();
        // One frame, the commit record, three puts, two deletes.
        assert_eq!(kv.writes.get(), 1 + 7);
        assert_eq!(data(&kv).len(), 5);
    }

    #[test]
    fn a_damaged_journal_is_corrupt_and_reserved_keys_are_refused() {
        let kv = FaultyKv::default();
        let mut store = open(kv.clone());
        let b = batch(&[("journal/x", Some(b"1"))]);
        assert!(matches!(
            commit(&mut store, &b),
            Err(StorageError::Backend(_))
        ));
        let record = encode_commit_record(1, [0; 32]);
        kv.map
            .borrow_mut()
            .insert(JOURNAL_COMMIT_KEY.into(), record);
        assert!(matches!(
            try_open(kv.clone()),
            Err(StorageError::Corrupt(_))
        ));
        let mut damaged = encode_commit_record(0, [0; 32]);
        damaged[5] ^= 1;
        kv.map
            .borrow_mut()
            .insert(JOURNAL_COMMIT_KEY.into(), damaged);
        assert!(matches!(
            try_open(kv.clone()),
            Err(StorageError::Corrupt(_))
        ));
    }

    #[test]
    fn an_expectation_that_fails_writes_nothing() {
        let kv = FaultyKv::default();
        let mut store = open(kv.clone());
        commit(&mut store, &batch(&[("m", Some(b"v1"))])).unwrap();
        let expect = Expect {
            key: "m",
            value: Some(b"v0"),
        };
        let result = block_on(store.commit(&batch(&[("a", Some(b"1"))]), Some(expect))).unwrap();
        assert!(matches!(result, Err(StorageError::Conflict(_))));
        assert_eq!(data(&kv).len(), 1);
    }
}
