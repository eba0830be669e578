//! The engine bound to storage and an environment: [`AsyncMemory`] for
//! storage that answers asynchronously (the WebAssembly package), and
//! [`Memory`], its blocking form for synchronous backends (native programs).
//!
//! Every write runs the same protocol, implemented once in
//! [`AsyncMemory`]: the engine applies the operation and records its undo
//! log; the resulting batch is committed to storage in one atomic call,
//! guarded by the manifest this store last saw; if the call fails, the engine
//! rolls back. So after any error the in-memory state equals what storage
//! holds, and a reopen yields the state before or after the operation, never
//! a mixture. When another writer changed the store first (another browser
//! tab on the same IndexedDB database), the commit reports a conflict, the
//! store reloads from storage and runs the operation again.

use std::borrow::Cow;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use crate::embed::{Embedder, ModelTokens};
use crate::engine::{
    Changes, Config, DeleteAllResult, Engine, ImportResult, IngestResult, InjectQuery, ListPage, ListQuery, PurgeResult,
    MemoryInput, MemoryPatch, RetrieveHit, RetrieveQuery, Stats, Txn,
};
use crate::engine::{SummaryContext, SummaryInput, SummaryQuery};
use crate::env::Environment;
use crate::error::{Error, Result};
use crate::files::{FileSync, StoredFile};
use crate::history::HistoryEvent;
use crate::hot_file::{self, HotFileSync};
use crate::inject::Injection;
use crate::item::{MemoryItem, Scope, ScopeFilter};
use crate::keys::MANIFEST_KEY;
use crate::layout::{self, Layout, Read};
use crate::memory_tool::{self, MemoryToolResult};
use crate::progress::Progress;
use crate::messages::{self, MessageIngestResult, MessageOptions};
use crate::operations::{OperationsRequest, OperationsResult};
use crate::storage::{AsyncStorage, Batch, Expect, Storage, StorageError};
use crate::text::tokens::{EstimatedTokens, TokenCounter};

/// How many times a write is tried when other writers keep changing the
/// store first. An instance whose view is current commits at once, so
/// while another instance writes a burst (a tab importing, a request
/// ingesting turn after turn) this one loses each race until the burst
/// ends; a retry costs a read of the manifest and of the segments it lacks.
const WRITE_ATTEMPTS: usize = 64;

/// Inputs or memories whose embeddings an observed ingest or import
/// computes between two checkpoints (`crate::progress`).
const PREPARE_BATCH: usize = 64;

/// Memories an observed embedding backfill embeds per commit.
const BACKFILL_BATCH: usize = 256;

/// A token counter chosen by the caller.
type CustomCounter = Box<dyn TokenCounter + Send + Sync>;

/// A memory store over asynchronous storage: the public API of the
/// WebAssembly bindings. Calls take `&mut self`, so one runs at a time; a
/// host that shares the store between tasks serializes them (the JavaScript
/// bindings use an async mutex).
pub struct AsyncMemory<S, E> {
    engine: Engine,
    /// Where the engine's records are in storage.
    layout: Layout,
    storage: S,
    env: E,
    tokens: Option<CustomCounter>,
    /// The manifest record as storage holds it after this store's last
    /// load or commit: the expectation of the next commit.
    stored_manifest: Option<Vec<u8>>,
    /// A model detached by a reload, attached again by the next write.
    reattach: Option<Arc<dyn Embedder>>,
    /// Set while `purge_expired` runs: its own count is the erasure, so
    /// the purge every write of a store with a policy begins with is not
    /// run before it.
    purging: bool,
}

impl<S: AsyncStorage, E: Environment> AsyncMemory<S, E> {
    /// Opens the store held by `storage`, verifying its records against the
    /// manifest (a torn write or damaged record is reported as `CORRUPT`).
    pub async fn open(mut storage: S, env: E, config: Config) -> Result<Self> {
        let opened = layout::open(&mut storage, config).await?;
        Ok(AsyncMemory {
            engine: opened.engine,
            layout: opened.layout,
            storage,
            env,
            tokens: None,
            stored_manifest: opened.manifest,
            reattach: None,
            purging: false,
        })
    }

    /// Attaches an embedding model (retrieval becomes hybrid and injection
    /// counts tokens with the model's tokenizer). Memories without an
    /// embedding from this model are embedded now, in one commit; returns
    /// how many.
    pub async fn set_embedder(&mut self, embedder: Arc<dyn Embedder>) -> Result<usize> {
        self.reattach = None;
        self.write(|engine, _, txn| engine.attach_embedder(embedder.clone(), txn))
            .await
    }

    /// [`AsyncMemory::set_embedder`] observed by `progress`, in units of
    /// memories embedded: the backfill commits in batches of 256 with a
    /// checkpoint before each, so a stop leaves the store as before the
    /// call (stopped before the first batch) or with the model attached and
    /// whole batches embedded; attaching the model again embeds the rest.
    pub async fn set_embedder_observed(
        &mut self,
        embedder: Arc<dyn Embedder>,
        progress: &mut impl Progress,
    ) -> Result<usize> {
        self.reattach = None;
        let total = self.engine.unembedded(embedder.model_id());
        let mut done = 0;
        loop {
            progress.report(done, total);
            progress.checkpoint().await?;
            let embedded = self
                .write(|engine, _, txn| {
                    engine.attach_embedder_upto(embedder.clone(), BACKFILL_BATCH, txn)
                })
                .await?;
            done += embedded;
            // Memories another writer adds meanwhile are embedded by the
            // next attach (or by that writer, if it has the model).
            if embedded < BACKFILL_BATCH || done >= total {
                break;
            }
        }
        // The last report is `total`, once.
        if total > 0 {
            progress.report(total, total);
        }
        Ok(done)
    }

    /// Computes the embeddings of `texts` (one per input, `None` for an
    /// input without one) for the next operation, in batches with a
    /// checkpoint before each.
    async fn prepare(
        &mut self,
        texts: &[Option<String>],
        progress: &mut impl Progress,
    ) -> Result<()> {
        let total = texts.len();
        if texts.is_empty() {
            // Nothing to report before the final `0 of 0`.
            return progress.checkpoint().await;
        }
        for (i, chunk) in texts.chunks(PREPARE_BATCH).enumerate() {
            progress.report(i * PREPARE_BATCH, total);
            progress.checkpoint().await?;
            let chunk: Vec<&str> = chunk.iter().flatten().map(String::as_str).collect();
            self.engine.prepare(&chunk)?;
        }
        Ok(())
    }

    /// Replaces the token counter used by [`AsyncMemory::inject`] (by
    /// default the attached model's tokenizer, or [`EstimatedTokens`]).
    pub fn set_token_counter(&mut self, counter: CustomCounter) {
        self.tokens = Some(counter);
    }

    /// The engine, for read-only inspection by the tests.
    #[cfg(feature = "testing")]
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The store's settings.
    pub fn config(&self) -> &Config {
        self.engine.config()
    }

    /// Checks an input as [`AsyncMemory::ingest`] would, without storing
    /// anything: a caller can report every bad input of a batch first.
    pub fn check_input(&self, input: &MemoryInput) -> Result<()> {
        self.engine.check_input(input)
    }

    /// Checks a retrieval query without running it.
    pub fn check_query(&self, query: &RetrieveQuery) -> Result<()> {
        self.engine.check_query(query)
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

    /// Closes the store and hands back its storage and its engine apart, so
    /// that a process about to exit can release the storage (a directory's
    /// lock) and leave the engine's memory to the operating system instead
    /// of freeing it piece by piece (the `memtide` CLI).
    pub fn into_parts(self) -> (S, Engine) {
        (self.storage, self.engine)
    }

    /// The manifest record storage holds as of this store's last load or
    /// commit: it changes with every committed write, so hosts compare it to
    /// tell other instances that the store changed.
    pub fn stored_manifest(&self) -> Option<&[u8]> {
        self.stored_manifest.as_deref()
    }

    /// Reloads from storage if another writer changed it since this store
    /// last looked; returns whether it did. Hosts call it when told of a
    /// change (the JavaScript bindings on a `BroadcastChannel` message).
    pub async fn refresh(&mut self) -> Result<bool> {
        let current = self.storage.get(MANIFEST_KEY).await?;
        if current == self.stored_manifest {
            return Ok(false);
        }
        self.reload().await?;
        if self.reattach.is_some() {
            self.write(|_, _, _| Ok(())).await?;
        }
        Ok(true)
    }

    /// Brings the in-memory state to what storage holds: applies what
    /// other writers committed since this store last looked, reading only
    /// the segments it lacks (`docs/format.md`, section 2.2), else reads
    /// the whole store again.
    async fn reload(&mut self) -> Result<()> {
        let model = self.engine.embedder().cloned();
        if !self.catch_up().await? {
            let opened = layout::open(&mut self.storage, self.engine.config().clone()).await?;
            self.engine = opened.engine;
            self.layout = opened.layout;
            self.stored_manifest = opened.manifest;
        }
        self.reattach = model.or(self.reattach.take());
        Ok(())
    }

    /// Applies what other writers committed to the engine as it is; false
    /// when it cannot (a store of another format, a model changed, a
    /// segment gone meanwhile), and nothing changed.
    async fn catch_up(&mut self) -> Result<bool> {
        let Some(current) = self.storage.get(MANIFEST_KEY).await? else {
            return Ok(false);
        };
        if self.stored_manifest.is_none() || !layout::is_layout(&current) {
            return Ok(false);
        }
        let update = match self.layout.catch_up(&self.storage, &current).await? {
            Some(Read::Done(update)) => update,
            _ => return Ok(false),
        };
        let attached = self.engine.embedder().map(|m| m.model_id().to_string());
        if attached.is_some() && update.model_id.is_some() && attached != update.model_id {
            return Ok(false);
        }
        let model_id = update.model_id.clone();
        self.engine
            .apply_counted(update.changes, model_id)?;
        let summary = self.engine.summary();
        if [summary.items, summary.vectors, summary.files] != update.counts {
            // Reading the whole store decides: damage is reported there.
            return Ok(false);
        }
        self.layout = update.layout;
        self.stored_manifest = Some(current);
        Ok(true)
    }

    /// Runs one change of the store under the commit-or-rollback protocol
    /// ([`AsyncMemory::run`]), its outcome checked even when it writes
    /// nothing.
    async fn write<T>(
        &mut self,
        op: impl FnMut(&mut Engine, &mut E, &mut Txn) -> Result<T>,
    ) -> Result<T> {
        self.run(Unwritten::Check, op).await
    }

    /// Runs one operation under the commit-or-rollback protocol, again
    /// after a reload when another writer committed first.
    ///
    /// Every outcome is decided on this instance's view of the store and
    /// checked by the storage's compare-and-set of the manifest: a batch
    /// commits only if the manifest is still the one the view was loaded
    /// from. With [`Unwritten::Check`], an outcome that writes nothing (a
    /// duplicate skipped, a delete of nothing, an error such as
    /// `NOT_FOUND`) is checked with an empty batch under the same
    /// expectation. On a conflict the view is reloaded and the operation
    /// decided again, so no change rests on a stale view.
    async fn run<T>(
        &mut self,
        unwritten: Unwritten,
        mut op: impl FnMut(&mut Engine, &mut E, &mut Txn) -> Result<T>,
    ) -> Result<T> {
        for _ in 0..WRITE_ATTEMPTS {
            let mut txn = Txn::default();
            // What the manifest states (counts, model): a change of the
            // model alone rewrites no record but must still be committed.
            let summary = self.engine.summary();
            let mut result = Ok(0);
            if let Some(model) = &self.reattach {
                result = self.engine.attach_embedder(model.clone(), &mut txn);
            }
            // A store with a retention policy erases what has expired in the
            // commit of every write (reads, whose usage marks are optional,
            // stay reads): an expired text does not outlive the next write,
            // and no write meets an expired memory (an ingest never merges
            // into one).
            let writing = matches!(unwritten, Unwritten::Check) && !self.purging;
            if result.is_ok() && writing && self.engine.config().retention.is_set() {
                let now = self.env.now();
                result = self.engine.purge_expired(now, &mut txn).map(|p| p.purged);
            }
            let result = result.and_then(|_| op(&mut self.engine, &mut self.env, &mut txn));
            let records = match &result {
                Ok(_) => self.engine.batch_for(&txn),
                Err(_) => Changes::default(),
            };
            let restated = result.is_ok() && self.engine.summary() != summary;
            let writes = !records.is_empty() || restated;
            if !writes && matches!(unwritten, Unwritten::Trust) {
                self.engine.rollback(txn);
                return result;
            }
            let plan = writes.then(|| self.layout.plan(&records, &self.engine));
            let expect = Expect {
                key: MANIFEST_KEY,
                value: self.stored_manifest.as_deref(),
            };
            let nothing = Batch::new();
            let batch = plan.as_ref().map_or(&nothing, |p| &p.batch);
            let committed = self.storage.commit(batch, Some(expect)).await;
            match (committed, result) {
                (Ok(()), Ok(value)) => {
                    if let Some(plan) = plan {
                        self.stored_manifest = Some(plan.manifest.clone());
                        plan.hold_rows(&mut self.engine);
                        self.layout.apply(plan);
                        self.reattach = None;
                    }
                    return Ok(value);
                }
                (Ok(()), Err(e)) => {
                    self.engine.rollback(txn);
                    return Err(e);
                }
                (Err(StorageError::Conflict(_)), _) => {
                    self.engine.rollback(txn);
                    self.reload().await?;
                }
                (Err(e), _) => {
                    self.engine.rollback(txn);
                    return Err(e.into());
                }
            }
        }
        Err(Error::Storage(format!(
            "other writers changed the store before each of {WRITE_ATTEMPTS} attempts to commit"
        )))
    }

    /// Ingests memories; see [`Engine::ingest`].
    pub async fn ingest(&mut self, inputs: Vec<MemoryInput>) -> Result<Vec<IngestResult>> {
        self.write(|engine, env, txn| engine.ingest(inputs.clone(), env, txn))
            .await
    }

    /// Stores keyed memories, replacing those holding their keys; see
    /// [`Engine::upsert`].
    pub async fn upsert(&mut self, inputs: Vec<MemoryInput>) -> Result<Vec<IngestResult>> {
        self.write(|engine, env, txn| engine.upsert(inputs.clone(), env, txn))
            .await
    }

    /// [`AsyncMemory::ingest`] observed by `progress`, in units of inputs:
    /// the embeddings are computed in batches with a checkpoint before
    /// each, then the whole call commits at once, so a stop leaves the
    /// store as before the call.
    pub async fn ingest_observed(
        &mut self,
        inputs: Vec<MemoryInput>,
        progress: &mut impl Progress,
    ) -> Result<Vec<IngestResult>> {
        // Refuse a bad input before spending the embeddings on the others;
        // a batch over the limit is refused whole by the ingest, with
        // nothing embedded.
        let total = inputs.len();
        let texts = if total <= self.engine.config().limits.max_batch {
            self.engine.texts_to_embed(&inputs)?
        } else {
            Vec::new()
        };
        let result = match self.prepare(&texts, progress).await {
            Ok(()) => self.ingest(inputs).await,
            Err(e) => Err(e),
        };
        self.engine.clear_prepared();
        let result = result?;
        progress.report(total, total);
        Ok(result)
    }

    /// Ingests chat messages (OpenAI, Anthropic or Vercel AI SDK shapes),
    /// one memory per kept part, in the messages' order and in one commit;
    /// see [`crate::messages`].
    pub async fn ingest_messages(
        &mut self,
        messages: &[serde_json::Value],
        options: &MessageOptions,
    ) -> Result<Vec<MessageIngestResult>> {
        let planned = messages::messages_to_inputs(messages, options)?;
        let places: Vec<(usize, usize)> = planned.iter().map(|p| (p.message, p.part)).collect();
        let inputs = planned.into_iter().map(|p| p.input).collect();
        let results = self.ingest(inputs).await?;
        Ok(places
            .into_iter()
            .zip(results)
            .map(|((message, part), result)| MessageIngestResult {
                message,
                part,
                result,
            })
            .collect())
    }

    /// Retrieves relevant memories; see [`Engine::retrieve`].
    pub async fn retrieve(&mut self, query: &RetrieveQuery) -> Result<Vec<RetrieveHit>> {
        self.run(Unwritten::Trust, |engine, env, txn| {
            engine.retrieve(query, env.now(), txn)
        })
        .await
    }

    /// [`AsyncMemory::run`] for operations that count tokens, with the
    /// counter injection uses: the caller's, else the model's tokenizer,
    /// else the estimate.
    async fn run_counted<T>(
        &mut self,
        unwritten: Unwritten,
        mut op: impl FnMut(&mut Engine, &mut E, &dyn TokenCounter, &mut Txn) -> Result<T>,
    ) -> Result<T> {
        let custom = self.tokens.take();
        let result = self
            .run(unwritten, |engine, env, txn| {
                let model = engine.embedder().cloned();
                let model_tokens = model.as_deref().map(ModelTokens);
                let counter = token_counter(&custom, model_tokens.as_ref());
                op(engine, env, counter, txn)
            })
            .await;
        self.tokens = custom;
        result
    }

    /// Renders a bounded, cited block; see [`Engine::inject`].
    pub async fn inject(&mut self, query: &InjectQuery) -> Result<Injection> {
        self.run_counted(Unwritten::Trust, |engine, env, counter, txn| {
            engine.inject(query, counter, env.now(), txn)
        })
        .await
    }

    /// Stores and indexes a file (a Markdown document) of `scope`, in one
    /// commit with its chunks; unchanged content writes nothing. See
    /// [`Engine::sync_file`].
    pub async fn sync_file(
        &mut self,
        scope: &Scope,
        path: &str,
        content: &str,
    ) -> Result<FileSync> {
        self.run_counted(Unwritten::Check, |engine, env, counter, txn| {
            engine.sync_file(scope, path, content, counter, env, txn)
        })
        .await
    }

    /// Removes a file of `scope` and its chunks; returns whether it existed.
    pub async fn remove_file(&mut self, scope: &Scope, path: &str) -> Result<bool> {
        self.write(|engine, _, txn| Ok(engine.remove_file(scope, path, txn)))
            .await
    }

    /// The file at `path` in exactly `scope`.
    pub fn file(&self, scope: &Scope, path: &str) -> Option<StoredFile> {
        self.engine.file(scope, path).cloned()
    }

    /// Runs one call of Claude's memory tool on the `/memories` files of
    /// `scope` and returns the tool result; writes commit with their
    /// chunks. See [`crate::memory_tool`].
    pub async fn memory_tool(
        &mut self,
        scope: &Scope,
        input: &serde_json::Value,
    ) -> Result<MemoryToolResult> {
        self.run_counted(Unwritten::Check, |engine, env, counter, txn| {
            memory_tool::run(engine, scope, input, counter, env, txn)
        })
        .await
    }

    /// `document` with its auto-managed block listing the pinned memories
    /// of `scope`; see [`hot_file::render`].
    pub fn render_hot_file(&self, scope: &Scope, document: &str) -> Result<String> {
        hot_file::render(&self.engine, scope, document)
    }

    /// Applies human edits of the block of `document` (the file at `path`)
    /// to the pinned memories of `scope`, in one commit; see
    /// [`hot_file::read_back`].
    pub async fn read_hot_file(
        &mut self,
        scope: &Scope,
        path: &str,
        document: &str,
    ) -> Result<HotFileSync> {
        self.write(|engine, env, txn| hot_file::read_back(engine, scope, path, document, env, txn))
            .await
    }

    /// One memory by id.
    pub fn get(&self, id: &str) -> Result<MemoryItem> {
        self.engine.get(id).map(Cow::into_owned)
    }

    /// One page of memories, newest first.
    pub fn list(&self, query: &ListQuery) -> Result<ListPage> {
        self.engine.list(query)
    }

    /// What happened to one memory, oldest first; see [`Engine::history`].
    pub fn history(&self, id: &str) -> Result<Vec<HistoryEvent>> {
        self.engine.history(id)
    }

    /// Applies an extractor's operations in one commit; see
    /// [`Engine::apply_operations`].
    pub async fn apply_operations(
        &mut self,
        request: OperationsRequest,
    ) -> Result<OperationsResult> {
        self.write(|engine, env, txn| engine.apply_operations(request.clone(), env, txn))
            .await
    }

    /// The memory holding `key` in exactly `scope`, if any.
    pub fn get_by_key(&self, scope: &Scope, key: &str) -> Option<MemoryItem> {
        let id = self.engine.holder_of_key(scope, key)?;
        self.engine.get(&id).ok().map(Cow::into_owned)
    }

    /// Changes one memory; see [`Engine::update`].
    pub async fn update(&mut self, id: &str, patch: MemoryPatch) -> Result<MemoryItem> {
        self.write(|engine, env, txn| engine.update(id, patch.clone(), env.now(), txn))
            .await
    }

    /// Soft- or hard-deletes one memory; see [`Engine::delete`].
    pub async fn delete(&mut self, id: &str, hard: bool) -> Result<()> {
        self.write(|engine, env, txn| engine.delete(id, hard, env.now(), txn))
            .await
    }

    /// Deletes every memory the filter selects; see [`Engine::delete_all`].
    pub async fn delete_all(
        &mut self,
        filter: &ScopeFilter,
        hard: bool,
    ) -> Result<DeleteAllResult> {
        self.write(|engine, env, txn| engine.delete_all(filter, hard, env.now(), txn))
            .await
    }

    /// What a summarizer of a scope reads; see [`Engine::summary_context`].
    pub fn summary_context(&self, query: &SummaryQuery) -> Result<SummaryContext> {
        self.engine.summary_context(query, self.env.now())
    }

    /// Stores the summary of a scope, replacing its previous one; see
    /// [`Engine::store_summary`].
    pub async fn store_summary(&mut self, input: SummaryInput) -> Result<MemoryItem> {
        self.write(|engine, env, txn| engine.store_summary(input.clone(), env, txn))
            .await
    }

    /// Erases every expired memory; see [`Engine::purge_expired`]. A store
    /// with a retention policy also does this in every write.
    pub async fn purge_expired(&mut self) -> Result<PurgeResult> {
        self.purging = true;
        let result = self
            .write(|engine, env, txn| engine.purge_expired(env.now(), txn))
            .await;
        self.purging = false;
        result
    }

    /// The whole store (memories and files) as a versioned, checksummed
    /// JSON document.
    pub fn export(&self) -> String {
        self.export_filtered(&ScopeFilter::default())
    }

    /// The memories and files of the scopes `filter` selects, as
    /// [`AsyncMemory::export`] writes the whole store.
    pub fn export_filtered(&self, filter: &ScopeFilter) -> String {
        self.engine.export(filter, self.env.now())
    }

    /// Imports an export atomically; see [`Engine::import`].
    pub async fn import(&mut self, data: &str) -> Result<ImportResult> {
        self.write(|engine, env, txn| engine.import(data, env.now(), txn))
            .await
    }

    /// [`AsyncMemory::import`] observed by `progress`, in units of the
    /// export's memories: their embeddings are computed in batches with a
    /// checkpoint before each, then the import commits at once, so a stop
    /// leaves the store as before the call.
    pub async fn import_observed(
        &mut self,
        data: &str,
        progress: &mut impl Progress,
    ) -> Result<ImportResult> {
        let texts = self.engine.import_texts(data)?;
        let total = texts.len();
        let result = match self.prepare(&texts, progress).await {
            Ok(()) => self.import(data).await,
            Err(e) => Err(e),
        };
        self.engine.clear_prepared();
        let result = result?;
        progress.report(total, total);
        Ok(result)
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
    custom: &'a Option<CustomCounter>,
    model: Option<&'a ModelTokens<'a>>,
) -> &'a dyn TokenCounter {
    match (custom, model) {
        (Some(counter), _) => counter.as_ref(),
        (None, Some(model)) => model,
        (None, None) => &EstimatedTokens,
    }
}

/// Whether [`AsyncMemory::run`] checks an outcome that writes nothing
/// against the stored manifest.
#[derive(Debug, Clone, Copy)]
enum Unwritten {
    /// Changes: a decision to write nothing, or an error, made on a stale
    /// view is made again on the current one.
    Check,
    /// Reads (retrieval, injection) that write only usage marks: what they
    /// return comes from this view, like every read.
    Trust,
}

/// Runs a future that completes without waiting — every future of a
/// synchronous [`Storage`] does, and so does a host's storage whose calls
/// return at once (the WIT component's) — and returns its output; a future
/// that would wait is reported as [`Error::Storage`]. The tests drive the
/// [`AsyncStorage`] of in-memory stores with it too.
pub fn block_on<F: Future>(future: F) -> Result<F::Output> {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => Ok(output),
        Poll::Pending => Err(Error::Storage(
            "a synchronous storage call did not complete".into(),
        )),
    }
}

/// A memory store over a synchronous backend: the public Rust API of native
/// programs. Each call is the [`AsyncMemory`] call of the same name,
/// completed at once.
pub struct Memory<S: Storage, E: Environment> {
    inner: AsyncMemory<S, E>,
}

impl<S: Storage, E: Environment> Memory<S, E> {
    /// Opens the store held by `storage`; see [`AsyncMemory::open`].
    pub fn open(storage: S, env: E, config: Config) -> Result<Self> {
        let inner = block_on(AsyncMemory::open(storage, env, config))??;
        Ok(Memory { inner })
    }

    /// Attaches an embedding model; see [`AsyncMemory::set_embedder`].
    pub fn set_embedder(&mut self, embedder: Arc<dyn Embedder>) -> Result<usize> {
        block_on(self.inner.set_embedder(embedder))?
    }

    /// Replaces the token counter; see [`AsyncMemory::set_token_counter`].
    pub fn set_token_counter(&mut self, counter: CustomCounter) {
        self.inner.set_token_counter(counter);
    }

    /// The engine, for read-only inspection by the tests.
    #[cfg(feature = "testing")]
    pub fn engine(&self) -> &Engine {
        self.inner.engine()
    }

    /// The store's settings.
    pub fn config(&self) -> &Config {
        self.inner.config()
    }

    /// Checks an input as [`Memory::ingest`] would, without storing
    /// anything; see [`AsyncMemory::check_input`].
    pub fn check_input(&self, input: &MemoryInput) -> Result<()> {
        self.inner.check_input(input)
    }

    /// Checks a retrieval query without running it.
    pub fn check_query(&self, query: &RetrieveQuery) -> Result<()> {
        self.inner.check_query(query)
    }

    /// The storage backend.
    pub fn storage(&self) -> &S {
        self.inner.storage()
    }

    /// The environment (clock and ids).
    pub fn env_mut(&mut self) -> &mut E {
        self.inner.env_mut()
    }

    /// Closes the store and hands back its storage.
    pub fn into_storage(self) -> S {
        self.inner.into_storage()
    }

    /// Closes the store and hands back its storage and its engine apart;
    /// see [`AsyncMemory::into_parts`].
    pub fn into_parts(self) -> (S, Engine) {
        self.inner.into_parts()
    }

    /// Ingests memories; see [`Engine::ingest`].
    pub fn ingest(&mut self, inputs: Vec<MemoryInput>) -> Result<Vec<IngestResult>> {
        block_on(self.inner.ingest(inputs))?
    }

    /// Stores keyed memories; see [`Engine::upsert`].
    pub fn upsert(&mut self, inputs: Vec<MemoryInput>) -> Result<Vec<IngestResult>> {
        block_on(self.inner.upsert(inputs))?
    }

    /// Applies an extractor's operations; see [`Engine::apply_operations`].
    pub fn apply_operations(&mut self, request: OperationsRequest) -> Result<OperationsResult> {
        block_on(self.inner.apply_operations(request))?
    }

    /// Ingests chat messages; see [`AsyncMemory::ingest_messages`].
    pub fn ingest_messages(
        &mut self,
        messages: &[serde_json::Value],
        options: &MessageOptions,
    ) -> Result<Vec<MessageIngestResult>> {
        block_on(self.inner.ingest_messages(messages, options))?
    }

    /// Retrieves relevant memories; see [`Engine::retrieve`].
    pub fn retrieve(&mut self, query: &RetrieveQuery) -> Result<Vec<RetrieveHit>> {
        block_on(self.inner.retrieve(query))?
    }

    /// Renders a bounded, cited block; see [`Engine::inject`].
    pub fn inject(&mut self, query: &InjectQuery) -> Result<Injection> {
        block_on(self.inner.inject(query))?
    }

    /// One memory by id.
    pub fn get(&self, id: &str) -> Result<MemoryItem> {
        self.inner.get(id)
    }

    /// One page of memories, newest first.
    pub fn list(&self, query: &ListQuery) -> Result<ListPage> {
        self.inner.list(query)
    }

    /// What happened to one memory; see [`Engine::history`].
    pub fn history(&self, id: &str) -> Result<Vec<HistoryEvent>> {
        self.inner.history(id)
    }

    /// The memory holding `key` in exactly `scope`, if any.
    pub fn get_by_key(&self, scope: &Scope, key: &str) -> Option<MemoryItem> {
        self.inner.get_by_key(scope, key)
    }

    /// Changes one memory; see [`Engine::update`].
    pub fn update(&mut self, id: &str, patch: MemoryPatch) -> Result<MemoryItem> {
        block_on(self.inner.update(id, patch))?
    }

    /// Soft- or hard-deletes one memory; see [`Engine::delete`].
    pub fn delete(&mut self, id: &str, hard: bool) -> Result<()> {
        block_on(self.inner.delete(id, hard))?
    }

    /// Deletes every memory the filter selects; see [`Engine::delete_all`].
    pub fn delete_all(&mut self, filter: &ScopeFilter, hard: bool) -> Result<DeleteAllResult> {
        block_on(self.inner.delete_all(filter, hard))?
    }

    /// Erases every expired memory; see [`Engine::purge_expired`].
    pub fn purge_expired(&mut self) -> Result<PurgeResult> {
        block_on(self.inner.purge_expired())?
    }

    /// What a summarizer of a scope reads; see [`Engine::summary_context`].
    pub fn summary_context(&self, query: &SummaryQuery) -> Result<SummaryContext> {
        self.inner.summary_context(query)
    }

    /// Stores the summary of a scope; see [`Engine::store_summary`].
    pub fn store_summary(&mut self, input: SummaryInput) -> Result<MemoryItem> {
        block_on(self.inner.store_summary(input))?
    }

    /// The whole store as a versioned, checksummed JSON document.
    pub fn export(&self) -> String {
        self.inner.export()
    }

    /// The scopes `filter` selects; see [`AsyncMemory::export_filtered`].
    pub fn export_filtered(&self, filter: &ScopeFilter) -> String {
        self.inner.export_filtered(filter)
    }

    /// Imports an export atomically; see [`Engine::import`].
    pub fn import(&mut self, data: &str) -> Result<ImportResult> {
        block_on(self.inner.import(data))?
    }

    /// Counts over the memories the filter selects.
    pub fn stats(&self, filter: &ScopeFilter) -> Stats {
        self.inner.stats(filter)
    }

    /// Stores and indexes a file; see [`AsyncMemory::sync_file`].
    pub fn sync_file(&mut self, scope: &Scope, path: &str, content: &str) -> Result<FileSync> {
        block_on(self.inner.sync_file(scope, path, content))?
    }

    /// Removes a file and its chunks; see [`AsyncMemory::remove_file`].
    pub fn remove_file(&mut self, scope: &Scope, path: &str) -> Result<bool> {
        block_on(self.inner.remove_file(scope, path))?
    }

    /// The file at `path` in exactly `scope`.
    pub fn file(&self, scope: &Scope, path: &str) -> Option<StoredFile> {
        self.inner.file(scope, path)
    }

    /// Runs one memory tool call; see [`AsyncMemory::memory_tool`].
    pub fn memory_tool(
        &mut self,
        scope: &Scope,
        input: &serde_json::Value,
    ) -> Result<MemoryToolResult> {
        block_on(self.inner.memory_tool(scope, input))?
    }

    /// The document with its pinned block; see [`AsyncMemory::render_hot_file`].
    pub fn render_hot_file(&self, scope: &Scope, document: &str) -> Result<String> {
        self.inner.render_hot_file(scope, document)
    }

    /// Applies the block's edits; see [`AsyncMemory::read_hot_file`].
    pub fn read_hot_file(
        &mut self,
        scope: &Scope,
        path: &str,
        document: &str,
    ) -> Result<HotFileSync> {
        block_on(self.inner.read_hot_file(scope, path, document))?
    }
}
