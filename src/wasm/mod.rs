//! The JavaScript bindings: the only module that knows JavaScript.
//!
//! The classes ([`Redis`](redis::JsRedis), [`Ratelimit`](ratelimit::JsRatelimit)) are thin wrappers:
//! they check every option (a bad one is a thrown `TypeError` or `RangeError` that names the field and
//! quotes the value), build the crate's own types, and turn answers into plain JavaScript objects.

mod errors;
mod limiter;
mod options;
mod promise;
mod ratelimit;
mod redis;
mod shared_cache;
mod sleep;

use std::sync::atomic::{AtomicBool, Ordering};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    /// `console.error(message)`; throws where there is no console.
    #[wasm_bindgen(catch, js_namespace = console, js_name = error)]
    fn console_error(message: &str) -> Result<(), JsValue>;
}

/// Reports Rust panics on `console.error` instead of as an opaque `unreachable` trap. Every constructor
/// and factory calls it, so it is in place before any method runs. (Not `#[wasm_bindgen(start)]`, which
/// would add an export to the glue.)
fn install_panic_hook() {
    static INSTALLED: AtomicBool = AtomicBool::new(false);
    if !INSTALLED.swap(true, Ordering::Relaxed) {
        std::panic::set_hook(Box::new(|info| {
            let _ = console_error(&format!("edgelimit panicked (please report this): {info}"));
        }));
    }
}
