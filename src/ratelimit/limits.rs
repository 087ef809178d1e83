//! Several limits in one [`Ratelimit`](super::Ratelimit) ("10 per second and 1,000 per day"), and
//! limits that run dry.
//!
//! A limit added with [`Ratelimit::with_limit`](super::Ratelimit::with_limit) is decided with the
//! first one (the algorithm the limit was made with) in the same atomic step of the store, all or
//! nothing ([`With::Set`](crate::backend::With::Set)): the request is admitted only if every live
//! limit admits it, and a request the set denies is counted by none of them, where `@upstash/ratelimit`'s
//! answer to the same need, one instance per limit, counts a request one limit denies in the others.
//! Each limit keeps its state under its own prefix, in the keys of `@upstash/ratelimit` (the first
//! limit's is the limit's prefix; another's, `<prefix>#<n>` for the limit at index `n`, unless given
//! its own): a set whose limits have the prefixes of a fleet's `@upstash/ratelimit` instances shares
//! their state. Two limits may not share a prefix, nor may one prefix be another's followed by `:`:
//! an identifier chosen by a client (`day:victim` under `api`) would then reach another identifier's
//! keys under the other limit (`victim` under `api:day`).
//!
//! A limit that runs dry ([`Limit::with_dry_run`], [`Ratelimit::with_dry_run`](super::Ratelimit::with_dry_run))
//! is decided and written exactly as a live one, but never denies: with every limit dry, the store
//! decides as live and only the answer changes, so that turning the limits live changes nothing in the
//! store; beside live limits, a dry limit's denial holds back neither the request nor the live limits'
//! counts, and its own state is written as a live limit's would be. The answer says what a live limit
//! would have answered ([`Response::live`], [`Reason::DryRun`]).

use super::answer::{LimitResponse, Live, Reason, Response};
use crate::algorithm::{Algorithm, Cost};
use crate::backend::{admits, Outcome};
use crate::error::{Error, Result};
use std::time::Duration;

/// The most limits one [`Ratelimit`](super::Ratelimit) decides together.
pub const MAX_LIMITS: usize = 8;

/// A limit decided with the others of a [`Ratelimit`](super::Ratelimit)
/// ([`Ratelimit::with_limit`](super::Ratelimit::with_limit)): its algorithm, its own prefix if any,
/// and whether it runs dry.
#[derive(Debug, Clone, PartialEq)]
pub struct Limit {
    rule: Algorithm,
    prefix: Option<String>,
    dry_run: bool,
}

impl Limit {
    /// A live limit applying `rule`, under the prefix the limit gives it.
    pub fn new(rule: impl Into<Algorithm>) -> Self {
        Self {
            rule: rule.into(),
            prefix: None,
            dry_run: false,
        }
    }

    /// The same limit keeping its state under `prefix` (`<prefix>:<identifier>…`).
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// The same limit running dry, or live.
    pub fn with_dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// Whether it runs dry.
    pub fn runs_dry(&self) -> bool {
        self.dry_run
    }
}

/// A limit after the first, as [`Settings`](super::Settings) keeps it: its prefix and dynamic limit's
/// key made from the limit's when it has no prefix of its own.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub rule: Algorithm,
    own_prefix: Option<String>,
    pub prefix: String,
    pub limit_key: Option<String>,
    pub dry_run: bool,
}

impl Member {
    /// `limit`, the limit at `index` of a limit whose prefix is `prefix`.
    pub fn new(limit: Limit, index: usize, prefix: &str, dynamic_limits: bool) -> Self {
        let mut member = Self {
            rule: limit.rule,
            own_prefix: limit.prefix,
            prefix: String::new(),
            limit_key: None,
            dry_run: limit.dry_run,
        };
        member.placed(index, prefix, dynamic_limits);
        member
    }

    /// Its prefix and dynamic limit's key, for the limit at `index` of a limit whose prefix is
    /// `prefix`.
    pub fn placed(&mut self, index: usize, prefix: &str, dynamic_limits: bool) {
        self.prefix = match &self.own_prefix {
            Some(own) => own.clone(),
            None => format!("{prefix}#{index}"),
        };
        self.limit_key = dynamic_limits.then(|| dynamic_limit_key(&self.prefix));
    }

    /// Its key for the identifier whose key under the first limit, of prefix `first_prefix`, is
    /// `key`: the same after the prefix, in either key layout.
    pub fn key(&self, key: &str, first_prefix: &str) -> String {
        self.prefix.clone() + key.get(first_prefix.len()..).unwrap_or_default()
    }
}

/// Where the dynamic limit of `prefix` is stored: `<prefix>:dynamic:global`, as `@upstash/ratelimit`.
pub(crate) fn dynamic_limit_key(prefix: &str) -> String {
    prefix.to_owned() + ":dynamic:global"
}

/// Checks that a limit of `rule` under `prefix` may join the limits `held` (each a rule and prefix):
/// at most [`MAX_LIMITS`], none the same as another, no prefix another's or another's followed by
/// `:`.
pub(crate) fn check_new<'a>(
    rule: &Algorithm,
    prefix: &str,
    mut held: impl Iterator<Item = (&'a Algorithm, &'a str)> + Clone,
) -> Result<()> {
    let invalid = |name, value: String, reason| Error::InvalidParameter {
        algorithm: "set of limits",
        name,
        value,
        reason,
    };
    if held.clone().count() >= MAX_LIMITS {
        return Err(invalid(
            "limits",
            (MAX_LIMITS + 1).to_string(),
            "at most 8 limits decide together",
        ));
    }
    if held.clone().any(|(other, _)| other == rule) {
        return Err(invalid(
            "limits",
            rule.name().to_owned(),
            "the same limit twice",
        ));
    }
    let nested = |a: &str, b: &str| a.strip_prefix(b).is_some_and(|rest| rest.starts_with(':'));
    if held.any(|(_, other)| other == prefix || nested(other, prefix) || nested(prefix, other)) {
        return Err(invalid(
            "prefix",
            crate::error::quote(prefix),
            "two limits of a set share keys: give each a prefix that is no other's, nor another's followed by `:`",
        ));
    }
    Ok(())
}

/// The answer of a set from what each limit decided alone (`outcomes`, the first limit's first) and
/// whether each runs dry: each limit's own answer, the request counted if the set admitted it; the answer of the limits that decide (the live ones, or every one when all run
/// dry); and, when a limit runs dry, what every limit live would have answered.
pub(crate) fn answer(outcomes: &[Outcome], dry_runs: &[bool]) -> Response {
    let admitted = outcomes.iter().map(|outcome| outcome.decision.allowed);
    let written = admits(admitted.clone().zip(dry_runs.iter().copied()));
    let any_live = dry_runs.iter().any(|dry_run| !dry_run);
    let limits: Vec<LimitResponse> = (outcomes.iter().zip(dry_runs))
        .map(|(outcome, &dry_run)| {
            let decision = &outcome.decision;
            let numbers = if written && decision.allowed {
                *decision
            } else {
                (outcome.rule)
                    .apply(outcome.found.as_ref(), outcome.now, Cost::PEEK)
                    .decision
            };
            LimitResponse {
                success: decision.allowed,
                limit: numbers.limit,
                remaining: numbers.remaining.max(0.0),
                reset: numbers.reset,
                dry_run,
            }
        })
        .collect();
    let deciding = |index: usize| !dry_runs[index] || !any_live;
    let bound = &limits[binding(&limits, deciding)];
    let retry_after = if written {
        Some(Duration::ZERO)
    } else {
        // The longest wait of the limits that deny: each must admit.
        (outcomes.iter().enumerate())
            .filter(|&(index, outcome)| deciding(index) && !outcome.decision.allowed)
            .map(|(_, outcome)| outcome.decision.retry_after)
            .try_fold(Duration::ZERO, |longest, wait| Some(longest.max(wait?)))
    };
    let live = (dry_runs.iter().any(|&dry_run| dry_run)).then(|| {
        let bound = &limits[binding(&limits, |_| true)];
        Live {
            success: limits.iter().all(|limit| limit.success),
            limit: bound.limit,
            remaining: bound.remaining,
            reset: bound.reset,
            reason: None,
        }
    });
    Response {
        success: written,
        limit: bound.limit,
        remaining: bound.remaining,
        reset: bound.reset,
        retry_after,
        reason: (written && live.is_some_and(|live| !live.success)).then_some(Reason::DryRun),
        limits,
        live,
    }
}

/// The index of the limit that binds among those `counted`: the first that denies, else the one with
/// the least left (the first of them).
fn binding(limits: &[LimitResponse], counted: impl Fn(usize) -> bool) -> usize {
    let counted = || (0..limits.len()).filter(|&index| counted(index));
    counted()
        .find(|&index| !limits[index].success)
        .or_else(|| {
            counted().reduce(|least, index| {
                if limits[index].remaining < limits[least].remaining {
                    index
                } else {
                    least
                }
            })
        })
        .unwrap_or_default()
}

/// The answer of a limit whose every limit runs dry: `response`, which the limits gave live,
/// admitted (with [`Reason::DryRun`] when they denied it), and what they answered in
/// [`Response::live`]. Beside live limits, `response` is kept, with its live answer.
pub(crate) fn dry_run(mut response: Response, every_limit: bool) -> Response {
    let live = response.live.unwrap_or_else(|| Live::of(&response));
    response.live = Some(live);
    if every_limit && !live.success {
        response.success = true;
        response.retry_after = Some(Duration::ZERO);
        response.reason = Some(Reason::DryRun);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::{FixedWindow, SlidingWindow, TokenBucket};
    use crate::decision::Decision;

    const NOW: u64 = 1_700_000_000_000_000;
    const MINUTE: Duration = Duration::from_secs(60);

    /// What `rule` decides alone for `cost` after `used` was taken.
    fn outcome(rule: Algorithm, used: f64, cost: f64) -> Outcome {
        let found = (used > 0.0).then(|| rule.acquire(None, NOW, used).unwrap().state);
        let decision: Decision = rule.acquire(found.as_ref(), NOW, cost).unwrap().decision;
        Outcome {
            now: NOW,
            found,
            rule,
            decision,
        }
    }

    fn fixed(limit: u64) -> Algorithm {
        FixedWindow::new(limit, MINUTE).unwrap().into()
    }

    fn sliding(limit: u64) -> Algorithm {
        SlidingWindow::new(limit, MINUTE).unwrap().into()
    }

    #[test]
    fn the_limit_that_denies_binds_and_no_limit_counts_a_denied_request() {
        // 10 a minute with 2 used, 3 a minute with 3 used: the second denies.
        let outcomes = [outcome(fixed(10), 2.0, 1.0), outcome(sliding(3), 3.0, 1.0)];
        let answer = answer(&outcomes, &[false, false]);
        assert!(!answer.success);
        assert_eq!((answer.limit, answer.remaining), (3, 0.0));
        assert_eq!(answer.reason, None);
        assert_eq!(answer.live, None);
        let limits: Vec<_> = (answer.limits.iter())
            .map(|limit| (limit.success, limit.limit, limit.remaining))
            .collect();
        assert_eq!(
            limits,
            [(true, 10, 8.0), (false, 3, 0.0)],
            "nothing counted"
        );
        assert_eq!(answer.retry_after, outcomes[1].decision.retry_after);
    }

    #[test]
    fn an_admitted_request_is_counted_by_every_limit_and_the_least_left_binds() {
        let outcomes = [outcome(fixed(10), 2.0, 1.0), outcome(sliding(5), 0.0, 1.0)];
        let answer = answer(&outcomes, &[false, false]);
        assert!(answer.success);
        assert_eq!((answer.limit, answer.remaining), (5, 4.0));
        assert_eq!(answer.limits[0].remaining, 7.0);
        assert_eq!(answer.retry_after, Some(Duration::ZERO));
    }

    #[test]
    fn a_denial_waits_for_the_longest_of_the_limits_that_deny() {
        let bucket: Algorithm = TokenBucket::new(1, MINUTE, 2).unwrap().into();
        let outcomes = [outcome(bucket, 2.0, 1.0), outcome(fixed(2), 2.0, 1.0)];
        let answer = answer(&outcomes, &[false, false]);
        let waits = [
            outcomes[0].decision.retry_after,
            outcomes[1].decision.retry_after,
        ];
        assert_eq!(answer.retry_after, waits[0].max(waits[1]));
        // A cost no limit of the set can ever take: never.
        let never = [outcome(fixed(10), 0.0, 4.0), outcome(fixed(3), 0.0, 4.0)];
        assert_eq!(self::answer(&never, &[false, false]).retry_after, None);
    }

    #[test]
    fn a_dry_limit_never_denies_beside_live_ones_and_says_what_live_would_answer() {
        let outcomes = [outcome(fixed(10), 2.0, 1.0), outcome(sliding(3), 3.0, 1.0)];
        let answer = answer(&outcomes, &[false, true]);
        assert!(answer.success);
        assert_eq!(answer.reason, Some(Reason::DryRun));
        assert_eq!(
            (answer.limit, answer.remaining),
            (10, 7.0),
            "the live limit binds"
        );
        let live = answer.live.unwrap();
        assert!(!live.success);
        assert_eq!((live.limit, live.remaining), (3, 0.0));
        assert!(answer.limits[1].dry_run && !answer.limits[1].success);
        // A live limit's denial still denies.
        let denied = [outcome(fixed(2), 2.0, 1.0), outcome(sliding(3), 0.0, 1.0)];
        let answer = self::answer(&denied, &[false, true]);
        assert!(!answer.success);
        assert_eq!(answer.reason, None);
        assert!(!answer.live.unwrap().success);
    }

    #[test]
    fn with_every_limit_dry_the_set_decides_as_live_and_only_the_answer_admits() {
        let outcomes = [outcome(fixed(10), 2.0, 1.0), outcome(sliding(3), 3.0, 1.0)];
        let live = answer(&outcomes, &[false, false]);
        let dry = answer(&outcomes, &[true, true]);
        assert_eq!(
            dry.limits.iter().map(|l| l.remaining).collect::<Vec<_>>(),
            [8.0, 0.0]
        );
        assert!(!dry.success, "decided as live");
        let dry = dry_run(dry, true);
        assert!(dry.success);
        assert_eq!(dry.reason, Some(Reason::DryRun));
        assert_eq!(dry.live, Some(Live::of(&live)));
        assert_eq!(
            (dry.limit, dry.remaining, dry.reset),
            (live.limit, live.remaining, live.reset)
        );
        // A single limit's answer, admitted or not.
        let admitted = Response::decided(outcome(fixed(10), 0.0, 1.0).decision);
        assert_eq!(dry_run(admitted.clone(), true).reason, None);
        assert_eq!(
            dry_run(admitted.clone(), true).live,
            Some(Live::of(&admitted))
        );
    }

    #[test]
    fn a_set_refuses_a_ninth_limit_the_same_limit_twice_and_prefixes_that_meet() {
        let held = |rules: &[(Algorithm, &'static str)]| rules.to_vec();
        let check = |rule: Algorithm, prefix: &str, held: &[(Algorithm, &str)]| {
            check_new(
                &rule,
                prefix,
                held.iter().map(|(rule, prefix)| (rule, *prefix)),
            )
        };
        let two = held(&[(fixed(10), "api"), (sliding(5), "api#1")]);
        assert!(check(fixed(1000), "api#2", &two).is_ok());
        assert!(check(fixed(1000), "api-day", &two).is_ok());
        assert!(check(fixed(10), "other", &two).is_err(), "the same limit");
        for clash in ["api", "api#1", "api:day", "api#1:x"] {
            assert!(check(fixed(1000), clash, &two).is_err(), "{clash}");
        }
        let eight: Vec<(Algorithm, &str)> = (1..=8)
            .map(|limit| {
                (
                    fixed(limit),
                    ["a", "b", "c", "d", "e", "f", "g", "h"][limit as usize - 1],
                )
            })
            .collect();
        assert!(check(fixed(9), "i", &eight).is_err());
        assert!(check(fixed(9), "i", &eight[..7]).is_ok());
    }
}
