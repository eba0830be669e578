//! Stores that fail on command, for the crash and failure tests: a
//! [`Trigger`] counts the calls a store routes through it and fails the armed
//! one; [`MapKv`] is an in-memory [`AsyncKeyValue`] whose writes go through
//! one, [`FailingStorage`] a [`Storage`] wrapper whose commits do.

use std::cell::{Cell, Ref, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

use memtide::storage::{AsyncKeyValue, Batch, Expect, KvOp, Storage, StorageError};

/// Counts calls and tells the armed one (and, when sticky, every later one)
/// to fail.
#[derive(Debug, Default, Clone)]
pub struct Trigger {
    /// Calls left before the failing one; `None`: disarmed.
    left: Cell<Option<usize>>,
    /// Whether the calls after the failing one fail too.
    sticky: Cell<bool>,
    fired: Cell<bool>,
}

impl Trigger {
    /// Fails the `at`-th call from now (0: the next one) and no other: a
    /// single failed write, or a process that dies there and whose successor
    /// carries on.
    pub fn arm(&self, at: usize) {
        self.set(Some(at), false);
    }

    /// Fails the `at`-th call from now and every later one until disarmed: a
    /// store that became unreachable.
    pub fn arm_sticky(&self, at: usize) {
        self.set(Some(at), true);
    }

    /// Disarms; true when a call failed since the trigger was armed.
    pub fn disarm(&self) -> bool {
        self.set(None, false)
    }

    /// True when this call is one to fail.
    pub fn strikes(&self) -> bool {
        match self.left.get() {
            Some(0) => {
                if !self.sticky.get() {
                    self.left.set(None);
                }
                self.fired.set(true);
                true
            }
            Some(n) => {
                self.left.set(Some(n - 1));
                false
            }
            None => false,
        }
    }

    fn set(&self, left: Option<usize>, sticky: bool) -> bool {
        self.left.set(left);
        self.sticky.set(sticky);
        self.fired.replace(false)
    }
}

/// How an injected failure is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Failure {
    /// A backend error ([`StorageError::Backend`]).
    #[default]
    Backend,
    /// A full store ([`StorageError::QuotaExceeded`]).
    Quota,
}

impl Failure {
    /// The error, with `message`.
    pub fn error(self, message: impl Into<String>) -> StorageError {
        match self {
            Failure::Backend => StorageError::Backend(message.into()),
            Failure::Quota => StorageError::QuotaExceeded(message.into()),
        }
    }

    /// The error code the public API reports it as.
    pub fn code(self) -> &'static str {
        match self {
            Failure::Backend => "STORAGE",
            Failure::Quota => "QUOTA_EXCEEDED",
        }
    }
}

/// An in-memory [`AsyncKeyValue`], with an atomic batch when `ATOMIC` (else
/// [`memtide::storage::KvStorage`] commits through its journal). Each write
/// (put, delete, batch) goes through [`MapKv::trigger`]; a failing write
/// changes nothing and reports [`Failure::Backend`]. Clones share the map and
/// the trigger, as two processes share a store. Every call is counted, as a
/// platform counts a Worker's storage operations.
#[derive(Debug, Clone, Default)]
pub struct MapKv<const ATOMIC: bool = false> {
    map: Rc<RefCell<BTreeMap<String, Vec<u8>>>>,
    trigger: Rc<Trigger>,
    operations: Rc<Cell<usize>>,
}

impl<const ATOMIC: bool> MapKv<ATOMIC> {
    /// The trigger of the writes.
    pub fn trigger(&self) -> &Trigger {
        &self.trigger
    }

    /// The stored pairs.
    pub fn map(&self) -> Ref<'_, BTreeMap<String, Vec<u8>>> {
        self.map.borrow()
    }

    /// Calls made so far: gets, puts, deletes, lists and batches.
    pub fn operations(&self) -> usize {
        self.operations.get()
    }

    fn count(&self) {
        self.operations.set(self.operations.get() + 1);
    }

    /// Stores `value` under `key` directly: no write of the contract, no
    /// fault.
    pub fn insert(&self, key: String, value: Vec<u8>) {
        self.map.borrow_mut().insert(key, value);
    }

    fn write(&self) -> Result<(), StorageError> {
        self.count();
        if self.trigger.strikes() {
            return Err(Failure::Backend.error("injected write failure"));
        }
        Ok(())
    }
}

impl<const ATOMIC: bool> AsyncKeyValue for MapKv<ATOMIC> {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.count();
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
        self.count();
        let map = self.map.borrow();
        // Reverse order: the contract allows any, so no caller may rely on one.
        Ok(map
            .keys()
            .rev()
            .filter(|k| k.starts_with(prefix))
            .cloned()
            .collect())
    }
    fn has_atomic_batch(&self) -> bool {
        ATOMIC
    }
    async fn batch(
        &mut self,
        ops: &[KvOp<'_>],
        _expect: Option<Expect<'_>>,
    ) -> Result<(), StorageError> {
        assert!(ATOMIC, "batch called on a store without atomic batches");
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

/// Delegates to `inner`, counting the commits that write (an empty batch
/// only checks the expectation) through [`FailingStorage::trigger`]: a
/// failing commit applies nothing and reports [`FailingStorage::failure`].
/// Remembers the last applied batch so tests can replay part of it.
#[derive(Debug, Clone, Default)]
pub struct FailingStorage<S> {
    /// The wrapped store.
    pub inner: S,
    /// Commits that wrote or tried to, the failed ones included.
    pub commits: usize,
    /// Decides which commits fail.
    pub trigger: Trigger,
    /// How they fail.
    pub failure: Failure,
    /// The last batch that `inner` applied.
    pub last_batch: Option<Batch>,
}

impl<S: Storage> FailingStorage<S> {
    /// Wraps `inner`, disarmed.
    pub fn new(inner: S) -> Self {
        FailingStorage {
            inner,
            commits: 0,
            trigger: Trigger::default(),
            failure: Failure::default(),
            last_batch: None,
        }
    }

    /// Wraps `inner`; its commit numbered `at` (from 0) fails with `failure`.
    pub fn failing_at(inner: S, at: usize, failure: Failure) -> Self {
        let storage = FailingStorage {
            failure,
            ..FailingStorage::new(inner)
        };
        storage.trigger.arm(at);
        storage
    }
}

impl<S: Storage> Storage for FailingStorage<S> {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.inner.get(key)
    }

    fn scan(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        self.inner.scan(prefix)
    }

    fn commit(&mut self, batch: &Batch) -> Result<(), StorageError> {
        if batch.is_empty() {
            return self.inner.commit(batch);
        }
        let n = self.commits;
        self.commits += 1;
        if self.trigger.strikes() {
            return Err(self
                .failure
                .error(format!("injected failure of commit {n}")));
        }
        self.inner.commit(batch)?;
        self.last_batch = Some(batch.clone());
        Ok(())
    }
}
