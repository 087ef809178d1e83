//! The ephemeral cache of `@upstash/ratelimit`: identifiers known to be blocked, answered without asking
//! the backend, but bounded in size (the peer's grows forever) and forgotten when the block ends.

use super::{Reason, Response};
use crate::bounded_lru::BoundedLru;
use crate::decision::Decision;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// How many bytes an ephemeral cache (and local counts) holds at most unless told otherwise: at the
/// default 10,000 entries and keys of up to about 300 bytes the entries are the bound, and 16 KiB
/// identifiers fill it at about 250.
pub const DEFAULT_CACHE_BYTES: usize = 4 << 20;

/// Identifiers known to be blocked until some time, at most `max_entries` of them and
/// [`DEFAULT_CACHE_BYTES`] (or [`EphemeralCache::with_max_bytes`]) in all, the least recently used
/// forgotten first, in O(1) whatever the fill. One cache may be shared by several
/// [`Ratelimit`](super::Ratelimit)s (keys carry their prefix).
#[derive(Debug)]
pub struct EphemeralCache {
    entries: Mutex<BoundedLru<Block>>,
}

/// One blocked key.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Block {
    /// Milliseconds since the epoch until which the key is blocked, by this instance's clock.
    pub until_ms: u64,
    /// The `reset` its answers report: the store's, whose clock may be another (Redis's).
    pub reset: u64,
    /// The smallest rate known to be denied until then.
    pub rate: f64,
    /// The limit that denied it.
    pub limit: u64,
}

impl EphemeralCache {
    /// The bytes an entry is counted as besides its key's: an estimate of the list node and the table
    /// slot holding it.
    pub const ENTRY_OVERHEAD: usize = BoundedLru::<Block>::ENTRY_OVERHEAD;

    /// A cache of up to `max_entries` blocked keys (at least 1) and [`DEFAULT_CACHE_BYTES`].
    pub fn new(max_entries: usize) -> Self {
        Self {
            entries: Mutex::new(BoundedLru::new(max_entries, DEFAULT_CACHE_BYTES)),
        }
    }

    /// The same cache holding at most `max_bytes`: each key counted as its length plus
    /// [`EphemeralCache::ENTRY_OVERHEAD`]; a key longer than that alone is not cached.
    pub fn with_max_bytes(self, max_bytes: usize) -> Self {
        let entries = self
            .entries
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        Self {
            entries: Mutex::new(entries.with_max_bytes(max_bytes)),
        }
    }

    /// How many keys it holds now (some may have expired but not yet been dropped).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether it holds no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes its keys are counted as now, at most [`EphemeralCache::max_bytes`].
    pub fn bytes(&self) -> usize {
        self.lock().bytes()
    }

    /// The most keys it holds.
    pub fn max_entries(&self) -> usize {
        self.lock().max_entries()
    }

    /// The most bytes it holds.
    pub fn max_bytes(&self) -> usize {
        self.lock().max_bytes()
    }

    fn lock(&self) -> MutexGuard<'_, BoundedLru<Block>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The block on `key` if a request of `rate` at `now_ms` is known to be denied.
    pub(crate) fn blocked(&self, key: &str, rate: f64, now_ms: u64) -> Option<Block> {
        let mut entries = self.lock();
        let block = *entries.get_mut(key)?;
        if block.until_ms <= now_ms {
            entries.remove(key);
            return None;
        }
        (rate >= block.rate).then_some(block)
    }

    /// Remembers that requests of `rate` or more on `key` are denied by `limit` until `until_ms`
    /// (milliseconds since the epoch), as learnt at `now_ms`. A full cache forgets its least recently
    /// used key, whether its block is still running or not: one key, in O(1).
    pub fn insert(&self, key: String, rate: f64, until_ms: u64, limit: u64, now_ms: u64) {
        self.block(key, rate, until_ms, until_ms, limit, now_ms);
    }

    /// [`EphemeralCache::insert`], answered with `reset`.
    fn block(&self, key: String, rate: f64, until_ms: u64, reset: u64, limit: u64, now_ms: u64) {
        let mut entries = self.lock();
        let block = Block {
            until_ms,
            reset,
            rate,
            limit,
        };
        if let Some(held) = entries.get_mut(&key) {
            if held.until_ms > now_ms {
                *held = Block {
                    rate: held.rate.min(rate),
                    ..block
                };
            } else {
                *held = block;
            }
            return;
        }
        entries.insert(key, block, 0);
    }

    /// Forgets `key`.
    pub(crate) fn remove(&self, key: &str) {
        self.lock().remove(key);
    }

    /// The answer to a request of `rate` on `key` at `now_ms` when it is known to be denied; a refund
    /// (a negative rate) forgets what is known of `key` instead.
    pub(crate) fn answer(&self, key: &str, rate: f64, now_ms: u64) -> Option<Response> {
        if rate > 0.0 {
            let block = self.blocked(key, rate, now_ms)?;
            return Some(Response {
                success: false,
                limit: block.limit,
                remaining: 0.0,
                reset: block.reset,
                retry_after: Some(Duration::from_millis(block.until_ms - now_ms)),
                reason: Some(Reason::CacheBlock),
                limits: Vec::new(),
                live: None,
            });
        }
        if rate < 0.0 {
            self.remove(key);
        }
        None
    }

    /// Keeps the block a denial (`decision`) of `rate` on `key` at `now_ms` says, until the request
    /// could be admitted again (its `retry_after` from `now_ms`: the decision's `reset` may be on
    /// another clock, Redis's, which its answers report).
    pub(crate) fn learn(&self, key: &str, rate: f64, decision: &Decision, now_ms: u64) {
        if let (false, Some(retry_after)) = (decision.allowed, decision.retry_after) {
            let until_ms = now_ms.saturating_add(retry_after.as_millis() as u64);
            if until_ms > now_ms && rate > 0.0 {
                let (key, limit) = (key.to_owned(), decision.limit);
                self.block(key, rate, until_ms, decision.reset, limit, now_ms);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNTIL_MS: u64 = 1_000;

    fn held(cache: &EphemeralCache, keys: &[&str]) -> Vec<String> {
        keys.iter()
            .filter(|key| cache.lock().peek(key).is_some())
            .map(|key| key.to_string())
            .collect()
    }

    #[test]
    fn a_full_cache_of_live_blocks_takes_a_new_denial_and_forgets_exactly_the_least_recently_used()
    {
        let cache = EphemeralCache::new(3);
        for key in ["a", "b", "c"] {
            cache.insert(key.to_owned(), 1.0, UNTIL_MS, 5, 0);
        }
        assert!(
            cache.blocked("a", 1.0, 10).is_some(),
            "a is now the most recent"
        );
        cache.insert("d".to_owned(), 1.0, UNTIL_MS, 5, 10);
        assert_eq!(cache.len(), 3);
        assert_eq!(held(&cache, &["a", "b", "c", "d"]), ["a", "c", "d"]);
        cache.insert("e".to_owned(), 1.0, UNTIL_MS, 5, 10);
        assert_eq!(held(&cache, &["a", "b", "c", "d", "e"]), ["a", "d", "e"]);
    }

    #[test]
    fn blocks_expire_and_a_smaller_rate_is_not_blocked_by_a_larger_denial() {
        let cache = EphemeralCache::new(10);
        cache.insert("k".to_owned(), 5.0, UNTIL_MS, 5, 0);
        assert!(cache.blocked("k", 5.0, 1).is_some());
        assert!(cache.blocked("k", 1.0, 1).is_none());
        cache.insert("k".to_owned(), 2.0, UNTIL_MS, 5, 1);
        assert!(
            cache.blocked("k", 3.0, 1).is_some(),
            "the smaller live rate is kept"
        );
        assert!(cache.blocked("k", 3.0, UNTIL_MS).is_none());
        assert!(cache.is_empty(), "an expired block is dropped when met");
        cache.insert("k".to_owned(), 4.0, UNTIL_MS, 5, 0);
        cache.insert("k".to_owned(), 9.0, 2 * UNTIL_MS, 5, UNTIL_MS);
        assert!(
            cache.blocked("k", 4.0, UNTIL_MS).is_none(),
            "an expired block's rate is not kept"
        );
    }

    #[test]
    fn distinct_megabyte_keys_stay_within_the_byte_budget() {
        let cache = EphemeralCache::new(1_000).with_max_bytes(4 << 20);
        for i in 0..50 {
            let key = format!("{i}:{}", "k".repeat(1 << 20));
            cache.insert(key.clone(), 1.0, UNTIL_MS, 5, 0);
            assert!(cache.bytes() <= 4 << 20, "{} bytes", cache.bytes());
            assert!(cache.blocked(&key, 1.0, 0).is_some(), "the newest is kept");
        }
        assert_eq!(cache.len(), 3);
        let small = EphemeralCache::new(2);
        for i in 0..100 {
            small.insert(i.to_string(), 1.0, UNTIL_MS, 5, 0);
        }
        assert_eq!(small.len(), 2, "the entries bound holds too");
        assert_eq!(held(&small, &["98", "99"]), ["98", "99"]);
    }
}
