//! The `{ onProgress, signal }` options of the long calls (`ingest`,
//! `import`, `setModel`, the model's backfill in `open`) as a
//! [`Progress`]: reports become `onProgress({done, total})` calls, and each
//! checkpoint yields a task of the event loop, so an `AbortSignal`'s abort
//! (a click, a worker's message) is delivered, then stops the call with
//! `ABORTED` if the signal fired.

use js_sys::{Function, Object, Promise, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use memtide::progress::Progress;
use memtide::Error;

use crate::adapter::thrown_message;
use crate::{field, BindingError};

/// The progress options of one call.
pub struct JsProgress {
    on_progress: Option<Function>,
    signal: Option<JsValue>,
    /// For `open`'s `onProgress`, whose events carry a `stage`.
    stage: Option<&'static str>,
}

impl JsProgress {
    /// Reads `{onProgress?, signal?}`; `None` when `options` is absent.
    pub fn from_options(options: &JsValue) -> Result<Option<JsProgress>, BindingError> {
        if options.is_undefined() || options.is_null() {
            return Ok(None);
        }
        if !options.is_object() {
            return Err(BindingError::Value("options must be an object".into()));
        }
        Self::with_stage(options, None).map(Some)
    }

    /// The progress of `open`'s model backfill: events `{stage, done, total}`.
    pub fn for_open(options: &JsValue, stage: &'static str) -> Result<JsProgress, BindingError> {
        Self::with_stage(options, Some(stage))
    }

    fn with_stage(
        options: &JsValue,
        stage: Option<&'static str>,
    ) -> Result<JsProgress, BindingError> {
        let on_progress = match field(options, "onProgress") {
            f if f.is_undefined() => None,
            f => Some(
                f.dyn_into::<Function>()
                    .map_err(|_| BindingError::Value("onProgress must be a function".into()))?,
            ),
        };
        let signal = match field(options, "signal") {
            s if s.is_undefined() => None,
            s if field(&s, "aborted").as_bool().is_some() => Some(s),
            _ => return Err(BindingError::Value("signal must be an AbortSignal".into())),
        };
        Ok(JsProgress {
            on_progress,
            signal,
            stage,
        })
    }

    /// An `ABORTED` error if the signal has fired.
    fn check(&self) -> Result<(), Error> {
        let Some(signal) = &self.signal else {
            return Ok(());
        };
        if field(signal, "aborted").as_bool() != Some(true) {
            return Ok(());
        }
        let reason = field(signal, "reason");
        let why = if reason.is_undefined() {
            String::new()
        } else {
            format!(" ({})", thrown_message(&reason))
        };
        Err(Error::Aborted(format!("the call was aborted{why}")))
    }
}

/// A promise resolved by the next task of the event loop (`setTimeout`),
/// after the tasks already queued (messages, clicks, an abort).
async fn next_task() {
    let set_timeout = field(&js_sys::global(), "setTimeout");
    let Ok(set_timeout) = set_timeout.dyn_into::<Function>() else {
        return;
    };
    let promise = Promise::new(&mut |resolve, _| {
        let _ = set_timeout.call2(&JsValue::UNDEFINED, &resolve, &JsValue::from(0));
    });
    let _ = JsFuture::from(promise).await;
}

impl Progress for JsProgress {
    fn report(&mut self, done: usize, total: usize) {
        let Some(callback) = &self.on_progress else {
            return;
        };
        let event = Object::new();
        if let Some(stage) = self.stage {
            let _ = Reflect::set(&event, &"stage".into(), &stage.into());
        }
        let _ = Reflect::set(&event, &"done".into(), &(done as f64).into());
        let _ = Reflect::set(&event, &"total".into(), &(total as f64).into());
        // A throwing callback must not fail the call: progress is advice.
        let _ = callback.call1(&JsValue::UNDEFINED, &event);
    }

    async fn checkpoint(&mut self) -> Result<(), Error> {
        self.check()?;
        next_task().await;
        self.check()
    }
}
