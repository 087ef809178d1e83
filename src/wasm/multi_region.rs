//! `MultiRegionRatelimit`: one limit over several Redis databases, as JavaScript sees it, mirroring
//! `@upstash/ratelimit`'s class of that name.

use super::errors::{to_js_error, type_error};
use super::limit_options as shared;
use super::limiter::{self, Kind};
use super::options::{self, get, JsResult};
use super::promise::promise;
use super::redis::RedisConfig;
use super::sleep::sleep;
use crate::multi_region::MultiRegionRatelimit;
use crate::transport::FetchTransport;
use js_sys::{Array, Promise};
use std::rc::Rc;
use wasm_bindgen::prelude::*;

/// The options of `new MultiRegionRatelimit`: those of `Ratelimit` that apply across regions, and
/// `analytics`, which `@upstash/ratelimit`'s class takes (only `false` here: analytics are recorded by
/// `Ratelimit`).
const MULTI_REGION_OPTIONS: [&str; 10] = [
    "redis",
    "limiter",
    "prefix",
    "ephemeralCache",
    "timeout",
    "failMode",
    "dynamicLimits",
    "analytics",
    "cacheScripts",
    "enableTelemetry",
];

/// A limit replicated over several regions: `new MultiRegionRatelimit({ redis: [Redis, ...], limiter,
/// prefix?, ephemeralCache?, timeout?, failMode?, dynamicLimits? })`.
#[wasm_bindgen(js_name = MultiRegionRatelimit)]
pub struct JsMultiRegionRatelimit {
    inner: Rc<MultiRegionRatelimit<FetchTransport>>,
}

#[wasm_bindgen(js_class = MultiRegionRatelimit)]
impl JsMultiRegionRatelimit {
    /// Checks every option and builds the limit; a bad option throws.
    #[wasm_bindgen(constructor)]
    pub fn new(config: JsValue) -> JsResult<JsMultiRegionRatelimit> {
        const CONTEXT: &str = "new MultiRegionRatelimit";
        let limiter = options::field(CONTEXT, "config", &config, false, "limiter")?;
        options::known_keys(CONTEXT, &config, &MULTI_REGION_OPTIONS)?;
        for flag in ["cacheScripts", "enableTelemetry"] {
            shared::flag(CONTEXT, &config, flag)?;
        }
        if shared::flag(CONTEXT, &config, "analytics")? {
            return Err(type_error(
                CONTEXT,
                "analytics",
                "is not supported across regions: leave it false, or record analytics with Ratelimit",
                &JsValue::TRUE,
            ));
        }
        let (algorithm, cached) = limiter::read(CONTEXT, &limiter)?;
        if cached {
            return Err(type_error(
                CONTEXT,
                "limiter",
                "must not be a cachedFixedWindow, which counts in one instance only",
                &get(&limiter, "algorithm")?,
            ));
        }
        let prefix = shared::prefix(CONTEXT, &config)?;
        let cache = shared::ephemeral_cache(CONTEXT, &config)?.build();
        let timeout = shared::timeout(CONTEXT, &config)?;
        let fail_mode = shared::fail_mode(CONTEXT, &config)?;
        let dynamic_limits = shared::flag(CONTEXT, &config, "dynamicLimits")?;

        let redis = get(&config, "redis")?;
        if !Array::is_array(&redis) || Array::from(&redis).length() == 0 {
            return Err(type_error(
                CONTEXT,
                "redis",
                "must be a non-empty array of Redis or { url, token } objects, one per region",
                &redis,
            ));
        }
        let mut regions = Vec::new();
        for (index, entry) in Array::from(&redis).iter().enumerate() {
            let field = format!("redis[{index}]");
            if !entry.is_object() {
                return Err(type_error(
                    CONTEXT,
                    &field,
                    "must be a Redis or a { url, token } object",
                    &entry,
                ));
            }
            let context = format!("{CONTEXT} ({field})");
            let region = RedisConfig::read(&context, &field, &entry)?;
            regions.push(
                FetchTransport::new(&region.url, &region.token)
                    .with_timeout(timeout)
                    .with_fetch(region.fetch),
            );
        }
        let mut limit = MultiRegionRatelimit::new(regions, algorithm)
            .map_err(|error| to_js_error(CONTEXT, &error))?
            .with_prefix(prefix)
            .with_ephemeral_cache(None)
            .with_dynamic_limits(dynamic_limits)
            .with_fail_mode(fail_mode);
        if let Some(cache) = cache {
            limit = limit.with_shared_ephemeral_cache(cache);
        }
        Ok(Self {
            inner: Rc::new(limit),
        })
    }

    /// `limit(identifier, { rate }?)`: a Promise of `{ success, limit, remaining, reset, pending,
    /// reason? }`, answered by the first region to reply; `pending` merges the regions and never
    /// rejects.
    pub fn limit(&self, identifier: JsValue, options: JsValue) -> Promise {
        const CONTEXT: &str = "MultiRegionRatelimit.limit";
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
                &shared::pending_promise(Some(pending)),
            ))
        }))
    }

    /// `blockUntilReady(identifier, timeout)`: calls `limit` until admitted or `timeout` ms have passed.
    #[wasm_bindgen(js_name = blockUntilReady)]
    pub fn block_until_ready(&self, identifier: JsValue, timeout: JsValue) -> Promise {
        const CONTEXT: &str = "MultiRegionRatelimit.blockUntilReady";
        let arguments = shared::block_arguments(CONTEXT, &identifier, &timeout);
        let limiter = Rc::clone(&self.inner);
        promise(Box::pin(async move {
            let (identifier, timeout) = arguments?;
            let (response, pending) = limiter
                .block_until_ready(&identifier, 1.0, timeout, sleep)
                .await
                .map_err(|error| to_js_error(CONTEXT, &error))?;
            Ok(shared::response_object(
                &response,
                &shared::pending_promise(Some(pending)),
            ))
        }))
    }

    /// `getRemaining(identifier)`: a Promise of `{ remaining, reset, limit }` from the first region to
    /// reply.
    #[wasm_bindgen(js_name = getRemaining)]
    pub fn get_remaining(&self, identifier: JsValue) -> Promise {
        const CONTEXT: &str = "MultiRegionRatelimit.getRemaining";
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

    /// `resetUsedTokens(identifier)`: a Promise that settles once every region has forgotten the
    /// identifier (rejecting if one could not).
    #[wasm_bindgen(js_name = resetUsedTokens)]
    pub fn reset_used_tokens(&self, identifier: JsValue) -> Promise {
        const CONTEXT: &str = "MultiRegionRatelimit.resetUsedTokens";
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

    /// `setDynamicLimit({ limit })`: stores `limit` in every region, or removes it for `limit: false`.
    /// Needs `dynamicLimits: true`.
    #[wasm_bindgen(js_name = setDynamicLimit)]
    pub fn set_dynamic_limit(&self, options: JsValue) -> Promise {
        const CONTEXT: &str = "MultiRegionRatelimit.setDynamicLimit";
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

    /// `getDynamicLimit()`: a Promise of `{ dynamicLimit }` from the first region to reply.
    #[wasm_bindgen(js_name = getDynamicLimit)]
    pub fn get_dynamic_limit(&self) -> Promise {
        let limiter = Rc::clone(&self.inner);
        promise(Box::pin(async move {
            let limit = limiter
                .dynamic_limit()
                .await
                .map_err(|error| to_js_error("MultiRegionRatelimit.getDynamicLimit", &error))?;
            Ok(shared::dynamic_limit_object(limit))
        }))
    }

    /// `MultiRegionRatelimit.fixedWindow(tokens, window)`.
    #[wasm_bindgen(js_name = fixedWindow)]
    pub fn fixed_window(tokens: JsValue, window: JsValue) -> JsResult<JsValue> {
        limiter::make(
            "MultiRegionRatelimit.fixedWindow",
            Kind::FixedWindow,
            limiter::WINDOW_FIELDS,
            [tokens, window, JsValue::UNDEFINED],
        )
    }

    /// `MultiRegionRatelimit.slidingWindow(tokens, window)`.
    #[wasm_bindgen(js_name = slidingWindow)]
    pub fn sliding_window(tokens: JsValue, window: JsValue) -> JsResult<JsValue> {
        limiter::make(
            "MultiRegionRatelimit.slidingWindow",
            Kind::SlidingWindow,
            limiter::WINDOW_FIELDS,
            [tokens, window, JsValue::UNDEFINED],
        )
    }
}
