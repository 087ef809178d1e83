//! The options and arguments every limit class reads the same way (`prefix`, `ephemeralCache`,
//! `timeout`, `failMode`, `dynamicLimits`; `limit(identifier, { rate })`), and its answer object.

use super::errors::type_error;
use super::options::{self, get, JsResult};
use super::shared_cache::shared_cache;
use super::sys;
use crate::ratelimit::{EphemeralCache, FailMode, Response, DEFAULT_CACHE_SIZE, DEFAULT_PREFIX};
use js_sys::Reflect;
use std::sync::Arc;
use std::time::Duration;
use wasm_bindgen::JsValue;

thread_local! {
    /// The key `rate`, a JavaScript string made once: `limit` reads it on every call.
    static RATE: JsValue = JsValue::from_str("rate");
}

/// The default timeout of a request to Redis, in milliseconds.
const DEFAULT_TIMEOUT_MS: u64 = 5_000;

/// The most `blockUntilReady` waits and `timeout` allows: `setTimeout`'s limit, 2^31 - 1 ms.
pub const MAX_TIMER_MS: f64 = i32::MAX as f64;

/// `prefix`: a string, the default prefix when undefined.
pub fn prefix(context: &str, config: &JsValue) -> JsResult<String> {
    let prefix = get(config, "prefix")?;
    if prefix.is_undefined() {
        return Ok(DEFAULT_PREFIX.to_owned());
    }
    options::string(context, "prefix", &prefix, true)
}

/// `ephemeralCache`: a `Map` (one cache shared by every limit given it), a boolean, or a maximum
/// number of entries; a cache of the default size when undefined.
pub fn ephemeral_cache(context: &str, config: &JsValue) -> JsResult<Option<Arc<EphemeralCache>>> {
    let cache = get(config, "ephemeralCache")?;
    let size = match cache.as_bool() {
        Some(on) => on.then_some(DEFAULT_CACHE_SIZE),
        None if cache.is_undefined() => Some(DEFAULT_CACHE_SIZE),
        None if cache.as_f64().is_some() => {
            // Up to 2^53 - 1, more than a 32-bit usize holds: saturate, never wrap to a tiny cache.
            let max = options::count(context, "ephemeralCache", &cache, false)?;
            Some(usize::try_from(max).unwrap_or(usize::MAX))
        }
        None if is_map_like(&cache)? => return Ok(Some(shared_cache(&cache))),
        None => {
            return Err(type_error(
                context,
                "ephemeralCache",
                "must be a Map, a boolean or a maximum number of entries",
                &cache,
            ))
        }
    };
    Ok(size.map(|max| Arc::new(EphemeralCache::new(max))))
}

/// `timeout`: whole milliseconds from 0 (none) to 2^31 - 1; the default when undefined.
pub fn timeout(context: &str, config: &JsValue) -> JsResult<Option<Duration>> {
    let timeout = get(config, "timeout")?;
    if timeout.is_undefined() {
        return Ok(Some(Duration::from_millis(DEFAULT_TIMEOUT_MS)));
    }
    let millis = options::milliseconds(
        context,
        "timeout",
        &timeout,
        |millis| millis.fract() == 0.0 && (0.0..=MAX_TIMER_MS).contains(&millis),
        "must be a whole number of milliseconds from 0 (none) to 2^31 - 1",
    )?;
    Ok((millis > 0.0).then(|| Duration::from_millis(millis as u64)))
}

/// `failMode`: `"open"` (the default) or `"closed"`.
pub fn fail_mode(context: &str, config: &JsValue) -> JsResult<FailMode> {
    let fail_mode = get(config, "failMode")?;
    options::one_of(
        context,
        "failMode",
        &fail_mode,
        FailMode::Open,
        &[("open", FailMode::Open), ("closed", FailMode::Closed)],
        "must be \"open\" or \"closed\"",
    )
}

/// `dynamicLimits`: a boolean, false when undefined.
pub fn dynamic_limits(context: &str, config: &JsValue) -> JsResult<bool> {
    let dynamic_limits = get(config, "dynamicLimits")?;
    if !(dynamic_limits.is_undefined() || dynamic_limits.as_bool().is_some()) {
        return Err(type_error(
            context,
            "dynamicLimits",
            "must be a boolean",
            &dynamic_limits,
        ));
    }
    Ok(dynamic_limits.as_bool() == Some(true))
}

/// The identifier argument: a non-empty string.
pub fn identifier(context: &str, identifier: &JsValue) -> JsResult<String> {
    options::string(context, "identifier", identifier, false)
}

/// The arguments of `limit(identifier, { rate }?)`: the identifier and the rate (1 when not given).
pub fn limit_arguments(
    context: &str,
    identifier_value: &JsValue,
    options: &JsValue,
) -> JsResult<(String, f64)> {
    let identifier = identifier(context, identifier_value)?;
    let rate = if options.is_undefined() {
        JsValue::UNDEFINED
    } else if options.is_object() {
        RATE.with(|rate| Reflect::get(options, rate))?
    } else {
        return Err(type_error(context, "options", "must be an object", options));
    };
    let rate = if rate.is_undefined() {
        1.0
    } else {
        options::number(context, "rate", "must be a number", &rate)?
    };
    Ok((identifier, rate))
}

/// `{ success, limit, remaining, reset, pending, reason? }`; `pending` undefined when nothing is left.
pub fn response_object(response: &Response, pending: &JsValue) -> JsValue {
    let reason = response
        .reason
        .map_or(JsValue::UNDEFINED, |reason| reason.as_str().into());
    sys::limit_response(
        response.success,
        response.limit as f64,
        response.remaining,
        response.reset as f64,
        pending,
        &reason,
    )
}

/// Whether `value` looks like a `Map` (duck-typed: a `Map` from another realm fails `instanceof`).
fn is_map_like(value: &JsValue) -> JsResult<bool> {
    Ok(value.is_object() && get(value, "get")?.is_function() && get(value, "set")?.is_function())
}
