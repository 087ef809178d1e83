//! The hasher of every table keyed by identifiers (the memory backend, the ephemeral cache, local
//! counts): foldhash, for speed, with a seed drawn once per process from the platform's randomness
//! (`crypto.getRandomValues` on wasm, through `getrandom`).
//!
//! Identifiers come from the outside (user ids, IP addresses), so a seed known in advance would let
//! anyone choose identifiers that collide and slow every decision down. On wasm there is no other
//! source of randomness: foldhash's own default seed is the same in every instance there.

use foldhash::fast::{FixedState, RandomState};
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

/// A seeded foldhash: every table built with [`KeyHasher::new`] in one process shares the seed.
#[derive(Clone, Debug)]
pub struct KeyHasher(FixedState);

impl KeyHasher {
    /// The hasher of this process's seed.
    pub fn new() -> Self {
        static SEED: OnceLock<u64> = OnceLock::new();
        let seed = SEED.get_or_init(|| {
            let mut bytes = [0; 8];
            match getrandom::fill(&mut bytes) {
                Ok(()) => u64::from_le_bytes(bytes),
                // No randomness to be had (never seen in a supported runtime): foldhash's own seed.
                Err(_) => RandomState::default().build_hasher().finish(),
            }
        });
        Self(FixedState::with_seed(*seed))
    }
}

impl Default for KeyHasher {
    fn default() -> Self {
        Self::new()
    }
}

impl BuildHasher for KeyHasher {
    type Hasher = <FixedState as BuildHasher>::Hasher;

    fn build_hasher(&self) -> Self::Hasher {
        self.0.build_hasher()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn one_process_hashes_alike_and_the_seed_is_not_foldhash_s_fixed_one() {
        let (a, b) = (KeyHasher::new(), KeyHasher::new());
        assert_eq!(a.hash_one("user:42"), b.hash_one("user:42"));
        assert_ne!(a.hash_one("user:42"), a.hash_one("user:43"));
        assert_ne!(
            a.hash_one("user:42"),
            FixedState::default().hash_one("user:42"),
            "seeded from getrandom, not foldhash's default"
        );
    }
}
