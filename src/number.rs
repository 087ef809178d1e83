//! Floating-point numbers to and from decimal text, exactly, without shipping Rust's float formatting
//! and parsing (about 25 KB of wasm) in the WebAssembly package.
//!
//! Both directions are exact: formatting gives the shortest decimal that reads back as the same
//! number, parsing rounds correctly to the nearest. On wasm the JavaScript engine does the work
//! (`String(x)` and `parseFloat`, which ECMAScript specifies to be exactly that); natively Rust's own
//! `Display` and `FromStr` do. Whole numbers, the common case (window costs, counts), are formatted
//! as integers on both. The two differ only in notation: JavaScript writes `1e-7`, `1e+21` and
//! `Infinity` where Rust writes `0.0000001`, `1000000000000000000000` and `inf`; Lua's `tonumber`
//! reads both the same.

/// The shortest decimal text that reads back as exactly `value` (`"5"`, `"0.5"`, `"0.1"`).
pub(crate) fn format_f64(value: f64) -> String {
    // Exact for whole numbers of magnitude below 2^63; -0 prints as 0, which reads back as 0 (equal).
    if value.fract() == 0.0 && value.abs() < 9.2e18 {
        return (value as i64).to_string();
    }
    imp::format(value)
}

/// Parses decimal text, `[+-]?(D+|D+.D*|.D+)([eE][+-]?D+)?` with `D` a digit, to the nearest
/// `f64`; any other text (`inf`, `nan`, hex, spaces) is `None`. Too large a number is infinite.
pub(crate) fn parse_f64(text: &str) -> Option<f64> {
    let bytes = text.as_bytes();
    let mut at = usize::from(matches!(bytes.first(), Some(b'+' | b'-')));
    let digits = |at: &mut usize| {
        let start = *at;
        while bytes.get(*at).is_some_and(u8::is_ascii_digit) {
            *at += 1;
        }
        *at - start
    };
    let mut mantissa = digits(&mut at);
    if bytes.get(at) == Some(&b'.') {
        at += 1;
        mantissa += digits(&mut at);
    }
    if mantissa == 0 {
        return None;
    }
    if let Some(b'e' | b'E') = bytes.get(at) {
        at += 1;
        if let Some(b'+' | b'-') = bytes.get(at) {
            at += 1;
        }
        if digits(&mut at) == 0 {
            return None;
        }
    }
    (at == bytes.len()).then(|| imp::parse(text))
}

/// Decimal integer text as `str::parse::<i64>` reads it (an optional sign, then ASCII digits, in range),
/// without core's generic integer parser in the WebAssembly package.
pub(crate) fn parse_i64(text: &str) -> Option<i64> {
    let (negative, digits) = match text.as_bytes() {
        [b'-', digits @ ..] => (true, digits),
        [b'+', digits @ ..] => (false, digits),
        digits => (false, digits),
    };
    let magnitude = parse_digits(digits).filter(|_| !digits.is_empty())?;
    if negative {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// ASCII digits as a `u64` (0 for none); `None` for any other byte or a value too large.
pub(crate) fn parse_digits(digits: &[u8]) -> Option<u64> {
    digits.iter().try_fold(0u64, |value, &digit| {
        let digit = digit.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        value.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

#[cfg(target_arch = "wasm32")]
pub(crate) use imp::js_string;

#[cfg(target_arch = "wasm32")]
mod imp {
    use wasm_bindgen::prelude::wasm_bindgen;
    use wasm_bindgen::JsValue;

    #[wasm_bindgen]
    extern "C" {
        /// `String(value)`; for a number, ECMAScript's `Number::toString`: the shortest decimal that
        /// reads back as the same number.
        #[wasm_bindgen(js_name = String)]
        pub(crate) fn js_string(value: &JsValue) -> String;

        /// ECMAScript's `parseFloat`: the nearest number to the decimal text.
        #[wasm_bindgen(js_name = parseFloat)]
        fn js_parse_float(text: &str) -> f64;
    }

    pub(super) fn format(value: f64) -> String {
        js_string(&JsValue::from_f64(value))
    }

    /// `text` is already checked to be decimal text, all of which `parseFloat` reads.
    pub(super) fn parse(text: &str) -> f64 {
        js_parse_float(text)
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    pub(super) fn format(value: f64) -> String {
        value.to_string()
    }

    /// `text` is already checked to be decimal text, all of which Rust's parser reads.
    pub(super) fn parse(text: &str) -> f64 {
        text.parse().unwrap_or(f64::NAN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn whole_numbers_print_as_integers() {
        for (value, text) in [
            (0.0, "0"),
            (-0.0, "0"),
            (5.0, "5"),
            (-3.0, "-3"),
            (9_007_199_254_740_991.0, "9007199254740991"),
            (-9_007_199_254_740_992.0, "-9007199254740992"),
            (1e18, "1000000000000000000"),
        ] {
            assert_eq!(format_f64(value), text);
        }
    }

    #[test]
    fn fractions_print_shortest_and_read_back_exactly() {
        for (value, text) in [
            (0.5, "0.5"),
            (0.1, "0.1"),
            (-0.25, "-0.25"),
            (4.75, "4.75"),
            (1.0 / 3.0, "0.3333333333333333"),
            (0.1 + 0.2, "0.30000000000000004"),
            (123_456.789, "123456.789"),
            (4_503_599_627_370_495.5, "4503599627370495.5"),
            (0.000_001, "0.000001"),
        ] {
            assert_eq!(format_f64(value), text);
            assert_eq!(parse_f64(text), Some(value));
        }
        for value in [
            1e-7,
            1.5e-300,
            f64::MIN_POSITIVE,
            5e-324,
            1e300,
            f64::MAX,
            -1e21,
        ] {
            assert_eq!(parse_f64(&format_f64(value)), Some(value), "{value:e}");
        }
    }

    #[test]
    fn every_double_round_trips() {
        // A deterministic spread over the bit patterns of finite doubles.
        let mut bits: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..20_000 {
            bits = bits.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let value = f64::from_bits(bits);
            if value.is_finite() {
                assert_eq!(parse_f64(&format_f64(value)), Some(value), "{bits:#x}");
            }
        }
    }

    #[test]
    fn non_finite_numbers_print_by_name() {
        let texts = [
            format_f64(f64::NAN),
            format_f64(f64::INFINITY),
            format_f64(f64::NEG_INFINITY),
        ];
        if cfg!(target_arch = "wasm32") {
            assert_eq!(texts, ["NaN", "Infinity", "-Infinity"]);
        } else {
            assert_eq!(texts, ["NaN", "inf", "-inf"]);
        }
    }

    #[test]
    fn reads_what_lua_writes_with_17_digits() {
        // string.format('%.17g', x) as Redis's Lua writes token counts.
        for (text, value) in [
            ("6", 6.0),
            ("0.10000000000000001", 0.1),
            ("4.75", 4.75),
            ("0.33333333333333331", 1.0 / 3.0),
            ("9007199254740991", 9_007_199_254_740_991.0),
            ("9.9999999999999995e-08", 1e-7),
            ("1.0000000000000001e+300", 1e300),
            ("-0", -0.0),
        ] {
            assert_eq!(parse_f64(text), Some(value), "{text}");
        }
    }

    #[test]
    fn reads_integers_as_str_parse_does() {
        let texts = [
            "",
            "-",
            "+",
            "0",
            "-0",
            "+0",
            "7",
            "+42",
            "-42",
            "007",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "-9223372036854775809",
            "18446744073709551616",
            "99999999999999999999",
            "1.0",
            "1e3",
            " 1",
            "1 ",
            "--1",
            "+-1",
            "0x10",
            "١",
            "12a",
            "/",
            ":",
        ];
        for text in texts {
            assert_eq!(parse_i64(text), text.parse().ok(), "{text:?}");
        }
    }

    #[test]
    fn reads_only_decimal_text() {
        for (text, value) in [
            ("1.", 1.0),
            (".5", 0.5),
            ("+2", 2.0),
            ("-2.5E3", -2500.0),
            ("1e400", f64::INFINITY),
            ("1e-400", 0.0),
        ] {
            assert_eq!(parse_f64(text), Some(value), "{text}");
        }
        for text in [
            "", "-", ".", "e5", "1e", "1e+", "inf", "-inf", "Infinity", "nan", "NaN", "0x10", " 1",
            "1 ", "1,5", "1..2", "1.2.3", "--1", "1e5.5", "١",
        ] {
            assert_eq!(parse_f64(text), None, "{text:?}");
        }
    }
}
