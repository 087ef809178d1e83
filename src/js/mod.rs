//! The crate's only imports of JavaScript: raw bindings, no policy (wasm32 only).
//!
//! This is the ground floor that the JavaScript classes (`src/wasm/`) and the core's users of
//! JavaScript (the `fetch` transport, the system clock) both stand on, as `worker-sys` stands under
//! `worker`. Each file binds one thing: the runtime's globals, `boundary.js` (the JavaScript half of
//! the boundary; `src/wasm/mod.rs` says how it is built for CPU per decision) and `analytics.js`
//! (the analytics events, written by `JSON.stringify` as `@upstash/ratelimit` writes them).

pub(crate) mod analytics;
pub(crate) mod boundary;
pub(crate) mod globals;
