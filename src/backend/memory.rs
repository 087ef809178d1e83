//! `MemoryBackend`: per-process state, bounded in size, no Redis needed.

use super::{admits, Ask, Backend, Decided, Outcome, Part, Set, Verdict, With};
use crate::algorithm::{Algorithm, State};
use crate::clock::{Clock, SystemClock};
use crate::decision::Decision;
use crate::error::{Error, Result};
use crate::maybe_send::BoxFuture;
use hashbrown::HashTable;
use std::hash::BuildHasher;
use std::mem::size_of;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// The seeded hasher of the key table.
type HashState = crate::key_hasher::KeyHasher;

/// How many keys a [`MemoryBackend`] keeps unless told otherwise.
pub const DEFAULT_MAX_KEYS: usize = 100_000;

/// How many bytes a [`MemoryBackend`] keeps unless told otherwise: at the default 100,000 keys the
/// keys are the bound up to keys of about 500 bytes, and 16 KiB keys fill it at about 4,000.
pub const DEFAULT_MAX_BYTES: usize = 64 << 20;

/// Most shards a backend splits its keys over, to spread lock contention between threads.
const MAX_SHARDS: usize = 16;

/// The keys a shard has room for from the start (hashbrown's smallest table).
const FIRST_KEYS_PER_SHARD: usize = 3;

/// Fewest inserts between two sweeps of a shard.
const MIN_SWEEP_INTERVAL: usize = 64;

/// The embedded store: keeps each key's state in this process and runs the algorithm's pure transition
/// under a lock, so every decision is atomic per key.
///
/// Memory stays bounded, in keys and in bytes: a key is forgotten once its state is the same as a new
/// key's (a window that has passed, a refilled bucket), and a full store evicts its least recently used
/// keys. Keys are spread over up to 16 shards, each with its own lock, `max_keys / shards` keys and
/// `max_bytes / shards` bytes. A key is counted as its length plus [`MemoryBackend::KEY_OVERHEAD`]
/// (it costs less: about 90 bytes plus its length, measured in `tests/memory_cost.rs`); a key that
/// alone would not fit in a shard is refused with [`Error::TooLong`].
///
/// Eviction drops the least recently used eighth of a full shard's keys in one pass over the shard
/// (a selection, linear), again until the new key fits: a pass visits at most 8 keys per key it drops,
/// so an insert's work is proportional to what it frees and O(1) amortised per insert. The decision
/// itself pays only a counter per use: `cargo bench --bench memory_backend` measures it.
pub struct MemoryBackend {
    shards: Box<[Mutex<Shard>]>,
    /// The longest key a shard can hold.
    max_key_len: usize,
    hasher: HashState,
    clock: Arc<dyn Clock>,
    /// Limits set with [`Backend::set_dynamic_limit`], with their keys: one per limit prefix that uses
    /// dynamic limits, so a few at most: a list is enough.
    dynamic_limits: Mutex<Vec<(Box<str>, u64)>>,
}

struct Shard {
    slots: HashTable<Slot>,
    max_keys: usize,
    /// What the slots are counted as ([`Slot::bytes`]), at most `max_bytes`.
    bytes: usize,
    max_bytes: usize,
    /// Counts accesses; a slot's `used_at` is the count at its last use, for LRU eviction.
    ticks: u64,
    inserts_until_sweep: usize,
}

struct Slot {
    key: Box<str>,
    state: State,
    /// From this time (microseconds) on, `state` is the same as no state.
    idle_at: u64,
    used_at: u64,
}

impl Slot {
    /// What the slot is counted as in its shard's bytes.
    fn bytes(&self) -> usize {
        self.key.len() + MemoryBackend::KEY_OVERHEAD
    }
}

impl Default for MemoryBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryBackend {
    /// The bytes a key is counted as besides its length: its slot in the table (the key's pointer and
    /// length, the state, two timestamps) and the slot's control byte, counted five times: a table
    /// churned at a steady size doubles when removals have left no free slot, and may then be as
    /// little as 22% full.
    pub const KEY_OVERHEAD: usize = 5 * (size_of::<Slot>() + 1);

    /// A store of up to [`DEFAULT_MAX_KEYS`] keys and [`DEFAULT_MAX_BYTES`] on the system clock.
    pub fn new() -> Self {
        Self::with_max_keys(DEFAULT_MAX_KEYS)
    }

    /// A store of up to `max_keys` keys (at least 1) and [`DEFAULT_MAX_BYTES`] on the system clock.
    pub fn with_max_keys(max_keys: usize) -> Self {
        let max_keys = max_keys.max(1);
        let shard_count = MAX_SHARDS.min(1 << max_keys.ilog2());
        let shards = (0..shard_count)
            .map(|_| {
                Mutex::new(Shard {
                    // Room for a first few keys: storing a first key grows no table, so a first
                    // decision runs (and compiles) none of hashbrown's growth.
                    slots: HashTable::with_capacity(FIRST_KEYS_PER_SHARD),
                    max_keys: max_keys / shard_count,
                    bytes: 0,
                    max_bytes: DEFAULT_MAX_BYTES / shard_count,
                    ticks: 0,
                    inserts_until_sweep: MIN_SWEEP_INTERVAL,
                })
            })
            .collect();
        Self {
            shards,
            max_key_len: max_key_len(DEFAULT_MAX_BYTES / shard_count),
            hasher: HashState::default(),
            clock: Arc::new(SystemClock),
            dynamic_limits: Mutex::default(),
        }
    }

    /// The same store holding at most `max_bytes`, split evenly over its shards; a key too long for a
    /// shard is refused. Least recently used keys go at the next insert to fit.
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        let per_shard = max_bytes / self.shards.len();
        for shard in self.shards.iter_mut() {
            shard
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner)
                .max_bytes = per_shard;
        }
        self.max_key_len = max_key_len(per_shard);
        self
    }

    /// The same store reading time from `clock`.
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// The most keys this store keeps.
    pub fn max_keys(&self) -> usize {
        self.shards.len() * self.lock(0).max_keys
    }

    /// The most bytes this store keeps.
    pub fn max_bytes(&self) -> usize {
        self.shards.len() * self.lock(0).max_bytes
    }

    /// The bytes its keys are counted as now (see [`MemoryBackend::KEY_OVERHEAD`]).
    pub fn bytes(&self) -> usize {
        (0..self.shards.len()).map(|i| self.lock(i).bytes).sum()
    }

    /// How many keys are stored now (including some that are already idle but not yet swept).
    pub fn len(&self) -> usize {
        (0..self.shards.len())
            .map(|i| self.lock(i).slots.len())
            .sum()
    }

    /// Whether no key is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The rule applied to `key`: `rule` with the limit stored under `limit_key` as its capacity,
    /// when there is one; a key too long for a shard is refused.
    fn applied(&self, key: &str, rule: Algorithm, limit_key: Option<&str>) -> Result<Algorithm> {
        if key.len() > self.max_key_len {
            return Err(Error::TooLong {
                field: "key",
                bytes: key.len(),
                max: self.max_key_len,
            });
        }
        match limit_key.and_then(|limit_key| self.stored_limit(limit_key)) {
            Some(limit) => rule.with_capacity(limit),
            None => Ok(rule),
        }
    }

    /// `ask`'s own limit decided here and now: the rule (with a stored dynamic limit as its
    /// capacity) applied at `ask.now`, the new state stored (a peek only reads). Each answer is made
    /// where it is returned, so none is copied on its way out (a copy of this size is a call out of
    /// WebAssembly).
    #[inline]
    fn decide_one<'a>(&self, ask: &Ask<'_>) -> Decided<'a> {
        let rule = match self.applied(ask.key, ask.rule, ask.limit_key) {
            Ok(rule) => rule,
            Err(error) => return refused(error),
        };
        let (key, cost, now) = (ask.key, ask.cost, ask.now);
        let (found, decision) = if cost.is_peek() {
            self.read(key, now, |found| {
                (found.copied(), rule.apply(found, now, cost).decision)
            })
        } else {
            self.update(key, rule, now, |found| {
                let transition = rule.apply(found, now, cost);
                (transition.state, (found.copied(), transition.decision))
            })
        };
        Decided::now(Ok(Verdict::Decided(Outcome {
            now,
            found,
            rule,
            decision,
        })))
    }

    /// [`Backend::acquire`] answered without a future: the state is in this process, so a caller that
    /// knows its store is a `MemoryBackend` decides synchronously (as with governor's `check_key`).
    pub fn acquire_now(&self, key: &str, cost: f64, params: Algorithm) -> Result<Decision> {
        let ask = Ask {
            key,
            cost: params.cost(cost)?,
            rule: params,
            limit_key: None,
            now: self.clock.now_micros(),
            with: With::Nothing,
        };
        match self.decide_one(&ask) {
            Decided::Now(Some(Ok(Verdict::Decided(outcome)))) => Ok(outcome.decision),
            Decided::Now(Some(Err(error))) => Err(error),
            _ => Err(Error::Unsupported {
                what: "an answer of the memory backend given later".to_owned(),
            }),
        }
    }

    /// `ask` and the other limits of `set` decided here and now, all or nothing: the shards of their
    /// keys locked together, in the order of their indexes (so that two sets never wait for each
    /// other), each limit decided on its state, then the states of those that admit stored if the set
    /// admits ([`admits`]; a peek only reads).
    #[inline(never)]
    fn decide_set(&self, ask: &Ask<'_>, set: Set<'_>) -> Result<Vec<Outcome>> {
        let own = Part {
            key: ask.key,
            rule: ask.rule,
            limit_key: ask.limit_key,
            dry_run: set.dry_run,
        };
        let mut limits = Vec::with_capacity(set.others.len() + 1);
        for part in std::iter::once(&own).chain(set.others) {
            let hash = self.hasher.hash_one(part.key);
            let rule = self.applied(part.key, part.rule, part.limit_key)?;
            limits.push((part, hash, rule));
        }
        let mut shards: [Option<MutexGuard<'_, Shard>>; MAX_SHARDS] = Default::default();
        for (index, shard) in shards.iter_mut().enumerate().take(self.shards.len()) {
            if limits
                .iter()
                .any(|&(_, hash, _)| self.shard_of(hash) == index)
            {
                *shard = Some(self.lock(index));
            }
        }
        let (cost, now) = (ask.cost, ask.now);
        let mut outcomes = Vec::with_capacity(limits.len());
        for &(part, hash, rule) in &limits {
            let shard = shards[self.shard_of(hash)].as_ref();
            let slot =
                shard.and_then(|shard| shard.slots.find(hash, |slot| &*slot.key == part.key));
            let found = slot
                .filter(|slot| now < slot.idle_at)
                .map(|slot| slot.state);
            let decision = rule.apply(found.as_ref(), now, cost).decision;
            outcomes.push(Outcome {
                now,
                found,
                rule,
                decision,
            });
        }
        let admitted = (outcomes.iter().zip(&limits))
            .map(|(outcome, (part, _, _))| (outcome.decision.allowed, part.dry_run));
        if admits(admitted) && !cost.is_peek() {
            for (outcome, &(part, hash, rule)) in outcomes.iter().zip(&limits) {
                if let (true, Some(shard)) =
                    (outcome.decision.allowed, &mut shards[self.shard_of(hash)])
                {
                    let state = rule.apply(outcome.found.as_ref(), now, cost).state;
                    shard.put(
                        part.key,
                        hash,
                        state,
                        rule.idle_at(&state),
                        now,
                        &self.hasher,
                    );
                }
            }
        }
        Ok(outcomes)
    }

    /// [`Backend::reset`], done at once.
    fn forget(&self, key: &str) {
        let hash = self.hasher.hash_one(key);
        let mut shard = self.lock(self.shard_of(hash));
        if let Ok(slot) = shard.slots.find_entry(hash, |slot| &*slot.key == key) {
            let (slot, _) = slot.remove();
            shard.bytes -= slot.bytes();
        }
    }

    /// The limit stored under `limit_key`, if any.
    fn stored_limit(&self, limit_key: &str) -> Option<u64> {
        let limits = self.limits();
        limits
            .iter()
            .find(|(key, _)| **key == *limit_key)
            .map(|&(_, limit)| limit)
    }

    /// Stores `limit` under `limit_key`, or removes it for `None`.
    fn store_limit(&self, limit_key: &str, limit: Option<u64>) {
        let mut limits = self.limits();
        limits.retain(|(key, _)| **key != *limit_key);
        if let Some(limit) = limit {
            limits.push((limit_key.into(), limit));
        }
    }

    fn limits(&self) -> MutexGuard<'_, Vec<(Box<str>, u64)>> {
        self.dynamic_limits
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on `key`'s state live at `now` under its shard's lock, and stores the state it returns.
    fn update<T>(
        &self,
        key: &str,
        params: Algorithm,
        now: u64,
        f: impl FnOnce(Option<&State>) -> (State, T),
    ) -> T {
        let hash = self.hasher.hash_one(key);
        let mut shard = self.lock(self.shard_of(hash));
        shard.ticks += 1;
        let used_at = shard.ticks;
        let found = shard.slots.find_mut(hash, |slot| &*slot.key == key);
        let live = found.as_deref().filter(|slot| now < slot.idle_at);
        let (state, answer) = f(live.map(|slot| &slot.state));
        let idle_at = params.idle_at(&state);
        match found {
            Some(slot) => {
                slot.idle_at = idle_at;
                slot.state = state;
                slot.used_at = used_at;
            }
            None if idle_at > now => {
                let slot = Slot {
                    key: key.into(),
                    idle_at,
                    state,
                    used_at,
                };
                shard.insert(hash, slot, now, &self.hasher);
            }
            None => {}
        }
        answer
    }

    /// Reads `key`'s state live at `now` under its shard's lock.
    fn read<T>(&self, key: &str, now: u64, f: impl FnOnce(Option<&State>) -> T) -> T {
        let hash = self.hasher.hash_one(key);
        let shard = self.lock(self.shard_of(hash));
        let slot = shard.slots.find(hash, |slot| &*slot.key == key);
        f(slot
            .filter(|slot| now < slot.idle_at)
            .map(|slot| &slot.state))
    }

    /// The shard for a key's hash: bits the hash table does not use for small tables.
    fn shard_of(&self, hash: u64) -> usize {
        (hash >> 32) as usize & (self.shards.len() - 1)
    }

    fn lock(&self, shard: usize) -> MutexGuard<'_, Shard> {
        // The lock guards no invariant a panic could break halfway, so a poisoned lock is still usable.
        self.shards[shard]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Shard {
    /// Inserts a new key (short enough to fit: see `max_key_len`), first making room if the shard is
    /// full, and now and then sweeping out idle keys (after as many inserts as there were keys at the
    /// last sweep, so O(1) per insert).
    /// Not inlined: the cold path of `update` and `put` alike, a new key.
    #[inline(never)]
    fn insert(&mut self, hash: u64, slot: Slot, now: u64, hasher: &HashState) {
        let bytes = slot.bytes();
        self.inserts_until_sweep = self.inserts_until_sweep.saturating_sub(1);
        if self.inserts_until_sweep == 0 || self.is_full(bytes) {
            self.make_room(bytes, now);
        }
        self.bytes += bytes;
        self.slots
            .insert_unique(hash, slot, |slot| hasher.hash_one(&*slot.key));
    }

    /// Sweeps out the keys idle at `now`, then evicts until a key of `bytes` more fits.
    /// Not inlined: most inserts need neither.
    #[inline(never)]
    fn make_room(&mut self, bytes: usize, now: u64) {
        self.drop_slots(|slot| slot.idle_at <= now);
        self.inserts_until_sweep = self.slots.len().max(MIN_SWEEP_INTERVAL);
        while self.is_full(bytes) && !self.slots.is_empty() {
            self.evict_least_recently_used();
        }
    }

    /// Stores `state`, idle from `idle_at`, as `key`'s (of `hash`): in its slot, or in a new one when
    /// the state is not idle at `now`.
    fn put(
        &mut self,
        key: &str,
        hash: u64,
        state: State,
        idle_at: u64,
        now: u64,
        hasher: &HashState,
    ) {
        self.ticks += 1;
        let used_at = self.ticks;
        if let Some(slot) = self.slots.find_mut(hash, |slot| &*slot.key == key) {
            slot.idle_at = idle_at;
            slot.state = state;
            slot.used_at = used_at;
        } else if idle_at > now {
            let slot = Slot {
                key: key.into(),
                idle_at,
                state,
                used_at,
            };
            self.insert(hash, slot, now, hasher);
        }
    }

    /// Whether a key of `bytes` more would take the shard past its keys or its bytes.
    fn is_full(&self, bytes: usize) -> bool {
        self.slots.len() >= self.max_keys || self.bytes + bytes > self.max_bytes
    }

    /// Drops the least recently used eighth of the keys (at least one), and at most a sixty-fourth more
    /// (see [`least_recently_used`]).
    fn evict_least_recently_used(&mut self) {
        let count = (self.slots.len() / 8).max(1);
        let newest_evicted = least_recently_used(self.slots.iter().map(|slot| slot.used_at), count);
        self.drop_slots(|slot| slot.used_at <= newest_evicted);
    }

    /// Drops the slots `drop` picks, counting off their bytes.
    fn drop_slots(&mut self, drop: impl Fn(&Slot) -> bool) {
        let bytes = &mut self.bytes;
        self.slots.retain(|slot| {
            let dropped = drop(slot);
            if dropped {
                *bytes -= slot.bytes();
            }
            !dropped
        });
    }
}

/// The answer refusing an ask with `error`, made apart from the decisions (see
/// [`MemoryBackend::decide_one`]).
#[inline(never)]
fn refused<'a>(error: Error) -> Decided<'a> {
    Decided::now(Err(error))
}

/// The longest key a shard of `max_bytes` can hold.
fn max_key_len(max_bytes: usize) -> usize {
    max_bytes.saturating_sub(MemoryBackend::KEY_OVERHEAD)
}

/// How many ranges of `used_at` [`least_recently_used`] counts keys in.
const RANGES: usize = 64;

/// A value at or above the `count` smallest of `values` (from 1), close above them: the end of the
/// first of [`RANGES`] equal ranges (a power of two wide) from the smallest value to the largest by
/// which `count` values have been counted, so that at most that range's values more than `count` lie
/// below it. Two passes, a shift and an add per value; 0 for no values.
fn least_recently_used(values: impl Iterator<Item = u64> + Clone, count: usize) -> u64 {
    let (low, high) = (values.clone()).fold((u64::MAX, 0), |(low, high), value| {
        (low.min(value), high.max(value))
    });
    let Some(span) = high.checked_sub(low) else {
        return 0;
    };
    let shift = (u64::BITS - span.leading_zeros()).saturating_sub(RANGES.trailing_zeros());
    let mut counts = [0usize; RANGES];
    for value in values {
        if let Some(counted) = counts.get_mut(((value - low) >> shift) as usize) {
            *counted += 1;
        }
    }
    let mut counted = 0;
    for (range, in_range) in counts.iter().enumerate() {
        counted += in_range;
        if counted >= count {
            return low.saturating_add((range as u64) << shift | ((1 << shift) - 1));
        }
    }
    high
}

impl Backend for MemoryBackend {
    /// Answered at once.
    fn decide<'a>(&'a self, ask: &Ask<'_>) -> Decided<'a> {
        match ask.with {
            With::Nothing => self.decide_one(ask),
            With::Set(set) => Decided::now(self.decide_set(ask, set).map(Verdict::Set)),
            With::Guard(_) | With::Lease(_) => refused(Error::Unsupported {
                what: "deny lists, analytics and leases in the memory backend".to_owned(),
            }),
        }
    }

    fn reset<'a>(&'a self, key: &'a str, _params: Algorithm) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            self.forget(key);
            Ok(())
        })
    }

    fn backend_name(&self) -> &str {
        "memory"
    }

    fn now_micros(&self) -> u64 {
        self.clock.now_micros()
    }

    fn dynamic_limit<'a>(&'a self, limit_key: &'a str) -> BoxFuture<'a, Result<Option<u64>>> {
        Box::pin(async move { Ok(self.stored_limit(limit_key)) })
    }

    fn set_dynamic_limit<'a>(
        &'a self,
        limit_key: &'a str,
        limit: Option<u64>,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            self.store_limit(limit_key, limit);
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_eviction_bound_lies_just_above_the_least_recently_used() {
        let mut seed: u64 = 7;
        for len in 1..300usize {
            let values: Vec<u64> = (0..len)
                .map(|_| {
                    seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    1_000 + (seed >> 44)
                })
                .collect();
            for count in [1, len / 8, len / 2, len] {
                let bound = least_recently_used(values.iter().copied(), count);
                let below = values.iter().filter(|&&value| value <= bound).count();
                assert!(below >= count, "{len} {count}");
                // Values spread evenly: a range holds about a sixty-fourth of them.
                assert!(below <= count + len / 16 + 2, "{len} {count}: {below}");
            }
        }
        assert_eq!(least_recently_used(std::iter::empty(), 1), 0);
        assert_eq!(least_recently_used([5, 5, 5].into_iter(), 1), 5);
        assert_eq!(least_recently_used([0, u64::MAX].into_iter(), 2), u64::MAX);
    }
}
