//! [`ProtectedBackend`]: what a store offers besides the limit for protection — the deny list of
//! `@upstash/ratelimit` and the analytics events of `@upstash/core-analytics` — reached through
//! [`Backend::protected`]; [`Guard`], what a decision checks and records with them, and [`Guarded`],
//! its outcome.

use super::{Backend, Outcome};
use crate::algorithm::{Algorithm, Cost};
use crate::error::{Error, Result};
use crate::maybe_send::BoxFuture;

/// A store that keeps deny lists and analytics events beside the limits (Redis, in the keys of
/// `@upstash/ratelimit`).
pub trait ProtectedBackend: Backend {
    /// [`Backend::decide`], after looking the guard's values up in its deny list (nothing is counted
    /// when one is found) and recording its analytics event, in the same atomic step.
    fn decide_guarded<'a>(
        &'a self,
        key: &'a str,
        cost: Cost,
        params: Algorithm,
        limit_key: Option<&'a str>,
        guard: Guard<'a>,
    ) -> BoxFuture<'a, Result<Guarded>>;

    /// Adds 1 to `member` in the sorted set `key` (an analytics event of an answer given without a
    /// decision of the store).
    fn record_event<'a>(&'a self, key: &'a str, member: &'a str) -> BoxFuture<'a, Result<()>>;

    /// Which of `values` the set `key` holds (`true` for each, in order): the deny-list check made
    /// beside the decision where the decision's script cannot reach the set (a Redis Cluster).
    fn find_denied<'a>(
        &'a self,
        key: &'a str,
        values: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<bool>>>;
}

/// `backend`'s deny lists and analytics, or an error saying it has none.
pub(crate) fn protected(backend: &dyn Backend) -> Result<&dyn ProtectedBackend> {
    backend.protected().ok_or_else(|| Error::Unsupported {
        what: format!(
            "deny lists and analytics in the {} backend",
            backend.backend_name()
        ),
    })
}

/// The deny-list check and the analytics event that travel with one decision.
#[derive(Debug, Clone, Copy)]
pub struct Guard<'a> {
    /// The set of denied values (`<prefix>:denyList:all`) and the values to look up in it (the
    /// identifier first, then the request's ip, user agent, country), when protection is on.
    pub deny_list: Option<(&'a str, &'a [String])>,
    /// The events to record, when analytics is on.
    pub events: Option<Events<'a>>,
}

/// One decision's analytics event: the sorted set of the hour and the member to add, one per outcome
/// of the limit (a value found in the deny list records nothing: the caller records its event).
#[derive(Debug, Clone, Copy)]
pub struct Events<'a> {
    /// `<prefix>:events:<hour in ms>`.
    pub key: &'a str,
    /// The member recorded when the request is admitted.
    pub admitted: &'a str,
    /// The member recorded when the limit denies it.
    pub limited: &'a str,
}

/// What a guarded decision found.
#[derive(Debug, Clone, PartialEq)]
pub enum Guarded {
    /// Values were in the deny list (`true` for each one found, in the order sent); nothing was counted
    /// or recorded.
    Denied(Vec<bool>),
    /// No value was denied: the limit decided.
    Decided(Outcome),
    /// The limit decided, but the analytics event could not be recorded (the error says why): the
    /// decision stands, as a side effect never decides.
    Unrecorded(Outcome, Error),
}
