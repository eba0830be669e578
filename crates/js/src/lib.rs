//! The wasm-bindgen surface of the npm package: `MemoryCore`, wrapped by the
//! typed `Memory` class of `pkg-template/`.
//!
//! Conversion and error mapping only: arguments and results cross as JSON
//! text (`JSON.stringify` into `serde_json`, and back through `JSON.parse`),
//! the same camelCase JSON as the Rust API and the CLI; model bytes and
//! stored values cross as typed arrays. JSON rather than
//! `serde-wasm-bindgen`, which reads only the fields a struct declares and
//! so would let misspelled options pass silently; through JSON, unknown
//! fields, lone surrogates, `NaN` and infinities are refused. Every failure
//! becomes a `MemtideError` with a stable `code`, and every call is a promise. Calls on one store run one at a time
//! in call order (an async mutex), because a write awaits its storage commit.

use std::rc::Rc;
use std::sync::Arc;

use futures_util::lock::Mutex;
use js_sys::{Array, Function, JsString, Object, Promise, Reflect, JSON};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::future_to_promise;
use web_sys::{BroadcastChannel, MessageEvent};

use memtide::storage::{
    AsyncStorage, Batch, Expect, KvStorage, MemoryStorage, Snapshot, StorageError,
};
use memtide::{
    parse_operations, AsyncMemory, Config, InjectQuery, ListQuery, MemoryInput, MemoryPatch,
    MessageOptions, OperationsRequest, RetrieveQuery, Scope, ScopeFilter, SummaryInput,
    SummaryQuery,
};

mod adapter;
mod env;
mod indexeddb;
mod model;
mod progress;

pub use adapter::JsKeyValue;
use adapter::{bytes_of, thrown_message};
pub use env::JsEnvironment;
pub use indexeddb::IndexedDbStorage;
use model::load_model;
use progress::JsProgress;

/// The IndexedDB database name when the `name` option is absent: the
/// project's name before it was renamed, kept so that stores written by
/// earlier builds are found (docs/format.md §1).
const DEFAULT_NAME: &str = "mnemo";

/// What a binding call can fail with.
#[derive(Debug, thiserror::Error)]
enum BindingError {
    /// An error of the memory API.
    #[error(transparent)]
    Core(#[from] memtide::Error),
    /// A JavaScript value that does not convert.
    #[error("invalid input: {0}")]
    Value(String),
    /// The store was closed.
    #[error("the memory store is closed")]
    Closed,
}

impl BindingError {
    fn code(&self) -> &'static str {
        match self {
            BindingError::Core(e) => e.code(),
            BindingError::Value(_) => "INVALID_INPUT",
            BindingError::Closed => "CLOSED",
        }
    }
}

impl From<StorageError> for BindingError {
    fn from(e: StorageError) -> Self {
        BindingError::Core(e.into())
    }
}

thread_local! {
    /// The class errors are constructed with (`new Class(message, code)`),
    /// set by the package's JavaScript wrapper.
    static ERROR_CLASS: std::cell::RefCell<Option<Function>> = const { std::cell::RefCell::new(None) };
}

/// Bytes of this WebAssembly instance's linear memory: memtide's data and the
/// loaded model, the bulk of what an isolate holds for memtide. It grows as
/// needed and never shrinks, so it is also the peak.
#[wasm_bindgen(js_name = wasmMemoryBytes)]
pub fn wasm_memory_bytes() -> f64 {
    core::arch::wasm32::memory_size::<0>() as f64 * 65536.0
}

/// Sets the class memtide constructs its errors with: `new errorClass(message,
/// code)`. Without one, errors are plain `Error`s with a `code` property.
#[wasm_bindgen(js_name = setErrorClass)]
pub fn set_error_class(error_class: Function) {
    ERROR_CLASS.with(|class| *class.borrow_mut() = Some(error_class));
}

/// The JavaScript error for `error`: an instance of the registered class
/// with `code` and `message`.
fn to_js_error(error: BindingError) -> JsValue {
    let message = JsValue::from_str(&error.to_string());
    let code = JsValue::from_str(error.code());
    let registered = ERROR_CLASS.with(|class| class.borrow().clone());
    if let Some(class) = registered {
        if let Ok(made) = Reflect::construct(&class, &Array::of2(&message, &code)) {
            return made;
        }
    }
    let plain = js_sys::Error::new(&error.to_string());
    let _ = Reflect::set(&plain, &JsValue::from_str("code"), &code);
    plain.into()
}

thread_local! {
    /// The `JSON.stringify` replacer of [`from_js`], set by the package's
    /// JavaScript wrapper ([`set_json_replacer`]).
    static JSON_REPLACER: std::cell::RefCell<Option<Function>> = const { std::cell::RefCell::new(None) };
}

/// Sets the `JSON.stringify` replacer every value handed to the core is
/// read through. JSON would write `NaN` and infinities as `null`, which
/// reads as "absent": the package's wrapper registers a JavaScript
/// function that throws on them. A replacer in Rust cost a call from
/// JavaScript into WebAssembly and one back for every value of every
/// input: 4 % of a 10,000-memory lexical build (`docs/speed.md`,
/// "Eighteenth session").
#[wasm_bindgen(js_name = setJsonReplacer)]
pub fn set_json_replacer(replacer: Function) {
    JSON_REPLACER.with(|slot| *slot.borrow_mut() = Some(replacer));
}

/// [`from_js`] of an optional argument: `undefined` is `T::default()`
/// (for a scope filter: every scope).
fn from_js_or_default<T: DeserializeOwned + Default>(
    value: &JsValue,
    what: &str,
) -> Result<T, BindingError> {
    if value.is_undefined() {
        Ok(T::default())
    } else {
        from_js(value, what)
    }
}

/// Converts a JavaScript value to `T` through its JSON text, so unknown
/// fields are refused like everywhere else (`deny_unknown_fields`), and so
/// are lone surrogates, `NaN`, infinities, cycles and excessive nesting.
fn from_js<T: DeserializeOwned>(value: &JsValue, what: &str) -> Result<T, BindingError> {
    let replacer = JSON_REPLACER.with(|slot| slot.borrow().clone()).ok_or_else(|| {
        BindingError::Value(format!(
            "{what} cannot be read: the core module was started without its wrapper (setJsonReplacer)"
        ))
    })?;
    let json = JSON::stringify_with_replacer(value, &replacer).map_err(|e| {
        BindingError::Value(format!(
            "{what} cannot be read as JSON: {}",
            thrown_message(&e)
        ))
    })?;
    let text = json
        .as_string()
        .ok_or_else(|| BindingError::Value(format!("{what} is missing")))?;
    serde_json::from_str(&text).map_err(|e| BindingError::Value(format!("{what}: {e}")))
}

/// Converts `value` to a plain JavaScript value through its JSON text.
fn to_js<T: Serialize>(value: &T) -> Result<JsValue, BindingError> {
    let text = serde_json::to_string(value)
        .map_err(|e| BindingError::Value(format!("cannot convert the result: {e}")))?;
    JSON::parse(&text).map_err(|e| {
        BindingError::Value(format!("cannot convert the result: {}", thrown_message(&e)))
    })
}

/// The error for a JavaScript string holding a lone surrogate, which
/// would otherwise silently become U+FFFD.
fn lone_surrogate(what: &str) -> BindingError {
    BindingError::Value(format!(
        "{what} contains a lone surrogate (not valid Unicode)"
    ))
}

/// A JavaScript string as Rust text, refusing lone surrogates.
fn string_of(value: &JsValue, what: &str) -> Result<Option<String>, BindingError> {
    match value.dyn_ref::<JsString>() {
        Some(text) if !text.is_valid_utf16() => Err(lone_surrogate(what)),
        Some(text) => Ok(Some(String::from(text))),
        None => Ok(None),
    }
}

/// A string, or the UTF-8 text of a `Uint8Array`/`ArrayBuffer`; anything
/// else fails saying `what` must be `expected`.
fn text_of(value: &JsValue, what: &str, expected: &str) -> Result<String, BindingError> {
    match (string_of(value, what)?, bytes_of(value)) {
        (Some(text), _) => Ok(text),
        (None, Some(bytes)) => String::from_utf8(bytes)
            .map_err(|_| BindingError::Value(format!("{what} is not UTF-8"))),
        (None, None) => Err(BindingError::Value(format!("{what} must be {expected}"))),
    }
}

/// [`text_of`] as a JavaScript string, for text this module only hands on
/// (to the model module): a string given is checked and handed on as it
/// is, not copied into linear memory and out again (BERT's tokenizer.json
/// is 0.44 MiB, and encoding it into linear memory held three times that
/// at once); bytes are decoded as [`text_of`] does.
fn js_text_of(value: &JsValue, what: &str, expected: &str) -> Result<JsValue, BindingError> {
    match value.dyn_ref::<JsString>() {
        Some(text) if !text.is_valid_utf16() => Err(lone_surrogate(what)),
        Some(_) => Ok(value.clone()),
        None => text_of(value, what, expected).map(|text| JsValue::from_str(&text)),
    }
}

/// `object[name]`, `undefined` when absent.
fn field(object: &JsValue, name: &str) -> JsValue {
    if !object.is_object() {
        return JsValue::UNDEFINED;
    }
    Reflect::get(object, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED)
}

/// A boolean option, `false` when absent.
fn bool_field(object: &JsValue, name: &str) -> Result<bool, BindingError> {
    let value = field(object, name);
    if value.is_undefined() {
        return Ok(false);
    }
    value
        .as_bool()
        .ok_or_else(|| BindingError::Value(format!("{name} must be a boolean")))
}

/// The storage behind a JavaScript store.
#[derive(Debug)]
enum HostStorage {
    /// Kept in the WebAssembly instance's memory; gone when it is closed.
    Memory(MemoryStorage),
    /// An injected `{get, put, delete, list, batch?}` object.
    Adapter(KvStorage<JsKeyValue>),
    /// An IndexedDB database (the browser default).
    IndexedDb(IndexedDbStorage),
}

impl AsyncStorage for HostStorage {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        match self {
            HostStorage::Memory(s) => AsyncStorage::get(s, key).await,
            HostStorage::Adapter(s) => s.get(key).await,
            HostStorage::IndexedDb(s) => s.get(key).await,
        }
    }

    async fn scan(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        match self {
            HostStorage::Memory(s) => AsyncStorage::scan(s, prefix).await,
            HostStorage::Adapter(s) => s.scan(prefix).await,
            HostStorage::IndexedDb(s) => s.scan(prefix).await,
        }
    }

    async fn snapshot(&self, prefixes: &[&str], key: &str) -> Result<Snapshot, StorageError> {
        match self {
            HostStorage::Memory(s) => AsyncStorage::snapshot(s, prefixes, key).await,
            HostStorage::Adapter(s) => s.snapshot(prefixes, key).await,
            HostStorage::IndexedDb(s) => s.snapshot(prefixes, key).await,
        }
    }

    async fn commit(
        &mut self,
        batch: &Batch,
        expect: Option<Expect<'_>>,
    ) -> Result<(), StorageError> {
        match self {
            HostStorage::Memory(s) => AsyncStorage::commit(s, batch, expect).await,
            HostStorage::Adapter(s) => s.commit(batch, expect).await,
            HostStorage::IndexedDb(s) => s.commit(batch, expect).await,
        }
    }

    async fn get_many(&self, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>, StorageError> {
        match self {
            HostStorage::Memory(s) => AsyncStorage::get_many(s, keys).await,
            HostStorage::Adapter(s) => s.get_many(keys).await,
            HostStorage::IndexedDb(s) => s.get_many(keys).await,
        }
    }
}

/// Opens the storage the `storage` option names: `"indexeddb"` (the default
/// where an `indexedDB` global exists), `"memory"`, or an adapter object.
async fn open_storage(options: &JsValue) -> Result<HostStorage, BindingError> {
    let option = field(options, "storage");
    let name = match field(options, "name") {
        n if n.is_undefined() => DEFAULT_NAME.to_string(),
        n => string_of(&n, "name")?
            .filter(|n| !n.is_empty())
            .ok_or_else(|| BindingError::Value("name must be a non-empty string".into()))?,
    };
    let has_indexed_db = !field(&js_sys::global(), "indexedDB").is_undefined();
    let kind = match option.as_string() {
        None if option.is_undefined() && has_indexed_db => "indexeddb".to_string(),
        None if option.is_undefined() => "memory".to_string(),
        None if option.is_object() => {
            progress(options, "storage", &[]);
            let kv = JsKeyValue::new(option.clone())?;
            return Ok(HostStorage::Adapter(KvStorage::open(kv).await?));
        }
        None => String::new(),
        Some(kind) => kind,
    };
    match kind.as_str() {
        "memory" => {
            progress(options, "storage", &[]);
            Ok(HostStorage::Memory(MemoryStorage::new()))
        }
        "indexeddb" => {
            let storage = IndexedDbStorage::open(&name).await?;
            let persisted = IndexedDbStorage::request_persistence().await.unwrap_or(false);
            progress(options, "storage", &[("persisted", persisted.into())]);
            Ok(HostStorage::IndexedDb(storage))
        }
        _ => Err(BindingError::Value(
            "storage must be \"indexeddb\", \"memory\" or an adapter object {get, put, delete, list, batch?}"
                .into(),
        )),
    }
}

/// Tells other instances on the same IndexedDB database (other tabs,
/// workers) of this one's writes, and reloads on theirs.
struct ChangeChannel {
    channel: BroadcastChannel,
    _on_message: Closure<dyn FnMut(MessageEvent)>,
}

impl ChangeChannel {
    /// Joins the channel `memtide:<name>`; on a message, `store` refreshes
    /// and, if it reloaded, calls `on_change`.
    fn join(
        name: &str,
        store: &Rc<Mutex<Option<Store>>>,
        on_change: Option<Function>,
    ) -> Result<ChangeChannel, BindingError> {
        let channel = BroadcastChannel::new(&format!("mnemo:{name}")).map_err(|e| {
            BindingError::Value(format!(
                "cannot open a BroadcastChannel: {}",
                thrown_message(&e)
            ))
        })?;
        let store = Rc::downgrade(store);
        let on_message = Closure::new(move |_: MessageEvent| {
            let (Some(store), on_change) = (store.upgrade(), on_change.clone()) else {
                return;
            };
            wasm_bindgen_futures::spawn_local(async move {
                let mut guard = store.lock().await;
                let Some(store) = guard.as_mut() else { return };
                // A failed refresh is retried by the next write's conflict.
                if let (Ok(true), Some(callback)) = (store.refresh().await, on_change) {
                    let _ = callback.call0(&JsValue::UNDEFINED);
                }
            });
        });
        channel.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        // In Node, an open channel would keep the process alive.
        if let Ok(unref) = field(&channel, "unref").dyn_into::<Function>() {
            let _ = unref.call0(&channel);
        }
        Ok(ChangeChannel {
            channel,
            _on_message: on_message,
        })
    }
}

impl Drop for ChangeChannel {
    fn drop(&mut self) {
        self.channel.set_onmessage(None);
        self.channel.close();
    }
}

/// Calls `options.onProgress({stage, ...})` if given; its errors are
/// ignored (progress reporting must not fail an open).
fn progress(options: &JsValue, stage: &str, extra: &[(&str, JsValue)]) {
    let Ok(callback) = field(options, "onProgress").dyn_into::<Function>() else {
        return;
    };
    let event = Object::new();
    let _ = Reflect::set(&event, &"stage".into(), &stage.into());
    for (name, value) in extra {
        let _ = Reflect::set(&event, &JsValue::from_str(name), value);
    }
    let _ = callback.call1(&JsValue::UNDEFINED, &event);
}

/// `{scope, path}`: a file of `removeFile` and `file`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FileRef {
    scope: Scope,
    path: String,
}

/// `{scope, path, content}` of `syncFile`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FileContent {
    scope: Scope,
    path: String,
    content: String,
}

/// `{scope, path, document}` of `readHotFile`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct HotFileDocument {
    scope: Scope,
    path: String,
    document: String,
}

type Store = AsyncMemory<HostStorage, JsEnvironment>;

/// A memory store, for the typed `Memory` class of the npm package. Every
/// method returns a promise; see the package's TypeScript declarations for
/// the shapes of arguments and results.
#[wasm_bindgen(js_name = MemoryCore)]
pub struct JsMemory {
    store: Rc<Mutex<Option<Store>>>,
    /// For IndexedDB stores: the channel to other instances.
    channel: Rc<std::cell::RefCell<Option<ChangeChannel>>>,
}

#[wasm_bindgen(js_class = MemoryCore)]
impl JsMemory {
    /// Opens a store: `{name?, storage?, model?, config?, now?, onProgress?,
    /// onChange?, signal?}` (`signal` stops the model's embedding backfill).
    /// `load_model_with(onnx, tokenizer)` is the package's loader of the model
    /// module (`model.rs`), called only when `model` is given.
    pub fn open(options: JsValue, load_model_with: JsValue) -> Promise {
        future_to_promise(async move {
            let opened = async {
                let config: Config = from_js_or_default(&field(&options, "config"), "config")?;
                let clock = field(&options, "now").dyn_into::<Function>().ok();
                let storage = open_storage(&options).await?;
                let shared = matches!(storage, HostStorage::IndexedDb(_));
                let mut store = Store::open(storage, JsEnvironment::new(clock), config).await?;
                let model = field(&options, "model");
                if !model.is_undefined() && !model.is_null() {
                    progress(&options, "model", &[]);
                    let model = load_model(&model, &load_model_with).await?;
                    let mut backfill = JsProgress::for_open(&options, "embedding")?;
                    let embedded = store
                        .set_embedder_observed(Arc::new(model), &mut backfill)
                        .await?;
                    progress(&options, "embedded", &[("count", embedded.into())]);
                }
                progress(&options, "ready", &[]);
                let name = match &store.storage() {
                    HostStorage::IndexedDb(db) => db.name().to_string(),
                    _ => String::new(),
                };
                let store = Rc::new(Mutex::new(Some(store)));
                let on_change = field(&options, "onChange").dyn_into::<Function>().ok();
                let channel = match shared {
                    true => Some(ChangeChannel::join(&name, &store, on_change)?),
                    false => None,
                };
                Ok::<_, BindingError>(JsMemory {
                    store,
                    channel: Rc::new(std::cell::RefCell::new(channel)),
                })
            };
            opened.await.map(JsValue::from).map_err(to_js_error)
        })
    }

    /// Runs `op` on the open store once the calls before it are done; other
    /// instances on the same database are told when it changed the store.
    fn run(
        &self,
        op: impl AsyncFnOnce(&mut Store) -> Result<JsValue, BindingError> + 'static,
    ) -> Promise {
        let store = self.store.clone();
        let channel = self.channel.clone();
        future_to_promise(async move {
            let mut guard = store.lock().await;
            let Some(store) = guard.as_mut() else {
                return Err(to_js_error(BindingError::Closed));
            };
            let before = store.stored_manifest().map(<[u8]>::to_vec);
            let result = op(store).await;
            if store.stored_manifest() != before.as_deref() {
                if let Some(joined) = channel.borrow().as_ref() {
                    // Best effort: a missed message is caught up by the
                    // other instance's next commit (a conflict, then a reload).
                    let _ = joined.channel.post_message(&JsValue::from_str("changed"));
                }
            }
            result.map_err(to_js_error)
        })
    }

    /// Attaches the embedding model `{onnx, tokenizer}`; resolves to how
    /// many stored memories were embedded. With `{onProgress?, signal?}`
    /// the backfill commits in batches (`AsyncMemory::set_embedder_observed`).
    /// `load_model_with` is the package's loader of the model module.
    #[wasm_bindgen(js_name = setModel)]
    pub fn set_model(&self, model: JsValue, options: JsValue, load_model_with: JsValue) -> Promise {
        self.run(async move |store| {
            let observed = JsProgress::from_options(&options)?;
            let model = Arc::new(load_model(&model, &load_model_with).await?);
            let embedded = match observed {
                Some(mut observed) => store.set_embedder_observed(model, &mut observed).await?,
                None => store.set_embedder(model).await?,
            };
            Ok(JsValue::from(embedded))
        })
    }

    /// Ingests one input or an array of inputs; resolves to one result per
    /// input. `{onProgress?, signal?}` observe it.
    pub fn ingest(&self, inputs: JsValue, options: JsValue) -> Promise {
        self.run(async move |store| {
            let observed = JsProgress::from_options(&options)?;
            let inputs: Vec<MemoryInput> = if Array::is_array(&inputs) {
                from_js(&inputs, "inputs")?
            } else {
                vec![from_js(&inputs, "input")?]
            };
            let results = match observed {
                Some(mut observed) => store.ingest_observed(inputs, &mut observed).await?,
                None => store.ingest(inputs).await?,
            };
            to_js(&results)
        })
    }

    /// Stores keyed inputs (one or an array), each replacing the memory
    /// holding its key in its scope; resolves to one result per input.
    pub fn upsert(&self, inputs: JsValue) -> Promise {
        self.run(async move |store| {
            let inputs: Vec<MemoryInput> = if Array::is_array(&inputs) {
                from_js(&inputs, "inputs")?
            } else {
                vec![from_js(&inputs, "input")?]
            };
            to_js(&store.upsert(inputs).await?)
        })
    }

    /// The memory holding a key in exactly a scope, or `null`:
    /// `{scope, key}`.
    #[wasm_bindgen(js_name = getByKey)]
    pub fn get_by_key(&self, options: JsValue) -> Promise {
        self.run(async move |store| {
            let scope: Scope = from_js(&field(&options, "scope"), "scope")?;
            let key: String = from_js(&field(&options, "key"), "key")?;
            to_js(&store.get_by_key(&scope, &key))
        })
    }

    /// What happened to one memory, oldest first.
    pub fn history(&self, id: JsValue) -> Promise {
        self.run(async move |store| {
            let id: String = from_js(&id, "id")?;
            to_js(&store.history(&id)?)
        })
    }

    /// Applies an extractor's operations in one commit: `{scope, allowed?,
    /// reply}`, `reply` the model's reply holding them (JSON, alone, fenced
    /// or in prose); resolves to `{added, merged, superseded, deleted}`.
    #[wasm_bindgen(js_name = applyOperations)]
    pub fn apply_operations(&self, options: JsValue) -> Promise {
        self.run(async move |store| {
            let scope: Scope = from_js(&field(&options, "scope"), "scope")?;
            let allowed: Vec<String> = from_js_or_default(&field(&options, "allowed"), "allowed")?;
            let reply: String = from_js(&field(&options, "reply"), "reply")?;
            let limit = store.config().limits.max_operations_bytes;
            let operations = parse_operations(&reply, limit)?;
            let request = OperationsRequest {
                scope,
                allowed,
                operations,
            };
            to_js(&store.apply_operations(request).await?)
        })
    }

    /// Ingests an array of chat messages (OpenAI, Anthropic or Vercel AI
    /// SDK shapes) with `{scope, …}` options; resolves to one result per
    /// memory made, `{message, part, …}`, in order.
    #[wasm_bindgen(js_name = ingestMessages)]
    pub fn ingest_messages(&self, messages: JsValue, options: JsValue) -> Promise {
        self.run(async move |store| {
            if !Array::is_array(&messages) {
                return Err(BindingError::Value("messages must be an array".into()));
            }
            let messages: Vec<serde_json::Value> = from_js(&messages, "messages")?;
            let options: MessageOptions = from_js(&options, "options")?;
            to_js(&store.ingest_messages(&messages, &options).await?)
        })
    }

    /// Retrieves the hits for a query, best first.
    pub fn retrieve(&self, query: JsValue) -> Promise {
        self.run(async move |store| {
            let query: RetrieveQuery = from_js(&query, "query")?;
            to_js(&store.retrieve(&query).await?)
        })
    }

    /// Renders the cited block for a query within its token budget.
    pub fn inject(&self, query: JsValue) -> Promise {
        self.run(async move |store| {
            let query: InjectQuery = from_js(&query, "query")?;
            to_js(&store.inject(&query).await?)
        })
    }

    /// One memory by id.
    pub fn get(&self, id: JsValue) -> Promise {
        self.run(async move |store| {
            let id: String = from_js(&id, "id")?;
            to_js(&store.get(&id)?)
        })
    }

    /// One page of memories, newest first.
    pub fn list(&self, query: JsValue) -> Promise {
        self.run(async move |store| {
            let query: ListQuery = from_js_or_default(&query, "query")?;
            to_js(&store.list(&query)?)
        })
    }

    /// Changes one memory; resolves to the memory after the change.
    pub fn update(&self, id: JsValue, patch: JsValue) -> Promise {
        self.run(async move |store| {
            let id: String = from_js(&id, "id")?;
            let patch: MemoryPatch = from_js(&patch, "patch")?;
            to_js(&store.update(&id, patch).await?)
        })
    }

    /// Deletes one memory: `{hard?: boolean}` (soft by default).
    pub fn delete(&self, id: JsValue, options: JsValue) -> Promise {
        self.run(async move |store| {
            let id: String = from_js(&id, "id")?;
            store.delete(&id, bool_field(&options, "hard")?).await?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Deletes every memory a scope filter selects: `{scope, hard?}`.
    #[wasm_bindgen(js_name = deleteAll)]
    pub fn delete_all(&self, options: JsValue) -> Promise {
        self.run(async move |store| {
            let filter: ScopeFilter = from_js(&field(&options, "scope"), "scope")?;
            let hard = bool_field(&options, "hard")?;
            to_js(&store.delete_all(&filter, hard).await?)
        })
    }

    /// What a summarizer of a scope reads: `{scope, limit?, includePii?}`
    /// → `{memories, previous?}`.
    #[wasm_bindgen(js_name = summaryContext)]
    pub fn summary_context(&self, query: JsValue) -> Promise {
        self.run(async move |store| {
            let query: SummaryQuery = from_js(&query, "query")?;
            to_js(&store.summary_context(&query)?)
        })
    }

    /// Stores the summary of a scope, `{scope, text, sources}`, replacing
    /// its previous one; resolves to the summary.
    #[wasm_bindgen(js_name = storeSummary)]
    pub fn store_summary(&self, input: JsValue) -> Promise {
        self.run(async move |store| {
            let input: SummaryInput = from_js(&input, "input")?;
            to_js(&store.store_summary(input).await?)
        })
    }

    /// Erases every expired memory: `{purged}`.
    #[wasm_bindgen(js_name = purgeExpired)]
    pub fn purge_expired(&self) -> Promise {
        self.run(async move |store| to_js(&store.purge_expired().await?))
    }

    /// The memories and files of the scopes a filter selects (the whole
    /// store when absent) as a versioned, checksummed JSON document (a
    /// string).
    pub fn export(&self, filter: JsValue) -> Promise {
        self.run(async move |store| {
            let filter: ScopeFilter = from_js_or_default(&filter, "filter")?;
            Ok(JsValue::from_str(&store.export_filtered(&filter)))
        })
    }

    /// Imports an export (its text or bytes) atomically; `{onProgress?,
    /// signal?}` observe it.
    pub fn import(&self, data: JsValue, options: JsValue) -> Promise {
        self.run(async move |store| {
            let observed = JsProgress::from_options(&options)?;
            let text = text_of(&data, "data", "the text or the bytes of an export")?;
            let result = match observed {
                Some(mut observed) => store.import_observed(&text, &mut observed).await?,
                None => store.import(&text).await?,
            };
            to_js(&result)
        })
    }

    /// Counts over the memories a scope filter selects (all when absent).
    pub fn stats(&self, filter: JsValue) -> Promise {
        self.run(async move |store| {
            let filter: ScopeFilter = from_js_or_default(&filter, "filter")?;
            to_js(&store.stats(&filter))
        })
    }

    /// Stores and indexes a Markdown file `{scope, path, content}`;
    /// resolves to what changed (unchanged content writes nothing).
    #[wasm_bindgen(js_name = syncFile)]
    pub fn sync_file(&self, file: JsValue) -> Promise {
        self.run(async move |store| {
            let file: FileContent = from_js(&file, "file")?;
            to_js(
                &store
                    .sync_file(&file.scope, &file.path, &file.content)
                    .await?,
            )
        })
    }

    /// Removes the file `{scope, path}` and its chunks; resolves to whether
    /// it existed.
    #[wasm_bindgen(js_name = removeFile)]
    pub fn remove_file(&self, file: JsValue) -> Promise {
        self.run(async move |store| {
            let file: FileRef = from_js(&file, "file")?;
            Ok(JsValue::from(
                store.remove_file(&file.scope, &file.path).await?,
            ))
        })
    }

    /// The stored file `{scope, path}`, or `null`.
    pub fn file(&self, file: JsValue) -> Promise {
        self.run(async move |store| {
            let file: FileRef = from_js(&file, "file")?;
            to_js(&store.file(&file.scope, &file.path))
        })
    }

    /// Runs one call of Claude's memory tool (the `input` of its `tool_use`
    /// block) on the `/memories` files of `scope`; resolves to the
    /// `{content, isError}` of the `tool_result`.
    #[wasm_bindgen(js_name = memoryTool)]
    pub fn memory_tool(&self, scope: JsValue, input: JsValue) -> Promise {
        self.run(async move |store| {
            let scope: Scope = from_js(&scope, "scope")?;
            let input: serde_json::Value = from_js(&input, "input")?;
            to_js(&store.memory_tool(&scope, &input).await?)
        })
    }

    /// `document` with its block listing the pinned memories of `scope`.
    #[wasm_bindgen(js_name = renderHotFile)]
    pub fn render_hot_file(&self, scope: JsValue, document: JsValue) -> Promise {
        self.run(async move |store| {
            let scope: Scope = from_js(&scope, "scope")?;
            let document: String = from_js(&document, "document")?;
            Ok(JsValue::from_str(
                &store.render_hot_file(&scope, &document)?,
            ))
        })
    }

    /// Applies the edits of the pinned block of `{scope, path, document}`
    /// to the store; resolves to what changed.
    #[wasm_bindgen(js_name = readHotFile)]
    pub fn read_hot_file(&self, file: JsValue) -> Promise {
        self.run(async move |store| {
            let file: HotFileDocument = from_js(&file, "file")?;
            to_js(
                &store
                    .read_hot_file(&file.scope, &file.path, &file.document)
                    .await?,
            )
        })
    }

    /// Reloads from storage if another instance changed it; resolves to
    /// whether it did.
    pub fn refresh(&self) -> Promise {
        self.run(async move |store| Ok(JsValue::from(store.refresh().await?)))
    }

    /// Closes the store once pending calls finish; later calls fail with
    /// `CLOSED`.
    pub fn close(&self) -> Promise {
        let store = self.store.clone();
        let channel = self.channel.clone();
        future_to_promise(async move {
            let closed = store.lock().await.take();
            channel.borrow_mut().take();
            if let Some(HostStorage::IndexedDb(db)) = closed.as_ref().map(Store::storage) {
                db.close();
            }
            Ok(JsValue::UNDEFINED)
        })
    }
}
