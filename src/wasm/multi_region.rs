//! `MultiRegionRatelimit`: one limit over several Redis databases, as JavaScript sees it, mirroring
//! `@upstash/ratelimit`'s class of that name.

use super::errors::{range_error, to_js_error, type_error};
use super::limit_options::{self, MAX_TIMER_MS};
use super::limiter::{self, Kind};
use super::options::{self, get, JsResult};
use super::promise::promise;
use super::redis::RedisConfig;
use super::sleep::sleep;
use super::sys;
use crate::multi_region::MultiRegionRatelimit;
use crate::ratelimit::Pending;
use crate::transport::FetchTransport;
use js_sys::{Array, Object, Promise, Reflect};
use std::rc::Rc;
use std::time::Duration;
use wasm_bindgen::prelude::*;

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
        let (algorithm, cached) = limiter::read(CONTEXT, &limiter)?;
        if cached {
            return Err(type_error(
                CONTEXT,
                "limiter",
                "must not be a cachedFixedWindow, which counts in one instance only",
                &get(&limiter, "algorithm")?,
            ));
        }
        let prefix = limit_options::prefix(CONTEXT, &config)?;
        let cache = limit_options::ephemeral_cache(CONTEXT, &config)?;
        let timeout = limit_options::timeout(CONTEXT, &config)?;
        let fail_mode = limit_options::fail_mode(CONTEXT, &config)?;
        let dynamic_limits = limit_options::dynamic_limits(CONTEXT, &config)?;

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
        let arguments = limit_options::limit_arguments(CONTEXT, &identifier, &options);
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
            Ok(limit_options::response_object(&response, &settle(pending)))
        }))
    }

    /// `blockUntilReady(identifier, timeout)`: calls `limit` until admitted or `timeout` ms have passed.
    #[wasm_bindgen(js_name = blockUntilReady)]
    pub fn block_until_ready(&self, identifier: JsValue, timeout: JsValue) -> Promise {
        const CONTEXT: &str = "MultiRegionRatelimit.blockUntilReady";
        let arguments = limit_options::identifier(CONTEXT, &identifier).and_then(|identifier| {
            let millis = options::milliseconds(
                CONTEXT,
                "timeout",
                &timeout,
                |millis| millis > 0.0 && millis <= MAX_TIMER_MS,
                "must be a positive number of milliseconds up to 2^31 - 1",
            )?;
            Ok((identifier, Duration::from_micros((millis * 1_000.0) as u64)))
        });
        let limiter = Rc::clone(&self.inner);
        promise(Box::pin(async move {
            let (identifier, timeout) = arguments?;
            let (response, pending) = limiter
                .block_until_ready(&identifier, 1.0, timeout, sleep)
                .await
                .map_err(|error| to_js_error(CONTEXT, &error))?;
            Ok(limit_options::response_object(&response, &settle(pending)))
        }))
    }

    /// `getRemaining(identifier)`: a Promise of `{ remaining, reset, limit }` from the first region to
    /// reply.
    #[wasm_bindgen(js_name = getRemaining)]
    pub fn get_remaining(&self, identifier: JsValue) -> Promise {
        const CONTEXT: &str = "MultiRegionRatelimit.getRemaining";
        let identifier = limit_options::identifier(CONTEXT, &identifier);
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

    /// `resetUsedTokens(identifier)`: a Promise that settles once every region has forgotten the
    /// identifier (rejecting if one could not).
    #[wasm_bindgen(js_name = resetUsedTokens)]
    pub fn reset_used_tokens(&self, identifier: JsValue) -> Promise {
        const CONTEXT: &str = "MultiRegionRatelimit.resetUsedTokens";
        let identifier = limit_options::identifier(CONTEXT, &identifier);
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

    /// `getDynamicLimit()`: a Promise of `{ dynamicLimit }` from the first region to reply.
    #[wasm_bindgen(js_name = getDynamicLimit)]
    pub fn get_dynamic_limit(&self) -> Promise {
        let limiter = Rc::clone(&self.inner);
        promise(Box::pin(async move {
            let limit = limiter
                .dynamic_limit()
                .await
                .map_err(|error| to_js_error("MultiRegionRatelimit.getDynamicLimit", &error))?;
            let value = limit.map_or(JsValue::NULL, |limit| (limit as f64).into());
            let object = Object::new();
            let _ = Reflect::set(&object, &"dynamicLimit".into(), &value);
            Ok(object.into())
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

/// The merge as a Promise that starts now and settles (never rejects) when it is done.
fn settle(pending: Pending) -> JsValue {
    promise(Box::pin(async move {
        pending.await;
        Ok(JsValue::UNDEFINED)
    }))
    .into()
}
