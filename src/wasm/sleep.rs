//! Waiting in JavaScript: a `setTimeout` wrapped in a Promise, for `blockUntilReady`.

use crate::js::globals::set_timeout;
use js_sys::Promise;
use std::time::Duration;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;

/// Resolves after `wait` (rounded up to whole milliseconds; at most 2^31 - 1 ms, `setTimeout`'s
/// limit, beyond which it would fire at once), through the global `setTimeout`. Without one (never
/// seen in a supported runtime) it resolves at once.
pub async fn sleep(wait: Duration) {
    let millis = wait.as_micros().div_ceil(1_000).min(i32::MAX as u128) as f64;
    let promise = Promise::new_typed::<JsValue>(&mut |resolve, _reject| {
        if set_timeout(&resolve, millis).is_err() {
            let _ = resolve.call1(&JsValue::UNDEFINED, &JsValue::UNDEFINED);
        }
    });
    let _ = JsFuture::from(promise).await;
}
