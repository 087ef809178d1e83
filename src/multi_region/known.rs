//! [`Known`]: what one limit has learnt of each key's current hashes from its own requests' replies.

use super::state::Ledger;
use crate::bounded_lru::BoundedLru;
use std::mem::size_of;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The union of every reply this limit has had for each current window or epoch (keyed by the name
/// of its hash, which carries the window's index), within `max_bytes` over every key, the least
/// recently used key forgotten first. A decision adds it to what the answering region holds, so a
/// region that has not yet received a merge this client has seen cannot make the client admit past
/// it.
#[derive(Debug)]
pub struct Known {
    views: Mutex<BoundedLru<Vec<Ledger>>>,
}

impl Known {
    /// Room for `max_bytes` over every key: a key counted as its length, its requests' ids and
    /// [`heap_bytes`] besides.
    pub fn new(max_bytes: usize) -> Self {
        Self {
            views: Mutex::new(BoundedLru::new(usize::MAX, max_bytes)),
        }
    }

    /// What is known of `key`'s hashes, if anything.
    pub fn get(&self, key: &str) -> Option<Vec<Ledger>> {
        self.lock().get_mut(key).cloned()
    }

    /// Merges `ledgers` into what is known of `key`'s hashes. Past the bound, the least recently used
    /// other keys are forgotten first (the windows gone by go as their keys stop being asked for),
    /// and a key larger than the bound alone is not kept.
    pub fn learn(&self, key: &str, ledgers: &[Ledger]) {
        let mut views = self.lock();
        let mut view = views.remove(key).unwrap_or_default();
        view.resize(ledgers.len().max(view.len()), Ledger::new());
        for (known, ledger) in view.iter_mut().zip(ledgers) {
            known.merge(ledger);
        }
        let bytes = heap_bytes(&view);
        views.insert(key, view, bytes);
    }

    /// Forgets what is known of the hashes `keys` (a reset).
    pub fn forget(&self, keys: &[String]) {
        let mut views = self.lock();
        for key in keys {
            views.remove(key);
        }
    }

    fn lock(&self) -> MutexGuard<'_, BoundedLru<Vec<Ledger>>> {
        // Merging cannot panic halfway, so a poisoned lock still holds consistent views.
        self.views.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What `view` holds on the heap: its ledgers, and each request's id and entry, counted twice for
/// the spare capacity of a growing vector.
fn heap_bytes(view: &[Ledger]) -> usize {
    let entry = size_of::<(String, f64)>();
    view.iter()
        .flat_map(Ledger::iter)
        .map(|(id, _)| id.len() + 2 * entry)
        .sum::<usize>()
        + 2 * size_of::<Ledger>() * view.len()
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

    /// What `key` holding `view` is counted as.
    fn cost(key: &str, view: &[Ledger]) -> usize {
        key.len() + heap_bytes(view) + BoundedLru::<Vec<Ledger>>::ENTRY_OVERHEAD
    }

    #[test]
    fn views_grow_by_union_and_stay_within_their_bytes() {
        let one = [ledger(&["a"])];
        let known =
            Known::new(2 * cost("k", &one) + cost("k", &[ledger(&["a", "b"]), ledger(&["p"])]));
        known.learn("k", &one);
        known.learn("k", &[ledger(&["b"]), ledger(&["p"])]);
        assert_eq!(
            known.get("k"),
            Some(vec![ledger(&["a", "b"]), ledger(&["p"])])
        );
        known.learn("l", &[ledger(&["c"])]);
        known.learn("m", &[ledger(&["d"])]);
        assert!(known.get("k").is_some() && known.get("l").is_some() && known.get("m").is_some());
        // One more key: the least recently used other one goes.
        known.learn("n", &[ledger(&["e"])]);
        assert!(known.get("n").is_some());
        assert!(known.get("k").is_none(), "k was the least recently used");
        let max_bytes = known.lock().max_bytes();
        assert!(known.lock().bytes() <= max_bytes);
        // A key larger than the bound alone is not kept.
        let long_id = "x".repeat(max_bytes);
        known.learn("o", &[ledger(&[&long_id])]);
        assert_eq!(known.get("o"), None);
        known.forget(&["l".to_owned(), "m".to_owned(), "n".to_owned()]);
        assert_eq!(
            known.lock().bytes(),
            0,
            "everything forgotten was counted off"
        );
    }
}
