//! Embeddings: each memory's own vector as stored (int8), the model that
//! makes them, and the context vectors of ranking (`docs/design.md`,
//! "Embeddings"). Each embedding is held once: by its tenant's vector index
//! when the memory is live (the index scores its context vector from it and
//! its predecessor's), else by the engine (`embeddings`: soft-deleted
//! memories, an embedding the index refuses). `Engine::set_vector` is the
//! only code that changes an embedding; it keeps the vector index in step,
//! as `Engine::set` does for memories.

use std::collections::HashMap;
use std::sync::Arc;

use super::catalog::{FastMap, TenantKey};
use super::followers::Followed;
use super::txn::{Txn, Undo};
use super::Engine;
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::room;
use crate::index::{Int8Ref, Int8Vector, VectorIndex, VectorParams};
use crate::item::Tenant;
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

}

impl Engine {
    /// Replaces (or removes) the embedding of memory `id`, keeping the
    /// vector index in step. Returns the previous embedding. An embedding
    /// is held by its memory's doc number, so it needs the memory: without
    /// one nothing changes (every path that removes a memory removes its
    /// embedding first, [`Engine::write_erased`], and a rollback restores
    /// the memory before its embedding).
    pub(super) fn set_vector(
        &mut self,
        id: &str,
        new: Option<StoredVector>,
    ) -> Option<StoredVector> {
        let doc = self.entries.get(id)?.doc;
        self.unindex_vector(doc);
        let old = match new {
            Some(v) => self.embeddings.insert(doc, v),
            None => self.embeddings.remove(&doc),
        };
        self.index_vector(id);
        old
    }

    /// Forgets the embedding of `doc`, whose memory is being removed (its
    /// doc number is freed for another memory). The removal paths have
    /// taken it already ([`Engine::write_erased`]); this keeps a record
    /// that removed a memory without its embedding from leaving one behind.
    pub(super) fn forget_vector(&mut self, doc: u32) {
        self.unindex_vector(doc);
        self.embeddings.remove(&doc);
    }

    /// Erases memory `id` with its embedding, recording both undo steps:
    /// the embedding first, while the memory's doc number still finds it.
    pub(super) fn write_erased(&mut self, txn: &mut Txn, id: &str) {
        if self.has_embedding(id) {
            self.write_vector(txn, id, None);
        }
        self.write(txn, id, None);
    }

    /// Sizes the embeddings, the vector indexes' doc maps and
    /// `vector_docs` for the embeddings `ids` about to be loaded, whose
    /// memories are loaded already, so they do not double while a store
    /// opens (each doubling holds the old and the new table at once, and
    /// WebAssembly memory keeps that peak). `dimensions` is the
    /// embeddings' length.
    pub(super) fn reserve_vectors(&mut self, ids: &[&str], dimensions: usize) {
        // `embeddings` holds each loaded embedding only on its way to its
        // index (and those of soft-deleted memories): not reserved. One walk: a count per tenant, its names copied once per tenant
        // (looked up by the memory's borrowed scope).
        let mut per_tenant: FastMap<Tenant, usize> = FastMap::default();
        for id in ids {
            let Some(entry) = self.entries.get(*id).filter(|e| !e.is_deleted()) else {
                continue;
            };
            let scope: &dyn TenantKey = entry.scope();
            match per_tenant.get_mut(scope) {
                Some(n) => *n += 1,
                None => {
                    per_tenant.insert(entry.scope().tenant(), 1);
                }
            }
        }
        self.vector_docs.reserve(room::with_room(self.doc_owner.len()));
        for (tenant, n) in per_tenant {
            self.vectors
                .entry(Arc::new(tenant))
                .or_insert_with(|| VectorIndex::new(dimensions, VectorParams::default()))
                .reserve(n);
        }
    }

    /// Drops the vector indexes left empty (one [`Engine::reserve_vectors`]
    /// made for embeddings that were not indexed after all).
    pub(super) fn drop_empty_vector_indexes(&mut self) {
        self.vectors.retain(|_, index| !index.is_empty());
    }

    /// Takes a doc out of the vector index it sits in, if any: its
    /// embedding goes back to `embeddings` (where [`Engine::index_vector`]
    /// finds it when the memory is indexed again).
    pub(super) fn unindex_vector(&mut self, doc: u32) {
        let Some(tenant) = self.vector_docs.remove(doc) else {
            return;
        };
        if let Some(ix) = self.vectors.get_mut(&tenant) {
            if let Some(own) = ix.remove(doc) {
                self.embeddings.insert(doc, StoredVector::loaded(own));
            }
            if ix.is_empty() {
                self.vectors.remove(&tenant);
            }
        }
    }

    /// Moves the embedding of a live memory into its tenant's vector index,
    /// following the memory it follows there, and links the memories that
    /// follow it and sit in that index to it.
    pub(super) fn index_vector(&mut self, id: &str) {
        self.index_vector_linked(id, true);
    }

    /// Loads the embedding of memory `id`, whose memory is loaded, as an
    /// open decodes it: into its tenant's vector index when the memory is
    /// live, as [`Engine::set_vector`] would, but linked to no row
    /// ([`Engine::link_loaded_vectors`] links them all once every one is
    /// in). The first index made makes room for `room` rows.
    pub(super) fn load_vector(&mut self, id: &str, vector: StoredVector, room: usize) {
        let Some(entry) = self.entries.get(id) else {
            return;
        };
        // Only the first tenant's index makes room: a room per tenant for
        // the rows still to come would add up to many times the store.
        if !entry.is_deleted() && self.vectors.is_empty() {
            let tenant = entry.scope().tenant();
            let mut index = VectorIndex::new(vector.vector.len(), VectorParams::default());
            // With room for the writes after the open (`crate::room`).
            index.reserve(room::with_room(room));
            self.vectors.insert(Arc::new(tenant), index);
            self.vector_docs.reserve(room::with_room(self.doc_owner.len()));
        }
        self.embeddings.insert(entry.doc, vector);
        self.index_vector_linked(id, false);
    }

    /// Links every row of the vector indexes to the row of the memory it
    /// follows, when that memory's row is in the same index: what
    /// [`Engine::set_vector`] one embedding after another leaves, in one
    /// pass over the rows. Then frees the room the indexes did not use.
    pub(super) fn link_loaded_vectors(&mut self) {
        // Linked as found, not listed first: a list of every link would be
        // the last thing an open allocates, above all the rest.
        let Engine {
            vector_docs,
            doc_owner,
            entries,
            vectors,
            ..
        } = self;
        for (doc, tenant) in vector_docs.iter() {
            let prev = doc_owner
                .get(doc as usize)
                .and_then(Option::as_ref)
                .and_then(|id| entries.get(&**id)?.follows())
                .and_then(|follows| entries.get(follows))
                .map(|entry| entry.doc)
                .filter(|&prev| vector_docs.get(prev) == Some(tenant));
            if let (Some(prev), Some(index)) = (prev, vectors.get_mut(tenant)) {
                index.link(doc, Some(prev));
            }
        }
        for index in self.vectors.values_mut() {
            index.leave_room();
        }
    }

    /// Takes every indexed embedding back out of the vector indexes, with
    /// its memory's id (an open that found more embeddings than it can
    /// load row by row: they go in one by one, in key order, instead).
    pub(super) fn unload_vectors(&mut self) -> Vec<(String, StoredVector)> {
        let mut taken = Vec::with_capacity(self.vector_docs.len());
        for (doc, tenant) in self.vector_docs.drain() {
            let own = self.vectors.get_mut(&tenant).and_then(|index| index.remove(doc));
            let id = self.doc_owner.get(doc as usize).and_then(Option::as_ref);
            if let (Some(own), Some(id)) = (own, id) {
                taken.push((id.to_string(), StoredVector::loaded(own)));
            }
        }
        self.vectors.clear();
        taken
    }

    /// [`Engine::index_vector`], linking the rows (`linked`) or leaving them
    /// unlinked for [`Engine::link_loaded_vectors`].
    fn index_vector_linked(&mut self, id: &str, linked: bool) {
        let Some(entry) = self.entries.get(id) else {
            return;
        };
        let doc = entry.doc;
        if entry.is_deleted() || self.vector_docs.contains(doc) {
            return;
        }
        let Some(own) = self.embeddings.remove(&doc) else {
            return;
        };
        let tenant = entry.scope().tenant();
        let tenant = match self.vectors.get_key_value(&tenant) {
            Some((held, _)) => held.clone(),
            None => Arc::new(tenant),
        };
        let prev = entry
            .follows()
            .filter(|_| linked)
            .and_then(|p| self.entries.get(p))
            .map(|e| e.doc);
        let followers: Vec<u32> = if linked {
            self.followers
                .of(Followed::Doc(doc))
                .filter(|&f| self.vector_docs.get(f) == Some(&tenant))
                .collect()
        } else {
            Vec::new()
        };
        let index = self
            .vectors
            .entry(tenant.clone())
            .or_insert_with(|| VectorIndex::new(own.vector.len(), VectorParams::default()));
        match index.insert_own(doc, own.vector, prev) {
            Ok(()) => {
                for follower in followers {
                    index.link(follower, Some(doc));
                }
                self.vector_docs.insert(doc, tenant);
            }
            Err(refused) => {
                if index.is_empty() {
                    self.vectors.remove(&tenant);
                }
                self.embeddings.insert(doc, StoredVector::loaded(refused));
            }
        }
    }

    /// The context vector of memory `doc`, which follows memory `follows`:
    /// its embedding plus the embedding of the memory it follows,
    /// normalized (see [`crate::rank`]).
    pub(super) fn context_vector(&self, doc: u32, follows: Option<&str>) -> Option<Vec<f32>> {
        let own = self.embedding_of(doc)?;
        let previous = follows
            .and_then(|p| self.embedding(p))
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
    pub(crate) fn embedding(&self, id: &str) -> Option<Int8Ref<'_>> {
        self.embedding_of(self.entries.get(id)?.doc)
    }

    /// The stored embedding of `doc`: from its tenant's vector index, or
    /// from `embeddings` when no index holds it.
    pub(super) fn embedding_of(&self, doc: u32) -> Option<Int8Ref<'_>> {
        match self.vector_docs.get(doc) {
            Some(tenant) => self.vectors.get(tenant)?.embedding(doc),
            None => self.embeddings.get(&doc).map(|v| v.vector.view()),
        }
    }

    /// Whether memory `id` has an embedding.
    pub(super) fn has_embedding(&self, id: &str) -> bool {
        self.entries
            .get(id)
            .is_some_and(|e| self.is_embedded(e.doc))
    }

    /// Whether `doc` has an embedding.
    fn is_embedded(&self, doc: u32) -> bool {
        self.vector_docs.contains(doc) || self.embeddings.contains_key(&doc)
    }

    /// How many memories have an embedding.
    pub(super) fn embedding_count(&self) -> usize {
        self.vector_docs.len() + self.embeddings.len()
    }

    /// The id of each memory that has an embedding, in no order.
    pub(super) fn embedded_ids(&self) -> impl Iterator<Item = &str> {
        self.vector_docs
            .iter()
            .map(|(doc, _)| doc)
            .chain(self.embeddings.keys().copied())
            .filter_map(|doc| self.id_of(doc))
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
            let stale: Vec<String> = self.embedded_ids().map(str::to_string).collect();
            for id in stale {
                self.write_vector(txn, &id, None);
            }
        }
        self.model_id = Some(model);
        self.embedder = Some(embedder);
        let mut missing: Vec<(&str, std::borrow::Cow<str>)> = self
            .entries
            .iter()
            .filter(|(_, e)| !self.is_embedded(e.doc))
            .map(|(id, e)| (id, text::said_text(e.text(), e.speaker())))
            .collect();
        missing.sort();
        missing.truncate(limit);
        let missing: Vec<(String, String)> = missing
            .into_iter()
            .map(|(id, text)| (id.to_string(), text.into_owned()))
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
                .values()
                .filter(|e| !self.is_embedded(e.doc))
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
pub(super) mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use crate::codec;
    use crate::embed::Embedder;
    use crate::engine::{Change, Config, Engine, MemoryInput, MemoryPatch, SummaryInput, Txn};
    use crate::text::tokens::EstimatedTokens;
    use crate::env::{Environment, FixedEnvironment};
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

    /// Hashes each word of a text into one of 16 components: distinct
    /// texts get distinct embeddings, with no model file.
    pub(in crate::engine) struct HashedWords;

    impl Embedder for HashedWords {
        fn model_id(&self) -> &str {
            "test/hashed-words"
        }

        fn dimensions(&self) -> usize {
            16
        }

        fn embed_batch(&self, texts: &[&str]) -> crate::error::Result<Vec<Vec<f32>>> {
            Ok(texts
                .iter()
                .map(|text| {
                    let mut v = vec![0.1f32; 16];
                    for word in text.split_whitespace() {
                        let h = word.bytes().fold(7usize, |h, b| h * 31 + usize::from(b));
                        v[h % 16] += 1.0;
                    }
                    v
                })
                .collect())
        }

        fn count_tokens(&self, text: &str) -> usize {
            text.split_whitespace().count()
        }
    }

    /// Every memory's embedding codes, by id.
    fn embeddings_by_id(engine: &Engine) -> BTreeMap<String, Vec<i8>> {
        engine
            .items()
            .filter_map(|item| Some((item.id.clone(), engine.embedding(&item.id)?.codes().to_vec())))
            .collect()
    }

    /// No embedding is held under a doc number no memory holds.
    fn assert_no_orphan(engine: &Engine) {
        for doc in engine.embeddings.keys().copied().chain(engine.vector_docs.iter().map(|(doc, _)| doc)) {
            assert!(engine.entry_of(doc).is_some(), "doc {doc} holds an embedding but no memory");
        }
    }

    #[test]
    fn each_path_that_erases_a_memory_erases_its_embedding_and_a_rollback_restores_it() {
        let mut engine = Engine::new(Config::default());
        let mut env = FixedEnvironment::new(Timestamp(1_700_000_000_000));
        engine
            .attach_embedder(Arc::new(HashedWords), &mut Txn::default())
            .unwrap();
        let scope = Scope::workspace("u", "w");
        let texts = [
            "alpha keeps bees",
            "bravo rides horses",
            "charlie paints murals",
            "delta grows tomatoes",
            "echo sails boats",
        ];
        let mut txn = Txn::default();
        let ids: Vec<String> = engine
            .ingest(
                texts.iter().map(|t| MemoryInput::new(*t, scope.clone())).collect(),
                &mut env,
                &mut txn,
            )
            .unwrap()
            .into_iter()
            .map(|r| r.id.unwrap())
            .collect();
        let summary = engine
            .store_summary(
                SummaryInput {
                    scope: scope.clone(),
                    text: "a summary of alpha and bravo".into(),
                    sources: ids[..2].to_vec(),
                },
                &mut env,
                &mut Txn::default(),
            )
            .unwrap()
            .id;
        engine
            .sync_file(
                &scope,
                "notes/garden.md",
                "# Garden\n\nthe roses need pruning in march\n",
                &EstimatedTokens,
                &mut env,
                &mut Txn::default(),
            )
            .unwrap();
        let chunks: Vec<String> = engine
            .chunks_of_file(&scope, "notes/garden.md")
            .iter()
            .map(|c| c.id.clone())
            .collect();
        assert!(!chunks.is_empty());
        let before = embeddings_by_id(&engine);
        assert_eq!(before.len(), engine.items().count(), "every memory is embedded");
        assert_eq!(engine.embedding_count(), before.len());
        assert_no_orphan(&engine);

        let now = env.now();
        type Path<'a> = Box<dyn Fn(&mut Engine, &mut Txn) + 'a>;
        let paths: Vec<(&str, Vec<&String>, Path)> = vec![
            (
                "hard delete",
                vec![&ids[2]],
                Box::new(|e, txn| e.delete(&ids[2], true, now, txn).unwrap()),
            ),
            (
                // Erasing a source erases the summary listing it.
                "a source erased with its summary",
                vec![&ids[0], &summary],
                Box::new(|e, txn| e.delete(&ids[0], true, now, txn).unwrap()),
            ),
            (
                "a file removed with its chunks",
                chunks.iter().collect(),
                Box::new(|e, txn| assert!(e.remove_file(&scope, "notes/garden.md", txn))),
            ),
        ];
        for (name, erased, path) in paths {
            let mut txn = Txn::default();
            path(&mut engine, &mut txn);
            let after = embeddings_by_id(&engine);
            for id in &erased {
                assert!(engine.get(id).is_err(), "{name}: `{id}` is erased");
            }
            assert_eq!(after.len(), before.len() - erased.len(), "{name}");
            assert_eq!(engine.embedding_count(), after.len(), "{name}");
            assert_no_orphan(&engine);
            let batch = engine.batch_for(&txn);
            for id in &erased {
                let key = format!("{VECTOR_PREFIX}{id}");
                assert!(
                    batch.iter().any(|(k, c)| k == key && matches!(c, Change::Delete)),
                    "{name}: `{key}` is deleted"
                );
            }
            engine.rollback(txn);
            assert_eq!(embeddings_by_id(&engine), before, "{name}: a rollback restores them");
            assert_eq!(engine.embedding_count(), before.len(), "{name}");
            assert_no_orphan(&engine);
        }

        // A memory removed by a record that kept its embedding (a store
        // another writer changed) leaves none behind for the memory that
        // takes its doc number next.
        let doc = engine.entries[&ids[4]].doc;
        let mut reused = engine.entries[&ids[4]].item().into_owned();
        engine.set(&ids[4], None);
        assert!(!engine.is_embedded(doc));
        reused.id = "m-reused".into();
        engine.set("m-reused", Some(reused));
        assert_eq!(engine.entries["m-reused"].doc, doc, "the doc number is reused");
        assert!(engine.embedding("m-reused").is_none());
        assert_no_orphan(&engine);
        let keys = engine.record_keys();
        assert!(!keys.contains(&format!("{VECTOR_PREFIX}{}", ids[4])));
        assert!(!keys.contains(&format!("{VECTOR_PREFIX}m-reused")));
        assert_eq!(
            keys.iter().filter(|k| k.starts_with(VECTOR_PREFIX)).count(),
            engine.embedding_count()
        );
    }

    /// The index's score of each live memory against the cosine of the
    /// query with its context vector as ranking computes it
    /// ([`Engine::context_vector`]), or with its own embedding for a
    /// memory whose predecessor the index does not hold (soft-deleted).
    fn assert_index_scores_contexts(engine: &Engine, query: &[f32]) {
        let unit: Vec<f32> = {
            let norm = query.iter().map(|x| x * x).sum::<f32>().sqrt();
            query.iter().map(|x| x / norm).collect()
        };
        let dot = |a: &[f32]| a.iter().zip(&unit).map(|(x, y)| x * y).sum::<f32>();
        let mut scored = 0;
        for (tenant, index) in &engine.vectors {
            for (doc, score) in index.search(query, usize::MAX, &|_| true) {
                let item = engine.entry_of(doc).unwrap().item();
                assert_eq!(item.scope.tenant(), **tenant);
                assert!(!item.is_deleted());
                let prev_live = item
                    .follows
                    .as_ref()
                    .and_then(|p| engine.entries.get(p))
                    .is_some_and(|p| !p.is_deleted() && engine.has_embedding(&p.item().id));
                let expected = if prev_live || item.follows.is_none() {
                    dot(&engine.context_vector(doc, item.follows.as_deref()).unwrap())
                } else {
                    let own = engine.embedding(&item.id).unwrap().to_f32();
                    let norm = own.iter().map(|x| x * x).sum::<f32>().sqrt();
                    dot(&own) / norm
                };
                assert!(
                    (score - expected).abs() < 1e-3,
                    "`{}`: the index scores {score}, its context {expected}",
                    item.id
                );
                scored += 1;
            }
        }
        let live_embedded = engine
            .items()
            .filter(|i| !i.is_deleted() && engine.has_embedding(&i.id))
            .count();
        assert_eq!(scored, live_embedded, "every live embedded memory is indexed once");
        assert_eq!(engine.embedding_count(), engine.items().filter(|i| engine.has_embedding(&i.id)).count());
    }

    #[test]
    fn the_index_holds_each_embedding_once_and_scores_the_context_of_each_memory() {
        let mut engine = Engine::new(Config::default());
        let mut env = FixedEnvironment::new(Timestamp(1_700_000_000_000));
        engine
            .attach_embedder(Arc::new(HashedWords), &mut Txn::default())
            .unwrap();
        let (alice, bob) = (Scope::workspace("alice", "w"), Scope::workspace("bob", "w"));
        let words = ["apple", "river", "stone", "cloud", "maple", "tiger", "piano", "ocean"];
        let mut ids = Vec::new();
        // One conversation per tenant: each turn follows the one before.
        for turn in 0..16 {
            let scope = if turn % 2 == 0 { alice.clone() } else { bob.clone() };
            let text = format!("{} {} turn{turn}", words[turn % 8], words[(turn * 3 + 1) % 8]);
            let result = engine
                .ingest(vec![MemoryInput::new(text, scope)], &mut env, &mut Txn::default())
                .unwrap();
            ids.push(result[0].id.clone().unwrap());
            env.advance_ms(1_000);
        }
        let followers = engine.items().filter(|i| i.follows.is_some()).count();
        assert!(followers >= 10, "the turns follow one another ({followers})");
        assert!(engine.embeddings.is_empty(), "every embedding is in an index");
        let queries: Vec<Vec<f32>> = ["apple river", "stone tiger", "ocean piano maple"]
            .iter()
            .map(|q| HashedWords.embed_batch(&[*q]).unwrap().remove(0))
            .collect();
        let check = |engine: &Engine| {
            for query in &queries {
                assert_index_scores_contexts(engine, query);
            }
        };
        check(&engine);

        let now = env.now();
        let mut txn = Txn::default();
        // A soft-deleted memory's embedding leaves the index for the
        // engine's map; its follower is then scored by its own.
        engine.delete(&ids[4], false, now, &mut txn).unwrap();
        assert_eq!(engine.embeddings.len(), 1);
        check(&engine);
        // A new text re-embeds a memory: its followers follow the new one.
        engine
            .update(&ids[6], MemoryPatch { text: Some("cloud ocean anew".into()), ..MemoryPatch::default() }, now, &mut txn)
            .unwrap();
        check(&engine);
        // Erasing a memory unlinks its follower.
        engine.delete(&ids[8], true, now, &mut txn).unwrap();
        check(&engine);
        engine.rollback(txn);
        assert!(engine.embeddings.is_empty());
        check(&engine);

        // Loading the records links each memory to its predecessor
        // whatever the order the embeddings come in.
        let mut records: Vec<(String, Vec<u8>)> = Vec::new();
        for item in engine.items() {
            records.push((format!("{ITEM_PREFIX}{}", item.id), codec::encode_item(&item)));
            let own = engine.embedding(&item.id).unwrap();
            records.push((format!("{VECTOR_PREFIX}{}", item.id), codec::encode_vector(own)));
        }
        records.reverse();
        let loaded = Engine::load(Config::default(), records, Some("test/hashed-words".into())).unwrap();
        assert_eq!(embeddings_by_id(&loaded), embeddings_by_id(&engine));
        check(&loaded);
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
            records.push((format!("{ITEM_PREFIX}{}", item.id), codec::encode_item(&item)));
            let embedding = Int8Vector::quantize(&vector(n, 16));
            records.push((format!("{VECTOR_PREFIX}{}", item.id), codec::encode_vector(&embedding)));
        }
        let loaded = Engine::load(Config::default(), records, Some("test-model".into())).unwrap();
        assert!(loaded.embeddings.is_empty(), "each embedding is held by its index only");
        assert_eq!(loaded.vector_docs.len(), 900);
        let mut held: Vec<(String, usize, usize)> = loaded
            .vectors
            .iter()
            .map(|(tenant, index)| (tenant.user_id.clone(), index.len(), index.tail_capacity()))
            .collect();
        held.sort();
        assert_eq!(
            held,
            [
                ("alice".to_string(), 600, crate::room::with_room(600)),
                ("bob".to_string(), 300, crate::room::with_room(300))
            ],
            "each tenant's index is reserved for the embeddings it loads, with the room an open leaves"
        );
        // Loaded as the records are, whatever their order.
        for item in engine.items() {
            assert_eq!(
                loaded.embedding(&item.id).map(|e| e.len()),
                Some(16),
                "`{}` keeps its embedding",
                item.id
            );
        }
    }
}
