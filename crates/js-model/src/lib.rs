//! The wasm-bindgen surface of the npm package's model module
//! (`memtide_model_bg.wasm`): memtide's MiniLM on tract, which the package's
//! JavaScript loads only when an app gives a model, so that a lexical-only
//! app neither downloads nor compiles it.
//!
//! Conversion only: the core module (crates/js) checks the model files,
//! calls [`ModelCore::load`] through the package's JavaScript, and embeds
//! through an `Embedder` over [`ModelCore::embed`] and
//! [`ModelCore::count_tokens`]. A failure is an `Error` with the engine's
//! message and stable `code`, which the core turns back into the engine's
//! error (and so into the package's `MemtideError`).

mod alloc;

use js_sys::{Reflect, Uint8Array};
use memtide::embed::{Embedder, MiniLm, OnnxFile};
use wasm_bindgen::prelude::*;

#[cfg(target_family = "wasm")]
unsafe extern "C" {
    /// The constructors of the module's statics, synthesized by the linker:
    /// tract registers its operators through `inventory`'s.
    fn __wasm_call_ctors();
}

/// Runs the constructors once, when the instance starts. Without an export
/// that calls them, the linker takes the module for a "command" and calls
/// them at the top of every export: every call from JavaScript, down to
/// each string's `__wbindgen_malloc`, ran all of tract's registrations
/// again (harmless, `inventory`'s are idempotent, but paid on every call;
/// `docs/speed.md`, "Seventeenth session").
#[wasm_bindgen(start)]
fn start() {
    // SAFETY: wasm-bindgen calls the start function once, right after
    // instantiation and before any other export; nothing has run that the
    // constructors could find half-built.
    #[cfg(target_family = "wasm")]
    unsafe {
        __wasm_call_ctors()
    };
}

/// Bytes of this instance's linear memory: the loaded model's weights and
/// buffers. It grows as needed and never shrinks, so it is also the peak.
#[wasm_bindgen(js_name = wasmMemoryBytes)]
pub fn wasm_memory_bytes() -> f64 {
    core::arch::wasm32::memory_size::<0>() as f64 * 65536.0
}

/// The JavaScript error for `error`: its message, and its code as `code`.
fn to_js_error(error: memtide::Error) -> JsValue {
    let thrown = js_sys::Error::new(&error.to_string());
    let _ = Reflect::set(
        &thrown,
        &JsValue::from_str("code"),
        &JsValue::from_str(error.code()),
    );
    thrown.into()
}

/// The ONNX file in the host's `Uint8Array` (public for the benchmark's
/// module, `bench/rust/bench_wasm.rs`, which loads the model as this one
/// does).
pub struct HostFile(pub Uint8Array);

impl OnnxFile for HostFile {
    fn len(&self) -> usize {
        self.0.length() as usize
    }

    fn read_at(&self, offset: usize, into: &mut [u8]) {
        let end = offset.saturating_add(into.len());
        if end <= self.len() {
            self.0.subarray(offset as u32, end as u32).copy_to(into);
        }
    }
}

/// One loaded model.
#[wasm_bindgen]
pub struct ModelCore(MiniLm);

#[wasm_bindgen]
impl ModelCore {
    /// Loads the model from the bytes of `model.onnx` and the text of
    /// `tokenizer.json` (`MiniLm::from_file`: `INVALID_INPUT` for a bad
    /// tokenizer, `MODEL` for a bad ONNX file). The file's bytes stay on the
    /// JavaScript side: they are read a window at a time, never copied into
    /// linear memory whole.
    pub fn load(onnx: Uint8Array, tokenizer: &str) -> Result<ModelCore, JsValue> {
        MiniLm::from_file(HostFile(onnx), tokenizer)
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
