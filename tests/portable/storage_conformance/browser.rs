use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll, Waker};

use js_sys::{Array, Function, Object, Promise, Reflect, Uint8Array};
use memtide::storage::{AsyncStorage, Expect};
use memtide_js::IndexedDbStorage;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::wasm_bindgen_test;
use web_sys::{Event, IdbDatabase, IdbFactory, IdbRequest};

use super::*;

static DATABASES: AtomicU32 = AtomicU32::new(0);

/// A database name no other test (or earlier run) uses.
fn unique_name(tag: &str) -> String {
    format!(
        "memtide-test-{tag}-{}-{}-{}",
        js_sys::Date::now(),
        DATABASES.fetch_add(1, Ordering::Relaxed),
        (js_sys::Math::random() * 1e9) as u64
    )
}

impl Backend for IndexedDbStorage {
    async fn fresh() -> Self {
        IndexedDbStorage::open(&unique_name("suite")).await.unwrap()
    }

    /// Closes the connection and opens the database again by name.
    async fn reopen(self) -> Self {
        let name = self.name().to_string();
        self.close();
        drop(self);
        IndexedDbStorage::open(&name).await.unwrap()
    }

    /// Every key and value of the object store, read through a
    /// connection of its own.
    async fn raw_contents(&self) -> Vec<Vec<u8>> {
        raw_dump(self.name())
            .await
            .into_iter()
            .map(|(key, value)| [key.as_bytes(), &value].concat())
            .collect()
    }
}

// ------------------------------------------- raw IndexedDB access

fn factory() -> IdbFactory {
    Reflect::get(&js_sys::global(), &"indexedDB".into())
        .unwrap()
        .unchecked_into()
}

/// The request's result, or its error.
async fn settle(request: &IdbRequest) -> Result<JsValue, JsValue> {
    let mut functions = None;
    let promise = Promise::new(&mut |resolve, reject| functions = Some((resolve, reject)));
    let (resolve, reject) = functions.unwrap();
    let on_success = {
        let request = request.clone();
        Closure::<dyn FnMut(Event)>::new(move |_: Event| {
            resolve
                .call1(&JsValue::UNDEFINED, &request.result().unwrap())
                .unwrap();
        })
    };
    let on_error = {
        let request = request.clone();
        Closure::<dyn FnMut(Event)>::new(move |event: Event| {
            event.prevent_default();
            let error = request
                .error()
                .unwrap()
                .map_or(JsValue::NULL, JsValue::from);
            reject.call1(&JsValue::UNDEFINED, &error).unwrap();
        })
    };
    request.set_onsuccess(Some(on_success.as_ref().unchecked_ref()));
    request.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    let result = JsFuture::from(promise).await;
    request.set_onsuccess(None);
    request.set_onerror(None);
    result
}

/// Opens `name` at `version` (the current one when `None`), creating
/// `stores` if an upgrade runs.
async fn raw_open(name: &str, version: Option<u32>, stores: &[&str]) -> IdbDatabase {
    let request = match version {
        Some(version) => factory().open_with_u32(name, version),
        None => factory().open(name),
    }
    .unwrap();
    let on_upgrade = {
        let request = request.clone();
        let stores: Vec<String> = stores.iter().map(|s| s.to_string()).collect();
        Closure::<dyn FnMut(Event)>::new(move |_: Event| {
            let db: IdbDatabase = request.result().unwrap().unchecked_into();
            for store in &stores {
                db.create_object_store(store).unwrap();
            }
        })
    };
    request.set_onupgradeneeded(Some(on_upgrade.as_ref().unchecked_ref()));
    let db = settle(&request).await.unwrap().unchecked_into();
    request.set_onupgradeneeded(None);
    db
}

/// Every pair of the `kv` store of `name`, in IndexedDB's key order; a
/// value that is not bytes reads as `typeof value`.
async fn raw_dump(name: &str) -> Vec<(String, Vec<u8>)> {
    let db = raw_open(name, None, &[]).await;
    let read = |all_keys: bool| {
        let store = db
            .transaction_with_str("kv")
            .unwrap()
            .object_store("kv")
            .unwrap();
        if all_keys {
            store.get_all_keys().unwrap()
        } else {
            store.get_all().unwrap()
        }
    };
    let keys: Array = settle(&read(true)).await.unwrap().unchecked_into();
    let values: Array = settle(&read(false)).await.unwrap().unchecked_into();
    db.close();
    assert_eq!(keys.length(), values.length());
    keys.iter()
        .zip(values.iter())
        .map(|(key, value)| {
            let bytes = match value.dyn_ref::<Uint8Array>() {
                Some(array) => array.to_vec(),
                None => value.js_typeof().as_string().unwrap().into_bytes(),
            };
            (key.as_string().unwrap(), bytes)
        })
        .collect()
}

/// Puts `value` (any JavaScript value) under `key`, bypassing memtide.
async fn raw_put(name: &str, key: &str, value: &JsValue) {
    let db = raw_open(name, None, &[]).await;
    let tx = db
        .transaction_with_str_and_mode("kv", web_sys::IdbTransactionMode::Readwrite)
        .unwrap();
    let request = tx
        .object_store("kv")
        .unwrap()
        .put_with_key(value, &key.into());
    settle(&request.unwrap()).await.unwrap();
    // Closing waits for the transaction; later transactions see it.
    db.close();
}

fn pairs(entries: &[(&str, &[u8])]) -> Pairs {
    entries
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_vec()))
        .collect()
}

fn manifest(value: &'static [u8]) -> Expect<'static> {
    Expect {
        key: "meta/manifest",
        value: Some(value),
    }
}

// --------------------------------------------------------- tests

#[wasm_bindgen_test]
async fn reopen_after_close_restores_exact_state() {
    let name = unique_name("reopen");
    let mut store = IndexedDbStorage::open(&name).await.unwrap();
    let first = batch(&[
        ("item/a", Some(b"1")),
        ("item/\u{1f600}", Some(b"smile")),
        ("item/\u{e000}", Some(b"")),
        ("meta/manifest", Some(&[0, 255, 7])),
    ]);
    commit(&mut store, &first).await.unwrap();
    let second = batch(&[
        ("item/a", Some(b"one")),
        ("item/b", Some(b"")),
        ("item/\u{e000}", None),
    ]);
    commit(&mut store, &second).await.unwrap();
    let state = store.scan("").await.unwrap();
    let expected = pairs(&[
        ("item/a", b"one"),
        ("item/b", b""),
        ("item/\u{1f600}", b"smile"),
        ("meta/manifest", &[0, 255, 7]),
    ]);
    assert_eq!(state, expected);
    let raw = raw_dump(&name).await;
    assert_eq!(raw.len(), 4);
    let db = raw_open(&name, None, &[]).await;
    assert_eq!(db.version(), f64::from(IndexedDbStorage::SCHEMA_VERSION));
    let stores = db.object_store_names();
    assert_eq!(stores.length(), 1);
    assert!(stores.contains(IndexedDbStorage::STORE));
    db.close();

    store.close();
    match store.get("item/a").await {
        Err(StorageError::Backend(message)) => assert!(message.contains("closed"), "{message}"),
        other => panic!("expected a closed-connection error, got {other:?}"),
    }
    let late = batch(&[("item/late", Some(b"x"))]);
    assert!(matches!(
        commit(&mut store, &late).await,
        Err(StorageError::Backend(_))
    ));
    drop(store);

    let store = IndexedDbStorage::open(&name).await.unwrap();
    assert_eq!(store.scan("").await.unwrap(), expected);
    for (key, value) in &expected {
        assert_eq!(store.get(key).await.unwrap().as_ref(), Some(value), "{key}");
    }
    assert_eq!(store.get("item/\u{e000}").await.unwrap(), None);
    assert_eq!(raw_dump(&name).await, raw);
    drop(store);
    IndexedDbStorage::delete_database(&name).await.unwrap();
}

/// Two connections to one database are two tabs: a commit whose
/// expectation another tab invalidated is refused whole, and of two
/// racing commits on the same expectation exactly one applies.
#[wasm_bindgen_test]
async fn a_failed_expectation_writes_nothing_across_connections() {
    let name = unique_name("tabs");
    let mut tab_a = IndexedDbStorage::open(&name).await.unwrap();
    let mut tab_b = IndexedDbStorage::open(&name).await.unwrap();
    let absent = Expect {
        key: "meta/manifest",
        value: None,
    };
    let v1 = batch(&[("meta/manifest", Some(b"v1")), ("item/1", Some(b"one"))]);
    tab_a.commit(&v1, Some(absent)).await.unwrap();
    let v2 = batch(&[("meta/manifest", Some(b"v2")), ("item/2", Some(b"two"))]);
    tab_b.commit(&v2, Some(manifest(b"v1"))).await.unwrap();

    // Tab A still believes the manifest is v1.
    let stale = batch(&[
        ("item/1", None),
        ("item/3", Some(b"three")),
        ("meta/manifest", Some(b"v2 from a")),
    ]);
    match tab_a.commit(&stale, Some(manifest(b"v1"))).await {
        Err(StorageError::Conflict(message)) => {
            assert!(message.contains("meta/manifest"), "{message}")
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    let expected = pairs(&[
        ("item/1", b"one"),
        ("item/2", b"two"),
        ("meta/manifest", b"v2"),
    ]);
    assert_eq!(tab_a.scan("").await.unwrap(), expected);
    assert_eq!(tab_b.scan("").await.unwrap(), expected);
    assert_eq!(raw_dump(&name).await, expected);

    // Both tabs commit at once, both expecting v2.
    let from_a = batch(&[("meta/manifest", Some(b"v3 a")), ("item/a", Some(b"a"))]);
    let from_b = batch(&[("meta/manifest", Some(b"v3 b")), ("item/b", Some(b"b"))]);
    let (a, b) = futures_util::future::join(
        tab_a.commit(&from_a, Some(manifest(b"v2"))),
        tab_b.commit(&from_b, Some(manifest(b"v2"))),
    )
    .await;
    let (winner, loser, manifest_value) = match (a, b) {
        (Ok(()), Err(StorageError::Conflict(_))) => ("item/a", "item/b", &b"v3 a"[..]),
        (Err(StorageError::Conflict(_)), Ok(())) => ("item/b", "item/a", &b"v3 b"[..]),
        other => panic!("expected one commit and one conflict, got {other:?}"),
    };
    let raw = raw_dump(&name).await;
    let raw_keys = keys(&raw);
    assert!(
        raw_keys.contains(&winner) && !raw_keys.contains(&loser),
        "{raw_keys:?}"
    );
    assert_eq!(
        tab_b.get("meta/manifest").await.unwrap().as_deref(),
        Some(manifest_value)
    );
    assert_eq!(tab_a.scan("").await.unwrap(), raw);
    drop((tab_a, tab_b));
    IndexedDbStorage::delete_database(&name).await.unwrap();
}

#[wasm_bindgen_test]
async fn an_aborted_transaction_writes_nothing() {
    let name = unique_name("abort");
    let mut store = IndexedDbStorage::open(&name).await.unwrap();
    let base = batch(&[("item/1", Some(b"one")), ("meta/manifest", Some(b"v1"))]);
    commit(&mut store, &base).await.unwrap();
    let before = raw_dump(&name).await;

    // A commit dropped after it issued its writes aborts its transaction.
    let mut big = Batch::new();
    for i in 0..1000 {
        big.put(format!("item/big/{i:04}"), vec![7; 1000]);
    }
    big.delete("item/1");
    big.put("meta/manifest", b"v2".to_vec());
    {
        let mut pending = std::pin::pin!(store.commit(&big, None));
        let poll = pending
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()));
        assert!(matches!(poll, Poll::Pending));
    }
    assert_eq!(raw_dump(&name).await, before);
    assert_eq!(store.scan("").await.unwrap(), before);

    // A failure inside the transaction, after its read: the expected key
    // holds something that is not bytes, so the check fails and aborts.
    raw_put(&name, "meta/odd", &JsValue::from_str("not bytes")).await;
    let before = raw_dump(&name).await;
    let odd = Expect {
        key: "meta/odd",
        value: None,
    };
    match store.commit(&big, Some(odd)).await {
        Err(StorageError::Corrupt(message)) => {
            assert!(message.contains("meta/odd"), "{message}")
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert_eq!(raw_dump(&name).await, before);
    // The same batch commits once the expectation is one that holds.
    store.commit(&big, Some(manifest(b"v1"))).await.unwrap();
    assert_eq!(store.scan("item/big/").await.unwrap().len(), 1000);
    assert_eq!(store.get("item/1").await.unwrap(), None);
    drop(store);
    IndexedDbStorage::delete_database(&name).await.unwrap();
}

fn dom_exception(message: &str, name: &str) -> JsValue {
    let constructor: Function = Reflect::get(&js_sys::global(), &"DOMException".into())
        .unwrap()
        .unchecked_into();
    Reflect::construct(&constructor, &Array::of2(&message.into(), &name.into())).unwrap()
}

#[wasm_bindgen_test]
fn dom_exception_names_map_to_storage_errors() {
    let map = IndexedDbStorage::storage_error;
    let quota = dom_exception("the disk is full", "QuotaExceededError");
    match map("committing", &quota) {
        StorageError::QuotaExceeded(message) => {
            assert!(message.starts_with("committing: "), "{message}");
            assert!(
                message.contains("QuotaExceededError: the disk is full"),
                "{message}"
            );
            assert!(message.contains("nothing was written"), "{message}");
        }
        other => panic!("expected QuotaExceeded, got {other:?}"),
    }
    // The legacy numeric code of a quota error, whatever the name.
    let legacy = Object::new();
    Reflect::set(
        &legacy,
        &"name".into(),
        &"NS_ERROR_DOM_QUOTA_REACHED".into(),
    )
    .unwrap();
    Reflect::set(&legacy, &"code".into(), &22.into()).unwrap();
    assert!(matches!(
        map("committing", &legacy),
        StorageError::QuotaExceeded(_)
    ));

    let backend = |error: &JsValue| match map("opening", error) {
        StorageError::Backend(message) => message,
        other => panic!("expected Backend, got {other:?}"),
    };
    let version = backend(&dom_exception("requested 1, have 2", "VersionError"));
    assert!(
        version.contains("VersionError: requested 1, have 2"),
        "{version}"
    );
    assert!(version.contains("newer version of memtide"), "{version}");
    let closed = backend(&dom_exception("closing", "InvalidStateError"));
    assert!(closed.contains("open the store again"), "{closed}");
    let unknown = backend(&dom_exception("io", "UnknownError"));
    assert!(unknown.contains("UnknownError: io"), "{unknown}");
    let constraint = backend(&dom_exception("dup", "ConstraintError"));
    assert_eq!(constraint, "opening: ConstraintError: dup");
    let type_error = backend(&js_sys::TypeError::new("not a function").into());
    assert_eq!(type_error, "opening: TypeError: not a function");
    assert!(backend(&JsValue::NULL).contains("no error was reported"));
    assert!(backend(&JsValue::from_str("plain text")).contains("plain text"));
}

/// A real `QuotaExceededError`: `webdriver.json` caps Chromium's storage
/// pool at 256 MiB (`--enable-features=StorageQuotaSettings:
/// PoolSizeBytes/268435456`, so 192 MiB for this origin). Commits of
/// 8 MiB (incompressible) go in until one fails: it must be
/// `QuotaExceeded` and leave the store as it was.
#[wasm_bindgen_test]
async fn a_real_quota_error_is_quota_exceeded_and_writes_nothing() {
    const CHUNK: usize = 8 << 20;
    const LIMIT_MIB: usize = 1024;
    let name = unique_name("quota");
    let mut store = IndexedDbStorage::open(&name).await.unwrap();
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut noise = |len: usize| -> Vec<u8> {
        let mut bytes = Vec::with_capacity(len + 8);
        while bytes.len() < len {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            bytes.extend_from_slice(&seed.to_le_bytes());
        }
        bytes.truncate(len);
        bytes
    };
    let mut committed = 0;
    let error = loop {
        assert!(
            committed * CHUNK < LIMIT_MIB << 20,
            "no quota error after {LIMIT_MIB} MiB: is the quota cap of webdriver.json in effect?"
        );
        let chunk = batch(&[
            (&format!("item/chunk/{committed:04}"), Some(&noise(CHUNK))),
            ("meta/manifest", Some(format!("{committed}").as_bytes())),
        ]);
        match commit(&mut store, &chunk).await {
            Ok(()) => committed += 1,
            Err(error) => break error,
        }
    };
    match error {
        StorageError::QuotaExceeded(message) => {
            assert!(message.contains("QuotaExceededError"), "{message}")
        }
        other => panic!("expected QuotaExceeded, got {other:?}"),
    }
    assert!(committed > 0, "the first 8 MiB should fit");
    let last = (committed - 1).to_string();
    assert_eq!(
        store.get("meta/manifest").await.unwrap().as_deref(),
        Some(last.as_bytes())
    );
    let chunks = store.scan("item/chunk/").await.unwrap();
    assert_eq!(chunks.len(), committed);
    assert_eq!(
        keys(&chunks).last().copied(),
        Some(format!("item/chunk/{:04}", committed - 1).as_str())
    );
    // Deleting the database gives the space back.
    drop(store);
    IndexedDbStorage::delete_database(&name).await.unwrap();
    let mut store = IndexedDbStorage::open(&name).await.unwrap();
    let again = batch(&[("item/chunk/0000", Some(&noise(CHUNK)))]);
    commit(&mut store, &again).await.unwrap();
    drop(store);
    IndexedDbStorage::delete_database(&name).await.unwrap();
}

/// Another connection deleting (or upgrading) the database makes this
/// one close itself instead of blocking it.
#[wasm_bindgen_test]
async fn a_versionchange_closes_the_connection() {
    let name = unique_name("versionchange");
    let mut store = IndexedDbStorage::open(&name).await.unwrap();
    commit(&mut store, &batch(&[("item/1", Some(b"one"))]))
        .await
        .unwrap();
    IndexedDbStorage::delete_database(&name).await.unwrap();
    match store.get("item/1").await {
        Err(StorageError::Backend(message)) => assert!(message.contains("closed"), "{message}"),
        other => panic!("expected a closed-connection error, got {other:?}"),
    }
    let store = IndexedDbStorage::open(&name).await.unwrap();
    assert!(store.scan("").await.unwrap().is_empty());
    drop(store);
    IndexedDbStorage::delete_database(&name).await.unwrap();
}

#[wasm_bindgen_test]
async fn a_foreign_or_newer_database_is_refused() {
    let foreign = unique_name("foreign");
    raw_open(&foreign, Some(1), &["other"]).await.close();
    match IndexedDbStorage::open(&foreign).await {
        Err(StorageError::Backend(message)) => {
            assert!(message.contains("not created by memtide"), "{message}")
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let newer = unique_name("newer");
    raw_open(&newer, Some(2), &["kv"]).await.close();
    match IndexedDbStorage::open(&newer).await {
        Err(StorageError::Backend(message)) => {
            assert!(message.contains("VersionError"), "{message}");
            assert!(message.contains("newer version of memtide"), "{message}");
        }
        other => panic!("expected a version error, got {other:?}"),
    }
    IndexedDbStorage::delete_database(&foreign).await.unwrap();
    IndexedDbStorage::delete_database(&newer).await.unwrap();
}

#[wasm_bindgen_test]
async fn open_without_an_indexeddb_global_is_a_clear_error() {
    let global = js_sys::global();
    let key = JsValue::from_str("indexedDB");
    let own = Object::get_own_property_descriptor(&global, &key);
    let hidden = Object::new();
    Reflect::set(&hidden, &"value".into(), &JsValue::UNDEFINED).unwrap();
    Reflect::set(&hidden, &"configurable".into(), &JsValue::TRUE).unwrap();
    Object::define_property(&global, &key, &hidden);
    let result = IndexedDbStorage::open("memtide-test-no-indexeddb").await;
    let deleted = IndexedDbStorage::delete_database("memtide-test-no-indexeddb").await;
    if own.is_undefined() {
        Reflect::delete_property(&global, &key).unwrap();
    } else {
        Object::define_property(&global, &key, &own.unchecked_into());
    }
    match result {
        Err(StorageError::Backend(message)) => {
            assert!(message.contains("no `indexedDB`"), "{message}")
        }
        other => panic!("expected a Backend error, got {other:?}"),
    }
    assert!(matches!(deleted, Err(StorageError::Backend(_))));
    assert!(factory().is_object());
}

#[wasm_bindgen_test]
async fn request_persistence_answers() {
    let granted = IndexedDbStorage::request_persistence().await.unwrap();
    // Headless Chromium may grant or refuse; either is an answer.
    let _: bool = granted;
}
