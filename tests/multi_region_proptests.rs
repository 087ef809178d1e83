//! Property tests of the multi-region merge: the ledger's merge is a join (idempotent, commutative,
//! associative), and the merge of replies brings every region heard from to the union, in any order.

#![cfg(not(target_arch = "wasm32"))]

use edgelimit::multi_region::{Ledger, Merge};
use proptest::prelude::*;

/// A ledger of up to 12 requests over 8 ids (so that ids meet), costs from -3 to 5 in halves.
fn ledger() -> impl Strategy<Value = Ledger> {
    prop::collection::vec((0..8u8, -6..=10i32), 0..12).prop_map(|entries| {
        let mut ledger = Ledger::new();
        for (id, cost) in entries {
            ledger.insert(&format!("id{id}"), f64::from(cost) / 2.0);
        }
        ledger
    })
}

fn merged(a: &Ledger, b: &Ledger) -> Ledger {
    let mut a = a.clone();
    a.merge(b);
    a
}

proptest! {
    #[test]
    fn merging_is_idempotent_commutative_and_associative(a in ledger(), b in ledger(), c in ledger()) {
        prop_assert_eq!(merged(&a, &a), a.clone());
        prop_assert_eq!(merged(&a, &b), merged(&b, &a));
        prop_assert_eq!(merged(&merged(&a, &b), &c), merged(&a, &merged(&b, &c)));
    }

    #[test]
    fn a_merge_only_grows_and_never_totals_below_zero(a in ledger(), b in ledger()) {
        let both = merged(&a, &b);
        prop_assert!(a.missing_from(&both).is_empty());
        prop_assert!(b.missing_from(&both).is_empty());
        prop_assert!(both.total() >= 0.0);
        // What `a` lacks of `b`, merged in, is exactly the merge.
        prop_assert_eq!(merged(&a, &b.missing_from(&a)), both);
    }

    #[test]
    fn every_region_heard_from_ends_with_the_union_whatever_the_order(
        regions in prop::collection::vec(prop::collection::vec(ledger(), 2), 1..5),
        order in prop::collection::vec(any::<prop::sample::Index>(), 5),
        silent in any::<prop::sample::Index>(),
    ) {
        let count = regions.len();
        // One region may stay silent (down); the others reply in a shuffled order.
        let silent = (count > 1).then(|| silent.index(count));
        let mut replying: Vec<usize> = (0..count).filter(|&region| Some(region) != silent).collect();
        for (step, index) in order.iter().enumerate() {
            let len = replying.len();
            replying.swap(step % len, index.index(len));
        }
        let mut held: Vec<Vec<Ledger>> = regions.clone();
        let mut merge = Merge::new(count, 2);
        for &region in &replying {
            for delta in merge.heard(region, regions[region].clone()) {
                held[delta.region][delta.window].merge(&delta.ledger);
            }
        }
        let mut union = vec![Ledger::new(); 2];
        for &region in &replying {
            for (window, ledger) in regions[region].iter().enumerate() {
                union[window].merge(ledger);
            }
        }
        prop_assert_eq!(merge.union(), &union[..]);
        for &region in &replying {
            prop_assert_eq!(&held[region], &union, "region {}", region);
        }
        if let Some(silent) = silent {
            prop_assert_eq!(&held[silent], &regions[silent], "nothing is sent to a silent region");
        }
    }
}
