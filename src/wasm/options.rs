//! Reading options from JavaScript values, with errors that name the field and quote the value.

use crate::algorithm::MAX_COUNT;
use crate::duration::{duration_from_millis, parse_duration};
use crate::error::Error;
use js_sys::{Function, Reflect};
use std::time::Duration;
use wasm_bindgen::{JsCast, JsValue};

/// What a binding returns: a thrown JavaScript value on failure.
pub type JsResult<T> = std::result::Result<T, JsValue>;

/// A `TypeError` saying `field` (of `context`) must be `expected`, quoting `value`.
pub fn type_error(context: &str, field: &str, expected: &str, value: &JsValue) -> JsValue {
    js_sys::TypeError::new(&format!(
        "{context}: `{field}` must be {expected}, got {}",
        describe(value)
    ))
    .into()
}

/// A `RangeError` saying `field` (of `context`) `reason`, quoting `value`.
pub fn range_error(context: &str, field: &str, reason: &str, value: &JsValue) -> JsValue {
    js_sys::RangeError::new(&format!(
        "{context}: `{field}` {reason}, got {}",
        describe(value)
    ))
    .into()
}

/// The crate's error as a JavaScript one: bad input is a `RangeError`; an unsupported operation (say,
/// dynamic limits not enabled) and everything else an `Error`.
pub fn to_js_error(context: &str, error: &Error) -> JsValue {
    if error.is_invalid_input() && !matches!(error, Error::Unsupported { .. }) {
        js_sys::RangeError::new(&format!("{context}: {error}")).into()
    } else {
        js_sys::Error::new(&format!("{context}: {error}")).into()
    }
}

/// A short, quoting description of any JavaScript value, for error messages.
pub fn describe(value: &JsValue) -> String {
    if let Some(text) = value.as_string() {
        let quoted = crate::error::quote(&text);
        if quoted.chars().count() > 80 {
            // By characters: cutting bytes could split one, and `truncate` would panic.
            return quoted.chars().take(77).chain("...".chars()).collect();
        }
        return quoted;
    }
    if let Some(number) = value.as_f64() {
        return js_number(number);
    }
    if let Some(flag) = value.as_bool() {
        return flag.to_string();
    }
    if value.is_undefined() {
        return "undefined".to_owned();
    }
    if value.is_null() {
        return "null".to_owned();
    }
    if value.is_function() {
        return "a function".to_owned();
    }
    if value.is_bigint() {
        return "a bigint".to_owned();
    }
    if value.is_symbol() {
        return "a symbol".to_owned();
    }
    if js_sys::Array::is_array(value) {
        return "an array".to_owned();
    }
    "an object".to_owned()
}

/// A number as JavaScript prints it (`NaN`, `Infinity`, `10`, `1.5`).
fn js_number(number: f64) -> String {
    if number.is_nan() {
        "NaN".to_owned()
    } else if number.is_infinite() {
        if number > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        }
        .to_owned()
    } else {
        crate::number::format_f64(number)
    }
}

/// `object[key]`; a throwing getter is rethrown.
pub fn get(object: &JsValue, key: &str) -> JsResult<JsValue> {
    Reflect::get(object, &key.into())
}

/// Checks that `value` (the argument `field` of `context`) is an object, or undefined when `optional`.
pub fn object(context: &str, field: &str, value: &JsValue, optional: bool) -> JsResult<bool> {
    if optional && value.is_undefined() {
        return Ok(false);
    }
    if value.is_object() && !value.is_null() && !value.is_function() {
        Ok(true)
    } else {
        Err(type_error(context, field, "an object", value))
    }
}

/// A whole count from 1 to 2^53 - 1.
pub fn count(context: &str, field: &str, value: &JsValue) -> JsResult<u64> {
    let Some(number) = value.as_f64() else {
        return Err(type_error(context, field, "a number", value));
    };
    if !number.is_finite() || number.fract() != 0.0 || number < 1.0 || number > MAX_COUNT as f64 {
        return Err(range_error(
            context,
            field,
            "must be a whole number from 1 to 2^53 - 1",
            value,
        ));
    }
    Ok(number as u64)
}

/// A number of milliseconds, not yet range-checked (the caller knows its range).
pub fn milliseconds(context: &str, field: &str, value: &JsValue) -> JsResult<f64> {
    value
        .as_f64()
        .ok_or_else(|| type_error(context, field, "a number of milliseconds", value))
}

/// A duration: a string such as `"10 s"` or a number of milliseconds.
pub fn duration(context: &str, field: &str, value: &JsValue) -> JsResult<Duration> {
    let parsed = if let Some(text) = value.as_string() {
        parse_duration(&text)
    } else if let Some(number) = value.as_f64() {
        duration_from_millis(number)
    } else {
        return Err(type_error(
            context,
            field,
            "a duration such as \"10 s\" or a number of milliseconds",
            value,
        ));
    };
    parsed.map_err(|error| {
        let reason = match error {
            Error::InvalidDuration { reason, .. } => reason,
            _ => "is invalid",
        };
        range_error(
            context,
            field,
            &format!("must be a positive duration such as \"10 s\" or a number of milliseconds ({reason})"),
            value,
        )
    })
}

/// An optional non-empty string.
pub fn string(context: &str, field: &str, value: &JsValue, allow_empty: bool) -> JsResult<String> {
    let Some(text) = value.as_string() else {
        return Err(type_error(context, field, "a string", value));
    };
    if text.is_empty() && !allow_empty {
        return Err(range_error(context, field, "must not be empty", value));
    }
    Ok(text)
}

/// An optional function.
pub fn function(context: &str, field: &str, value: &JsValue) -> JsResult<Option<Function>> {
    if value.is_undefined() {
        return Ok(None);
    }
    // `is_function` rather than `instanceof`: a function from another realm is fine.
    if value.is_function() {
        Ok(Some(value.clone().unchecked_into()))
    } else {
        Err(type_error(context, field, "a function", value))
    }
}
