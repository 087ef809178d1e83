//! Protection and analytics as JavaScript sees them: the options `enableProtection`, `analytics` and
//! `denyListThreshold` of `new Ratelimit`, the `ip`, `userAgent`, `country` and geo fields (`geo`, `cf`,
//! or a `request` carrying them) of `limit`, `deniedValue` in its answer, and `updateIpDenyList` /
//! `disableIpDenyList`.
//!
//! `limit` takes this path only when one of the two is on; otherwise nothing here runs. The analytics
//! events are written by `JSON.stringify` (`protection.js`), in one call, so that they are the bytes
//! `@upstash/core-analytics` writes whatever geo object a runtime hands over.

use super::errors::{range_error, type_error};
use super::limit_options::{limit_arguments, limit_error, pending_promise, response_object};
use super::options::{self, get, JsResult};
use super::promise::promise;
use super::ratelimit::JsRatelimit;
use crate::ratelimit::analytics::Members;
use crate::ratelimit::{Configure, Ratelimit, Request};
use js_sys::{Array, Promise, Reflect};
use std::rc::Rc;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(module = "/src/wasm/protection.js")]
extern "C" {
    /// The analytics events of a decision: admitted and rate limited.
    #[wasm_bindgen(catch, js_name = analyticsEvents)]
    fn analytics_events(identifier: &str, options: &JsValue) -> Result<Array, JsValue>;

    /// The analytics event of `value` found in the deny list.
    #[wasm_bindgen(catch, js_name = deniedEvent)]
    fn denied_event(value: &str, options: &JsValue) -> Result<String, JsValue>;

    /// Replaces the IP deny list under `prefix` with the IPs of `list` scored at least `threshold`.
    #[wasm_bindgen(js_name = updateIpDenyList)]
    fn update_ip_deny_list(
        server: &JsValue,
        prefix: &str,
        threshold: f64,
        list: &JsValue,
        ttl: &JsValue,
    ) -> Promise;

    /// Removes the IP deny list under `prefix`.
    #[wasm_bindgen(js_name = disableIpDenyList)]
    fn disable_ip_deny_list(server: &JsValue, prefix: &str) -> Promise;
}

/// The range of `denyListThreshold`, the peer's.
const THRESHOLDS: std::ops::RangeInclusive<f64> = 1.0..=8.0;

/// The threshold unless told otherwise, the peer's.
const DEFAULT_THRESHOLD: f64 = 6.0;

/// What `new Ratelimit` enabled, and its `redis` option (a `Redis` or `{ url, token, fetch? }`) for the
/// IP deny list.
pub struct Guards {
    protection: bool,
    analytics: bool,
    threshold: f64,
    server: Option<JsValue>,
}

impl Guards {
    /// Reads `enableProtection`, `analytics` and `denyListThreshold` from `config`; both features need
    /// `redis` (the value of that option), and protection cannot go with `cachedFixedWindow` (`cached`),
    /// which answers locally.
    pub fn read(context: &str, config: &JsValue, redis: &JsValue, cached: bool) -> JsResult<Self> {
        // Checked by the limiter already: `protection.js` reads its `url`, `token` and `fetch` again.
        let server = (!redis.is_undefined()).then(|| redis.clone());
        let redis = server.is_some();
        let flag = |field: &str| -> JsResult<bool> {
            let value = get(config, field)?;
            if !(value.is_undefined() || value.as_bool().is_some()) {
                return Err(type_error(context, field, "must be a boolean", &value));
            }
            if value.as_bool() == Some(true) && !redis {
                return Err(type_error(
                    context,
                    field,
                    "needs `redis`: the deny list and the analytics live in Redis",
                    &value,
                ));
            }
            Ok(value.as_bool() == Some(true))
        };
        let protection = flag("enableProtection")?;
        if protection && cached {
            return Err(type_error(
                context,
                "enableProtection",
                "cannot go with Ratelimit.cachedFixedWindow, which answers without asking Redis",
                &JsValue::TRUE,
            ));
        }
        let analytics = flag("analytics")?;
        let threshold = get(config, "denyListThreshold")?;
        let threshold = if threshold.is_undefined() {
            DEFAULT_THRESHOLD
        } else {
            let value =
                options::number(context, "denyListThreshold", "must be a number", &threshold)?;
            if !THRESHOLDS.contains(&value) {
                return Err(range_error(
                    context,
                    "denyListThreshold",
                    "must be a number from 1 to 8",
                    &threshold,
                ));
            }
            value
        };
        Ok(Self {
            protection,
            analytics,
            threshold,
            server,
        })
    }

    /// Whether `limit` takes the guarded path.
    pub fn active(&self) -> bool {
        self.protection || self.analytics
    }

    /// `limiter` with these settings. An analytics event that cannot be recorded is told on
    /// `console.warn`, as the peer tells it; the answer stays what the limit decided.
    pub fn apply(&self, limiter: Ratelimit) -> crate::Result<Ratelimit> {
        Ok(limiter
            .with_protection(self.protection)?
            .with_analytics(self.analytics)
            .with_event_errors(|error| {
                let message = format!("edgelimit: an analytics event was not recorded: {error}");
                let _ = super::sys::console_warn(&message);
            }))
    }
}

/// `limit(identifier, { rate?, ip?, userAgent?, country?, geo?, cf?, request? })` with protection or
/// analytics on: the answer carries `deniedValue` when `reason` is `"denyList"`. Never inlined, so
/// that the plain `limit` stays as small as without these features.
#[inline(never)]
pub fn limit(
    limiter: &Rc<Ratelimit>,
    guards: &Guards,
    identifier: &JsValue,
    options: &JsValue,
) -> Promise {
    const CONTEXT: &str = "Ratelimit.limit";
    let arguments = limit_arguments(CONTEXT, identifier, options).and_then(|(identifier, rate)| {
        let (values, members) = prepare(guards, &identifier, options)?;
        Ok((identifier, rate, values, members))
    });
    let limiter = Rc::clone(limiter);
    let options = options.clone();
    promise(Box::pin(async move {
        let (identifier, rate, values, members) = arguments?;
        let mut answer = limiter
            .limit_prepared(&identifier, rate, values, members)
            .await
            .map_err(|error| limit_error(CONTEXT, error, rate))?;
        if let (Some(value), true) = (&answer.denied_value, limiter.records_events()) {
            // Written as the events before it were, by the same `JSON.stringify` of the same fields.
            if let Ok(member) = denied_event(value, &options) {
                limiter.record_denied(&mut answer, member);
            }
        }
        let response = response_object(&answer.response, &pending_promise(answer.pending));
        if let Some(value) = answer.denied_value {
            Reflect::set(&response, &"deniedValue".into(), &value.into())?;
        }
        Ok(response)
    }))
}

/// The values to look up in the deny list and the analytics events, from `limit`'s options.
fn prepare(
    guards: &Guards,
    identifier: &str,
    options: &JsValue,
) -> JsResult<(Vec<String>, Option<Members>)> {
    const CONTEXT: &str = "Ratelimit.limit";
    let values = if guards.protection {
        let text = |field: &str| -> JsResult<Option<String>> {
            let value = if options.is_undefined() {
                JsValue::UNDEFINED
            } else {
                get(options, field)?
            };
            if value.is_undefined() || value.is_null() {
                return Ok(None);
            }
            let text = options::string(CONTEXT, field, &value, true)?;
            if text.len() > crate::MAX_IDENTIFIER_BYTES {
                let reason = format!(
                    "must be at most {} bytes of UTF-8",
                    crate::MAX_IDENTIFIER_BYTES
                );
                return Err(range_error(CONTEXT, field, &reason, &value));
            }
            Ok(Some(text))
        };
        let (ip, user_agent, country) = (text("ip")?, text("userAgent")?, text("country")?);
        Request {
            ip: ip.as_deref(),
            user_agent: user_agent.as_deref(),
            country: country.as_deref(),
            geo: &[],
        }
        .values(identifier)
    } else {
        Vec::new()
    };
    if !guards.analytics {
        return Ok((values, None));
    }
    let events = analytics_events(identifier, options).map_err(|error| {
        let reason = [
            "must be JSON-serialisable for analytics: ",
            &super::sys::string(&error),
        ]
        .concat();
        type_error(
            CONTEXT,
            "geo",
            &reason,
            &get(options, "geo").unwrap_or_default(),
        )
    })?;
    let event = |index| events.get(index).as_string().unwrap_or_default();
    let members = Members {
        admitted: event(0),
        limited: event(1),
    };
    Ok((values, Some(members)))
}

#[wasm_bindgen(js_class = Ratelimit)]
impl JsRatelimit {
    /// `updateIpDenyList(list, { ttl? }?)`: replaces the IP deny list, with the keys and the transaction
    /// of `@upstash/ratelimit`, by `list` — an array of lines, or a URL (a string or a `URL`) whose text
    /// is fetched with the Redis `fetch` — each line an IP, optionally followed by its score (kept when
    /// at least `denyListThreshold`). Valid for `ttl` ms, or until the next 2 AM UTC. A Promise of how
    /// many IPs the list holds. Done by `protection.js`: a rare call, which the module need not carry.
    #[wasm_bindgen(js_name = updateIpDenyList)]
    pub fn update_ip_deny_list(&self, list: JsValue, options: JsValue) -> Promise {
        const CONTEXT: &str = "Ratelimit.updateIpDenyList";
        let checked = self.guards.server(CONTEXT).and_then(|server| {
            let ttl = options::field(CONTEXT, "options", &options, true, "ttl")?;
            if !ttl.is_undefined() {
                options::count(CONTEXT, "ttl", &ttl, false)?;
            }
            Ok((server, ttl))
        });
        match checked {
            Ok((server, ttl)) => update_ip_deny_list(
                server,
                self.inner.prefix(),
                self.guards.threshold,
                &list,
                &ttl,
            ),
            Err(error) => Promise::reject(&error),
        }
    }

    /// `disableIpDenyList()`: removes the IP deny list from the deny list, as `@upstash/ratelimit`'s.
    #[wasm_bindgen(js_name = disableIpDenyList)]
    pub fn disable_ip_deny_list(&self) -> Promise {
        match self.guards.server("Ratelimit.disableIpDenyList") {
            Ok(server) => disable_ip_deny_list(server, self.inner.prefix()),
            Err(error) => Promise::reject(&error),
        }
    }
}

impl Guards {
    /// The Redis settings, or a `TypeError` for the in-memory store, which has no deny list.
    fn server(&self, context: &str) -> JsResult<&JsValue> {
        self.server.as_ref().ok_or_else(|| {
            let text = "must be given to `new Ratelimit`: the deny list lives in Redis";
            type_error(context, "redis", text, &JsValue::UNDEFINED)
        })
    }
}
