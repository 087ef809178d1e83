//! `rateLimitHeaders(response, { now?, style?, window? })`: the RateLimit header fields of one answer
//! of `limit()` (edgelimit's or `@upstash/ratelimit`'s: the same shape), as a plain object.

use super::errors::{range_error, type_error};
use super::options::{self, get, JsResult};
use crate::clock::{Clock, SystemClock};
use crate::ratelimit::{rate_limit_headers, HeaderOptions, HeaderStyle, Response};
use js_sys::{Object, Reflect};
use wasm_bindgen::prelude::*;

const CONTEXT: &str = "rateLimitHeaders";

/// `{ "RateLimit-Limit": "10", ..., "Retry-After"?: "5" }` for `response` at `now` (default
/// `Date.now()`), in the `style` asked for (`"separate"`, `"draft-07"` or `"draft-11"`); `window` (a
/// duration) completes `RateLimit-Policy`. Bad input throws a `TypeError` or `RangeError` naming the
/// field.
#[wasm_bindgen(js_name = rateLimitHeaders)]
pub fn js_rate_limit_headers(response: JsValue, options: JsValue) -> JsResult<JsValue> {
    if !response.is_object() {
        return Err(type_error(
            CONTEXT,
            "response",
            "must be an answer of limit(), { success, limit, remaining, reset }",
            &response,
        ));
    }
    let success = get(&response, "success")?;
    let Some(success) = success.as_bool() else {
        return Err(type_error(
            CONTEXT,
            "success",
            "must be a boolean",
            &success,
        ));
    };
    let limit = options::count(CONTEXT, "limit", &get(&response, "limit")?, true)?;
    let remaining = get(&response, "remaining")?;
    let remaining = options::number(CONTEXT, "remaining", "must be a number", &remaining)
        .and_then(|left| {
            if left.is_finite() && left >= 0.0 {
                Ok(left)
            } else {
                Err(range_error(
                    CONTEXT,
                    "remaining",
                    "must be a finite number from 0",
                    &remaining,
                ))
            }
        })?;
    let reset = epoch_millis("reset", &get(&response, "reset")?)?;

    let now = options::field(CONTEXT, "options", &options, true, "now")?;
    let now = if now.is_undefined() {
        SystemClock.now_micros() / 1_000
    } else {
        epoch_millis("now", &now)?
    };
    let style = options::field(CONTEXT, "options", &options, true, "style")?;
    let style = options::one_of(
        CONTEXT,
        "style",
        &style,
        HeaderStyle::Separate,
        &[
            ("separate", HeaderStyle::Separate),
            ("draft-07", HeaderStyle::Draft07),
            ("draft-11", HeaderStyle::Draft11),
        ],
        "must be \"separate\", \"draft-07\" or \"draft-11\"",
    )?;
    let window = options::field(CONTEXT, "options", &options, true, "window")?;
    let window = if window.is_undefined() {
        None
    } else {
        Some(options::duration(CONTEXT, "window", &window)?)
    };

    let answer = Response {
        success,
        limit,
        remaining,
        reset,
        // Not in a JavaScript answer: `reset` stands for it.
        retry_after: None,
        reason: None,
    };
    let headers = Object::new();
    for (name, value) in rate_limit_headers(&answer, now, HeaderOptions { style, window }) {
        let _ = Reflect::set(&headers, &name.into(), &value.into());
    }
    Ok(headers.into())
}

/// A time in milliseconds since the Unix epoch: a finite number from 0, rounded up to a whole one.
fn epoch_millis(field: &str, value: &JsValue) -> JsResult<u64> {
    let millis = options::milliseconds(
        CONTEXT,
        field,
        value,
        |millis| millis.is_finite() && millis >= 0.0,
        "must be a time in milliseconds since the Unix epoch (a finite number from 0)",
    )?;
    Ok(millis.ceil() as u64)
}
