//! A stored dynamic limit read as the scripts read it (`capacity` in prelude.lua), for the layouts
//! that read it before deciding: Lua 5.1's `tonumber` (C's `strtod`, whitespace around it allowed,
//! hexadecimal, exponents, `inf`, `nan`), then the same rounding and clamping.

use crate::algorithm::MAX_COUNT;

/// The capacity a stored limit `text` gives: 0 under a negative limit, at most 2^53 - 1, a fraction
/// rounded down, or up with `round_up` (the sliding window); `None` for text Lua reads as no number or
/// as NaN, which the scripts refuse as corrupt state.
pub(crate) fn capacity(text: &str, round_up: bool) -> Option<u64> {
    let limit = lua_number(text).filter(|limit| !limit.is_nan())?;
    let limit = if round_up { limit.ceil() } else { limit };
    // In range after the clamp, so the conversion is exact.
    Some(limit.floor().clamp(0.0, MAX_COUNT as f64) as u64)
}

/// The number Lua 5.1's `tonumber` reads from `text` (as Redis builds it, with glibc's `strtod`): C
/// whitespace around a signed decimal or hexadecimal number, `inf`, `infinity` or `nan`.
fn lua_number(text: &str) -> Option<f64> {
    let trimmed = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r'));
    let (negative, body) = match trimmed.strip_prefix('-') {
        Some(body) => (true, body),
        None => (false, trimmed.strip_prefix('+').unwrap_or(trimmed)),
    };
    let magnitude = match body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        Some(digits) => hexadecimal(digits)?,
        // Rust reads what strtod reads, but for a second sign, which it takes and strtod does not.
        None if body.starts_with(['+', '-']) => return None,
        None => body.parse::<f64>().ok()?,
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// A hexadecimal number after its `0x`, as `strtod` reads it: digits with an optional point (one digit
/// at least), then an optional binary exponent `p[+-]digits`.
fn hexadecimal(text: &str) -> Option<f64> {
    let (mantissa, exponent) = match text.split_once(['p', 'P']) {
        Some((mantissa, exponent)) => (mantissa, exponent.parse::<i32>().ok()?),
        None => (text, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let mut value = 0.0;
    for digit in whole.chars() {
        value = value * 16.0 + f64::from(digit.to_digit(16)?);
    }
    let mut scale = 1.0 / 16.0;
    for digit in fraction.chars() {
        value += f64::from(digit.to_digit(16)?) * scale;
        scale /= 16.0;
    }
    Some(value * 2f64.powi(exponent))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_limit_is_read_as_luas_tonumber_reads_it() {
        for (text, limit) in [
            ("5", Some(5)),
            ("2.5", Some(2)),
            ("0.5", Some(0)),
            ("-1", Some(0)),
            ("-3", Some(0)),
            ("007", Some(7)),
            (" 2 ", Some(2)),
            ("\t2\n", Some(2)),
            ("0x2", Some(2)),
            ("0X1p3", Some(8)),
            ("-0x2", Some(0)),
            ("1e-7", Some(0)),
            ("1e3", Some(1_000)),
            ("1.", Some(1)),
            (".5", Some(0)),
            ("+4", Some(4)),
            ("inf", Some(MAX_COUNT)),
            ("-inf", Some(0)),
            ("Infinity", Some(MAX_COUNT)),
            ("99999999999999999999", Some(MAX_COUNT)),
            ("9007199254740992", Some(MAX_COUNT)),
            ("nan", None),
            ("", None),
            (" ", None),
            ("junk", None),
            ("zero", None),
            ("--1", None),
            ("+-1", None),
            ("1e", None),
            ("0x", None),
            ("0xg", None),
            ("1 2", None),
            ("1_000", None),
        ] {
            assert_eq!(capacity(text, false), limit, "{text:?}");
        }
        for (text, limit) in [
            ("2.5", Some(3)),
            ("2.0", Some(2)),
            ("0.01", Some(1)),
            ("1e-7", Some(1)),
            ("-0.5", Some(0)),
            ("9007199254740990.5", Some(MAX_COUNT - 1)),
            ("9007199254740991.5", Some(MAX_COUNT)),
        ] {
            assert_eq!(capacity(text, true), limit, "{text:?} rounded up");
        }
    }
}
