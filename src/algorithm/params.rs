//! Validation of algorithm parameters at construction.

use crate::duration::MAX_DURATION_MS;
use crate::error::{Error, Result};
use std::time::Duration;

/// The largest count accepted: the largest integer a JavaScript or Lua number holds exactly.
pub const MAX_COUNT: u64 = (1 << 53) - 1;

/// Checks that a count is at least 1 and at most [`MAX_COUNT`].
pub(crate) fn count(algorithm: &'static str, name: &'static str, value: u64) -> Result<u64> {
    match value {
        0 => Err(invalid_count(algorithm, name, value, "must be at least 1")),
        value => capacity(algorithm, name, value),
    }
}

/// Checks that a capacity given at run time (a dynamic limit) is at most [`MAX_COUNT`]. Unlike a
/// configured count it may be 0: a paused limit, which denies every request that takes something, as
/// a dynamic limit of 0 does in `@upstash/ratelimit`.
pub(crate) fn capacity(algorithm: &'static str, name: &'static str, value: u64) -> Result<u64> {
    if value > MAX_COUNT {
        return Err(invalid_count(
            algorithm,
            name,
            value,
            "must be at most 2^53 - 1",
        ));
    }
    Ok(value)
}

fn invalid_count(
    algorithm: &'static str,
    name: &'static str,
    value: u64,
    reason: &'static str,
) -> Error {
    Error::InvalidParameter {
        algorithm,
        name,
        value: value.to_string(),
        reason,
    }
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
        value: duration_text(value),
        reason,
    })
}

/// `value` as `{:?}` writes it (`1.5ms`, `2s`, `250µs`), without its formatting machinery. Cold: only
/// an error quotes it.
#[cold]
fn duration_text(value: Duration) -> String {
    let (whole, fraction, digits, unit) = match (value.as_secs(), value.subsec_nanos()) {
        (0, nanos @ 1_000_000..) => (u64::from(nanos / 1_000_000), nanos % 1_000_000, 6, "ms"),
        (0, nanos @ 1_000..) => (u64::from(nanos / 1_000), nanos % 1_000, 3, "µs"),
        (0, nanos) => (u64::from(nanos), 0, 0, "ns"),
        (secs, nanos) => (secs, nanos, 9, "s"),
    };
    let mut text = whole.to_string();
    if fraction > 0 {
        let padded = format!("{fraction:0digits$}");
        text.push('.');
        text.push_str(padded.trim_end_matches('0'));
    }
    text + unit
}

/// Checks that the product of two parameters stays exact in a JavaScript or Lua number.
pub(crate) fn product(algorithm: &'static str, name: &'static str, a: u64, b: u64) -> Result<u64> {
    match a.checked_mul(b) {
        Some(value) if value <= MAX_COUNT => Ok(value),
        value => Err(Error::InvalidParameter {
            algorithm,
            name,
            // The product if it fits in 64 bits, else the multiplication itself: exact either way.
            value: value.map_or_else(|| format!("{a} × {b}"), |v| v.to_string()),
            reason: "must be at most 2^53 - 1",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_written_as_debug_writes_them() {
        for nanos in [
            0,
            1,
            999,
            1_000,
            1_500,
            999_999,
            1_000_000,
            1_500_000,
            1_000_001,
            999_999_999,
            1_000_000_000,
            1_000_000_001,
            90_000_000_000,
            u64::MAX,
        ] {
            let value = Duration::from_nanos(nanos);
            assert_eq!(duration_text(value), format!("{value:?}"));
        }
        let longest = Duration::new(u64::MAX, 999_999_999);
        assert_eq!(duration_text(longest), format!("{longest:?}"));
    }

    #[test]
    fn products_are_checked_and_quoted_exactly() {
        assert_eq!(product("gcra", "p", 3, 5).unwrap(), 15);
        assert_eq!(product("gcra", "p", MAX_COUNT, 1).unwrap(), MAX_COUNT);
        let quoted = |a, b| match product("gcra", "p", a, b) {
            Err(Error::InvalidParameter { value, .. }) => value,
            other => panic!("{other:?}"),
        };
        assert_eq!(quoted(MAX_COUNT, 2), "18014398509481982");
        assert_eq!(quoted(u64::MAX, 2), "18446744073709551615 × 2");
    }
}
