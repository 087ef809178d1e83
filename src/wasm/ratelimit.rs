//! `Ratelimit`: the limiter as JavaScript sees it, mirroring `@upstash/ratelimit`.

use super::errors::{range_error, to_js_error, type_error};
use super::limiter::{self, Kind};
use super::options::{self, get, JsResult};
use super::promise::promise;
use super::redis::RedisConfig;
use super::shared_cache::shared_cache;
use super::sleep::sleep;
use super::sys;
use crate::backend::{Backend, MemoryBackend};
use crate::ratelimit::{
    EphemeralCache, FailMode, Ratelimit, Response, Settings, DEFAULT_CACHE_SIZE, DEFAULT_PREFIX,
};
use crate::redis::RedisBackend;
use crate::transport::FetchTransport;
use js_sys::{Object, Promise, Reflect};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use wasm_bindgen::prelude::*;

/// The default timeout of a request to Redis, in milliseconds.
const DEFAULT_TIMEOUT_MS: u64 = 5_000;

/// The longest `timeout` armed: `setTimeout`'s limit, 2^31 - 1 ms (about 24.8 days). A longer one is
/// taken as that (the peer's `setTimeout` overflows instead, and times out after 1 ms).
const MAX_TIMER_MS: f64 = i32::MAX as f64;

/// The options of `new Ratelimit`: its own, and those of `@upstash/ratelimit` it shares.
/// `cacheScripts` has no effect in `@upstash/ratelimit` 2.x either (scripts always run by hash), and
/// `enableTelemetry` none here (edgelimit sends no telemetry), so both values of each are honoured.
const RATELIMIT_OPTIONS: [&str; 12] = [
    "redis",
    "limiter",
    "prefix",
    "ephemeralCache",
    "timeout",
    "failMode",
    "dynamicLimits",
    "analytics",
    "enableProtection",
    "denyListThreshold",
    "cacheScripts",
    "enableTelemetry",
];

/// A rate limit: `new Ratelimit({ redis?, limiter, prefix?, ephemeralCache?, timeout?, failMode?,
/// dynamicLimits? })`.
#[wasm_bindgen(js_name = Ratelimit)]
pub struct JsRatelimit {
    inner: Rc<Ratelimit>,
}

#[wasm_bindgen(js_class = Ratelimit)]
impl JsRatelimit {
    /// Checks every option and builds the limiter; a bad option throws.
    #[wasm_bindgen(constructor)]
    pub fn new(config: JsValue) -> JsResult<JsRatelimit> {
        const CONTEXT: &str = "new Ratelimit";
        let limiter = options::field(CONTEXT, "config", &config, false, "limiter")?;
        options::known_keys(CONTEXT, &config, &RATELIMIT_OPTIONS)?;
        for flag in ["cacheScripts", "enableTelemetry"] {
            let value = get(&config, flag)?;
            if !(value.is_undefined() || value.as_bool().is_some()) {
                return Err(type_error(CONTEXT, flag, "must be a boolean", &value));
            }
        }
        let (algorithm, cached) = limiter::read(CONTEXT, &limiter)?;

        let prefix = get(&config, "prefix")?;
        let prefix = if prefix.is_undefined() {
            None
        } else {
            Some(options::string(CONTEXT, "prefix", &prefix, true)?)
        };

        // As the peer: a `Map` names one cache, shared by every limit given it. Its entries stay in
        // Rust, bounded; the `Map` stays empty.
        let cache = get(&config, "ephemeralCache")?;
        let mut size = Some(DEFAULT_CACHE_SIZE);
        let mut shared = None;
        match cache.as_bool() {
            Some(on) => size = size.filter(|_| on),
            None if cache.is_undefined() => {}
            None if cache.as_f64().is_some() => {
                // Up to 2^53 - 1, more than a 32-bit usize holds: saturate, never wrap to a tiny cache.
                let max = options::count(CONTEXT, "ephemeralCache", &cache, false)?;
                size = Some(usize::try_from(max).unwrap_or(usize::MAX))
            }
            None if is_map_like(&cache)? => shared = Some(cache),
            None => {
                return Err(type_error(
                    CONTEXT,
                    "ephemeralCache",
                    "must be a Map, a boolean or a maximum number of entries",
                    &cache,
                ))
            }
        }
        if cached && size.is_none() {
            return Err(type_error(
                CONTEXT,
                "ephemeralCache",
                "must be a Map or true with Ratelimit.cachedFixedWindow, which counts in it",
                &JsValue::FALSE,
            ));
        }

        let timeout = get(&config, "timeout")?;
        let timeout = if timeout.is_undefined() {
            Some(Duration::from_millis(DEFAULT_TIMEOUT_MS))
        } else {
            let millis = options::milliseconds(
                CONTEXT,
                "timeout",
                &timeout,
                |millis| millis >= 0.0,
                "must be a number of milliseconds, 0 for none",
            )?;
            // A fraction of a millisecond is kept, as the peer's `setTimeout` keeps it.
            (millis > 0.0)
                .then(|| Duration::from_micros((millis.min(MAX_TIMER_MS) * 1_000.0) as u64))
        };

        let fail_mode = get(&config, "failMode")?;
        let fail_mode = options::one_of(
            CONTEXT,
            "failMode",
            &fail_mode,
            FailMode::Open,
            &[("open", FailMode::Open), ("closed", FailMode::Closed)],
            "must be \"open\" or \"closed\"",
        )?;

        let dynamic_limits = get(&config, "dynamicLimits")?;
        if !(dynamic_limits.is_undefined() || dynamic_limits.as_bool().is_some()) {
            return Err(type_error(
                CONTEXT,
                "dynamicLimits",
                "must be a boolean",
                &dynamic_limits,
            ));
        }

        if cached && dynamic_limits.as_bool() == Some(true) {
            // The peer's warning, word for word: both count alike in a mixed fleet.
            let _ = sys::console_warn(
                "Warning: Dynamic limits are not yet supported for cachedFixedWindow algorithm. The dynamicLimits option will be ignored.",
            );
        }

        let redis = get(&config, "redis")?;
        let backend: Arc<dyn Backend> = if redis.is_undefined() {
            Arc::new(MemoryBackend::new())
        } else {
            let redis = RedisConfig::read(CONTEXT, "redis", &redis)?;
            let transport = FetchTransport::new(&redis.url, &redis.token)
                .with_timeout(timeout)
                .with_fetch(redis.fetch);
            redis_backend(transport)
        };
        let settings = Settings {
            prefix: prefix.unwrap_or_else(|| DEFAULT_PREFIX.to_owned()),
            cache: match shared {
                Some(map) => Some(shared_cache(&map)),
                None => size.map(|max| Arc::new(EphemeralCache::new(max))),
            },
            // A cached fixed window counts in the cache's stead, as many identifiers as it would hold.
            local_counts: cached.then(|| size.unwrap_or(DEFAULT_CACHE_SIZE)),
            dynamic_limits: dynamic_limits.as_bool() == Some(true),
            fail_mode,
        };
        let limiter = Ratelimit::from_settings(backend, algorithm, settings);
        Ok(JsRatelimit {
            inner: Rc::new(limiter),
        })
    }

    /// `limit(identifier, { rate }?)`: a Promise of `{ success, limit, remaining, reset, pending, reason? }`.
    /// Bad input rejects the Promise with a `TypeError` or `RangeError`.
    pub fn limit(&self, identifier: JsValue, options: JsValue) -> Promise {
        const CONTEXT: &str = "Ratelimit.limit";
        let arguments = identifier_arg(CONTEXT, &identifier).and_then(|identifier| {
            let rate = if options.is_undefined() || options.is_null() {
                JsValue::UNDEFINED
            } else if options.is_object() {
                // The keys are checked in the same crossing that reads the rate (`limitRate`).
                sys::limit_rate(&options)?
            } else {
                return Err(type_error(
                    CONTEXT,
                    "options",
                    "must be an object",
                    &options,
                ));
            };
            // As the peer's `rate ?? 1`, in the order of the most frequent cases.
            let rate = if rate.is_undefined() {
                1.0
            } else if let Some(rate) = rate.as_f64() {
                rate
            } else if rate.is_null() {
                1.0
            } else if let Some(unknown) = rate.dyn_ref::<sys::UnknownOption>() {
                return Err(options::unknown_option(
                    CONTEXT,
                    &unknown.key(),
                    &LIMIT_OPTIONS,
                ));
            } else {
                options::number(CONTEXT, "rate", "must be a number", &rate)?
            };
            Ok((identifier, rate))
        });
        let limiter = Rc::clone(&self.inner);
        promise(Box::pin(async move {
            let (identifier, rate) = arguments?;
            let (response, pending) = limiter
                .limit_with_pending(&identifier, rate)
                .await
                .map_err(|error| match error {
                    crate::Error::InvalidCost { reason, .. } => {
                        range_error(CONTEXT, "rate", reason, &rate.into())
                    }
                    other => to_js_error(CONTEXT, &other),
                })?;
            // The write of a locally answered request runs now, whether or not anyone awaits it;
            // `pending` settles (never rejects) when it is done.
            let pending = match pending {
                Some(work) => promise(Box::pin(async move {
                    work.await;
                    Ok(JsValue::UNDEFINED)
                }))
                .into(),
                None => JsValue::UNDEFINED,
            };
            Ok(response_object(&response, &pending))
        }))
    }

    /// `blockUntilReady(identifier, timeout)`: calls `limit` until admitted or `timeout` ms have passed,
    /// waiting exactly as long as the limit says; answers the denial at once if waiting cannot help.
    #[wasm_bindgen(js_name = blockUntilReady)]
    pub fn block_until_ready(&self, identifier: JsValue, timeout: JsValue) -> Promise {
        const CONTEXT: &str = "Ratelimit.blockUntilReady";
        let arguments = identifier_arg(CONTEXT, &identifier).and_then(|identifier| {
            // Any positive number, as the peer: each wait is as long as the limit says, so a long
            // deadline (even `Infinity`) needs no long timer.
            let millis = options::milliseconds(
                CONTEXT,
                "timeout",
                &timeout,
                |millis| millis > 0.0,
                "must be a positive number of milliseconds",
            )?;
            // `as` saturates: `Infinity` waits for ever (2^64 µs).
            let timeout = Duration::from_micros((millis * 1_000.0) as u64);
            Ok((identifier, timeout))
        });
        let limiter = Rc::clone(&self.inner);
        promise(Box::pin(async move {
            let (identifier, timeout) = arguments?;
            let response = limiter
                .block_until_ready(&identifier, 1.0, timeout, sleep)
                .await
                .map_err(|error| to_js_error(CONTEXT, &error))?;
            Ok(response_object(&response, &JsValue::UNDEFINED))
        }))
    }

    /// `setDynamicLimit({ limit })`: stores `limit` (a whole number) as the limit of every identifier
    /// under this prefix, or removes it for `limit: false`. Needs `dynamicLimits: true`.
    #[wasm_bindgen(js_name = setDynamicLimit)]
    pub fn set_dynamic_limit(&self, options: JsValue) -> Promise {
        const CONTEXT: &str = "Ratelimit.setDynamicLimit";
        let limit =
            options::field(CONTEXT, "options", &options, false, "limit").and_then(|limit| {
                if limit.as_bool() == Some(false) {
                    Ok(None)
                } else if limit.as_f64().is_some() {
                    options::count(CONTEXT, "limit", &limit, true).map(Some)
                } else {
                    Err(type_error(
                        CONTEXT,
                        "limit",
                        "must be a number or false",
                        &limit,
                    ))
                }
            });
        let limiter = Rc::clone(&self.inner);
        promise(Box::pin(async move {
            limiter
                .set_dynamic_limit(limit?)
                .await
                .map_err(|error| to_js_error(CONTEXT, &error))?;
            Ok(JsValue::UNDEFINED)
        }))
    }

    /// `getDynamicLimit()`: a Promise of `{ dynamicLimit }`, the stored limit or `null`.
    #[wasm_bindgen(js_name = getDynamicLimit)]
    pub fn get_dynamic_limit(&self) -> Promise {
        let limiter = Rc::clone(&self.inner);
        promise(Box::pin(async move {
            let limit = limiter
                .dynamic_limit()
                .await
                .map_err(|error| to_js_error("Ratelimit.getDynamicLimit", &error))?;
            let value = limit.map_or(JsValue::NULL, |limit| (limit as f64).into());
            Ok(object(&[("dynamicLimit", value)]))
        }))
    }

    /// `getRemaining(identifier)`: a Promise of `{ remaining, reset, limit }`.
    #[wasm_bindgen(js_name = getRemaining)]
    pub fn get_remaining(&self, identifier: JsValue) -> Promise {
        const CONTEXT: &str = "Ratelimit.getRemaining";
        let identifier = identifier_arg(CONTEXT, &identifier);
        let limiter = Rc::clone(&self.inner);
        promise(Box::pin(async move {
            let remaining = limiter
                .get_remaining(&identifier?)
                .await
                .map_err(|error| to_js_error(CONTEXT, &error))?;
            Ok(sys::remaining_response(
                remaining.remaining,
                remaining.reset as f64,
                remaining.limit as f64,
            ))
        }))
    }

    /// `resetUsedTokens(identifier)`: a Promise that settles once the identifier's state is gone.
    #[wasm_bindgen(js_name = resetUsedTokens)]
    pub fn reset_used_tokens(&self, identifier: JsValue) -> Promise {
        const CONTEXT: &str = "Ratelimit.resetUsedTokens";
        let identifier = identifier_arg(CONTEXT, &identifier);
        let limiter = Rc::clone(&self.inner);
        promise(Box::pin(async move {
            limiter
                .reset_used_tokens(&identifier?)
                .await
                .map_err(|error| to_js_error(CONTEXT, &error))?;
            Ok(JsValue::UNDEFINED)
        }))
    }
}

#[wasm_bindgen(js_class = Ratelimit)]
impl JsRatelimit {
    /// `Ratelimit.fixedWindow(tokens, window)`: `tokens` per window, counted in fixed windows.
    #[wasm_bindgen(js_name = fixedWindow)]
    pub fn fixed_window(tokens: JsValue, window: JsValue) -> JsResult<JsValue> {
        limiter::make(
            "Ratelimit.fixedWindow",
            Kind::FixedWindow,
            limiter::WINDOW_FIELDS,
            [tokens, window, JsValue::UNDEFINED],
        )
    }

    /// `Ratelimit.cachedFixedWindow(tokens, window)`: a fixed window answered from local counts once
    /// known, the write to Redis left in `pending`.
    #[wasm_bindgen(js_name = cachedFixedWindow)]
    pub fn cached_fixed_window(tokens: JsValue, window: JsValue) -> JsResult<JsValue> {
        limiter::make(
            "Ratelimit.cachedFixedWindow",
            Kind::CachedFixedWindow,
            limiter::WINDOW_FIELDS,
            [tokens, window, JsValue::UNDEFINED],
        )
    }

    /// `Ratelimit.slidingWindow(tokens, window)`: `tokens` per window, weighting the previous window.
    #[wasm_bindgen(js_name = slidingWindow)]
    pub fn sliding_window(tokens: JsValue, window: JsValue) -> JsResult<JsValue> {
        limiter::make(
            "Ratelimit.slidingWindow",
            Kind::SlidingWindow,
            limiter::WINDOW_FIELDS,
            [tokens, window, JsValue::UNDEFINED],
        )
    }

    /// `Ratelimit.tokenBucket(refillRate, interval, maxTokens)`.
    #[wasm_bindgen(js_name = tokenBucket)]
    pub fn token_bucket(
        refill_rate: JsValue,
        interval: JsValue,
        max_tokens: JsValue,
    ) -> JsResult<JsValue> {
        limiter::make(
            "Ratelimit.tokenBucket",
            Kind::TokenBucket,
            ["refillRate", "interval", "maxTokens"],
            [refill_rate, interval, max_tokens],
        )
    }

    /// `Ratelimit.gcra(limit, period, { burst }?)`: `limit` per period, bursts of `burst` (default
    /// `limit`).
    pub fn gcra(limit: JsValue, period: JsValue, options: JsValue) -> JsResult<JsValue> {
        const CONTEXT: &str = "Ratelimit.gcra";
        // In the order of the arguments: `limit` and `period` before `options`.
        options::count(CONTEXT, "limit", &limit, false)?;
        options::duration(CONTEXT, "period", &period)?;
        let burst = options::field(CONTEXT, "options", &options, true, "burst")?;
        let burst = if burst.is_undefined() {
            limit.clone()
        } else {
            burst
        };
        limiter::make(
            CONTEXT,
            Kind::Gcra,
            ["limit", "period", "burst"],
            [limit, period, burst],
        )
    }
}

/// The options `limit()` knows (checked in `boundary.js`), for the message naming an unknown one.
const LIMIT_OPTIONS: [&str; 6] = ["rate", "ip", "userAgent", "country", "geo", "request"];

/// The identifier argument: a string (empty too, as the peer takes it), or a number or bigint as
/// JavaScript writes it (`String(identifier)`, as the peer's key is made).
fn identifier_arg(context: &str, identifier: &JsValue) -> JsResult<String> {
    if let Some(text) = identifier.as_string() {
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

/// `{ success, limit, remaining, reset, pending, reason? }`; `pending` undefined when nothing is left.
fn response_object(response: &Response, pending: &JsValue) -> JsValue {
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

/// The Redis store over `transport`, shared as every store is (`Arc`). Its coalesced requests are
/// JavaScript futures, neither `Send` nor `Sync`, which is moot where there is one thread.
#[allow(clippy::arc_with_non_send_sync)]
fn redis_backend(transport: FetchTransport) -> Arc<dyn Backend> {
    Arc::new(RedisBackend::new(transport))
}

/// A plain object of these properties.
fn object(properties: &[(&str, JsValue)]) -> JsValue {
    let object = Object::new();
    for (key, value) in properties {
        let _ = Reflect::set(&object, &(*key).into(), value);
    }
    object.into()
}

/// Whether `value` looks like a `Map` (duck-typed: a `Map` from another realm fails `instanceof`).
fn is_map_like(value: &JsValue) -> JsResult<bool> {
    Ok(value.is_object() && get(value, "get")?.is_function() && get(value, "set")?.is_function())
}
