//! Property tests of the pure algorithms and of `MemoryBackend` on a manual clock.

#![cfg(not(target_arch = "wasm32"))]

use edgelimit::algorithm::{Algorithm, State};
use edgelimit::{
    Backend, FixedWindow, Gcra, ManualClock, MemoryBackend, SlidingWindow, TokenBucket,
};
use proptest::prelude::*;
use std::collections::HashMap;
use std::time::Duration;

/// A plausible epoch in microseconds, shifted by a random offset in each case.
const EPOCH: u64 = 1_700_000_000_000_000;

#[derive(Debug, Clone, Copy)]
struct Step {
    advance_us: u64,
    cost: f64,
}

fn advance() -> impl Strategy<Value = u64> {
    prop_oneof![Just(0u64), 0..2_000u64, 0..200_000u64, 0..6_000_000u64]
}

/// Steps with costs in `0..=max_cost`, whole or in quarters.
fn steps(max_cost: u64, whole: bool) -> impl Strategy<Value = Vec<Step>> {
    let quarters = if whole { 4 } else { 1 };
    let cost = (0..=max_cost * 4).prop_map(move |q| (q / quarters * quarters) as f64 / 4.0);
    prop::collection::vec(
        (advance(), cost).prop_map(|(advance_us, cost)| Step { advance_us, cost }),
        1..200,
    )
}

fn window_ms() -> impl Strategy<Value = u64> {
    prop_oneof![1..20u64, 20..5_000u64]
}

/// Runs `steps` through `rule` from no state and yields `(now, cost, allowed)` for each.
fn replay(rule: Algorithm, start: u64, steps: &[Step]) -> Vec<(u64, f64, bool)> {
    let mut state: Option<State> = None;
    let mut now = start;
    steps
        .iter()
        .map(|step| {
            now += step.advance_us;
            let transition = rule
                .acquire(state.as_ref(), now, step.cost)
                .expect("valid cost");
            state = Some(transition.state);
            (now, step.cost, transition.decision.allowed)
        })
        .collect()
}

fn admitted(events: &[(u64, f64, bool)]) -> impl Iterator<Item = (u64, f64)> + '_ {
    events
        .iter()
        .filter(|(_, cost, allowed)| *allowed && *cost > 0.0)
        .map(|&(now, cost, _)| (now, cost))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn fixed_window_admits_at_most_limit_per_window(
        limit in 1..20u64, window in window_ms(), offset in 0..1_000_000_000u64, steps in steps(22, true),
    ) {
        let rule = FixedWindow::new(limit, Duration::from_millis(window)).unwrap();
        let mut per_window: HashMap<u64, f64> = HashMap::new();
        for (now, cost) in admitted(&replay(rule.into(), EPOCH + offset, &steps)) {
            let used = per_window.entry(rule.window_index(now)).or_default();
            *used += cost;
            prop_assert!(*used <= limit as f64, "window {} admitted {used} > {limit}", rule.window_index(now));
        }
    }

    #[test]
    fn sliding_window_never_admits_past_its_weighted_rule(
        limit in 1..20u64, window in window_ms(), offset in 0..1_000_000_000u64, steps in steps(22, true),
    ) {
        let rule = SlidingWindow::new(limit, Duration::from_millis(window)).unwrap();
        let mut per_window: HashMap<u64, u64> = HashMap::new();
        for (now, cost) in admitted(&replay(rule.into(), EPOCH + offset, &steps)) {
            let index = rule.window_index(now);
            *per_window.entry(index).or_default() += cost as u64;
            let previous = index.checked_sub(1).and_then(|i| per_window.get(&i)).copied().unwrap_or(0);
            let used = per_window[&index] + rule.weighted_previous(previous, now / 1_000);
            prop_assert!(used <= limit, "at {now}: {used} > {limit}");
        }
    }

    #[test]
    fn token_bucket_never_exceeds_max_tokens_plus_refills(
        rate in 1..5u64, interval in window_ms(), max in 1..20u64,
        offset in 0..1_000_000_000u64, steps in steps(22, false),
    ) {
        let rule = TokenBucket::new(rate, Duration::from_millis(interval), max).unwrap();
        let events: Vec<(u64, f64)> = admitted(&replay(rule.into(), EPOCH + offset, &steps)).collect();
        let refills = |from: u64, to: u64| (to / 1_000 - from / 1_000) / interval;
        let first = events.first().map_or(0, |event| event.0);
        let mut consumed = 0.0;
        for &(now, cost) in &events {
            consumed += cost;
            let bound = (max + rate * refills(first, now)) as f64;
            prop_assert!(consumed <= bound + 1e-9, "{consumed} consumed by {now}, bound {bound}");
        }
        for (i, &(from, _)) in events.iter().enumerate() {
            let mut consumed = 0.0;
            for &(to, cost) in &events[i..] {
                consumed += cost;
                let bound = (max + rate * (refills(from, to) + 1)) as f64;
                prop_assert!(consumed <= bound + 1e-9, "{consumed} consumed in [{from}, {to}], bound {bound}");
            }
        }
    }

    #[test]
    fn gcra_admits_at_most_burst_plus_elapsed_over_emission_interval(
        limit in 1..20u64, period in window_ms(), burst in 1..20u64,
        offset in 0..1_000_000_000u64, steps in steps(22, false),
    ) {
        let rule = Gcra::new(limit, Duration::from_millis(period), burst).unwrap();
        let exact_interval = period as f64 * 1_000.0 / limit as f64;
        let events: Vec<(u64, f64)> = admitted(&replay(rule.into(), EPOCH + offset, &steps)).collect();
        for (i, &(from, _)) in events.iter().enumerate() {
            let mut consumed = 0.0;
            for &(to, cost) in &events[i..] {
                consumed += cost;
                let bound = burst as f64 + (to - from) as f64 / exact_interval;
                prop_assert!(consumed <= bound + 1e-9, "{consumed} admitted in [{from}, {to}], bound {bound}");
            }
        }
    }

    #[test]
    fn time_until_available_is_exactly_when_the_cost_fits(
        rule in any_algorithm(), offset in 0..1_000_000_000u64,
        history in prop::collection::vec((advance(), -3..25i64), 0..60), fraction in 0.0..1.0f64,
    ) {
        let whole = matches!(rule, Algorithm::FixedWindow(_) | Algorithm::SlidingWindow(_));
        let mut state: Option<State> = None;
        let mut now = EPOCH + offset;
        for (advance_us, cost) in history {
            now += advance_us;
            let cost = (cost as f64).min(rule.capacity() as f64);
            state = Some(rule.acquire(state.as_ref(), now, cost).unwrap().state);
        }
        let cost = if whole {
            (fraction * rule.capacity() as f64).ceil().max(1.0)
        } else {
            (fraction * rule.capacity() as f64).max(0.01)
        };
        let wait = rule.time_until_available(state.as_ref(), now, cost).unwrap().as_micros() as u64;
        prop_assert!(rule.acquire(state.as_ref(), now + wait, cost).unwrap().decision.allowed);
        if wait > 0 {
            let early = rule.acquire(state.as_ref(), now + wait - 1, cost).unwrap().decision;
            prop_assert!(!early.allowed, "{cost} fits 1 µs before the {wait} µs wait");
            let denied = rule.acquire(state.as_ref(), now, cost).unwrap().decision;
            prop_assert_eq!(denied.retry_after, Some(Duration::from_micros(wait)));
        }
    }

    #[test]
    fn memory_backend_admits_after_time_until_available_elapses(
        rule in any_algorithm(), history in prop::collection::vec((advance(), 0..25i64), 0..40),
    ) {
        let clock = ManualClock::new(EPOCH);
        let store = MemoryBackend::new().with_clock(clock.clone());
        pollster::block_on(async {
            for (advance_us, cost) in history {
                clock.advance(Duration::from_micros(advance_us));
                let cost = (cost as f64).min(rule.capacity() as f64);
                store.acquire("key", cost, rule).await.unwrap();
            }
            let cost = rule.capacity() as f64;
            let wait = store.time_until_available("key", cost, rule).await.unwrap();
            clock.advance(wait);
            prop_assert!(store.acquire("key", cost, rule).await.unwrap().allowed);
            Ok(())
        })?;
    }
}

fn any_algorithm() -> impl Strategy<Value = Algorithm> {
    let count = 1..20u64;
    prop_oneof![
        (count.clone(), window_ms()).prop_map(|(limit, ms)| FixedWindow::new(
            limit,
            Duration::from_millis(ms)
        )
        .unwrap()
        .into()),
        (count.clone(), window_ms()).prop_map(|(limit, ms)| SlidingWindow::new(
            limit,
            Duration::from_millis(ms)
        )
        .unwrap()
        .into()),
        (1..5u64, window_ms(), count.clone()).prop_map(|(rate, ms, max)| TokenBucket::new(
            rate,
            Duration::from_millis(ms),
            max
        )
        .unwrap()
        .into()),
        (count.clone(), window_ms(), count).prop_map(|(limit, ms, burst)| Gcra::new(
            limit,
            Duration::from_millis(ms),
            burst
        )
        .unwrap()
        .into()),
    ]
}

/// Any `f64` at all, finite or not, weighted toward the extremes.
fn any_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        Just(f64::MIN),
        Just(f64::MAX),
        Just(-1e20),
        Just(-1e300),
        -1e6..1e6f64,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Issue 22: a token bucket's wait and refill over every finite level (a peer's debt included)
    /// settle at once, report nothing below zero, and only ever say "now" when the cost fits.
    #[test]
    fn token_bucket_wait_and_refill_are_bounded_over_the_whole_f64_range(
        tokens in any_f64().prop_filter("finite", |tokens| tokens.is_finite()),
        rate in 1..1_000u64, interval in 1..100_000u64, max in 1..1_000u64,
        refilled_at in 0..2_000_000_000_000u64, now in 0..4_000_000_000_000_000u64,
        cost in any_f64().prop_filter("finite", |cost| cost.is_finite()),
    ) {
        let rule = TokenBucket::new(rate, Duration::from_millis(interval), max).unwrap();
        let state = Some(edgelimit::algorithm::TokenBucketState { refilled_at, tokens });
        let cost = cost.clamp(-1e15, 1e15);
        let transition = Algorithm::from(rule).acquire(state.map(State::from).as_ref(), now, cost).unwrap();
        prop_assert!(transition.decision.remaining >= 0.0);
        prop_assert!(transition.decision.remaining.is_finite());
        prop_assert!(rule_available(rule, state, now) >= 0.0);
        if let Ok(wait) = Algorithm::from(rule).time_until_available(state.map(State::from).as_ref(), now, cost) {
            if wait.is_zero() && cost > 0.0 {
                prop_assert!(transition.decision.allowed);
            }
        }
        let consumed = rule.consume(state, now, cost);
        prop_assert!(!consumed.tokens.is_nan());
    }

    /// GCRA and the windows take any arrival time or counter without overflow (debug builds panic on
    /// one) and never report a negative remaining.
    #[test]
    fn stored_extremes_never_overflow_any_algorithm(
        tat in any::<u64>(), used in any::<i64>(), current in 0..=i64::MAX as u64, previous in 0..=i64::MAX as u64,
        now in 0..u64::MAX / 2, cost in -20..25i64,
    ) {
        let hour = Duration::from_secs(3_600);
        let gcra = Gcra::new(5, hour, 5).unwrap();
        let fixed = FixedWindow::new(5, hour).unwrap();
        let sliding = SlidingWindow::new(5, hour).unwrap();
        let cost = cost as f64;
        let states: [(Algorithm, State); 3] = [
            (gcra.into(), edgelimit::algorithm::GcraState { tat }.into()),
            (fixed.into(), edgelimit::algorithm::FixedWindowState { window: fixed.window_index(now), used }.into()),
            (sliding.into(), edgelimit::algorithm::SlidingWindowState { window: sliding.window_index(now), current, previous }.into()),
        ];
        for (rule, state) in states {
            let decision = rule.acquire(Some(&state), now, cost).unwrap().decision;
            prop_assert!(decision.remaining >= 0.0);
            if cost <= rule.capacity() as f64 {
                rule.time_until_available(Some(&state), now, cost.max(0.0)).unwrap();
            }
            prop_assert!(rule.available(Some(&state), now) >= 0.0);
        }
    }
}

/// What a token bucket could take at `now`.
fn rule_available(
    rule: TokenBucket,
    state: Option<edgelimit::algorithm::TokenBucketState>,
    now: u64,
) -> f64 {
    Algorithm::from(rule).available(state.map(State::from).as_ref(), now)
}
