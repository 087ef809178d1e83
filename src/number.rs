//! Numbers as the scripts and messages write them, through serde_json's formatter and parser (which
//! the crate links for JSON anyway) rather than core's, on every target alike.

/// The most a count may be: 2^53 - 1, the largest integer JavaScript and Lua hold exactly.
const MAX_EXACT: f64 = 9_007_199_254_740_991.0;

/// `value` as a decimal that reads back as the same number: a whole number as an integer (`5`), any
/// other the shortest that round-trips (`0.5`, `1e-7`, which Lua's `tonumber` reads too); `NaN`,
/// `inf` and `-inf` by name.
pub(crate) fn decimal(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() <= MAX_EXACT {
        (value as i64).to_string()
    } else if value.is_finite() {
        serde_json::to_string(&value).unwrap_or_default()
    } else if value.is_nan() {
        "NaN".to_owned()
    } else if value > 0.0 {
        "inf".to_owned()
    } else {
        "-inf".to_owned()
    }
}

/// The number a decimal string holds (as JSON writes numbers, which is also how Lua's `tostring`
/// writes finite ones), exactly rounded, surrounding whitespace ignored; `None` for anything else.
pub(crate) fn parse_decimal(text: &str) -> Option<f64> {
    serde_json::from_str::<f64>(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn whole_numbers_are_integers_and_fractions_round_trip() {
        for (value, text) in [
            (5.0, "5"),
            (-3.0, "-3"),
            (0.0, "0"),
            (1_796_220_043_830.0, "1796220043830"),
            (MAX_EXACT, "9007199254740991"),
            (0.5, "0.5"),
            (-2.25, "-2.25"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(decimal(value), text);
        }
        for value in [0.1, 1.0 / 3.0, 1e-7, 123_456.789, 2f64.powi(60), 1e300] {
            assert_eq!(parse_decimal(&decimal(value)), Some(value), "{value}");
        }
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn reads_what_lua_writes_and_nothing_else() {
        assert_eq!(parse_decimal("0.10000000000000001"), Some(0.1));
        assert_eq!(parse_decimal("-0"), Some(-0.0));
        assert_eq!(parse_decimal("3"), Some(3.0));
        assert_eq!(parse_decimal("1e5"), Some(100_000.0));
        for bad in ["", "12abc", "inf", "nan", "0x10", "+1", "1.", ".5"] {
            assert_eq!(parse_decimal(bad), None, "{bad:?}");
        }
    }
}
