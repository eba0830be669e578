//! Write transactions: the undo log a write operation fills, how it is
//! rolled back when the commit fails, and the records that persist it. Everything that turns engine state into
//! records passes here, so memory and storage change together or not at all.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::files::FileKey;
use super::vectors::StoredVector;
use super::Engine;
use crate::codec;
use crate::embed::Embedder;
use crate::files::{file_storage_key, StoredFile};
use crate::item::MemoryItem;
use crate::keys::{ITEM_PREFIX, VECTOR_PREFIX};
use crate::storage::Batch;

/// Undo log of one write operation. Pass the same `Txn` to
/// [`Engine::batch_for`] after the operation and to [`Engine::rollback`] if
/// the commit fails.
#[derive(Debug, Default)]
pub struct Txn {
    pub(super) undo: Vec<Undo>,
}

/// One recorded change and what it replaced.
pub(super) enum Undo {
    Item(String, Option<Box<MemoryItem>>),
    Vector(String, Option<StoredVector>),
    File(FileKey, Option<Box<StoredFile>>),
    Model(Option<String>, Option<Arc<dyn Embedder>>),
}

impl std::fmt::Debug for Undo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Undo::Item(id, _) => write!(f, "Item({id})"),
            Undo::Vector(id, _) => write!(f, "Vector({id})"),
            Undo::File((_, path), _) => write!(f, "File({path})"),
            Undo::Model(model, _) => write!(f, "Model({model:?})"),
        }
    }
}

impl Engine {
    /// Undoes every change recorded in `txn`, newest first.
    pub fn rollback(&mut self, txn: Txn) {
        for step in txn.undo.into_iter().rev() {
            match step {
                Undo::Item(id, previous) => {
                    self.set(&id, previous.map(|item| *item));
                }
                Undo::Vector(id, previous) => {
                    self.set_vector(&id, previous);
                }
                Undo::File(key, previous) => {
                    self.set_file(&key, previous.map(|file| *file));
                }
                Undo::Model(model_id, embedder) => {
                    self.model_id = model_id;
                    self.embedder = embedder;
                }
            }
        }
    }

    /// The records `txn` changed: the final state of every item, embedding
    /// and file that differs from before (a put of its record, or a
    /// delete). Empty when nothing changed. `crate::layout` decides where they are stored.
    pub fn batch_for(&self, txn: &Txn) -> Batch {
        // Each touched record with whether it differs from what it was
        // before the transaction (the first undo step of a key holds that):
        // a record written back unchanged (an import of what the store
        // holds) is not written again.
        let mut changed: BTreeMap<String, bool> = BTreeMap::new();
        for step in &txn.undo {
            let (key, differs) = match step {
                Undo::Item(id, before) => {
                    let now = self.entries.get(id).map(|e| &e.item);
                    (format!("{ITEM_PREFIX}{id}"), now != before.as_deref())
                }
                Undo::Vector(id, before) => {
                    let now = self.embedding(id);
                    let was = before.as_ref().map(|v| v.vector.view());
                    (format!("{VECTOR_PREFIX}{id}"), now != was)
                }
                Undo::File(key, before) => {
                    let now = self.files.get(key);
                    (file_storage_key(&key.0, &key.1), now != before.as_deref())
                }
                Undo::Model(..) => continue,
            };
            changed.entry(key).or_insert(differs);
        }
        let mut batch = Batch::new();
        for (key, differs) in changed {
            if !differs {
                continue;
            }
            match self.record(&key) {
                Some(bytes) => batch.put(key, bytes),
                None => batch.delete(key),
            }
        }
        batch
    }

    /// The record stored under `key` (an `item/`, `vec/` or `file/` key) as
    /// the engine holds it now, or `None` when there is none.
    pub fn record(&self, key: &str) -> Option<Vec<u8>> {
        if let Some(id) = key.strip_prefix(ITEM_PREFIX) {
            return self.entries.get(id).map(|e| codec::encode_item(&e.item));
        }
        if let Some(id) = key.strip_prefix(VECTOR_PREFIX) {
            return self.embedding(id).map(codec::encode_vector);
        }
        // Few stores hold more than a handful of files.
        self.files
            .values()
            .find(|file| file.storage_key() == key)
            .map(codec::encode_file)
    }

    /// The key of every record the engine holds.
    pub fn record_keys(&self) -> Vec<String> {
        let items = self.entries.keys().map(|id| format!("{ITEM_PREFIX}{id}"));
        let vectors = self.embedded_ids().map(|id| format!("{VECTOR_PREFIX}{id}"));
        let files = self.files.values().map(StoredFile::storage_key);
        items.chain(vectors).chain(files).collect()
    }

    /// How many records of each kind the engine holds, and the model of
    /// its embeddings: what the manifest states (`docs/format.md`).
    pub fn summary(&self) -> Summary {
        Summary {
            items: self.entries.len() as u64,
            vectors: self.embedding_count() as u64,
            files: self.files.len() as u64,
            model_id: self
                .model_id
                .clone()
                .filter(|_| self.embedding_count() > 0),
        }
    }
}

/// Record counts of a store and the model of its embeddings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// `item/…` records.
    pub items: u64,
    /// `vec/…` records.
    pub vectors: u64,
    /// `file/…` records.
    pub files: u64,
    /// The model every embedding comes from (absent without embeddings).
    pub model_id: Option<String>,
}
