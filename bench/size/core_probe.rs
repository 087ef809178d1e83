//! The size probe of edgelimit's core: bench/size/probes.sh builds a copy of the crate in which this file
//! replaces `src/wasm/` (every JavaScript-facing class, option check, result object and Promise). One
//! numeric export reaches all the rest — both backends, every algorithm, the ephemeral cache, local
//! counts, dynamic limits, both fail modes, the fetch transport — so the optimiser keeps all of it.

#[path = "wasm/sleep.rs"]
mod sleep;

use crate::algorithm::{Algorithm, FixedWindow, Gcra, SlidingWindow, TokenBucket};
use crate::ratelimit::{FailMode, Ratelimit};
use crate::redis::RedisBackend;
use crate::transport::FetchTransport;
use crate::{MemoryBackend, Result};
use std::time::Duration;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = console, js_name = error)]
    fn console_error(text: &str);
}

/// Runs `operation` (its bits: 1 dynamic limits, 2 fail closed, 4 local counts, the rest which method)
/// with the algorithm `kind` of `limit` per `window_ms`, on Redis at `url` or in memory when it is empty.
#[wasm_bindgen]
pub async fn probe(
    url: String,
    token: String,
    kind: u8,
    limit: u32,
    window_ms: f64,
    identifier: String,
    rate: f64,
    operation: u8,
) -> f64 {
    match run(
        url,
        token,
        kind,
        limit.into(),
        window_ms,
        &identifier,
        rate,
        operation,
    )
    .await
    {
        Ok(value) => value,
        Err(error) => {
            console_error(&error.to_string());
            f64::NAN
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn run(
    url: String,
    token: String,
    kind: u8,
    limit: u64,
    window_ms: f64,
    identifier: &str,
    rate: f64,
    operation: u8,
) -> Result<f64> {
    let window = Duration::from_millis(window_ms as u64);
    let algorithm: Algorithm = match kind {
        0 => FixedWindow::new(limit, window)?.into(),
        1 => SlidingWindow::new(limit, window)?.into(),
        2 => TokenBucket::new(limit, window, limit * 2)?.into(),
        _ => Gcra::new(limit, window, 3)?.into(),
    };
    let limiter = if url.is_empty() {
        Ratelimit::new(MemoryBackend::new(), algorithm)
    } else {
        let transport = FetchTransport::new(&url, &token).with_timeout(Some(window));
        Ratelimit::new(RedisBackend::new(transport), algorithm)
    };
    let mut limiter = limiter
        .with_prefix(token)
        .with_ephemeral_cache(Some(limit as usize))
        .with_dynamic_limits(operation & 1 != 0)
        .with_fail_mode(if operation & 2 != 0 {
            FailMode::Closed
        } else {
            FailMode::Open
        });
    if operation & 4 != 0 {
        limiter = limiter.with_local_counts(limit as usize)?;
    }
    Ok(match operation >> 3 {
        0 => limiter.limit(identifier, rate).await?.remaining,
        1 => limiter.get_remaining(identifier).await?.remaining,
        2 => limiter.reset_used_tokens(identifier).await.map(|()| 0.0)?,
        3 => limiter.set_dynamic_limit(Some(limit)).await.map(|()| 0.0)?,
        4 => limiter.dynamic_limit().await?.unwrap_or(0) as f64,
        _ => {
            limiter
                .block_until_ready(identifier, rate, window, sleep::sleep)
                .await?
                .remaining
        }
    })
}
