//! The arguments of the limit classes' methods (`limit`, `blockUntilReady`, `getRemaining`,
//! `resetUsedTokens`, `setDynamicLimit`), read and checked, and the error `limit` rejects with.

use super::errors::{range_error, to_js_error, type_error};
use super::options::{self, JsResult};
use crate::js::{boundary, globals};
use std::time::Duration;
use wasm_bindgen::{JsCast, JsValue};

/// The identifier argument: a string (empty too, as the peer takes it), or a number or bigint as
/// JavaScript writes it (`String(identifier)`, as the peer's key is made).
/// A string with a lone surrogate is refused: its UTF-8 (U+FFFD in its place) would be another
/// identifier's.
pub fn identifier(context: &str, identifier: &JsValue) -> JsResult<String> {
    if let Some(text) = identifier.as_string() {
        // U+FFFD is where a lone surrogate would be: only then is JavaScript asked.
        if !as_written(&text) && !boundary::is_well_formed(identifier) {
            return Err(type_error(
                context,
                "identifier",
                "must be well-formed Unicode (a lone surrogate would share the counter of U+FFFD)",
                identifier,
            ));
        }
        return Ok(text);
    }
    if identifier.as_f64().is_some() || identifier.is_bigint() {
        return Ok(globals::string(identifier));
    }
    Err(type_error(
        context,
        "identifier",
        "must be a string or a number",
        identifier,
    ))
}

/// The arguments of `limit(identifier, options?)`: the identifier, and the rate of `options` (1 if
/// there are none, or if its `rate` is undefined or null, as the peer's `rate ?? 1`).
pub fn limit_arguments(
    context: &str,
    identifier_value: &JsValue,
    options: Option<&JsValue>,
) -> JsResult<(String, f64)> {
    let identifier = identifier(context, identifier_value)?;
    // Undefined and null arrive as `None` from the glue, without a crossing.
    let Some(options) = options else {
        return Ok((identifier, 1.0));
    };
    let rate = if options.is_object() {
        // The keys are checked in the same crossing that reads the rate (`limitRate`).
        boundary::limit_rate(options)?
    } else {
        return Err(type_error(context, "options", "must be an object", options));
    };
    // In the order of the most frequent cases.
    let rate = if rate.is_undefined() {
        1.0
    } else if let Some(rate) = rate.as_f64() {
        rate
    } else if rate.is_null() {
        1.0
    } else if let Some(unknown) = rate.dyn_ref::<boundary::UnknownOption>() {
        // The options `limit()` knows are listed once, in `boundary.js`, which checks them.
        let known: Vec<String> = unknown
            .known()
            .iter()
            .filter_map(|name| name.as_string())
            .collect();
        let known: Vec<&str> = known.iter().map(String::as_str).collect();
        return Err(options::unknown_option(context, &unknown.key(), &known));
    } else {
        options::number(context, "rate", "must be a number", &rate)?
    };
    Ok((identifier, rate))
}

/// The error `limit` rejects with for `error`, from a request of `rate`.
pub fn limit_error(context: &str, error: crate::Error, rate: f64) -> JsValue {
    match error {
        crate::Error::InvalidCost { reason, .. } => {
            range_error(context, "rate", reason, &rate.into())
        }
        other => to_js_error(context, &other),
    }
}

/// The arguments of `blockUntilReady(identifier, timeout)`. The timeout is any positive number of
/// milliseconds, as the peer takes it: each wait is as long as the limit says, so a long deadline (even
/// `Infinity`, which waits for ever) needs no long timer.
pub fn block_arguments(
    context: &str,
    identifier_value: &JsValue,
    timeout: &JsValue,
) -> JsResult<(String, Duration)> {
    let identifier = identifier(context, identifier_value)?;
    let millis = options::milliseconds(
        context,
        "timeout",
        timeout,
        |millis| millis > 0.0,
        "must be a positive number of milliseconds",
    )?;
    // `as` saturates: `Infinity` is 2^64 µs.
    Ok((identifier, Duration::from_micros((millis * 1_000.0) as u64)))
}

/// The argument of `setDynamicLimit({ limit })`: a whole number from 0, or `false` (none).
pub fn dynamic_limit_argument(context: &str, options: &JsValue) -> JsResult<Option<u64>> {
    let limit = options::field(context, "options", options, false, "limit")?;
    if limit.as_bool() == Some(false) {
        Ok(None)
    } else if limit.as_f64().is_some() {
        options::count(context, "limit", &limit, true).map(Some)
    } else {
        Err(type_error(
            context,
            "limit",
            "must be a number or false",
            &limit,
        ))
    }
}

/// Whether `identifier`, read as UTF-8, is the string JavaScript wrote: no U+FFFD, which may stand for
/// a lone surrogate. Its chars are scanned: `contains` of a non-ASCII char runs the substring searcher,
/// whose panic message brings core's Unicode tables into the package (9 KB).
#[inline]
pub(super) fn as_written(identifier: &str) -> bool {
    identifier.is_ascii() || !identifier.chars().any(|c| c == char::REPLACEMENT_CHARACTER)
}
