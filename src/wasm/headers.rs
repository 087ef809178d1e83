//! `rateLimitHeaders(response, { now?, style?, window?, dryRun? })`: the RateLimit header fields of one
//! answer of `limit()` (edgelimit's or `@upstash/ratelimit`'s: the same shape), as a plain object; an
//! answer of several limits (its `limits`) writes each as a policy.

use super::errors::{range_error, type_error};
use super::options::{self, get, JsResult};
use crate::clock::{Clock, SystemClock};
use crate::ratelimit::{
    rate_limit_headers, DryRunHeaders, HeaderOptions, HeaderStyle, LimitResponse, Live, Response,
};
use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

const CONTEXT: &str = "rateLimitHeaders";

/// `{ "RateLimit-Limit": "10", ..., "Retry-After"?: "5" }` for `response` at `now` (default
/// `Date.now()`), in the `style` asked for (`"separate"`, `"draft-07"` or `"draft-11"`); `window` (a
/// duration, or one per limit for an answer of several) completes `RateLimit-Policy`; `dryRun`
/// (`"omit"`, the default, or `"emit"`) says whether limits that run dry are told. Bad input throws a
/// `TypeError` or `RangeError` naming the field.
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
    let limits = limits_of(&get(&response, "limits")?)?;
    let live = get(&response, "live")?;

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
    let (window, windows) = match window.dyn_ref::<Array>() {
        None if window.is_undefined() => (None, Vec::new()),
        None if limits.is_empty() => (
            Some(options::duration(CONTEXT, "window", &window)?),
            Vec::new(),
        ),
        Some(windows) if windows.length() as usize == limits.len() => {
            let windows = (windows.iter().enumerate())
                .map(|(index, window)| {
                    let field = format!("window[{index}]");
                    let known = !window.is_undefined() && !window.is_null();
                    known
                        .then(|| options::duration(CONTEXT, &field, &window))
                        .transpose()
                })
                .collect::<JsResult<_>>()?;
            (None, windows)
        }
        _ => {
            let text = if limits.is_empty() {
                "must be a duration for an answer of one limit"
            } else {
                "must be an array of a duration (or null) per limit of the answer's `limits`"
            };
            return Err(type_error(CONTEXT, "window", text, &window));
        }
    };
    let dry_run = options::field(CONTEXT, "options", &options, true, "dryRun")?;
    let dry_run = options::one_of(
        CONTEXT,
        "dryRun",
        &dry_run,
        DryRunHeaders::Omit,
        &[("omit", DryRunHeaders::Omit), ("emit", DryRunHeaders::Emit)],
        "must be \"omit\" or \"emit\"",
    )?;

    let answer = Response {
        success,
        limit,
        remaining,
        reset,
        // Not in a JavaScript answer: `reset` stands for it.
        retry_after: None,
        reason: None,
        limits,
        // Only whether there is one is read: a dry run's answer.
        live: (!live.is_undefined()).then_some(Live {
            success,
            limit,
            remaining,
            reset,
            reason: None,
        }),
    };
    let options = HeaderOptions {
        style,
        window,
        windows,
        dry_run,
    };
    let headers = Object::new();
    for (name, value) in rate_limit_headers(&answer, now, &options) {
        let _ = Reflect::set(&headers, &name.into(), &value.into());
    }
    Ok(headers.into())
}

/// The answer's `limits`, each `{ success, limit, remaining, reset, dryRun }`: none when undefined.
fn limits_of(limits: &JsValue) -> JsResult<Vec<LimitResponse>> {
    if limits.is_undefined() {
        return Ok(Vec::new());
    }
    let Some(limits) = limits.dyn_ref::<Array>() else {
        return Err(type_error(CONTEXT, "limits", "must be an array", limits));
    };
    (limits.iter().enumerate())
        .map(|(index, limit)| {
            let field = |name: &str| format!("limits[{index}].{name}");
            if !limit.is_object() {
                return Err(type_error(
                    CONTEXT,
                    &format!("limits[{index}]"),
                    "must be an object",
                    &limit,
                ));
            }
            let flag = |name: &str| {
                let value = get(&limit, name)?;
                value
                    .as_bool()
                    .ok_or_else(|| type_error(CONTEXT, &field(name), "must be a boolean", &value))
            };
            let remaining = get(&limit, "remaining")?;
            let remaining =
                options::number(CONTEXT, &field("remaining"), "must be a number", &remaining)
                    .and_then(|left| {
                        if left.is_finite() && left >= 0.0 {
                            Ok(left)
                        } else {
                            Err(range_error(
                                CONTEXT,
                                &field("remaining"),
                                "must be a finite number from 0",
                                &remaining,
                            ))
                        }
                    })?;
            Ok(LimitResponse {
                success: flag("success")?,
                limit: options::count(CONTEXT, &field("limit"), &get(&limit, "limit")?, true)?,
                remaining,
                reset: epoch_millis(&field("reset"), &get(&limit, "reset")?)?,
                dry_run: flag("dryRun")?,
            })
        })
        .collect()
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
