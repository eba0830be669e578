//! Storage: the key-value contract every backend implements.
//!
//! The engine never does I/O. Each write operation produces a [`Batch`] of
//! key puts and deletes; the shell hands it to [`Storage::commit`] and only
//! then makes the change visible. Backends: [`MemoryStorage`] (tests, ephemeral
//! use) and, with the `fs` feature, [`FsStorage`] (a native directory). The
//! JavaScript host (crates/js) adds IndexedDB and injected adapters
//! implementing the same contract.
//!
//! [`Storage`] is synchronous, as native backends are. [`AsyncStorage`] is the
//! same contract for hosts whose storage answers later (IndexedDB, an injected
//! JavaScript object): every [`Storage`] is also an [`AsyncStorage`], and
//! [`crate::AsyncMemory`] drives either. The engine never calls storage in
//! the middle of an operation, so opening a store of the segmented layout
//! needs one `get` (the manifest) and one [`AsyncStorage::get_many`] (the
//! segments it names), and each write one `commit`. [`KvStorage`] builds an
//! [`AsyncStorage`] from a store that only has single-key writes, using a
//! roll-forward journal for atomicity.
//!
//! # Contract
//!
//! * Keys are non-empty UTF-8 strings of at most [`MAX_KEY_BYTES`] bytes; values
//!   are opaque bytes (memtide writes records of [`crate::codec`]).
//! * [`Storage::commit`] is all-or-nothing: when it returns `Ok`, every put and
//!   delete of the batch is durable; when it returns `Err` (or the process
//!   dies during the call) a later reader sees either the whole batch or none of
//!   it, never a part.
//! * A deleted key's old value is gone: after the commit returns, no byte of the
//!   storage the backend controls still holds it (hard delete erases).
//! * [`Storage::scan`] returns every live pair whose key starts with the prefix,
//!   sorted by key; [`Storage::get`] returns one value. Both reflect every
//!   committed batch and nothing uncommitted.
//! * Errors are reported as [`StorageError`]; quota exhaustion is
//!   [`StorageError::QuotaExceeded`] and leaves the state unchanged.
//! * [`AsyncStorage::commit`] may carry an [`Expect`]ation: the batch applies
//!   only if the expected key still holds the expected value, checked
//!   atomically with the write where the backend shares itself between
//!   writers (IndexedDB across tabs). Otherwise it fails with
//!   [`StorageError::Conflict`] and changes nothing; memtide then reloads and
//!   retries. Backends owned by one writer check it with a plain `get`.

use std::collections::BTreeMap;

pub(crate) mod frame;
mod join;
mod journal;
mod memory;
pub use journal::{AsyncKeyValue, KvOp, KvStorage, JOURNAL_PREFIX};
pub use memory::MemoryStorage;
#[cfg(feature = "fs")]
mod fs;
#[cfg(feature = "fs")]
pub use fs::FsStorage;

/// How many times the default [`AsyncStorage::snapshot`] reads while other
/// writers keep committing.
pub const SNAPSHOT_ATTEMPTS: usize = 8;

/// Longest key a backend must accept, in bytes.
pub const MAX_KEY_BYTES: usize = 512;

/// What a storage backend can fail with.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// An operating-system I/O error.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// The backend is out of space; nothing was written.
    #[error("{0}")]
    QuotaExceeded(String),
    /// What the backend holds fails its own integrity checks.
    #[error("{0}")]
    Corrupt(String),
    /// The store cannot apply this batch atomically (too many or too large
    /// ops for one of its transactions); nothing was written.
    #[error("{0}")]
    BatchTooLarge(String),
    /// A commit's [`Expect`]ation did not hold: another writer changed the
    /// store first. Nothing was written.
    #[error("{0}")]
    Conflict(String),
    /// Any other backend failure, described.
    #[error("{0}")]
    Backend(String),
}

/// An ordered set of puts and deletes applied atomically by
/// [`Storage::commit`]. A later operation on the same key replaces an
/// earlier one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Batch {
    ops: BTreeMap<String, Option<Vec<u8>>>,
    /// The batch erases data that a put may only overwrite (a record
    /// deleted from a value that is rewritten, such as the manifest's log):
    /// a backend that keeps overwritten bytes (an append-only log) must
    /// drop them in this commit.
    erase: bool,
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Self {
        Batch::default()
    }

    /// Sets `key` to `value`.
    pub fn put(&mut self, key: impl Into<String>, value: Vec<u8>) {
        self.ops.insert(key.into(), Some(value));
    }

    /// Removes `key` (and erases its value).
    pub fn delete(&mut self, key: impl Into<String>) {
        self.ops.insert(key.into(), None);
    }

    /// True when the batch changes nothing.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Number of keys the batch touches.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// The operations in key order: `Some(value)` is a put, `None` a delete.
    pub fn ops(&self) -> impl Iterator<Item = (&str, Option<&[u8]>)> {
        self.ops.iter().map(|(k, v)| (k.as_str(), v.as_deref()))
    }

    /// Checks every key against the contract's limits (backends call it
    /// before writing anything).
    pub fn validate_keys(&self) -> Result<(), StorageError> {
        self.ops.keys().try_for_each(|key| validate_key(key))
    }

    /// The value the batch puts under `key` (`None` when it does not put it).
    pub fn put_value(&self, key: &str) -> Option<&[u8]> {
        self.ops.get(key).and_then(|v| v.as_deref())
    }

    /// True when the batch deletes at least one key.
    pub fn has_deletes(&self) -> bool {
        self.ops.values().any(Option::is_none)
    }

    /// Marks the batch as erasing: the values it overwrites must not
    /// survive it, in any byte the backend keeps.
    pub fn mark_erasing(&mut self) {
        self.erase = true;
    }

    /// True when no byte of a value this batch deletes or overwrites may
    /// survive it: it deletes a key or is marked erasing.
    pub fn erases(&self) -> bool {
        self.erase || self.has_deletes()
    }
}

/// A key-value store with atomic batches. See the module documentation for
/// the contract every implementation must keep.
pub trait Storage {
    /// The value stored under `key`, if any.
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError>;

    /// Every pair whose key starts with `prefix`, sorted by key.
    fn scan(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StorageError>;

    /// Applies the whole batch or none of it.
    fn commit(&mut self, batch: &Batch) -> Result<(), StorageError>;
}

impl<S: Storage + ?Sized> Storage for Box<S> {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        (**self).get(key)
    }
    fn scan(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        (**self).scan(prefix)
    }
    fn commit(&mut self, batch: &Batch) -> Result<(), StorageError> {
        (**self).commit(batch)
    }
}

/// A precondition of [`AsyncStorage::commit`]: `key` must hold `value`
/// (`None`: must be absent) when the batch applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expect<'a> {
    /// The key to check.
    pub key: &'a str,
    /// The value it must hold, or `None` for "absent".
    pub value: Option<&'a [u8]>,
}

impl Expect<'_> {
    /// `Ok` when `current` (the key's value now) is the expected one, else
    /// [`StorageError::Conflict`].
    pub fn check(&self, current: Option<&[u8]>) -> Result<(), StorageError> {
        if current == self.value {
            Ok(())
        } else {
            Err(StorageError::Conflict(format!(
                "`{}` was changed by another writer",
                self.key
            )))
        }
    }
}

/// What [`AsyncStorage::snapshot`] reads: the pairs under each prefix, then
/// the value of the key.
pub type Snapshot = (Vec<Vec<(String, Vec<u8>)>>, Option<Vec<u8>>);

/// The storage contract for hosts whose storage answers asynchronously. See
/// the module documentation; the futures need not be `Send` (JavaScript
/// hosts are single-threaded).
#[allow(async_fn_in_trait)]
pub trait AsyncStorage {
    /// The value stored under `key`, if any.
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError>;

    /// Every pair whose key starts with `prefix`, sorted by key.
    async fn scan(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StorageError>;

    /// The `scan` of each prefix and the `get` of `key`, read from one
    /// state of the store: a commit of another writer lands entirely before
    /// or after. `key` is one every commit rewrites (memtide's manifest).
    ///
    /// The default reads `key`, then the prefixes, then `key` again, and
    /// reads again while the two differ (another writer committed in
    /// between), at most [`SNAPSHOT_ATTEMPTS`] times; after that it returns
    /// the last reading, which the caller checks against its `key` (memtide's
    /// manifest lists a digest of the records). Backends with read
    /// transactions override it with one.
    async fn snapshot(&self, prefixes: &[&str], key: &str) -> Result<Snapshot, StorageError> {
        let mut attempts = 1;
        loop {
            let before = self.get(key).await?;
            let mut scans = Vec::with_capacity(prefixes.len());
            for prefix in prefixes {
                scans.push(self.scan(prefix).await?);
            }
            let after = self.get(key).await?;
            if after == before || attempts == SNAPSHOT_ATTEMPTS {
                return Ok((scans, after));
            }
            attempts += 1;
        }
    }

    /// Applies the whole batch or none of it, provided `expect` (when given)
    /// holds; otherwise fails with [`StorageError::Conflict`].
    async fn commit(
        &mut self,
        batch: &Batch,
        expect: Option<Expect<'_>>,
    ) -> Result<(), StorageError>;

    /// The value of each key in `keys`, in their order (`None` for an
    /// absent key). The default reads them one `get` at a time; a backend
    /// whose reads travel (IndexedDB's transactions, a network store)
    /// overrides it to issue them together.
    async fn get_many(&self, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>, StorageError> {
        let mut values = Vec::with_capacity(keys.len());
        for key in keys {
            values.push(self.get(key).await?);
        }
        Ok(values)
    }
}

/// A synchronous backend is owned by its one writer, so the expectation is a
/// plain read before the commit.
impl<S: Storage> AsyncStorage for S {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        Storage::get(self, key)
    }

    async fn scan(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        Storage::scan(self, prefix)
    }

    async fn commit(
        &mut self,
        batch: &Batch,
        expect: Option<Expect<'_>>,
    ) -> Result<(), StorageError> {
        if let Some(expect) = expect {
            expect.check(Storage::get(self, expect.key)?.as_deref())?;
        }
        Storage::commit(self, batch)
    }
}

/// The pairs of a sorted map whose key starts with `prefix`, in key order
/// (the `scan` of map-backed backends).
pub fn scan_map(map: &BTreeMap<String, Vec<u8>>, prefix: &str) -> Vec<(String, Vec<u8>)> {
    map.range(prefix.to_string()..)
        .take_while(|(k, _)| k.starts_with(prefix))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Checks a key against the contract's limits.
pub fn validate_key(key: &str) -> Result<(), StorageError> {
    if key.is_empty() || key.len() > MAX_KEY_BYTES {
        return Err(StorageError::Backend(format!(
            "storage key must be 1..={MAX_KEY_BYTES} bytes, got {}",
            key.len()
        )));
    }
    Ok(())
}
