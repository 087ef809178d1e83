//! Extreme values in Redis (a huge dynamic limit over an emptied bucket, times far in the future)
//! are computed with, never overflowed on: these run in debug builds, where overflow panics.

#![cfg(not(target_arch = "wasm32"))]

mod support;

use edgelimit::algorithm::Algorithm;
use edgelimit::ratelimit::Ratelimit;
use edgelimit::Configure;
use edgelimit::{FixedWindow, RedisBackend, SlidingWindow, TokenBucket};
use std::time::Duration;
use support::Servers;

/// The largest count a limit takes: 2^53 - 1.
const MAX_COUNT: u64 = (1 << 53) - 1;

#[tokio::test]
async fn a_huge_dynamic_limit_over_used_state_is_answered_without_overflow() {
    let servers = Servers::start();
    let hour = Duration::from_secs(3600);
    // GCRA is left out: its limits are bounded so that burst × emission interval fits.
    let rules: [Algorithm; 3] = [
        TokenBucket::new(1, hour, 10).unwrap().into(),
        FixedWindow::new(10, hour).unwrap().into(),
        SlidingWindow::new(10, hour).unwrap().into(),
    ];
    for rule in rules {
        let prefix = format!("extremes:{}", rule.name());
        let limiter = Ratelimit::new(RedisBackend::new(servers.gateway.transport()), rule)
            .with_prefix(prefix.as_str())
            .with_ephemeral_cache(None)
            .with_dynamic_limits(true);
        // Empty the limit, then raise it to the most a limit takes: the state now lacks nearly
        // 2^53 tokens, which take nearly 2^53 hours to come back.
        assert!(limiter.limit("u", 10.0).await.unwrap().success, "{prefix}");
        limiter.set_dynamic_limit(Some(MAX_COUNT)).await.unwrap();
        let answer = limiter.limit("u", 1.0).await.unwrap();
        assert_eq!(answer.reason, None, "{prefix}: {answer:?}");
        assert_eq!(answer.limit, MAX_COUNT, "{prefix}");
        let remaining = limiter.get_remaining("u").await.unwrap();
        assert_eq!(remaining.limit, MAX_COUNT, "{prefix}");
        // A denial of the whole limit says when, saturating rather than wrapping.
        let denied = limiter.limit("u", MAX_COUNT as f64).await.unwrap();
        assert!(!denied.success, "{prefix}");
        assert_eq!(denied.reason, None, "{prefix}");
    }
}
