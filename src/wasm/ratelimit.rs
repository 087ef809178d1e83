//! `Ratelimit`: the limiter as JavaScript sees it, mirroring `@upstash/ratelimit`.

use super::options::{self, get, range_error, to_js_error, type_error, JsResult};
use super::redis::RedisConfig;
use super::shared_cache::shared_cache;
use super::sleep::sleep;
use crate::algorithm::{Algorithm, FixedWindow, Gcra, SlidingWindow, TokenBucket};
use crate::backend::MemoryBackend;
use crate::ratelimit::{FailMode, Ratelimit, Response, DEFAULT_CACHE_SIZE};
use crate::redis::RedisBackend;
use crate::transport::FetchTransport;
use js_sys::{Object, Promise, Reflect};
use std::rc::Rc;
use std::time::Duration;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

/// The default timeout of a request to Redis, in milliseconds.
const DEFAULT_TIMEOUT_MS: f64 = 5_000.0;

/// The tag on limiter objects, so that a stray object is not taken for one.
const LIMITER_TAG: &str = "edgelimit.limiter";

/// The most `blockUntilReady` waits and `timeout` allows: `setTimeout`'s limit, 2^31 - 1 ms.
const MAX_TIMER_MS: f64 = i32::MAX as f64;

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
        super::install_panic_hook();
        const CONTEXT: &str = "new Ratelimit";
        options::object(CONTEXT, "config", &config, false)?;

        let limiter = get(&config, "limiter")?;
        let (algorithm, cached) = read_limiter(CONTEXT, &limiter)?;

        let prefix = get(&config, "prefix")?;
        let prefix = if prefix.is_undefined() {
            None
        } else {
            Some(options::string(CONTEXT, "prefix", &prefix, true)?)
        };

        let cache = get(&config, "ephemeralCache")?;
        let cache = if cache.is_undefined() || cache.as_bool() == Some(true) {
            Cache::Own(DEFAULT_CACHE_SIZE)
        } else if cache.as_bool() == Some(false) {
            Cache::Off
        } else if cache.as_f64().is_some() {
            Cache::Own(options::count(CONTEXT, "ephemeralCache", &cache)? as usize)
        } else if is_map_like(&cache)? {
            // As the peer: one Map, one cache, shared by every limit given it. Its entries stay in
            // Rust, bounded; the Map only names the cache.
            Cache::Shared(cache)
        } else {
            return Err(type_error(
                CONTEXT,
                "ephemeralCache",
                "a Map, a boolean or a maximum number of entries",
                &cache,
            ));
        };
        if cached && matches!(cache, Cache::Off) {
            return Err(type_error(
                CONTEXT,
                "ephemeralCache",
                "a Map or true with Ratelimit.cachedFixedWindow, which counts in it",
                &JsValue::FALSE,
            ));
        }

        let timeout = get(&config, "timeout")?;
        let timeout = if timeout.is_undefined() {
            Some(Duration::from_millis(DEFAULT_TIMEOUT_MS as u64))
        } else {
            let millis = options::milliseconds(CONTEXT, "timeout", &timeout)?;
            if millis.fract() != 0.0 || !(0.0..=MAX_TIMER_MS).contains(&millis) {
                return Err(range_error(
                    CONTEXT,
                    "timeout",
                    "must be a whole number of milliseconds from 0 (none) to 2^31 - 1",
                    &timeout,
                ));
            }
            (millis > 0.0).then(|| Duration::from_millis(millis as u64))
        };

        let fail_mode = get(&config, "failMode")?;
        let fail_mode = match fail_mode.as_string().as_deref() {
            None if fail_mode.is_undefined() => FailMode::Open,
            Some("open") => FailMode::Open,
            Some("closed") => FailMode::Closed,
            Some(_) => {
                return Err(range_error(
                    CONTEXT,
                    "failMode",
                    "must be \"open\" or \"closed\"",
                    &fail_mode,
                ))
            }
            None => {
                return Err(type_error(
                    CONTEXT,
                    "failMode",
                    "\"open\" or \"closed\"",
                    &fail_mode,
                ))
            }
        };

        let dynamic_limits = get(&config, "dynamicLimits")?;
        let dynamic_limits = match dynamic_limits.as_bool() {
            Some(enabled) => enabled,
            None if dynamic_limits.is_undefined() => false,
            None => {
                return Err(type_error(
                    CONTEXT,
                    "dynamicLimits",
                    "a boolean",
                    &dynamic_limits,
                ))
            }
        };

        let redis = get(&config, "redis")?;
        let limiter = if redis.is_undefined() {
            Ratelimit::new(MemoryBackend::new(), algorithm)
        } else {
            let redis = RedisConfig::read(CONTEXT, &redis)?;
            let transport = FetchTransport::new(&redis.url, &redis.token)
                .with_timeout(timeout)
                .with_fetch(redis.fetch);
            Ratelimit::new(RedisBackend::new(transport), algorithm)
        };
        let mut limiter = match &cache {
            Cache::Own(size) => limiter.with_ephemeral_cache(Some(*size)),
            Cache::Off => limiter.with_ephemeral_cache(None),
            Cache::Shared(map) => limiter.with_shared_ephemeral_cache(shared_cache(map)?),
        }
        .with_fail_mode(fail_mode)
        .with_dynamic_limits(dynamic_limits);
        if cached {
            let size = match cache {
                Cache::Own(size) => size,
                _ => DEFAULT_CACHE_SIZE,
            };
            limiter = limiter
                .with_local_counts(size)
                .map_err(|error| to_js_error(CONTEXT, &error))?;
        }
        if let Some(prefix) = prefix {
            limiter = limiter.with_prefix(prefix);
        }
        Ok(JsRatelimit {
            inner: Rc::new(limiter),
        })
    }

    /// `limit(identifier, { rate }?)`: a Promise of `{ success, limit, remaining, reset, pending, reason? }`.
    /// Bad input rejects the Promise with a `TypeError` or `RangeError`.
    pub fn limit(&self, identifier: JsValue, options: JsValue) -> Promise {
        const CONTEXT: &str = "Ratelimit.limit";
        let checked = identifier_arg(CONTEXT, &identifier).and_then(|identifier| {
            options::object(CONTEXT, "options", &options, true)?;
            let rate = if options.is_undefined() {
                JsValue::UNDEFINED
            } else {
                get(&options, "rate")?
            };
            let rate = if rate.is_undefined() {
                1.0
            } else {
                rate.as_f64()
                    .ok_or_else(|| type_error(CONTEXT, "rate", "a number", &rate))?
            };
            Ok((identifier, rate))
        });
        let (identifier, rate) = match checked {
            Ok(checked) => checked,
            Err(error) => return Promise::reject(&error),
        };
        let inner = Rc::clone(&self.inner);
        future_to_promise(async move {
            let (response, pending) = inner
                .limit_with_pending(&identifier, rate)
                .await
                .map_err(|error| rate_error(CONTEXT, rate, &error))?;
            // The write of a locally answered request runs now, whether or not anyone awaits it;
            // `pending` settles (never rejects) when it is done.
            let pending = match pending {
                Some(work) => future_to_promise(async move {
                    work.await;
                    Ok(JsValue::UNDEFINED)
                }),
                None => Promise::resolve(&JsValue::UNDEFINED),
            };
            response_object(&response, &pending)
        })
    }

    /// `blockUntilReady(identifier, timeout)`: calls `limit` until admitted or `timeout` ms have passed,
    /// waiting exactly as long as the limit says; answers the denial at once if waiting cannot help.
    #[wasm_bindgen(js_name = blockUntilReady)]
    pub fn block_until_ready(&self, identifier: JsValue, timeout: JsValue) -> Promise {
        const CONTEXT: &str = "Ratelimit.blockUntilReady";
        let checked = identifier_arg(CONTEXT, &identifier).and_then(|identifier| {
            let millis = options::milliseconds(CONTEXT, "timeout", &timeout)?;
            if !(millis > 0.0 && millis <= MAX_TIMER_MS) {
                return Err(range_error(
                    CONTEXT,
                    "timeout",
                    "must be a positive number of milliseconds up to 2^31 - 1",
                    &timeout,
                ));
            }
            Ok((identifier, Duration::from_micros((millis * 1_000.0) as u64)))
        });
        let (identifier, timeout) = match checked {
            Ok(checked) => checked,
            Err(error) => return Promise::reject(&error),
        };
        let inner = Rc::clone(&self.inner);
        future_to_promise(async move {
            let response = inner
                .block_until_ready(&identifier, 1.0, timeout, sleep)
                .await
                .map_err(|error| to_js_error(CONTEXT, &error))?;
            response_object(&response, &Promise::resolve(&JsValue::UNDEFINED))
        })
    }

    /// `setDynamicLimit({ limit })`: stores `limit` (a whole number) as the limit of every identifier
    /// under this prefix, or removes it for `limit: false`. Needs `dynamicLimits: true`.
    #[wasm_bindgen(js_name = setDynamicLimit)]
    pub fn set_dynamic_limit(&self, options: JsValue) -> Promise {
        const CONTEXT: &str = "Ratelimit.setDynamicLimit";
        let checked = options::object(CONTEXT, "options", &options, false).and_then(|_| {
            let limit = get(&options, "limit")?;
            if limit.as_bool() == Some(false) {
                Ok(None)
            } else if limit.as_f64().is_some() {
                options::count(CONTEXT, "limit", &limit).map(Some)
            } else {
                Err(type_error(CONTEXT, "limit", "a number or false", &limit))
            }
        });
        let limit = match checked {
            Ok(limit) => limit,
            Err(error) => return Promise::reject(&error),
        };
        let inner = Rc::clone(&self.inner);
        future_to_promise(async move {
            inner
                .set_dynamic_limit(limit)
                .await
                .map_err(|error| to_js_error(CONTEXT, &error))?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// `getDynamicLimit()`: a Promise of `{ dynamicLimit }`, the stored limit or `null`.
    #[wasm_bindgen(js_name = getDynamicLimit)]
    pub fn get_dynamic_limit(&self) -> Promise {
        const CONTEXT: &str = "Ratelimit.getDynamicLimit";
        let inner = Rc::clone(&self.inner);
        future_to_promise(async move {
            let limit = inner
                .dynamic_limit()
                .await
                .map_err(|error| to_js_error(CONTEXT, &error))?;
            let object = Object::new();
            let value = limit.map_or(JsValue::NULL, |limit| (limit as f64).into());
            set(&object, "dynamicLimit", &value)?;
            Ok(object.into())
        })
    }

    /// `getRemaining(identifier)`: a Promise of `{ remaining, reset, limit }`.
    #[wasm_bindgen(js_name = getRemaining)]
    pub fn get_remaining(&self, identifier: JsValue) -> Promise {
        const CONTEXT: &str = "Ratelimit.getRemaining";
        let identifier = match identifier_arg(CONTEXT, &identifier) {
            Ok(identifier) => identifier,
            Err(error) => return Promise::reject(&error),
        };
        let inner = Rc::clone(&self.inner);
        future_to_promise(async move {
            let remaining = inner
                .get_remaining(&identifier)
                .await
                .map_err(|error| to_js_error(CONTEXT, &error))?;
            let object = Object::new();
            set(&object, "remaining", &remaining.remaining.into())?;
            set(&object, "reset", &(remaining.reset as f64).into())?;
            set(&object, "limit", &(remaining.limit as f64).into())?;
            Ok(object.into())
        })
    }

    /// `resetUsedTokens(identifier)`: a Promise that settles once the identifier's state is gone.
    #[wasm_bindgen(js_name = resetUsedTokens)]
    pub fn reset_used_tokens(&self, identifier: JsValue) -> Promise {
        const CONTEXT: &str = "Ratelimit.resetUsedTokens";
        let identifier = match identifier_arg(CONTEXT, &identifier) {
            Ok(identifier) => identifier,
            Err(error) => return Promise::reject(&error),
        };
        let inner = Rc::clone(&self.inner);
        future_to_promise(async move {
            inner
                .reset_used_tokens(&identifier)
                .await
                .map_err(|error| to_js_error(CONTEXT, &error))?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// `Ratelimit.fixedWindow(tokens, window)`: `tokens` per window, counted in fixed windows.
    #[wasm_bindgen(js_name = fixedWindow)]
    pub fn fixed_window(tokens: JsValue, window: JsValue) -> JsResult<JsValue> {
        window_limiter("fixedWindow", &tokens, &window, FixedWindow::new)
    }

    /// `Ratelimit.cachedFixedWindow(tokens, window)`: a fixed window answered from local counts once
    /// known, the write to Redis left in `pending` (faster; a fleet may over-admit until writes land).
    #[wasm_bindgen(js_name = cachedFixedWindow)]
    pub fn cached_fixed_window(tokens: JsValue, window: JsValue) -> JsResult<JsValue> {
        window_limiter("cachedFixedWindow", &tokens, &window, FixedWindow::new)
    }

    /// `Ratelimit.slidingWindow(tokens, window)`: `tokens` per window, weighting the previous window.
    #[wasm_bindgen(js_name = slidingWindow)]
    pub fn sliding_window(tokens: JsValue, window: JsValue) -> JsResult<JsValue> {
        window_limiter("slidingWindow", &tokens, &window, SlidingWindow::new)
    }

    /// `Ratelimit.tokenBucket(refillRate, interval, maxTokens)`.
    #[wasm_bindgen(js_name = tokenBucket)]
    pub fn token_bucket(
        refill_rate: JsValue,
        interval: JsValue,
        max_tokens: JsValue,
    ) -> JsResult<JsValue> {
        super::install_panic_hook();
        const CONTEXT: &str = "Ratelimit.tokenBucket";
        let refill_rate = options::count(CONTEXT, "refillRate", &refill_rate)?;
        let interval = options::duration(CONTEXT, "interval", &interval)?;
        let max_tokens = options::count(CONTEXT, "maxTokens", &max_tokens)?;
        TokenBucket::new(refill_rate, interval, max_tokens)
            .map_err(|e| to_js_error(CONTEXT, &e))?;
        limiter_object(
            "tokenBucket",
            &[refill_rate, interval.as_millis() as u64, max_tokens],
        )
    }

    /// `Ratelimit.gcra(limit, period, { burst }?)`: GCRA, `limit` per period with bursts of `burst`
    /// (default `limit`).
    pub fn gcra(limit: JsValue, period: JsValue, options: JsValue) -> JsResult<JsValue> {
        super::install_panic_hook();
        const CONTEXT: &str = "Ratelimit.gcra";
        let limit = options::count(CONTEXT, "limit", &limit)?;
        let period = options::duration(CONTEXT, "period", &period)?;
        let burst = if options::object(CONTEXT, "options", &options, true)? {
            let burst = get(&options, "burst")?;
            if burst.is_undefined() {
                limit
            } else {
                options::count(CONTEXT, "burst", &burst)?
            }
        } else {
            limit
        };
        Gcra::new(limit, period, burst).map_err(|e| to_js_error(CONTEXT, &e))?;
        limiter_object("gcra", &[limit, period.as_millis() as u64, burst])
    }
}

/// A window limiter object, `tokens` per `window`, checked by `check` (the algorithm's constructor).
fn window_limiter<A>(
    name: &str,
    tokens: &JsValue,
    window: &JsValue,
    check: fn(u64, Duration) -> crate::Result<A>,
) -> JsResult<JsValue> {
    super::install_panic_hook();
    let context = format!("Ratelimit.{name}");
    let tokens = options::count(&context, "tokens", tokens)?;
    let window = options::duration(&context, "window", window)?;
    check(tokens, window).map_err(|e| to_js_error(&context, &e))?;
    limiter_object(name, &[tokens, window.as_millis() as u64])
}

/// The identifier argument: a non-empty string.
fn identifier_arg(context: &str, identifier: &JsValue) -> JsResult<String> {
    options::string(context, "identifier", identifier, false)
}

/// A rejected `rate` names the field; other failures pass through.
fn rate_error(context: &str, rate: f64, error: &crate::Error) -> JsValue {
    match error {
        crate::Error::InvalidCost { reason, .. } => {
            range_error(context, "rate", reason, &JsValue::from_f64(rate))
        }
        other => to_js_error(context, other),
    }
}

/// A frozen `{ [tag]: true, algorithm, params }` describing a checked algorithm.
fn limiter_object(name: &str, params: &[u64]) -> JsResult<JsValue> {
    let object = Object::new();
    set(&object, LIMITER_TAG, &JsValue::TRUE)?;
    set(&object, "algorithm", &name.into())?;
    let values = js_sys::Array::new();
    for &value in params {
        values.push(&(value as f64).into());
    }
    set(&object, "params", &Object::freeze(&values))?;
    Ok(Object::freeze(&object).into())
}

/// The algorithm a limiter object describes, checked again (it may have been built by hand), and
/// whether it answers from local counts (`cachedFixedWindow`).
fn read_limiter(context: &str, limiter: &JsValue) -> JsResult<(Algorithm, bool)> {
    const EXPECTED: &str = "a limiter such as Ratelimit.slidingWindow(10, \"10 s\")";
    if !limiter.is_object() || get(limiter, LIMITER_TAG)?.as_bool() != Some(true) {
        return Err(type_error(context, "limiter", EXPECTED, limiter));
    }
    let name = get(limiter, "algorithm")?.as_string().unwrap_or_default();
    let params = get(limiter, "params")?;
    let param = |index: u32| Reflect::get_u32(&params, index).unwrap_or(JsValue::UNDEFINED);
    let count = |index: u32| options::count(context, "limiter", &param(index));
    let millis = |index: u32| options::duration(context, "limiter", &param(index));
    let checked = match name.as_str() {
        "fixedWindow" | "cachedFixedWindow" => {
            FixedWindow::new(count(0)?, millis(1)?).map(Algorithm::from)
        }
        "slidingWindow" => SlidingWindow::new(count(0)?, millis(1)?).map(Algorithm::from),
        "tokenBucket" => TokenBucket::new(count(0)?, millis(1)?, count(2)?).map(Algorithm::from),
        "gcra" => Gcra::new(count(0)?, millis(1)?, count(2)?).map(Algorithm::from),
        _ => return Err(type_error(context, "limiter", EXPECTED, limiter)),
    };
    let algorithm = checked.map_err(|error| to_js_error(context, &error))?;
    Ok((algorithm, name == "cachedFixedWindow"))
}

/// How the ephemeral cache was configured.
enum Cache {
    /// A cache of its own, of this many entries.
    Own(usize),
    /// The cache named by this `Map`, shared.
    Shared(JsValue),
    /// None.
    Off,
}

/// `{ success, limit, remaining, reset, pending, reason? }`.
fn response_object(response: &Response, pending: &Promise) -> JsResult<JsValue> {
    let object = Object::new();
    set(&object, "success", &response.success.into())?;
    set(&object, "limit", &(response.limit as f64).into())?;
    set(&object, "remaining", &response.remaining.into())?;
    set(&object, "reset", &(response.reset as f64).into())?;
    set(&object, "pending", pending)?;
    if let Some(reason) = response.reason {
        set(&object, "reason", &reason.as_str().into())?;
    }
    Ok(object.into())
}

/// Whether `value` looks like a `Map` (duck-typed: a `Map` from another realm fails `instanceof`).
fn is_map_like(value: &JsValue) -> JsResult<bool> {
    Ok(value.is_object()
        && !value.is_null()
        && get(value, "get")?.is_function()
        && get(value, "set")?.is_function())
}

fn set(target: &Object, key: &str, value: &JsValue) -> JsResult<()> {
    Reflect::set(target, &key.into(), value).map(drop)
}
