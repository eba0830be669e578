//! An in-memory backend: a sorted map, for tests and ephemeral stores.

use std::collections::BTreeMap;

use super::{scan_map, Batch, Storage, StorageError};

/// Keeps everything in a `BTreeMap`; lost when dropped.
#[derive(Debug, Clone, Default)]
pub struct MemoryStorage {
    map: BTreeMap<String, Vec<u8>>,
}

impl MemoryStorage {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStorage::default()
    }

    /// Every stored pair, for inspection by tests.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.map.iter().map(|(k, v)| (k.as_str(), v.as_slice()))
    }
}

impl Storage for MemoryStorage {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.map.get(key).cloned())
    }

    fn scan(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        Ok(scan_map(&self.map, prefix))
    }

    fn commit(&mut self, batch: &Batch) -> Result<(), StorageError> {
        batch.validate_keys()?;
        for (key, value) in batch.ops() {
            match value {
                Some(v) => {
                    self.map.insert(key.to_string(), v.to_vec());
                }
                None => {
                    self.map.remove(key);
                }
            }
        }
        Ok(())
    }
}
