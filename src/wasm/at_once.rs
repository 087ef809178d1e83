//! `limit()` without options, its identifier written in place: the package's `Ratelimit`
//! (`pkg-template/ratelimit.js`, a subclass of the class of [`super::ratelimit`]) writes the
//! identifier's UTF-8 into bytes of WebAssembly memory it holds a view of (`atOnceIdentifier`), so
//! that Rust reads it without a call into JavaScript, and then
//!
//! - on a store in this process (or denied by the ephemeral cache), where the decision needs no I/O,
//!   answers in one crossing: `limitAtOnce(ratelimit, length, now, rate)` with the time read by
//!   JavaScript decides, and JavaScript reads the numbers of the answer from the limit's slots (a
//!   `Float64Array` from `atOnceSlots`) and makes the answer object and its settled Promise itself;
//!   no call from WebAssembly into JavaScript, no allocation;
//! - on Redis, `limitWritten(ratelimit, length)` answers the Promise of the compiled `limit`.
//!
//! Anything else (an error to throw, a lone surrogate to look at, an identifier longer than the bytes,
//! protection or analytics on) answers [`NOT_AT_ONCE`] or `undefined`, or is not asked, and goes the
//! way of every other call, `Ratelimit.prototype.limit`.
//!
//! None of these functions is exported by the package's entries: they are the two halves' private
//! seam.

use super::in_place::REASONS;
use super::limit_methods;
use super::ratelimit::JsRatelimit;
use js_sys::{Float64Array, Promise, Uint8Array};
use wasm_bindgen::prelude::*;

/// The answer of `limitAtOnce` when it did not decide.
pub const NOT_AT_ONCE: u32 = 0;

/// Decides `rate` on the `length` bytes of identifier written through `atOnceIdentifier` at `now_ms`
/// (`Date.now()`) when that needs no I/O: the numbers in the slots and the [`code`](super::in_place::code) returned; or
/// [`NOT_AT_ONCE`].
#[wasm_bindgen(js_name = limitAtOnce, skip_typescript)]
pub fn limit_at_once(ratelimit: &JsRatelimit, length: usize, now_ms: f64, rate: f64) -> u32 {
    let Some((limit, in_place)) = ratelimit.answering_at_once() else {
        return NOT_AT_ONCE;
    };
    // A float to integer cast saturates (and takes NaN to 0): no overflow to check.
    let now_micros = (now_ms.trunc() * 1_000.0) as u64;
    in_place
        .decide(limit, length, rate, now_micros)
        .unwrap_or(NOT_AT_ONCE)
}

/// `limit(identifier)` on the `length` bytes of identifier written through `atOnceIdentifier`, for a
/// limit whose decisions need I/O: the Promise of the compiled `limit`, the identifier read without a
/// call into JavaScript; or `undefined` when the bytes are no identifier to take as they are, and the
/// caller calls `limit`.
#[wasm_bindgen(js_name = limitWritten, skip_typescript)]
pub fn limit_written(ratelimit: &JsRatelimit, length: usize) -> Option<Promise> {
    let (limit, in_place) = ratelimit.in_place()?;
    let identifier = in_place.identifier(length, Vec::new())?;
    Some(limit_methods::limit_with(
        "Ratelimit.limit",
        limit,
        Ok((identifier, 1.0)),
    ))
}

/// The limit's slots as a `Float64Array` over WebAssembly memory, or `undefined` when its decisions
/// need I/O (then `limitAtOnce` is never called). A view goes empty when the memory grows: the caller
/// asks again.
#[wasm_bindgen(js_name = atOnceSlots, skip_typescript)]
pub fn at_once_slots(ratelimit: &JsRatelimit) -> Option<Float64Array> {
    let (_, in_place) = ratelimit.answering_at_once()?;
    Some(in_place.slots_view())
}

/// The bytes the identifier of `limitAtOnce` and `limitWritten` is written into, as a `Uint8Array`
/// over WebAssembly memory, or `undefined` when `limit()` takes no identifier in place (protection or
/// analytics on); empty when the memory grows, as the slots' view.
#[wasm_bindgen(js_name = atOnceIdentifier, skip_typescript)]
pub fn at_once_identifier(ratelimit: &JsRatelimit) -> Option<Uint8Array> {
    let (_, in_place) = ratelimit.in_place()?;
    Some(in_place.identifier_view())
}

/// The names of the reasons by the number a code gives them (`undefined` for 0, none), for
/// `ratelimit.js`, which asks once.
#[wasm_bindgen(js_name = atOnceReasons, skip_typescript)]
pub fn at_once_reasons() -> js_sys::Array {
    std::iter::once(JsValue::UNDEFINED)
        .chain(REASONS.iter().map(|reason| reason.as_str().into()))
        .collect()
}
