//! [`Known`]: what one limit has learnt of each key's current hashes from its own requests' replies.

use super::state::Ledger;
use crate::key_hasher::KeyHasher;
use hashbrown::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The union of every reply this limit has had for each current window or epoch (keyed by the name
/// of its hash, which carries the window's index), at most `max_entries` of them. A decision adds it
/// to what the answering region holds, so a region that has not yet received a merge this client has
/// seen cannot make the client admit past it.
#[derive(Debug)]
pub struct Known {
    views: Mutex<HashMap<String, Vec<Ledger>, KeyHasher>>,
    max_entries: usize,
}

impl Known {
    /// Room for `max_entries` hashes (at least 1).
    pub fn new(max_entries: usize) -> Self {
        Self {
            views: Mutex::new(HashMap::default()),
            max_entries: max_entries.max(1),
        }
    }

    /// What is known of `key`'s hashes, if anything.
    pub fn get(&self, key: &str) -> Option<Vec<Ledger>> {
        self.lock().get(key).cloned()
    }

    /// Merges `ledgers` into what is known of `key`'s hashes; when full, another key is forgotten
    /// first (the oldest windows go as their keys stop being asked for).
    pub fn learn(&self, key: &str, ledgers: &[Ledger]) {
        let mut views = self.lock();
        if !views.contains_key(key) && views.len() >= self.max_entries {
            if let Some(other) = views.keys().next().cloned() {
                views.remove(&other);
            }
        }
        let view = views.entry(key.to_owned()).or_default();
        view.resize(ledgers.len().max(view.len()), Ledger::new());
        for (known, ledger) in view.iter_mut().zip(ledgers) {
            known.merge(ledger);
        }
    }

    /// Forgets what is known of the hashes `keys` (a reset).
    pub fn forget(&self, keys: &[String]) {
        let mut views = self.lock();
        for key in keys {
            views.remove(key);
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Vec<Ledger>, KeyHasher>> {
        // Merging cannot panic halfway, so a poisoned lock still holds consistent views.
        self.views.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_grow_by_union_and_stay_bounded() {
        let known = Known::new(2);
        let mut a = Ledger::new();
        a.insert("a", 1.0);
        let mut b = Ledger::new();
        b.insert("b", 2.0);
        known.learn("k", std::slice::from_ref(&a));
        known.learn("k", &[b.clone(), Ledger::new()]);
        let mut both = a.clone();
        both.merge(&b);
        assert_eq!(known.get("k"), Some(vec![both, Ledger::new()]));
        known.learn("l", &[]);
        known.learn("m", &[]);
        let held = ["k", "l", "m"]
            .iter()
            .filter(|key| known.get(key).is_some());
        assert_eq!(held.count(), 2);
        known.forget(&["m".to_owned()]);
        assert_eq!(known.get("m"), None);
    }
}
