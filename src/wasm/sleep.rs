//! Waiting in JavaScript: a `setTimeout` wrapped in a Promise, for `blockUntilReady`.

use js_sys::{Function, Promise, Reflect};
use std::time::Duration;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

/// Resolves after `wait` (rounded up to whole milliseconds), through the global `setTimeout`.
/// Without one (never seen in a supported runtime) it resolves at once.
pub async fn sleep(wait: Duration) {
    let millis = (wait.as_micros() as u64).div_ceil(1_000) as f64;
    let promise = Promise::new(&mut |resolve, _reject| {
        let set_timeout = Reflect::get(&js_sys::global(), &"setTimeout".into())
            .ok()
            .and_then(|value| value.dyn_into::<Function>().ok());
        let started = set_timeout
            .map(|set_timeout| set_timeout.call2(&JsValue::UNDEFINED, &resolve, &millis.into()));
        if !matches!(started, Some(Ok(_))) {
            let _ = resolve.call0(&JsValue::UNDEFINED);
        }
    });
    let _ = JsFuture::from(promise).await;
}
