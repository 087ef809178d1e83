//! `Ratelimit`: the limiter as JavaScript sees it, mirroring `@upstash/ratelimit`.

use super::errors::{to_js_error, type_error};
use super::limit_options::{self as shared, CacheOption};
use super::limiter::{self, Kind};
use super::options::{self, get, JsResult};
use super::promise::promise;
use super::protection;
use super::redis::RedisConfig;
use super::sleep::sleep;
use super::sys;
use crate::backend::{Backend, MemoryBackend};
use crate::ratelimit::{Ratelimit, Settings, DEFAULT_CACHE_SIZE};
use crate::redis::RedisBackend;
use crate::transport::FetchTransport;
use js_sys::Promise;
use std::rc::Rc;
use std::sync::Arc;
use wasm_bindgen::prelude::*;

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
/// dynamicLimits?, enableProtection?, analytics?, denyListThreshold? })`.
#[wasm_bindgen(js_name = Ratelimit)]
pub struct JsRatelimit {
    pub(super) inner: Rc<Ratelimit>,
    /// Protection and analytics, read once: `limit` takes the plain path when both are off.
    pub(super) guards: protection::Guards,
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
            shared::flag(CONTEXT, &config, flag)?;
        }
        let (algorithm, cached) = limiter::read(CONTEXT, &limiter)?;
        let prefix = shared::prefix(CONTEXT, &config)?;
        let cache = shared::ephemeral_cache(CONTEXT, &config)?;
        if cached && matches!(cache, CacheOption::Off) {
            return Err(type_error(
                CONTEXT,
                "ephemeralCache",
                "must be a Map or true with Ratelimit.cachedFixedWindow, which counts in it",
                &JsValue::FALSE,
            ));
        }
        let timeout = shared::timeout(CONTEXT, &config)?;
        let fail_mode = shared::fail_mode(CONTEXT, &config)?;
        let dynamic_limits = shared::flag(CONTEXT, &config, "dynamicLimits")?;
        if cached && dynamic_limits {
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
        let guards = protection::Guards::read(CONTEXT, &config, &redis, cached)?;
        // A cached fixed window counts in the cache's stead, as many identifiers as it would hold.
        let local_counts = match cache {
            CacheOption::Size(max) if cached => Some(max),
            _ => cached.then_some(DEFAULT_CACHE_SIZE),
        };
        let settings = Settings {
            prefix,
            cache: cache.build(),
            local_counts,
            dynamic_limits,
            fail_mode,
        };
        let limiter = guards
            .apply(Ratelimit::from_settings(backend, algorithm, settings))
            .map_err(|error| to_js_error(CONTEXT, &error))?;
        Ok(JsRatelimit {
            inner: Rc::new(limiter),
            guards,
        })
    }

    /// `limit(identifier, { rate }?)`: a Promise of `{ success, limit, remaining, reset, pending, reason? }`.
    /// Bad input rejects the Promise with a `TypeError` or `RangeError`. With protection or analytics,
    /// `protection::limit` answers instead.
    pub fn limit(&self, identifier: JsValue, options: JsValue) -> Promise {
        if self.guards.active() {
            return protection::limit(&self.inner, &self.guards, &identifier, &options);
        }
        const CONTEXT: &str = "Ratelimit.limit";
        let arguments = shared::limit_arguments(CONTEXT, &identifier, &options);
        let limiter = Rc::clone(&self.inner);
        promise(Box::pin(async move {
            let (identifier, rate) = arguments?;
            let (response, pending) = limiter
                .limit_with_pending(&identifier, rate)
                .await
                .map_err(|error| shared::limit_error(CONTEXT, error, rate))?;
            Ok(shared::response_object(
                &response,
                &shared::pending_promise(pending),
            ))
        }))
    }

    /// `blockUntilReady(identifier, timeout)`: calls `limit` until admitted or `timeout` ms have passed,
    /// waiting exactly as long as the limit says; answers the denial at once if waiting cannot help.
    #[wasm_bindgen(js_name = blockUntilReady)]
    pub fn block_until_ready(&self, identifier: JsValue, timeout: JsValue) -> Promise {
        const CONTEXT: &str = "Ratelimit.blockUntilReady";
        let arguments = shared::block_arguments(CONTEXT, &identifier, &timeout);
        let limiter = Rc::clone(&self.inner);
        promise(Box::pin(async move {
            let (identifier, timeout) = arguments?;
            let response = limiter
                .block_until_ready(&identifier, 1.0, timeout, sleep)
                .await
                .map_err(|error| to_js_error(CONTEXT, &error))?;
            Ok(shared::response_object(&response, &JsValue::UNDEFINED))
        }))
    }

    /// `setDynamicLimit({ limit })`: stores `limit` (a whole number) as the limit of every identifier
    /// under this prefix, or removes it for `limit: false`. Needs `dynamicLimits: true`.
    #[wasm_bindgen(js_name = setDynamicLimit)]
    pub fn set_dynamic_limit(&self, options: JsValue) -> Promise {
        const CONTEXT: &str = "Ratelimit.setDynamicLimit";
        let limit = shared::dynamic_limit_argument(CONTEXT, &options);
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
            Ok(shared::dynamic_limit_object(limit))
        }))
    }

    /// `getRemaining(identifier)`: a Promise of `{ remaining, reset, limit }`.
    #[wasm_bindgen(js_name = getRemaining)]
    pub fn get_remaining(&self, identifier: JsValue) -> Promise {
        const CONTEXT: &str = "Ratelimit.getRemaining";
        let identifier = shared::identifier(CONTEXT, &identifier);
        let limiter = Rc::clone(&self.inner);
        promise(Box::pin(async move {
            let remaining = limiter
                .get_remaining(&identifier?)
                .await
                .map_err(|error| to_js_error(CONTEXT, &error))?;
            Ok(shared::remaining_object(&remaining))
        }))
    }

    /// `resetUsedTokens(identifier)`: a Promise that settles once the identifier's state is gone.
    #[wasm_bindgen(js_name = resetUsedTokens)]
    pub fn reset_used_tokens(&self, identifier: JsValue) -> Promise {
        const CONTEXT: &str = "Ratelimit.resetUsedTokens";
        let identifier = shared::identifier(CONTEXT, &identifier);
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

/// The Redis store over `transport`, shared as every store is (`Arc`). Its coalesced requests are
/// JavaScript futures, neither `Send` nor `Sync`, which is moot where there is one thread.
#[allow(clippy::arc_with_non_send_sync)]
fn redis_backend(transport: FetchTransport) -> Arc<dyn Backend> {
    Arc::new(RedisBackend::new(transport))
}
