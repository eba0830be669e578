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
use crate::fast_hash::FastMap;
use crate::files::{file_storage_key, StoredFile};
use crate::index::bm25::TermCounts;
use crate::item::MemoryItem;
use crate::keys::{ITEM_PREFIX, VECTOR_PREFIX};

/// Undo log of one write operation. Pass the same `Txn` to
/// [`Engine::batch_for`] after the operation and to [`Engine::rollback`] if
/// the commit fails.
#[derive(Debug, Default)]
pub struct Txn {
    pub(super) undo: Vec<Undo>,
    /// The terms ingest counted for a memory it added, with the index of
    /// the undo step of that write: the segment write takes them from here
    /// rather than fetching them back from the lexical index and sorting
    /// them again. They stand for the memory only while that step is its
    /// last one in `undo` (a later write of it may change its text).
    counted: FastMap<String, (usize, TermCounts)>,
}

impl Txn {
    /// Keeps `counts`, the terms the lexical index was given for the
    /// memory `id` by the write recorded at undo step `step`.
    pub(super) fn keep_counted(&mut self, id: &str, step: usize, counts: TermCounts) {
        self.counted.insert(id.to_string(), (step, counts));
    }
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
    /// delete), in key order. Empty when nothing changed. A memory is
    /// handed over as the engine holds it, with the terms ingest counted
    /// for it when it has them. `crate::layout` decides where they are
    /// stored.
    pub fn batch_for<'a>(&'a self, txn: &'a Txn) -> Changes<'a> {
        // Each touched record with whether it differs from what it was
        // before the transaction (the first undo step of a key holds that),
        // whether a memory's text was replaced, and the last undo step that
        // wrote it: a record written back unchanged (an import of what the
        // store holds) is not written again.
        let mut changed: BTreeMap<String, (bool, bool, usize)> = BTreeMap::new();
        for (step, undo) in txn.undo.iter().enumerate() {
            let (key, differs, new_text) = match undo {
                Undo::Item(id, before) => {
                    let now = self.entries.get(id).map(|e| e.item());
                    let now = now.as_deref();
                    let new_text = matches!((now, before.as_deref()), (Some(n), Some(b)) if n.text != b.text);
                    (format!("{ITEM_PREFIX}{id}"), now != before.as_deref(), new_text)
                }
                Undo::Vector(id, before) => {
                    let now = self.embedding(id);
                    let was = before.as_ref().map(|v| v.vector.view());
                    (format!("{VECTOR_PREFIX}{id}"), now != was, false)
                }
                Undo::File(key, before) => {
                    let now = self.files.get(key);
                    (file_storage_key(&key.0, &key.1), now != before.as_deref(), false)
                }
                Undo::Model(..) => continue,
            };
            changed.entry(key).or_insert((differs, new_text, step)).2 = step;
        }
        let mut changes = Changes::default();
        for (key, (differs, new_text, last)) in changed {
            if !differs {
                continue;
            }
            if new_text {
                // The embedding of the old text goes with it, wherever an
                // earlier version of it is stored.
                if let Some(id) = key.strip_prefix(ITEM_PREFIX) {
                    changes.new_texts.push(format!("{VECTOR_PREFIX}{id}"));
                }
                changes.new_texts.push(key.clone());
            }
            let change = match key.strip_prefix(ITEM_PREFIX) {
                Some(id) => match self.entries.get(id) {
                    Some(entry) => {
                        let terms = txn
                            .counted
                            .get(id)
                            .filter(|(step, _)| *step == last)
                            .map(|(_, counts)| counts);
                        // A write leaves its memory decoded; one held as
                        // a row is handed over as its record.
                        match entry.decoded() {
                            Some(item) => Change::Memory(item, terms),
                            None => Change::Record(codec::encode_item(&entry.item())),
                        }
                    }
                    None => Change::Delete,
                },
                None => match self.record(&key) {
                    Some(bytes) => Change::Record(bytes),
                    None => Change::Delete,
                },
            };
            changes.records.push((key, change));
        }
        changes.new_texts.sort_unstable();
        changes
    }

    /// The record stored under `key` (an `item/`, `vec/` or `file/` key) as
    /// the engine holds it now, or `None` when there is none.
    pub fn record(&self, key: &str) -> Option<Vec<u8>> {
        if let Some(id) = key.strip_prefix(ITEM_PREFIX) {
            return self.entries.get(id).map(|e| codec::encode_item(&e.item()));
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

/// The records a write changed ([`Engine::batch_for`]), in key order, each
/// key once: what the layout turns into the storage batch of the commit.
#[derive(Debug, Default)]
pub struct Changes<'a> {
    records: Vec<(String, Change<'a>)>,
    /// The records of the memories whose text this write replaced and of
    /// their embeddings, in key order: their earlier versions are erased
    /// as a hard delete erases them.
    new_texts: Vec<String>,
}

/// The new state of one record.
#[derive(Debug)]
pub enum Change<'a> {
    /// A memory as the engine holds it, with its terms as ingest counted
    /// them when this write did (else the lexical index holds them).
    Memory(&'a MemoryItem, Option<&'a TermCounts>),
    /// Any other record (an embedding, a file), encoded.
    Record(Vec<u8>),
    /// The record is gone.
    Delete,
}

impl<'a> Changes<'a> {
    /// Every record of `engine` (a store written afresh), its memories
    /// held as rows decoded into `held` ([`Changes::held`]).
    pub(crate) fn all(engine: &'a Engine, held: &'a FastMap<&'a str, MemoryItem>) -> Self {
        let mut changes = Changes::default();
        for key in engine.record_keys() {
            let change = match key.strip_prefix(ITEM_PREFIX) {
                Some(id) => match engine.entries.get(id).and_then(|e| e.decoded().or_else(|| held.get(id))) {
                    Some(item) => Change::Memory(item, None),
                    None => continue,
                },
                None => match engine.record(&key) {
                    Some(bytes) => Change::Record(bytes),
                    None => continue,
                },
            };
            changes.records.push((key, change));
        }
        changes.records.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        changes
    }

    /// The memories of `engine` held as rows, decoded, by id: what
    /// [`Changes::all`] hands over for them.
    pub(crate) fn held(engine: &Engine) -> FastMap<&str, MemoryItem> {
        engine
            .entries
            .iter()
            .filter(|(_, entry)| entry.decoded().is_none())
            .map(|(id, entry)| (id, entry.item().into_owned()))
            .collect()
    }

    /// The records, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Change<'a>)> {
        self.records.iter().map(|(key, change)| (key.as_str(), change))
    }

    /// True when nothing changed.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// True when the write replaced the text of the memory stored under
    /// `key`, or of the memory whose embedding it is: no earlier version
    /// of it may stay stored.
    pub fn replaces_text(&self, key: &str) -> bool {
        self.new_texts.binary_search_by(|k| k.as_str().cmp(key)).is_ok()
    }

    /// True when a record is deleted or a memory's text replaced: the
    /// commit erases what it overwrites.
    pub fn erases(&self) -> bool {
        !self.new_texts.is_empty() || self.records.iter().any(|(_, change)| matches!(change, Change::Delete))
    }
}
