//! Checks on the cost of a request, shared by every algorithm.

use crate::error::{Error, Result};

/// How a checked cost relates to the limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Cost {
    /// Zero or negative: a peek or a refund, always allowed.
    Refund(f64),
    /// Positive and at most the capacity.
    Take(f64),
    /// More than the capacity: never admitted, consumes nothing.
    TooLarge(f64),
}

/// Classifies `cost` for `algorithm`; `whole` algorithms (the window counters) refuse fractions.
pub(crate) fn check(
    algorithm: &'static str,
    cost: f64,
    capacity: u64,
    whole: bool,
) -> Result<Cost> {
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
    Ok(if cost <= 0.0 {
        Cost::Refund(-cost)
    } else if cost > capacity as f64 {
        Cost::TooLarge(cost)
    } else {
        Cost::Take(cost)
    })
}

/// The error `time_until_available` gives for a cost that can never be admitted.
pub(crate) fn never(cost: f64, capacity: u64) -> Error {
    Error::CostExceedsCapacity { cost, capacity }
}
