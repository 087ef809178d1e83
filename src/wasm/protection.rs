//! Protection and analytics as JavaScript sees them: the options `enableProtection`, `analytics` and
//! `denyListThreshold` of `new Ratelimit`, the `ip`, `userAgent`, `country` and geo fields (`geo`, `cf`,
//! or a `request` carrying them) of `limit`, and `deniedValue` in its answer.
//!
//! `limit` takes this path only when one of the two is on; otherwise nothing here runs. The analytics
//! events are written by `JSON.stringify` (`src/js/analytics.js`), in one call, so that they are the
//! bytes `@upstash/core-analytics` writes whatever geo object a runtime hands over.

use super::answers::{pending_promise, response_object};
use super::arguments::{limit_arguments, limit_error};
use super::errors::{range_error, type_error};
use super::options::{self, get, JsResult};
use super::promise::promise;
use crate::js::{analytics, globals};
use crate::ratelimit::analytics::Members;
use crate::ratelimit::{Ratelimit, Request};
use crate::transport::FetchTransport;
use js_sys::{Promise, Reflect};
use std::rc::Rc;
use wasm_bindgen::prelude::*;

/// The range of `denyListThreshold`, the peer's.
const THRESHOLDS: std::ops::RangeInclusive<f64> = 1.0..=8.0;

/// The threshold unless told otherwise, the peer's.
const DEFAULT_THRESHOLD: f64 = 6.0;

/// What `new Ratelimit` enabled, and the transport to its `redis` for the IP deny list.
pub struct ProtectionOptions {
    protection: bool,
    analytics: bool,
    threshold: f64,
    server: Option<FetchTransport>,
}

impl ProtectionOptions {
    /// Reads `enableProtection`, `analytics` and `denyListThreshold` from `config`; both features need
    /// `redis` (`server`, the transport to it), and protection cannot go with `cachedFixedWindow`
    /// (`cached`), which answers locally.
    pub fn read(
        context: &str,
        config: &JsValue,
        server: Option<FetchTransport>,
        cached: bool,
    ) -> JsResult<Self> {
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
                let _ = globals::console_warn(&message);
            }))
    }
}

/// `limit(identifier, { rate?, ip?, userAgent?, country?, geo?, cf?, request? })` with protection or
/// analytics on: the answer carries `deniedValue` when `reason` is `"denyList"`.
pub fn limit(
    limiter: &Rc<Ratelimit>,
    enabled: &ProtectionOptions,
    identifier: &JsValue,
    options: &JsValue,
) -> Promise {
    const CONTEXT: &str = "Ratelimit.limit";
    let present = (!options.is_undefined()).then_some(options);
    let arguments = limit_arguments(CONTEXT, identifier, present).and_then(|(identifier, rate)| {
        let (values, members) = prepare(enabled, &identifier, options)?;
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
            if let Ok(member) = analytics::denied_event(value, &options) {
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
    enabled: &ProtectionOptions,
    identifier: &str,
    options: &JsValue,
) -> JsResult<(Vec<String>, Option<Members>)> {
    const CONTEXT: &str = "Ratelimit.limit";
    let values = if enabled.protection {
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
            if text.len() > crate::identifier::MAX_IDENTIFIER_BYTES {
                let reason = format!(
                    "must be at most {} bytes of UTF-8",
                    crate::identifier::MAX_IDENTIFIER_BYTES
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
    if !enabled.analytics {
        return Ok((values, None));
    }
    let events = analytics::analytics_events(identifier, options).map_err(|error| {
        let reason = [
            "must be JSON-serialisable for analytics: ",
            &globals::string(&error),
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

impl ProtectionOptions {
    /// The transport to Redis and the threshold of `denyListThreshold`, or a `TypeError` for the
    /// in-memory store, which has no deny list.
    pub fn deny_list(&self, context: &str) -> JsResult<(&FetchTransport, f64)> {
        let server = self.server.as_ref().ok_or_else(|| {
            let text = "must be given to `new Ratelimit`: the deny list lives in Redis";
            type_error(context, "redis", text, &JsValue::UNDEFINED)
        })?;
        Ok((server, self.threshold))
    }
}
