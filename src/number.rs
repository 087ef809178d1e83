//! JavaScript's `String(value)`, which the bindings use to show a value as JavaScript would.

use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsValue;

#[wasm_bindgen]
extern "C" {
    /// `String(value)`; for a number, ECMAScript's `Number::toString`: the shortest decimal that
    /// reads back as the same number.
    #[wasm_bindgen(js_name = String)]
    pub(crate) fn js_string(value: &JsValue) -> String;
}
