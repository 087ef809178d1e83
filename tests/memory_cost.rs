//! What a key costs in `MemoryBackend`, measured with a counting allocator (alone in its binary, so
//! no other test allocates meanwhile).

#![cfg(not(target_arch = "wasm32"))]

use edgelimit::algorithm::Algorithm;
use edgelimit::{Backend, ManualClock, MemoryBackend, SlidingWindow};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
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

#[test]
fn a_key_costs_about_90_bytes_plus_its_length() {
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
}
