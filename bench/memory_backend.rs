//! Nanoseconds per decision on `MemoryBackend`, for each algorithm, beside `governor`'s keyed limiter
//! in the same run: one hot key, and 100,000 keys visited in turn; synchronous as governor's
//! `check_key` (`MemoryBackend::acquire_now`), and GCRA once more through the `Backend` trait's
//! future. And nanoseconds per identifier newly denied while the ephemeral cache is full of live
//! blocks, at 10,000 and 100,000 entries: each iteration blocks a key never seen, which evicts one.
//! Run with `make bench`.

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use edgelimit::algorithm::Algorithm;
use edgelimit::ratelimit::EphemeralCache;
use edgelimit::{Backend, FixedWindow, Gcra, MemoryBackend, SlidingWindow, TokenBucket};
use governor::{Quota, RateLimiter};
use std::future::Future;
use std::hint::black_box;
use std::num::NonZeroU32;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

const KEYS: usize = 100_000;

/// Polls a future that never waits (the memory backend's) to completion.
fn ready<F: Future>(future: F) -> F::Output {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the memory backend never waits"),
    }
}

fn algorithms() -> Vec<(&'static str, Algorithm)> {
    let second = Duration::from_secs(1);
    vec![
        (
            "fixed window",
            FixedWindow::new(1_000_000, second).unwrap().into(),
        ),
        (
            "sliding window",
            SlidingWindow::new(1_000_000, second).unwrap().into(),
        ),
        (
            "token bucket",
            TokenBucket::new(1_000_000, second, 1_000_000)
                .unwrap()
                .into(),
        ),
        (
            "gcra",
            Gcra::new(1_000_000, second, 1_000_000).unwrap().into(),
        ),
    ]
}

fn decisions(c: &mut Criterion) {
    let keys: Vec<String> = (0..KEYS).map(|i| format!("user:{i}")).collect();
    for (shape, key_count) in [("one hot key", 1), ("100k keys", KEYS)] {
        let mut group = c.benchmark_group(format!("acquire, {shape}"));
        let quota = Quota::per_second(NonZeroU32::new(1_000_000).unwrap());
        let governor = RateLimiter::keyed(quota);
        let mut i = 0;
        group.bench_function("governor (peer, GCRA)", |b| {
            b.iter(|| {
                i = (i + 1) % key_count;
                black_box(governor.check_key(&keys[i]).is_ok())
            })
        });
        for (name, rule) in algorithms() {
            // Room for every key, as governor (which has no cap) has: this measures decisions, not evictions.
            let store = MemoryBackend::with_max_keys(2 * KEYS);
            let mut i = 0;
            // Synchronous, as governor's `check_key` is.
            group.bench_function(BenchmarkId::new("edgelimit", name), |b| {
                b.iter(|| {
                    i = (i + 1) % key_count;
                    black_box(store.acquire_now(&keys[i], 1.0, rule).unwrap().allowed)
                })
            });
        }
        // The same decision through the `Backend` trait, generic over stores: a boxed future each.
        let (name, rule) = algorithms().pop().expect("GCRA is listed last");
        let store = MemoryBackend::with_max_keys(2 * KEYS);
        let mut i = 0;
        let id = format!("{name}, Backend::acquire");
        group.bench_function(BenchmarkId::new("edgelimit", id), |b| {
            b.iter(|| {
                i = (i + 1) % key_count;
                black_box(ready(store.acquire(&keys[i], 1.0, rule)).unwrap().allowed)
            })
        });
        group.finish();
    }
}

fn full_ephemeral_cache(c: &mut Criterion) {
    const NOW_MS: u64 = 1_700_000_000_000;
    const UNTIL_MS: u64 = NOW_MS + 3_600_000;
    let mut group =
        c.benchmark_group("ephemeral cache full of live blocks, newly denied identifier");
    for entries in [10_000, 100_000] {
        let cache = EphemeralCache::new(entries).with_max_bytes(usize::MAX);
        for i in 0..entries {
            cache.insert(format!("user:{i}"), 1.0, UNTIL_MS, 5, NOW_MS);
        }
        let mut next = entries;
        group.bench_function(
            BenchmarkId::new("edgelimit", format!("{entries} entries")),
            |b| {
                b.iter_batched(
                    || {
                        next += 1;
                        format!("user:{next}")
                    },
                    |key| cache.insert(key, 1.0, UNTIL_MS, 5, NOW_MS),
                    BatchSize::SmallInput,
                )
            },
        );
        assert_eq!(cache.len(), entries, "full all along");
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    targets = decisions, full_ephemeral_cache
}
criterion_main!(benches);
