//! [`Memory`]: the engine bound to a storage backend and an environment.
//!
//! Every write runs the same protocol: the engine applies the operation and
//! records its undo log, the resulting batch is committed to storage in one
//! atomic call, and if that call fails the engine rolls back. So after any
//! error the in-memory state equals what storage holds, and a reopen yields
//! the state before or after the operation, never a mixture.

use crate::embed::{Embedder, ModelTokens};
use crate::engine::{
    Config, DeleteAllResult, Engine, ImportResult, IngestResult, InjectQuery, ListPage, ListQuery,
    MemoryInput, MemoryPatch, RetrieveHit, RetrieveQuery, Stats, Txn, ITEM_PREFIX, MANIFEST_KEY,
    VECTOR_PREFIX,
};
use std::sync::Arc;

use crate::env::Environment;
use crate::error::Result;
use crate::inject::{EstimatedTokens, Injection, TokenCounter};
use crate::item::{MemoryItem, ScopeFilter};
use crate::storage::Storage;

/// A memory store: the public Rust API.
pub struct Memory<S: Storage, E: Environment> {
    engine: Engine,
    storage: S,
    env: E,
    tokens: Option<Box<dyn TokenCounter + Send + Sync>>,
}

impl<S: Storage, E: Environment> Memory<S, E> {
    /// Opens the store held by `storage`, verifying its records against the
    /// manifest (a torn write or damaged record is reported as `CORRUPT`).
    pub fn open(storage: S, env: E, config: Config) -> Result<Self> {
        let items = storage.scan(ITEM_PREFIX)?;
        let vectors = storage.scan(VECTOR_PREFIX)?;
        let manifest = storage.get(MANIFEST_KEY)?;
        let engine = Engine::load(config, items, vectors, manifest.as_deref())?;
        Ok(Memory {
            engine,
            storage,
            env,
            tokens: None,
        })
    }

    /// Attaches an embedding model (retrieval becomes hybrid and injection
    /// counts tokens with the model's tokenizer). Memories without an
    /// embedding from this model are embedded now, in one commit; returns
    /// how many.
    pub fn set_embedder(&mut self, embedder: Arc<dyn Embedder>) -> Result<usize> {
        self.write(|engine, _, txn| engine.attach_embedder(embedder, txn))
    }

    /// Replaces the token counter used by [`Memory::inject`] (by default the
    /// attached model's tokenizer, or [`EstimatedTokens`] without a model).
    pub fn set_token_counter(&mut self, counter: Box<dyn TokenCounter + Send + Sync>) {
        self.tokens = Some(counter);
    }

    /// The engine, for read-only inspection.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The storage backend.
    pub fn storage(&self) -> &S {
        &self.storage
    }

    /// The environment (clock and ids).
    pub fn env_mut(&mut self) -> &mut E {
        &mut self.env
    }

    /// Closes the store and hands back its storage.
    pub fn into_storage(self) -> S {
        self.storage
    }

    /// Runs one write operation under the commit-or-rollback protocol.
    fn write<T>(
        &mut self,
        op: impl FnOnce(&mut Engine, &mut E, &mut Txn) -> Result<T>,
    ) -> Result<T> {
        let mut txn = Txn::default();
        let result = op(&mut self.engine, &mut self.env, &mut txn);
        self.finish(txn, result)
    }

    /// Ingests memories; see [`Engine::ingest`].
    pub fn ingest(&mut self, inputs: Vec<MemoryInput>) -> Result<Vec<IngestResult>> {
        self.write(|engine, env, txn| engine.ingest(inputs, env, txn))
    }

    /// Retrieves relevant memories; see [`Engine::retrieve`].
    pub fn retrieve(&mut self, query: &RetrieveQuery) -> Result<Vec<RetrieveHit>> {
        self.write(|engine, env, txn| engine.retrieve(query, env.now(), txn))
    }

    /// Renders a bounded, cited block; see [`Engine::inject`].
    pub fn inject(&mut self, query: &InjectQuery) -> Result<Injection> {
        let mut txn = Txn::default();
        let now = self.env.now();
        let model = self.engine.embedder().cloned();
        let model_tokens = model.as_deref().map(ModelTokens);
        let counter = token_counter(&self.tokens, model_tokens.as_ref());
        let result = self.engine.inject(query, counter, now, &mut txn);
        self.finish(txn, result)
    }

    /// Commits `txn` when `result` is `Ok`, rolls it back otherwise.
    fn finish<T>(&mut self, txn: Txn, result: Result<T>) -> Result<T> {
        let value = match result {
            Ok(v) => v,
            Err(e) => {
                self.engine.rollback(txn);
                return Err(e);
            }
        };
        let batch = self.engine.batch_for(&txn);
        if !batch.is_empty() {
            if let Err(e) = self.storage.commit(&batch) {
                self.engine.rollback(txn);
                return Err(e.into());
            }
        }
        Ok(value)
    }

    /// One memory by id.
    pub fn get(&self, id: &str) -> Result<MemoryItem> {
        self.engine.get(id).cloned()
    }

    /// One page of memories, newest first.
    pub fn list(&self, query: &ListQuery) -> Result<ListPage> {
        self.engine.list(query)
    }

    /// Changes one memory; see [`Engine::update`].
    pub fn update(&mut self, id: &str, patch: MemoryPatch) -> Result<MemoryItem> {
        self.write(|engine, env, txn| engine.update(id, patch, env.now(), txn))
    }

    /// Soft- or hard-deletes one memory; see [`Engine::delete`].
    pub fn delete(&mut self, id: &str, hard: bool) -> Result<()> {
        self.write(|engine, env, txn| engine.delete(id, hard, env.now(), txn))
    }

    /// Deletes every memory the filter selects; see [`Engine::delete_all`].
    pub fn delete_all(&mut self, filter: &ScopeFilter, hard: bool) -> Result<DeleteAllResult> {
        self.write(|engine, env, txn| engine.delete_all(filter, hard, env.now(), txn))
    }

    /// The whole store as a versioned, checksummed JSON document.
    pub fn export(&self) -> String {
        self.engine.export(self.env.now())
    }

    /// Imports an export atomically; see [`Engine::import`].
    pub fn import(&mut self, data: &str) -> Result<ImportResult> {
        self.write(|engine, env, txn| engine.import(data, env.now(), txn))
    }

    /// Counts over the memories the filter selects.
    pub fn stats(&self, filter: &ScopeFilter) -> Stats {
        let model_tokens = self.engine.embedder().map(|m| ModelTokens(m.as_ref()));
        let estimate = token_counter(&self.tokens, model_tokens.as_ref()).is_estimate();
        self.engine.stats(filter, estimate)
    }
}

/// The counter injection uses: the caller's, else the model's tokenizer,
/// else the documented estimate.
fn token_counter<'a>(
    custom: &'a Option<Box<dyn TokenCounter + Send + Sync>>,
    model: Option<&'a ModelTokens<'a>>,
) -> &'a dyn TokenCounter {
    match (custom, model) {
        (Some(counter), _) => counter.as_ref(),
        (None, Some(model)) => model,
        (None, None) => &EstimatedTokens,
    }
}
