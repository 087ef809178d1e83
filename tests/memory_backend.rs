//! `MemoryBackend` through the `Backend` trait: atomicity under threads, bounded size, expiry.

#![cfg(not(target_arch = "wasm32"))]

use edgelimit::algorithm::Algorithm;
use edgelimit::{
    Backend, FixedWindow, Gcra, ManualClock, MemoryBackend, SlidingWindow, TokenBucket,
};
use pollster::block_on;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const EPOCH_MS: u64 = 1_700_000_000_000;

fn every_algorithm(capacity: u64) -> Vec<Algorithm> {
    let minute = Duration::from_secs(60);
    vec![
        FixedWindow::new(capacity, minute).unwrap().into(),
        SlidingWindow::new(capacity, minute).unwrap().into(),
        TokenBucket::new(1, minute, capacity).unwrap().into(),
        Gcra::new(capacity, Duration::from_secs(3600), capacity)
            .unwrap()
            .into(),
    ]
}

#[test]
fn threads_hammering_one_key_get_exactly_the_capacity_by_future_or_at_once() {
    const THREADS: usize = 8;
    const ATTEMPTS: usize = 2_000;
    for rule in every_algorithm(1_000) {
        let store = MemoryBackend::new().with_clock(ManualClock::from_millis(EPOCH_MS));
        let admitted = AtomicU64::new(0);
        std::thread::scope(|scope| {
            for _ in 0..THREADS {
                scope.spawn(|| {
                    for attempt in 0..ATTEMPTS {
                        // The trait's future and the synchronous call take from the same state.
                        let decision = if attempt % 2 == 0 {
                            block_on(store.acquire("hot", 1.0, rule))
                        } else {
                            store.acquire_now("hot", 1.0, rule)
                        };
                        if decision.unwrap().allowed {
                            admitted.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(admitted.into_inner(), 1_000, "{}", rule.name());
        assert_eq!(
            block_on(store.available("hot", rule)).unwrap(),
            0.0,
            "{}",
            rule.name()
        );
    }
}

#[test]
fn threads_with_mixed_costs_and_refunds_never_overdraw() {
    for rule in every_algorithm(500) {
        let store = MemoryBackend::new().with_clock(ManualClock::from_millis(EPOCH_MS));
        let (admitted, refunded) = (AtomicU64::new(0), AtomicU64::new(0));
        std::thread::scope(|scope| {
            for thread in 0..8u64 {
                let (store, admitted, refunded) = (&store, &admitted, &refunded);
                scope.spawn(move || {
                    for i in 0..1_000u64 {
                        let cost = ((thread + i) % 4) as f64;
                        if block_on(store.acquire("hot", cost, rule)).unwrap().allowed {
                            admitted.fetch_add(cost as u64, Ordering::Relaxed);
                        }
                        if i % 50 == 0 {
                            assert!(block_on(store.acquire("hot", -1.0, rule)).unwrap().allowed);
                            refunded.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        let (admitted, refunded) = (admitted.into_inner(), refunded.into_inner());
        // Each refund gives back at most one unit, so at most capacity + refunds can be admitted,
        // and with 8,000 requests of average cost 1.5 the limit is reached.
        assert!(
            admitted <= 500 + refunded,
            "{}: {admitted} admitted",
            rule.name()
        );
        assert!(admitted >= 500, "{}: {admitted} admitted", rule.name());
        assert!(
            block_on(store.available("hot", rule)).unwrap() < 3.0,
            "{}",
            rule.name()
        );
    }
}

#[test]
fn a_million_identifiers_stay_within_the_key_cap() {
    let store = MemoryBackend::with_max_keys(10_000).with_clock(ManualClock::from_millis(EPOCH_MS));
    assert_eq!(store.max_keys(), 10_000);
    let rule: Algorithm = FixedWindow::new(10, Duration::from_secs(3600))
        .unwrap()
        .into();
    for i in 0..1_000_000u32 {
        assert!(
            block_on(store.acquire(&format!("user:{i}"), 1.0, rule))
                .unwrap()
                .allowed
        );
        if i % 50_000 == 0 {
            assert!(store.len() <= 10_000, "{} keys after {i}", store.len());
        }
    }
    assert!(store.len() <= 10_000);
    assert!(
        store.len() >= 9_000,
        "the shards should be nearly full, got {}",
        store.len()
    );
    // The most recent identifiers are still there; the oldest were evicted.
    assert_eq!(block_on(store.available("user:999999", rule)).unwrap(), 9.0);
    assert_eq!(block_on(store.available("user:0", rule)).unwrap(), 10.0);
}

#[test]
fn distinct_megabyte_keys_stay_within_the_byte_budget() {
    const MAX_BYTES: usize = 64 << 20;
    let store = MemoryBackend::with_max_keys(1_000)
        .with_max_bytes(MAX_BYTES)
        .with_clock(ManualClock::from_millis(EPOCH_MS));
    assert_eq!(store.max_bytes(), MAX_BYTES);
    let rule: Algorithm = FixedWindow::new(10, Duration::from_secs(3600))
        .unwrap()
        .into();
    let megabyte_key = |i: usize| format!("{i}:{}", "k".repeat(1 << 20));
    for i in 0..300 {
        let key = megabyte_key(i);
        assert!(block_on(store.acquire(&key, 1.0, rule)).unwrap().allowed);
        assert!(
            store.bytes() <= MAX_BYTES,
            "{} bytes after {i}",
            store.bytes()
        );
        assert_eq!(
            block_on(store.available(&key, rule)).unwrap(),
            9.0,
            "the newest is kept"
        );
    }
    // 16 shards of 4 MiB, three such keys each at most.
    assert!(store.len() <= 48, "{} keys", store.len());
    assert!(store.len() >= 16, "{} keys", store.len());
    assert_eq!(
        block_on(store.available(&megabyte_key(0), rule)).unwrap(),
        10.0
    );
}

#[test]
fn a_key_too_long_for_a_shard_is_refused() {
    let store = MemoryBackend::with_max_keys(16).with_max_bytes(16 << 20);
    let rule: Algorithm = FixedWindow::new(10, Duration::from_secs(60))
        .unwrap()
        .into();
    let fits = "k".repeat((1 << 20) - MemoryBackend::KEY_OVERHEAD);
    assert!(block_on(store.acquire(&fits, 1.0, rule)).unwrap().allowed);
    let too_long = format!("{fits}k");
    let refused = block_on(store.acquire(&too_long, 1.0, rule)).unwrap_err();
    assert!(
        matches!(refused, edgelimit::Error::TooLong { field: "key", .. }),
        "{refused}"
    );
    assert_eq!(store.len(), 1);
}

#[test]
fn keys_whose_state_is_fresh_again_are_forgotten() {
    let clock = ManualClock::from_millis(EPOCH_MS);
    let store = MemoryBackend::with_max_keys(100_000).with_clock(clock.clone());
    let rule: Algorithm = SlidingWindow::new(10, Duration::from_secs(1))
        .unwrap()
        .into();
    for i in 0..5_000 {
        block_on(store.acquire(&format!("old:{i}"), 1.0, rule)).unwrap();
    }
    assert_eq!(store.len(), 5_000);
    // Two windows later every old key is idle; new traffic sweeps them out.
    clock.advance(Duration::from_secs(2));
    for i in 0..5_000 {
        block_on(store.acquire(&format!("new:{i}"), 1.0, rule)).unwrap();
    }
    assert!(
        store.len() < 7_500,
        "idle keys were not swept: {}",
        store.len()
    );
    assert_eq!(block_on(store.available("old:1", rule)).unwrap(), 10.0);
}

#[test]
fn peeks_and_refunds_on_unknown_keys_store_nothing() {
    let store = MemoryBackend::new().with_clock(ManualClock::from_millis(EPOCH_MS));
    for rule in every_algorithm(5) {
        block_on(store.acquire("ghost", 0.0, rule)).unwrap();
        block_on(store.acquire("ghost", -3.0, rule)).unwrap();
        block_on(store.acquire("ghost", 9.0, rule)).unwrap();
    }
    assert!(store.is_empty());
}

#[test]
fn reset_forgets_a_key_and_only_that_key() {
    let store = MemoryBackend::new().with_clock(ManualClock::from_millis(EPOCH_MS));
    for rule in every_algorithm(3) {
        for key in ["a", "a:1"] {
            block_on(store.acquire(key, 3.0, rule)).unwrap();
        }
        block_on(store.reset("a", rule)).unwrap();
        assert_eq!(
            block_on(store.available("a", rule)).unwrap(),
            3.0,
            "{}",
            rule.name()
        );
        assert_eq!(
            block_on(store.available("a:1", rule)).unwrap(),
            0.0,
            "{}",
            rule.name()
        );
        block_on(store.reset("a:1", rule)).unwrap();
    }
    assert_eq!(store.backend_name(), "memory");
}

#[test]
fn time_until_available_and_errors_through_the_trait() {
    let clock = ManualClock::from_millis(EPOCH_MS);
    let store = MemoryBackend::new().with_clock(clock.clone());
    let rule: Algorithm = Gcra::new(2, Duration::from_secs(1), 2).unwrap().into();
    block_on(store.acquire("k", 2.0, rule)).unwrap();
    assert_eq!(
        block_on(store.time_until_available("k", 1.0, rule)).unwrap(),
        Duration::from_millis(500)
    );
    assert!(matches!(
        block_on(store.time_until_available("k", 3.0, rule)),
        Err(edgelimit::Error::CostExceedsCapacity { capacity: 2, .. })
    ));
    assert!(matches!(
        block_on(store.acquire("k", f64::NAN, rule)),
        Err(edgelimit::Error::InvalidCost {
            algorithm: "gcra",
            ..
        })
    ));
    // The failed call changed nothing.
    clock.advance(Duration::from_millis(500));
    assert!(block_on(store.acquire("k", 1.0, rule)).unwrap().allowed);
}

#[test]
fn a_key_used_with_another_algorithm_starts_fresh() {
    let store = MemoryBackend::new().with_clock(ManualClock::from_millis(EPOCH_MS));
    let [fixed, _, bucket, _] = every_algorithm(4).try_into().unwrap();
    block_on(store.acquire("k", 4.0, fixed)).unwrap();
    assert_eq!(block_on(store.available("k", bucket)).unwrap(), 4.0);
}

#[test]
fn acquire_now_checks_the_cost_as_acquire_does() {
    let rule: Algorithm = FixedWindow::new(10, Duration::from_secs(60))
        .unwrap()
        .into();
    let store = MemoryBackend::new().with_clock(ManualClock::from_millis(EPOCH_MS));
    let at_once = store.acquire_now("k", 0.5, rule).unwrap_err();
    let by_future = block_on(store.acquire("k", 0.5, rule)).unwrap_err();
    assert_eq!(at_once.to_string(), by_future.to_string());
    assert!(
        matches!(at_once, edgelimit::Error::InvalidCost { .. }),
        "{at_once}"
    );
    assert_eq!(store.acquire_now("k", 4.0, rule).unwrap().remaining, 6.0);
}
