//! Numbers as the scripts and messages write them.

/// The most a count may be: 2^53 - 1, the largest integer JavaScript and Lua hold exactly.
const MAX_EXACT: f64 = 9_007_199_254_740_991.0;

/// `value` as a decimal that reads back as the same number: a whole number as an integer (`5`), any
/// other the shortest that round-trips (`0.5`), always in positional notation (`0.0000001` for 1e-7,
/// which Lua's `tonumber` reads as JavaScript's `1e-7`); `NaN` and `inf` for what is no number.
pub(crate) fn decimal(value: f64) -> String {
    match whole(value) {
        Some(integer) => itoa::Buffer::new().format(integer).to_owned(),
        None => positional(zmij::Buffer::new().format(value)),
    }
}

/// `shortest`, zmij's text of a number (serde_json's float formatter: the shortest digits that
/// round-trip, `.0` after a whole number, an exponent outside 1e-5 to 1e16), without the `.0` and with
/// its exponent written out as zeros.
fn positional(shortest: &str) -> String {
    let Some((mantissa, exponent)) = shortest.split_once('e') else {
        return shortest.strip_suffix(".0").unwrap_or(shortest).to_owned();
    };
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(magnitude) => ("-", magnitude),
        None => ("", mantissa),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = [whole, fraction].concat();
    // Where the point goes in `digits`: after `whole`, moved by the exponent.
    let point = whole.len() as i64 + exponent.parse::<i64>().unwrap_or_default();
    let mut text = String::from(sign);
    match usize::try_from(point) {
        Err(_) | Ok(0) => {
            text.push_str("0.");
            text.extend(std::iter::repeat_n('0', point.unsigned_abs() as usize));
            text.push_str(&digits);
        }
        Ok(point) if point >= digits.len() => {
            text.push_str(&digits);
            text.extend(std::iter::repeat_n('0', point - digits.len()));
        }
        Ok(point) => {
            text.push_str(&digits);
            text.insert(sign.len() + point, '.');
        }
    }
    text
}

/// `value` as an integer when [`decimal`] writes it as one: a whole number of at most 2^53 - 1 in
/// size.
pub(crate) fn whole(value: f64) -> Option<i64> {
    (value.fract() == 0.0 && value.abs() <= MAX_EXACT).then_some(value as i64)
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
            (1e-7, "0.0000001"),
            (2f64.powi(60), "1152921504606847000"),
        ] {
            assert_eq!(decimal(value), text);
        }
        for value in [0.1, 1.0 / 3.0, 1e-7, 123_456.789, 2f64.powi(60), 1e300] {
            assert_eq!(decimal(value).parse::<f64>(), Ok(value), "{value}");
        }
        for (value, text) in [
            (f64::NAN, "NaN"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (-1.5e-7, "-0.00000015"),
            (1e16 + 2.0, "10000000000000002"),
            (-1e21, "-1000000000000000000000"),
        ] {
            assert_eq!(decimal(value), text);
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(20_000))]

        /// Any number but a whole one in positional notation with as few digits as Rust's `Display`
        /// writes (which picks the other of two shortest decimals equally near, such as
        /// `1578068702703152.3` for 1578068702703152.25, where zmij picks `.2`), read back the same.
        #[test]
        fn writes_the_shortest_decimal_that_reads_back_the_same(value in proptest::num::f64::ANY) {
            if whole(value).is_some() {
                return Ok(());
            }
            let text = decimal(value);
            proptest::prop_assert_eq!(text.len(), value.to_string().len(), "{}", text);
            proptest::prop_assert!(!text.contains('e'), "{}", text);
            let same = |back: f64| back.to_bits() == value.to_bits() || back.is_nan() && value.is_nan();
            proptest::prop_assert!(text.parse().is_ok_and(same), "{}", text);
        }
    }
}
