//! Protection and analytics for [`Ratelimit`], as `@upstash/ratelimit` offers them with
//! `enableProtection` and `analytics`: the identifier and the request's ip, user agent and country are
//! looked up in the deny list the Upstash console manages (a value found answers `success: false`,
//! [`Reason::DenyList`], without counting anything), and every answer is recorded as an analytics
//! event. Both travel in the decision's own script, through the store's
//! [`ProtectedBackend`](crate::ProtectedBackend); only answers given without the store (the denied-values cache, the ephemeral cache, local counts, the fail mode)
//! record their event in the [`Pending`] work. With [`KeyLayout::Cluster`], both go beside the
//! script instead (`beside.rs`).
//!
//! The order of the answers: a value remembered as denied; then, as without protection, local counts
//! and the ephemeral cache (an identifier it knows is blocked is answered `cacheBlock` without a
//! request, where the peer would ask Redis and answer `denyList`: denied either way); then the store.
//!
//! When both are off, [`Ratelimit::limit`] pays one branch for them, nothing more.

pub mod analytics;
mod beside;
pub mod deny_list;

use super::answer::both;
use super::{Answer, Pending, Ratelimit, Reason, Response};
use crate::backend::{protected, Events, Guard};
use crate::error::{Error, Result};
use crate::identifier::{check_bytes, check_length, MAX_EVENT_BYTES};
use crate::maybe_send::MaybeSendSync;
use analytics::Members;
use deny_list::DeniedValues;
use std::sync::Arc;

/// What a request brings besides its identifier: the values checked against the deny list, and the
/// geo fields recorded with its analytics event (`country`, `city`, `region`, `ip`... as in the peer's
/// `geo`, in the order given).
#[derive(Debug, Clone, Copy, Default)]
pub struct Request<'a> {
    /// The client's IP.
    pub ip: Option<&'a str>,
    /// The client's user agent.
    pub user_agent: Option<&'a str>,
    /// The client's country.
    pub country: Option<&'a str>,
    /// Fields added to the analytics event.
    pub geo: &'a [(&'a str, &'a str)],
}

impl Request<'_> {
    /// The values the deny list is checked for, as the peer: the identifier, then the ip, user agent
    /// and country that are given and not empty.
    pub fn values(&self, identifier: &str) -> Vec<String> {
        [Some(identifier), self.ip, self.user_agent, self.country]
            .into_iter()
            .flatten()
            .filter(|value| !value.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

/// What a protected decision checks and records besides the limit: the values looked up in the deny
/// list (when protection is on) and the written-out members of its analytics event (when analytics is
/// on).
#[derive(Debug, Clone, Copy, Default)]
pub struct Checks<'a> {
    /// The values looked up in the deny list, the identifier first.
    pub values: &'a [String],
    /// The analytics event's member for each outcome.
    pub members: Option<&'a Members>,
}

/// What is told of an analytics event that could not be recorded (see
/// [`Ratelimit::with_event_errors`]).
#[cfg(not(target_arch = "wasm32"))]
type EventErrors = Arc<dyn Fn(&Error) + Send + Sync>;
/// What is told of an analytics event that could not be recorded (see
/// [`Ratelimit::with_event_errors`]).
#[cfg(target_arch = "wasm32")]
type EventErrors = Arc<dyn Fn(&Error)>;

/// What is enabled: the deny list (with the values found in it lately), and analytics, with what is
/// told of an event that could not be recorded.
#[derive(Default)]
pub(super) struct Protection {
    denied: Option<DeniedValues>,
    analytics: bool,
    event_errors: Option<EventErrors>,
}

impl Protection {
    /// Whether decisions go through [`Ratelimit::limit_request_with_pending`].
    pub fn active(&self) -> bool {
        self.analytics || self.denied.is_some()
    }

    /// Whether the deny list is checked.
    pub fn protects(&self) -> bool {
        self.denied.is_some()
    }

    /// The values found in the deny list lately, when it is checked.
    pub fn denied_values(&self) -> Option<&DeniedValues> {
        self.denied.as_ref()
    }

    /// Tells the hook of [`Ratelimit::with_event_errors`], if any, that an event was not recorded.
    pub fn unrecorded(&self, error: &Error) {
        if let Some(hook) = &self.event_errors {
            hook(error);
        }
    }

    /// The answer to values the store `found` in the deny list (`true` for each, in the order of
    /// `values`), which are remembered for a while from `now_ms`.
    pub fn denied_found(&self, values: &[String], found: &[bool], now_ms: u64) -> Answer {
        let index =
            (self.denied.as_ref()).and_then(|denied| denied.remember(values, found, now_ms));
        let value = index.and_then(|index| values.get(index)).cloned();
        Answer {
            denied_value: value,
            ..Answer::of(denied_response())
        }
    }
}

/// The answer to a request whose `value` is in the deny list.
pub(super) fn denied(value: String) -> Answer {
    Answer {
        denied_value: Some(value),
        ..Answer::of(denied_response())
    }
}

/// The guard of a decision: the deny list in `deny_key` checked for the `checks`' values (when
/// protection is on), and their analytics event recorded in `events_key` (when analytics is on).
pub(super) fn guard<'a>(
    deny_key: Option<&'a str>,
    checks: &Checks<'a>,
    events_key: Option<&'a str>,
) -> Guard<'a> {
    Guard {
        deny_list: deny_key.map(|key| (key, checks.values)),
        events: events_key.zip(checks.members).map(|(key, members)| Events {
            key,
            admitted: &members.admitted,
            limited: &members.limited,
        }),
    }
}

/// Protection needs every decision asked of the store, which local counts answer without.
pub(super) fn check_local_counts(protection: bool) -> Result<()> {
    if protection {
        return Err(Error::Unsupported {
            what: "protection (the deny list) with local counts, which answer without Redis".into(),
        });
    }
    Ok(())
}

/// The answer to a request with a value in the deny list, as the peer gives it.
fn denied_response() -> Response {
    Response {
        success: false,
        limit: 0,
        remaining: 0.0,
        reset: 0,
        retry_after: None,
        reason: Some(Reason::DenyList),
        limits: Vec::new(),
        live: None,
    }
}

impl Ratelimit {
    /// The same limit with protection on or off: when on, the identifier and the request's ip, user
    /// agent and country ([`Ratelimit::limit_request`]) are looked up in the deny list
    /// (`<prefix>:denyList:all`, which the Upstash console and `@upstash/ratelimit` share); a value
    /// found is denied with [`Reason::DenyList`] without counting anything (with
    /// [`KeyLayout::Cluster`], counted, as `@upstash/ratelimit` counts it), and remembered for a minute
    /// (up to [`deny_list::DENIED_VALUES_CACHED`] values). The store must support it (Redis does); local
    /// counts cannot have it.
    pub fn with_protection(mut self, enabled: bool) -> Result<Self> {
        if enabled {
            self.check_one_limit("protection")?;
        }
        let mut protection = std::mem::take(&mut self.protection);
        protection.denied = enabled.then(DeniedValues::new);
        Self::check_local(&self.local, &self.local, &protection)?;
        self.protection = protection;
        Ok(self)
    }

    /// The same limit recording every answer as an analytics event of `@upstash/core-analytics`
    /// (`<prefix>:events:<hour>`), or not. The store must support it (Redis does). With
    /// [`KeyLayout::Cluster`], the event is written in the [`Pending`] work.
    pub fn with_analytics(mut self, enabled: bool) -> Self {
        self.protection.analytics = enabled;
        self
    }

    /// The same limit calling `hook` with the error of each analytics event that could not be
    /// recorded (a key of another type, such as the hash `@upstash/ratelimit` before 1.1.2 left under
    /// `<prefix>:events:<hour>`, is [`Error::CorruptState`] naming it; an outage is its own error). A
    /// side effect never decides: the answer stays what the limit decided, and the [`Pending`] work
    /// never fails. Without a hook, such an event is lost, as the peer loses it (with a warning).
    pub fn with_event_errors(mut self, hook: impl Fn(&Error) + MaybeSendSync + 'static) -> Self {
        self.protection.event_errors = Some(Arc::new(hook));
        self
    }

    /// How many values found in the deny list are remembered now.
    pub fn cached_denied_values(&self) -> usize {
        self.protection.denied.as_ref().map_or(0, DeniedValues::len)
    }

    /// [`Ratelimit::limit`] for a request with `request`'s values and geo fields; the value found in the
    /// deny list comes with the answer. Awaits the [`Pending`] work.
    pub async fn limit_request(
        &self,
        identifier: &str,
        rate: f64,
        request: &Request<'_>,
    ) -> Result<(Response, Option<String>)> {
        let answer = self
            .limit_request_with_pending(identifier, rate, request)
            .await?;
        if let Some(pending) = answer.pending {
            pending.await;
        }
        Ok((answer.response, answer.denied_value))
    }

    /// [`Ratelimit::limit_request`], returning the work left after the answer instead of awaiting it.
    pub async fn limit_request_with_pending(
        &self,
        identifier: &str,
        rate: f64,
        request: &Request<'_>,
    ) -> Result<Answer> {
        for (field, value) in [
            ("ip", request.ip),
            ("userAgent", request.user_agent),
            ("country", request.country),
        ] {
            check_length(field, value.unwrap_or_default())?;
        }
        let values = if self.protection.protects() {
            request.values(identifier)
        } else {
            Vec::new()
        };
        let members = (self.protection.analytics).then(|| Members::new(identifier, request.geo));
        let mut answer = self
            .limit_prepared(identifier, rate, values, members)
            .await?;
        if let (Some(value), true) = (&answer.denied_value, self.records_events()) {
            let member = analytics::member(value, analytics::Outcome::Denied, request.geo);
            self.record_denied(&mut answer, member);
        }
        Ok(answer)
    }

    /// Whether answers are recorded as analytics events.
    pub(crate) fn records_events(&self) -> bool {
        self.protection.analytics
    }

    /// Adds the recording of `member`, the event of the value `answer` found in the deny list, to its
    /// pending work.
    pub(crate) fn record_denied(&self, answer: &mut Answer, member: String) {
        let key = analytics::events_key(
            self.settings.prefix(),
            self.settings.clock.now_micros() / 1_000,
        );
        answer.pending = both(answer.pending.take(), Some(self.record(key, member)));
    }

    /// The work adding `member` to the events `key`. An event that cannot be written is told to the
    /// hook of [`Ratelimit::with_event_errors`]; the work itself never fails.
    pub(super) fn record(&self, key: String, member: String) -> Pending {
        let backend = Arc::clone(&self.backend);
        let hook = self.protection.event_errors.clone();
        Box::pin(async move {
            let recorded = match protected(&*backend) {
                Ok(protected) => protected.record_event(&key, &member).await,
                Err(error) => Err(error),
            };
            if let (Err(error), Some(hook)) = (recorded, hook) {
                hook(&error);
            }
        })
    }

    /// The protected decision of `rate` on `identifier`, with the deny list checked for `values`
    /// (when protection is on) and the analytics events written out in `members` (when analytics is
    /// on). The event of a value found in the deny list is left to the caller
    /// ([`Ratelimit::record_denied`]), which writes it only then.
    pub(crate) async fn limit_prepared(
        &self,
        identifier: &str,
        rate: f64,
        values: Vec<String>,
        members: Option<Members>,
    ) -> Result<Answer> {
        let key = self.key(identifier)?;
        let cost = self.settings.cost(rate)?;
        if let Some(members) = &members {
            check_bytes("analytics event", &members.admitted, MAX_EVENT_BYTES)?;
            check_bytes("analytics event", &members.limited, MAX_EVENT_BYTES)?;
        }
        let now = self.settings.clock.now_micros();
        let checks = Checks {
            values: &values,
            members: members.as_ref(),
        };
        self.decide(&key, cost, now, checks).await
    }
}
