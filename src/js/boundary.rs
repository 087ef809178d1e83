//! The helpers of `boundary.js`, the JavaScript half of the boundary: answer objects built in one call,
//! the options `limit()` knows, and `post` (with `get` beside it), which every HTTP request of the
//! crate goes through.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(module = "/src/js/boundary.js")]
extern "C" {
    /// `{ success, limit, remaining, reset, pending, reason? }`; `pending` undefined for none left.
    #[wasm_bindgen(js_name = limitResponse)]
    pub fn limit_response(
        success: bool,
        limit: f64,
        remaining: f64,
        reset: f64,
        pending: &JsValue,
        reason: &JsValue,
    ) -> JsValue;

    /// `{ remaining, reset, limit }`.
    #[wasm_bindgen(js_name = remainingResponse)]
    pub fn remaining_response(remaining: f64, reset: f64, limit: f64) -> JsValue;

    /// Sets `answer.limits` from 5 numbers per limit: success, limit, remaining, reset, dry run (the
    /// booleans as 1 or 0).
    #[wasm_bindgen(js_name = setLimits)]
    pub fn set_limits(answer: &JsValue, numbers: &[f64]);

    /// Sets `answer.live`: `{ success, limit, remaining, reset, reason? }`.
    #[wasm_bindgen(js_name = setLive)]
    pub fn set_live(
        answer: &JsValue,
        success: bool,
        limit: f64,
        remaining: f64,
        reset: f64,
        reason: &JsValue,
    );

    /// Sets `answer.limits` of `getRemaining()` from 3 numbers per limit: remaining, reset, limit.
    #[wasm_bindgen(js_name = setRemainingLimits)]
    pub fn set_remaining_limits(answer: &JsValue, numbers: &[f64]);

    /// A limit option `limit()` does not know, as `limitRate` reports it.
    pub type UnknownOption;

    /// The unknown key.
    #[wasm_bindgen(method, getter)]
    pub fn key(this: &UnknownOption) -> String;

    /// Every option `limit()` knows.
    #[wasm_bindgen(method, getter)]
    pub fn known(this: &UnknownOption) -> js_sys::Array;

    /// `options.rate`, or an [`UnknownOption`] naming a key of `options` that `limit()` does not know;
    /// throws what a getter of `options` throws.
    #[wasm_bindgen(catch, js_name = limitRate)]
    pub fn limit_rate(options: &JsValue) -> Result<JsValue, JsValue>;

    /// Whether the string `text` is well-formed Unicode (no lone surrogate).
    #[wasm_bindgen(js_name = isWellFormed)]
    pub fn is_well_formed(text: &JsValue) -> bool;

    /// The limiter object of a factory: `{ algorithm, params }`, frozen, tagged with `place`, the
    /// algorithm's place among the factories (see `src/wasm/algorithms.rs`).
    #[wasm_bindgen(js_name = limiterObject)]
    pub fn limiter_object(place: u32, algorithm: &str, params: &[f64]) -> JsValue;

    /// The tag of `value` if it is an object (a number for a limiter object), else undefined; what
    /// its getter throws, if it throws.
    #[wasm_bindgen(catch, js_name = limiterPlace)]
    pub fn limiter_place(value: &JsValue) -> Result<JsValue, JsValue>;

    /// The headers object every request of one server shares.
    #[wasm_bindgen(js_name = requestHeaders)]
    pub fn request_headers(authorization: &str) -> JsValue;

    /// POSTs `body` to `url` (with `fetch`, or the global one when undefined), then calls
    /// `deliver(id, true, [status, Uint8Array])`, or `deliver(id, false, [stage, error])` on failure
    /// (`["timeout"]` after `timeout` ms > 0; the request is aborted after `abort` ms > 0, at least
    /// `timeout`). Never throws: what would is delivered as a failure.
    pub fn post(
        fetch: &JsValue,
        url: &JsValue,
        headers: &JsValue,
        body: &str,
        abort: f64,
        timeout: f64,
        id: u32,
        deliver: &JsValue,
    );

    /// GETs `url` as [`post`] POSTs (`abort` and `deliver` alike, no early `timeout`). Never throws.
    pub fn get(fetch: &JsValue, url: &JsValue, abort: f64, id: u32, deliver: &JsValue);
}
