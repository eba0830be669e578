//! [`JsKeyValue`]: an injected JavaScript storage object as an
//! [`AsyncKeyValue`], so [`memtide::storage::KvStorage`] makes it a full backend.
//!
//! The object has `get(key)`, `put(key, bytes)`, `delete(key)` and
//! `list(prefix)`, and optionally `batch(ops)`; each may return a value or a
//! promise. `get` answers a `Uint8Array`, an `ArrayBuffer`, or
//! `null`/`undefined`; `list` an array of key strings; `batch` receives an
//! array of `{type: "put", key, value}` and `{type: "delete", key}` and must
//! apply all of them or none, and a second argument `{key, value}` (value a
//! `Uint8Array` or `null` for "absent"): an adapter that can compare-and-set
//! applies the ops only if `key` holds `value`, else throws an error with
//! `code: "CONFLICT"`. A thrown error whose `name` is `QuotaExceededError` or
//! whose `code` is `QUOTA_EXCEEDED` is reported as
//! [`StorageError::QuotaExceeded`]; `code: "BATCH_TOO_LARGE"` (the ops do not
//! fit one transaction of the store; nothing written) as
//! [`StorageError::BatchTooLarge`], after which memtide journals the batch;
//! `code: "CONFLICT"` as [`StorageError::Conflict`]; any other as
//! [`StorageError::Backend`].

use js_sys::{Array, Function, Object, Promise, Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use memtide::storage::{AsyncKeyValue, Expect, KvOp, StorageError};

/// The methods every adapter must have.
const REQUIRED_METHODS: [&str; 4] = ["get", "put", "delete", "list"];

/// An injected JavaScript storage object (see the module documentation).
#[derive(Debug, Clone)]
pub struct JsKeyValue {
    adapter: Object,
}

impl JsKeyValue {
    /// Wraps `adapter`, checking that it has the required methods.
    pub fn new(adapter: JsValue) -> Result<JsKeyValue, StorageError> {
        let adapter: Object = adapter
            .dyn_into()
            .map_err(|_| StorageError::Backend("the storage adapter must be an object".into()))?;
        for name in REQUIRED_METHODS {
            if method(&adapter, name).is_none() {
                return Err(StorageError::Backend(format!(
                    "the storage adapter has no `{name}` method (it needs get, put, delete and list)"
                )));
            }
        }
        Ok(JsKeyValue { adapter })
    }

    /// Calls `adapter[name](...args)` and awaits the result if it is a
    /// promise.
    async fn call(&self, name: &str, args: &[JsValue]) -> Result<JsValue, StorageError> {
        let function = method(&self.adapter, name).ok_or_else(|| {
            StorageError::Backend(format!("the storage adapter lost its `{name}` method"))
        })?;
        let args: Array = args.iter().collect();
        let returned = function
            .apply(&self.adapter, &args)
            .map_err(|e| adapter_error(name, &e))?;
        JsFuture::from(Promise::resolve(&returned))
            .await
            .map_err(|e| adapter_error(name, &e))
    }
}

fn method(object: &Object, name: &str) -> Option<Function> {
    property(object, name).and_then(|f| f.dyn_into::<Function>().ok())
}

/// `target[key]`, or `None` when it is `undefined`/`null` or unreadable.
pub(crate) fn property(target: &JsValue, key: &str) -> Option<JsValue> {
    if !target.is_object() {
        return None;
    }
    Reflect::get(target, &JsValue::from_str(key))
        .ok()
        .filter(|v| !v.is_undefined() && !v.is_null())
}

/// The message of a thrown JavaScript value (an `Error`'s `message`, or the
/// value itself when it is a string).
pub(crate) fn thrown_message(thrown: &JsValue) -> String {
    property(thrown, "message")
        .and_then(|m| m.as_string())
        .or_else(|| thrown.as_string())
        .unwrap_or_else(|| "unknown error".into())
}

/// Maps what an adapter threw to a [`StorageError`].
fn adapter_error(method: &str, thrown: &JsValue) -> StorageError {
    let field = |name: &str| property(thrown, name).and_then(|v| v.as_string());
    let message = format!(
        "storage adapter `{method}` failed: {}",
        thrown_message(thrown)
    );
    match (field("name").as_deref(), field("code").as_deref()) {
        (Some("QuotaExceededError"), _) | (_, Some("QUOTA_EXCEEDED")) => {
            StorageError::QuotaExceeded(message)
        }
        (_, Some("BATCH_TOO_LARGE")) => StorageError::BatchTooLarge(message),
        (_, Some("CONFLICT")) => StorageError::Conflict(message),
        _ => StorageError::Backend(message),
    }
}

/// Copies a `Uint8Array` or `ArrayBuffer` into Rust; `None` for other values.
pub(crate) fn bytes_of(value: &JsValue) -> Option<Vec<u8>> {
    if let Some(array) = value.dyn_ref::<Uint8Array>() {
        Some(array.to_vec())
    } else if value.is_instance_of::<js_sys::ArrayBuffer>() {
        Some(Uint8Array::new(value).to_vec())
    } else {
        None
    }
}

impl AsyncKeyValue for JsKeyValue {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        let value = self.call("get", &[key.into()]).await?;
        if value.is_null() || value.is_undefined() {
            return Ok(None);
        }
        bytes_of(&value).map(Some).ok_or_else(|| {
            StorageError::Backend(format!(
                "storage adapter `get({key:?})` returned neither bytes (Uint8Array, ArrayBuffer) nor null"
            ))
        })
    }

    async fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        let bytes = Uint8Array::from(value);
        self.call("put", &[key.into(), bytes.into()]).await?;
        Ok(())
    }

    async fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        self.call("delete", &[key.into()]).await?;
        Ok(())
    }

    async fn list(&self, prefix: &str) -> Result<Vec<String>, StorageError> {
        let value = self.call("list", &[prefix.into()]).await?;
        let not_keys = || {
            StorageError::Backend(format!(
                "storage adapter `list({prefix:?})` must return an array of key strings"
            ))
        };
        let keys: Array = value.dyn_into().map_err(|_| not_keys())?;
        keys.iter()
            .map(|key| key.as_string().ok_or_else(not_keys))
            .collect()
    }

    fn has_atomic_batch(&self) -> bool {
        method(&self.adapter, "batch").is_some()
    }

    async fn batch(
        &mut self,
        ops: &[KvOp<'_>],
        expect: Option<Expect<'_>>,
    ) -> Result<(), StorageError> {
        let list = Array::new();
        for (key, value) in ops {
            let op = Object::new();
            let set = |field: &str, v: &JsValue| {
                Reflect::set(&op, &JsValue::from_str(field), v)
                    .map(|_| ())
                    .map_err(|e| adapter_error("batch", &e))
            };
            set("key", &JsValue::from_str(key))?;
            match value {
                Some(bytes) => {
                    set("type", &JsValue::from_str("put"))?;
                    set("value", &Uint8Array::from(*bytes).into())?;
                }
                None => {
                    set("type", &JsValue::from_str("delete"))?;
                }
            }
            list.push(&op);
        }
        let expect = match expect {
            None => JsValue::UNDEFINED,
            Some(expect) => {
                let object = Object::new();
                let value = match expect.value {
                    Some(bytes) => Uint8Array::from(bytes).into(),
                    None => JsValue::NULL,
                };
                for (name, v) in [("key", JsValue::from_str(expect.key)), ("value", value)] {
                    Reflect::set(&object, &JsValue::from_str(name), &v)
                        .map_err(|e| adapter_error("batch", &e))?;
                }
                object.into()
            }
        };
        self.call("batch", &[list.into(), expect]).await?;
        Ok(())
    }
}
