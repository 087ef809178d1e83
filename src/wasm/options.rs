//! Reading options from JavaScript values; a bad one is a `TypeError` or `RangeError` (see
//! [`super::errors`]).

use super::errors::{range_error, type_error};
use crate::algorithm::MAX_COUNT;
use crate::duration;
use js_sys::{Object, Reflect};
use std::time::Duration;
use wasm_bindgen::{JsCast, JsValue};

/// What a binding returns: a thrown JavaScript value on failure.
pub type JsResult<T> = std::result::Result<T, JsValue>;

/// `object[key]`; a throwing getter is rethrown.
pub fn get(object: &JsValue, key: &str) -> JsResult<JsValue> {
    Reflect::get(object, &key.into())
}

/// `object[key]` when `object` is an object (checked as the argument `field` of `context`), undefined
/// when `object` is undefined and `optional`.
pub fn field(
    context: &str,
    field: &str,
    object: &JsValue,
    optional: bool,
    key: &str,
) -> JsResult<JsValue> {
    if optional && object.is_undefined() {
        return Ok(JsValue::UNDEFINED);
    }
    if !object.is_object() {
        return Err(type_error(context, field, "must be an object", object));
    }
    get(object, key)
}

/// A whole count from 1 to 2^53 - 1, or from 0 when `zero` is allowed.
pub fn count(context: &str, field: &str, value: &JsValue, zero: bool) -> JsResult<u64> {
    let count = number(context, field, "must be a number", value)?;
    let least = if zero { 0.0 } else { 1.0 };
    if !(count.fract() == 0.0 && (least..=MAX_COUNT as f64).contains(&count)) {
        let rule = if zero {
            "must be a whole number from 0 to 2^53 - 1"
        } else {
            "must be a whole number from 1 to 2^53 - 1"
        };
        return Err(range_error(context, field, rule, value));
    }
    Ok(count as u64)
}

/// A number, else a `TypeError` whose text is `expected`; the caller checks its range.
pub fn number(context: &str, field: &str, expected: &str, value: &JsValue) -> JsResult<f64> {
    value
        .as_f64()
        .ok_or_else(|| type_error(context, field, expected, value))
}

/// A number of milliseconds that `valid` accepts, else a `TypeError` (not a number) or a `RangeError`
/// whose text is `rule`.
pub fn milliseconds(
    context: &str,
    field: &str,
    value: &JsValue,
    valid: fn(f64) -> bool,
    rule: &str,
) -> JsResult<f64> {
    let millis = number(context, field, "must be a number of milliseconds", value)?;
    if !valid(millis) {
        return Err(range_error(context, field, rule, value));
    }
    Ok(millis)
}

/// A duration: a string such as `"10 s"` or a number of milliseconds.
pub fn duration(context: &str, field: &str, value: &JsValue) -> JsResult<Duration> {
    let parsed = if let Some(text) = value.as_string() {
        duration::parse(&text)
    } else {
        duration::from_millis(number(
            context,
            field,
            "must be a duration such as \"10 s\" or a number of milliseconds",
            value,
        )?)
    };
    parsed.map_err(|reason| {
        range_error(
            context,
            field,
            &[
                "must be a positive duration such as \"10 s\" or a number of milliseconds (",
                reason,
                ")",
            ]
            .concat(),
            value,
        )
    })
}

/// One of `choices` (a name and its value) by its name, `default` when undefined; else a `TypeError`
/// (not a string) or a `RangeError` (another string) whose text is `rule`.
pub fn one_of<T: Copy>(
    context: &str,
    field: &str,
    value: &JsValue,
    default: T,
    choices: &[(&str, T)],
    rule: &str,
) -> JsResult<T> {
    if value.is_undefined() {
        return Ok(default);
    }
    let Some(text) = value.as_string() else {
        return Err(type_error(context, field, rule, value));
    };
    match choices.iter().find(|(name, _)| *name == text) {
        Some(&(_, choice)) => Ok(choice),
        None => Err(range_error(context, field, rule, value)),
    }
}

/// A string, not empty unless `allow_empty`.
pub fn string(context: &str, field: &str, value: &JsValue, allow_empty: bool) -> JsResult<String> {
    let Some(text) = value.as_string() else {
        return Err(type_error(context, field, "must be a string", value));
    };
    if text.is_empty() && !allow_empty {
        return Err(range_error(context, field, "must not be empty", value));
    }
    Ok(text)
}

/// Checks that every own enumerable key of `object` is one of `known`; else a `TypeError` naming the
/// first unknown one and the nearest known name.
pub fn known_keys(context: &str, object: &JsValue, known: &[&str]) -> JsResult<()> {
    let Some(object) = object.dyn_ref::<Object>() else {
        return Ok(());
    };
    for key in Object::keys(object) {
        let key = key.as_string().unwrap_or_default();
        if !known.contains(&key.as_str()) {
            return Err(unknown_option(context, &key, known));
        }
    }
    Ok(())
}

/// The `TypeError` of an option `key` that `context` does not know, suggesting the nearest of `known`
/// when one is close (at most a third of its letters differ, ignoring case), else listing them all.
pub fn unknown_option(context: &str, key: &str, known: &[&str]) -> JsValue {
    let nearest = known
        .iter()
        .map(|name| {
            (
                strsim::levenshtein(&key.to_ascii_lowercase(), &name.to_ascii_lowercase()),
                name,
            )
        })
        .min()
        .filter(|(distance, name)| *distance <= (name.len().max(key.len()) / 3).max(1));
    let hint = match nearest {
        Some((_, name)) => ["did you mean `", name, "`?"].concat(),
        None => ["known options: ", &known.join(", ")].concat(),
    };
    js_sys::TypeError::new(&[context, ": unknown option `", key, "` (", &hint, ")"].concat()).into()
}
