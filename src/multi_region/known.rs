//! [`Known`]: what one limit has learnt of each key's current hashes from its own requests' replies.

use super::state::Ledger;
use crate::key_hasher::KeyHasher;
use hashbrown::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The union of every reply this limit has had for each current window or epoch (keyed by the name
/// of its hash, which carries the window's index), holding at most `max_requests` requests in all. A
/// decision adds it to what the answering region holds, so a region that has not yet received a merge
/// this client has seen cannot make the client admit past it.
#[derive(Debug)]
pub struct Known {
    views: Mutex<Views>,
    max_requests: usize,
}

/// The views and how many requests they hold together.
#[derive(Debug, Default)]
struct Views {
    by_key: HashMap<String, Vec<Ledger>, KeyHasher>,
    requests: usize,
}

impl Known {
    /// Room for `max_requests` requests over every key.
    pub fn new(max_requests: usize) -> Self {
        Self {
            views: Mutex::new(Views::default()),
            max_requests,
        }
    }

    /// What is known of `key`'s hashes, if anything.
    pub fn get(&self, key: &str) -> Option<Vec<Ledger>> {
        self.lock().by_key.get(key).cloned()
    }

    /// Merges `ledgers` into what is known of `key`'s hashes. Past the bound, other keys are forgotten
    /// first (the windows gone by go as their keys stop being asked for), then this one.
    pub fn learn(&self, key: &str, ledgers: &[Ledger]) {
        let mut views = self.lock();
        let view = views.by_key.entry(key.to_owned()).or_default();
        let before: usize = view.iter().map(Ledger::len).sum();
        view.resize(ledgers.len().max(view.len()), Ledger::new());
        for (known, ledger) in view.iter_mut().zip(ledgers) {
            known.merge(ledger);
        }
        let after: usize = view.iter().map(Ledger::len).sum();
        views.requests = views.requests - before + after;
        while views.requests > self.max_requests {
            let other = views.by_key.keys().find(|other| *other != key).cloned();
            let forgotten = views.by_key.remove(other.as_deref().unwrap_or(key));
            views.requests -= forgotten.map_or(0, |view| view.iter().map(Ledger::len).sum());
        }
    }

    /// Forgets what is known of the hashes `keys` (a reset).
    pub fn forget(&self, keys: &[String]) {
        let mut views = self.lock();
        for key in keys {
            if let Some(view) = views.by_key.remove(key) {
                views.requests -= view.iter().map(Ledger::len).sum::<usize>();
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Views> {
        // Merging cannot panic halfway, so a poisoned lock still holds consistent views.
        self.views.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger(ids: &[&str]) -> Ledger {
        let mut ledger = Ledger::new();
        for id in ids {
            ledger.insert(id, 1.0);
        }
        ledger
    }

    #[test]
    fn views_grow_by_union_and_stay_within_their_requests() {
        let known = Known::new(4);
        known.learn("k", &[ledger(&["a"])]);
        known.learn("k", &[ledger(&["b"]), ledger(&["p"])]);
        assert_eq!(
            known.get("k"),
            Some(vec![ledger(&["a", "b"]), ledger(&["p"])])
        );
        known.learn("l", &[ledger(&["c"])]);
        assert!(known.get("k").is_some() && known.get("l").is_some());
        // Five requests in all: one other key goes, whichever the table (seeded at random) names first.
        known.learn("m", &[ledger(&["d"])]);
        assert!(known.get("m").is_some());
        assert!(
            known.get("k").is_none() != known.get("l").is_none(),
            "exactly one of the other keys went"
        );
        // A key larger than the bound alone is not kept.
        known.learn("n", &[ledger(&["e", "f", "g", "h", "i"])]);
        assert_eq!(known.get("n"), None);
        known.forget(&["l".to_owned(), "m".to_owned()]);
        assert_eq!((known.get("l"), known.get("m")), (None, None));
        known.learn("o", &[ledger(&["a", "b", "c", "d"])]);
        assert!(
            known.get("o").is_some(),
            "everything forgotten was counted off"
        );
    }
}
