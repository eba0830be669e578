//! The JavaScript host's time and identity for the engine's
//! [`Environment`].

use memtide::env::{Environment, RandomPool, UlidGenerator};
use memtide::Timestamp;

/// The JavaScript host's clock (`Date.now()`, or a function the host
/// injects) and ULIDs from `crypto.getRandomValues` (`wasm32-unknown-unknown`),
/// drawn a pool at a time.
#[derive(Debug, Clone, Default)]
pub struct JsEnvironment {
    clock: Option<js_sys::Function>,
    ids: UlidGenerator,
    random: RandomPool,
}

impl JsEnvironment {
    /// Reads time from `clock()` (milliseconds since the Unix epoch) when
    /// given, else from `Date.now()`.
    pub fn new(clock: Option<js_sys::Function>) -> Self {
        JsEnvironment {
            clock,
            ids: UlidGenerator::default(),
            random: RandomPool::default(),
        }
    }
}

impl Environment for JsEnvironment {
    /// A clock that throws or answers something other than a finite number
    /// falls back to `Date.now()`.
    fn now(&self) -> Timestamp {
        let injected = self
            .clock
            .as_ref()
            .and_then(|clock| clock.call0(&wasm_bindgen::JsValue::UNDEFINED).ok())
            .and_then(|value| value.as_f64())
            .filter(|ms| ms.is_finite());
        Timestamp(injected.unwrap_or_else(js_sys::Date::now) as i64)
    }

    fn new_id(&mut self, newest: Option<&str>) -> String {
        let mut random = [0u8; 10];
        self.random.take(&mut random, |pool| {
            if getrandom_02::getrandom(pool).is_err() {
                // No crypto API: Math.random is weaker but still unique
                // enough together with the millisecond prefix.
                for byte in pool {
                    *byte = (js_sys::Math::random() * 256.0) as u8;
                }
            }
        });
        let now = self.now().0;
        self.ids.next(now, random, newest)
    }
}
