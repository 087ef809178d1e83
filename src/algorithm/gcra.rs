//! GCRA, the generic cell rate algorithm: one number per key, the theoretical arrival time (TAT) of the
//! next request, giving an exact continuous refill (../PROTOCOL.md §3).
//!
//! With emission interval `T = period / limit` and tolerance `τ = burst · T`, a request of cost `n` is
//! admitted when `max(tat, now) + n·T − now ≤ τ`, and then moves the TAT forward by `n·T`. It behaves like
//! a token bucket of `burst` tokens refilled continuously at `limit` per `period`. Times are whole
//! microseconds; `T` is rounded up to a whole microsecond, so the rate is never exceeded.

use super::cost::{self, Cost, Demand};
use super::params;
use super::{until_micros, Policy, Transition};
use crate::decision::Decision;
use crate::error::Result;
use std::time::Duration;

/// `limit` units per `period`, with bursts of up to `burst` units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gcra {
    limit: u64,
    period_ms: u64,
    burst: u64,
    emission_interval: u64,
    tolerance: u64,
}

/// The theoretical arrival time of the next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcraState {
    /// Microseconds since the epoch; at or before now, the bucket is empty.
    pub tat: u64,
}

impl Gcra {
    /// `limit` units per `period` with bursts of up to `burst` (use `limit` for the usual bucket).
    ///
    /// Fails when a count is 0 or above 2^53 - 1, `period` is not a positive whole number of milliseconds,
    /// or `burst · T` is above 2^53 - 1 microseconds.
    pub fn new(limit: u64, period: Duration, burst: u64) -> Result<Self> {
        let limit = params::count(Self::NAME, "limit", limit)?;
        let period_ms = params::millis(Self::NAME, "period", period)?;
        let burst = params::count(Self::NAME, "burst", burst)?;
        let period_us = params::product(Self::NAME, "period in microseconds", period_ms, 1_000)?;
        let without_burst = Self {
            limit,
            period_ms,
            burst: 0,
            emission_interval: period_us.div_ceil(limit),
            tolerance: 0,
        };
        without_burst.with_capacity(burst)
    }

    /// The emission interval `T` in microseconds: the time one unit takes to refill.
    pub fn emission_interval(&self) -> u64 {
        self.emission_interval
    }

    /// The tolerance `τ = burst · T` in microseconds: how far ahead of now the TAT may run.
    pub fn tolerance(&self) -> u64 {
        self.tolerance
    }

    /// `limit` per period.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The period in milliseconds.
    pub fn period_ms(&self) -> u64 {
        self.period_ms
    }

    /// The state after a request of `cost` that was admitted at `now`, even if this state would deny
    /// it: the replay of requests merged from several regions, which may together exceed the burst
    /// and then leave a debt (a TAT beyond the tolerance) that later requests wait out.
    pub fn consume(&self, state: Option<GcraState>, now: u64, cost: f64) -> GcraState {
        let tat = state.map_or(now, |state| state.tat.max(now));
        let tat = if cost < 0.0 {
            tat.saturating_sub((-cost * self.emission_interval as f64).floor() as u64)
                .max(now)
        } else {
            tat.saturating_add(self.span(cost))
        };
        GcraState { tat }
    }

    /// Microseconds that `units` take, rounded up (a refund passes a negative amount and gets it
    /// rounded toward zero, so a refund never gives back more than was taken).
    fn span(&self, units: f64) -> u64 {
        (units * self.emission_interval as f64).ceil() as u64
    }

    fn remaining(&self, tat: u64, now: u64) -> f64 {
        (self.tolerance.saturating_sub(tat.saturating_sub(now)) / self.emission_interval) as f64
    }
}

impl Policy for Gcra {
    type State = GcraState;
    const NAME: &'static str = "gcra";
    const WHOLE_COSTS: bool = false;

    fn capacity(&self) -> u64 {
        self.burst
    }

    fn with_capacity(&self, capacity: u64) -> Result<Self> {
        let burst = params::capacity(Self::NAME, "burst", capacity)?;
        let tolerance = params::product(
            Self::NAME,
            "burst × period / limit in microseconds",
            burst,
            self.emission_interval,
        )?;
        Ok(Self {
            burst,
            tolerance,
            ..*self
        })
    }

    fn apply(&self, state: Option<Self::State>, now: u64, cost: Cost) -> Transition<Self::State> {
        let tat = state.map_or(now, |state| state.tat.max(now));
        let (tat, allowed, retry_after) = match cost.against(self.burst) {
            Demand::Refund(refund) => {
                let back = (refund * self.emission_interval as f64).floor() as u64;
                (
                    tat.saturating_sub(back).max(now),
                    true,
                    Some(Duration::ZERO),
                )
            }
            Demand::TooLarge(_) => (tat, false, None),
            Demand::Take(take) => {
                // A stored `tat` may be anything a peer or an old version wrote: saturate.
                let new_tat = tat.saturating_add(self.span(take));
                if new_tat - now <= self.tolerance {
                    (new_tat, true, Some(Duration::ZERO))
                } else {
                    (
                        tat,
                        false,
                        Some(until_micros(new_tat - self.tolerance, now)),
                    )
                }
            }
        };
        Transition {
            state: GcraState { tat },
            decision: Decision {
                allowed,
                limit: self.burst,
                remaining: self.remaining(tat, now),
                reset: tat.div_ceil(1_000),
                retry_after,
            },
        }
    }

    fn available(&self, state: Option<Self::State>, now: u64) -> f64 {
        self.remaining(state.map_or(now, |state| state.tat.max(now)), now)
    }

    fn time_until(&self, state: Option<Self::State>, now: u64, cost: Cost) -> Result<Duration> {
        let tat = state.map_or(now, |state| state.tat.max(now));
        match cost.against(self.burst) {
            Demand::Refund(_) => Ok(Duration::ZERO),
            Demand::TooLarge(cost) => Err(cost::never(cost, self.burst)),
            Demand::Take(take) => Ok(until_micros(
                tat.saturating_add(self.span(take))
                    .saturating_sub(self.tolerance),
                now,
            )),
        }
    }

    fn idle_at(&self, state: &Self::State) -> u64 {
        state.tat
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000;
    const T0: u64 = 1_700_000_000_000 * MS;

    fn ten_per_second() -> Gcra {
        Gcra::new(10, Duration::from_secs(1), 10).unwrap()
    }

    fn run(rule: &Gcra, state: &mut Option<GcraState>, now: u64, cost: f64) -> Decision {
        let transition = rule.acquire(*state, now, cost).unwrap();
        *state = Some(transition.state);
        transition.decision
    }

    #[test]
    fn burst_then_one_per_emission_interval() {
        let rule = ten_per_second();
        let mut state = None;
        for expected in (0..10).rev() {
            let decision = run(&rule, &mut state, T0, 1.0);
            assert!(decision.allowed);
            assert_eq!(decision.remaining, expected as f64);
        }
        let denied = run(&rule, &mut state, T0, 1.0);
        assert!(!denied.allowed);
        assert_eq!(denied.retry_after, Some(Duration::from_millis(100)));
        assert_eq!(denied.reset, T0 / MS + 1_000);
        assert!(!run(&rule, &mut state, T0 + 99_999, 1.0).allowed);
        assert!(run(&rule, &mut state, T0 + 100 * MS, 1.0).allowed);
    }

    #[test]
    fn admits_19_within_900_ms_like_a_continuous_bucket() {
        let rule = ten_per_second();
        let mut state = None;
        let admitted = (0..=900)
            .filter(|ms| run(&rule, &mut state, T0 + ms * MS, 1.0).allowed)
            .count();
        assert_eq!(admitted, 19);
    }

    #[test]
    fn fractional_costs_refunds_and_peeks() {
        let rule = ten_per_second();
        let mut state = None;
        assert_eq!(run(&rule, &mut state, T0, 2.5).remaining, 7.0);
        assert_eq!(state.unwrap().tat, T0 + 250 * MS);
        assert!(run(&rule, &mut state, T0, -1.0).allowed);
        assert_eq!(state.unwrap().tat, T0 + 150 * MS);
        assert!(run(&rule, &mut state, T0, -100.0).allowed);
        assert_eq!(state.unwrap().tat, T0, "a refund never goes below empty");
        assert_eq!(run(&rule, &mut state, T0, 0.0).remaining, 10.0);
    }

    #[test]
    fn cost_above_burst_is_never_admitted() {
        let rule = Gcra::new(10, Duration::from_secs(1), 3).unwrap();
        let decision = rule.acquire(None, T0, 4.0).unwrap().decision;
        assert_eq!(
            (decision.allowed, decision.retry_after, decision.limit),
            (false, None, 3)
        );
        assert!(rule.time_until_available(None, T0, 4.0).is_err());
    }

    #[test]
    fn emission_interval_is_rounded_up_so_the_rate_is_never_exceeded() {
        let rule = Gcra::new(3, Duration::from_secs(1), 3).unwrap();
        assert_eq!(rule.emission_interval(), 333_334);
        let mut state = None;
        let admitted = (0..3)
            .filter(|_| run(&rule, &mut state, T0, 1.0).allowed)
            .count();
        assert_eq!(admitted, 3, "a whole burst fits at once");
    }

    #[test]
    fn parameters_are_validated() {
        let second = Duration::from_secs(1);
        assert!(Gcra::new(0, second, 1).is_err());
        assert!(Gcra::new(1, Duration::ZERO, 1).is_err());
        assert!(Gcra::new(1, second, 0).is_err());
        assert!(Gcra::new(1, Duration::from_secs(1 << 40), 1 << 20).is_err());
    }
}
