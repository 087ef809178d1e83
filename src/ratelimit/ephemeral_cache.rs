//! The ephemeral cache of `@upstash/ratelimit`: identifiers known to be blocked, answered without asking
//! the backend, but bounded in size (the peer's grows forever) and forgotten when the block ends.

// hashbrown's map rather than std's: the memory backend's table is hashbrown's, so the wasm package
// carries one copy of the table code, not two.
use super::{Reason, Response};
use crate::decision::Decision;
use crate::key_hasher::KeyHasher;
use hashbrown::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// Identifiers known to be blocked until some time, at most `max_entries` of them. One cache may be
/// shared by several [`Ratelimit`](super::Ratelimit)s (keys carry their prefix).
#[derive(Debug)]
pub struct EphemeralCache {
    entries: Mutex<HashMap<String, Block, KeyHasher>>,
    max_entries: usize,
}

/// One blocked key.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Block {
    /// Milliseconds since the epoch until which the key is blocked.
    pub until_ms: u64,
    /// The smallest rate known to be denied until then.
    pub rate: f64,
    /// The limit that denied it.
    pub limit: u64,
}

impl EphemeralCache {
    /// A cache of up to `max_entries` blocked keys (at least 1).
    pub fn new(max_entries: usize) -> Self {
        Self {
            entries: Mutex::new(HashMap::default()),
            max_entries: max_entries.max(1),
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

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Block, KeyHasher>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The block on `key` if a request of `rate` at `now_ms` is known to be denied.
    pub(crate) fn blocked(&self, key: &str, rate: f64, now_ms: u64) -> Option<Block> {
        let mut entries = self.lock();
        let block = *entries.get(key)?;
        if block.until_ms <= now_ms {
            entries.remove(key);
            return None;
        }
        (rate >= block.rate).then_some(block)
    }

    /// Remembers that `rate` on `key` is denied until `until_ms`.
    pub(crate) fn insert(&self, key: String, rate: f64, until_ms: u64, limit: u64, now_ms: u64) {
        let mut entries = self.lock();
        if entries.len() >= self.max_entries && !entries.contains_key(&key) {
            // Expired blocks go; if there are none, the cache is full of live blocks: drop the one that
            // would expire first (the first met of those).
            let soonest = entries.values().map(|block| block.until_ms).min();
            let mut soonest = soonest.filter(|&until_ms| until_ms > now_ms);
            entries.retain(|_, block| {
                block.until_ms > now_ms
                    && (soonest != Some(block.until_ms) || soonest.take().is_none())
            });
        }
        // A new key's placeholder block has expired, so the rate of a live block is all that is kept.
        let block = entries.entry(key).or_insert(Block {
            until_ms: 0,
            rate,
            limit,
        });
        let rate = if block.until_ms > now_ms {
            block.rate.min(rate)
        } else {
            rate
        };
        *block = Block {
            until_ms,
            rate,
            limit,
        };
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
                reset: block.until_ms,
                retry_after: Some(Duration::from_millis(block.until_ms - now_ms)),
                reason: Some(Reason::CacheBlock),
            });
        }
        if rate < 0.0 {
            self.remove(key);
        }
        None
    }

    /// Keeps the block a denial (`decision`) of `rate` on `key` at `now_ms` says, until the request
    /// could be admitted again, and no later than the window's reset.
    pub(crate) fn learn(&self, key: String, rate: f64, decision: &Decision, now_ms: u64) {
        if let (false, Some(retry_after)) = (decision.allowed, decision.retry_after) {
            let until_ms = now_ms
                .saturating_add(retry_after.as_millis() as u64)
                .min(decision.reset.max(now_ms));
            if until_ms > now_ms && rate > 0.0 {
                self.insert(key, rate, until_ms, decision.limit, now_ms);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_cache_drops_expired_blocks_else_the_one_expiring_first() {
        let cache = EphemeralCache::new(3);
        for (key, until_ms) in [("a", 100), ("b", 50), ("c", 50)] {
            cache.insert(key.to_owned(), 1.0, until_ms, 5, 0);
        }
        cache.insert("d".to_owned(), 1.0, 70, 5, 0);
        let held = |now_ms| {
            let mut held: Vec<&str> = ["a", "b", "c", "d"]
                .into_iter()
                .filter(|key| cache.blocked(key, 1.0, now_ms).is_some())
                .collect();
            held.sort_unstable();
            held
        };
        let after_one = held(0);
        assert!(
            after_one == ["a", "c", "d"] || after_one == ["a", "b", "d"],
            "{after_one:?}"
        );
        // At 60 the remaining 50 ms block has expired: it goes, and nothing live is dropped.
        cache.insert("e".to_owned(), 1.0, 90, 5, 60);
        assert_eq!(cache.len(), 3);
        assert!(cache.blocked("e", 1.0, 60).is_some());
        assert_eq!(held(60), ["a", "d"]);
    }
}
