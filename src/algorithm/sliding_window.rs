//! Sliding window: the current window's counter plus the previous one weighted by how much of it the
//! sliding window still covers, exactly as `@upstash/ratelimit` computes it.
//!
//! Unlike `@upstash/ratelimit` 2.2, the cost is checked against what is left (with 8 of 10 used, a cost
//! of 5 is denied and nothing is counted). A denied request consumes nothing.

use super::cost::{self, Cost, Demand};
use super::params;
use super::{micros, saturating_product, until, Policy, Transition};
use crate::decision::Decision;
use crate::error::Result;
use std::time::Duration;

/// At most `limit` units in any sliding window of `window`, approximated from two fixed windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlidingWindow {
    limit: u64,
    window_ms: u64,
}

/// The counters of the current and the previous window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlidingWindowState {
    /// Index of the current window: `floor(now_ms / window_ms)`.
    pub window: u64,
    /// Units admitted in the current window.
    pub current: u64,
    /// Units admitted in the window before it.
    pub previous: u64,
}

impl SlidingWindow {
    /// A sliding window admitting `limit` units per `window`.
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

    /// `(current, previous)` counters as seen from `window`.
    fn counters(&self, state: Option<SlidingWindowState>, window: u64) -> (u64, u64) {
        match state {
            Some(state) if state.window == window => (state.current, state.previous),
            Some(state) if state.window.checked_add(1) == Some(window) => (0, state.current),
            _ => (0, 0),
        }
    }

    /// The part of `previous` still inside the sliding window at `now_ms`, computed in floating point
    /// as the Lua script (and `@upstash/ratelimit`) does, so both give the same integer.
    pub fn weighted_previous(&self, previous: u64, now_ms: u64) -> u64 {
        if previous == 0 {
            return 0;
        }
        self.weighted_at(previous, now_ms % self.window_ms)
    }

    /// [`SlidingWindow::weighted_previous`] `offset` milliseconds into a window. The product is never
    /// negative, so truncating is flooring, without a call to `floor` (baseline x86-64 has no
    /// instruction for it).
    fn weighted_at(&self, previous: u64, offset: u64) -> u64 {
        let progress = offset as f64 / self.window_ms as f64;
        ((1.0 - progress) * previous as f64) as u64
    }

    fn used(&self, state: Option<SlidingWindowState>, now: u64) -> u64 {
        let (current, previous) = self.counters(state, self.window_index(now));
        current.saturating_add(self.weighted_previous(previous, now / 1_000))
    }

    /// How long until `take` fits, given the counters at `now` (the weighted part only decays).
    fn wait(&self, current: u64, previous: u64, now: u64, take: u64) -> Duration {
        let now_ms = now / 1_000;
        let end = (self.window_index(now) + 1) * self.window_ms;
        let offset = now_ms - (end - self.window_ms);
        let fits_at = match self.first_fit(offset, current, previous, take) {
            Some(offset) => end - self.window_ms + offset,
            None => match self.first_fit(0, 0, current, take) {
                Some(offset) => end + offset,
                None => end + self.window_ms,
            },
        };
        until(fits_at, now)
    }

    /// The first offset from `from` to the window's end at which `take` fits beside `current` and the
    /// decaying `previous`. The weighted part never grows within a window, so "fits" is monotone:
    /// start from the closed-form answer and step to the exact first millisecond under the same
    /// floating-point rule as [`SlidingWindow::weighted_previous`] (a step or two, so a denial is O(1)).
    fn first_fit(&self, from: u64, current: u64, previous: u64, take: u64) -> Option<u64> {
        let need = self.limit.checked_sub(current.saturating_add(take))?;
        if previous <= need {
            return Some(from); // the weighted part is at most `previous`
        }
        let last = self.window_ms - 1;
        let fits = |offset: u64| self.weighted_at(previous, offset) <= need;
        if !fits(last) {
            return None;
        }
        // floor((1 - r/w) · previous) <= need  ⟸  r >= w · (1 - (need + 1) / previous).
        let guess = self.window_ms as f64 * (1.0 - (need + 1) as f64 / previous as f64);
        let mut offset = (guess.max(0.0) as u64).clamp(from, last);
        while offset > from && fits(offset - 1) {
            offset -= 1;
        }
        while !fits(offset) {
            offset += 1;
        }
        Some(offset)
    }
}

impl Policy for SlidingWindow {
    type State = SlidingWindowState;
    const NAME: &'static str = "sliding window";
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
        let (current, previous) = self.counters(state, window);
        let weighted = self.weighted_previous(previous, now / 1_000);
        let (current, allowed, retry_after) = match cost.against(self.limit) {
            Demand::Refund(refund) => (
                current.saturating_sub(refund as u64),
                true,
                Some(Duration::ZERO),
            ),
            Demand::TooLarge(_) => (current, false, None),
            Demand::Take(take)
                if current.saturating_add(weighted).saturating_add(take as u64) <= self.limit =>
            {
                (current + take as u64, true, Some(Duration::ZERO))
            }
            Demand::Take(take) => (
                current,
                false,
                Some(self.wait(current, previous, now, take as u64)),
            ),
        };
        Transition {
            state: SlidingWindowState {
                window,
                current,
                previous,
            },
            decision: Decision {
                allowed,
                limit: self.limit,
                remaining: self.limit.saturating_sub(current.saturating_add(weighted)) as f64,
                reset: (window + 1) * self.window_ms,
                retry_after,
            },
        }
    }

    fn available(&self, state: Option<Self::State>, now: u64) -> f64 {
        self.limit.saturating_sub(self.used(state, now)) as f64
    }

    fn time_until(&self, state: Option<Self::State>, now: u64, cost: Cost) -> Result<Duration> {
        match cost.against(self.limit) {
            Demand::Refund(_) => Ok(Duration::ZERO),
            Demand::TooLarge(cost) => Err(cost::never(cost, self.limit)),
            Demand::Take(take)
                if self.used(state, now).saturating_add(take as u64) <= self.limit =>
            {
                Ok(Duration::ZERO)
            }
            Demand::Take(take) => {
                let (current, previous) = self.counters(state, self.window_index(now));
                Ok(self.wait(current, previous, now, take as u64))
            }
        }
    }

    fn idle_at(&self, state: &Self::State) -> u64 {
        let windows_left = match (state.current, state.previous) {
            (0, 0) => return 0,
            (0, _) => 1,
            _ => 2,
        };
        micros(saturating_product(
            state.window.saturating_add(windows_left),
            self.window_ms,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000;
    const T0: u64 = 1_700_000_000_000 * MS; // the start of a 10 s window

    fn ten_per_10s() -> SlidingWindow {
        SlidingWindow::new(10, Duration::from_secs(10)).unwrap()
    }

    fn run(
        rule: &SlidingWindow,
        state: &mut Option<SlidingWindowState>,
        now: u64,
        cost: f64,
    ) -> Decision {
        let transition = rule.acquire(*state, now, cost).unwrap();
        *state = Some(transition.state);
        transition.decision
    }

    #[test]
    fn fills_then_denies_without_counting_the_denied_request() {
        let rule = ten_per_10s();
        let mut state = None;
        for expected in (0..10).rev() {
            let decision = run(&rule, &mut state, T0 + 1_000 * MS, 1.0);
            assert!(decision.allowed);
            assert_eq!(decision.remaining, expected as f64);
        }
        let denied = run(&rule, &mut state, T0 + 2_000 * MS, 1.0);
        assert!(!denied.allowed);
        assert_eq!(state.unwrap().current, 10);
    }

    #[test]
    fn checks_the_cost_against_what_is_left() {
        let rule = ten_per_10s();
        let mut state = None;
        run(&rule, &mut state, T0, 8.0);
        let denied = run(&rule, &mut state, T0, 5.0);
        assert!(!denied.allowed, "the peer admits 8 + 5 > 10");
        assert_eq!(state.unwrap().current, 8);
        assert!(run(&rule, &mut state, T0, 2.0).allowed);
    }

    #[test]
    fn previous_window_is_weighted_by_what_the_sliding_window_still_covers() {
        let rule = ten_per_10s();
        let mut state = None;
        run(&rule, &mut state, T0, 10.0);
        // 25% into the next window, 75% of the previous 10 still counts: floor(7.5) = 7.
        let decision = run(&rule, &mut state, T0 + 12_500 * MS, 1.0);
        assert!(decision.allowed);
        assert_eq!(decision.remaining, 2.0);
        assert!(run(&rule, &mut state, T0 + 12_500 * MS, 2.0).allowed);
        let denied = run(&rule, &mut state, T0 + 12_500 * MS, 1.0);
        assert!(!denied.allowed);
        // floor((1 - p) * 10) drops to 6 once p > 0.3, at 13 s + 1 ms.
        assert_eq!(denied.retry_after, Some(Duration::from_millis(501)));
        assert!(!run(&rule, &mut state, T0 + 13_000 * MS, 1.0).allowed);
        assert!(run(&rule, &mut state, T0 + 13_001 * MS, 1.0).allowed);
        // Two windows later everything is forgotten.
        let fresh = run(&rule, &mut state, T0 + 30_000 * MS, 1.0);
        assert_eq!(fresh.remaining, 9.0);
    }

    #[test]
    fn wait_spans_into_the_next_window_when_the_current_one_is_full() {
        let rule = ten_per_10s();
        let mut state = None;
        run(&rule, &mut state, T0 + 9_000 * MS, 10.0);
        // current = 10 cannot fit 1 more in this window; next window, previous = 10 weighs
        // floor((1 - p) * 10) <= 9 once p > 0, at 10 s + 1 ms.
        let wait = rule
            .time_until_available(state, T0 + 9_000 * MS, 1.0)
            .unwrap();
        assert_eq!(wait, Duration::from_millis(1_001));
    }

    #[test]
    fn refunds_never_go_below_empty_and_cost_above_capacity_is_never_admitted() {
        let rule = ten_per_10s();
        let mut state = None;
        run(&rule, &mut state, T0, 2.0);
        assert!(run(&rule, &mut state, T0, -7.0).allowed);
        assert_eq!(state.unwrap().current, 0);
        let never = run(&rule, &mut state, T0, 11.0);
        assert_eq!((never.allowed, never.retry_after), (false, None));
        assert_eq!(state.unwrap().current, 0);
        let peek = run(&rule, &mut state, T0, 0.0);
        assert_eq!((peek.allowed, peek.remaining), (true, 10.0));
    }

    #[test]
    fn fractional_costs_and_bad_parameters_are_refused() {
        let rule = ten_per_10s();
        assert!(rule
            .acquire(None, T0, 1.5)
            .unwrap_err()
            .to_string()
            .contains("sliding window"));
        assert!(SlidingWindow::new(0, Duration::from_secs(1)).is_err());
        assert!(SlidingWindow::new(1, Duration::ZERO).is_err());
    }
}
