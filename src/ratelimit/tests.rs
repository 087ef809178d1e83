//! Unit tests of `Ratelimit` on the memory store and a probe backend, with a manual clock.

use super::*;
use crate::algorithm::{FixedWindow, Gcra, SlidingWindow, TokenBucket};
use crate::backend::{Decided, MemoryBackend};
use crate::clock::{Clock, ManualClock};
use crate::maybe_send::BoxFuture;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

const START_MS: u64 = 1_700_000_040_000; // the start of a minute

fn memory(clock: &ManualClock) -> MemoryBackend {
    MemoryBackend::new().with_clock(clock.clone())
}

fn fixed(limit: u64, window_s: u64) -> FixedWindow {
    FixedWindow::new(limit, Duration::from_secs(window_s)).unwrap()
}

/// A backend that counts calls and forwards them, or fails with `error` when set; it answers later,
/// as a store over the network does.
struct Probe {
    inner: MemoryBackend,
    calls: Arc<AtomicUsize>,
    error: Option<Error>,
}

impl Backend for Probe {
    fn decide<'a>(&'a self, ask: &Ask<'_>) -> Decided<'a> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let verdict = match &self.error {
            Some(error) => Err(error.clone()),
            None => pollster::block_on(self.inner.decide(ask)),
        };
        Decided::Later(Box::pin(std::future::ready(verdict)))
    }
    fn now_micros(&self) -> u64 {
        self.inner.now_micros()
    }
    fn reset<'a>(&'a self, key: &'a str, params: Algorithm) -> BoxFuture<'a, Result<()>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.reset(key, params)
    }
    fn backend_name(&self) -> &str {
        "probe"
    }
}

fn probe(clock: &ManualClock, error: Option<Error>) -> (Probe, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let probe = Probe {
        inner: memory(clock),
        calls: Arc::clone(&calls),
        error,
    };
    (probe, calls)
}

#[test]
fn every_algorithm_admits_up_to_its_limit_then_denies() {
    let algorithms: [Algorithm; 4] = [
        fixed(3, 60).into(),
        SlidingWindow::new(3, Duration::from_secs(60))
            .unwrap()
            .into(),
        TokenBucket::new(1, Duration::from_secs(60), 3)
            .unwrap()
            .into(),
        Gcra::new(3, Duration::from_secs(60), 3).unwrap().into(),
    ];
    for algorithm in algorithms {
        let clock = ManualClock::from_millis(START_MS);
        let limiter = Ratelimit::new(memory(&clock), algorithm).with_clock(clock.clone());
        pollster::block_on(async {
            for left in (0..3).rev() {
                let response = limiter.limit("user", 1.0).await.unwrap();
                assert!(response.success, "{}", algorithm.name());
                assert_eq!(response.remaining, left as f64, "{}", algorithm.name());
                assert_eq!(response.limit, 3);
                assert_eq!(response.reason, None);
            }
            let denied = limiter.limit("user", 1.0).await.unwrap();
            assert!(!denied.success, "{}", algorithm.name());
            assert!(denied.reset > START_MS, "{}", algorithm.name());
            // Another identifier has its own limit.
            assert!(limiter.limit("other", 1.0).await.unwrap().success);
        });
    }
}

#[test]
fn keys_carry_the_prefix() {
    let clock = ManualClock::from_millis(START_MS);
    let store = Arc::new(memory(&clock));
    let limiter = Ratelimit::new(Arc::clone(&store), fixed(5, 60))
        .with_prefix("app")
        .with_clock(clock);
    pollster::block_on(async {
        limiter.limit("u1", 2.0).await.unwrap();
        let params = fixed(5, 60).into();
        assert_eq!(store.available("app:u1", params).await.unwrap(), 3.0);
        assert_eq!(
            store
                .available(&format!("{DEFAULT_PREFIX}:u1"), params)
                .await
                .unwrap(),
            5.0
        );
    });
}

#[test]
fn refunds_give_back_and_get_remaining_peeks() {
    let clock = ManualClock::from_millis(START_MS);
    let limiter = Ratelimit::new(memory(&clock), fixed(5, 60)).with_clock(clock.clone());
    pollster::block_on(async {
        assert_eq!(limiter.limit("u", 4.0).await.unwrap().remaining, 1.0);
        let refunded = limiter.limit("u", -2.0).await.unwrap();
        assert!(refunded.success);
        assert_eq!(refunded.remaining, 3.0);
        let remaining = limiter.get_remaining("u").await.unwrap();
        assert_eq!(remaining.remaining, 3.0);
        assert_eq!(remaining.limit, 5);
        assert_eq!(remaining.reset, START_MS + 60_000);
        // Peeking consumed nothing.
        assert_eq!(limiter.get_remaining("u").await.unwrap().remaining, 3.0);
        limiter.reset_used_tokens("u").await.unwrap();
        assert_eq!(limiter.get_remaining("u").await.unwrap().remaining, 5.0);
    });
}

#[test]
fn the_ephemeral_cache_answers_blocked_identifiers_without_the_backend() {
    let clock = ManualClock::from_millis(START_MS);
    let (backend, calls) = probe(&clock, None);
    let limiter = Ratelimit::new(backend, fixed(2, 60)).with_clock(clock.clone());
    pollster::block_on(async {
        assert!(limiter.limit("u", 2.0).await.unwrap().success);
        let denied = limiter.limit("u", 1.0).await.unwrap();
        assert!(!denied.success);
        assert_eq!(denied.reason, None);
        assert_eq!(calls.load(Ordering::SeqCst), 2);

        let blocked = limiter.limit("u", 1.0).await.unwrap();
        assert!(!blocked.success);
        assert_eq!(blocked.reason, Some(Reason::CacheBlock));
        assert_eq!(blocked.reset, START_MS + 60_000);
        assert_eq!(blocked.limit, 2);
        assert_eq!(calls.load(Ordering::SeqCst), 2, "answered locally");

        // Once the window has passed, the backend is asked again.
        clock.advance(Duration::from_secs(60));
        assert!(limiter.limit("u", 1.0).await.unwrap().success);
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert_eq!(limiter.cached_blocks(), 0);
    });
}

#[test]
fn a_smaller_rate_or_a_refund_is_not_blocked_by_a_larger_denial() {
    let clock = ManualClock::from_millis(START_MS);
    let (backend, calls) = probe(&clock, None);
    // A token bucket: a denied request consumes nothing (a fixed window counts it).
    let bucket = TokenBucket::new(1, Duration::from_secs(60), 5).unwrap();
    let limiter = Ratelimit::new(backend, bucket).with_clock(clock.clone());
    pollster::block_on(async {
        assert!(limiter.limit("u", 3.0).await.unwrap().success);
        assert!(!limiter.limit("u", 3.0).await.unwrap().success);
        assert_eq!(
            limiter.limit("u", 4.0).await.unwrap().reason,
            Some(Reason::CacheBlock)
        );
        let smaller = limiter.limit("u", 2.0).await.unwrap();
        assert!(smaller.success, "{smaller:?}");
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert!(limiter.limit("u", -5.0).await.unwrap().success);
        assert_eq!(limiter.cached_blocks(), 0, "a refund lifts the block");
        assert!(limiter.limit("u", 3.0).await.unwrap().success);
    });
}

#[test]
fn the_ephemeral_cache_is_bounded_and_can_be_disabled() {
    let clock = ManualClock::from_millis(START_MS);
    let limiter = Ratelimit::new(memory(&clock), fixed(1, 60))
        .with_ephemeral_cache(Some(3))
        .with_clock(clock.clone());
    pollster::block_on(async {
        for i in 0..10 {
            let id = format!("u{i}");
            limiter.limit(&id, 1.0).await.unwrap();
            assert!(!limiter.limit(&id, 1.0).await.unwrap().success);
            assert!(limiter.cached_blocks() <= 3);
        }
        assert_eq!(limiter.cached_blocks(), 3);
        // Expired blocks answer nothing; the least recently used key makes room for a new one.
        clock.advance(Duration::from_secs(60));
        assert!(limiter.limit("u9", 1.0).await.unwrap().success);
        limiter.limit("late", 1.0).await.unwrap();
        limiter.limit("late", 1.0).await.unwrap();
        assert_eq!(limiter.cached_blocks(), 3);
        let blocked = limiter.limit("late", 1.0).await.unwrap();
        assert_eq!(blocked.reason, Some(Reason::CacheBlock));
    });

    let (backend, calls) = probe(&clock, None);
    let uncached = Ratelimit::new(backend, fixed(1, 60))
        .with_ephemeral_cache(None)
        .with_clock(clock.clone());
    pollster::block_on(async {
        for _ in 0..3 {
            uncached.limit("u", 1.0).await.unwrap();
        }
    });
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(uncached.cached_blocks(), 0);
}

#[test]
fn a_cost_above_the_capacity_is_denied_but_not_cached() {
    let clock = ManualClock::from_millis(START_MS);
    let limiter = Ratelimit::new(memory(&clock), fixed(2, 60)).with_clock(clock.clone());
    pollster::block_on(async {
        let response = limiter.limit("u", 3.0).await.unwrap();
        assert!(!response.success);
        assert_eq!(limiter.cached_blocks(), 0);
        assert!(limiter.limit("u", 1.0).await.unwrap().success);
    });
}

#[test]
fn backend_failures_follow_the_fail_mode() {
    let clock = ManualClock::from_millis(START_MS);
    let timeout = Error::Timeout {
        after: Duration::from_millis(5),
    };
    let network = Error::Network {
        message: "refused".into(),
    };
    for (mode, error, reason) in [
        (FailMode::Open, timeout.clone(), Reason::Timeout),
        (FailMode::Open, network.clone(), Reason::Error),
        (FailMode::Closed, timeout, Reason::Timeout),
        (FailMode::Closed, network.clone(), Reason::Error),
    ] {
        let (backend, _) = probe(&clock, Some(error));
        let limiter = Ratelimit::new(backend, fixed(2, 60))
            .with_fail_mode(mode)
            .with_clock(clock.clone());
        let response = pollster::block_on(limiter.limit("u", 1.0)).unwrap();
        assert_eq!(response.success, mode == FailMode::Open);
        assert_eq!(response.reason, Some(reason));
        assert_eq!(response.limit, 2);
        assert_eq!(limiter.cached_blocks(), 0);
    }
    let (backend, _) = probe(&clock, Some(network));
    let limiter = Ratelimit::new(backend, fixed(2, 60));
    assert!(pollster::block_on(limiter.get_remaining("u")).is_err());
}

#[test]
fn a_cross_slot_refusal_is_an_error_whatever_the_fail_mode() {
    let clock = ManualClock::from_millis(START_MS);
    let cross_slot = Error::CrossSlot {
        message: "CROSSSLOT Keys in request don't hash to the same slot".into(),
    };
    for mode in [FailMode::Open, FailMode::Closed] {
        let (backend, _) = probe(&clock, Some(cross_slot.clone()));
        let limiter = Ratelimit::new(backend, fixed(2, 60)).with_fail_mode(mode);
        let error = pollster::block_on(limiter.limit("u", 1.0)).unwrap_err();
        assert_eq!(error, cross_slot);
        assert!(error.to_string().contains("KeyLayout::Cluster"), "{error}");
        assert!(error.to_string().contains(r#"keys: "cluster""#), "{error}");
    }
}

#[test]
fn only_outages_are_answered_by_the_fail_mode() {
    let clock = ManualClock::from_millis(START_MS);
    let http = |status| Error::Http {
        status,
        message: "x".into(),
    };
    let redis = |message: &str| Error::Redis {
        message: message.into(),
    };
    let outages = [
        http(500),
        http(503),
        http(429),
        redis("LOADING Redis is loading the dataset in memory"),
        redis("BUSY Redis is busy running a script"),
        redis("READONLY You can't write against a read only replica."),
    ];
    let errors = [
        http(400),
        http(401),
        http(403),
        http(413),
        redis("WRONGTYPE Operation against a key holding the wrong kind of value"),
        redis("ERR value is not an integer or out of range"),
        Error::MalformedReply {
            message: "x".into(),
        },
        Error::CorruptState {
            key: "@upstash/ratelimit:u".into(),
            message: "tokens is nan".into(),
        },
    ];
    for mode in [FailMode::Open, FailMode::Closed] {
        for outage in &outages {
            let (backend, _) = probe(&clock, Some(outage.clone()));
            let limiter = Ratelimit::new(backend, fixed(2, 60)).with_fail_mode(mode);
            let response = pollster::block_on(limiter.limit("u", 1.0)).unwrap();
            assert_eq!(response.success, mode == FailMode::Open, "{outage}");
            assert_eq!(response.reason, Some(Reason::Error), "{outage}");
        }
        for error in &errors {
            let (backend, _) = probe(&clock, Some(error.clone()));
            let limiter = Ratelimit::new(backend, fixed(2, 60)).with_fail_mode(mode);
            let returned = pollster::block_on(limiter.limit("u", 1.0)).unwrap_err();
            assert_eq!(&returned, error, "{mode:?}");
        }
    }
}

#[test]
fn identifiers_that_reach_a_shared_key_never_reach_the_backend() {
    let clock = ManualClock::from_millis(START_MS);
    let (backend, calls) = probe(&clock, None);
    let limiter = Ratelimit::new(backend, fixed(2, 60))
        .with_dynamic_limits(true)
        .with_clock(clock);
    pollster::block_on(async {
        for identifier in ["dynamic", "dynamic:global"] {
            let error = limiter.limit(identifier, 1.0).await.unwrap_err();
            assert!(matches!(error, Error::InvalidIdentifier { .. }), "{error}");
            assert!(limiter.get_remaining(identifier).await.is_err());
            assert!(limiter.reset_used_tokens(identifier).await.is_err());
        }
        let long = "x".repeat(crate::identifier::MAX_IDENTIFIER_BYTES + 1);
        let error = limiter.limit(&long, 1.0).await.unwrap_err();
        assert!(matches!(error, Error::TooLong { .. }), "{error}");
        assert_eq!(
            calls.load(Ordering::SeqCst),
            0,
            "nothing reached the backend"
        );
        assert!(limiter.limit("events:1", 1.0).await.unwrap().success);
    });
}

#[test]
fn bad_input_is_an_error_not_the_fail_mode() {
    let clock = ManualClock::from_millis(START_MS);
    let (backend, calls) = probe(&clock, None);
    let limiter = Ratelimit::new(backend, fixed(2, 60))
        .with_fail_mode(FailMode::Open)
        .with_clock(clock);
    pollster::block_on(async {
        for rate in [f64::NAN, f64::INFINITY, -f64::INFINITY, 1.5, 1e300, -1e300] {
            let error = limiter.limit("u", rate).await.unwrap_err();
            assert!(
                matches!(error, Error::InvalidCost { .. }),
                "{rate}: {error}"
            );
        }
        assert_eq!(
            calls.load(Ordering::SeqCst),
            0,
            "nothing reached the backend"
        );
        assert!(limiter.limit("u", 1.0).await.unwrap().success);
    });
}

#[test]
fn fractional_rates_are_fine_for_the_bucket_algorithms() {
    let clock = ManualClock::from_millis(START_MS);
    let bucket = TokenBucket::new(1, Duration::from_secs(1), 2).unwrap();
    let limiter = Ratelimit::new(memory(&clock), bucket).with_clock(clock);
    let response = pollster::block_on(limiter.limit("u", 0.5)).unwrap();
    assert!(response.success);
    assert_eq!(response.remaining, 1.5);
}

#[test]
fn a_dynamic_limit_replaces_the_capacity_for_every_identifier_until_removed() {
    let clock = ManualClock::from_millis(START_MS);
    let limiter = Ratelimit::new(memory(&clock), fixed(2, 60))
        .with_dynamic_limits(true)
        .with_clock(clock.clone());
    pollster::block_on(async {
        assert_eq!(limiter.dynamic_limit().await.unwrap(), None);
        limiter.set_dynamic_limit(Some(4)).await.unwrap();
        assert_eq!(limiter.dynamic_limit().await.unwrap(), Some(4));
        for id in ["a", "b"] {
            for left in (0..4).rev() {
                let response = limiter.limit(id, 1.0).await.unwrap();
                assert!(response.success);
                assert_eq!((response.limit, response.remaining), (4, left as f64));
            }
            assert!(!limiter.limit(id, 1.0).await.unwrap().success);
        }
        assert_eq!(limiter.get_remaining("c").await.unwrap().limit, 4);

        limiter.set_dynamic_limit(None).await.unwrap();
        assert_eq!(limiter.dynamic_limit().await.unwrap(), None);
        let response = limiter.limit("c", 1.0).await.unwrap();
        assert_eq!((response.limit, response.remaining), (2, 1.0));

        // 0 pauses the limit, as in @upstash/ratelimit: every request that takes something is denied.
        limiter.set_dynamic_limit(Some(0)).await.unwrap();
        assert_eq!(limiter.dynamic_limit().await.unwrap(), Some(0));
        let paused = limiter.limit("d", 1.0).await.unwrap();
        assert!(!paused.success);
        assert_eq!((paused.limit, paused.remaining), (0, 0.0));
        assert!(limiter.limit("d", 0.0).await.unwrap().success);
        limiter.set_dynamic_limit(None).await.unwrap();
        assert!(limiter.limit("d", 1.0).await.unwrap().success);

        let huge = limiter.set_dynamic_limit(Some(1 << 53)).await.unwrap_err();
        assert!(matches!(huge, Error::InvalidParameter { .. }), "{huge}");
    });
}

#[test]
fn the_cluster_layout_keeps_an_identifier_under_a_hash_tag() {
    let clock = ManualClock::from_millis(START_MS);
    let shared = Arc::new(memory(&clock));
    let cluster = Ratelimit::new(Arc::clone(&shared), fixed(2, 60))
        .with_prefix("p")
        .with_key_layout(KeyLayout::Cluster)
        .with_clock(clock.clone());
    let upstash = Ratelimit::new(Arc::clone(&shared), fixed(2, 60)).with_prefix("p");
    pollster::block_on(async {
        assert!(cluster.limit("u", 2.0).await.unwrap().success);
        let peek = Ask {
            key: "p:{u}",
            cost: Cost::PEEK,
            rule: cluster.algorithm(),
            limit_key: None,
            now: clock.now_micros(),
            with: With::Nothing,
        };
        let stored = shared.decide(&peek).await.unwrap().into_outcome().unwrap();
        assert_eq!(stored.decision.remaining, 0.0);
        assert_eq!(upstash.get_remaining("u").await.unwrap().remaining, 2.0);
        assert!(!cluster.limit("u", 1.0).await.unwrap().success);
        assert_eq!(cluster.cached_blocks(), 1);
        cluster.reset_used_tokens("u").await.unwrap();
        assert_eq!(cluster.cached_blocks(), 0);
        assert_eq!(cluster.get_remaining("u").await.unwrap().remaining, 2.0);
        let empty = cluster.limit("", 1.0).await.unwrap_err();
        assert!(matches!(empty, Error::InvalidParameter { .. }), "{empty}");
    });
}

#[test]
fn the_cluster_layout_reads_the_dynamic_limit_before_deciding_whatever_the_order() {
    let clock = ManualClock::from_millis(START_MS);
    let shared = Arc::new(memory(&clock));
    let layout_first = Ratelimit::new(Arc::clone(&shared), fixed(2, 60))
        .with_key_layout(KeyLayout::Cluster)
        .with_dynamic_limits(true)
        .with_clock(clock.clone());
    let layout_last = Ratelimit::new(Arc::clone(&shared), fixed(2, 60))
        .with_dynamic_limits(true)
        .with_key_layout(KeyLayout::Cluster)
        .with_clock(clock.clone());
    pollster::block_on(async {
        layout_first.set_dynamic_limit(Some(3)).await.unwrap();
        for left in (0..3).rev() {
            let response = layout_last.limit("u", 1.0).await.unwrap();
            assert_eq!((response.success, response.limit), (true, 3));
            assert_eq!(response.remaining, left as f64);
        }
        assert!(!layout_first.limit("u", 1.0).await.unwrap().success);
        assert_eq!(layout_first.get_remaining("v").await.unwrap().limit, 3);
        layout_first.set_dynamic_limit(Some(0)).await.unwrap();
        let paused = layout_last.limit("v", 1.0).await.unwrap();
        assert_eq!((paused.success, paused.limit), (false, 0));
        layout_first.set_dynamic_limit(None).await.unwrap();
        assert_eq!(layout_last.limit("v", 1.0).await.unwrap().limit, 2);
    });
}

#[test]
fn the_dynamic_limit_key_follows_the_prefix_whatever_the_order() {
    let clock = ManualClock::from_millis(START_MS);
    let shared = Arc::new(memory(&clock));
    let prefix_first = Ratelimit::new(Arc::clone(&shared), fixed(2, 60))
        .with_prefix("p")
        .with_dynamic_limits(true);
    let prefix_last = Ratelimit::new(Arc::clone(&shared), fixed(2, 60))
        .with_dynamic_limits(true)
        .with_prefix("p");
    let other = Ratelimit::new(Arc::clone(&shared), fixed(2, 60)).with_dynamic_limits(true);
    pollster::block_on(async {
        prefix_first.set_dynamic_limit(Some(7)).await.unwrap();
        assert_eq!(prefix_last.dynamic_limit().await.unwrap(), Some(7));
        assert_eq!(other.dynamic_limit().await.unwrap(), None);
        assert_eq!(
            shared.dynamic_limit("p:dynamic:global").await.unwrap(),
            Some(7)
        );
    });
}

#[test]
fn dynamic_limits_must_be_enabled() {
    let clock = ManualClock::from_millis(START_MS);
    let limiter = Ratelimit::new(memory(&clock), fixed(2, 60)).with_clock(clock);
    pollster::block_on(async {
        let error = limiter.set_dynamic_limit(Some(5)).await.unwrap_err();
        assert!(matches!(error, Error::Unsupported { .. }), "{error}");
        assert!(limiter.dynamic_limit().await.is_err());
    });
}

#[test]
fn local_counts_answer_at_once_and_write_in_the_pending_work() {
    let clock = ManualClock::from_millis(START_MS);
    let (backend, calls) = probe(&clock, None);
    let limiter = Ratelimit::new(backend, fixed(3, 60))
        .with_local_counts(100)
        .unwrap()
        .with_clock(clock.clone());
    pollster::block_on(async {
        let (first, pending) = limiter.limit_with_pending("u", 1.0).await.unwrap();
        assert!(
            first.success && pending.is_none(),
            "a miss asks the backend"
        );
        assert_eq!(calls.load(Ordering::SeqCst), 1);

        let mut writes = Vec::new();
        for left in [1.0, 0.0] {
            let (response, pending) = limiter.limit_with_pending("u", 1.0).await.unwrap();
            assert!(response.success);
            assert_eq!(response.remaining, left);
            writes.push(pending.expect("an admitted request leaves its write"));
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1, "answered locally");
        let (denied, pending) = limiter.limit_with_pending("u", 1.0).await.unwrap();
        assert!(!denied.success && pending.is_none());
        assert_eq!(denied.retry_after, Some(Duration::from_secs(60)));
        assert_eq!(denied.reset, START_MS + 60_000);

        for write in writes {
            write.await;
        }
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        let remaining = limiter.get_remaining("u").await.unwrap();
        assert_eq!((remaining.remaining, remaining.limit), (0.0, 3));
        assert_eq!(
            calls.load(Ordering::SeqCst),
            3,
            "getRemaining read the local count"
        );

        clock.advance(Duration::from_secs(60));
        let (next_window, pending) = limiter.limit_with_pending("u", 1.0).await.unwrap();
        assert!(next_window.success && pending.is_none());
        assert_eq!(
            calls.load(Ordering::SeqCst),
            4,
            "a new window asks the backend"
        );
        assert_eq!(limiter.counted_identifiers(), 1);
    });
}

#[test]
fn local_counts_learn_from_the_backend_and_forget_a_failed_write() {
    let clock = ManualClock::from_millis(START_MS);
    let shared = Arc::new(memory(&clock));
    let other_process = Ratelimit::new(Arc::clone(&shared), fixed(3, 60)).with_clock(clock.clone());
    let limiter = Ratelimit::new(Arc::clone(&shared), fixed(3, 60))
        .with_local_counts(100)
        .unwrap()
        .with_clock(clock.clone());
    pollster::block_on(async {
        assert!(limiter.limit("u", 1.0).await.unwrap().success);
        assert!(other_process.limit("u", 1.0).await.unwrap().success);
        // The local count (1) does not know of the other process until a write brings it back.
        let response = limiter.limit("u", 1.0).await.unwrap(); // awaits its write
        assert_eq!(response.remaining, 1.0);
        assert_eq!(limiter.get_remaining("u").await.unwrap().remaining, 0.0);
        assert!(!limiter.limit("u", 1.0).await.unwrap().success);
    });

    let (failing, _) = probe(
        &clock,
        Some(Error::Network {
            message: "down".into(),
        }),
    );
    let limiter = Ratelimit::new(failing, fixed(3, 60))
        .with_local_counts(100)
        .unwrap()
        .with_clock(clock.clone());
    pollster::block_on(async {
        let response = limiter.limit("u", 1.0).await.unwrap();
        assert_eq!(response.reason, Some(Reason::Error));
        assert_eq!(limiter.counted_identifiers(), 0, "a failure is not counted");
    });
}

#[test]
fn local_counts_are_bounded_and_fixed_window_only() {
    let clock = ManualClock::from_millis(START_MS);
    let limiter = Ratelimit::new(memory(&clock), fixed(3, 60))
        .with_local_counts(10)
        .unwrap()
        .with_clock(clock.clone());
    pollster::block_on(async {
        for id in 0..100 {
            limiter.limit(&id.to_string(), 1.0).await.unwrap();
            assert!(limiter.counted_identifiers() <= 10);
        }
    });
    let bucket = TokenBucket::new(1, Duration::from_secs(1), 2).unwrap();
    let error = Ratelimit::new(memory(&clock), bucket)
        .with_local_counts(10)
        .err()
        .expect("only the fixed window has local counts");
    assert!(matches!(error, Error::Unsupported { .. }), "{error}");
}

#[test]
fn block_until_ready_sleeps_until_admitted_or_returns_when_waiting_cannot_help() {
    let clock = ManualClock::from_millis(START_MS);
    let gcra = Gcra::new(1, Duration::from_secs(10), 1).unwrap();
    let limiter = Ratelimit::new(memory(&clock), gcra)
        .with_ephemeral_cache(None)
        .with_clock(clock.clone());
    let slept = Arc::new(Mutex::new(Vec::new()));
    let sleep = |wait: Duration| {
        slept.lock().unwrap().push(wait);
        clock.advance(wait);
        std::future::ready(())
    };
    pollster::block_on(async {
        let minute = Duration::from_secs(60);
        assert!(
            limiter
                .block_until_ready("u", 1.0, minute, sleep)
                .await
                .unwrap()
                .success
        );
        let second = limiter
            .block_until_ready("u", 1.0, minute, sleep)
            .await
            .unwrap();
        assert!(second.success);
        assert_eq!(*slept.lock().unwrap(), [Duration::from_secs(10)]);

        let short = limiter
            .block_until_ready("u", 1.0, Duration::from_secs(5), sleep)
            .await
            .unwrap();
        assert!(
            !short.success,
            "10 s to wait, 5 s allowed: no point sleeping"
        );
        let never = limiter
            .block_until_ready("u", 2.0, minute, sleep)
            .await
            .unwrap();
        assert!(!never.success && never.retry_after.is_none());
        assert_eq!(slept.lock().unwrap().len(), 1);
    });
}

#[test]
fn block_until_ready_returns_the_fail_mode_answer_at_once() {
    let clock = ManualClock::from_millis(START_MS);
    let (failing, calls) = probe(
        &clock,
        Some(Error::Network {
            message: "down".into(),
        }),
    );
    let limiter = Ratelimit::new(failing, fixed(1, 60))
        .with_fail_mode(FailMode::Closed)
        .with_clock(clock.clone());
    let response = pollster::block_on(limiter.block_until_ready(
        "u",
        1.0,
        Duration::from_secs(60),
        |_| async { panic!("no sleep") },
    ))
    .unwrap();
    assert_eq!(
        (response.success, response.reason),
        (false, Some(Reason::Error))
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn a_shared_ephemeral_cache_serves_every_limit_given_it() {
    let clock = ManualClock::from_millis(START_MS);
    let cache = Arc::new(EphemeralCache::new(100));
    let (backend, calls) = probe(&clock, None);
    let shared = Arc::new(backend);
    let first = Ratelimit::new(Arc::clone(&shared), fixed(1, 60))
        .with_shared_ephemeral_cache(Arc::clone(&cache))
        .with_clock(clock.clone());
    let second = Ratelimit::new(Arc::clone(&shared), fixed(1, 60))
        .with_shared_ephemeral_cache(Arc::clone(&cache))
        .with_clock(clock.clone());
    pollster::block_on(async {
        assert!(first.limit("u", 1.0).await.unwrap().success);
        assert!(!first.limit("u", 1.0).await.unwrap().success);
        assert_eq!(cache.len(), 1);
        let blocked = second.limit("u", 1.0).await.unwrap();
        assert_eq!(blocked.reason, Some(Reason::CacheBlock));
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    });
}

/// The answer [`Ratelimit::decide_key`] gives at once on `identifier` after the key's head, as the
/// JavaScript package takes it: `None` when it is not given at once or leaves work.
fn at_once(limiter: &Ratelimit, identifier: &str, rate: f64, now: u64) -> Option<Result<Response>> {
    let mut key = String::new();
    limiter.write_key_head(&mut key);
    let head = key.len();
    key.push_str(identifier);
    let limited = limiter.decide_key(&mut key, head, rate, now)?;
    // Nothing unless the answer was given at once and leaves no work.
    let _ = limited.settled()?;
    Some(limited.at_once()?.map(|answer| answer.response))
}

#[test]
fn an_answer_at_once_is_the_answer_of_limit() {
    let algorithms: [Algorithm; 4] = [
        fixed(3, 60).into(),
        SlidingWindow::new(3, Duration::from_secs(60))
            .unwrap()
            .into(),
        TokenBucket::new(1, Duration::from_secs(20), 3)
            .unwrap()
            .into(),
        Gcra::new(3, Duration::from_secs(60), 3).unwrap().into(),
    ];
    for algorithm in algorithms {
        let clock = ManualClock::from_millis(START_MS);
        let in_place = Ratelimit::new(memory(&clock), algorithm).with_clock(clock.clone());
        let awaited = Ratelimit::new(memory(&clock), algorithm).with_clock(clock.clone());
        assert!(in_place.answers_at_once());
        for step in 0..40 {
            let identifier = ["a", "b"][step % 2];
            let answer = at_once(&in_place, identifier, 1.0, clock.now_micros());
            let expected = pollster::block_on(awaited.limit(identifier, 1.0)).unwrap();
            assert_eq!(
                answer.unwrap().unwrap(),
                expected,
                "{} step {step}",
                algorithm.name()
            );
            clock.advance(Duration::from_millis(1_700));
        }
    }
}

#[test]
fn an_answer_on_a_key_after_its_head_is_the_answer_on_the_identifier() {
    for layout in [KeyLayout::Upstash, KeyLayout::Cluster] {
        // On a cluster a dynamic limit is read before the decision, which is then not at once.
        let dynamic = layout == KeyLayout::Upstash;
        let clock = ManualClock::from_millis(START_MS);
        let keyed = Ratelimit::new(memory(&clock), fixed(3, 60))
            .with_key_layout(layout)
            .with_prefix("p")
            .with_dynamic_limits(dynamic)
            .with_clock(clock.clone());
        let plain = Ratelimit::new(memory(&clock), fixed(3, 60))
            .with_key_layout(layout)
            .with_prefix("p")
            .with_dynamic_limits(dynamic)
            .with_clock(clock.clone());
        let mut head = String::new();
        keyed.write_key_head(&mut head);
        let expected_head = match layout {
            KeyLayout::Upstash => "p:",
            KeyLayout::Cluster => "p:{",
        };
        assert_eq!(head, expected_head);
        let now = clock.now_micros();
        for identifier in ["a", "é:b", "a", "a", "a", "dynamic:x", ""] {
            let answer = at_once(&keyed, identifier, 1.0, now).unwrap();
            let expected = pollster::block_on(plain.limit(identifier, 1.0));
            match (answer, expected) {
                (Ok(answer), Ok(expected)) => {
                    assert_eq!(answer, expected, "{layout:?} {identifier:?}");
                }
                (Err(answer), Err(expected)) => {
                    assert_eq!(answer.to_string(), expected.to_string(), "{layout:?}");
                }
                (answer, expected) => panic!("{layout:?} {identifier:?}: {answer:?} {expected:?}"),
            }
        }
        let mut key: String = "é".into();
        assert!(
            keyed.decide_key(&mut key, 1, 1.0, now).is_none(),
            "a head that does not end at a character is not taken"
        );
    }
}

#[test]
fn an_answer_is_given_at_once_where_it_needs_no_network_and_leaves_no_work() {
    let clock = ManualClock::from_millis(START_MS);
    let (probe, calls) = probe(&clock, None);
    let remote = Ratelimit::new(probe, fixed(3, 60)).with_clock(clock.clone());
    let now = clock.now_micros();
    assert!(
        at_once(&remote, "u", 1.0, now).is_none(),
        "a store over the network answers later"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    let counted = Ratelimit::new(memory(&clock), fixed(3, 60))
        .with_local_counts(10)
        .unwrap()
        .with_clock(clock.clone());
    assert!(!counted.answers_at_once());
    assert!(at_once(&counted, "u", 1.0, now).unwrap().unwrap().success);
    assert!(
        at_once(&counted, "u", 1.0, now).is_none(),
        "local counts answer with their write left in the pending work"
    );

    let local = Ratelimit::new(memory(&clock), fixed(1, 60)).with_clock(clock.clone());
    assert!(matches!(
        at_once(&local, &"x".repeat(9_000), 1.0, now),
        Some(Err(Error::TooLong { .. }))
    ));
    assert!(matches!(
        at_once(&local, "u", 0.5, now),
        Some(Err(Error::InvalidCost { .. }))
    ));
    assert!(at_once(&local, "u", 1.0, now).unwrap().unwrap().success);
    let denied = at_once(&local, "u", 1.0, now).unwrap().unwrap();
    assert_eq!((denied.success, denied.reason), (false, None));
    let cached = at_once(&local, "u", 1.0, now).unwrap().unwrap();
    assert_eq!(
        (cached.success, cached.reason),
        (false, Some(Reason::CacheBlock))
    );
}
