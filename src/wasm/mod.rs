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
pub(crate) mod sys;

/// Reports Rust panics on `console.error` instead of as an opaque `unreachable` trap; runs when the
/// module is instantiated, before any method.
#[wasm_bindgen::prelude::wasm_bindgen(start)]
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| report_panic(info)));
}

/// Writes a panic's text to `console.error`, saying it is a bug of edgelimit's.
fn report_panic(panic: &dyn std::fmt::Display) {
    let _ = sys::console_error(&format!("edgelimit panicked (please report this): {panic}"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use js_sys::{Array, Function, Reflect};
    use wasm_bindgen::JsValue;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn a_panic_is_reported_on_console_error() {
        let console = Reflect::get(&js_sys::global(), &"console".into()).unwrap();
        let original = Reflect::get(&console, &"error".into()).unwrap();
        let recorded = Array::new();
        let record = Function::new_with_args("message", "this.push(message)").bind0(&recorded);
        Reflect::set(&console, &"error".into(), &record).unwrap();
        report_panic(&"panicked at src/x.rs:1:1:\nboom");
        Reflect::set(&console, &"error".into(), &original).unwrap();
        assert_eq!(
            recorded.to_vec(),
            [JsValue::from_str(
                "edgelimit panicked (please report this): panicked at src/x.rs:1:1:\nboom"
            )]
        );
    }
}
