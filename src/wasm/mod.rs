//! The classes JavaScript users see: [`Redis`](redis::JsRedis), [`Ratelimit`](ratelimit::JsRatelimit),
//! `MultiRegionRatelimit` and `rateLimitHeaders`, with the code that reads their options and arguments
//! and builds their answers. They stand on [`crate::js`], the crate's imports of JavaScript.
//!
//! The classes are thin wrappers: they check every option (a bad one is a thrown `TypeError` or
//! `RangeError` that names the field and quotes the value), build the crate's own types, and turn
//! answers into plain JavaScript objects.
//!
//! - [`ratelimit`], `multi_region`, [`redis`], [`headers`]: the classes and functions exported, one
//!   file each; [`limit_methods`]: the async methods both limit classes answer alike.
//! - [`shared_options`], [`arguments`], [`answers`]: the options both limit classes take, the arguments
//!   of their methods, their answer objects; [`algorithms`]: the algorithm factories
//!   (`Ratelimit.slidingWindow(...)`); [`protection`], [`ip_deny_list`]: protection and analytics.
//! - [`at_once`]: `limit()` with its identifier written in place, answered in one crossing when it needs
//!   no I/O: the seam with `pkg-template/ratelimit.js`; [`in_place`]: the memory both halves share.
//! - [`options`], [`errors`], [`promise`], [`sleep`], [`shared_cache`]: reading JavaScript values,
//!   the errors thrown, futures as Promises, timers, the ephemeral cache shared through a `Map`.
//!
//! # The boundary, designed for CPU per decision
//!
//! Rust decides in about a hundred nanoseconds; what a decision costs at the edge is crossing into
//! JavaScript: each string decoded, object built property by property, closure wrapped, Promise made
//! and timer armed. So the boundary crosses once per piece of work, never once per field:
//!
//! - `boundary.js` (in `src/js/`, bound by [`crate::js::boundary`]) is the JavaScript half. It
//!   builds each answer object in one call (`limitResponse`, `remainingResponse`) from numbers, with the
//!   one settled `pending` Promise shared by answers that leave no work; sends a request, arms its
//!   timeout and reads the body as bytes in one call (`post`).
//! - A request's outcome comes back through one Rust function made once per instance, which completes
//!   the request's one-shot channel (`transport/fetch.rs`): no Promise is wrapped into a future and no
//!   closure made per request. Its URL and headers are JavaScript values made once per `Redis`.
//! - AbortControllers, which cost more than the rest of a request in Node, are reused by requests that
//!   finished without being aborted, one request at a time each.
//! - `limit()` on a store in this process crosses once, from JavaScript into WebAssembly, and never
//!   back ([`at_once`]).
//! - A method's future runs at once until it first waits ([`promise`]): an answer known without I/O (the
//!   in-memory store, the ephemeral cache, local counts, bad input) is a settled Promise, without a
//!   trip through the executor. Concurrent calls still queue their commands in the same tick and share
//!   one `/pipeline` request.
//! - `limit`'s options are checked and its `rate` read in one crossing (`limitRate`); reply bodies
//!   cross as bytes, request bodies as one string.
//!
//! `make bench` measures each of these beside `@upstash/ratelimit` and `rate-limiter-flexible`.
//!
//! # The budget
//!
//! Calls from WebAssembly into JavaScript per warm `limit()` without options, counted by
//! `tests/js/boundary.test.mjs` (which wraps every import; a structure test, no timing), at most:
//!
//! - **in memory: 0** — `limit()` on a store in this process is answered in one crossing
//!   ([`at_once`]): the package's `Ratelimit` (`pkg-template/ratelimit.js`) reads the clock, writes
//!   the identifier's UTF-8 into memory it holds a view of (no allocation), reads the answer's
//!   numbers from memory and makes the answer itself;
//! - **on Redis: 12** — the clock (2: the ephemeral cache's and the store's), the request (`post`,
//!   its body as bytes: 1 + 3 + 1 + 1), waking the executor (2), the answer object (1) and resolving
//!   its Promise (1); the identifier is written in place by JavaScript ([`at_once`]), so reading it
//!   and the absent `options` cost none.
//!
//! A change that adds a crossing to a decision fails that test; one that removes some lowers the
//! budget here and there.

mod algorithms;
mod answers;
mod arguments;
mod at_once;
mod errors;
mod headers;
mod in_place;
mod ip_deny_list;
mod limit_methods;
mod limits;
#[cfg(feature = "multi-region")]
mod multi_region;
mod options;
mod promise;
mod protection;
mod ratelimit;
mod redis;
mod shared_cache;
mod shared_options;
mod sleep;

/// The allocator: Talc, a drop-in for Rust's default on wasm (dlmalloc) that is faster and smaller
/// (`make bench` measures the package's CPU per decision and size).
#[cfg(not(target_feature = "atomics"))]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

/// Reports Rust panics on `console.error` instead of as an opaque `unreachable` trap; runs when the
/// module is instantiated, before any method.
#[wasm_bindgen::prelude::wasm_bindgen(start)]
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| report_panic(info)));
}

/// Writes a panic's text to `console.error`, saying it is a bug of edgelimit's.
fn report_panic(panic: &dyn std::fmt::Display) {
    let _ = crate::js::globals::console_error(&format!(
        "edgelimit panicked (please report this): {panic}"
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use js_sys::{Array, Function, Reflect};
    use wasm_bindgen::JsValue;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn a_panic_is_reported_on_console_error() {
        let console = Reflect::get(&js_sys::global(), &"console".into()).unwrap();
        let original = Reflect::get(&console, &"error".into()).unwrap();
        let recorded = Array::new();
        let record = Function::new_with_args("message", "this.push(message)").bind0(&recorded);
        Reflect::set(&console, &"error".into(), &record).unwrap();
        report_panic(&"panicked at src/x.rs:1:1:\nboom");
        Reflect::set(&console, &"error".into(), &original).unwrap();
        assert_eq!(
            recorded.to_vec(),
            [JsValue::from_str(
                "edgelimit panicked (please report this): panicked at src/x.rs:1:1:\nboom"
            )]
        );
    }
}
