//! [`IndexedDbStorage`]: the storage contract on the browser's IndexedDB
//! (`docs/format.md`, section "IndexedDB").
//!
//! One database per store, holding one object store, [`STORE`]:
//!
//! * key: the memtide key, a JavaScript string (out-of-line key, no key path);
//! * value: the key's bytes, a `Uint8Array` (an `ArrayBuffer` is read too).
//!
//! A `get_many` (the segments an open reads) or a snapshot is one
//! `readonly` transaction with every request issued at once.
//!
//! A commit is one `readwrite` transaction (durability `"strict"` where the
//! browser knows the option). The commit's [`Expect`]ation is read and
//! compared inside that transaction, in the request's `success` callback, and
//! the puts and deletes are issued from there: IndexedDB serializes
//! `readwrite` transactions on the same store, so a second tab cannot slip a
//! write in between. The commit returns only on the transaction's `complete`
//! event; on `abort` (a failed expectation, a quota error, anything else)
//! nothing was written. Dropping an unfinished commit aborts its transaction.
//!
//! Every JavaScript callback is a [`Closure`] owned by the call that set it
//! and detached when that call ends, so nothing leaks per call. The
//! connection closes itself on `versionchange`, so another tab can upgrade or
//! delete the database; this store then reports every call as failed.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::rc::Rc;

use js_sys::{Array, ArrayBuffer, Function, JsString, Object, Promise, Reflect, Uint8Array};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{Event, IdbDatabase, IdbFactory, IdbKeyRange, IdbObjectStore, IdbRequest};
use web_sys::{IdbTransaction, IdbVersionChangeEvent};

use memtide::storage::{validate_key, AsyncStorage, Batch, Expect, Snapshot, StorageError};

use crate::adapter::property;

/// Version of the database schema, the `version` IndexedDB opens: 1 = one
/// object store [`STORE`] of string keys and `Uint8Array` values.
const SCHEMA_VERSION: u32 = 1;

/// Name of the object store holding every key-value pair.
const STORE: &str = "kv";

/// A JavaScript event handler owned by Rust.
type Handler = Closure<dyn FnMut(Event)>;

/// A memtide store in one IndexedDB database; see the module documentation.
pub struct IndexedDbStorage {
    name: String,
    db: IdbDatabase,
    /// Set by [`IndexedDbStorage::close`] and by the database's
    /// `versionchange` and `close` events.
    closed: Rc<Cell<bool>>,
    /// The `versionchange` and `close` handlers, kept as long as the
    /// connection.
    _handlers: Listeners,
}

impl fmt::Debug for IndexedDbStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IndexedDbStorage")
            .field("name", &self.name)
            .field("closed", &self.closed.get())
            .finish()
    }
}

impl IndexedDbStorage {
    /// The database version this memtide creates and reads: 1 = one object
    /// store [`IndexedDbStorage::STORE`] of string keys and `Uint8Array`
    /// values (`docs/format.md`, section "IndexedDB").
    pub const SCHEMA_VERSION: u32 = SCHEMA_VERSION;

    /// The name of the object store holding every key-value pair.
    pub const STORE: &'static str = STORE;

    /// Opens (creating or upgrading as needed) the database `name` of the
    /// global `indexedDB` factory, which windows, workers, and Node or Deno
    /// with an IndexedDB implementation installed all provide. An upgrade
    /// waits while a connection of an older version stays open elsewhere
    /// (memtide's own connections close themselves when asked).
    pub async fn open(name: &str) -> Result<IndexedDbStorage, StorageError> {
        let context = format!("opening IndexedDB database `{name}`");
        let factory = factory()?;
        let request = factory
            .open_with_u32(name, SCHEMA_VERSION)
            .map_err(|e| Self::storage_error(&context, &e))?;
        let upgrade_failure: Rc<RefCell<Option<StorageError>>> = Rc::default();
        let mut listeners = Listeners::new(&request);
        let on_upgrade = {
            let request = request.clone();
            let failure = upgrade_failure.clone();
            Closure::new(move |event: Event| {
                let event: IdbVersionChangeEvent = event.unchecked_into();
                let result = request
                    .result()
                    .and_then(|db| upgrade(&db.unchecked_into(), event.old_version()));
                if let Err(error) = result {
                    *failure.borrow_mut() = Some(Self::storage_error(
                        "upgrading the IndexedDB schema of the database",
                        &error,
                    ));
                    if let Some(transaction) = request.transaction() {
                        let _ = transaction.abort();
                    }
                }
            })
        };
        listeners.on("upgradeneeded", on_upgrade)?;
        let wait = listeners.settle_request(&request)?;
        let outcome = wait.await;
        drop(listeners);
        let db: IdbDatabase = match outcome {
            Ok(db) => db.unchecked_into(),
            Err(error) => {
                return Err(upgrade_failure
                    .borrow_mut()
                    .take()
                    .unwrap_or_else(|| Self::storage_error(&context, &error)))
            }
        };
        if !db.object_store_names().contains(STORE) {
            db.close();
            return Err(StorageError::Backend(format!(
                "IndexedDB database `{name}` (version {}) has no `{STORE}` object store: it was \
                 not created by memtide; open the store under another name",
                db.version()
            )));
        }

        let closed = Rc::new(Cell::new(false));
        let mut handlers = Listeners::new(&db);
        let on_versionchange = {
            let (db, closed) = (db.clone(), closed.clone());
            Closure::new(move |_: Event| {
                // Another connection upgrades or deletes the database: let it.
                db.close();
                closed.set(true);
            })
        };
        handlers.on("versionchange", on_versionchange)?;
        let on_close = {
            let closed = closed.clone();
            Closure::new(move |_: Event| closed.set(true))
        };
        handlers.on("close", on_close)?;
        Ok(IndexedDbStorage {
            name: name.to_string(),
            db,
            closed,
            _handlers: handlers,
        })
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Closes the connection (after its running transactions finish); every
    /// later call fails. Dropping the store closes it too.
    pub fn close(&self) {
        self.closed.set(true);
        self.db.close();
    }

    /// Deletes the database `name` and everything in it. Open connections of
    /// memtide close themselves first; the call waits for connections of other
    /// code that do not.
    pub async fn delete_database(name: &str) -> Result<(), StorageError> {
        let context = format!("deleting IndexedDB database `{name}`");
        let request = factory()?
            .delete_database(name)
            .map_err(|e| Self::storage_error(&context, &e))?;
        let mut listeners = Listeners::new(&request);
        let wait = listeners.settle_request(&request)?;
        wait.await
            .map(drop)
            .map_err(|e| Self::storage_error(&context, &e))
    }

    /// Asks the browser to exempt this site's storage from eviction
    /// (`navigator.storage.persist()`), returning whether it is persistent.
    /// Where the API is missing (workers, Node, older browsers) it returns
    /// `Ok(false)`.
    pub async fn request_persistence() -> Result<bool, StorageError> {
        let context = "requesting persistent storage";
        let storage = property(&js_sys::global(), "navigator")
            .and_then(|navigator| property(&navigator, "storage"))
            .unwrap_or(JsValue::UNDEFINED);
        let persist = property(&storage, "persist").and_then(|f| f.dyn_into::<Function>().ok());
        let Some(persist) = persist else {
            return Ok(false);
        };
        let promise = Reflect::apply(&persist, &storage, &Array::new())
            .map_err(|e| Self::storage_error(context, &e))?;
        let granted = JsFuture::from(Promise::resolve(&promise))
            .await
            .map_err(|e| Self::storage_error(context, &e))?;
        Ok(granted.as_bool().unwrap_or(false))
    }

    /// The [`StorageError`] for a JavaScript failure during `context` (what
    /// was being done): a `QuotaExceededError` (by name, or the legacy code
    /// 22) is [`StorageError::QuotaExceeded`]; anything else is
    /// [`StorageError::Backend`] naming the exception and what to do.
    pub fn storage_error(context: &str, error: &JsValue) -> StorageError {
        let text = |key: &str| property(error, key).and_then(|v| v.as_string());
        let name = text("name").unwrap_or_default();
        let message = text("message")
            .or_else(|| error.as_string())
            .unwrap_or_else(|| {
                if error.is_null() || error.is_undefined() {
                    "no error was reported".to_string()
                } else {
                    format!("{error:?}")
                }
            });
        let code = property(error, "code").and_then(|v| v.as_f64());
        let described = if name.is_empty() {
            message.clone()
        } else {
            format!("{name}: {message}")
        };
        if name == "QuotaExceededError" || code == Some(22.0) {
            return StorageError::QuotaExceeded(format!(
                "{context}: the browser's storage quota for this site is used up ({described}); \
                 nothing was written. Free space (hard-delete memories, clear other data of \
                 this site) or ask for persistent storage, then retry"
            ));
        }
        let advice = match name.as_str() {
            "VersionError" => {
                "the database was written by a newer version of memtide; update memtide or open \
                 another database"
            }
            "InvalidStateError" => {
                "the connection is closed or closing (another tab may have upgraded or \
                 deleted the database); open the store again"
            }
            "SecurityError" => {
                "this page may not use IndexedDB (opaque origin, sandboxed frame, or storage \
                 blocked by the browser's settings)"
            }
            "AbortError" => "the transaction was aborted and nothing was written; retry",
            "UnknownError" => {
                "the browser's IndexedDB failed (often a full disk or damaged profile \
                 storage); retry, or clear this site's data"
            }
            _ => "",
        };
        if advice.is_empty() {
            StorageError::Backend(format!("{context}: {described}"))
        } else {
            StorageError::Backend(format!("{context}: {described}; {advice}"))
        }
    }

    /// Fails when the connection is closed.
    fn check_open(&self) -> Result<(), StorageError> {
        if self.closed.get() {
            return Err(StorageError::Backend(format!(
                "the IndexedDB connection to `{}` is closed (by this program, or because \
                 another tab upgraded or deleted the database); open the store again",
                self.name
            )));
        }
        Ok(())
    }

    /// The object store in a new read-only transaction.
    fn read_store(&self, context: &str) -> Result<IdbObjectStore, StorageError> {
        self.check_open()?;
        self.db
            .transaction_with_str(STORE)
            .and_then(|tx| tx.object_store(STORE))
            .map_err(|e| Self::storage_error(context, &e))
    }
}

impl Drop for IndexedDbStorage {
    fn drop(&mut self) {
        self.close();
    }
}

/// A request issued on a transaction, with the handlers that settle it.
struct Pending {
    _listeners: Listeners,
    wait: JsFuture,
}

impl Pending {
    fn issue(request: Result<IdbRequest, JsValue>, context: &str) -> Result<Pending, StorageError> {
        let request = request.map_err(|e| IndexedDbStorage::storage_error(context, &e))?;
        let mut listeners = Listeners::new(&request);
        let wait = listeners.settle_request(&request)?;
        Ok(Pending {
            _listeners: listeners,
            wait,
        })
    }

    async fn finish(self, context: &str) -> Result<JsValue, StorageError> {
        self.wait
            .await
            .map_err(|e| IndexedDbStorage::storage_error(context, &e))
    }
}

/// Issues the read of `key` on `store`.
fn issue_get(store: &IdbObjectStore, key: &str) -> Result<Pending, StorageError> {
    Pending::issue(store.get(&JsValue::from_str(key)), &get_context(key))
}

fn get_context(key: &str) -> String {
    format!("reading `{key}` from IndexedDB")
}

async fn finish_get(pending: Pending, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
    let value = pending.finish(&get_context(key)).await?;
    if value.is_undefined() {
        Ok(None)
    } else {
        bytes_of(&value, key).map(Some)
    }
}

/// Issues the key and value reads of `prefix` on `store`: both in one
/// transaction, so the same snapshot in the same (UTF-16) key order.
fn issue_scan(store: &IdbObjectStore, prefix: &str) -> Result<(Pending, Pending), StorageError> {
    let context = scan_context(prefix);
    let range = prefix_range(prefix).map_err(|e| IndexedDbStorage::storage_error(&context, &e))?;
    let (keys, values) = match range {
        Some(range) => (
            store.get_all_keys_with_key(&range),
            store.get_all_with_key(&range),
        ),
        None => (store.get_all_keys(), store.get_all()),
    };
    Ok((
        Pending::issue(keys, &context)?,
        Pending::issue(values, &context)?,
    ))
}

fn scan_context(prefix: &str) -> String {
    format!("scanning `{prefix}…` in IndexedDB")
}

async fn finish_scan(
    (keys, values): (Pending, Pending),
    prefix: &str,
) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
    let context = scan_context(prefix);
    let keys: Array = keys.finish(&context).await?.unchecked_into();
    let values: Array = values.finish(&context).await?.unchecked_into();
    if keys.length() != values.length() {
        return Err(StorageError::Backend(format!(
            "{context}: IndexedDB returned {} keys but {} values",
            keys.length(),
            values.length()
        )));
    }
    let mut pairs = Vec::with_capacity(keys.length() as usize);
    for (key, value) in keys.iter().zip(values.iter()) {
        let Some(key) = key.as_string() else {
            return Err(StorageError::Corrupt(format!(
                "the IndexedDB store `{STORE}` holds a key that is not a string: {key:?}"
            )));
        };
        if key.starts_with(prefix) {
            let value = bytes_of(&value, &key)?;
            pairs.push((key, value));
        }
    }
    // IndexedDB orders by UTF-16 code units; the contract by UTF-8 bytes.
    pairs.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(pairs)
}

impl AsyncStorage for IndexedDbStorage {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        let store = self.read_store(&get_context(key))?;
        finish_get(issue_get(&store, key)?, key).await
    }

    async fn scan(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        let store = self.read_store(&scan_context(prefix))?;
        finish_scan(issue_scan(&store, prefix)?, prefix).await
    }

    /// Every read in one readonly transaction: another tab's commit lands
    /// entirely before or entirely after it.
    async fn snapshot(&self, prefixes: &[&str], key: &str) -> Result<Snapshot, StorageError> {
        let store = self.read_store("reading a snapshot of the store from IndexedDB")?;
        let mut scans = Vec::with_capacity(prefixes.len());
        for prefix in prefixes {
            scans.push(issue_scan(&store, prefix)?);
        }
        let value = issue_get(&store, key)?;
        let mut pairs = Vec::with_capacity(prefixes.len());
        for (scan, prefix) in scans.into_iter().zip(prefixes) {
            pairs.push(finish_scan(scan, prefix).await?);
        }
        Ok((pairs, finish_get(value, key).await?))
    }

    /// Every read in one readonly transaction, all issued before the first
    /// is awaited: the browser serves them together, from one state of the
    /// store, instead of one transaction (and one round trip) per key.
    async fn get_many(&self, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>, StorageError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let store = self.read_store("reading keys from IndexedDB")?;
        let pending = keys
            .iter()
            .map(|key| issue_get(&store, key))
            .collect::<Result<Vec<_>, _>>()?;
        let mut values = Vec::with_capacity(keys.len());
        for (pending, key) in pending.into_iter().zip(keys) {
            values.push(finish_get(pending, key).await?);
        }
        Ok(values)
    }

    async fn commit(
        &mut self,
        batch: &Batch,
        expect: Option<Expect<'_>>,
    ) -> Result<(), StorageError> {
        batch.validate_keys()?;
        if let Some(expect) = &expect {
            validate_key(expect.key)?;
        }
        if batch.is_empty() && expect.is_none() {
            return Ok(());
        }
        let context = "committing a batch to IndexedDB";
        let error = move |e: JsValue| Self::storage_error(context, &e);
        self.check_open()?;
        let ops: Rc<Vec<(JsValue, Option<Uint8Array>)>> = Rc::new(
            batch
                .ops()
                .map(|(key, value)| (JsValue::from_str(key), value.map(Uint8Array::from)))
                .collect(),
        );
        let tx = readwrite_transaction(&self.db).map_err(error)?;
        // From here on, dropping `done` (an error return, a dropped future)
        // aborts the transaction unless it has finished.
        let done = TransactionWait::new(&tx)?;
        let store = tx.object_store(STORE).map_err(error)?;
        let failure: Rc<RefCell<Option<StorageError>>> = Rc::default();
        let mut check = None;
        match expect {
            None => {
                if let Err(e) = write_ops(&store, &ops) {
                    *failure.borrow_mut() = Some(error(e));
                    let _ = tx.abort();
                }
            }
            Some(expect) => {
                let request = store.get(&JsValue::from_str(expect.key)).map_err(error)?;
                let key = expect.key.to_string();
                let expected = expect.value.map(<[u8]>::to_vec);
                let on_read = {
                    let (request, tx, failure) = (request.clone(), tx.clone(), failure.clone());
                    // Runs while the transaction is active: check, then write.
                    Closure::new(move |_: Event| {
                        let expect = Expect {
                            key: &key,
                            value: expected.as_deref(),
                        };
                        let outcome = request
                            .result()
                            .map_err(error)
                            .and_then(|v| read_optional(&v, &key))
                            .and_then(|current| expect.check(current.as_deref()))
                            .and_then(|()| write_ops(&store, &ops).map_err(error));
                        if let Err(e) = outcome {
                            *failure.borrow_mut() = Some(e);
                            let _ = tx.abort();
                        }
                    })
                };
                let mut listeners = Listeners::new(&request);
                listeners.on("success", on_read)?;
                check = Some(listeners);
            }
        }
        let outcome = done.wait().await;
        drop(check);
        let failure = failure.borrow_mut().take();
        match (outcome, failure) {
            (Ok(()), None) => Ok(()),
            (_, Some(failure)) => Err(failure),
            (Err(e), None) => Err(error(e)),
        }
    }
}

/// The global `indexedDB` factory.
fn factory() -> Result<IdbFactory, StorageError> {
    match property(&js_sys::global(), "indexedDB") {
        Some(factory) if factory.is_object() => Ok(factory.unchecked_into()),
        _ => Err(StorageError::Backend(
            "IndexedDB is not available here: the global object has no `indexedDB` (in Node \
             or Deno install an implementation such as fake-indexeddb first, or give memtide \
             another storage adapter)"
                .into(),
        )),
    }
}

/// Brings a database from schema `old_version` (0: new) to
/// [`SCHEMA_VERSION`], inside the `versionchange` transaction. A later
/// version adds a step `if old_version < 2.0 { … }` below the existing ones.
fn upgrade(db: &IdbDatabase, old_version: f64) -> Result<(), JsValue> {
    if old_version < 1.0 {
        db.create_object_store(STORE)?;
    }
    Ok(())
}

/// A `readwrite` transaction on [`STORE`] asking for strict durability
/// (flushed to disk before `complete`). The options argument is passed
/// untyped: web-sys only exposes it as an unstable API, and browsers without
/// it ignore it.
fn readwrite_transaction(db: &IdbDatabase) -> Result<IdbTransaction, JsValue> {
    let options = Object::new();
    Reflect::set(&options, &"durability".into(), &"strict".into())?;
    let transaction: Function = Reflect::get(db, &"transaction".into())?.dyn_into()?;
    let args = Array::of3(&STORE.into(), &"readwrite".into(), &options);
    Ok(Reflect::apply(&transaction, db, &args)?.unchecked_into())
}

/// Issues every put and delete of a batch on `store`.
fn write_ops(store: &IdbObjectStore, ops: &[(JsValue, Option<Uint8Array>)]) -> Result<(), JsValue> {
    for (key, value) in ops {
        match value {
            Some(value) => store.put_with_key(value, key)?,
            None => store.delete(key)?,
        };
    }
    Ok(())
}

/// The key range holding exactly the keys that start with `prefix` (in
/// UTF-16 code units, which for well-formed strings is the same as in UTF-8
/// bytes); `None` for the empty prefix.
fn prefix_range(prefix: &str) -> Result<Option<IdbKeyRange>, JsValue> {
    if prefix.is_empty() {
        return Ok(None);
    }
    let lower = JsValue::from_str(prefix);
    // The first string after every string starting with `prefix`: the prefix
    // with its last code unit below 0xFFFF incremented and the rest dropped.
    let mut upper: Vec<u16> = prefix.encode_utf16().collect();
    while let Some(last) = upper.pop() {
        if last < u16::MAX {
            upper.push(last + 1);
            let upper = JsString::from_char_code(&upper);
            return IdbKeyRange::bound_with_lower_open_and_upper_open(&lower, &upper, false, true)
                .map(Some);
        }
    }
    IdbKeyRange::lower_bound(&lower).map(Some)
}

/// The bytes of a stored value.
fn bytes_of(value: &JsValue, key: &str) -> Result<Vec<u8>, StorageError> {
    if let Some(array) = value.dyn_ref::<Uint8Array>() {
        Ok(array.to_vec())
    } else if let Some(buffer) = value.dyn_ref::<ArrayBuffer>() {
        Ok(Uint8Array::new(buffer).to_vec())
    } else {
        Err(StorageError::Corrupt(format!(
            "the IndexedDB value under `{key}` is not bytes (Uint8Array or ArrayBuffer)"
        )))
    }
}

/// The bytes of a request result that may be `undefined` (absent).
fn read_optional(value: &JsValue, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
    if value.is_undefined() {
        Ok(None)
    } else {
        bytes_of(value, key).map(Some)
    }
}

/// Event handlers set as `on<event>` properties of one target; dropping it
/// removes them and frees the closures.
struct Listeners {
    target: JsValue,
    handlers: Vec<(String, Handler)>,
}

impl Listeners {
    fn new(target: &JsValue) -> Listeners {
        Listeners {
            target: target.clone(),
            handlers: Vec::new(),
        }
    }

    /// Sets `handler` as the target's `on<event>`.
    fn on(&mut self, event: &str, handler: Handler) -> Result<(), StorageError> {
        let property = format!("on{event}");
        Reflect::set(
            &self.target,
            &JsValue::from_str(&property),
            handler.as_ref(),
        )
        .map_err(|e| IndexedDbStorage::storage_error("setting an IndexedDB event handler", &e))?;
        self.handlers.push((property, handler));
        Ok(())
    }

    /// Handles the request's `success` and `error` events; the returned
    /// future gives its `result` or its `error`. It must be awaited while
    /// `self` lives.
    fn settle_request(&mut self, request: &IdbRequest) -> Result<JsFuture, StorageError> {
        let (promise, resolve, reject) = deferred()?;
        let on_success = {
            let (request, reject) = (request.clone(), reject.clone());
            Closure::new(move |_: Event| {
                let _ = match request.result() {
                    Ok(value) => resolve.call1(&JsValue::UNDEFINED, &value),
                    Err(error) => reject.call1(&JsValue::UNDEFINED, &error),
                };
            })
        };
        let on_error = {
            let request = request.clone();
            Closure::new(move |event: Event| {
                // Handled here: the failure is reported, not thrown.
                event.prevent_default();
                let error = match request.error() {
                    Ok(Some(error)) => error.into(),
                    Ok(None) => JsValue::NULL,
                    Err(error) => error,
                };
                let _ = reject.call1(&JsValue::UNDEFINED, &error);
            })
        };
        self.on("success", on_success)?;
        self.on("error", on_error)?;
        Ok(JsFuture::from(promise))
    }
}

impl Drop for Listeners {
    fn drop(&mut self) {
        for (property, _) in &self.handlers {
            let _ = Reflect::set(&self.target, &JsValue::from_str(property), &JsValue::NULL);
        }
    }
}

/// The outcome of a transaction: `complete` or `abort`. Dropped before
/// either, it aborts the transaction.
struct TransactionWait {
    tx: IdbTransaction,
    finished: Rc<Cell<bool>>,
    future: JsFuture,
    _listeners: Listeners,
}

impl TransactionWait {
    fn new(tx: &IdbTransaction) -> Result<TransactionWait, StorageError> {
        let (promise, resolve, reject) = deferred()?;
        let finished = Rc::new(Cell::new(false));
        let mut listeners = Listeners::new(tx);
        let on_complete = {
            let finished = finished.clone();
            Closure::new(move |_: Event| {
                finished.set(true);
                let _ = resolve.call0(&JsValue::UNDEFINED);
            })
        };
        let on_abort = {
            let (tx, finished) = (tx.clone(), finished.clone());
            Closure::new(move |_: Event| {
                finished.set(true);
                let error = tx.error().map_or(JsValue::NULL, JsValue::from);
                let _ = reject.call1(&JsValue::UNDEFINED, &error);
            })
        };
        listeners.on("complete", on_complete)?;
        listeners.on("abort", on_abort)?;
        Ok(TransactionWait {
            tx: tx.clone(),
            finished,
            future: JsFuture::from(promise),
            _listeners: listeners,
        })
    }

    /// `Ok` on `complete`; on `abort`, the transaction's error (`null` when
    /// it was aborted on purpose).
    async fn wait(mut self) -> Result<(), JsValue> {
        (&mut self.future).await.map(drop)
    }
}

impl Drop for TransactionWait {
    fn drop(&mut self) {
        if !self.finished.get() {
            let _ = self.tx.abort();
        }
    }
}

/// A new promise with its `resolve` and `reject` functions.
fn deferred() -> Result<(Promise, Function, Function), StorageError> {
    let mut functions = None;
    let promise = Promise::new(&mut |resolve, reject| functions = Some((resolve, reject)));
    let (resolve, reject) = functions.ok_or_else(|| {
        StorageError::Backend("the JavaScript Promise constructor did not run its executor".into())
    })?;
    Ok((promise, resolve, reject))
}
