//! `ephemeralCache: map`: every limit given the same JavaScript `Map` shares one ephemeral cache, as
//! with `@upstash/ratelimit`, while the entries stay in Rust where they are bounded.

use crate::ratelimit::{EphemeralCache, DEFAULT_CACHE_SIZE};
use std::cell::RefCell;
use std::sync::{Arc, Weak};
use wasm_bindgen::JsValue;

thread_local! {
    /// Each `Map` given, with the cache it names. An entry whose cache every limit has dropped goes
    /// (releasing its `Map`) at the next lookup.
    static CACHES: RefCell<Vec<(JsValue, Weak<EphemeralCache>)>> = const { RefCell::new(Vec::new()) };
}

/// The cache shared by every limit given `map` (the same object: `===`). Not inlined: most limits
/// share no cache, and a first decision need not compile this.
#[inline(never)]
pub fn shared_cache(map: &JsValue) -> Arc<EphemeralCache> {
    CACHES.with_borrow_mut(|caches| {
        caches.retain(|(_, cache)| cache.strong_count() > 0);
        let named = caches.iter().find(|(named, _)| named == map);
        if let Some(cache) = named.and_then(|(_, cache)| cache.upgrade()) {
            return cache;
        }
        let cache = Arc::new(EphemeralCache::new(DEFAULT_CACHE_SIZE));
        caches.push((map.clone(), Arc::downgrade(&cache)));
        cache
    })
}
