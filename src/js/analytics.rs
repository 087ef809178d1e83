//! The helpers of `analytics.js`: a decision's analytics events, the bytes `@upstash/ratelimit` writes.

use js_sys::Array;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(module = "/src/js/analytics.js")]
extern "C" {
    /// The analytics events of a decision: admitted and rate limited. Throws what `JSON.stringify`
    /// throws (a BigInt, a cycle).
    #[wasm_bindgen(catch, js_name = analyticsEvents)]
    pub fn analytics_events(identifier: &str, options: &JsValue) -> Result<Array, JsValue>;

    /// The analytics event of `value` found in the deny list.
    #[wasm_bindgen(catch, js_name = deniedEvent)]
    pub fn denied_event(value: &str, options: &JsValue) -> Result<String, JsValue>;
}
