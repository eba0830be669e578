//! Embeddings: each memory's own vector as stored (int8), the model that
//! makes them, and the context vectors the tenants' vector indexes hold for
//! ranking (`docs/design.md`, "Embeddings"). `Engine::set_vector` is the
//! only code that changes an embedding; it keeps the vector index in step,
//! as `Engine::set` does for memories.

use std::collections::HashMap;
use std::sync::Arc;

use super::catalog::FastMap;
use super::txn::{Txn, Undo};
use super::Engine;
use crate::codec;
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::index::{Int8Vector, VectorIndex, VectorParams};
use crate::item::{MemoryItem, Tenant};
use crate::text;

/// Texts embedded per model call.
const EMBED_CHUNK: usize = 64;

/// A memory's own embedding as the engine holds it: int8, as stored.
#[derive(Debug, Clone)]
pub(super) struct StoredVector {
    pub(super) vector: Int8Vector,
}

impl StoredVector {
    /// A new embedding, quantized.
    fn quantize(vector: &[f32]) -> Self {
        StoredVector {
            vector: Int8Vector::quantize(vector),
        }
    }

    /// A vector decoded from its stored record (an `f32` record of an older
    /// build is quantized, and written as int8 codes from then on).
    pub(super) fn loaded(vector: Int8Vector) -> Self {
        StoredVector { vector }
    }

    /// Bytes of its record.
    pub(super) fn record_len(&self) -> usize {
        codec::encode_vector(&self.vector).len()
    }
}

impl Engine {
    /// Replaces (or removes) the embedding of memory `id`, keeping the
    /// vector index in step. Returns the previous embedding.
    pub(super) fn set_vector(
        &mut self,
        id: &str,
        new: Option<StoredVector>,
    ) -> Option<StoredVector> {
        if let Some(doc) = self.entries.get(id).map(|e| e.doc) {
            self.unindex_vector(doc);
        }
        let old = self.embeddings.remove(id);
        if let Some(v) = new {
            self.embeddings.insert(id.to_string(), v);
        }
        self.index_vector(id);
        old
    }

    /// Sizes the embeddings, the vector indexes' doc maps and
    /// `vector_docs` for the embeddings `ids` about to be loaded, whose
    /// memories are loaded already, so they do not double while a store
    /// opens (each doubling holds the old and the new table at once, and
    /// WebAssembly memory keeps that peak). `dimensions` is the
    /// embeddings' length.
    pub(super) fn reserve_vectors(&mut self, ids: &[&str], dimensions: usize) {
        self.embeddings.reserve(ids.len());
        // Borrowed from the memories: one count per tenant, not a copy of
        // its names per embedding.
        let mut per_tenant: FastMap<(&str, &str), (&MemoryItem, usize)> = FastMap::default();
        for id in ids {
            if let Some(entry) = self.entries.get(*id).filter(|e| !e.item.is_deleted()) {
                let scope = &entry.item.scope;
                per_tenant
                    .entry((&scope.user_id, &scope.workspace_id))
                    .or_insert((&entry.item, 0))
                    .1 += 1;
            }
        }
        self.vector_docs.reserve(per_tenant.values().map(|(_, n)| n).sum());
        let reserve: Vec<(Tenant, usize)> = per_tenant
            .into_values()
            .map(|(item, n)| (item.scope.tenant(), n))
            .collect();
        for (tenant, n) in reserve {
            if !self.vectors.contains_key(&tenant) {
                let index = VectorIndex::new(dimensions, VectorParams::default());
                self.vectors.insert(Arc::new(tenant.clone()), index);
            }
            if let Some(index) = self.vectors.get_mut(&tenant) {
                index.reserve(n);
            }
        }
    }

    /// Drops the vector indexes left empty (one [`Engine::reserve_vectors`]
    /// made for embeddings that were not indexed after all).
    pub(super) fn drop_empty_vector_indexes(&mut self) {
        self.vectors.retain(|_, index| !index.is_empty());
    }

    /// Removes a doc from the vector index it sits in, if any.
    pub(super) fn unindex_vector(&mut self, doc: u32) {
        if let Some(tenant) = self.vector_docs.remove(&doc) {
            if let Some(ix) = self.vectors.get_mut(&tenant) {
                ix.remove(doc);
                if ix.is_empty() {
                    self.vectors.remove(&tenant);
                }
            }
        }
    }

    /// Puts a live memory that has an embedding into its tenant's vector
    /// index, as its context vector.
    pub(super) fn index_vector(&mut self, id: &str) {
        let Some(entry) = self.entries.get(id) else {
            return;
        };
        if entry.item.is_deleted() || self.vector_docs.contains_key(&entry.doc) {
            return;
        }
        let Some(context) = self.context_vector(&entry.item) else {
            return;
        };
        let tenant = entry.item.scope.tenant();
        let doc = entry.doc;
        let tenant = match self.vectors.get_key_value(&tenant) {
            Some((held, _)) => held.clone(),
            None => Arc::new(tenant),
        };
        let index = self
            .vectors
            .entry(tenant.clone())
            .or_insert_with(|| VectorIndex::new(context.len(), VectorParams::default()));
        if index.insert(doc, &context).is_ok() {
            self.vector_docs.insert(doc, tenant);
        }
    }

    /// The context vector of a memory: its embedding plus the embedding of
    /// the memory it follows, normalized (see [`crate::rank`]).
    pub(super) fn context_vector(&self, item: &MemoryItem) -> Option<Vec<f32>> {
        let own = &self.embeddings.get(&item.id)?.vector;
        let previous = item
            .follows
            .as_ref()
            .and_then(|p| self.embeddings.get(p))
            .map(|p| &p.vector)
            .filter(|p| p.len() == own.len());
        let mut context = own.to_f32();
        if let Some(p) = previous {
            for (c, &code) in context.iter_mut().zip(p.codes()) {
                *c += f32::from(code) * p.scale();
            }
        }
        let norm = context.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            context.iter_mut().for_each(|x| *x /= norm);
        }
        Some(context)
    }

    /// [`Engine::set_vector`] that records the undo step.
    pub(super) fn write_vector(&mut self, txn: &mut Txn, id: &str, new: Option<Vec<f32>>) {
        let previous = self.set_vector(id, new.as_deref().map(StoredVector::quantize));
        txn.undo.push(Undo::Vector(id.to_string(), previous));
    }

    /// Embeds texts with the attached model (`None` without one), checking
    /// every vector's length and values. Texts [`Engine::prepare`]d are
    /// taken as they were embedded then.
    pub(crate) fn embed(&self, texts: &[&str]) -> Result<Option<Vec<Vec<f32>>>> {
        let Some(embedder) = &self.embedder else {
            return Ok(None);
        };
        let missing: Vec<&str> = texts
            .iter()
            .copied()
            .filter(|t| !self.prepared.contains_key(*t))
            .collect();
        let mut computed = Vec::with_capacity(missing.len());
        for chunk in missing.chunks(EMBED_CHUNK) {
            computed.extend(embedder.embed_batch(chunk)?);
        }
        let dims = embedder.dimensions();
        if computed.len() != missing.len()
            || computed
                .iter()
                .any(|v| v.len() != dims || v.iter().any(|x| !x.is_finite()))
        {
            return Err(Error::Model(format!(
                "the model returned malformed embeddings (expected {} vectors of {dims} finite values)",
                missing.len()
            )));
        }
        let mut computed = computed.into_iter();
        let vectors = texts
            .iter()
            .map(|t| match self.prepared.get(*t) {
                Some(v) => v.clone(),
                None => computed.next().unwrap_or_default(),
            })
            .collect();
        Ok(Some(vectors))
    }

    /// Embeds `texts` now, for the next operation's [`Engine::embed`] to
    /// take (without a model, nothing). A host computes an operation's
    /// embeddings this way in batches, between which it may stop it.
    pub(crate) fn prepare(&mut self, texts: &[&str]) -> Result<()> {
        let Some(vectors) = self.embed(texts)? else {
            return Ok(());
        };
        for (text, vector) in texts.iter().zip(vectors) {
            self.prepared.insert((*text).to_string(), vector);
        }
        Ok(())
    }

    /// Forgets the embeddings [`Engine::prepare`] computed.
    pub(crate) fn clear_prepared(&mut self) {
        self.prepared = HashMap::new();
    }

    /// The stored embedding of memory `id`, if it has one.
    pub(crate) fn embedding(&self, id: &str) -> Option<&Int8Vector> {
        self.embeddings.get(id).map(|v| &v.vector)
    }

    /// Attaches an embedding model: from now on memories are embedded at
    /// ingest and retrieval is hybrid. Memories without an embedding, or with
    /// one from another model, are embedded now (a store never mixes
    /// models). Returns how many memories were embedded.
    pub fn attach_embedder(&mut self, embedder: Arc<dyn Embedder>, txn: &mut Txn) -> Result<usize> {
        self.attach_embedder_upto(embedder, usize::MAX, txn)
    }

    /// [`Engine::attach_embedder`] that embeds at most `limit` memories
    /// (the first by id): the embedding backfill in batches, one commit
    /// each, which the next call continues.
    pub(crate) fn attach_embedder_upto(
        &mut self,
        embedder: Arc<dyn Embedder>,
        limit: usize,
        txn: &mut Txn,
    ) -> Result<usize> {
        let model = embedder.model_id().to_string();
        txn.undo
            .push(Undo::Model(self.model_id.clone(), self.embedder.clone()));
        if self.model_id.as_deref() != Some(model.as_str()) {
            let stale: Vec<String> = self.embeddings.keys().cloned().collect();
            for id in stale {
                self.write_vector(txn, &id, None);
            }
        }
        self.model_id = Some(model);
        self.embedder = Some(embedder);
        let mut missing: Vec<(&String, std::borrow::Cow<str>)> = self
            .entries
            .values()
            .filter(|e| !self.embeddings.contains_key(&e.item.id))
            .map(|e| {
                let said = text::said_text(&e.item.text, e.item.speaker.as_deref());
                (&e.item.id, said)
            })
            .collect();
        missing.sort();
        missing.truncate(limit);
        let missing: Vec<(String, String)> = missing
            .into_iter()
            .map(|(id, text)| (id.clone(), text.into_owned()))
            .collect();
        for chunk in missing.chunks(EMBED_CHUNK) {
            let texts: Vec<&str> = chunk.iter().map(|(_, t)| t.as_str()).collect();
            let vectors = self.embed(&texts)?.unwrap_or_default();
            for ((id, _), vector) in chunk.iter().zip(vectors) {
                self.write_vector(txn, id, Some(vector));
            }
        }
        Ok(missing.len())
    }

    /// How many memories attaching a model with id `model` would embed.
    pub(crate) fn unembedded(&self, model: &str) -> usize {
        if self.model_id.as_deref() == Some(model) {
            self.entries
                .keys()
                .filter(|id| !self.embeddings.contains_key(*id))
                .count()
        } else {
            self.entries.len()
        }
    }

    /// The attached embedding model, if any.
    pub fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.embedder.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use crate::codec;
    use crate::engine::{Config, Engine, MemoryInput, Txn};
    use crate::env::FixedEnvironment;
    use crate::index::Int8Vector;
    use crate::item::{Scope, Timestamp};
    use crate::keys::{ITEM_PREFIX, VECTOR_PREFIX};

    /// A vector of `dimensions` components from `seed`, none all zero.
    fn vector(seed: usize, dimensions: usize) -> Vec<f32> {
        let mut x = seed as u64 * 2_654_435_761 + 1;
        (0..dimensions)
            .map(|_| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            })
            .collect()
    }

    #[test]
    fn loading_sizes_the_vector_structures_from_the_records_not_by_doubling() {
        // 600 and 300 memories: not powers of two, so a list grown one
        // push at a time would hold 1,024 and 512.
        let mut engine = Engine::new(Config::default());
        let mut env = FixedEnvironment::new(Timestamp(1_700_000_000_000));
        let mut txn = Txn::default();
        let (alice, bob) = (Scope::workspace("alice", "w"), Scope::workspace("bob", "w"));
        let inputs = (0..900)
            .map(|i| {
                let scope = if i < 600 { alice.clone() } else { bob.clone() };
                MemoryInput::new(format!("note number {i} about topic {}", i * 7919), scope)
            })
            .collect();
        engine.ingest(inputs, &mut env, &mut txn).unwrap();
        assert_eq!(engine.items().count(), 900);
        let mut records = Vec::new();
        for (n, item) in engine.items().enumerate() {
            records.push((format!("{ITEM_PREFIX}{}", item.id), codec::encode_item(item)));
            let embedding = Int8Vector::quantize(&vector(n, 16));
            records.push((format!("{VECTOR_PREFIX}{}", item.id), codec::encode_vector(&embedding)));
        }
        let loaded = Engine::load(Config::default(), records, Some("test-model".into())).unwrap();
        assert_eq!(loaded.embeddings.len(), 900);
        assert!(loaded.embeddings.capacity() >= 900);
        assert_eq!(loaded.vector_docs.len(), 900);
        let mut held: Vec<(String, usize, usize)> = loaded
            .vectors
            .iter()
            .map(|(tenant, index)| (tenant.user_id.clone(), index.len(), index.tail_capacity()))
            .collect();
        held.sort();
        assert_eq!(
            held,
            [("alice".to_string(), 600, 600), ("bob".to_string(), 300, 300)],
            "each tenant's index is reserved for exactly the embeddings it loads"
        );
        // Loaded as the records are, whatever their order.
        for item in engine.items() {
            assert_eq!(
                loaded.embedding(&item.id).map(Int8Vector::len),
                Some(16),
                "`{}` keeps its embedding",
                item.id
            );
        }
    }
}
