//! Fixed window: a counter per window of `window` milliseconds, as `@upstash/ratelimit` keeps it.
//!
//! Like `@upstash/ratelimit`, a denied request is still counted (the counter is an `INCRBY`), so a
//! client that keeps hammering stays denied until the window ends. A cost above the limit is refused
//! without being counted.

use super::cost::{self, Cost, Demand};
use super::params::{self, MAX_COUNT};
use super::{micros, saturating_product, until, Policy, Transition};
use crate::decision::Decision;
use crate::error::Result;
use std::time::Duration;

/// At most `limit` units per window of `window`; windows start at multiples of `window` since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedWindow {
    limit: u64,
    window_ms: u64,
}

/// The counter of one window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedWindowState {
    /// Index of the window: `floor(now_ms / window_ms)`.
    pub window: u64,
    /// Units counted in that window (denied requests included); below zero when refunds of the peer
    /// left credit, which is honoured.
    pub used: i64,
}

impl FixedWindow {
    /// A fixed window admitting `limit` units per `window`.
    ///
    /// Fails when `limit` is 0 or above 2^53 - 1, or `window` is not a positive whole number of milliseconds.
    pub fn new(limit: u64, window: Duration) -> Result<Self> {
        Ok(Self {
            limit: params::count(Self::NAME, "limit", limit)?,
            window_ms: params::millis(Self::NAME, "window", window)?,
        })
    }

    /// The window's length in milliseconds.
    pub fn window_ms(&self) -> u64 {
        self.window_ms
    }

    /// Index of the window holding `now` (microseconds since the epoch).
    pub fn window_index(&self, now: u64) -> u64 {
        // One division: floor(floor(now / 1000) / w) = floor(now / (1000 w)).
        now / (self.window_ms * 1_000)
    }

    fn used(&self, state: Option<FixedWindowState>, window: u64) -> i64 {
        match state {
            Some(state) if state.window == window => state.used,
            _ => 0,
        }
    }
}

impl Policy for FixedWindow {
    type State = FixedWindowState;
    const NAME: &'static str = "fixed window";
    const WHOLE_COSTS: bool = true;

    fn capacity(&self) -> u64 {
        self.limit
    }

    fn with_capacity(&self, capacity: u64) -> Result<Self> {
        Ok(Self {
            limit: params::capacity(Self::NAME, "limit", capacity)?,
            ..*self
        })
    }

    fn apply(&self, state: Option<Self::State>, now: u64, cost: Cost) -> Transition<Self::State> {
        let window = self.window_index(now);
        let used = self.used(state, window);
        let reset = (window + 1) * self.window_ms;
        let (used, allowed, retry_after) = match cost.against(self.limit) {
            // A refund gives back down to zero, never taking away credit already below it.
            Demand::Refund(refund) => (
                used.saturating_sub(refund as i64).max(used.min(0)),
                true,
                Some(Duration::ZERO),
            ),
            Demand::TooLarge(_) => (used, false, None),
            Demand::Take(take) => {
                let after = used.saturating_add(take as i64);
                // Past 2^53 - 1 the count is saturated: a denied request is no longer added (the
                // script could not add it exactly, and no limit is that large).
                let stored = if used > MAX_COUNT as i64 { used } else { after };
                if after <= self.limit as i64 {
                    (stored, true, Some(Duration::ZERO))
                } else {
                    (stored, false, Some(until(reset, now)))
                }
            }
        };
        Transition {
            state: FixedWindowState { window, used },
            decision: Decision {
                allowed,
                limit: self.limit,
                remaining: remaining(self.limit, used),
                reset,
                retry_after,
            },
        }
    }

    fn available(&self, state: Option<Self::State>, now: u64) -> f64 {
        remaining(self.limit, self.used(state, self.window_index(now)))
    }

    fn time_until(&self, state: Option<Self::State>, now: u64, cost: Cost) -> Result<Duration> {
        let window = self.window_index(now);
        match cost.against(self.limit) {
            Demand::Refund(_) => Ok(Duration::ZERO),
            Demand::TooLarge(cost) => Err(cost::never(cost, self.limit)),
            Demand::Take(take)
                if self.used(state, window).saturating_add(take as i64) <= self.limit as i64 =>
            {
                Ok(Duration::ZERO)
            }
            Demand::Take(_) => Ok(until((window + 1) * self.window_ms, now)),
        }
    }

    fn idle_at(&self, state: &Self::State) -> u64 {
        if state.used == 0 {
            0
        } else {
            micros(saturating_product(
                state.window.saturating_add(1),
                self.window_ms,
            ))
        }
    }
}

/// What `limit` leaves after `used`: more than `limit` when credit is left, never below zero.
fn remaining(limit: u64, used: i64) -> f64 {
    (limit as i64).saturating_sub(used).max(0) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    const T0: u64 = 1_700_000_000_000 * 1_000; // a multiple of 10 s, in microseconds
    const MS: u64 = 1_000;

    fn ten_per_10s() -> FixedWindow {
        FixedWindow::new(10, Duration::from_secs(10)).unwrap()
    }

    fn run(
        rule: &FixedWindow,
        state: &mut Option<FixedWindowState>,
        now: u64,
        cost: f64,
    ) -> Decision {
        let transition = rule.acquire(*state, now, cost).unwrap();
        *state = Some(transition.state);
        transition.decision
    }

    #[test]
    fn first_last_allowed_first_denied_and_roll_over() {
        let rule = ten_per_10s();
        let mut state = None;
        let first = run(&rule, &mut state, T0 + 1, 1.0);
        assert_eq!(
            (first.allowed, first.remaining, first.reset),
            (true, 9.0, T0 / MS + 10_000)
        );
        for expected in (0..9).rev() {
            let decision = run(&rule, &mut state, T0 + 5_000 * MS, 1.0);
            assert!(decision.allowed);
            assert_eq!(decision.remaining, expected as f64);
        }
        let denied = run(&rule, &mut state, T0 + 6_000 * MS, 1.0);
        assert!(!denied.allowed);
        assert_eq!(denied.retry_after, Some(Duration::from_secs(4)));
        assert_eq!(
            state.unwrap().used,
            11,
            "denied requests are counted, as @upstash/ratelimit does"
        );
        let next = run(&rule, &mut state, T0 + 10_000 * MS, 1.0);
        assert_eq!((next.allowed, next.remaining), (true, 9.0));
    }

    #[test]
    fn refunds_never_go_below_empty() {
        let rule = ten_per_10s();
        let mut state = None;
        run(&rule, &mut state, T0, 3.0);
        let refund = run(&rule, &mut state, T0, -5.0);
        assert!(refund.allowed);
        assert_eq!(refund.remaining, 10.0);
        assert_eq!(state.unwrap().used, 0);
    }

    #[test]
    fn cost_above_capacity_is_never_admitted_and_consumes_nothing() {
        let rule = ten_per_10s();
        let mut state = None;
        run(&rule, &mut state, T0, 2.0);
        let decision = run(&rule, &mut state, T0, 11.0);
        assert!(!decision.allowed);
        assert_eq!(decision.retry_after, None);
        assert_eq!(state.unwrap().used, 2);
        assert!(matches!(
            rule.time_until_available(state, T0, 11.0),
            Err(Error::CostExceedsCapacity { capacity: 10, .. })
        ));
    }

    #[test]
    fn cost_zero_peeks() {
        let rule = ten_per_10s();
        let mut state = None;
        run(&rule, &mut state, T0, 4.0);
        let peek = run(&rule, &mut state, T0, 0.0);
        assert_eq!((peek.allowed, peek.remaining), (true, 6.0));
        assert_eq!(state.unwrap().used, 4);
    }

    #[test]
    fn fractional_and_non_finite_costs_are_refused() {
        let rule = ten_per_10s();
        for cost in [0.5, f64::NAN, f64::INFINITY] {
            let error = rule.acquire(None, T0, cost).unwrap_err();
            assert!(error.to_string().contains("fixed window"), "{error}");
        }
    }

    #[test]
    fn parameters_are_validated() {
        assert!(FixedWindow::new(0, Duration::from_secs(1)).is_err());
        assert!(FixedWindow::new(1, Duration::ZERO).is_err());
        assert!(FixedWindow::new(1, Duration::from_micros(1_500)).is_err());
        assert!(FixedWindow::new(1 << 53, Duration::from_secs(1)).is_err());
    }
}
