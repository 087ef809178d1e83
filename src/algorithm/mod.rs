//! The rate-limiting algorithms, pure: parameters, state and a transition function, no I/O.
//!
//! Every algorithm implements [`Policy`]: given the stored state (or none), the time and a cost, it
//! returns the new state and a [`Decision`]. Stores ([`crate::backend`]) only keep the state and run
//! the transition atomically per key. Time is microseconds since the Unix epoch throughout.

mod cost;
mod fixed_window;
mod gcra;
pub(crate) mod params;
mod reserve;
mod sliding_window;
mod token_bucket;

pub use cost::Cost;
pub use fixed_window::{FixedWindow, FixedWindowState};
pub use gcra::{Gcra, GcraState};
pub use params::MAX_COUNT;
pub use sliding_window::{SlidingWindow, SlidingWindowState};
pub use token_bucket::{TokenBucket, TokenBucketState};

use crate::decision::Decision;
use crate::error::Result;
use std::time::Duration;

/// A new state and the decision that produced it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transition<S> {
    /// The state to store (unchanged from the loaded state when the request was denied).
    pub state: S,
    /// What to answer.
    pub decision: Decision,
}

/// A rate-limiting algorithm: validated parameters plus pure functions of `(state, now, cost)`.
///
/// `None` as a state means a key never seen or forgotten; `now` is in microseconds since the epoch.
/// A positive cost consumes; zero peeks; a negative cost refunds (never below empty). A cost above
/// [`Policy::capacity`] is denied with `retry_after: None` and consumes nothing. A cost is checked
/// once, into a [`Cost`], by [`Policy::cost`]; [`Policy::acquire`] and
/// [`Policy::time_until_available`] check it and go on with the checked cost.
pub trait Policy {
    /// The per-key state the algorithm keeps.
    type State: Copy + std::fmt::Debug + PartialEq;
    /// The algorithm's name, as error messages show it.
    const NAME: &'static str;
    /// Whether costs must be whole numbers (the window algorithms count requests).
    const WHOLE_COSTS: bool;

    /// The most a single request may cost.
    fn capacity(&self) -> u64;

    /// The same algorithm with another capacity (the rest of its parameters kept), as dynamic limits
    /// need; fails where [`Policy`]'s constructor would, except that 0 is accepted: a paused limit,
    /// which denies every request that takes something (`@upstash/ratelimit`'s dynamic limit of 0).
    fn with_capacity(&self, capacity: u64) -> Result<Self>
    where
        Self: Sized;

    /// `cost` checked for this algorithm: an [`Error::InvalidCost`](crate::Error::InvalidCost) if it
    /// is not finite, or not whole for a window algorithm.
    fn cost(&self, cost: f64) -> Result<Cost> {
        Cost::new(Self::NAME, cost, Self::WHOLE_COSTS)
    }

    /// Decides one request of `cost` at `now` and returns the state to store.
    fn apply(&self, state: Option<Self::State>, now: u64, cost: Cost) -> Transition<Self::State>;

    /// [`Policy::apply`] for a cost not yet checked.
    fn acquire(
        &self,
        state: Option<Self::State>,
        now: u64,
        cost: f64,
    ) -> Result<Transition<Self::State>> {
        Ok(self.apply(state, now, self.cost(cost)?))
    }

    /// How much could be acquired at `now` without waiting.
    fn available(&self, state: Option<Self::State>, now: u64) -> f64;

    /// How long from `now` until `cost` would be admitted, if nothing else happens meanwhile; an error
    /// when `cost` exceeds the capacity.
    fn time_until(&self, state: Option<Self::State>, now: u64, cost: Cost) -> Result<Duration>;

    /// [`Policy::time_until`] for a cost not yet checked.
    fn time_until_available(
        &self,
        state: Option<Self::State>,
        now: u64,
        cost: f64,
    ) -> Result<Duration> {
        self.time_until(state, now, self.cost(cost)?)
    }

    /// The time (microseconds) from which `state` is equivalent to no state at all, so a store may forget it.
    fn idle_at(&self, state: &Self::State) -> u64;
}

/// Any of the algorithms, with its parameters: what a [`crate::Backend`] is asked to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// See [`FixedWindow`].
    FixedWindow(FixedWindow),
    /// See [`SlidingWindow`].
    SlidingWindow(SlidingWindow),
    /// See [`TokenBucket`].
    TokenBucket(TokenBucket),
    /// See [`Gcra`].
    Gcra(Gcra),
}

/// The state of any algorithm; a state of another algorithm than the one applied counts as none.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum State {
    /// See [`FixedWindowState`].
    FixedWindow(FixedWindowState),
    /// See [`SlidingWindowState`].
    SlidingWindow(SlidingWindowState),
    /// See [`TokenBucketState`].
    TokenBucket(TokenBucketState),
    /// See [`GcraState`].
    Gcra(GcraState),
}

/// Runs `$body` with `$rule` bound to the algorithm and `$state` to its own kind of state (or `None`),
/// then wraps a returned state back into [`State`].
macro_rules! dispatch {
    ($algorithm:expr, $state:expr, |$rule:ident, $typed:ident| $body:expr) => {
        match $algorithm {
            Algorithm::FixedWindow($rule) => {
                let $typed = match $state {
                    Some(State::FixedWindow(state)) => Some(*state),
                    _ => None,
                };
                $body
            }
            Algorithm::SlidingWindow($rule) => {
                let $typed = match $state {
                    Some(State::SlidingWindow(state)) => Some(*state),
                    _ => None,
                };
                $body
            }
            Algorithm::TokenBucket($rule) => {
                let $typed = match $state {
                    Some(State::TokenBucket(state)) => Some(*state),
                    _ => None,
                };
                $body
            }
            Algorithm::Gcra($rule) => {
                let $typed = match $state {
                    Some(State::Gcra(state)) => Some(*state),
                    _ => None,
                };
                $body
            }
        }
    };
}

impl Algorithm {
    /// The algorithm's name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::FixedWindow(_) => FixedWindow::NAME,
            Self::SlidingWindow(_) => SlidingWindow::NAME,
            Self::TokenBucket(_) => TokenBucket::NAME,
            Self::Gcra(_) => Gcra::NAME,
        }
    }

    /// See [`Policy::capacity`].
    pub fn capacity(&self) -> u64 {
        dispatch!(self, None::<&State>, |rule, _state| rule.capacity())
    }

    /// See [`Policy::with_capacity`].
    pub fn with_capacity(&self, capacity: u64) -> Result<Algorithm> {
        dispatch!(self, None::<&State>, |rule, _state| rule
            .with_capacity(capacity)
            .map(Algorithm::from))
    }

    /// See [`Policy::cost`].
    pub fn cost(&self, cost: f64) -> Result<Cost> {
        dispatch!(self, None::<&State>, |rule, _state| rule.cost(cost))
    }

    /// See [`Policy::apply`].
    #[inline]
    pub fn apply(&self, state: Option<&State>, now: u64, cost: Cost) -> Transition<State> {
        dispatch!(self, state, |rule, typed| {
            let transition = rule.apply(typed, now, cost);
            Transition {
                state: transition.state.into(),
                decision: transition.decision,
            }
        })
    }

    /// See [`Policy::acquire`].
    pub fn acquire(&self, state: Option<&State>, now: u64, cost: f64) -> Result<Transition<State>> {
        Ok(self.apply(state, now, self.cost(cost)?))
    }

    /// See [`Policy::available`].
    pub fn available(&self, state: Option<&State>, now: u64) -> f64 {
        dispatch!(self, state, |rule, typed| rule.available(typed, now))
    }

    /// See [`Policy::time_until`].
    pub fn time_until(&self, state: Option<&State>, now: u64, cost: Cost) -> Result<Duration> {
        dispatch!(self, state, |rule, typed| rule.time_until(typed, now, cost))
    }

    /// See [`Policy::time_until_available`].
    pub fn time_until_available(
        &self,
        state: Option<&State>,
        now: u64,
        cost: f64,
    ) -> Result<Duration> {
        self.time_until(state, now, self.cost(cost)?)
    }

    /// See [`Policy::idle_at`]; a state of another algorithm is idle at once.
    #[inline]
    pub fn idle_at(&self, state: &State) -> u64 {
        dispatch!(self, Some(state), |rule, typed| typed
            .map_or(0, |typed| rule.idle_at(&typed)))
    }
}

macro_rules! impl_from {
    ($($algorithm:ident => $state:ident),*) => {$(
        impl From<$algorithm> for Algorithm {
            fn from(algorithm: $algorithm) -> Self {
                Self::$algorithm(algorithm)
            }
        }
        impl From<$state> for State {
            fn from(state: $state) -> Self {
                Self::$algorithm(state)
            }
        }
    )*};
}

impl_from!(
    FixedWindow => FixedWindowState,
    SlidingWindow => SlidingWindowState,
    TokenBucket => TokenBucketState,
    Gcra => GcraState
);

/// The wait from `now` (microseconds) until `at_ms` (milliseconds), zero if already there.
fn until(at_ms: u64, now: u64) -> Duration {
    until_micros(micros(at_ms), now)
}

/// `ms` in microseconds, saturating: a compare and a multiply, where `u64::saturating_mul` costs a
/// 128-bit multiplication (`__multi3`) on wasm32, on every decision of the store.
fn micros(ms: u64) -> u64 {
    if ms > u64::MAX / 1_000 {
        u64::MAX
    } else {
        ms * 1_000
    }
}

/// `a * b`, saturating, as `u64::saturating_mul`, in one multiply when both fit in 32 bits.
fn saturating_product(a: u64, b: u64) -> u64 {
    if (a | b) >> 32 == 0 {
        a * b
    } else {
        a.saturating_mul(b)
    }
}

/// The wait from `now` until `at`, both in microseconds, zero if already there.
fn until_micros(at: u64, now: u64) -> Duration {
    Duration::from_micros(at.saturating_sub(now))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_saturating_products_are_saturating_mul() {
        let values = [
            0,
            1,
            999,
            1_000,
            3_600_000,
            1 << 31,
            u32::MAX as u64,
            1 << 32,
            u64::MAX / 1_000,
        ];
        let values =
            values
                .into_iter()
                .chain([u64::MAX / 1_000 + 1, 1 << 53, u64::MAX - 1, u64::MAX]);
        for a in values.clone() {
            assert_eq!(micros(a), a.saturating_mul(1_000), "{a}");
            for b in values.clone() {
                assert_eq!(saturating_product(a, b), a.saturating_mul(b), "{a} {b}");
            }
        }
    }

    fn every_algorithm() -> [Algorithm; 4] {
        let minute = Duration::from_secs(60);
        [
            FixedWindow::new(3, minute).unwrap().into(),
            SlidingWindow::new(3, minute).unwrap().into(),
            TokenBucket::new(1, minute, 3).unwrap().into(),
            Gcra::new(3, minute, 3).unwrap().into(),
        ]
    }

    #[test]
    fn a_capacity_of_zero_pauses_the_algorithm_and_a_configured_zero_is_refused() {
        let now = 1_700_000_000_000_000;
        for rule in every_algorithm() {
            let name = rule.name();
            let taken = rule.acquire(None, now, 1.0).unwrap();
            assert!(taken.decision.allowed, "{name}");
            let paused = rule.with_capacity(0).unwrap();
            for state in [None, Some(&taken.state)] {
                let denied = paused.acquire(state, now, 1.0).unwrap().decision;
                assert!(!denied.allowed, "{name}");
                assert_eq!((denied.limit, denied.remaining), (0, 0.0), "{name}");
                assert!(
                    paused.acquire(state, now, 0.0).unwrap().decision.allowed,
                    "{name}"
                );
                assert!(
                    paused.acquire(state, now, -1.0).unwrap().decision.allowed,
                    "{name}"
                );
                assert_eq!(paused.available(state, now), 0.0, "{name}");
                assert!(
                    paused.time_until_available(state, now, 1.0).is_err(),
                    "{name}"
                );
            }
            assert_eq!(paused.with_capacity(3).unwrap(), rule, "{name}");
            assert!(rule.with_capacity(params::MAX_COUNT + 1).is_err(), "{name}");
        }
        let minute = Duration::from_secs(60);
        assert!(FixedWindow::new(0, minute).is_err());
        assert!(SlidingWindow::new(0, minute).is_err());
        assert!(TokenBucket::new(1, minute, 0).is_err());
        assert!(Gcra::new(3, minute, 0).is_err());
    }
}
