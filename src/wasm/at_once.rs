//! The decision answered in one crossing: `limit()` on a store in this process (or denied by the
//! ephemeral cache) makes no call from WebAssembly into JavaScript. The package's `Ratelimit`
//! (`pkg-template/ratelimit.js`, a subclass of the class of [`super::ratelimit`]) calls
//! `limitAtOnce(ratelimit, identifier, now, rate)` with the time read by JavaScript, reads the numbers
//! of the answer from the limit's slots in WebAssembly memory (a `Float64Array` it holds, from
//! `atOnceSlots`), and makes the answer object and its settled Promise itself. Anything else (an
//! error to throw, a lone surrogate to look at, I/O) answers [`NOT_AT_ONCE`] and goes the way of
//! every other call, `Ratelimit.prototype.limit`.
//!
//! Neither function is exported by the package's entries: they are the two halves' private seam.

use super::ratelimit::{JsRatelimit, SLOTS};
use crate::ratelimit::{Reason, Response};
use js_sys::Float64Array;
use wasm_bindgen::prelude::*;

/// The answer of `limitAtOnce` when it did not decide.
pub const NOT_AT_ONCE: u32 = 0;

/// Decides `rate` on `identifier` at `now_ms` (`Date.now()`) when that needs no I/O: the numbers in
/// the slots and the [`code`] returned; or [`NOT_AT_ONCE`].
#[wasm_bindgen(js_name = limitAtOnce, skip_typescript)]
pub fn limit_at_once(ratelimit: &JsRatelimit, identifier: &str, now_ms: f64, rate: f64) -> u32 {
    // U+FFFD may stand for a lone surrogate: only the JavaScript string can tell.
    if !identifier.is_ascii() && identifier.contains('\u{FFFD}') {
        return NOT_AT_ONCE;
    }
    let now_micros = (now_ms as u64).saturating_mul(1_000);
    match ratelimit.decide_at_once(identifier, rate, now_micros) {
        Some(Ok(response)) => {
            ratelimit.write_slots(&response);
            code(&response)
        }
        Some(Err(_)) | None => NOT_AT_ONCE,
    }
}

/// The limit's slots as a `Float64Array` over WebAssembly memory, or `undefined` when its decisions
/// always need I/O (then `limitAtOnce` is never called). A view goes empty when the memory grows: the
/// caller asks again.
#[wasm_bindgen(js_name = atOnceSlots, skip_typescript)]
pub fn at_once_slots(ratelimit: &JsRatelimit) -> Option<Float64Array> {
    let (address, answers_at_once) = ratelimit.slots();
    if !answers_at_once {
        return None;
    }
    let memory: js_sys::WebAssembly::Memory = wasm_bindgen::memory().unchecked_into();
    Some(Float64Array::new_with_byte_offset_and_length(
        &memory.buffer(),
        address as u32,
        SLOTS as u32,
    ))
}

/// The code of a decided `response`: bit 0 set (never [`NOT_AT_ONCE`]), bit 1 `success`, the bits
/// above the reason (0 none, then `timeout`, `cacheBlock`, `error`, `denyList`: the order of `REASONS`
/// in `ratelimit.js`).
fn code(response: &Response) -> u32 {
    let reason = match response.reason {
        None => 0,
        Some(Reason::Timeout) => 1,
        Some(Reason::CacheBlock) => 2,
        Some(Reason::Error) => 3,
        Some(Reason::DenyList) => 4,
    };
    reason << 2 | u32::from(response.success) << 1 | 1
}
