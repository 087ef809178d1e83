//! `MemoryBackend`: per-process state, bounded in size, no Redis needed.

use super::Backend;
use crate::algorithm::{Algorithm, State};
use crate::clock::{Clock, SystemClock};
use crate::decision::Decision;
use crate::error::Result;
use lru::LruCache;
use std::hash::BuildHasher;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// How many keys a [`MemoryBackend`] keeps unless told otherwise.
pub const DEFAULT_MAX_KEYS: usize = 100_000;

/// Most shards a backend splits its keys over, to spread lock contention between threads.
const MAX_SHARDS: usize = 16;

/// The embedded store: keeps each key's state in this process and runs the algorithm's pure transition
/// under a lock, so every decision is atomic per key.
///
/// Memory stays bounded: a key is forgotten once its state is the same as a new key's (a window that
/// has passed, a refilled bucket), and beyond `max_keys` the least recently used key is evicted.
/// Keys are spread over up to 16 shards, each holding `max_keys / shards` keys in its own LRU order.
/// A key costs about 130 bytes plus its length (measured in `tests/memory_backend.rs`).
pub struct MemoryBackend {
    shards: Box<[Mutex<Shard>]>,
    hasher: foldhash::fast::RandomState,
    clock: Arc<dyn Clock>,
}

struct Shard {
    entries: LruCache<Box<str>, Entry>,
    inserts_since_sweep: usize,
}

struct Entry {
    state: State,
    /// From this time (microseconds) on, `state` is the same as no state.
    idle_at: u64,
}

impl Default for MemoryBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryBackend {
    /// A store of up to [`DEFAULT_MAX_KEYS`] keys on the system clock.
    pub fn new() -> Self {
        Self::with_max_keys(DEFAULT_MAX_KEYS)
    }

    /// A store of up to `max_keys` keys (at least 1) on the system clock.
    pub fn with_max_keys(max_keys: usize) -> Self {
        let max_keys = max_keys.max(1);
        let shard_count = MAX_SHARDS.min(1 << max_keys.ilog2());
        let per_shard = NonZeroUsize::new(max_keys / shard_count).unwrap_or(NonZeroUsize::MIN);
        let shards = (0..shard_count)
            .map(|_| {
                Mutex::new(Shard {
                    entries: LruCache::new(per_shard),
                    inserts_since_sweep: 0,
                })
            })
            .collect();
        Self {
            shards,
            hasher: foldhash::fast::RandomState::default(),
            clock: Arc::new(SystemClock),
        }
    }

    /// The same store reading time from `clock`.
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// The most keys this store keeps.
    pub fn max_keys(&self) -> usize {
        self.shards.len() * self.lock(0).entries.cap().get()
    }

    /// How many keys are stored now (including some that are already idle but not yet swept).
    pub fn len(&self) -> usize {
        (0..self.shards.len())
            .map(|i| self.lock(i).entries.len())
            .sum()
    }

    /// Whether no key is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Runs `f` on `key`'s live state under its shard's lock, and stores the state it returns.
    fn update<T>(
        &self,
        key: &str,
        params: Algorithm,
        f: impl FnOnce(Option<&State>, u64) -> Result<(State, T)>,
    ) -> Result<T> {
        let now = self.clock.now_micros();
        let mut shard = self.lock(self.shard_of(key));
        let live = shard
            .entries
            .get(key)
            .filter(|entry| now < entry.idle_at)
            .map(|entry| entry.state);
        let (state, answer) = f(live.as_ref(), now)?;
        let entry = Entry {
            idle_at: params.idle_at(&state),
            state,
        };
        shard.store(key, entry, now);
        Ok(answer)
    }

    /// Reads `key`'s live state under its shard's lock.
    fn read<T>(&self, key: &str, f: impl FnOnce(Option<&State>, u64) -> T) -> T {
        let now = self.clock.now_micros();
        let shard = self.lock(self.shard_of(key));
        let live = shard
            .entries
            .peek(key)
            .filter(|entry| now < entry.idle_at)
            .map(|entry| entry.state);
        f(live.as_ref(), now)
    }

    fn shard_of(&self, key: &str) -> usize {
        (self.hasher.hash_one(key) >> 32) as usize & (self.shards.len() - 1)
    }

    fn lock(&self, shard: usize) -> MutexGuard<'_, Shard> {
        // The lock guards no invariant a panic could break halfway, so a poisoned lock is still usable.
        self.shards[shard]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Shard {
    /// Stores `entry` under `key`, or drops the key if the entry is already idle; now and then sweeps
    /// idle keys, after as many inserts as there are keys, so the sweep costs O(1) per insert.
    fn store(&mut self, key: &str, entry: Entry, now: u64) {
        if entry.idle_at <= now {
            self.entries.pop(key);
            return;
        }
        if let Some(existing) = self.entries.get_mut(key) {
            *existing = entry;
            return;
        }
        self.entries.push(key.into(), entry);
        self.inserts_since_sweep += 1;
        if self.inserts_since_sweep >= self.entries.len() {
            self.sweep(now);
        }
    }

    fn sweep(&mut self, now: u64) {
        let idle: Vec<Box<str>> = self
            .entries
            .iter()
            .filter(|(_, entry)| entry.idle_at <= now)
            .map(|(key, _)| key.clone())
            .collect();
        for key in idle {
            self.entries.pop(&key);
        }
        self.inserts_since_sweep = 0;
    }
}

#[cfg_attr(target_arch = "wasm32", async_trait::async_trait(?Send))]
#[cfg_attr(not(target_arch = "wasm32"), async_trait::async_trait)]
impl Backend for MemoryBackend {
    async fn acquire(&self, key: &str, cost: f64, params: Algorithm) -> Result<Decision> {
        self.update(key, params, |state, now| {
            let transition = params.acquire(state, now, cost)?;
            Ok((transition.state, transition.decision))
        })
    }

    async fn available(&self, key: &str, params: Algorithm) -> Result<f64> {
        Ok(self.read(key, |state, now| params.available(state, now)))
    }

    async fn time_until_available(
        &self,
        key: &str,
        cost: f64,
        params: Algorithm,
    ) -> Result<Duration> {
        self.read(key, |state, now| {
            params.time_until_available(state, now, cost)
        })
    }

    async fn reset(&self, key: &str, _params: Algorithm) -> Result<()> {
        self.lock(self.shard_of(key)).entries.pop(key);
        Ok(())
    }

    fn backend_name(&self) -> &str {
        "memory"
    }
}
