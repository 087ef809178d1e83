//! `ephemeralCache: map`: every limit given the same JavaScript `Map` shares one ephemeral cache, as
//! with `@upstash/ratelimit`, while the entries stay in Rust where they are bounded.

use crate::ratelimit::{EphemeralCache, DEFAULT_CACHE_SIZE};
use js_sys::WeakMap;
use std::cell::RefCell;
use std::sync::{Arc, Weak};
use wasm_bindgen::{JsCast, JsValue};

thread_local! {
    /// `Map` → index into `CACHES`; weak, so a dropped `Map` is forgotten.
    static INDEX: WeakMap = WeakMap::new();
    /// The caches; a slot whose cache every limit has dropped is reused.
    static CACHES: RefCell<Vec<Weak<EphemeralCache>>> = const { RefCell::new(Vec::new()) };
}

/// The cache shared by every limit given `map`.
pub fn shared_cache(map: &JsValue) -> Arc<EphemeralCache> {
    let map: &js_sys::Object = map.unchecked_ref();
    let slot = INDEX.with(|index| index.get(map).as_f64());
    CACHES.with(|caches| {
        let mut caches = caches.borrow_mut();
        if let Some(cache) = slot.and_then(|slot| caches.get(slot as usize)?.upgrade()) {
            return cache;
        }
        let cache = Arc::new(EphemeralCache::new(DEFAULT_CACHE_SIZE));
        let slot = match caches.iter().position(|cache| cache.strong_count() == 0) {
            Some(free) => {
                caches[free] = Arc::downgrade(&cache);
                free
            }
            None => {
                caches.push(Arc::downgrade(&cache));
                caches.len() - 1
            }
        };
        INDEX.with(|index| index.set(map, &JsValue::from(slot as u32)));
        cache
    })
}
