//! The model as the core module sees it: the npm package runs MiniLM in a
//! WebAssembly module of its own (crates/js-model), which its JavaScript
//! loads only when an app gives a model. [`load_model`] checks the model
//! files and has the package's loader start that module and load them;
//! [`JsEmbedder`] is the engine's [`Embedder`] over what it returns (texts
//! in, one `Float32Array` of rows out).

use std::cell::RefCell;
use std::collections::HashMap;

use js_sys::{Array, Float32Array, Function, Promise, Reflect, Uint8Array};
use memtide::embed::Embedder;
use memtide::{EstimatedTokens, TokenCounter};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use crate::adapter::thrown_message;
use crate::{field, js_text_of, BindingError};

thread_local! {
    /// The loaded models (the model module's `ModelCore` objects) by the
    /// handle of their [`JsEmbedder`]: JavaScript values are neither `Send`
    /// nor `Sync`, which the engine's embedders are.
    static MODELS: RefCell<HashMap<u64, JsValue>> = RefCell::new(HashMap::new());
    static NEXT_HANDLE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The engine's error for what a call into the model module (or the
/// package's loader of it) threw: an error with the engine's `code` keeps
/// its code and text; anything else (a trap of the module) is a `MODEL`
/// error.
fn model_error(thrown: &JsValue) -> memtide::Error {
    let message = thrown_message(thrown);
    let code = field(thrown, "code").as_string();
    match code.as_deref() {
        Some("INVALID_INPUT") => memtide::Error::InvalidInput(
            message
                .strip_prefix("invalid input: ")
                .unwrap_or(&message)
                .to_string(),
        ),
        _ => memtide::Error::Model(
            message
                .strip_prefix("model error: ")
                .unwrap_or(&message)
                .to_string(),
        ),
    }
}

/// `object.name(...args)`.
fn call(object: &JsValue, name: &str, args: &[JsValue]) -> Result<JsValue, JsValue> {
    let method: Function = Reflect::get(object, &JsValue::from_str(name))?.dyn_into()?;
    method.apply(object, &args.iter().collect::<Array>())
}

/// An embedding model loaded in the model module.
#[derive(Debug)]
pub(crate) struct JsEmbedder {
    handle: u64,
    model_id: String,
    dimensions: usize,
}

impl JsEmbedder {
    /// Calls `with` on the loaded model, taken out of [`MODELS`] first so
    /// that no borrow of it is held across the call into JavaScript.
    fn model<T>(&self, with: impl FnOnce(&JsValue) -> T) -> Option<T> {
        let model = MODELS.with(|models| models.borrow().get(&self.handle).cloned())?;
        Some(with(&model))
    }
}

impl Drop for JsEmbedder {
    /// Frees the model in the model module's memory.
    fn drop(&mut self) {
        if let Some(model) = MODELS.with(|models| models.borrow_mut().remove(&self.handle)) {
            let _ = call(&model, "free", &[]);
        }
    }
}

impl Embedder for JsEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn embed_batch(&self, texts: &[&str]) -> memtide::Result<Vec<Vec<f32>>> {
        let array: Array = texts.iter().map(|text| JsValue::from_str(text)).collect();
        let rows = self
            .model(|model| call(model, "embed", &[array.into()]))
            .ok_or_else(|| memtide::Error::Model("the model was freed".into()))?
            .map_err(|thrown| model_error(&thrown))?;
        let rows = rows
            .dyn_into::<Float32Array>()
            .map_err(|_| memtide::Error::Model("the model module returned no Float32Array".into()))?
            .to_vec();
        if rows.len() != texts.len() * self.dimensions {
            return Err(memtide::Error::Model(format!(
                "the model module returned {} values for {} texts of {} dimensions",
                rows.len(),
                texts.len(),
                self.dimensions
            )));
        }
        Ok(rows
            .chunks_exact(self.dimensions.max(1))
            .map(<[f32]>::to_vec)
            .collect())
    }

    /// The model's count; should the module fail (it cannot, short of a
    /// trap), the engine's over-estimate, so that a budget still holds.
    fn count_tokens(&self, text: &str) -> usize {
        self.model(|model| call(model, "countTokens", &[JsValue::from_str(text)]))
            .and_then(Result::ok)
            .and_then(|count| count.as_f64())
            .map(|count| count as usize)
            .unwrap_or_else(|| EstimatedTokens.count(text))
    }
}

/// Loads the model files `{onnx: Uint8Array | ArrayBuffer, tokenizer:
/// string | Uint8Array}` through `loader(onnx, tokenizer)`, the package's
/// function that starts the model module and resolves to its `ModelCore`.
pub(crate) async fn load_model(
    model: &JsValue,
    loader: &JsValue,
) -> Result<JsEmbedder, BindingError> {
    let onnx = field(model, "onnx");
    let onnx = if onnx.is_instance_of::<Uint8Array>() {
        onnx
    } else if onnx.is_instance_of::<js_sys::ArrayBuffer>() {
        Uint8Array::new(&onnx).into()
    } else {
        return Err(BindingError::Value(
            "model.onnx must be a Uint8Array or an ArrayBuffer".into(),
        ));
    };
    let tokenizer = js_text_of(
        &field(model, "tokenizer"),
        "model.tokenizer",
        "the text (or bytes) of tokenizer.json",
    )?;
    let loader = loader
        .dyn_ref::<Function>()
        .ok_or_else(|| BindingError::Value("the package gave no model loader".into()))?;
    let loaded = loader
        .call2(&JsValue::UNDEFINED, &onnx, &tokenizer)
        .map(|value| Promise::resolve(&value))
        .map_err(|thrown| model_error(&thrown))?;
    let loaded = JsFuture::from(loaded)
        .await
        .map_err(|thrown| model_error(&thrown))?;
    let answer = |name: &str| call(&loaded, name, &[]).map_err(|thrown| model_error(&thrown));
    let model_id = answer("modelId")?
        .as_string()
        .ok_or_else(|| memtide::Error::Model("the model module gave no model id".into()))?;
    let dimensions = answer("dimensions")?
        .as_f64()
        .filter(|d| d.fract() == 0.0 && *d >= 1.0)
        .ok_or_else(|| memtide::Error::Model("the model module gave no dimensions".into()))?
        as usize;
    let handle = NEXT_HANDLE.with(|next| {
        let handle = next.get();
        next.set(handle + 1);
        handle
    });
    MODELS.with(|models| models.borrow_mut().insert(handle, loaded));
    Ok(JsEmbedder {
        handle,
        model_id,
        dimensions,
    })
}
