//! Validation of algorithm parameters at construction.

use crate::duration::MAX_DURATION_MS;
use crate::error::{Error, Result};
use std::time::Duration;

/// The largest count accepted: the largest integer a JavaScript or Lua number holds exactly.
pub const MAX_COUNT: u64 = (1 << 53) - 1;

/// Checks that a count is at least 1 and at most [`MAX_COUNT`].
pub(crate) fn count(algorithm: &'static str, name: &'static str, value: u64) -> Result<u64> {
    let reason = match value {
        0 => "must be at least 1",
        v if v > MAX_COUNT => "must be at most 2^53 - 1",
        v => return Ok(v),
    };
    Err(Error::InvalidParameter {
        algorithm,
        name,
        value: value.to_string(),
        reason,
    })
}

/// Checks that a duration is a whole, positive number of milliseconds and returns it in milliseconds.
pub(crate) fn millis(algorithm: &'static str, name: &'static str, value: Duration) -> Result<u64> {
    let reason = if value.is_zero() {
        "must be greater than zero"
    } else if value.subsec_nanos() % 1_000_000 != 0 {
        "must be a whole number of milliseconds"
    } else if value.as_millis() > MAX_DURATION_MS as u128 {
        "must be at most 2^53 - 1 milliseconds"
    } else {
        return Ok(value.as_millis() as u64);
    };
    Err(Error::InvalidParameter {
        algorithm,
        name,
        value: format!("{value:?}"),
        reason,
    })
}

/// Checks that a product of parameters stays exact in a JavaScript or Lua number.
pub(crate) fn product(algorithm: &'static str, name: &'static str, value: u128) -> Result<u64> {
    if value > MAX_COUNT as u128 {
        return Err(Error::InvalidParameter {
            algorithm,
            name,
            value: value.to_string(),
            reason: "must be at most 2^53 - 1",
        });
    }
    Ok(value as u64)
}
