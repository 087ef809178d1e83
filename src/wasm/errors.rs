//! The errors bad input throws: a `TypeError` or `RangeError` that names the field and quotes the
//! value, and the crate's own errors as JavaScript ones.

use crate::error::Error;
use wasm_bindgen::JsValue;

/// A `TypeError`: `"<context>: `<field>` <text>, got <value>"`, `text` saying what it must be.
pub fn type_error(context: &str, field: &str, text: &str, value: &JsValue) -> JsValue {
    bad_input(false, context, field, text, value)
}

/// A `RangeError`: `"<context>: `<field>` <text>, got <value>"`, `text` saying what is wrong.
pub fn range_error(context: &str, field: &str, text: &str, value: &JsValue) -> JsValue {
    bad_input(true, context, field, text, value)
}

/// Both, built in one place.
fn bad_input(range: bool, context: &str, field: &str, text: &str, value: &JsValue) -> JsValue {
    let message = [
        context,
        ": `",
        field,
        "` ",
        text,
        ", got ",
        &describe(value),
    ]
    .concat();
    if range {
        js_sys::RangeError::new(&message).into()
    } else {
        js_sys::TypeError::new(&message).into()
    }
}

/// The crate's error as a JavaScript one: bad input is a `RangeError`, an identifier that would reach a
/// shared key and a `fetch` that broke its contract a `TypeError`; an unsupported operation (say,
/// dynamic limits not enabled), a key layout a Redis Cluster refuses and everything else an `Error`.
pub fn to_js_error(context: &str, error: &Error) -> JsValue {
    let message = format!("{context}: {error}");
    if matches!(
        error,
        Error::InvalidIdentifier { .. } | Error::Fetch { .. } | Error::Unconfigured { .. }
    ) {
        js_sys::TypeError::new(&message).into()
    } else if error.is_invalid_input()
        && !matches!(error, Error::Unsupported { .. } | Error::CrossSlot { .. })
    {
        js_sys::RangeError::new(&message).into()
    } else {
        js_sys::Error::new(&message).into()
    }
}

/// A short, quoting description of any JavaScript value: a string quoted (cut at 80 characters), an
/// object, array or function by its kind, anything else as `String(value)` writes it (`10`, `NaN`,
/// `undefined`, `Symbol(x)`).
pub fn describe(value: &JsValue) -> String {
    if let Some(text) = value.as_string() {
        let mut quoted = crate::error::quote(&text);
        // Over 80 characters, cut at the 77th (a character's start, where `truncate` never panics).
        if quoted.char_indices().nth(80).is_some() {
            if let Some((cut, _)) = quoted.char_indices().nth(77) {
                quoted.truncate(cut);
            }
            quoted.push_str("...");
        }
        return quoted;
    }
    let kind = if value.is_function() {
        "a function"
    } else if js_sys::Array::is_array(value) {
        "an array"
    } else if value.is_object() {
        "an object"
    } else if value.is_bigint() {
        "a bigint"
    } else {
        return crate::js::globals::string(value);
    };
    kind.to_owned()
}
