//! Property tests of the reservation arithmetic of leases (`Algorithm::lease_room`, which the
//! scripts mirror): holders reserving, spending and returning leases beside plain decisions on one
//! state never admit more than the algorithm does; and of their sizes (`ratelimit::lease`): never
//! more than a share of the limit, none for a small limit, and at most twice what the rate spends.

#![cfg(not(target_arch = "wasm32"))]

use edgelimit::algorithm::{Algorithm, State};
use edgelimit::ratelimit::lease::{first, grow, most, shrink, MAX_SHARE, MIN_LEASED_LIMIT};
use edgelimit::{FixedWindow, Gcra, SlidingWindow, TokenBucket};
use proptest::prelude::*;
use std::collections::HashMap;
use std::time::Duration;

/// A multiple of every window used here, in microseconds.
const T0: u64 = 1_700_000_000_000_000;
/// How long a lease lasts (µs): the algorithms' windows are at least this long.
const TTL: u64 = 1_000_000;

#[derive(Debug, Clone, Copy)]
enum Op {
    Advance(u64),
    /// Holder `.0` decides one unit and asks for up to `.1` more.
    Reserve(usize, u64),
    /// Holder `.0` spends one unit of its lease, if it holds one still valid.
    Spend(usize),
    /// Holder `.0` gives its lease's unused units back.
    Return(usize),
    /// A client that does not lease decides one unit.
    Direct,
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        1 => (0..400_000u64).prop_map(Op::Advance),
        1 => (0..4usize, 0..30u64).prop_map(|(i, want)| Op::Reserve(i, want)),
        4 => (0..4usize).prop_map(Op::Spend),
        1 => (0..4usize).prop_map(Op::Return),
        1 => Just(Op::Direct),
    ];
    prop::collection::vec(op, 1..200)
}

fn rules() -> impl Strategy<Value = Algorithm> {
    let window = (1_000..3_000u64).prop_map(Duration::from_millis);
    prop_oneof![
        (1..60u64, window.clone()).prop_map(|(l, w)| FixedWindow::new(l, w).unwrap().into()),
        (1..60u64, window.clone()).prop_map(|(l, w)| SlidingWindow::new(l, w).unwrap().into()),
        (1..5u64, window.clone(), 1..60u64)
            .prop_map(|(r, w, m)| TokenBucket::new(r, w, m).unwrap().into()),
        (1..60u64, window, 1..60u64).prop_map(|(l, w, b)| Gcra::new(l, w, b).unwrap().into()),
    ]
}

/// A lease a holder has: units left, and when it was taken.
#[derive(Debug, Clone, Copy)]
struct Held {
    left: u64,
    at: u64,
}

/// The window of `now` for the window algorithms; the whole run is one "window" for the others.
fn window(rule: &Algorithm, now: u64) -> u64 {
    match rule {
        Algorithm::FixedWindow(rule) => rule.window_index(now),
        Algorithm::SlidingWindow(rule) => rule.window_index(now),
        _ => 0,
    }
}

/// Whether a lease taken at `at` may still be spent at `now`: within the ttl, and in its window.
fn valid(rule: &Algorithm, held: &Held, now: u64) -> bool {
    now < held.at + TTL && window(rule, now) == window(rule, held.at)
}

proptest! {
    #[test]
    fn leases_never_admit_more_than_the_algorithm(rule in rules(), ops in ops()) {
        let one = rule.cost(1.0).unwrap();
        let mut now = T0;
        let mut state: Option<State> = None;
        let mut holders: HashMap<usize, Held> = HashMap::new();
        // Units admitted per window (the whole run for the bucket and GCRA).
        let mut admitted: HashMap<u64, u64> = HashMap::new();
        for op in ops {
            match op {
                Op::Advance(by) => now += by,
                Op::Reserve(i, want) => {
                    let units = rule.lease_room(state.as_ref(), now, one, want);
                    let alone = rule.apply(state.as_ref(), now, one);
                    let taken = rule.apply_leasing(state.as_ref(), now, one, units);
                    prop_assert_eq!(taken.decision.allowed, alone.decision.allowed);
                    prop_assert!(units <= want);
                    if taken.decision.allowed {
                        state = Some(taken.state);
                        *admitted.entry(window(&rule, now)).or_default() += 1;
                        // The remaining everyone sees counts the lease as used.
                        prop_assert_eq!(
                            taken.decision.remaining.floor(),
                            rule.available(state.as_ref(), now).floor()
                        );
                        if units > 0 {
                            // An older lease of the same holder is given up (its units stay used).
                            holders.insert(i, Held { left: units, at: now });
                        }
                    }
                }
                Op::Spend(i) => {
                    if let Some(held) = holders.get_mut(&i) {
                        if held.left > 0 && valid(&rule, held, now) {
                            held.left -= 1;
                            *admitted.entry(window(&rule, now)).or_default() += 1;
                        }
                    }
                }
                Op::Return(i) => {
                    if let Some(held) = holders.remove(&i) {
                        let same_window = window(&rule, now) == window(&rule, held.at);
                        if held.left > 0 && same_window {
                            let refund = rule.cost(-(held.left as f64)).unwrap();
                            state = Some(rule.apply(state.as_ref(), now, refund).state);
                        }
                    }
                }
                Op::Direct => {
                    let taken = rule.apply(state.as_ref(), now, one);
                    state = Some(taken.state);
                    if taken.decision.allowed {
                        *admitted.entry(window(&rule, now)).or_default() += 1;
                    }
                }
            }
        }
        let elapsed = now - T0;
        let most = match rule {
            Algorithm::FixedWindow(_) | Algorithm::SlidingWindow(_) => rule.capacity(),
            Algorithm::TokenBucket(bucket) => {
                let steps = elapsed / (bucket.interval_ms() * 1_000);
                rule.capacity() + steps * bucket.refill_rate()
            }
            Algorithm::Gcra(gcra) => rule.capacity() + elapsed / gcra.emission_interval(),
        };
        for (window, count) in admitted {
            prop_assert!(count <= most, "window {}: {} admitted, at most {}", window, count, most);
        }
    }
}

proptest! {
    #[test]
    fn a_lease_is_at_most_a_share_of_the_limit_and_none_for_a_small_one(
        tokens in 1..100_000u64,
        capacity in 1..1_000_000u64,
        size in 0..200_000u64,
    ) {
        let most = most(tokens, capacity);
        prop_assert!(most <= tokens && most <= capacity / MAX_SHARE);
        if capacity < MIN_LEASED_LIMIT {
            prop_assert_eq!(most, 0);
            prop_assert_eq!(first(most), 0);
            prop_assert_eq!(grow(size, most), 0);
        } else {
            prop_assert!(most >= 1);
            prop_assert!((1..=most).contains(&first(most)));
            prop_assert!(first(most) * 8 >= most);
            prop_assert!((1..=most).contains(&grow(size, most)));
        }
        prop_assert!(shrink(size) >= 1 && shrink(size) <= size.max(1));
    }

    /// A holder spending `rate` units per lease (as many as its traffic uses within a ttl): each
    /// lease doubles while it is spent and halves when units come back, so it never holds more than
    /// twice the largest rate seen (or the first lease's size) nor more than its most, and an idle
    /// holder's leases halve one after the other.
    #[test]
    fn a_lease_ramps_to_the_rate_and_holds_at_most_twice_it(
        tokens in 1..10_000u64,
        capacity in 20..1_000_000u64,
        rates in prop::collection::vec(0..5_000u64, 1..60),
    ) {
        let most = most(tokens, capacity);
        let mut size = first(most);
        let mut fastest = 0;
        for rate in rates {
            prop_assert!(size <= most);
            prop_assert!(size <= first(most).max(2 * fastest), "{} over {}", size, fastest);
            fastest = fastest.max(rate);
            let next = if size <= rate { grow(size, most) } else { shrink(size) };
            if size > rate {
                prop_assert!(next <= (size / 2).max(1));
            }
            size = next;
        }
        // A steady rate at or above the most is leased the most within log2(FIRST_SHARE) + 1 leases.
        let mut size = first(most);
        for _ in 0..4 {
            size = grow(size, most);
        }
        prop_assert_eq!(size, most);
    }
}
