//! The runtime's globals the crate calls: `console`, `setTimeout`, `String`, `Date.now`.

use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    /// `console.error(message)`; throws where there is no console.
    #[wasm_bindgen(catch, js_namespace = console, js_name = error)]
    pub fn console_error(message: &str) -> Result<(), JsValue>;

    /// `console.warn(message)`; throws where there is no console.
    #[wasm_bindgen(catch, js_namespace = console, js_name = warn)]
    pub fn console_warn(message: &str) -> Result<(), JsValue>;

    /// The global `setTimeout(handler, ms)`; throws where there is none.
    #[wasm_bindgen(catch, js_name = setTimeout)]
    pub fn set_timeout(handler: &JsValue, ms: f64) -> Result<JsValue, JsValue>;

    /// `String(value)`: any value as JavaScript writes it.
    #[wasm_bindgen(js_name = String)]
    pub fn string(value: &JsValue) -> String;

    /// `Date.now()`: milliseconds since the Unix epoch.
    #[wasm_bindgen(js_namespace = Date, js_name = now)]
    pub fn date_now() -> f64;
}
