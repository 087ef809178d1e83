//! [`Guard`]: what a decision checks and records besides the limit — the deny list of
//! `@upstash/ratelimit` and the analytics events of `@upstash/core-analytics` — and [`Guarded`], its
//! outcome.

use super::Outcome;
use crate::error::Error;

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
