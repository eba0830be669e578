//! Storage: the key-value contract every backend implements.
//!
//! The engine never does I/O. Each write operation produces a [`Batch`] of
//! key puts and deletes; the shell hands it to [`Storage::commit`] and only
//! then makes the change visible. Backends: [`MemoryStorage`] (tests, ephemeral
//! use) and, with the `fs` feature, [`FsStorage`] (a native directory). The
//! JavaScript package adds IndexedDB and injected adapters implementing the
//! same contract.
//!
//! The trait is synchronous, as native backends are. It is also shaped for
//! asynchronous hosts: the engine never calls storage in the middle of an
//! operation, so a host whose storage is async (IndexedDB, an injected
//! JavaScript object, the WIT-imported interface) runs the operation on
//! [`crate::Engine`] with a [`crate::engine::Txn`], awaits the commit of
//! [`crate::Engine::batch_for`], and calls [`crate::Engine::rollback`] if it
//! fails — the same protocol [`crate::Memory`] follows synchronously. Opening
//! needs only one `scan` and one `get`.
//!
//! # Contract
//!
//! * Keys are non-empty UTF-8 strings of at most [`MAX_KEY_BYTES`] bytes; values
//!   are opaque bytes (mnemo writes records of [`crate::codec`]).
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

use std::collections::BTreeMap;

mod memory;
pub use memory::MemoryStorage;
#[cfg(feature = "fs")]
mod fs;
#[cfg(feature = "fs")]
pub use fs::FsStorage;

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

    /// True when the batch deletes at least one key.
    pub fn has_deletes(&self) -> bool {
        self.ops.values().any(Option::is_none)
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
