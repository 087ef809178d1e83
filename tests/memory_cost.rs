//! What a key costs in `MemoryBackend` and the ephemeral cache, measured with a counting allocator
//! (alone in its binary, and one test at a time, so no other test allocates meanwhile).

#![cfg(not(target_arch = "wasm32"))]

use edgelimit::algorithm::Algorithm;
use edgelimit::ratelimit::EphemeralCache;
use edgelimit::{Backend, ManualClock, MemoryBackend, SlidingWindow};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

struct Counting;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Held by each test while it counts.
fn alone() -> MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner)
}

fn live_bytes() -> usize {
    LIVE_BYTES.load(Ordering::Relaxed) as usize
}

fn sliding_minute() -> Algorithm {
    SlidingWindow::new(10, Duration::from_secs(60))
        .unwrap()
        .into()
}

#[test]
fn a_key_costs_about_90_bytes_plus_its_length_and_is_counted_as_more() {
    let _alone = alone();
    const KEYS: usize = 50_000;
    let clock = ManualClock::from_millis(1_700_000_000_000);
    let rule: Algorithm = SlidingWindow::new(10, Duration::from_secs(60))
        .unwrap()
        .into();
    let keys: Vec<String> = (0..KEYS).map(|i| format!("user:{i:011}")).collect(); // 16 bytes each
    let before = LIVE_BYTES.load(Ordering::Relaxed);
    let store = MemoryBackend::with_max_keys(KEYS).with_clock(clock);
    for key in &keys {
        pollster::block_on(store.acquire(key, 1.0, rule)).unwrap();
    }
    let per_key = (LIVE_BYTES.load(Ordering::Relaxed) - before) as f64 / store.len() as f64;
    println!(
        "MemoryBackend: {per_key:.0} bytes per 16-byte key ({} keys)",
        store.len()
    );
    assert!(store.len() > KEYS * 9 / 10);
    assert!((90.0..=140.0).contains(&per_key), "{per_key} bytes per key");
    let counted = (16 + MemoryBackend::KEY_OVERHEAD) as f64;
    assert!(
        per_key <= counted,
        "{per_key} bytes per key, counted as {counted}"
    );
}

#[test]
fn a_memory_backend_fed_megabyte_keys_allocates_within_its_byte_budget() {
    let _alone = alone();
    const MAX_BYTES: usize = 64 << 20;
    let clock = ManualClock::from_millis(1_700_000_000_000);
    let before = live_bytes();
    let store = MemoryBackend::with_max_keys(1_000)
        .with_max_bytes(MAX_BYTES)
        .with_clock(clock);
    for i in 0..100 {
        let key = format!("{i}:{}", "k".repeat(1 << 20));
        pollster::block_on(store.acquire(&key, 1.0, sliding_minute())).unwrap();
    }
    let grown = live_bytes() - before;
    println!(
        "MemoryBackend: {grown} bytes for {} keys of 1 MiB",
        store.len()
    );
    assert!(grown <= MAX_BYTES, "{grown} bytes");
    assert!(store.len() >= 16, "{} keys", store.len());
}

#[test]
fn a_memory_backend_churned_at_its_key_cap_allocates_no_more_than_it_counts() {
    let _alone = alone();
    let clock = ManualClock::from_millis(1_700_000_000_000);
    let before = live_bytes();
    let store = MemoryBackend::with_max_keys(20_000).with_clock(clock);
    for i in 0..200_000 {
        let key = format!("user:{i:011}");
        pollster::block_on(store.acquire(&key, 1.0, sliding_minute())).unwrap();
    }
    let grown = live_bytes() - before;
    println!(
        "MemoryBackend: {grown} bytes for {} keys of 16 bytes, counted as {}",
        store.len(),
        store.bytes()
    );
    assert!(
        grown <= store.bytes(),
        "{grown} bytes, counted as {}",
        store.bytes()
    );
}

#[test]
fn an_ephemeral_cache_allocates_no_more_than_it_counts() {
    let _alone = alone();
    const UNTIL_MS: u64 = 1_700_000_060_000;
    for (entries, key_len, max_bytes) in [(50_000, 16, usize::MAX), (1_000, 1 << 20, 4 << 20)] {
        let before = live_bytes();
        let cache = EphemeralCache::new(entries).with_max_bytes(max_bytes);
        for i in 0..2 * entries {
            let key = format!("{i:0>key_len$}", key_len = key_len.min(16));
            let key = key.clone() + &"k".repeat(key_len - key.len());
            cache.insert(key, 1.0, UNTIL_MS, 10, 1_700_000_000_000);
        }
        let grown = live_bytes() - before;
        println!(
            "EphemeralCache: {grown} bytes for {} keys of {key_len} bytes, counted as {}",
            cache.len(),
            cache.bytes()
        );
        assert!(
            grown <= cache.bytes(),
            "{grown} bytes, counted as {}",
            cache.bytes()
        );
        assert!(cache.bytes() <= max_bytes);
    }
}
