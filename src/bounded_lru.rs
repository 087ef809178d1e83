//! [`BoundedLru`]: the table under every cache of per-identifier state (the ephemeral cache, local
//! counts, what a multi-region limit knows). It keeps the most recently used entries, bounded both in
//! entries and in bytes whatever the keys' lengths, and makes room by dropping the least recently used
//! one at a time (`lru`'s list: O(1) each, never a scan).

use crate::key_hasher::KeyHasher;
use lru::LruCache;
use std::mem::size_of;

/// Keys to values, most recently used first, within `max_entries` entries and `max_bytes` bytes.
///
/// An entry is counted as its key's bytes, plus the bytes its value holds on the heap (given at
/// insert), plus [`BoundedLru::ENTRY_OVERHEAD`]: an estimate of the list node and the table slot that
/// hold it. An insert drops least recently used entries until the new one fits: each entry is dropped
/// at most once, so an insert costs O(1) amortised, and no more than what it frees. An entry larger
/// than `max_bytes` alone is not kept.
#[derive(Debug)]
pub(crate) struct BoundedLru<V> {
    entries: LruCache<Box<str>, Entry<V>, KeyHasher>,
    max_entries: usize,
    max_bytes: usize,
    bytes: usize,
}

#[derive(Debug)]
struct Entry<V> {
    value: V,
    /// What the entry is counted as.
    bytes: usize,
}

impl<V> BoundedLru<V> {
    /// The bytes an entry is counted as besides its key and what its value holds on the heap: the
    /// list node (key, value, two links) and its table slot (two pointers and a control byte), the
    /// slot counted five times: a table churned at a steady size doubles when removals have left no
    /// free slot, and may then be as little as 22% full.
    pub const ENTRY_OVERHEAD: usize = size_of::<Box<str>>()
        + size_of::<Entry<V>>()
        + 2 * size_of::<usize>()
        + 5 * (2 * size_of::<usize>() + 1);

    /// An empty table for up to `max_entries` entries (at least 1) and `max_bytes` bytes.
    pub fn new(max_entries: usize, max_bytes: usize) -> Self {
        Self {
            entries: LruCache::unbounded_with_hasher(KeyHasher::new()),
            max_entries: max_entries.max(1),
            max_bytes,
            bytes: 0,
        }
    }

    /// The same table within `max_bytes` bytes, its least recently used entries dropped to fit.
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self.make_room(0);
        self
    }

    /// The most entries it keeps.
    pub fn max_entries(&self) -> usize {
        self.max_entries
    }

    /// The most bytes it keeps.
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The bytes its entries are counted as.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// `key`'s value, now the most recently used.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        self.entries.get_mut(key).map(|entry| &mut entry.value)
    }

    /// `key`'s value, as recently used as it was.
    pub fn peek(&self, key: &str) -> Option<&V> {
        self.entries.peek(key).map(|entry| &entry.value)
    }

    /// Every entry, most recently used first, its value changeable; none becomes more recently used.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&Box<str>, &mut V)> {
        self.entries
            .iter_mut()
            .map(|(key, entry)| (key, &mut entry.value))
    }

    /// Whether `key` is held.
    pub fn contains(&self, key: &str) -> bool {
        self.entries.contains(key)
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<V> {
        let entry = self.entries.pop(key)?;
        self.bytes -= entry.bytes;
        Some(entry.value)
    }

    /// Stores `value` under `key` as the most recently used entry, replacing what `key` held; `heap_bytes`
    /// is what `value` holds on the heap. Least recently used entries go to make room. Returns whether
    /// it is kept (not when larger than `max_bytes` alone).
    pub fn insert(&mut self, key: impl Into<Box<str>>, value: V, heap_bytes: usize) -> bool {
        let key = key.into();
        self.remove(&key);
        let bytes = key
            .len()
            .saturating_add(heap_bytes)
            .saturating_add(Self::ENTRY_OVERHEAD);
        if bytes > self.max_bytes {
            return false;
        }
        self.make_room(bytes);
        self.bytes += bytes;
        self.entries.push(key, Entry { value, bytes });
        true
    }

    /// Drops least recently used entries until one more of `bytes` fits.
    fn make_room(&mut self, bytes: usize) {
        while self.entries.len() >= self.max_entries
            || self.bytes.saturating_add(bytes) > self.max_bytes
        {
            match self.entries.pop_lru() {
                Some((_, entry)) => self.bytes -= entry.bytes,
                None => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OVERHEAD: usize = BoundedLru::<u64>::ENTRY_OVERHEAD;

    #[test]
    fn a_full_table_drops_the_least_recently_used_entry_and_only_it() {
        let mut table = BoundedLru::new(3, usize::MAX);
        for (key, value) in [("a", 1), ("b", 2), ("c", 3)] {
            assert!(table.insert(key, value, 0));
        }
        assert_eq!(table.get_mut("a"), Some(&mut 1), "a is now the most recent");
        assert!(table.insert("d", 4, 0));
        assert_eq!(table.len(), 3);
        assert_eq!(table.peek("b"), None, "b was the least recently used");
        for key in ["a", "c", "d"] {
            assert!(table.contains(key), "{key}");
        }
    }

    #[test]
    fn bytes_are_bounded_whatever_the_keys_lengths() {
        let max_bytes = 4 << 20;
        let mut table = BoundedLru::new(1_000, max_bytes);
        let megabyte = 1 << 20;
        for i in 0..20u64 {
            let key = format!("{i}:{}", "k".repeat(megabyte));
            assert!(table.insert(key, i, 0));
            assert!(table.bytes() <= max_bytes, "{} bytes", table.bytes());
            assert!(
                table.contains(&format!("{i}:{}", "k".repeat(megabyte))),
                "the newest is kept"
            );
        }
        assert_eq!(table.len(), 3, "three 1 MiB keys fit in 4 MiB, not four");
        assert!(
            !table.insert("k".repeat(max_bytes), 0, 0),
            "larger than the table"
        );
        assert_eq!(table.len(), 3, "and nothing was dropped for it");
    }

    #[test]
    fn removals_and_replacements_keep_the_count_of_bytes() {
        let mut table = BoundedLru::new(10, usize::MAX);
        table.insert("a", 1, 100);
        table.insert("bb", 2, 0);
        assert_eq!(table.bytes(), 1 + 100 + 2 + 2 * OVERHEAD);
        table.insert("a", 3, 7);
        assert_eq!(table.bytes(), 1 + 7 + 2 + 2 * OVERHEAD);
        assert_eq!(table.remove("bb"), Some(2));
        assert_eq!(table.remove("bb"), None);
        assert_eq!(table.bytes(), 1 + 7 + OVERHEAD);
        let table = table.with_max_bytes(OVERHEAD);
        assert_eq!((table.len(), table.bytes()), (0, 0));
    }
}
