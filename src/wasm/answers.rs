//! The answer objects of the limit classes' methods, each built in one call into `boundary.js` where
//! it has numbers only, and `pending`, the Promise of the work left after an answer.

use super::promise::promise;
use crate::js::boundary;
use crate::ratelimit::{Pending, Remaining, Response};
use js_sys::{Object, Reflect};
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
        let numbers: Vec<f64> = (response.limits.iter())
            .flat_map(|limit| {
                [
                    f64::from(u8::from(limit.success)),
                    limit.limit as f64,
                    limit.remaining,
                    limit.reset as f64,
                    f64::from(u8::from(limit.dry_run)),
                ]
            })
            .collect();
        boundary::set_limits(&object, &numbers);
    }
    if let Some(live) = &response.live {
        let reason = live
            .reason
            .map_or(JsValue::UNDEFINED, |reason| reason.as_str().into());
        boundary::set_live(
            &object,
            live.success,
            live.limit as f64,
            live.remaining,
            live.reset as f64,
            &reason,
        );
    }
    object
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
        let numbers: Vec<f64> = (remaining.limits.iter())
            .flat_map(|limit| [limit.remaining, limit.reset as f64, limit.limit as f64])
            .collect();
        boundary::set_remaining_limits(&object, &numbers);
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
