//! Numbers as the scripts and messages write them.

/// The most a count may be: 2^53 - 1, the largest integer JavaScript and Lua hold exactly.
const MAX_EXACT: f64 = 9_007_199_254_740_991.0;

/// `value` as a decimal that reads back as the same number: a whole number as an integer (`5`), any
/// other the shortest that round-trips (`0.5`), always in positional notation (`0.0000001` for 1e-7,
/// which Lua's `tonumber` reads as JavaScript's `1e-7`); `NaN` and `inf` for what is no number.
pub(crate) fn decimal(value: f64) -> String {
    match whole(value) {
        Some(integer) => itoa::Buffer::new().format(integer).to_owned(),
        None => value.to_string(),
    }
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
    }
}
