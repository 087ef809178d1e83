//! What every limit class (`Ratelimit`, `MultiRegionRatelimit`) reads the same way: the options they
//! share (`prefix`, `keys`, `ephemeralCache`, `timeout`, `failMode`, `dynamicLimits`), the arguments of their
//! methods, and their answer objects.

use super::errors::{range_error, to_js_error, type_error};
use super::options::{self, get, JsResult};
use super::promise::promise;
use super::shared_cache::shared_cache;
use super::sys;
use crate::key_layout::KeyLayout;
use crate::ratelimit::{
    EphemeralCache, FailMode, Pending, Response, DEFAULT_CACHE_SIZE, DEFAULT_PREFIX,
};
use js_sys::{Object, Reflect};
use std::sync::Arc;
use std::time::Duration;
use wasm_bindgen::{JsCast, JsValue};

/// The default timeout of a request to Redis, in milliseconds.
const DEFAULT_TIMEOUT_MS: u64 = 5_000;

/// The longest `timeout` armed: `setTimeout`'s limit, 2^31 - 1 ms (about 24.8 days). A longer one is
/// taken as that (the peer's `setTimeout` overflows instead, and times out after 1 ms).
const MAX_TIMER_MS: f64 = i32::MAX as f64;

/// `prefix`: a string, the default prefix when undefined.
pub fn prefix(context: &str, config: &JsValue) -> JsResult<String> {
    let prefix = get(config, "prefix")?;
    if prefix.is_undefined() {
        return Ok(DEFAULT_PREFIX.to_owned());
    }
    options::string(context, "prefix", &prefix, true)
}

/// `keys`: `"upstash"` (the default, the keys of `@upstash/ratelimit`) or `"cluster"`.
pub fn key_layout(context: &str, config: &JsValue) -> JsResult<KeyLayout> {
    options::one_of(
        context,
        "keys",
        &get(config, "keys")?,
        KeyLayout::Upstash,
        &[
            ("upstash", KeyLayout::Upstash),
            ("cluster", KeyLayout::Cluster),
        ],
        "must be \"upstash\" or \"cluster\"",
    )
}

/// What `ephemeralCache` asks for.
pub enum CacheOption {
    /// `false`: no cache.
    Off,
    /// `true` or undefined (the default size), or a maximum number of entries.
    Size(usize),
    /// A `Map`, as the peer takes it: one cache shared by every limit given that `Map`. Its entries
    /// stay in Rust, bounded; the `Map` stays empty.
    Shared(JsValue),
}

impl CacheOption {
    /// The cache asked for, if any.
    pub fn build(self) -> Option<Arc<EphemeralCache>> {
        match self {
            CacheOption::Off => None,
            CacheOption::Size(max) => Some(Arc::new(EphemeralCache::new(max))),
            CacheOption::Shared(map) => Some(shared_cache(&map)),
        }
    }
}

/// `ephemeralCache`: a `Map`, a boolean, or a maximum number of entries.
pub fn ephemeral_cache(context: &str, config: &JsValue) -> JsResult<CacheOption> {
    let cache = get(config, "ephemeralCache")?;
    Ok(match cache.as_bool() {
        Some(true) => CacheOption::Size(DEFAULT_CACHE_SIZE),
        Some(false) => CacheOption::Off,
        None if cache.is_undefined() => CacheOption::Size(DEFAULT_CACHE_SIZE),
        None if cache.as_f64().is_some() => {
            // Up to 2^53 - 1, more than a 32-bit usize holds: saturate, never wrap to a tiny cache.
            let max = options::count(context, "ephemeralCache", &cache, false)?;
            CacheOption::Size(usize::try_from(max).unwrap_or(usize::MAX))
        }
        None if is_map_like(&cache)? => CacheOption::Shared(cache),
        None => {
            return Err(type_error(
                context,
                "ephemeralCache",
                "must be a Map, a boolean or a maximum number of entries",
                &cache,
            ))
        }
    })
}

/// `timeout`: milliseconds from 0 (none), a fraction kept as the peer's `setTimeout` keeps it, above
/// 2^31 - 1 taken as that; the default when undefined.
pub fn timeout(context: &str, config: &JsValue) -> JsResult<Option<Duration>> {
    let timeout = get(config, "timeout")?;
    if timeout.is_undefined() {
        return Ok(Some(Duration::from_millis(DEFAULT_TIMEOUT_MS)));
    }
    let millis = options::milliseconds(
        context,
        "timeout",
        &timeout,
        |millis| millis >= 0.0,
        "must be a number of milliseconds, 0 for none",
    )?;
    Ok((millis > 0.0).then(|| Duration::from_micros((millis.min(MAX_TIMER_MS) * 1_000.0) as u64)))
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

/// A boolean option, false when undefined.
pub fn flag(context: &str, config: &JsValue, name: &str) -> JsResult<bool> {
    let value = get(config, name)?;
    if !(value.is_undefined() || value.as_bool().is_some()) {
        return Err(type_error(context, name, "must be a boolean", &value));
    }
    Ok(value.as_bool() == Some(true))
}

/// The identifier argument: a string (empty too, as the peer takes it), or a number or bigint as
/// JavaScript writes it (`String(identifier)`, as the peer's key is made).
/// A string with a lone surrogate is refused: its UTF-8 (U+FFFD in its place) would be another
/// identifier's.
pub fn identifier(context: &str, identifier: &JsValue) -> JsResult<String> {
    if let Some(text) = identifier.as_string() {
        // U+FFFD is where a lone surrogate would be: only then is JavaScript asked.
        if text.contains('\u{FFFD}') && !sys::is_well_formed(identifier) {
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
        return Ok(sys::string(identifier));
    }
    Err(type_error(
        context,
        "identifier",
        "must be a string or a number",
        identifier,
    ))
}

/// The arguments of `limit(identifier, options?)`: the identifier, and the rate of `options` (1 if
/// none, or null, as the peer's `rate ?? 1`).
pub fn limit_arguments(
    context: &str,
    identifier_value: &JsValue,
    options: &JsValue,
) -> JsResult<(String, f64)> {
    let identifier = identifier(context, identifier_value)?;
    let rate = if options.is_undefined() || options.is_null() {
        JsValue::UNDEFINED
    } else if options.is_object() {
        // The keys are checked in the same crossing that reads the rate (`limitRate`).
        sys::limit_rate(options)?
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
    } else if let Some(unknown) = rate.dyn_ref::<sys::UnknownOption>() {
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

/// `{ dynamicLimit }`: the stored limit, or `null`.
pub fn dynamic_limit_object(limit: Option<u64>) -> JsValue {
    let value = limit.map_or(JsValue::NULL, |limit| (limit as f64).into());
    let object = Object::new();
    let _ = Reflect::set(&object, &"dynamicLimit".into(), &value);
    object.into()
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

/// `{ remaining, reset, limit }`, the answer of `getRemaining`.
pub fn remaining_object(remaining: &crate::ratelimit::Remaining) -> JsValue {
    sys::remaining_response(
        remaining.remaining,
        remaining.reset as f64,
        remaining.limit as f64,
    )
}

/// `pending`: the work left after an answer, which runs now whether or not anyone awaits it, as a
/// Promise that settles (never rejects) when it is done; undefined when there is none.
pub fn pending_promise(pending: Option<Pending>) -> JsValue {
    match pending {
        Some(work) => promise(Box::pin(async move {
            work.await;
            Ok(JsValue::UNDEFINED)
        }))
        .into(),
        None => JsValue::UNDEFINED,
    }
}

/// Whether `value` looks like a `Map` (duck-typed: a `Map` from another realm fails `instanceof`).
fn is_map_like(value: &JsValue) -> JsResult<bool> {
    Ok(value.is_object() && get(value, "get")?.is_function() && get(value, "set")?.is_function())
}
