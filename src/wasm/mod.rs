//! The JavaScript bindings: the only module that knows JavaScript.
//!
//! The classes ([`Redis`](redis::JsRedis), [`Ratelimit`](ratelimit::JsRatelimit)) are thin wrappers:
//! they check every option (a bad one is a thrown `TypeError` or `RangeError` that names the field and
//! quotes the value), build the crate's own types, and turn answers into plain JavaScript objects.

mod options;
mod ratelimit;
mod redis;
mod shared_cache;
mod sleep;

use js_sys::{Function, Reflect};
use std::sync::Once;
use wasm_bindgen::{JsCast, JsValue};

/// Reports a Rust panic on `console.error` once per panic, instead of an opaque `unreachable` trap.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            console_error(&format!("edgelimit panicked (please report this): {info}"));
        }));
    });
}

/// `console.error(message)`, if the runtime has one.
fn console_error(message: &str) {
    let console = Reflect::get(&js_sys::global(), &"console".into()).unwrap_or(JsValue::UNDEFINED);
    if !console.is_object() {
        return;
    }
    if let Ok(error) = Reflect::get(&console, &"error".into()) {
        if let Some(error) = error.dyn_ref::<Function>() {
            let _ = error.call1(&console, &message.into());
        }
    }
}
