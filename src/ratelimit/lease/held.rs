//! [`Leases`]: the leases this instance holds, per key, and what it has seen of each key's rate to
//! size the next one; bounded in entries and bytes like every cache of per-identifier state.

use super::{size, Lease};
use crate::bounded_lru::BoundedLru;
use crate::decision::Decision;
use crate::ratelimit::{Response, DEFAULT_CACHE_BYTES};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// Per key, the lease held (if any) and the units decided since the last one was taken; at most
/// `max_entries` keys and [`DEFAULT_CACHE_BYTES`], the least recently used forgotten first (a lease
/// forgotten so is not returned: its units come back when it would have expired at the latest, by the
/// window's end or the bucket's refill).
#[derive(Debug)]
pub(in crate::ratelimit) struct Leases {
    lease: Lease,
    /// `lease.ttl` in microseconds.
    ttl: u64,
    entries: Mutex<BoundedLru<Held>>,
}

#[derive(Debug, Clone, Copy)]
struct Held {
    /// When the units in `seen` started to be counted (µs, local clock).
    since: u64,
    /// The units decided on the key since `since`, by the store or from a lease.
    seen: f64,
    active: Option<Active>,
}

/// A lease held.
#[derive(Debug, Clone, Copy)]
struct Active {
    /// The units not handed out yet.
    left: f64,
    /// When it expires (µs, local clock).
    expires: u64,
    /// The store's time of the reservation (µs), where a window algorithm's return goes.
    at: u64,
    /// The limit that applied.
    limit: u64,
    /// What the limit had left for everyone once the lease was taken.
    outside: f64,
    /// The reservation's `reset` (ms since the epoch); a window's end for the window algorithms.
    reset: u64,
}

/// Unused units of a lease, to give back to the store.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(in crate::ratelimit) struct Returned {
    /// How many.
    pub units: f64,
    /// The store's time of their reservation (µs).
    pub at: u64,
}

/// What [`Leases::take`] decided.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::ratelimit) enum Taken {
    /// Answered from a lease, with no request.
    Answered(Response),
    /// To ask the store, reserving up to `want` units more for a lease (0: no lease); `returned` are
    /// the units of a lease that expired or ran short, to give back.
    Ask {
        want: u64,
        returned: Option<Returned>,
    },
}

impl Leases {
    /// No leases yet, sized by `lease`, for up to `max_entries` keys.
    pub fn new(lease: Lease, max_entries: usize) -> Self {
        Self {
            lease,
            ttl: lease.ttl.as_micros().try_into().unwrap_or(u64::MAX),
            entries: Mutex::new(BoundedLru::new(max_entries, DEFAULT_CACHE_BYTES)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, BoundedLru<Held>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes `cost` (positive) on `key` at `now` (µs) from its lease when it holds that much and has
    /// not expired; else says how large a lease to ask for with the store's decision under a limit of
    /// `capacity`: none for a key first seen within `ttl`, else [`size`] of the rate seen.
    pub fn take(&self, key: &str, cost: f64, capacity: u64, now: u64) -> Taken {
        let mut entries = self.lock();
        let fresh = Held {
            since: now,
            seen: 0.0,
            active: None,
        };
        if !entries.contains(key) && !entries.insert(key, fresh, 0) {
            return Taken::Ask {
                want: 0,
                returned: None,
            };
        }
        let Some(held) = entries.get_mut(key) else {
            return Taken::Ask {
                want: 0,
                returned: None,
            };
        };
        let mut returned = None;
        if let Some(mut active) = held.active.take() {
            if now < active.expires && active.left >= cost {
                active.left -= cost;
                held.seen += cost;
                held.active = Some(active);
                return Taken::Answered(Response {
                    success: true,
                    limit: active.limit,
                    remaining: (active.left + active.outside).max(0.0),
                    reset: active.reset,
                    retry_after: Some(Duration::ZERO),
                    reason: None,
                });
            }
            returned = (active.left > 0.0).then_some(Returned {
                units: active.left,
                at: active.at,
            });
        }
        let first = held.seen == 0.0;
        held.seen += cost;
        let elapsed = now.saturating_sub(held.since);
        let want = if first {
            0
        } else {
            size(self.lease.tokens, capacity, self.ttl, held.seen, elapsed)
        };
        if want == 0 && elapsed > self.ttl {
            held.since = now;
            held.seen = cost;
        }
        Taken::Ask { want, returned }
    }

    /// Keeps the `units` the store reserved on `key` for a lease with `decision`, asked at `before`
    /// (µs, local clock) and decided at the store's `store_now` (µs); `window_end` (ms) is the end of
    /// a window algorithm's window. The lease expires `ttl` after `before`, or at the window's end if
    /// sooner. A lease still held is merged into it when both are of the same window; otherwise its
    /// units are returned, to give back (and so are these when the key is too long to keep).
    pub fn granted(
        &self,
        key: &str,
        units: u64,
        before: u64,
        decision: &Decision,
        store_now: u64,
        window_end: Option<u64>,
    ) -> Option<Returned> {
        let lasts = window_end.map_or(self.ttl, |end| {
            self.ttl
                .min(end.saturating_mul(1_000).saturating_sub(store_now))
        });
        let mut active = Active {
            left: units as f64,
            expires: before.saturating_add(lasts),
            at: store_now,
            limit: decision.limit,
            outside: decision.remaining,
            reset: decision.reset,
        };
        let mut entries = self.lock();
        let fresh = Held {
            since: before,
            seen: 0.0,
            active: None,
        };
        if !entries.contains(key) && !entries.insert(key, fresh, 0) {
            return Some(Returned {
                units: active.left,
                at: active.at,
            });
        }
        let held = entries.get_mut(key)?;
        let mut returned = None;
        if let Some(old) = held.active.take() {
            if before < old.expires && (window_end.is_none() || old.reset == active.reset) {
                active.left += old.left;
                active.expires = active.expires.min(old.expires);
            } else if old.left > 0.0 {
                returned = Some(Returned {
                    units: old.left,
                    at: old.at,
                });
            }
        }
        held.active = Some(active);
        held.since = before;
        held.seen = 0.0;
        returned
    }

    /// The units of `key`'s lease not handed out yet, if it has not expired at `now`.
    pub fn held(&self, key: &str, now: u64) -> f64 {
        self.lock()
            .peek(key)
            .and_then(|held| held.active)
            .filter(|active| now < active.expires)
            .map_or(0.0, |active| active.left)
    }

    /// Forgets `key` and its lease, without returning it (the store's state was reset).
    pub fn void(&self, key: &str) {
        self.lock().remove(key);
    }

    /// Ends every lease, returning the unused units of each with its key.
    pub fn end_all(&self) -> Vec<(Box<str>, Returned)> {
        let mut entries = self.lock();
        entries
            .iter_mut()
            .filter_map(|(key, held)| {
                let active = held.active.take()?;
                (active.left > 0.0).then(|| {
                    let returned = Returned {
                        units: active.left,
                        at: active.at,
                    };
                    (key.clone(), returned)
                })
            })
            .collect()
    }

    /// How many keys are known.
    pub fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000;
    const T0: u64 = 1_700_000_000_000 * MS;

    fn leases() -> Leases {
        Leases::new(
            Lease {
                tokens: 20,
                ttl: Duration::from_secs(1),
            },
            100,
        )
    }

    fn decision(remaining: f64, reset: u64) -> Decision {
        Decision {
            allowed: true,
            limit: 1_000,
            remaining,
            reset,
            retry_after: Some(Duration::ZERO),
        }
    }

    fn want(taken: Taken) -> (u64, Option<Returned>) {
        match taken {
            Taken::Ask { want, returned } => (want, returned),
            Taken::Answered(response) => panic!("answered {response:?}"),
        }
    }

    #[test]
    fn a_key_is_leased_from_its_second_decision_within_ttl() {
        let leases = leases();
        assert_eq!(want(leases.take("k", 1.0, 1_000, T0)), (0, None));
        assert_eq!(want(leases.take("k", 1.0, 1_000, T0 + 10 * MS)), (20, None));
        // A key seen again only after ttl is not hot.
        assert_eq!(want(leases.take("cold", 1.0, 1_000, T0)), (0, None));
        assert_eq!(
            want(leases.take("cold", 1.0, 1_000, T0 + 5_000 * MS)),
            (0, None)
        );
    }

    #[test]
    fn a_lease_answers_until_spent_then_its_rest_is_returned() {
        let leases = leases();
        let reset = T0 / MS + 60_000;
        assert_eq!(
            leases.granted("k", 3, T0, &decision(100.0, reset), T0, Some(reset)),
            None
        );
        for left in [2.0, 1.0] {
            match leases.take("k", 1.0, 1_000, T0 + MS) {
                Taken::Answered(response) => {
                    assert!(response.success);
                    assert_eq!(response.remaining, 100.0 + left);
                    assert_eq!(response.reset, reset);
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(leases.held("k", T0 + MS), 1.0);
        let (_, returned) = want(leases.take("k", 2.0, 1_000, T0 + 2 * MS));
        assert_eq!(returned, Some(Returned { units: 1.0, at: T0 }));
        assert_eq!(leases.held("k", T0 + 2 * MS), 0.0);
    }

    #[test]
    fn a_lease_never_outlives_its_window_nor_its_ttl() {
        let leases = leases();
        // 300 ms left in the window: the lease lasts that long, not the ttl of 1 s.
        let end = T0 / MS + 300;
        leases.granted("w", 5, T0, &decision(10.0, end), T0, Some(end));
        assert_eq!(leases.held("w", T0 + 299 * MS), 5.0);
        assert_eq!(leases.held("w", T0 + 300 * MS), 0.0);
        let (_, returned) = want(leases.take("w", 1.0, 1_000, T0 + 300 * MS));
        assert_eq!(returned.map(|r| r.units), Some(5.0));
        // Without a window, the ttl.
        leases.granted("b", 5, T0, &decision(10.0, end), T0, None);
        assert_eq!(leases.held("b", T0 + 999 * MS), 5.0);
        assert_eq!(leases.held("b", T0 + 1_000 * MS), 0.0);
    }

    #[test]
    fn leases_of_one_window_merge_and_of_another_are_returned() {
        let leases = leases();
        let end = T0 / MS + 60_000;
        leases.granted("k", 2, T0, &decision(10.0, end), T0, Some(end));
        assert_eq!(
            leases.granted("k", 3, T0 + MS, &decision(7.0, end), T0 + MS, Some(end)),
            None
        );
        assert_eq!(leases.held("k", T0 + MS), 5.0);
        let next = end + 60_000;
        let returned = leases.granted(
            "k",
            1,
            T0 + 61_000 * MS,
            &decision(9.0, next),
            T0,
            Some(next),
        );
        assert_eq!(returned.map(|r| r.units), Some(5.0));
    }

    #[test]
    fn voided_and_ended_leases() {
        let leases = leases();
        let end = T0 / MS + 60_000;
        leases.granted("a", 2, T0, &decision(10.0, end), T0, Some(end));
        leases.granted("b", 4, T0, &decision(10.0, end), T0, Some(end));
        leases.void("a");
        assert_eq!(leases.held("a", T0), 0.0);
        let ended = leases.end_all();
        assert_eq!(ended.len(), 1);
        assert_eq!((&*ended[0].0, ended[0].1.units), ("b", 4.0));
        assert!(leases.end_all().is_empty());
    }
}
