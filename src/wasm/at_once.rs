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

use super::limit_methods;
use super::ratelimit::JsRatelimit;
use crate::ratelimit::{Ratelimit, Reason, Response};
use js_sys::{Float64Array, Promise, Uint8Array};
use std::cell::Cell;
use wasm_bindgen::prelude::*;

/// The answer of `limitAtOnce` when it did not decide.
pub const NOT_AT_ONCE: u32 = 0;

/// The numbers of an answer, in the order of the slots: `limit`, `remaining`, `reset`.
const SLOTS: usize = 3;

/// The longest identifier (UTF-8 bytes) written in place; a longer one takes the compiled path.
const IDENTIFIER_BYTES: usize = 256;

/// What a limit keeps in WebAssembly memory for `limit()` without options: the bytes JavaScript
/// writes the identifier into and, answering in one crossing, the slots it reads the answer from and
/// the buffers the identifier and its key are copied into, whose allocations serve every decision.
pub(super) struct AtOnce {
    /// The numbers of the last answer, read by JavaScript in place.
    slots: [Cell<f64>; SLOTS],
    /// The UTF-8 of the next decision's identifier, written by JavaScript in place.
    identifier: [Cell<u8>; IDENTIFIER_BYTES],
    /// The identifier of the last decision, read from `identifier`.
    text: Cell<String>,
    /// The key of the last decision.
    key: Cell<String>,
}

impl AtOnce {
    /// Empty slots and buffers, boxed: JavaScript holds views of their address.
    pub fn new() -> Box<Self> {
        Box::new(Self {
            slots: [const { Cell::new(0.0) }; SLOTS],
            identifier: [const { Cell::new(0) }; IDENTIFIER_BYTES],
            text: Cell::default(),
            key: Cell::default(),
        })
    }

    /// The `length` bytes of identifier JavaScript wrote, read into `buffer`; `None` when they are no
    /// identifier to take as they are (past the bytes, not UTF-8, or holding U+FFFD, which may stand
    /// for a lone surrogate: only the JavaScript string can tell).
    fn identifier(&self, length: usize, mut buffer: Vec<u8>) -> Option<String> {
        buffer.clear();
        buffer.extend(self.identifier.get(..length)?.iter().map(Cell::get));
        let identifier = String::from_utf8(buffer).ok()?;
        (identifier.is_ascii() || !identifier.contains('\u{FFFD}')).then_some(identifier)
    }

    /// [`Ratelimit::limit_at_once`] on the `length` bytes of identifier JavaScript wrote, the numbers
    /// of a decided answer written into the slots; `None` when the bytes are no identifier to decide
    /// here.
    fn decide(
        &self,
        limit: &Ratelimit,
        length: usize,
        rate: f64,
        now_micros: u64,
    ) -> Option<crate::Result<Response>> {
        let identifier = self.identifier(length, self.text.take().into_bytes())?;
        let mut key = self.key.take();
        let answer = limit.limit_at_once(&identifier, rate, now_micros, &mut key);
        self.key.set(key);
        self.text.set(identifier);
        if let Some(Ok(response)) = &answer {
            self.write_slots(response);
        }
        answer
    }

    /// Writes `response`'s numbers into the slots.
    fn write_slots(&self, response: &Response) {
        let numbers = [
            response.limit as f64,
            response.remaining,
            response.reset as f64,
        ];
        for (slot, number) in self.slots.iter().zip(numbers) {
            slot.set(number);
        }
    }
}

/// Decides `rate` on the `length` bytes of identifier written through `atOnceIdentifier` at `now_ms`
/// (`Date.now()`) when that needs no I/O: the numbers in the slots and the [`code`] returned; or
/// [`NOT_AT_ONCE`].
#[wasm_bindgen(js_name = limitAtOnce, skip_typescript)]
pub fn limit_at_once(ratelimit: &JsRatelimit, length: usize, now_ms: f64, rate: f64) -> u32 {
    let Some((limit, at_once)) = ratelimit.answering_at_once() else {
        return NOT_AT_ONCE;
    };
    // A float to integer cast saturates (and takes NaN to 0): no overflow to check.
    let now_micros = (now_ms.trunc() * 1_000.0) as u64;
    match at_once.decide(limit, length, rate, now_micros) {
        Some(Ok(response)) => code(&response),
        Some(Err(_)) | None => NOT_AT_ONCE,
    }
}

/// `limit(identifier)` on the `length` bytes of identifier written through `atOnceIdentifier`, for a
/// limit whose decisions need I/O: the Promise of the compiled `limit`, the identifier read without a
/// call into JavaScript; or `undefined` when the bytes are no identifier to take as they are, and the
/// caller calls `limit`.
#[wasm_bindgen(js_name = limitWritten, skip_typescript)]
pub fn limit_written(ratelimit: &JsRatelimit, length: usize) -> Option<Promise> {
    let (limit, in_place) = ratelimit.in_place()?;
    let identifier = in_place.identifier(length, Vec::with_capacity(length))?;
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
    let (_, at_once) = ratelimit.answering_at_once()?;
    Some(Float64Array::new_with_byte_offset_and_length(
        &memory(),
        at_once.slots.as_ptr() as u32,
        SLOTS as u32,
    ))
}

/// The bytes the identifier of `limitAtOnce` and `limitWritten` is written into, as a `Uint8Array`
/// over WebAssembly memory, or `undefined` when `limit()` takes no identifier in place (protection or
/// analytics on); empty when the memory grows, as the slots' view.
#[wasm_bindgen(js_name = atOnceIdentifier, skip_typescript)]
pub fn at_once_identifier(ratelimit: &JsRatelimit) -> Option<Uint8Array> {
    let (_, in_place) = ratelimit.in_place()?;
    Some(Uint8Array::new_with_byte_offset_and_length(
        &memory(),
        in_place.identifier.as_ptr() as u32,
        IDENTIFIER_BYTES as u32,
    ))
}

/// The buffer of this instance's WebAssembly memory.
fn memory() -> JsValue {
    let memory: js_sys::WebAssembly::Memory = wasm_bindgen::memory().unchecked_into();
    memory.buffer()
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
