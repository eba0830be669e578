//! Write transactions: the undo log a write operation fills, how it is
//! rolled back when the commit fails, and the storage batch (with the
//! manifest) that persists it. Everything that turns engine state into
//! records passes here, so memory and storage change together or not at all.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::files::FileKey;
use super::vectors::StoredVector;
use super::Engine;
use crate::codec::{self, Manifest};
use crate::embed::Embedder;
use crate::files::{file_storage_key, StoredFile};
use crate::item::MemoryItem;
use crate::keys::{ITEM_PREFIX, MANIFEST_KEY, VECTOR_PREFIX};
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

    /// The storage batch that persists `txn`'s changes: the final state of
    /// every touched item, embedding and file plus the manifest. Empty when nothing changed.
    pub fn batch_for(&self, txn: &Txn) -> Batch {
        let mut batch = Batch::new();
        let mut items = BTreeSet::new();
        // Vector keys, with whether one existed before the transaction.
        let mut vectors: BTreeMap<&str, bool> = BTreeMap::new();
        let mut files = BTreeSet::new();
        for step in &txn.undo {
            match step {
                Undo::Item(id, _) => {
                    items.insert(id.as_str());
                }
                Undo::Vector(id, before) => {
                    vectors.entry(id.as_str()).or_insert(before.is_some());
                }
                Undo::File(key, _) => {
                    files.insert(key);
                }
                Undo::Model(..) => {}
            }
        }
        for key in files {
            match self.files.get(key) {
                Some(file) => batch.put(file.storage_key(), codec::encode_file(file)),
                None => batch.delete(file_storage_key(&key.0, &key.1)),
            }
        }
        for id in items {
            let key = format!("{ITEM_PREFIX}{id}");
            match self.entries.get(id) {
                Some(entry) => batch.put(key, codec::encode_item(&entry.item)),
                None => batch.delete(key),
            }
        }
        for (id, existed) in vectors {
            let key = format!("{VECTOR_PREFIX}{id}");
            match self.embeddings.get(id) {
                Some(v) => batch.put(key, codec::encode_vector(&v.vector)),
                None if existed => batch.delete(key),
                None => {}
            }
        }
        if !batch.is_empty() {
            batch.put(MANIFEST_KEY, codec::encode_manifest(&self.manifest()));
        }
        batch
    }

    /// The manifest describing the current items.
    pub fn manifest(&self) -> Manifest {
        Manifest {
            format_version: codec::version_for(!self.files.is_empty()),
            item_count: self.entries.len() as u64,
            vector_count: self.embeddings.len() as u64,
            items_digest: self.digest.to_hex(),
            model_id: self
                .model_id
                .clone()
                .filter(|_| !self.embeddings.is_empty()),
            file_count: self.files.len() as u64,
        }
    }
}
