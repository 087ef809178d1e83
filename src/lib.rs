//! # edgelimit
//!
//! Distributed rate limiting for edge runtimes (Cloudflare Workers, Vercel Edge, Deno, browsers, Node,
//! through WebAssembly) and for native Rust services, with the Redis state layout of
//! `@upstash/ratelimit` so that both can share one limit.
//!
//! The crate is built from the inside out:
//!
//! - [`algorithm`]: the algorithms as pure functions of `(state, now, cost)` — [`FixedWindow`],
//!   [`SlidingWindow`], [`TokenBucket`] and [`Gcra`] — with validated parameters and no I/O.
//! - [`Clock`]: where "now" comes from ([`SystemClock`], or a [`ManualClock`] in tests).
//! - [`Backend`]: the store seam, atomic per key; [`MemoryBackend`] keeps state in the process,
//!   bounded in size.
//!
//! ```
//! use edgelimit::{Backend, FixedWindow, ManualClock, MemoryBackend};
//! use std::time::Duration;
//!
//! # pollster::block_on(async {
//! let clock = ManualClock::from_millis(1_700_000_040_000); // the start of a minute
//! let store = MemoryBackend::new().with_clock(clock.clone());
//! let ten_per_minute = FixedWindow::new(10, edgelimit::parse_duration("1 m")?)?.into();
//!
//! let first = store.acquire("user:42", 1.0, ten_per_minute).await?;
//! assert!(first.allowed);
//! assert_eq!(first.remaining, 9.0);
//!
//! let too_much = store.acquire("user:42", 10.0, ten_per_minute).await?;
//! assert!(!too_much.allowed);
//! assert_eq!(too_much.retry_after, Some(Duration::from_secs(60)));
//!
//! clock.advance(Duration::from_secs(60));
//! assert!(store.acquire("user:42", 10.0, ten_per_minute).await?.allowed);
//! # Ok::<(), edgelimit::Error>(())
//! # }).unwrap();
//! ```

pub mod algorithm;
mod backend;
mod bounded_lru;
mod clock;
mod decision;
mod duration;
mod error;
mod identifier;
#[cfg(target_arch = "wasm32")]
mod js;
mod key_hasher;
mod key_layout;
mod maybe_send;
#[cfg(feature = "multi-region")]
pub mod multi_region;
mod now_or_later;
mod number;
pub mod ratelimit;
pub mod redis;
pub mod transport;
#[cfg(target_arch = "wasm32")]
mod wasm;

pub use algorithm::{Algorithm, Cost, FixedWindow, Gcra, Policy, SlidingWindow, TokenBucket};
pub use backend::{
    AsBackend, Ask, Backend, Closing, Decided, Events, Guard, LeaseBackend, MemoryBackend, Outcome,
    Part, ProtectedBackend, Renewal, Set, Verdict, With,
};
pub use clock::{Clock, ManualClock, SystemClock};
pub use decision::Decision;
pub use duration::{duration_from_millis, parse_duration, MAX_DURATION_MS};
pub use error::{Error, Result};
pub use identifier::MAX_IDENTIFIER_BYTES;
pub use key_layout::KeyLayout;
pub use maybe_send::{BoxFuture, MaybeSendSync};
#[cfg(feature = "multi-region")]
pub use multi_region::MultiRegionRatelimit;
pub use now_or_later::NowOrLater;
pub use ratelimit::Configure;
pub use redis::RedisBackend;
