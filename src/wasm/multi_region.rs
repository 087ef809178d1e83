//! `MultiRegionRatelimit`: one limit over several Redis databases, as JavaScript sees it, mirroring
//! `@upstash/ratelimit`'s class of that name.

use super::algorithms::{self, Kind};
use super::answers;
use super::errors::{to_js_error, type_error};
use super::limit_methods::{self as methods, Boxed, JsLimit, LimitMethods};
use super::options::{self, get, JsResult};
use super::redis::RedisConfig;
use super::shared_options as shared;
use super::sleep::sleep;
use crate::multi_region::MultiRegionRatelimit;
use crate::ratelimit::{Pending, Remaining, Response, Settings};
use crate::transport::FetchTransport;
use js_sys::{Array, Promise};
use std::rc::Rc;
use std::time::Duration;
use wasm_bindgen::prelude::*;

/// The options of `new MultiRegionRatelimit`: those of `Ratelimit` that apply across regions, and
/// `analytics`, which `@upstash/ratelimit`'s class takes (only `false` here: analytics are recorded by
/// `Ratelimit`).
const MULTI_REGION_OPTIONS: [&str; 11] = [
    "redis",
    "limiter",
    "prefix",
    "keys",
    "ephemeralCache",
    "timeout",
    "failMode",
    "dynamicLimits",
    "analytics",
    "cacheScripts",
    "enableTelemetry",
];

/// A limit replicated over several regions: `new MultiRegionRatelimit({ redis: [Redis, ...], limiter,
/// prefix?, keys?, ephemeralCache?, timeout?, failMode?, dynamicLimits? })`.
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
        if js_sys::Array::is_array(&limiter) {
            return Err(type_error(
                CONTEXT,
                "limiter",
                "must be one limiter: several limits decided all or nothing are Ratelimit's (each region would decide them apart)",
                &limiter,
            ));
        }
        let dry_run = get(&config, "dryRun")?;
        if !dry_run.is_undefined() {
            return Err(type_error(
                CONTEXT,
                "dryRun",
                "is Ratelimit's: MultiRegionRatelimit has no dry run",
                &dry_run,
            ));
        }
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
        let (algorithm, cached) = algorithms::read(CONTEXT, &limiter)?;
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
        let key_layout = shared::key_layout(CONTEXT, &config)?;

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
            regions.push(RedisConfig::read(&context, &field, &entry)?.transport(timeout));
        }
        let mut settings = Settings::new(algorithm);
        settings.set_prefix(prefix);
        settings.set_dynamic_limits(dynamic_limits);
        settings.key_layout = key_layout;
        settings.fail_mode = fail_mode;
        settings.cache = cache;
        let limit = MultiRegionRatelimit::from_settings(regions, settings)
            .map_err(|error| to_js_error(CONTEXT, &error))?;
        Ok(Self {
            inner: Rc::new(limit),
        })
    }

    /// `limit(identifier, { rate }?)`: a Promise of `{ success, limit, remaining, reset, pending,
    /// reason? }`, answered by the first region to reply; `pending` merges the regions and never
    /// rejects.
    pub fn limit(&self, identifier: JsValue, options: Option<JsValue>) -> Promise {
        methods::limit(
            "MultiRegionRatelimit.limit",
            &self.inner,
            &identifier,
            options.as_ref(),
        )
    }

    /// `blockUntilReady(identifier, timeout)`: calls `limit` until admitted or `timeout` ms have passed.
    #[wasm_bindgen(js_name = blockUntilReady)]
    pub fn block_until_ready(&self, identifier: JsValue, timeout: JsValue) -> Promise {
        methods::block_until_ready(
            "MultiRegionRatelimit.blockUntilReady",
            self.inner.clone(),
            &identifier,
            &timeout,
        )
    }

    /// `getRemaining(identifier)`: a Promise of `{ remaining, reset, limit }` from the first region to
    /// reply.
    #[wasm_bindgen(js_name = getRemaining)]
    pub fn get_remaining(&self, identifier: JsValue) -> Promise {
        methods::get_remaining(
            "MultiRegionRatelimit.getRemaining",
            self.inner.clone(),
            &identifier,
        )
    }

    /// `resetUsedTokens(identifier)`: a Promise that settles once every region has forgotten the
    /// identifier (rejecting if one could not).
    #[wasm_bindgen(js_name = resetUsedTokens)]
    pub fn reset_used_tokens(&self, identifier: JsValue) -> Promise {
        methods::reset_used_tokens(
            "MultiRegionRatelimit.resetUsedTokens",
            self.inner.clone(),
            &identifier,
        )
    }

    /// `setDynamicLimit({ limit })`: stores `limit` in every region, or removes it for `limit: false`.
    /// Needs `dynamicLimits: true`.
    #[wasm_bindgen(js_name = setDynamicLimit)]
    pub fn set_dynamic_limit(&self, options: JsValue) -> Promise {
        methods::set_dynamic_limit(
            "MultiRegionRatelimit.setDynamicLimit",
            self.inner.clone(),
            &options,
        )
    }

    /// `getDynamicLimit()`: a Promise of `{ dynamicLimit }` from the first region to reply.
    #[wasm_bindgen(js_name = getDynamicLimit)]
    pub fn get_dynamic_limit(&self) -> Promise {
        methods::get_dynamic_limit("MultiRegionRatelimit.getDynamicLimit", self.inner.clone())
    }

    /// `MultiRegionRatelimit.fixedWindow(tokens, window)`.
    #[wasm_bindgen(js_name = fixedWindow)]
    pub fn fixed_window(tokens: JsValue, window: JsValue) -> JsResult<JsValue> {
        algorithms::window(
            "MultiRegionRatelimit.fixedWindow",
            Kind::FixedWindow,
            tokens,
            window,
        )
    }

    /// `MultiRegionRatelimit.slidingWindow(tokens, window)`.
    #[wasm_bindgen(js_name = slidingWindow)]
    pub fn sliding_window(tokens: JsValue, window: JsValue) -> JsResult<JsValue> {
        algorithms::window(
            "MultiRegionRatelimit.slidingWindow",
            Kind::SlidingWindow,
            tokens,
            window,
        )
    }
}

impl JsLimit for MultiRegionRatelimit<FetchTransport> {
    async fn limit(
        &self,
        identifier: &str,
        rate: f64,
    ) -> crate::Result<(Response, Option<Pending>)> {
        let (response, pending) = self.limit_with_pending(identifier, rate).await?;
        Ok((response, Some(pending)))
    }
}

impl LimitMethods for MultiRegionRatelimit<FetchTransport> {
    fn block_until_ready<'a>(
        &'a self,
        identifier: &'a str,
        timeout: Duration,
    ) -> Boxed<'a, JsValue> {
        Box::pin(async move {
            let (response, pending) =
                MultiRegionRatelimit::block_until_ready(self, identifier, 1.0, timeout, sleep)
                    .await?;
            Ok(answers::response_object(
                &response,
                &answers::pending_promise(Some(pending)),
            ))
        })
    }

    fn get_remaining<'a>(&'a self, identifier: &'a str) -> Boxed<'a, Remaining> {
        Box::pin(MultiRegionRatelimit::get_remaining(self, identifier))
    }

    fn reset_used_tokens<'a>(&'a self, identifier: &'a str) -> Boxed<'a, ()> {
        Box::pin(MultiRegionRatelimit::reset_used_tokens(self, identifier))
    }

    fn set_dynamic_limit(&self, limit: Option<u64>) -> Boxed<'_, ()> {
        Box::pin(MultiRegionRatelimit::set_dynamic_limit(self, limit))
    }

    fn dynamic_limit(&self) -> Boxed<'_, Option<u64>> {
        Box::pin(MultiRegionRatelimit::dynamic_limit(self))
    }
}
