//! Protection — the deny list of `@upstash/ratelimit` and the analytics events of
//! `@upstash/core-analytics` — in a store: [`Guard`], what a decision checks and records with them
//! ([`With::Guard`](super::With::Guard)), and [`ProtectedBackend`], the rest of what a store that keeps
//! them offers, reached through [`Backend::protected`].

use super::Backend;
use crate::error::{Error, Result};
use crate::maybe_send::BoxFuture;

/// What a store that keeps deny lists and analytics events beside the limits (Redis, in the keys of
/// `@upstash/ratelimit`) offers besides its decisions, which take [`Guard`]s: a guarded decision looks
/// the guard's values up in its deny list first (nothing is counted when one is found:
/// [`Verdict::Denied`](super::Verdict::Denied)) and records its analytics event, in the same atomic
/// step.
pub trait ProtectedBackend: Backend {
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
