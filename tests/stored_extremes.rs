//! Extreme values in Redis (a huge dynamic limit over an emptied bucket, times far in the future)
//! are computed with, never overflowed on: these run in debug builds, where overflow panics. Lease
//! ledgers and multi-region hashes at and past the exact integers, at random, are decided on when
//! every number and sum stays within 2^53 - 1, and are corrupt state, never written, otherwise.

#![cfg(not(target_arch = "wasm32"))]

mod support;

use edgelimit::algorithm::Algorithm;
use edgelimit::ratelimit::{Lease, Ratelimit};
use edgelimit::Configure;
use edgelimit::{
    Error, FixedWindow, KeyLayout, MultiRegionRatelimit, RedisBackend, SlidingWindow, TokenBucket,
};
use std::time::Duration;
use support::{Random, Servers};

/// The largest count a limit takes: 2^53 - 1.
const MAX_COUNT: u64 = (1 << 53) - 1;

#[tokio::test]
async fn a_huge_dynamic_limit_over_used_state_is_answered_without_overflow() {
    let servers = Servers::start();
    let hour = Duration::from_secs(3600);
    // GCRA is left out: its limits are bounded so that burst × emission interval fits.
    let rules: [Algorithm; 3] = [
        TokenBucket::new(1, hour, 10).unwrap().into(),
        FixedWindow::new(10, hour).unwrap().into(),
        SlidingWindow::new(10, hour).unwrap().into(),
    ];
    for rule in rules {
        let prefix = format!("extremes:{}", rule.name());
        let limiter = Ratelimit::new(RedisBackend::new(servers.gateway.transport()), rule)
            .with_prefix(prefix.as_str())
            .with_ephemeral_cache(None)
            .with_dynamic_limits(true);
        // Empty the limit, then raise it to the most a limit takes: the state now lacks nearly
        // 2^53 tokens, which take nearly 2^53 hours to come back.
        assert!(limiter.limit("u", 10.0).await.unwrap().success, "{prefix}");
        limiter.set_dynamic_limit(Some(MAX_COUNT)).await.unwrap();
        let answer = limiter.limit("u", 1.0).await.unwrap();
        assert_eq!(answer.reason, None, "{prefix}: {answer:?}");
        assert_eq!(answer.limit, MAX_COUNT, "{prefix}");
        let remaining = limiter.get_remaining("u").await.unwrap();
        assert_eq!(remaining.limit, MAX_COUNT, "{prefix}");
        // A denial of the whole limit says when, saturating rather than wrapping.
        let denied = limiter.limit("u", MAX_COUNT as f64).await.unwrap();
        assert!(!denied.success, "{prefix}");
        assert_eq!(denied.reason, None, "{prefix}");
    }
}

/// The seed and the iterations per algorithm and key layout of the randomized tests below:
/// `FUZZ_SEED` and `FUZZ_ITERATIONS` for longer runs.
fn fuzz() -> (u64, u64) {
    let read = |name: &str, default| {
        std::env::var(name)
            .ok()
            .and_then(|value| value.parse().ok())
            .unwrap_or(default)
    };
    (read("FUZZ_SEED", 0x40), read("FUZZ_ITERATIONS", 12))
}

/// A key and everything it holds, whatever its type (DUMP), to check that nothing was written.
async fn dump(servers: &Servers, key: &str) -> serde_json::Value {
    support::command(servers, &["DUMP", key]).await.unwrap()
}

/// The base key of `identifier` under `prefix` in `layout`.
fn base_key(prefix: &str, identifier: &str, layout: KeyLayout) -> String {
    match layout {
        KeyLayout::Upstash => format!("{prefix}:{identifier}"),
        KeyLayout::Cluster => format!("{prefix}:{{{identifier}}}"),
    }
}

/// Issue 40: lease ledgers with numbers at and past 2^53 - 1, units that sum past it, and junk, at
/// random: a ledger whose entries are not whole numbers up to 2^53 - 1, or whose units sum past it, is
/// corrupt state to every call that reads it, and so is, to a reset, a GCRA ledger whose live units
/// would take the arrival time past 2^53 - 1 microseconds; nothing is then written. Any other ledger
/// is decided on and reset without error.
#[tokio::test]
async fn lease_ledgers_at_and_past_the_exact_integers_at_random() {
    let (seed, iterations) = fuzz();
    let servers = Servers::start();
    let mut random = Random(seed);
    // How many ledgers were valid, corrupt, past the GCRA bound only, both.
    let mut seen = [0u64; 4];
    const UNITS: [&str; 8] = [
        "0",
        "3",
        "7",
        "4503599627370496",
        "9007199254740991",
        "9007199254740992",
        "10000000000000000000000",
        "x",
    ];
    for layout in [KeyLayout::Upstash, KeyLayout::Cluster] {
        for rule in support::hour_limits(100) {
            for iteration in 0..iterations {
                let name = rule.name();
                let context = format!("seed {seed}, {name} {layout:?}, iteration {iteration}");
                let prefix = format!("extremes:ledger:{name}:{seed}");
                let identifier = format!("{layout:?}-{iteration}");
                let base = base_key(&prefix, &identifier, layout);
                let ledger = format!("edgelimit-lease|{base}");
                let now = support::now_ms() * 1_000;
                let window = match rule {
                    Algorithm::FixedWindow(rule) => rule.window_index(now),
                    Algorithm::SlidingWindow(rule) => rule.window_index(now),
                    _ => 0,
                };
                let ends = [
                    (now + 3_600_000_000).to_string(),
                    (now - 500_000).to_string(),
                    "9007199254740992".to_owned(),
                ];
                let mut fields = vec!["HSET".to_owned(), ledger.clone()];
                let (mut corrupt, mut sum, mut live) = (false, 0u128, 0u128);
                for entry in 0..random.between(1..=4) {
                    let units = UNITS[random.between(0..=7) as usize];
                    let end = &ends[random.between(0..=2) as usize];
                    fields.push(format!("1.{entry}"));
                    fields.push(format!("{units} {end} {window}"));
                    match (units.parse::<u128>(), end.parse::<u128>()) {
                        (Ok(units), Ok(end)) if units < 1 << 53 && end < 1 << 53 => {
                            sum += units;
                            if end > u128::from(now) {
                                live += units;
                            }
                        }
                        _ => corrupt = true,
                    }
                }
                corrupt |= sum >= 1 << 53;
                let words: Vec<&str> = fields.iter().map(String::as_str).collect();
                support::command(&servers, &words).await.unwrap();
                let limit = Ratelimit::new(RedisBackend::new(servers.gateway.transport()), rule)
                    .with_prefix(prefix.as_str())
                    .with_key_layout(layout)
                    .with_ephemeral_cache(None)
                    .with_lease(Lease {
                        tokens: 10,
                        ttl: Duration::from_secs(1),
                    })
                    .unwrap();
                // A reset reads every live lease and counts it: for GCRA as time, live × T.
                let tat_past = match rule {
                    Algorithm::Gcra(gcra) => {
                        u128::from(now) + live * u128::from(gcra.emission_interval()) >= 1 << 53
                    }
                    _ => false,
                };
                let state = match rule {
                    Algorithm::FixedWindow(_) | Algorithm::SlidingWindow(_) => {
                        format!("{base}:{window}")
                    }
                    Algorithm::TokenBucket(_) => base.clone(),
                    Algorithm::Gcra(_) => format!("{base}:gcra"),
                };
                let before = (dump(&servers, &ledger).await, dump(&servers, &state).await);
                match limit.reset_used_tokens(&identifier).await {
                    Err(Error::CorruptState { key, .. }) if corrupt || tat_past => {
                        assert_eq!(key, ledger, "{context}");
                        let after = (dump(&servers, &ledger).await, dump(&servers, &state).await);
                        assert_eq!(after, before, "{context}: written");
                    }
                    Ok(()) if !(corrupt || tat_past) => {
                        let left = limit.get_remaining(&identifier).await;
                        let left = left.unwrap_or_else(|error| panic!("{context}: {error}"));
                        assert!(left.remaining >= 0.0, "{context}: {left:?}");
                    }
                    other => panic!("{context}: reset {other:?}, corrupt {corrupt}"),
                }
                // The first decision that leases reads the ledger, if the reset left it.
                let mut decided = Ok(());
                for _ in 0..3 {
                    decided = limit.limit(&identifier, 1.0).await.map(drop);
                    if decided.is_err() {
                        break;
                    }
                }
                match decided {
                    Err(Error::CorruptState { key, .. }) if corrupt => {
                        assert_eq!(key, ledger, "{context}")
                    }
                    Ok(()) if !corrupt => {}
                    other => panic!("{context}: decided {other:?}, corrupt {corrupt}"),
                }
                seen[usize::from(corrupt) + 2 * usize::from(tat_past)] += 1;
            }
        }
    }
    println!("valid, corrupt, past the GCRA bound only, both: {seen:?}");
    assert!(seen[0] > 0 && seen[1] + seen[3] > 0, "{seen:?}");
}

/// What the multi-region bucket script's replay of requests all at one time makes of `costs` (in
/// the order HGETALL reads them back), mirrored here: `None` when a cost is no number up to 2^53 - 1
/// in size or the replay passes it (GCRA's arrival time, the token bucket's debt).
fn bucket_replay(rule: &Algorithm, costs: &[&str]) -> Option<()> {
    const MAX: f64 = 9_007_199_254_740_991.0;
    let mut costs: Vec<f64> = costs
        .iter()
        .map(|cost| cost.parse::<f64>().ok().filter(|cost| cost.abs() <= MAX))
        .collect::<Option<_>>()?;
    // Refunds last (the ids are in the order written, so the sort keeps the rest in that order).
    costs.sort_by_key(|cost| *cost < 0.0);
    match rule {
        Algorithm::Gcra(gcra) => {
            let interval = gcra.emission_interval() as f64;
            let mut ahead = 0.0f64; // the arrival time minus now, in microseconds
            for cost in costs {
                ahead = if cost < 0.0 {
                    (ahead - (-cost * interval).floor()).max(0.0)
                } else {
                    ahead + (cost * interval).ceil()
                };
                (ahead + support::now_ms() as f64 * 1_000.0 <= MAX).then_some(())?;
            }
        }
        _ => {
            let capacity = rule.capacity() as f64;
            let mut tokens = capacity;
            for cost in costs {
                tokens = if cost < 0.0 {
                    (tokens - cost).min(capacity)
                } else {
                    tokens - cost
                };
                (-tokens <= MAX).then_some(())?;
            }
        }
    }
    Some(())
}

/// Issue 40: multi-region hashes with costs at and past 2^53 - 1 in size, sums past it, and junk, at
/// random: a window's costs that are no number up to 2^53 - 1, or whose running sum passes it, and a
/// bucket's whose replay passes it, are corrupt state, nothing written; anything else is decided,
/// with nothing negative reported.
#[tokio::test]
async fn multi_region_hashes_at_and_past_the_exact_integers_at_random() {
    let (seed, iterations) = fuzz();
    let servers = Servers::start();
    let mut random = Random(seed);
    // How many hashes were decided on, how many refused, per kind of limit (window, bucket).
    let mut seen = [0u64; 4];
    const COSTS: [&str; 10] = [
        "1",
        "4",
        "-3",
        "0.5",
        "4503599627370496",
        "9007199254740991",
        "-9007199254740991",
        "9007199254740992",
        "1e300",
        "x",
    ];
    let hour = Duration::from_secs(3_600);
    let rules: [Algorithm; 4] = [
        FixedWindow::new(5, hour).unwrap().into(),
        SlidingWindow::new(5, hour).unwrap().into(),
        TokenBucket::new(5, hour, 5).unwrap().into(),
        edgelimit::Gcra::new(5, hour, 5).unwrap().into(),
    ];
    for layout in [KeyLayout::Upstash, KeyLayout::Cluster] {
        for rule in rules {
            for iteration in 0..iterations {
                let name = rule.name();
                let context = format!("seed {seed}, {name} {layout:?}, iteration {iteration}");
                let prefix = format!("extremes:regions:{name}:{seed}");
                let identifier = format!("{layout:?}-{iteration}");
                let base = base_key(&prefix, &identifier, layout);
                let now = support::now_ms() * 1_000;
                let costs: Vec<&str> = (0..random.between(1..=4))
                    .map(|_| COSTS[random.between(0..=9) as usize])
                    .collect();
                let (key, corrupt) = match rule {
                    Algorithm::FixedWindow(_) | Algorithm::SlidingWindow(_) => {
                        let window = now / 1_000 / 3_600_000;
                        let mut sum = 0.0f64;
                        let corrupt = costs.iter().any(|cost| {
                            let cost = cost.parse::<f64>().unwrap_or(f64::NAN);
                            sum += cost;
                            !(cost.abs() <= MAX_COUNT as f64 && sum.abs() <= MAX_COUNT as f64)
                        });
                        (format!("{base}:{window}"), corrupt)
                    }
                    _ => {
                        let epoch = now / 1_000 / edgelimit::multi_region::epoch_ms(&rule);
                        let corrupt = bucket_replay(&rule, &costs).is_none();
                        (format!("{base}:bucket:{epoch}"), corrupt)
                    }
                };
                let mut words = vec!["HSET".to_owned(), key.clone()];
                for (index, cost) in costs.iter().enumerate() {
                    let field = match rule {
                        Algorithm::FixedWindow(_) | Algorithm::SlidingWindow(_) => {
                            format!("id{index}")
                        }
                        _ => format!("{}:id{index}", now - 1_000_000),
                    };
                    words.push(field);
                    words.push(cost.to_string());
                }
                let words: Vec<&str> = words.iter().map(String::as_str).collect();
                support::command(&servers, &words).await.unwrap();
                let before = dump(&servers, &key).await;
                let limit = MultiRegionRatelimit::new(vec![servers.gateway.transport()], rule)
                    .unwrap()
                    .with_prefix(prefix.as_str())
                    .with_key_layout(layout)
                    .with_ephemeral_cache(None);
                match limit.limit(&identifier, 1.0).await {
                    Err(Error::CorruptState { key: found, .. }) if corrupt => {
                        assert_eq!(found, key, "{context}");
                        assert_eq!(dump(&servers, &key).await, before, "{context}: written");
                    }
                    Ok(answer) if !corrupt => {
                        assert!(answer.remaining >= 0.0, "{context}: {answer:?}");
                        assert_eq!(answer.reason, None, "{context}: {answer:?}");
                    }
                    other => panic!("{context}: {costs:?} gave {other:?}, corrupt {corrupt}"),
                }
                let bucket = !matches!(
                    rule,
                    Algorithm::FixedWindow(_) | Algorithm::SlidingWindow(_)
                );
                seen[usize::from(corrupt) + 2 * usize::from(bucket)] += 1;
            }
        }
    }
    assert!(seen.iter().all(|&count| count > 0), "{seen:?}");
}
