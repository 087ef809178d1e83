//! The answer objects of the limit classes' methods, each built in one call into `boundary.js` where
//! it has numbers only, and `pending`, the Promise of the work left after an answer.

use super::promise::promise;
use crate::js::boundary;
use crate::ratelimit::{LimitResponse, Live, Pending, Remaining, Response};
use js_sys::{Array, Object, Reflect};
use wasm_bindgen::JsValue;

/// `{ dynamicLimit }`: the stored limit, or `null`.
pub fn dynamic_limit_object(limit: Option<u64>) -> JsValue {
    let value = limit.map_or(JsValue::NULL, |limit| (limit as f64).into());
    let object = Object::new();
    let _ = Reflect::set(&object, &"dynamicLimit".into(), &value);
    object.into()
}

/// `{ success, limit, remaining, reset, pending, reason?, limits?, live? }`; `pending` undefined when
/// nothing is left; `limits` (each `{ success, limit, remaining, reset, dryRun }`) with several limits,
/// `live` (`{ success, limit, remaining, reset, reason? }`) when a limit runs dry.
pub fn response_object(response: &Response, pending: &JsValue) -> JsValue {
    let reason = response
        .reason
        .map_or(JsValue::UNDEFINED, |reason| reason.as_str().into());
    let object = boundary::limit_response(
        response.success,
        response.limit as f64,
        response.remaining,
        response.reset as f64,
        pending,
        &reason,
    );
    if !response.limits.is_empty() {
        let limits: Array = response.limits.iter().map(limit_object).collect();
        let _ = Reflect::set(&object, &"limits".into(), &limits);
    }
    if let Some(live) = &response.live {
        let _ = Reflect::set(&object, &"live".into(), &live_object(live));
    }
    object
}

/// `{ success, limit, remaining, reset, dryRun }`, one limit's answer among several.
fn limit_object(limit: &LimitResponse) -> JsValue {
    object_of(&[
        ("success", limit.success.into()),
        ("limit", (limit.limit as f64).into()),
        ("remaining", limit.remaining.into()),
        ("reset", (limit.reset as f64).into()),
        ("dryRun", limit.dry_run.into()),
    ])
}

/// `{ success, limit, remaining, reset, reason? }`, what live limits would have answered.
fn live_object(live: &Live) -> JsValue {
    let object = object_of(&[
        ("success", live.success.into()),
        ("limit", (live.limit as f64).into()),
        ("remaining", live.remaining.into()),
        ("reset", (live.reset as f64).into()),
    ]);
    if let Some(reason) = live.reason {
        let _ = Reflect::set(&object, &"reason".into(), &reason.as_str().into());
    }
    object
}

/// An object of `fields`, in order.
fn object_of(fields: &[(&str, JsValue)]) -> JsValue {
    let object = Object::new();
    for (key, value) in fields {
        let _ = Reflect::set(&object, &(*key).into(), value);
    }
    object.into()
}

/// `{ remaining, reset, limit, limits? }`, the answer of `getRemaining`; `limits`, each limit's
/// `{ remaining, reset, limit }`, with several limits.
pub fn remaining_object(remaining: &Remaining) -> JsValue {
    let object = boundary::remaining_response(
        remaining.remaining,
        remaining.reset as f64,
        remaining.limit as f64,
    );
    if !remaining.limits.is_empty() {
        let limits: Array = remaining.limits.iter().map(remaining_object).collect();
        let _ = Reflect::set(&object, &"limits".into(), &limits);
    }
    object
}

/// `pending`: the work left after an answer, which runs now whether or not anyone awaits it, as a
/// Promise that settles (never rejects) when it is done; undefined when there is none.
pub fn pending_promise(pending: Option<Pending>) -> JsValue {
    match pending {
        Some(work) => promise(Box::pin(async move {
            work.await;
            Ok(JsValue::UNDEFINED)
        }))
        .into(),
        None => JsValue::UNDEFINED,
    }
}
