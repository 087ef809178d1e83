//! Property tests of the multi-region merge: the ledger's merge is a join (idempotent, commutative,
//! associative), the merge of replies brings every region heard from to the union, in any order, and
//! the token bucket and GCRA replayed from a region's ledgers decide as the single-region algorithms.

#![cfg(not(target_arch = "wasm32"))]

use edgelimit::algorithm::{Algorithm, State};
use edgelimit::multi_region::{derived, epoch_ms, field, Ledger, Merge};
use edgelimit::{Gcra, TokenBucket};
use proptest::prelude::*;
use std::time::Duration;

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

/// One region replaying the multi-region token bucket or GCRA as its script does: per epoch a ledger
/// of `<time>:<id> -> cost`, the state entering the epoch written with its first request.
struct Region {
    rule: Algorithm,
    epochs: std::collections::HashMap<u64, Ledger>,
    requests: u64,
}

impl Region {
    fn new(rule: Algorithm) -> Self {
        Self {
            rule,
            epochs: Default::default(),
            requests: 0,
        }
    }

    fn ledgers(&self, epoch: u64) -> [Ledger; 2] {
        let get = |epoch: u64| self.epochs.get(&epoch).cloned().unwrap_or_default();
        [get(epoch), get(epoch.wrapping_sub(1))]
    }

    fn apply(&mut self, now: u64, cost: f64) -> edgelimit::Decision {
        let epoch = now / 1_000 / epoch_ms(&self.rule);
        let [current, previous] = self.ledgers(epoch);
        let state = derived(&self.rule, epoch, &[current.clone(), previous.clone()]);
        let cost = self.rule.cost(cost).unwrap();
        let decision = self.rule.apply(state.as_ref(), now, cost).decision;
        if decision.allowed && !cost.is_peek() {
            let entering = derived(&self.rule, epoch, &[Ledger::new(), previous]);
            let ledger = self.epochs.entry(epoch).or_default();
            if ledger.cost("base").is_none() {
                match entering {
                    Some(State::Gcra(state)) => ledger.insert("base", state.tat as f64),
                    Some(State::TokenBucket(state)) => {
                        ledger.insert("base", state.refilled_at as f64);
                        ledger.insert("-tokens", -state.tokens);
                    }
                    _ => {}
                }
            }
            self.requests += 1;
            ledger.insert(
                &field(&self.rule, now, &format!("{:032x}", self.requests)),
                cost.get(),
            );
        }
        decision
    }
}

fn bucket_rule() -> impl Strategy<Value = Algorithm> {
    let ms = prop_oneof![1..50u64, 50..3_000u64];
    prop_oneof![
        (1..4u64, ms.clone(), 1..10u64).prop_map(|(rate, interval, max)| {
            TokenBucket::new(rate, Duration::from_millis(interval), max)
                .unwrap()
                .into()
        }),
        (1..10u64, ms, 1..10u64).prop_map(|(limit, period, burst)| {
            Gcra::new(limit, Duration::from_millis(period), burst)
                .unwrap()
                .into()
        }),
    ]
}

proptest! {
    #[test]
    fn one_region_in_sync_decides_buckets_as_the_single_region_algorithm(
        rule in bucket_rule(),
        steps in prop::collection::vec((1..3_000_000u64, -4..=16i32), 1..120),
        start in 0..1_000_000_000u64,
    ) {
        let mut region = Region::new(rule);
        let mut single: Option<State> = None;
        let mut now = 1_700_000_000_000_000 + start;
        for (advance, quarters) in steps {
            now += advance;
            let cost = f64::from(quarters) / 4.0;
            let expected = rule.acquire(single.as_ref(), now, cost).unwrap();
            single = Some(expected.state);
            let decided = region.apply(now, cost);
            prop_assert_eq!(decided.allowed, expected.decision.allowed, "at {}, cost {}", now, cost);
            prop_assert_eq!(decided.remaining, expected.decision.remaining, "at {}, cost {}", now, cost);
        }
    }
}
