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
mod clock;
mod decision;
mod duration;
mod error;
mod maybe_send;
#[cfg(target_arch = "wasm32")]
mod number;
pub mod ratelimit;
pub mod redis;
pub mod transport;
#[cfg(target_arch = "wasm32")]
mod wasm;

/// Talc instead of the default dlmalloc, for speed. WebAssembly without the `atomics` feature has one
/// thread, the condition `new_wasm_dynamic_allocator` requires.
#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

#[cfg(all(test, target_arch = "wasm32"))]
mod allocator_tests {
    use wasm_bindgen_test::wasm_bindgen_test;

    /// Many live blocks of mixed sizes and alignments, freed, grown and shrunk at random: every block
    /// keeps its contents, and memory is reused rather than only grown.
    #[wasm_bindgen_test]
    fn the_allocator_keeps_every_block_intact_under_churn() {
        let mut seed: u32 = 12_345;
        let mut next = move |below: u32| {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            (seed >> 8) % below
        };
        let mut blocks: Vec<(Vec<u8>, u8)> = Vec::new();
        for round in 0..40_000u32 {
            let tag = round as u8;
            match next(4) {
                0 | 1 => {
                    // Mostly small, sometimes over a 64 KiB page.
                    let len = if next(50) == 0 {
                        70_000 + next(100_000)
                    } else {
                        next(300)
                    } as usize;
                    blocks.push((vec![tag; len], tag));
                }
                2 if !blocks.is_empty() => {
                    let (block, tag) = blocks.swap_remove(next(blocks.len() as u32) as usize);
                    assert!(block.iter().all(|&byte| byte == tag));
                }
                _ if !blocks.is_empty() => {
                    let index = next(blocks.len() as u32) as usize;
                    let (block, tag) = &mut blocks[index];
                    let len = next(2_000) as usize;
                    block.resize(len, *tag);
                    if next(2) == 0 {
                        block.shrink_to_fit();
                    }
                }
                _ => {}
            }
            if blocks.len() > 2_000 {
                blocks.truncate(1_000);
            }
        }
        for (block, tag) in &blocks {
            assert!(block.iter().all(|byte| byte == tag));
        }
        let aligned: Vec<u128> = (0..1_000).collect();
        assert_eq!(aligned.as_ptr() as usize % std::mem::align_of::<u128>(), 0);
        assert_eq!(aligned.iter().sum::<u128>(), 499_500);
        // Churn settles into reused memory: tens of MB at most, not gigabytes.
        assert!(core::arch::wasm32::memory_size(0) * 65_536 < 256 << 20);
    }
}

pub use algorithm::{Algorithm, Cost, FixedWindow, Gcra, Policy, SlidingWindow, TokenBucket};
pub use backend::{Backend, MemoryBackend, Outcome};
pub use clock::{Clock, ManualClock, SystemClock};
pub use decision::Decision;
pub use duration::{duration_from_millis, parse_duration, MAX_DURATION_MS};
pub use error::{Error, Result};
pub use maybe_send::{BoxFuture, MaybeSendSync};
pub use redis::RedisBackend;
