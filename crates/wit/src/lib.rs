//! The WebAssembly component of `wit/` (`memtide:memory`): the `store`
//! resource of the exported `memory` interface over the host's imported
//! `storage`.
//!
//! Conversion and error mapping only, like the JavaScript bindings: the WIT
//! records and variants become memtide's request types (RFC 3339 timestamps
//! parsed as the JSON API parses them) and its results become WIT records;
//! every failure becomes the WIT `error` record with its stable code. The
//! imported storage is an [`AsyncKeyValue`] whose futures complete at once,
//! wrapped by [`KvStorage`] (its journal makes each write all-or-nothing),
//! and the store is an [`AsyncMemory`] driven by `block_on`. Time and ids
//! come from WASI ([`SystemEnvironment`]).

// The canonical ABI glue that wit-bindgen generates is the only `unsafe`
// code, allowed in its module alone.
#![deny(unsafe_code)]

use std::cell::RefCell;
use std::sync::Arc;

use memtide::embed::MiniLm;
use memtide::env::SystemEnvironment;

use memtide::storage::{AsyncKeyValue, Expect, KvOp, KvStorage, StorageError};
use memtide::{
    block_on, parse_operations, AsyncMemory, Config, InjectQuery, OperationsRequest, Scope,
    SummaryInput, SummaryQuery,
};

/// The code `wit-bindgen` generates from `wit/`, and the component's
/// exports: the only `unsafe` code of the crate (the canonical ABI glue).
#[allow(missing_docs, unsafe_code, clippy::all)]
mod generated {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "memtide",
    });

    use super::Component;
    export!(Component with_types_in self);
}

use generated::exports::memtide::memory::memory::{Guest, GuestStore, Store};
use generated::exports::memtide::memory::types as w;
use generated::memtide::memory::storage as host;

mod convert;
use convert::{
    count, error, list_query, memory_inputs, memory_patch, message_options, retrieve_query,
    scope_filter, size,
};

/// The component's exports.
struct Component;

impl Guest for Component {
    type Store = WitStore;
}

/// What a call can fail with, as the WIT `error` record.
type WitResult<T> = Result<T, w::Error>;

/// The memory store behind the WIT `store` resource.
type Inner = AsyncMemory<KvStorage<HostKeyValue>, SystemEnvironment>;

/// The host's imported `storage` interface as an [`AsyncKeyValue`]: each
/// call is one synchronous import call, so its futures complete at once.
#[derive(Debug, Default)]
struct HostKeyValue;

/// The storage error of a failed import call.
fn storage_error(error: host::StorageError) -> StorageError {
    match error {
        host::StorageError::QuotaExceeded(message) => StorageError::QuotaExceeded(message),
        host::StorageError::Other(message) => StorageError::Backend(message),
    }
}

impl AsyncKeyValue for HostKeyValue {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        host::get(key).map_err(storage_error)
    }

    async fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        host::put(key, value).map_err(storage_error)
    }

    async fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        host::delete(key).map_err(storage_error)
    }

    async fn list(&self, prefix: &str) -> Result<Vec<String>, StorageError> {
        host::list(prefix).map_err(storage_error)
    }

    /// The interface has single-key writes only: memtide journals.
    fn has_atomic_batch(&self) -> bool {
        false
    }

    async fn batch(
        &mut self,
        _ops: &[KvOp<'_>],
        _expect: Option<Expect<'_>>,
    ) -> Result<(), StorageError> {
        Err(StorageError::Backend(
            "the host storage has no atomic batch".into(),
        ))
    }
}

/// The WIT `store` resource: one [`AsyncMemory`] over the host's storage.
struct WitStore {
    inner: RefCell<Inner>,
}

impl WitStore {
    /// Runs `op` on the store. The component model refuses to re-enter an
    /// instance, so the store is never borrowed twice; should it be, the
    /// call fails instead of panicking.
    fn with<T>(&self, op: impl FnOnce(&mut Inner) -> memtide::Result<T>) -> WitResult<T> {
        let mut inner = self.inner.try_borrow_mut().map_err(|_| {
            error(memtide::Error::Storage(
                "the store is already running a call".into(),
            ))
        })?;
        op(&mut inner).map_err(error)
    }
}

impl GuestStore for WitStore {
    fn open(config: Option<String>) -> WitResult<Store> {
        let opened = (|| {
            let config: Config = match config {
                Some(text) => serde_json::from_str(&text)
                    .map_err(|e| memtide::Error::invalid(format!("config: {e}")))?,
                None => Config::default(),
            };
            block_on(async {
                let storage = KvStorage::open(HostKeyValue).await?;
                Inner::open(storage, SystemEnvironment::default(), config).await
            })?
        })();
        let inner = opened.map_err(error)?;
        Ok(Store::new(WitStore {
            inner: RefCell::new(inner),
        }))
    }

    fn set_model(&self, onnx: Vec<u8>, tokenizer: String) -> WitResult<u32> {
        self.with(|store| {
            let model = MiniLm::from_bytes(onnx, &tokenizer)?;
            block_on(store.set_embedder(Arc::new(model)))?.map(count)
        })
    }

    fn ingest(&self, inputs: Vec<w::MemoryInput>) -> WitResult<Vec<w::IngestResult>> {
        let inputs = memory_inputs(inputs)?;
        self.with(|store| block_on(store.ingest(inputs))?)
            .map(|results| results.into_iter().map(Into::into).collect())
    }

    fn upsert(&self, inputs: Vec<w::MemoryInput>) -> WitResult<Vec<w::IngestResult>> {
        let inputs = memory_inputs(inputs)?;
        self.with(|store| block_on(store.upsert(inputs))?)
            .map(|results| results.into_iter().map(Into::into).collect())
    }

    fn apply_operations(
        &self,
        scope: w::Scope,
        allowed: Vec<String>,
        reply: String,
    ) -> WitResult<w::OperationsResult> {
        self.with(|store| {
            let limit = store.config().limits.max_operations_bytes;
            let request = OperationsRequest {
                scope: scope.into(),
                allowed,
                operations: parse_operations(&reply, limit)?,
            };
            block_on(store.apply_operations(request))?
        })
        .map(Into::into)
    }

    fn history(&self, id: String) -> WitResult<Vec<w::HistoryEvent>> {
        self.with(|store| store.history(&id))
            .map(|events| events.into_iter().map(Into::into).collect())
    }

    fn ingest_messages(
        &self,
        messages: String,
        options: w::MessageOptions,
    ) -> WitResult<Vec<w::MessageIngestResult>> {
        let messages: Vec<serde_json::Value> = serde_json::from_str(&messages)
            .map_err(|e| error(memtide::Error::invalid(format!("messages: {e}"))))?;
        let options = message_options(options).map_err(error)?;
        self.with(|store| block_on(store.ingest_messages(&messages, &options))?)
            .map(|results| {
                results
                    .into_iter()
                    .map(|r| w::MessageIngestResult {
                        message: count(r.message),
                        part: count(r.part),
                        result: r.result.into(),
                    })
                    .collect()
            })
    }

    fn retrieve(&self, query: w::RetrieveQuery) -> WitResult<Vec<w::RetrieveHit>> {
        let query = retrieve_query(query).map_err(error)?;
        self.with(|store| block_on(store.retrieve(&query))?)
            .map(|hits| hits.into_iter().map(Into::into).collect())
    }

    fn inject(&self, query: w::InjectQuery) -> WitResult<w::Injection> {
        let query = InjectQuery {
            format: query.format.map(Into::into).unwrap_or_default(),
            preamble: query.preamble,
            pinned_share: query.pinned_share,
            archive: query.archive.unwrap_or(true),
            ..InjectQuery::new(
                retrieve_query(query.query).map_err(error)?,
                size(query.budget_tokens),
            )
        };
        self.with(|store| block_on(store.inject(&query))?)
            .map(Into::into)
    }

    fn get(&self, id: String) -> WitResult<w::MemoryItem> {
        self.with(|store| store.get(&id)).map(Into::into)
    }

    fn list(&self, query: w::ListQuery) -> WitResult<w::ListPage> {
        let query = list_query(query).map_err(error)?;
        self.with(|store| store.list(&query)).map(Into::into)
    }

    fn update(&self, id: String, patch: w::MemoryPatch) -> WitResult<w::MemoryItem> {
        let patch = memory_patch(patch).map_err(error)?;
        self.with(|store| block_on(store.update(&id, patch))?)
            .map(Into::into)
    }

    fn delete(&self, id: String, hard: bool) -> WitResult<()> {
        self.with(|store| block_on(store.delete(&id, hard))?)
    }

    fn delete_all(&self, scope: w::ScopeFilter, hard: bool) -> WitResult<w::DeleteAllResult> {
        let filter = scope_filter(scope).map_err(error)?;
        self.with(|store| block_on(store.delete_all(&filter, hard))?)
            .map(Into::into)
    }

    fn purge_expired(&self) -> WitResult<u32> {
        self.with(|store| block_on(store.purge_expired())?)
            .map(|result| count(result.purged))
    }

    fn summary_context(&self, query: w::SummaryQuery) -> WitResult<w::SummaryContext> {
        let query = SummaryQuery {
            scope: query.scope.into(),
            limit: query.limit.map(size),
            include_pii: query.include_pii,
        };
        self.with(|store| store.summary_context(&query))
            .map(|context| w::SummaryContext {
                memories: context.memories.into_iter().map(Into::into).collect(),
                previous: context.previous.map(Into::into),
            })
    }

    fn store_summary(&self, input: w::SummaryInput) -> WitResult<w::MemoryItem> {
        let input = SummaryInput {
            scope: input.scope.into(),
            text: input.text,
            sources: input.sources,
        };
        self.with(|store| block_on(store.store_summary(input))?)
            .map(Into::into)
    }

    fn export(&self, filter: Option<w::ScopeFilter>) -> WitResult<String> {
        let filter = filter
            .map(scope_filter)
            .transpose()
            .map_err(error)?
            .unwrap_or_default();
        self.with(|store| Ok(store.export_filtered(&filter)))
    }

    fn import(&self, data: String) -> WitResult<w::ImportResult> {
        self.with(|store| block_on(store.import(&data))?)
            .map(Into::into)
    }

    fn stats(&self, filter: Option<w::ScopeFilter>) -> WitResult<w::Stats> {
        let filter = filter
            .map(scope_filter)
            .transpose()
            .map_err(error)?
            .unwrap_or_default();
        self.with(|store| Ok(store.stats(&filter))).map(Into::into)
    }

    fn refresh(&self) -> WitResult<bool> {
        self.with(|store| block_on(store.refresh())?)
    }

    fn sync_file(&self, scope: w::Scope, path: String, content: String) -> WitResult<w::FileSync> {
        let scope = Scope::from(scope);
        self.with(|store| block_on(store.sync_file(&scope, &path, &content))?)
            .map(Into::into)
    }

    fn remove_file(&self, scope: w::Scope, path: String) -> WitResult<bool> {
        let scope = Scope::from(scope);
        self.with(|store| block_on(store.remove_file(&scope, &path))?)
    }

    fn file(&self, scope: w::Scope, path: String) -> WitResult<Option<w::StoredFile>> {
        let scope = Scope::from(scope);
        self.with(|store| Ok(store.file(&scope, &path)))
            .map(|file| file.map(Into::into))
    }

    fn memory_tool(&self, scope: w::Scope, input: String) -> WitResult<w::MemoryToolResult> {
        let scope = Scope::from(scope);
        let input: serde_json::Value = serde_json::from_str(&input)
            .map_err(|e| error(memtide::Error::invalid(format!("input is not JSON: {e}"))))?;
        self.with(|store| block_on(store.memory_tool(&scope, &input))?)
            .map(Into::into)
    }

    fn render_hot_file(&self, scope: w::Scope, document: String) -> WitResult<String> {
        let scope = Scope::from(scope);
        self.with(|store| store.render_hot_file(&scope, &document))
    }

    fn read_hot_file(
        &self,
        scope: w::Scope,
        path: String,
        document: String,
    ) -> WitResult<w::HotFileSync> {
        let scope = Scope::from(scope);
        self.with(|store| block_on(store.read_hot_file(&scope, &path, &document))?)
            .map(Into::into)
    }
}
