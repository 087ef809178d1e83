//! Durations as users write them: `"10 s"`, `"10s"`, `"1.5 m"`, or a number of milliseconds.

use crate::error::{Error, Result};
use std::time::Duration;

/// The largest duration accepted, in milliseconds: the largest integer a JavaScript number (and a Lua
/// number in Redis) holds exactly.
pub const MAX_DURATION_MS: u64 = (1 << 53) - 1;

/// Parses `"<number> <unit>"` (the space is optional) into a whole, positive number of milliseconds,
/// rounded to the nearest as `@upstash/ratelimit` rounds (`"1.5 ms"` is 2 ms).
///
/// The number is decimal (`"10"`, `"1.5"`); units are `ms`, `s`, `m`, `h`, `d` and `w`. Surrounding
/// whitespace is ignored. Empty input, a missing or unknown unit, a sign, exponents, a result below
/// 1 ms once rounded, or one above [`MAX_DURATION_MS`] is an error that quotes the input.
pub fn parse_duration(input: &str) -> Result<Duration> {
    parse(input).map_err(|reason| Error::InvalidDuration {
        input: input.to_owned(),
        reason,
    })
}

/// [`parse_duration`], failing with the reason alone (the JavaScript bindings quote the value
/// themselves).
pub(crate) fn parse(input: &str) -> Result<Duration, &'static str> {
    let text = input.trim();
    let number_end = text
        .bytes()
        .position(|byte| !(byte.is_ascii_digit() || byte == b'.'))
        .ok_or("missing unit (one of ms, s, m, h, d, w)")?;
    let (number, unit) = text.split_at_checked(number_end).unwrap_or_default();
    let unit_ms: u64 = match unit.trim_start() {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "w" => 604_800_000,
        _ => return Err("expected a number followed by one of ms, s, m, h, d, w"),
    };
    // The digits before the point and, if there is one, after it (bytes: `number` is ASCII).
    let (whole, fraction) = match number.bytes().position(|byte| byte == b'.') {
        Some(point) => {
            let (whole, point_on) = number.split_at_checked(point).unwrap_or_default();
            (whole, point_on.get(1..))
        }
        None => (number, None),
    };
    let bad_fraction = |digits: &str| digits.is_empty() || digits.as_bytes().contains(&b'.');
    if whole.is_empty() || fraction.is_some_and(bad_fraction) {
        return Err("expected a number followed by one of ms, s, m, h, d, w");
    }
    // As @upstash/ratelimit: `Math.round(parseFloat(number) * unit)`. On these digits Rust's float
    // parsing is JavaScript's `parseFloat` (both correctly rounded), and `round` of a positive number
    // is `Math.round`. A whole number is multiplied as integers: the same up to 2^53, past which both
    // are too large, and a first decision need not compile float parsing.
    let millis = match fraction {
        None => (whole.parse::<u64>().ok())
            .and_then(|whole| whole.checked_mul(unit_ms))
            .map_or(f64::INFINITY, |millis| millis as f64),
        Some(_) => (number.parse().unwrap_or(f64::NAN) * unit_ms as f64).round(),
    };
    if millis > MAX_DURATION_MS as f64 {
        return Err("too large");
    }
    if millis.is_nan() || millis < 1.0 {
        return Err("less than 1 ms once rounded to whole milliseconds");
    }
    millis_in_range(millis as u64)
}

/// Checks a number of milliseconds given as a float (as JavaScript passes them): finite, whole, positive
/// and at most [`MAX_DURATION_MS`].
pub fn duration_from_millis(millis: f64) -> Result<Duration> {
    from_millis(millis).map_err(|reason| Error::InvalidDuration {
        input: crate::number::decimal(millis),
        reason,
    })
}

/// [`duration_from_millis`], failing with the reason alone (the JavaScript bindings quote the value
/// themselves).
pub(crate) fn from_millis(millis: f64) -> Result<Duration, &'static str> {
    if !millis.is_finite() {
        return Err("not a finite number");
    }
    if millis.fract() != 0.0 {
        return Err("not a whole number of milliseconds");
    }
    if millis < 0.0 {
        return Err("negative");
    }
    if millis > MAX_DURATION_MS as f64 {
        return Err("too large");
    }
    millis_in_range(millis as u64)
}

fn millis_in_range(millis: u64) -> Result<Duration, &'static str> {
    match millis {
        0 => Err("must be greater than zero"),
        m if m > MAX_DURATION_MS => Err("too large"),
        m => Ok(Duration::from_millis(m)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(input: &str) -> u128 {
        parse_duration(input).unwrap().as_millis()
    }

    #[test]
    fn accepts_the_upstash_grammar_and_decimals() {
        assert_eq!(ms("10 s"), 10_000);
        assert_eq!(ms("10s"), 10_000);
        assert_eq!(ms("250 ms"), 250);
        assert_eq!(ms("1.5 m"), 90_000);
        assert_eq!(ms("2 h"), 7_200_000);
        assert_eq!(ms("1 d"), 86_400_000);
        assert_eq!(ms("1 w"), 604_800_000);
        assert_eq!(ms(" 0.001 s "), 1);
        assert_eq!(ms("007 s"), 7_000);
        assert_eq!(ms("1.50000000000000000000000000000000000 s"), 1_500);
        assert_eq!(ms("0.0009765625 w"), 590_625);
        assert_eq!(ms("0.03125 d"), 2_700_000);
        // As JavaScript computes it: 9007199254740.991 is not exact in binary.
        assert_eq!(ms("9007199254740.991 s"), MAX_DURATION_MS as u128 - 1);
    }

    #[test]
    fn fractions_are_rounded_to_whole_milliseconds_as_the_peer_rounds() {
        // `Math.round(parseFloat(x) * unit)`, as @upstash/ratelimit's `ms()`.
        assert_eq!(ms("1.5 ms"), 2);
        assert_eq!(ms("0.5 ms"), 1);
        assert_eq!(ms("0.3333333333 h"), 1_200_000);
        assert_eq!(ms("0.00097656251 w"), 590_625);
        assert_eq!(ms("0.1 s"), 100);
        assert!(parse_duration("0.0000000001 w").is_err());
        assert!(parse_duration("0.4 ms").is_err());
        // Every decimal with up to 4 fraction digits against every unit: within half a millisecond.
        for unit in ["ms", "s", "m", "h", "d", "w"] {
            let unit_ms: u128 = match unit {
                "ms" => 1,
                "s" => 1_000,
                "m" => 60_000,
                "h" => 3_600_000,
                "d" => 86_400_000,
                _ => 604_800_000,
            };
            for tenths in 1..3_000u128 {
                let input = format!("{}.{:04} {unit}", tenths / 10_000, tenths % 10_000);
                let exact = tenths * unit_ms;
                match parse_duration(&input) {
                    Ok(duration) => {
                        assert!(
                            (duration.as_millis() * 10_000).abs_diff(exact) <= 5_000,
                            "{input}"
                        )
                    }
                    Err(_) => assert!(exact <= 5_000, "{input}"),
                }
            }
        }
    }

    #[test]
    fn refuses_everything_else_and_quotes_the_input() {
        for input in [
            "",
            "10",
            "10 x",
            "-1 s",
            "0 s",
            "0.0 ms",
            "s",
            "1..5 s",
            "1.2.3 s",
            ".5 s",
            "5. s",
            "1e3 s",
            "0.4 ms",
            "NaN s",
            "10 S",
            "10 sec",
            "+1 s",
            "99999999999999999999999999999999999 w",
            "1 s s",
        ] {
            let error = parse_duration(input).unwrap_err();
            assert!(
                error.to_string().contains(&format!("{input:?}")),
                "{input:?} gave {error}"
            );
        }
    }

    #[test]
    fn caps_at_the_largest_exact_javascript_integer() {
        assert_eq!(ms("9007199254740991 ms"), MAX_DURATION_MS as u128);
        assert!(parse_duration("9007199254740992 ms").is_err());
        assert!(parse_duration("20000000 w").is_err());
    }

    #[test]
    fn whole_numbers_are_what_their_decimals_are() {
        let wholes = [
            1,
            7,
            999,
            86_400,
            14_892_257_544,
            9_007_199_254_740,
            9_007_199_254_741,
        ];
        for unit in ["ms", "s", "m", "h", "d", "w"] {
            for whole in wholes.into_iter().chain([u64::MAX / 1_000]) {
                let decimal = parse_duration(&format!("{whole}.0 {unit}"));
                let parsed = parse_duration(&format!("{whole} {unit}"));
                assert_eq!(parsed.is_ok(), decimal.is_ok(), "{whole} {unit}");
                if let (Ok(parsed), Ok(decimal)) = (parsed, decimal) {
                    assert_eq!(parsed, decimal, "{whole} {unit}");
                }
            }
        }
    }

    #[test]
    fn numbers_of_milliseconds() {
        assert_eq!(duration_from_millis(1500.0).unwrap().as_millis(), 1500);
        for bad in [0.0, -1.0, 1.5, f64::NAN, f64::INFINITY, 1e300] {
            assert!(duration_from_millis(bad).is_err(), "{bad}");
        }
    }
}
