//! `Ratelimit`: the limiter as JavaScript sees it, mirroring `@upstash/ratelimit`; every method of the
//! class is here.

use super::algorithms::{self, Kind};
use super::answers;
use super::errors::{to_js_error, type_error};
use super::in_place::InPlace;
use super::ip_deny_list;
use super::limit_methods::{self as methods, Boxed, JsLimit, LimitMethods};
use super::limits::Limits;
use super::options::{self, get, JsResult};
use super::promise::promise;
use super::protection;
use super::redis::RedisConfig;
use super::shared_options::{self as shared, CacheOption};
use super::sleep::sleep;
use crate::backend::{Backend, MemoryBackend};
use crate::js::globals;
use crate::ratelimit::{
    Configure, FailMode, Lease, Pending, Ratelimit, Remaining, Response, Settings,
    DEFAULT_CACHE_SIZE,
};
use crate::redis::RedisBackend;
use crate::transport::FetchTransport;
use js_sys::Promise;
use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use wasm_bindgen::prelude::*;

/// The options of `new Ratelimit`: its own, and those of `@upstash/ratelimit` it shares.
/// `cacheScripts` has no effect in `@upstash/ratelimit` 2.x either (scripts always run by hash), and
/// `enableTelemetry` none here (edgelimit sends no telemetry), so both values of each are honoured.
const RATELIMIT_OPTIONS: [&str; 16] = [
    "redis",
    "limiter",
    "prefix",
    "keys",
    "ephemeralCache",
    "timeout",
    "failMode",
    "dynamicLimits",
    "analytics",
    "enableProtection",
    "denyListThreshold",
    "cacheScripts",
    "enableTelemetry",
    "lease",
    "localClock",
    "dryRun",
];

/// A rate limit: `new Ratelimit({ redis?, limiter, prefix?, keys?, ephemeralCache?, timeout?,
/// failMode?, dynamicLimits?, enableProtection?, analytics?, denyListThreshold?, lease?, localClock?,
/// dryRun? })`; `limiter` is one limiter or several decided all or nothing, and `dryRun` runs the
/// limits dry (`limits.rs`); `lease: { tokens, ttl }` leases units of hot identifiers (see
/// `ratelimit::lease`); Redis's clock times the decisions unless `localClock: true`.
#[wasm_bindgen(js_name = Ratelimit)]
pub struct JsRatelimit {
    inner: Rc<Ratelimit>,
    /// Protection and analytics, read once: `limit` takes the plain path when both are off.
    protection: protection::ProtectionOptions,
    /// The memory of `limit()` without options (`in_place.rs`), when it takes its identifier in place.
    in_place: Option<Box<InPlace>>,
    /// Whether decisions are answered in one crossing (`limitAtOnce`): a store in this process, and
    /// nothing a decision would leave to do after its answer.
    answers_at_once: bool,
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
        let limits = Limits::read(CONTEXT, &limiter, &config)?;
        let (algorithm, cached) = (limits.first, limits.cached);
        let prefix = shared::prefix(CONTEXT, &config)?;
        let key_layout = shared::key_layout(CONTEXT, &config)?;
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
        if fail_mode == FailMode::Closed && limits.every_limit_runs_dry() {
            return Err(type_error(
                CONTEXT,
                "failMode",
                "cannot be \"closed\" when every limit runs dry (`dryRun`): a dry run admits every request",
                &get(&config, "failMode")?,
            ));
        }
        if limits.several() {
            refuse_beside_several(CONTEXT, &config)?;
        }
        let dynamic_limits = shared::flag(CONTEXT, &config, "dynamicLimits")?;
        if cached && dynamic_limits {
            // The peer's warning, word for word: both count alike in a mixed fleet.
            let _ = globals::console_warn(
                "Warning: Dynamic limits are not yet supported for cachedFixedWindow algorithm. The dynamicLimits option will be ignored.",
            );
        }

        let redis = get(&config, "redis")?;
        let server = if redis.is_undefined() {
            None
        } else {
            Some(RedisConfig::read(CONTEXT, "redis", &redis)?.transport(timeout))
        };
        let in_memory = server.is_none();
        // Redis's clock times the decisions unless `localClock`, or cachedFixedWindow, whose local
        // counts count in windows of this instance's clock.
        let redis_clock = !(cached || shared::flag(CONTEXT, &config, "localClock")?);
        let backend: Arc<dyn Backend> = match &server {
            None => Arc::new(MemoryBackend::new()),
            Some(transport) => redis_backend(transport.clone(), redis_clock),
        };
        let protection = protection::ProtectionOptions::read(CONTEXT, &config, server, cached)?;
        let mut settings = Settings::new(algorithm);
        settings.set_prefix(prefix);
        settings.set_dynamic_limits(dynamic_limits);
        settings.key_layout = key_layout;
        settings.fail_mode = fail_mode;
        let local_counts = match cache {
            CacheOption::Size(max) if cached => Some(max),
            _ => cached.then_some(DEFAULT_CACHE_SIZE),
        };
        settings.cache = cache.build();
        let mut limiter = limits.apply(CONTEXT, Ratelimit::from_settings(backend, settings))?;
        // A cached fixed window counts in the cache's stead, as many identifiers as it would hold.
        if let Some(max_entries) = local_counts {
            limiter = with_local_counts(CONTEXT, limiter, max_entries)?;
        }
        let lease = get(&config, "lease")?;
        if !lease.is_undefined() {
            limiter = with_lease(CONTEXT, limiter, &lease, dynamic_limits)?;
        }
        if protection.active() {
            limiter = protection
                .apply(limiter)
                .map_err(|error| to_js_error(CONTEXT, &error))?;
        }
        let answers_at_once = in_memory && limiter.answers_at_once();
        // Protection and analytics read the identifier from JavaScript (`protection::limit`).
        let in_place = (!protection.active()).then(|| InPlace::new(&limiter));
        Ok(JsRatelimit {
            inner: Rc::new(limiter),
            protection,
            in_place,
            answers_at_once,
        })
    }

    /// `limit(identifier, { rate }?)`: a Promise of `{ success, limit, remaining, reset, pending, reason? }`.
    /// Bad input rejects the Promise with a `TypeError` or `RangeError`. With protection or analytics,
    /// `protection::limit` answers instead.
    pub fn limit(&self, identifier: JsValue, options: Option<JsValue>) -> Promise {
        if self.protection.active() {
            let options = options.unwrap_or(JsValue::UNDEFINED);
            return protection::limit(&self.inner, &self.protection, &identifier, &options);
        }
        methods::limit(
            "Ratelimit.limit",
            &self.inner,
            &identifier,
            options.as_ref(),
        )
    }

    /// `blockUntilReady(identifier, timeout)`: calls `limit` until admitted or `timeout` ms have passed,
    /// waiting exactly as long as the limit says; answers the denial at once if waiting cannot help.
    #[wasm_bindgen(js_name = blockUntilReady)]
    pub fn block_until_ready(&self, identifier: JsValue, timeout: JsValue) -> Promise {
        methods::block_until_ready(
            "Ratelimit.blockUntilReady",
            self.inner.clone(),
            &identifier,
            &timeout,
        )
    }

    /// `setDynamicLimit({ limit })`: stores `limit` (a whole number) as the limit of every identifier
    /// under this prefix, or removes it for `limit: false`. Needs `dynamicLimits: true`.
    #[wasm_bindgen(js_name = setDynamicLimit)]
    pub fn set_dynamic_limit(&self, options: JsValue) -> Promise {
        methods::set_dynamic_limit("Ratelimit.setDynamicLimit", self.inner.clone(), &options)
    }

    /// `getDynamicLimit()`: a Promise of `{ dynamicLimit }`, the stored limit or `null`.
    #[wasm_bindgen(js_name = getDynamicLimit)]
    pub fn get_dynamic_limit(&self) -> Promise {
        methods::get_dynamic_limit("Ratelimit.getDynamicLimit", self.inner.clone())
    }

    /// `getRemaining(identifier)`: a Promise of `{ remaining, reset, limit }`.
    #[wasm_bindgen(js_name = getRemaining)]
    pub fn get_remaining(&self, identifier: JsValue) -> Promise {
        methods::get_remaining("Ratelimit.getRemaining", self.inner.clone(), &identifier)
    }

    /// `resetUsedTokens(identifier)`: a Promise that settles once the identifier's state is gone.
    #[wasm_bindgen(js_name = resetUsedTokens)]
    pub fn reset_used_tokens(&self, identifier: JsValue) -> Promise {
        methods::reset_used_tokens("Ratelimit.resetUsedTokens", self.inner.clone(), &identifier)
    }

    /// `returnLeases()`: ends every lease this instance holds (`lease`); a Promise, never rejected,
    /// that settles once their unused units are given back to Redis (hand it to `waitUntil`).
    #[wasm_bindgen(js_name = returnLeases)]
    pub fn return_leases(&self) -> Promise {
        let work = self.inner.return_leases();
        promise(Box::pin(async move {
            work.await;
            Ok(JsValue::UNDEFINED)
        }))
    }
}

// The options few limits use are read and applied outside the constructor's body: V8 compiles a
// WebAssembly function whole the first time it runs, so a limit without them compiles none of it.

/// Refuses `lease`, `enableProtection` and `analytics` in `config`, which do not go with a set.
#[inline(never)]
fn refuse_beside_several(context: &str, config: &JsValue) -> JsResult<()> {
    for option in ["lease", "enableProtection", "analytics"] {
        let value = get(config, option)?;
        if !(value.is_undefined() || value == JsValue::FALSE) {
            let rule = "cannot go with several limits in `limiter`";
            return Err(type_error(context, option, rule, &value));
        }
    }
    Ok(())
}

/// `limiter` answering from local counts of `max_entries` identifiers (`cachedFixedWindow`).
#[inline(never)]
fn with_local_counts(context: &str, limiter: Ratelimit, max_entries: usize) -> JsResult<Ratelimit> {
    limiter
        .with_local_counts(max_entries)
        .map_err(|error| to_js_error(context, &error))
}

/// `limiter` leasing as `lease: { tokens, ttl }` says, which cannot go with `dynamicLimits`.
#[inline(never)]
fn with_lease(
    context: &str,
    limiter: Ratelimit,
    lease: &JsValue,
    dynamic_limits: bool,
) -> JsResult<Ratelimit> {
    if dynamic_limits {
        let rule = "cannot go with `dynamicLimits`: a lease could not obey a pause at once";
        return Err(type_error(context, "lease", rule, lease));
    }
    let tokens = options::field(context, "lease", lease, false, "tokens")?;
    let ttl = get(lease, "ttl")?;
    let lease = Lease {
        tokens: options::count(context, "lease.tokens", &tokens, false)?,
        ttl: options::duration(context, "lease.ttl", &ttl)?,
    };
    limiter
        .with_lease(lease)
        .map_err(|error| to_js_error(context, &error))
}

#[wasm_bindgen(js_class = Ratelimit)]
impl JsRatelimit {
    /// `Ratelimit.fixedWindow(tokens, window)`: `tokens` per window, counted in fixed windows.
    #[wasm_bindgen(js_name = fixedWindow)]
    pub fn fixed_window(tokens: JsValue, window: JsValue) -> JsResult<JsValue> {
        algorithms::window("Ratelimit.fixedWindow", Kind::FixedWindow, tokens, window)
    }

    /// `Ratelimit.cachedFixedWindow(tokens, window)`: a fixed window answered from local counts once
    /// known, the write to Redis left in `pending`.
    #[wasm_bindgen(js_name = cachedFixedWindow)]
    pub fn cached_fixed_window(tokens: JsValue, window: JsValue) -> JsResult<JsValue> {
        algorithms::window(
            "Ratelimit.cachedFixedWindow",
            Kind::CachedFixedWindow,
            tokens,
            window,
        )
    }

    /// `Ratelimit.slidingWindow(tokens, window)`: `tokens` per window, weighting the previous window.
    #[wasm_bindgen(js_name = slidingWindow)]
    pub fn sliding_window(tokens: JsValue, window: JsValue) -> JsResult<JsValue> {
        algorithms::window(
            "Ratelimit.slidingWindow",
            Kind::SlidingWindow,
            tokens,
            window,
        )
    }

    /// `Ratelimit.tokenBucket(refillRate, interval, maxTokens)`.
    #[wasm_bindgen(js_name = tokenBucket)]
    pub fn token_bucket(
        refill_rate: JsValue,
        interval: JsValue,
        max_tokens: JsValue,
    ) -> JsResult<JsValue> {
        algorithms::make(
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
        algorithms::make(
            CONTEXT,
            Kind::Gcra,
            ["limit", "period", "burst"],
            [limit, period, burst],
        )
    }
}

#[wasm_bindgen(js_class = Ratelimit)]
impl JsRatelimit {
    /// `updateIpDenyList(list, { ttl? }?)`: replaces the IP deny list, with the keys and the transaction
    /// of `@upstash/ratelimit`, by `list` — an array of lines, or a URL (a string or a `URL`) whose text
    /// is fetched with the Redis `fetch` — each line an IP, optionally followed by its score (kept when
    /// at least `denyListThreshold`). Valid for `ttl` ms, or until the next 2 AM UTC. A Promise of how
    /// many IPs the list holds.
    #[wasm_bindgen(js_name = updateIpDenyList)]
    pub fn update_ip_deny_list(&self, list: JsValue, options: JsValue) -> Promise {
        const CONTEXT: &str = "Ratelimit.updateIpDenyList";
        let checked = self
            .protection
            .deny_list(CONTEXT)
            .and_then(|(server, threshold)| {
                let ttl = options::field(CONTEXT, "options", &options, true, "ttl")?;
                let ttl = if ttl.is_undefined() {
                    None
                } else {
                    Some(options::count(CONTEXT, "ttl", &ttl, false)?)
                };
                let source = ip_deny_list::Source::read(&list)?;
                Ok((server.clone(), threshold, source, ttl))
            });
        let prefix = self.inner.prefix().to_owned();
        promise(Box::pin(async move {
            let (server, threshold, source, ttl) = checked?;
            ip_deny_list::update(server, prefix, threshold, source, ttl).await
        }))
    }

    /// `disableIpDenyList()`: removes the IP deny list from the deny list, as `@upstash/ratelimit`'s.
    #[wasm_bindgen(js_name = disableIpDenyList)]
    pub fn disable_ip_deny_list(&self) -> Promise {
        let server = self.protection.deny_list("Ratelimit.disableIpDenyList");
        let server = server.map(|(server, _)| server.clone());
        let prefix = self.inner.prefix().to_owned();
        promise(Box::pin(async move {
            ip_deny_list::disable(server?, prefix).await
        }))
    }
}

impl JsRatelimit {
    /// The limit and the memory of `limit()` without options, when it takes its identifier in place.
    pub(super) fn in_place(&self) -> Option<(&Rc<Ratelimit>, &InPlace)> {
        let in_place = self.in_place.as_deref()?;
        Some((&self.inner, in_place))
    }

    /// [`JsRatelimit::in_place`], when decisions are answered in one crossing.
    pub(super) fn answering_at_once(&self) -> Option<(&Ratelimit, &InPlace)> {
        let (limit, in_place) = self.in_place().filter(|_| self.answers_at_once)?;
        Some((limit, in_place))
    }
}

impl JsLimit for Ratelimit {
    fn limit(
        &self,
        identifier: &str,
        rate: f64,
    ) -> impl Future<Output = crate::Result<(Response, Option<Pending>)>> {
        self.limit_with_pending(identifier, rate)
    }
}

impl LimitMethods for Ratelimit {
    fn block_until_ready<'a>(
        &'a self,
        identifier: &'a str,
        timeout: Duration,
    ) -> Boxed<'a, JsValue> {
        Box::pin(async move {
            let response =
                Ratelimit::block_until_ready(self, identifier, 1.0, timeout, sleep).await?;
            Ok(answers::response_object(&response, &JsValue::UNDEFINED))
        })
    }

    fn get_remaining<'a>(&'a self, identifier: &'a str) -> Boxed<'a, Remaining> {
        Box::pin(Ratelimit::get_remaining(self, identifier))
    }

    fn reset_used_tokens<'a>(&'a self, identifier: &'a str) -> Boxed<'a, ()> {
        Box::pin(Ratelimit::reset_used_tokens(self, identifier))
    }

    fn set_dynamic_limit(&self, limit: Option<u64>) -> Boxed<'_, ()> {
        Box::pin(Ratelimit::set_dynamic_limit(self, limit))
    }

    fn dynamic_limit(&self) -> Boxed<'_, Option<u64>> {
        Box::pin(Ratelimit::dynamic_limit(self))
    }
}

/// The Redis store over `transport`, shared as every store is (`Arc`). Its coalesced requests are
/// JavaScript futures, neither `Send` nor `Sync`, which is moot where there is one thread.
#[allow(clippy::arc_with_non_send_sync)]
fn redis_backend(transport: FetchTransport, redis_clock: bool) -> Arc<dyn Backend> {
    Arc::new(RedisBackend::new(transport).with_redis_time(redis_clock))
}
