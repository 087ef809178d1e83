//! The local counts of `cachedFixedWindow`: this process's view of each key's fixed-window counter, so
//! that a request can be answered at once and written to the backend afterwards.
//!
//! A key's count is the largest the backend has answered in the window plus what this process has sent
//! and not yet seen answered: requests the backend decides (the first ones of a window, before the
//! count is known) and the writes of requests answered here. So a request admitted here while another
//! is on its way never makes one process admit past the limit, whichever reaches the backend first. An
//! answer that already counts a write still in flight counts it twice until that write's own answer
//! comes back: meanwhile a request may be denied early, never admitted late. A request whose answer
//! never comes (dropped, or cancelled) stays counted until the window ends.

use super::DEFAULT_CACHE_BYTES;
use crate::algorithm::FixedWindow;
use crate::bounded_lru::BoundedLru;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Per key, the window of `rule` it was counted in, what the backend counted, what is on its way and
/// the limit that applied; at most `max_entries` keys and [`DEFAULT_CACHE_BYTES`], the least recently
/// used forgotten first (in O(1); it is asked of the backend next time), and a key of a past window
/// dropped when next looked at.
#[derive(Debug)]
pub(super) struct LocalCounts {
    rule: FixedWindow,
    entries: Mutex<BoundedLru<Count>>,
}

#[derive(Debug, Clone, Copy)]
struct Count {
    window: u64,
    /// The largest count the backend answered in `window`; `None` until its first answer.
    counted: Option<u64>,
    /// What requests sent to the backend and not yet answered take.
    in_flight: u64,
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
            entries: Mutex::new(BoundedLru::new(max_entries, DEFAULT_CACHE_BYTES)),
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

    fn lock(&self) -> MutexGuard<'_, BoundedLru<Count>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes `rate` (a whole number; negative refunds) from `key`'s count in `window`, if the backend
    /// has counted it; an admitted rate is then on its way (its write follows, answered with
    /// [`LocalCounts::answered`]). A denied request is not counted, since it is not sent either.
    pub fn take(&self, key: &str, window: u64, rate: f64) -> Option<Taken> {
        let mut entries = self.lock();
        let count = entries.get_mut(key)?;
        if count.window != window {
            entries.remove(key);
            return None;
        }
        let counted = count.counted?;
        let used = counted.saturating_add(count.in_flight);
        let allowed = rate <= 0.0 || used as f64 + rate <= count.limit as f64;
        if rate < 0.0 {
            count.counted = Some(counted.saturating_sub(-rate as u64));
        } else if allowed {
            count.in_flight = count.in_flight.saturating_add(rate as u64);
        }
        Some(Taken {
            allowed,
            used: count.counted.unwrap_or(0).saturating_add(count.in_flight),
            limit: count.limit,
        })
    }

    /// What `key` has used in `window`, and its limit, once the backend has counted it.
    pub fn peek(&self, key: &str, window: u64) -> Option<Taken> {
        let entries = self.lock();
        let count = entries.peek(key).filter(|count| count.window == window)?;
        Some(Taken {
            allowed: true,
            used: count.counted?.saturating_add(count.in_flight),
            limit: count.limit,
        })
    }

    /// Notes that a request taking `rate` of `key` in `window` leaves for the backend to decide.
    pub fn sending(&self, key: &str, window: u64, rate: f64, limit: u64) {
        let mut entries = self.lock();
        let Some(count) = entry(&mut entries, key, window, limit) else {
            return; // too long to keep: asked of the backend every time
        };
        count.in_flight = count.in_flight.saturating_add(rate.max(0.0) as u64);
    }

    /// Records the backend's answer to a request of `rate` on `key` in `window` (sent with
    /// [`LocalCounts::sending`], or the write of a [`LocalCounts::take`]): the key's count there is
    /// `used` at least, and the request is no longer on its way.
    pub fn answered(&self, key: &str, window: u64, rate: f64, used: u64, limit: u64) {
        let mut entries = self.lock();
        let Some(count) = entry(&mut entries, key, window, limit) else {
            return;
        };
        if count.window != window {
            return; // an answer of a past window
        }
        count.counted = Some(count.counted.map_or(used, |counted| counted.max(used)));
        count.in_flight = count.in_flight.saturating_sub(rate.max(0.0) as u64);
        count.limit = limit;
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

/// `key`'s count in `entries`, made empty when missing or of a window before `window`; `None` when the
/// key alone is larger than the table.
fn entry<'a>(
    entries: &'a mut BoundedLru<Count>,
    key: &str,
    window: u64,
    limit: u64,
) -> Option<&'a mut Count> {
    let empty = Count {
        window,
        counted: None,
        in_flight: 0,
        limit,
    };
    if !entries.contains(key) && !entries.insert(key, empty, 0) {
        return None;
    }
    let count = entries.get_mut(key)?;
    if count.window < window {
        *count = empty;
    }
    Some(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn counts(limit: u64, max_entries: usize) -> LocalCounts {
        LocalCounts::new(
            FixedWindow::new(limit, Duration::from_secs(1)).unwrap(),
            max_entries,
        )
    }

    #[test]
    fn full_counts_forget_the_least_recently_used_key() {
        let counts = counts(10, 2);
        counts.answered("a", 5, 1.0, 1, 10);
        counts.answered("b", 5, 1.0, 2, 10);
        assert!(
            counts.take("a", 5, 1.0).is_some(),
            "a is now the most recent"
        );
        counts.answered("c", 5, 1.0, 3, 10);
        assert_eq!(counts.len(), 2);
        assert_eq!(counts.peek("c", 5).map(|count| count.used), Some(3));
        assert_eq!(counts.peek("a", 5).map(|count| count.used), Some(2));
        assert_eq!(counts.peek("b", 5), None);
    }

    #[test]
    fn distinct_megabyte_keys_stay_within_the_byte_budget() {
        let counts = counts(10, 1_000);
        for i in 0..20 {
            let key = format!("{i}:{}", "k".repeat(1 << 20));
            counts.answered(&key, 5, 1.0, 1, 10);
            assert!(counts.lock().bytes() <= DEFAULT_CACHE_BYTES);
            assert!(counts.peek(&key, 5).is_some(), "the newest is kept");
        }
        assert_eq!(counts.len(), 3);
        let huge = "k".repeat(DEFAULT_CACHE_BYTES);
        counts.sending(&huge, 5, 1.0, 10);
        counts.answered(&huge, 5, 1.0, 1, 10);
        assert_eq!(
            counts.peek(&huge, 5),
            None,
            "too long to keep, so asked of the backend"
        );
        assert_eq!(counts.len(), 3);
    }

    #[test]
    fn requests_on_their_way_count_until_answered() {
        let counts = counts(3, 10);
        // Two requests leave for the backend before the key is known; nothing is answered here yet.
        counts.sending("k", 5, 1.0, 3);
        counts.sending("k", 5, 1.0, 3);
        assert_eq!(counts.take("k", 5, 1.0), None);
        // The first is answered: counted 1, and the second still on its way.
        counts.answered("k", 5, 1.0, 1, 3);
        let third = counts.take("k", 5, 1.0).unwrap();
        assert!(third.allowed);
        assert_eq!(third.used, 3);
        // The second's answer does not count the third's write yet: a fourth is still denied.
        counts.answered("k", 5, 1.0, 2, 3);
        assert!(!counts.take("k", 5, 1.0).unwrap().allowed);
        // The third's write is answered: 3 in all, nothing on its way.
        counts.answered("k", 5, 1.0, 3, 3);
        assert_eq!(counts.peek("k", 5).unwrap().used, 3);
    }

    #[test]
    fn a_write_counted_twice_is_corrected_by_its_own_answer() {
        let counts = counts(5, 10);
        counts.sending("k", 5, 1.0, 5);
        counts.sending("k", 5, 1.0, 5);
        counts.answered("k", 5, 1.0, 1, 5);
        assert!(counts.take("k", 5, 1.0).unwrap().allowed);
        // The write reached the backend before the second request: its answer counts it already.
        counts.answered("k", 5, 1.0, 3, 5);
        assert_eq!(
            counts.peek("k", 5).unwrap().used,
            4,
            "counted twice, for now"
        );
        counts.answered("k", 5, 1.0, 2, 5);
        assert_eq!(counts.peek("k", 5).unwrap().used, 3);
    }

    #[test]
    fn refunds_lower_the_count_and_new_windows_start_over() {
        let counts = counts(3, 10);
        counts.answered("k", 5, 1.0, 3, 3);
        assert!(!counts.take("k", 5, 1.0).unwrap().allowed);
        assert!(counts.take("k", 5, -1.0).unwrap().allowed);
        assert!(counts.take("k", 5, 1.0).unwrap().allowed);
        // A late answer of a past window changes nothing; the next window is asked of the backend.
        counts.answered("k", 4, 1.0, 1, 3);
        assert_eq!(counts.peek("k", 5).unwrap().used, 3);
        assert_eq!(counts.take("k", 6, 1.0), None);
        counts.sending("k", 6, 1.0, 3);
        counts.answered("k", 6, 1.0, 1, 3);
        assert_eq!(counts.peek("k", 6).unwrap().used, 1);
    }
}
