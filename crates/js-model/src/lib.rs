//! The wasm-bindgen surface of the npm package's model module
//! (`memtide_model_bg.wasm`): memtide's MiniLM on tract, which the package's
//! JavaScript loads only when an app gives a model, so that a lexical-only
//! app neither downloads nor compiles it.
//!
//! Conversion only: the core module (crates/js) checks the model files,
//! calls [`ModelCore::load`] through the package's JavaScript, and embeds
//! through an `Embedder` over [`ModelCore::embed`] and
//! [`ModelCore::count_tokens`]. Failures are `MemtideError`s with the
//! engine's stable codes, like the core's.

use js_sys::{Array, Function, Reflect};
use memtide::embed::{Embedder, MiniLm};
use wasm_bindgen::prelude::*;

thread_local! {
    /// The class errors are constructed with (`new Class(message, code)`),
    /// set by the package's JavaScript wrapper.
    static ERROR_CLASS: std::cell::RefCell<Option<Function>> = const { std::cell::RefCell::new(None) };
}

/// Sets the class this module constructs its errors with: `new
/// errorClass(message, code)`. Without one, errors are plain `Error`s with a
/// `code` property.
#[wasm_bindgen(js_name = setErrorClass)]
pub fn set_error_class(error_class: Function) {
    ERROR_CLASS.with(|class| *class.borrow_mut() = Some(error_class));
}

/// Bytes of this instance's linear memory: the loaded model's weights and
/// buffers. It grows as needed and never shrinks, so it is also the peak.
#[wasm_bindgen(js_name = wasmMemoryBytes)]
pub fn wasm_memory_bytes() -> f64 {
    core::arch::wasm32::memory_size::<0>() as f64 * 65536.0
}

/// The JavaScript error for `error`: an instance of the registered class
/// with the engine's `code` and message.
fn to_js_error(error: memtide::Error) -> JsValue {
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

/// One loaded model.
#[wasm_bindgen]
pub struct ModelCore(MiniLm);

#[wasm_bindgen]
impl ModelCore {
    /// Loads the model from the bytes of `model.onnx` and the text of
    /// `tokenizer.json` (`MiniLm::from_bytes`: `INVALID_INPUT` for a bad
    /// tokenizer, `MODEL` for a bad ONNX file).
    pub fn load(onnx: Vec<u8>, tokenizer: &str) -> Result<ModelCore, JsValue> {
        MiniLm::from_bytes(onnx, tokenizer)
            .map(ModelCore)
            .map_err(to_js_error)
    }

    /// The model's id, stored beside its vectors.
    #[wasm_bindgen(js_name = modelId)]
    pub fn model_id(&self) -> String {
        self.0.model_id().to_string()
    }

    /// Length of every embedding.
    pub fn dimensions(&self) -> usize {
        self.0.dimensions()
    }

    /// The L2-normalized embeddings of `texts` (one `embed_batch`), row
    /// after row in one `Float32Array`.
    pub fn embed(&self, texts: Vec<String>) -> Result<Vec<f32>, JsValue> {
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let rows = self.0.embed_batch(&texts).map_err(to_js_error)?;
        Ok(rows.concat())
    }

    /// Prompt tokens of `text` by the model's tokenizer.
    #[wasm_bindgen(js_name = countTokens)]
    pub fn count_tokens(&self, text: &str) -> usize {
        self.0.count_tokens(text)
    }
}
