//! The options both limit classes (`Ratelimit`, `MultiRegionRatelimit`) take alike: `prefix`, `keys`,
//! `ephemeralCache`, `timeout`, `failMode`, and boolean flags such as `dynamicLimits`.

use super::errors::type_error;
use super::options::{self, get, JsResult};
use super::shared_cache::shared_cache;
use crate::key_layout::KeyLayout;
use crate::ratelimit::{EphemeralCache, FailMode, DEFAULT_CACHE_SIZE, DEFAULT_PREFIX};
use std::sync::Arc;
use std::time::Duration;
use wasm_bindgen::JsValue;

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

/// Whether `value` looks like a `Map` (duck-typed: a `Map` from another realm fails `instanceof`).
fn is_map_like(value: &JsValue) -> JsResult<bool> {
    Ok(value.is_object() && get(value, "get")?.is_function() && get(value, "set")?.is_function())
}
