//! [`Leases`]: the leases this instance holds, per key, and the size of each key's next lease;
//! bounded in entries and bytes like every cache of per-identifier state.

use super::{first, grow, most, shrink, Lease};
use crate::backend::Closing;
use crate::bounded_lru::BoundedLru;
use crate::decision::Decision;
use crate::ratelimit::{Response, DEFAULT_CACHE_BYTES};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// The most leases of one key merged into the one held (concurrent grants); a grant past it is
/// given back instead.
const MAX_MERGED: usize = 4;

/// What a key's lease ids hold on the heap at most: [`MAX_MERGED`] ids of `<µs>.<n>`.
const IDS_BYTES: usize = MAX_MERGED * 48;

/// Per key, the lease held (if any) and the size of the next; at most `max_entries` keys and
/// [`DEFAULT_CACHE_BYTES`], the least recently used forgotten first (a lease forgotten so is not
/// returned: its units come back when its window ends or the bucket refills them).
#[derive(Debug)]
pub(in crate::ratelimit) struct Leases {
    lease: Lease,
    /// `lease.ttl` in microseconds.
    ttl: u64,
    entries: Mutex<BoundedLru<Held>>,
}

#[derive(Debug, Clone)]
struct Held {
    /// When the key was last decided (µs, local clock).
    last: u64,
    /// The size of the last lease asked for (0 before the first).
    size: u64,
    /// Until when a lease asked for is awaited (µs, local clock): meanwhile, decisions ask for none.
    awaiting: u64,
    active: Option<Active>,
}

/// A lease held.
#[derive(Debug, Clone)]
struct Active {
    /// The units not handed out yet.
    left: f64,
    /// When it expires (µs, local clock).
    expires: u64,
    /// The limit that applied.
    limit: u64,
    /// What the limit had left for everyone once the lease was taken.
    outside: f64,
    /// The reservation's `reset` (ms since the epoch); a window's end for the window algorithms.
    reset: u64,
    /// Its ids in the store's ledger.
    ids: Vec<Box<str>>,
}

impl Active {
    fn closing(self) -> Closing {
        Closing {
            units: self.left,
            ids: self.ids,
        }
    }
}

/// What [`Leases::take`] decided.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::ratelimit) enum Taken {
    /// Answered from a lease, with no request.
    Answered(Response),
    /// To ask the store, reserving up to `want` units more for a lease (0: no lease), after closing
    /// the lease that expired or ran short (`closing`, empty if none).
    Ask { want: u64, closing: Closing },
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

    /// The leases' ttl.
    pub fn ttl(&self) -> Duration {
        self.lease.ttl
    }

    fn lock(&self) -> MutexGuard<'_, BoundedLru<Held>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes `cost` (positive) on `key` at `now` (µs) from its lease when it holds that much and has
    /// not expired; else closes that lease and says how large a lease to ask for with the store's
    /// decision under a limit of `capacity`: none for a key not decided within the last `ttl`, nor
    /// while another decision's lease is awaited; else the last lease's size, doubled when it was
    /// spent before it expired, halved when it expired with units unused ([`grow`], [`shrink`]).
    #[inline(never)]
    pub fn take(&self, key: &str, cost: f64, capacity: u64, now: u64) -> Taken {
        let mut entries = self.lock();
        let fresh = Held {
            last: 0,
            size: 0,
            awaiting: 0,
            active: None,
        };
        let none = || Taken::Ask {
            want: 0,
            closing: Closing::default(),
        };
        if !entries.contains(key) && !entries.insert(key, fresh, IDS_BYTES) {
            return none();
        }
        let Some(held) = entries.get_mut(key) else {
            return none();
        };
        let most = most(self.lease.tokens, capacity);
        let mut closing = Closing::default();
        if let Some(mut active) = held.active.take() {
            if now < active.expires && active.left >= cost {
                active.left -= cost;
                held.last = now;
                let response = Response {
                    success: true,
                    limit: active.limit,
                    remaining: (active.left + active.outside).max(0.0),
                    reset: active.reset,
                    retry_after: Some(Duration::ZERO),
                    reason: None,
                    limits: Vec::new(),
                    live: None,
                };
                held.active = Some(active);
                return Taken::Answered(response);
            }
            held.size = if active.left >= cost {
                shrink(held.size)
            } else {
                grow(held.size, most)
            };
            closing = active.closing();
        }
        let hot = held.last != 0 && now.saturating_sub(held.last) <= self.ttl;
        held.last = now;
        let want = if hot && now >= held.awaiting {
            match held.size {
                0 => first(most),
                size => size.min(most),
            }
        } else {
            0
        };
        if want > 0 {
            held.size = want;
            held.awaiting = now.saturating_add(self.ttl);
        }
        Taken::Ask { want, closing }
    }

    /// Keeps the `units` the store reserved on `key` for the lease `id` with `decision`, asked at
    /// `before` (µs, local clock) and decided at the store's `store_now` (µs); `window_end` (ms) is
    /// the end of a window algorithm's window. The lease expires `ttl` after `before`, or at the
    /// window's end if sooner (never after the ledger's end of it, counted from `store_now`). A lease
    /// still held is merged into it when both are of the same window; otherwise it is returned, to
    /// close (and so is this one when the key is too long to keep).
    #[allow(clippy::too_many_arguments)]
    pub fn granted(
        &self,
        key: &str,
        units: u64,
        id: Box<str>,
        before: u64,
        decision: &Decision,
        store_now: u64,
        window_end: Option<u64>,
    ) -> Option<Closing> {
        let lasts = window_end.map_or(self.ttl, |end| {
            self.ttl
                .min(end.saturating_mul(1_000).saturating_sub(store_now))
        });
        let mut active = Active {
            left: units as f64,
            expires: before.saturating_add(lasts),
            limit: decision.limit,
            outside: decision.remaining,
            reset: decision.reset,
            ids: vec![id],
        };
        let mut entries = self.lock();
        let fresh = Held {
            last: before,
            size: units,
            awaiting: 0,
            active: None,
        };
        if !entries.contains(key) && !entries.insert(key, fresh, IDS_BYTES) {
            return Some(active.closing());
        }
        let Some(held) = entries.get_mut(key) else {
            return Some(active.closing());
        };
        held.awaiting = 0;
        let mut closing = None;
        if let Some(old) = held.active.take() {
            let same_window = window_end.is_none() || old.reset == active.reset;
            if before < old.expires && same_window && old.ids.len() < MAX_MERGED {
                active.left += old.left;
                active.expires = active.expires.min(old.expires);
                active.ids.extend(old.ids);
            } else {
                closing = Some(old.closing());
            }
        }
        held.active = Some(active);
        closing
    }

    /// The units of `key`'s lease not handed out yet, if it has not expired at `now`.
    pub fn held(&self, key: &str, now: u64) -> f64 {
        self.lock()
            .peek(key)
            .and_then(|held| held.active.as_ref())
            .filter(|active| now < active.expires)
            .map_or(0.0, |active| active.left)
    }

    /// Forgets `key` and its lease without spending it (the store's state is being reset); returns
    /// the lease's ids, which the reset drops from the ledger.
    pub fn void(&self, key: &str) -> Vec<Box<str>> {
        self.lock()
            .remove(key)
            .and_then(|held| held.active)
            .map_or_else(Vec::new, |active| active.ids)
    }

    /// Ends every lease, returning each with its key, to close.
    pub fn end_all(&self) -> Vec<(Box<str>, Closing)> {
        let mut entries = self.lock();
        entries
            .iter_mut()
            .filter_map(|(key, held)| Some((key.clone(), held.active.take()?.closing())))
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
                tokens: 80,
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

    fn ask(taken: Taken) -> (u64, Closing) {
        match taken {
            Taken::Ask { want, closing } => (want, closing),
            Taken::Answered(response) => panic!("answered {response:?}"),
        }
    }

    fn want(taken: Taken) -> u64 {
        ask(taken).0
    }

    fn closing(units: f64, ids: &[&str]) -> Closing {
        Closing {
            units,
            ids: ids.iter().map(|&id| id.into()).collect(),
        }
    }

    #[test]
    fn a_key_is_leased_from_its_second_decision_within_ttl_starting_small() {
        let leases = leases();
        assert_eq!(want(leases.take("k", 1.0, 1_000, T0)), 0);
        assert_eq!(want(leases.take("k", 1.0, 1_000, T0 + 10 * MS)), 10);
        // While that lease is awaited, other decisions ask for none.
        assert_eq!(want(leases.take("k", 1.0, 1_000, T0 + 11 * MS)), 0);
        // A key seen again only after ttl is not hot.
        assert_eq!(want(leases.take("cold", 1.0, 1_000, T0)), 0);
        assert_eq!(want(leases.take("cold", 1.0, 1_000, T0 + 5_000 * MS)), 0);
        // A small limit is never leased.
        assert_eq!(want(leases.take("small", 1.0, 19, T0)), 0);
        assert_eq!(want(leases.take("small", 1.0, 19, T0 + MS)), 0);
    }

    #[test]
    fn a_lease_spent_before_it_expires_doubles_and_one_left_unused_halves() {
        let leases = leases();
        let reset = T0 / MS + 60_000;
        leases.take("k", 1.0, 1_000, T0);
        let mut now = T0 + MS;
        assert_eq!(want(leases.take("k", 1.0, 1_000, now)), 10);
        for (n, next) in [(10, 20), (20, 40), (40, 80), (80, 80)] {
            let id = format!("{now}.1");
            assert_eq!(
                leases.granted(
                    "k",
                    n,
                    id.clone().into(),
                    now,
                    &decision(0.0, reset),
                    now,
                    None
                ),
                None
            );
            for _ in 0..n {
                assert!(matches!(
                    leases.take("k", 1.0, 1_000, now),
                    Taken::Answered(_)
                ));
            }
            now += MS;
            let (asked, closed) = ask(leases.take("k", 1.0, 1_000, now));
            assert_eq!((asked, closed), (next, closing(0.0, &[&id])));
        }
        leases.granted(
            "k",
            80,
            "last".into(),
            now,
            &decision(0.0, reset),
            now,
            None,
        );
        now += 1_000 * MS; // expired with every unit unused
        let (asked, closed) = ask(leases.take("k", 1.0, 1_000, now));
        assert_eq!((asked, closed), (40, closing(80.0, &["last"])));
    }

    #[test]
    fn a_lease_answers_until_spent_then_it_is_closed_with_its_rest() {
        let leases = leases();
        let reset = T0 / MS + 60_000;
        let granted = leases.granted(
            "k",
            3,
            "a".into(),
            T0,
            &decision(100.0, reset),
            T0,
            Some(reset),
        );
        assert_eq!(granted, None);
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
        let (_, closed) = ask(leases.take("k", 2.0, 1_000, T0 + 2 * MS));
        assert_eq!(closed, closing(1.0, &["a"]));
        assert_eq!(leases.held("k", T0 + 2 * MS), 0.0);
    }

    #[test]
    fn a_lease_never_outlives_its_window_nor_its_ttl() {
        let leases = leases();
        // 300 ms left in the window: the lease lasts that long, not the ttl of 1 s.
        let end = T0 / MS + 300;
        leases.granted("w", 5, "a".into(), T0, &decision(10.0, end), T0, Some(end));
        assert_eq!(leases.held("w", T0 + 299 * MS), 5.0);
        assert_eq!(leases.held("w", T0 + 300 * MS), 0.0);
        let (_, closed) = ask(leases.take("w", 1.0, 1_000, T0 + 300 * MS));
        assert_eq!(closed, closing(5.0, &["a"]));
        // Without a window, the ttl.
        leases.granted("b", 5, "b".into(), T0, &decision(10.0, end), T0, None);
        assert_eq!(leases.held("b", T0 + 999 * MS), 5.0);
        assert_eq!(leases.held("b", T0 + 1_000 * MS), 0.0);
    }

    #[test]
    fn leases_of_one_window_merge_and_of_another_are_closed() {
        let leases = leases();
        let end = T0 / MS + 60_000;
        leases.granted("k", 2, "a".into(), T0, &decision(10.0, end), T0, Some(end));
        let merged = leases.granted(
            "k",
            3,
            "b".into(),
            T0 + MS,
            &decision(7.0, end),
            T0 + MS,
            Some(end),
        );
        assert_eq!(merged, None);
        assert_eq!(leases.held("k", T0 + MS), 5.0);
        let next = end + 60_000;
        let closed = leases.granted(
            "k",
            1,
            "c".into(),
            T0 + 61_000 * MS,
            &decision(9.0, next),
            T0,
            Some(next),
        );
        assert_eq!(closed, Some(closing(5.0, &["b", "a"])));
    }

    #[test]
    fn voided_and_ended_leases() {
        let leases = leases();
        let end = T0 / MS + 60_000;
        leases.granted("a", 2, "1".into(), T0, &decision(10.0, end), T0, Some(end));
        leases.granted("b", 4, "2".into(), T0, &decision(10.0, end), T0, Some(end));
        assert_eq!(leases.void("a"), vec![Box::from("1")]);
        assert_eq!(leases.held("a", T0), 0.0);
        let ended = leases.end_all();
        assert_eq!(ended.len(), 1);
        assert_eq!((&*ended[0].0, &ended[0].1), ("b", &closing(4.0, &["2"])));
        assert!(leases.end_all().is_empty());
    }
}
