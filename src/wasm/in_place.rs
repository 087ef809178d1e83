//! The memory of `limit()` without options shared with JavaScript (see [`super::at_once`]): the bytes
//! the package's `Ratelimit` writes the identifier into, the slots it reads an answer given in one
//! crossing from, and the buffer Rust writes the identifier's key into.

use super::arguments::as_written;
use crate::ratelimit::{Limited, Ratelimit, Reason, Response};
use js_sys::{Float64Array, Uint8Array};
use std::cell::Cell;
use wasm_bindgen::JsCast;

/// The numbers of an answer, in the order of the slots: `limit`, `remaining`, `reset`.
const SLOTS: usize = 3;

/// The longest identifier (UTF-8 bytes) written in place; a longer one takes the compiled path.
const IDENTIFIER_BYTES: usize = 256;

/// What a limit keeps in WebAssembly memory for `limit()` without options: the bytes JavaScript
/// writes the identifier into and, answering in one crossing, the slots it reads the answer from and
/// the buffer the identifier's key is written into, whose allocation serves every decision.
pub(super) struct InPlace {
    /// The numbers of the last answer, read by JavaScript in place.
    slots: [Cell<f64>; SLOTS],
    /// The UTF-8 of the next decision's identifier, written by JavaScript in place.
    identifier: [Cell<u8>; IDENTIFIER_BYTES],
    /// The key of the last decision, whose first `head` bytes, the same for every identifier, stay.
    key: Cell<Vec<u8>>,
    /// How many bytes every key of the limit starts with ([`Ratelimit::write_key_head`]).
    head: usize,
}

impl InPlace {
    /// Empty slots and buffers for `limit`, boxed: JavaScript holds views of their address.
    pub(super) fn new(limit: &Ratelimit) -> Box<Self> {
        // Room for a head of up to as many bytes as the longest identifier, and that identifier.
        let mut key = String::with_capacity(2 * IDENTIFIER_BYTES);
        limit.write_key_head(&mut key);
        Box::new(Self {
            slots: [const { Cell::new(0.0) }; SLOTS],
            identifier: [const { Cell::new(0) }; IDENTIFIER_BYTES],
            head: key.len(),
            key: Cell::new(key.into_bytes()),
        })
    }

    /// The `length` bytes of identifier JavaScript wrote, read into `buffer`; `None` when they are no
    /// identifier to take as they are (past the bytes, not UTF-8, or holding U+FFFD, which may stand
    /// for a lone surrogate: only the JavaScript string can tell).
    pub(super) fn identifier(&self, length: usize, mut buffer: Vec<u8>) -> Option<String> {
        buffer.clear();
        buffer.extend(self.identifier.get(..length)?.iter().map(Cell::get));
        String::from_utf8(buffer)
            .ok()
            .filter(|text| as_written(text))
    }

    /// The limit's decision ([`Ratelimit::decide_key`]) of `rate` at `now_micros` on the `length`
    /// bytes of identifier JavaScript wrote, copied once, after the key's head, when it is answered at
    /// once and leaves no work: the numbers of the answer written into the slots, and its [`code`].
    /// `None` when the bytes are no identifier to decide here, the answer is not given at once, or it
    /// is an error (thrown by the compiled `limit`).
    pub(super) fn decide(
        &self,
        limit: &Ratelimit,
        length: usize,
        rate: f64,
        now_micros: u64,
    ) -> Option<u32> {
        let written = self.identifier.get(..length)?;
        let mut key = self.key.take();
        key.truncate(self.head);
        key.extend(written.iter().map(Cell::get));
        let mut key = match String::from_utf8(key) {
            Ok(key) => key,
            Err(error) => {
                self.key.set(error.into_bytes());
                return None;
            }
        };
        let as_is = key.get(self.head..).is_some_and(as_written);
        let limited = as_is
            .then(|| limit.decide_key(&mut key, self.head, rate, now_micros))
            .flatten();
        let code = match limited.as_ref().and_then(Limited::settled) {
            Some(Ok(response)) => {
                self.write_slots(response);
                Some(code(response))
            }
            Some(Err(_)) | None => None,
        };
        drop(limited);
        self.key.set(key.into_bytes());
        code
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

    /// The slots as a `Float64Array` over WebAssembly memory (empty once the memory grows).
    pub(super) fn slots_view(&self) -> Float64Array {
        let address = self.slots.as_ptr() as u32;
        Float64Array::new_with_byte_offset_and_length(&memory(), address, SLOTS as u32)
    }

    /// The identifier's bytes as a `Uint8Array` over WebAssembly memory (empty once the memory grows).
    pub(super) fn identifier_view(&self) -> Uint8Array {
        let address = self.identifier.as_ptr() as u32;
        Uint8Array::new_with_byte_offset_and_length(&memory(), address, IDENTIFIER_BYTES as u32)
    }
}

/// The buffer of this instance's WebAssembly memory.
fn memory() -> wasm_bindgen::JsValue {
    let memory: js_sys::WebAssembly::Memory = wasm_bindgen::memory().unchecked_into();
    memory.buffer()
}

/// The reasons of the codes of [`code`]: the reason numbered `n` in a code is `REASONS[n - 1]`
/// (0: none). `atOnceReasons` hands the names to `ratelimit.js` in this order.
pub(super) const REASONS: [Reason; 4] = [
    Reason::Timeout,
    Reason::CacheBlock,
    Reason::Error,
    Reason::DenyList,
];

/// The code of a decided `response`: bit 0 set (never [`NOT_AT_ONCE`](super::at_once::NOT_AT_ONCE)), bit 1 `success`, the bits
/// above the number of its reason in [`REASONS`] (0 none).
pub(super) fn code(response: &Response) -> u32 {
    let reason = response.reason.map_or(0, |reason| {
        REASONS
            .iter()
            .position(|known| *known == reason)
            .map_or(0, |index| index + 1)
    });
    (reason as u32) << 2 | u32::from(response.success) << 1 | 1
}
