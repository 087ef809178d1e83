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
    let LimitResponse {
        success,
        limit,
        remaining,
        reset,
        ..
    } = numbers(&response, "")?;
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
            let mut each = Vec::with_capacity(limits.len());
            for (index, window) in windows.iter().enumerate() {
                each.push(if window.is_undefined() || window.is_null() {
                    None
                } else {
                    Some(options::duration(
                        CONTEXT,
                        &format!("window[{index}]"),
                        &window,
                    )?)
                });
            }
            (None, each)
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

/// `{ success, limit, remaining, reset }` of `answer`, each field named after `path` in errors.
fn numbers(answer: &JsValue, path: &str) -> JsResult<LimitResponse> {
    let field = |name: &str| [path, name].concat();
    let success = get(answer, "success")?;
    let Some(success) = success.as_bool() else {
        return Err(type_error(
            CONTEXT,
            &field("success"),
            "must be a boolean",
            &success,
        ));
    };
    let limit = options::count(CONTEXT, &field("limit"), &get(answer, "limit")?, true)?;
    let remaining = get(answer, "remaining")?;
    let left = options::number(CONTEXT, &field("remaining"), "must be a number", &remaining)?;
    if !(left.is_finite() && left >= 0.0) {
        let rule = "must be a finite number from 0";
        return Err(range_error(CONTEXT, &field("remaining"), rule, &remaining));
    }
    Ok(LimitResponse {
        success,
        limit,
        remaining: left,
        reset: epoch_millis(&field("reset"), &get(answer, "reset")?)?,
        dry_run: false,
    })
}

/// The answer's `limits`, each `{ success, limit, remaining, reset, dryRun }`: none when undefined.
fn limits_of(limits: &JsValue) -> JsResult<Vec<LimitResponse>> {
    if limits.is_undefined() {
        return Ok(Vec::new());
    }
    let Some(limits) = limits.dyn_ref::<Array>() else {
        return Err(type_error(CONTEXT, "limits", "must be an array", limits));
    };
    let mut read = Vec::with_capacity(limits.length() as usize);
    for (index, limit) in limits.iter().enumerate() {
        let path = format!("limits[{index}].");
        if !limit.is_object() {
            let name = path.strip_suffix('.').unwrap_or(&path);
            return Err(type_error(CONTEXT, name, "must be an object", &limit));
        }
        let dry_run = get(&limit, "dryRun")?;
        let Some(dry_run) = dry_run.as_bool() else {
            return Err(type_error(
                CONTEXT,
                &(path + "dryRun"),
                "must be a boolean",
                &dry_run,
            ));
        };
        read.push(LimitResponse {
            dry_run,
            ..numbers(&limit, &path)?
        });
    }
    Ok(read)
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
