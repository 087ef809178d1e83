//! [`Cost`]: what a request takes from a limit, checked once where it enters.

use crate::error::{Error, Result};

/// A request's cost, checked for an algorithm: a finite number, and whole for the window algorithms
/// (which count requests). Positive consumes, zero peeks, negative refunds.
///
/// Made by [`Policy::cost`](super::Policy::cost) (or [`Algorithm::cost`](super::Algorithm::cost)) at
/// the entry of a call, so that nothing after it checks again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cost(f64);

/// How a checked cost relates to the limit's capacity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Demand {
    /// Zero or negative: a peek or a refund (of this much), always allowed.
    Refund(f64),
    /// Positive and at most the capacity.
    Take(f64),
    /// More than the capacity: never admitted, consumes nothing.
    TooLarge(f64),
}

impl Cost {
    /// A peek: takes nothing and writes nothing.
    pub const PEEK: Cost = Cost(0.0);

    /// `cost` checked for `algorithm`: finite, and a whole number if `whole`; else
    /// [`Error::InvalidCost`].
    pub(crate) fn new(algorithm: &'static str, cost: f64, whole: bool) -> Result<Self> {
        let invalid = |reason| Error::InvalidCost {
            algorithm,
            cost,
            reason,
        };
        if !cost.is_finite() {
            return Err(invalid("must be a finite number"));
        }
        if whole && cost.fract() != 0.0 {
            return Err(invalid("must be a whole number for a window algorithm"));
        }
        Ok(Self(cost))
    }

    /// The cost as a number.
    pub fn get(self) -> f64 {
        self.0
    }

    /// Whether this is a peek (zero).
    pub fn is_peek(self) -> bool {
        self.0 == 0.0
    }

    /// The cost with `units` whole units more (a lease's, see [`Algorithm::lease_room`]), still
    /// finite and whole when the cost was.
    ///
    /// [`Algorithm::lease_room`]: super::Algorithm::lease_room
    pub(crate) fn plus(self, units: u64) -> Self {
        Self(self.0 + units as f64)
    }

    /// What the cost asks of a limit of `capacity`.
    pub(crate) fn against(self, capacity: u64) -> Demand {
        if self.0 <= 0.0 {
            Demand::Refund(-self.0)
        } else if self.0 > capacity as f64 {
            Demand::TooLarge(self.0)
        } else {
            Demand::Take(self.0)
        }
    }
}

/// The error `time_until_available` gives for a cost that can never be admitted.
pub(crate) fn never(cost: f64, capacity: u64) -> Error {
    Error::CostExceedsCapacity { cost, capacity }
}
