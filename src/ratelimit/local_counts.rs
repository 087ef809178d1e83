//! The local counts of `cachedFixedWindow`: this process's view of each key's fixed-window counter, so
//! that a request can be answered at once and written to the backend afterwards.

use crate::algorithm::FixedWindow;
// hashbrown's map rather than std's: the memory backend's table is hashbrown's, so the wasm package
// carries one copy of the table code, not two.
use crate::key_hasher::KeyHasher;
use hashbrown::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Per key, the window of `rule` it was counted in, the count and the limit that applied; at most
/// `max_entries` keys, and a key of a past window is dropped when next looked at.
#[derive(Debug)]
pub(super) struct LocalCounts {
    rule: FixedWindow,
    entries: Mutex<HashMap<String, Count, KeyHasher>>,
    max_entries: usize,
}

#[derive(Debug, Clone, Copy)]
struct Count {
    window: u64,
    used: u64,
    limit: u64,
}

/// What [`LocalCounts::take`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Taken {
    pub allowed: bool,
    pub used: u64,
    pub limit: u64,
}

impl LocalCounts {
    pub fn new(rule: FixedWindow, max_entries: usize) -> Self {
        Self {
            rule,
            entries: Mutex::new(HashMap::default()),
            max_entries: max_entries.max(1),
        }
    }

    /// The window holding `now_micros`.
    pub fn window(&self, now_micros: u64) -> u64 {
        self.rule.window_index(now_micros)
    }

    /// When `window` ends, in milliseconds since the epoch.
    pub fn window_end(&self, window: u64) -> u64 {
        (window + 1) * self.rule.window_ms()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Count, KeyHasher>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes `rate` (a whole number; negative refunds) from `key`'s count in `window`, if that count is
    /// known; a denied request is not counted, since it is not sent either.
    pub fn take(&self, key: &str, window: u64, rate: f64) -> Option<Taken> {
        let mut entries = self.lock();
        let count = entries.get_mut(key)?;
        if count.window != window {
            entries.remove(key);
            return None;
        }
        let after = (count.used as f64 + rate).max(0.0) as u64;
        let allowed = rate <= 0.0 || after <= count.limit;
        if allowed {
            count.used = after;
        }
        Some(Taken {
            allowed,
            used: count.used,
            limit: count.limit,
        })
    }

    /// What `key` has used in `window`, and its limit, if known.
    pub fn peek(&self, key: &str, window: u64) -> Option<Taken> {
        let entries = self.lock();
        let count = entries.get(key).filter(|count| count.window == window)?;
        Some(Taken {
            allowed: true,
            used: count.used,
            limit: count.limit,
        })
    }

    /// Records the backend's count for `key` in `window`. Within the window the larger of the local and
    /// the backend's count is kept, so a write still on its way is not forgotten.
    pub fn record(&self, key: &str, window: u64, used: u64, limit: u64) {
        let mut entries = self.lock();
        if entries.len() >= self.max_entries && !entries.contains_key(key) {
            // Past windows go; if there are none, the table is full of current windows: forget any one
            // (the first met; it is asked of the backend next time).
            let mut spare = entries.values().all(|count| count.window >= window);
            entries.retain(|_, count| count.window >= window && !std::mem::take(&mut spare));
        }
        let count = entries.entry_ref(key).or_insert(Count {
            window,
            used: 0,
            limit,
        });
        let used = if count.window == window {
            count.used.max(used)
        } else {
            used
        };
        *count = Count {
            window,
            used,
            limit,
        };
    }

    /// Forgets `key`.
    pub fn remove(&self, key: &str) {
        self.lock().remove(key);
    }

    /// How many keys are counted.
    pub fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn full_counts_drop_past_windows_else_any_one_key() {
        let rule = FixedWindow::new(10, Duration::from_secs(1)).unwrap();
        let counts = LocalCounts::new(rule, 2);
        counts.record("a", 5, 1, 10);
        counts.record("b", 5, 2, 10);
        counts.record("c", 5, 3, 10);
        assert_eq!(counts.len(), 2);
        assert_eq!(counts.peek("c", 5).map(|count| count.used), Some(3));
        assert_eq!(
            ["a", "b"]
                .into_iter()
                .filter(|key| counts.peek(key, 5).is_some())
                .count(),
            1
        );
        counts.record("d", 6, 4, 10);
        assert_eq!(counts.len(), 1, "both keys of window 5 went");
        assert_eq!(counts.peek("d", 6).map(|count| count.used), Some(4));
    }
}
