//! What a limit answers: [`Response`] and [`Remaining`], the [`Reason`] of an answer the algorithm did
//! not give, the [`FailMode`] that answers outages, and the [`Pending`] work left after an answer.
//! Shared by [`Ratelimit`](super::Ratelimit) and the multi-region limit; [`Answer`] and [`Limited`],
//! the whole answer of one decision of [`Ratelimit`](super::Ratelimit), at once or later.

use crate::decision::Decision;
use crate::error::{Error, Result};
use crate::maybe_send::BoxFuture;
use crate::now_or_later::NowOrLater;
use std::time::Duration;

/// Work left after an answer (the backend write of `cachedFixedWindow`, an analytics event, the merge
/// of the regions): drive it to completion, as JavaScript's `waitUntil(pending)` does. It never fails.
/// `Send` natively, not on wasm.
pub type Pending = BoxFuture<'static, ()>;

/// What to answer when the store has an outage (unreachable, timed out, a 5xx, Redis unable to serve:
/// see [`Error::is_outage`]); any other error is returned whatever the fail mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailMode {
    /// Admit the request (`success: true`), as `@upstash/ratelimit` does.
    #[default]
    Open,
    /// Deny the request (`success: false`).
    Closed,
}

/// Why an answer did not come from the backend's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The backend did not reply in time; the fail mode decided.
    Timeout,
    /// The identifier was blocked by the ephemeral cache, without asking the backend.
    CacheBlock,
    /// The backend failed otherwise; the fail mode decided.
    Error,
    /// A value of the request is in the deny list ([`Ratelimit::with_protection`]).
    DenyList,
    /// A limit that runs dry denied the request, which is admitted ([`Response::live`] says what a
    /// live limit would have answered).
    DryRun,
}

impl Reason {
    /// The name `@upstash/ratelimit` uses: `"timeout"`, `"cacheBlock"`, `"error"` or `"denyList"`;
    /// and `"dryRun"`, which it lacks.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Timeout => "timeout",
            Self::CacheBlock => "cacheBlock",
            Self::Error => "error",
            Self::DenyList => "denyList",
            Self::DryRun => "dryRun",
        }
    }
}

/// The answer to [`Ratelimit::limit`].
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// Whether the request may proceed.
    pub success: bool,
    /// The most the limit admits at once (the dynamic limit when one is set).
    pub limit: u64,
    /// What is left after this request.
    pub remaining: f64,
    /// When the limit is next restored, in milliseconds since the Unix epoch.
    pub reset: u64,
    /// How long until the same rate would be admitted if nothing else happens: zero when admitted,
    /// `None` when never, or when the fail mode answered.
    pub retry_after: Option<Duration>,
    /// Set when the answer did not come from the backend's decision, or a limit that runs dry denied.
    pub reason: Option<Reason>,
    /// Each limit's own answer, in order, when several limits decided ([`Ratelimit::with_limit`]);
    /// empty otherwise. The fields above are those of the limit that binds: the first live one that
    /// denied, else the one with the least left.
    pub limits: Vec<LimitResponse>,
    /// What the answer would have been with every limit live, when a limit runs dry
    /// ([`Ratelimit::with_dry_run`]); `None` otherwise.
    pub live: Option<Live>,
}

/// One limit's answer among several ([`Response::limits`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LimitResponse {
    /// Whether this limit admits the request (a limit that runs dry never denies it).
    pub success: bool,
    /// The most this limit admits at once.
    pub limit: u64,
    /// What is left of it after the answer: the request counted if the set admitted it.
    pub remaining: f64,
    /// When it is next restored, in milliseconds since the Unix epoch.
    pub reset: u64,
    /// Whether it runs dry.
    pub dry_run: bool,
}

/// What a limit that runs dry would have answered live ([`Response::live`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Live {
    /// Whether the request would have been admitted.
    pub success: bool,
    /// The limit that would have bound.
    pub limit: u64,
    /// What would have been left of it.
    pub remaining: f64,
    /// When it is next restored, in milliseconds since the Unix epoch.
    pub reset: u64,
    /// Why, when the answer would not have come from the store's decision.
    pub reason: Option<Reason>,
}

impl Live {
    /// The live answer `response` itself.
    pub(crate) fn of(response: &Response) -> Self {
        Self {
            success: response.success,
            limit: response.limit,
            remaining: response.remaining,
            reset: response.reset,
            reason: response.reason,
        }
    }
}

/// The answer to [`Ratelimit::get_remaining`].
#[derive(Debug, Clone, PartialEq)]
pub struct Remaining {
    /// What could be taken now.
    pub remaining: f64,
    /// When the limit is next restored, in milliseconds since the Unix epoch.
    pub reset: u64,
    /// The most the limit admits at once (the dynamic limit when one is set).
    pub limit: u64,
    /// Each limit's own, in order, when several limits decide ([`Ratelimit::with_limit`]); empty
    /// otherwise. The fields above are those of the limit with the least left.
    pub limits: Vec<Remaining>,
}

impl Response {
    /// The answer the store's `decision` gives.
    pub(crate) fn decided(decision: Decision) -> Self {
        Self {
            success: decision.allowed,
            limit: decision.limit,
            remaining: decision.remaining.max(0.0),
            reset: decision.reset,
            retry_after: decision.retry_after,
            reason: None,
            limits: Vec::new(),
            live: None,
        }
    }

    /// The answer of `fail_mode` to the outage `error` at `now_ms`, under a limit of `limit`.
    pub(crate) fn failed(fail_mode: FailMode, limit: u64, error: &Error, now_ms: u64) -> Self {
        Self {
            success: fail_mode == FailMode::Open,
            limit,
            remaining: 0.0,
            reset: now_ms,
            retry_after: None,
            reason: Some(match error {
                Error::Timeout { .. } => Reason::Timeout,
                _ => Reason::Error,
            }),
            limits: Vec::new(),
            live: None,
        }
    }
}

/// `first` then `then`, as one piece of work.
pub(crate) fn both(first: Option<Pending>, then: Option<Pending>) -> Option<Pending> {
    match (first, then) {
        (Some(first), Some(then)) => Some(Box::pin(async move {
            first.await;
            then.await;
        })),
        (first, then) => first.or(then),
    }
}

/// The whole answer of one decision of [`Ratelimit`](super::Ratelimit).
pub struct Answer {
    /// The answer itself.
    pub response: Response,
    /// The value found in the deny list, when [`Reason::DenyList`].
    pub denied_value: Option<String>,
    /// Work left after the answer (an analytics event, the write of local counts, a lease's close).
    pub pending: Option<Pending>,
}

impl Answer {
    /// `response`, with nothing else.
    pub(crate) fn of(response: Response) -> Self {
        Self {
            response,
            denied_value: None,
            pending: None,
        }
    }
}

/// A decision's [`Answer`]: at once ([`NowOrLater::Now`]) when nothing needed the network (local
/// counts, a lease, the ephemeral cache, a store in this process), or later.
pub type Limited<'a> = NowOrLater<'a, Answer>;

impl Limited<'_> {
    /// The response of an answer given at once that leaves no work, as a caller that answers without
    /// a future (the JavaScript package) can take it.
    pub fn settled(&self) -> Option<Result<&Response, &Error>> {
        match self {
            Self::Now(Some(Ok(Answer {
                response,
                pending: None,
                ..
            }))) => Some(Ok(response)),
            Self::Now(Some(Err(error))) => Some(Err(error)),
            Self::Now(_) | Self::Later(_) => None,
        }
    }
}
