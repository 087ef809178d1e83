//! Several limits in one `Ratelimit`, decided all or nothing, and limits that run dry: through the
//! real gateway and redis-server (64 concurrent callers per pair of algorithms, the state a denied
//! request leaves, dry runs that leave the state live limits leave), and the set's script against the
//! pure algorithms run by the memory store (differential).

#![cfg(not(target_arch = "wasm32"))]

mod support;

use edgelimit::algorithm::{Algorithm, Cost};
use edgelimit::ratelimit::{Limit, Ratelimit, Reason, Response};
use edgelimit::{Ask, Backend, Clock, Configure, FixedWindow, Gcra, ManualClock, MemoryBackend};
use edgelimit::{Part, RedisBackend, Set, SlidingWindow, TokenBucket, Verdict, With};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use support::{command, Random, Servers};

const HOUR: Duration = Duration::from_secs(3600);

/// One limit of each algorithm, `capacity` an hour (the token bucket refills 1 an hour).
fn hourly(capacity: u64) -> [Algorithm; 4] {
    [
        FixedWindow::new(capacity, HOUR).unwrap().into(),
        SlidingWindow::new(capacity, HOUR).unwrap().into(),
        TokenBucket::new(1, HOUR, capacity).unwrap().into(),
        Gcra::new(capacity, HOUR, capacity).unwrap().into(),
    ]
}

/// Every pair of algorithms (an algorithm with itself too), the first of `first` an hour, the second
/// of `second`.
fn pairs(first: u64, second: u64) -> Vec<(Algorithm, Algorithm)> {
    let (a, b) = (hourly(first), hourly(second));
    (0..4)
        .flat_map(|i| (i..4).map(move |j| (i, j)))
        .map(|(i, j)| (a[i], b[j]))
        .collect()
}

/// Every key under `prefix` with its value and whether it expires, as `redis-cli` would show them.
async fn state(servers: &Servers, prefix: &str) -> BTreeMap<String, (Value, bool)> {
    let pattern = format!("{prefix}*");
    let keys = command(servers, &["KEYS", &pattern]).await.unwrap();
    let mut state = BTreeMap::new();
    for key in keys.as_array().unwrap() {
        let key = key.as_str().unwrap();
        let kind = command(servers, &["TYPE", key]).await.unwrap();
        let value = match kind.as_str() {
            Some("string") => command(servers, &["GET", key]).await.unwrap(),
            Some("hash") => command(servers, &["HGETALL", key]).await.unwrap(),
            other => panic!("{key} is a {other:?}"),
        };
        let ttl = command(servers, &["PTTL", key]).await.unwrap();
        state.insert(key.to_owned(), (value, ttl.as_i64() != Some(-1)));
    }
    state
}

/// A limit of `first` then `second` on Redis through the gateway, under `prefix`.
fn set_on_redis(servers: &Servers, first: Algorithm, second: Algorithm, prefix: &str) -> Ratelimit {
    Ratelimit::new(RedisBackend::new(servers.gateway.transport()), first)
        .with_prefix(prefix)
        .with_ephemeral_cache(None)
        .with_limit(Limit::new(second))
        .unwrap()
}

#[tokio::test]
async fn sixty_four_concurrent_callers_never_pass_either_limit_of_any_pair() {
    let servers = Servers::start();
    let stamp = support::now_ms();
    for (index, (first, second)) in pairs(60, 40).into_iter().chain(pairs(40, 60)).enumerate() {
        let name = format!("{} then {}", first.name(), second.name());
        let prefix = format!("sets:{stamp}:{index}");
        let limit = Arc::new(set_on_redis(&servers, first, second, &prefix));
        let tasks: Vec<_> = (0..64)
            .map(|_| {
                let limit = limit.clone();
                tokio::spawn(async move {
                    let mut answers = Vec::new();
                    for _ in 0..2 {
                        answers.push(limit.limit("hot", 1.0).await.unwrap());
                    }
                    answers
                })
            })
            .collect();
        let mut answers: Vec<Response> = Vec::new();
        for task in tasks {
            answers.extend(task.await.unwrap());
        }
        // Admitted per limit and per window, a window known by the reset its answers name (a
        // bucket's reset moves: it is counted as one).
        for (which, rule) in [first, second].iter().enumerate() {
            let mut windows: BTreeMap<u64, u64> = BTreeMap::new();
            for answer in answers.iter().filter(|answer| answer.success) {
                let window = match rule {
                    Algorithm::FixedWindow(_) | Algorithm::SlidingWindow(_) => {
                        answer.limits[which].reset
                    }
                    _ => 0,
                };
                *windows.entry(window).or_default() += 1;
            }
            for (window, admitted) in windows {
                assert!(
                    admitted <= rule.capacity(),
                    "{name}, limit {which}, window {window}: {admitted} admitted"
                );
            }
        }
        let admitted = answers.iter().filter(|answer| answer.success).count() as u64;
        assert!(admitted >= 30, "{name}: only {admitted} admitted");
        for answer in &answers {
            assert_eq!(answer.limits.len(), 2, "{name}");
            assert_eq!(
                answer.success,
                answer.limits.iter().all(|limit| limit.success),
                "{name}"
            );
        }
    }
}

#[tokio::test]
async fn a_request_one_limit_denies_is_counted_by_none() {
    let servers = Servers::start();
    let stamp = support::now_ms();
    for (index, (first, second)) in pairs(100, 3).into_iter().chain(pairs(3, 100)).enumerate() {
        let name = format!("{} then {}", first.name(), second.name());
        let prefix = format!("denied:{stamp}:{index}");
        let limit = set_on_redis(&servers, first, second, &prefix);
        for _ in 0..3 {
            assert!(limit.limit("user", 1.0).await.unwrap().success, "{name}");
        }
        let before = state(&servers, &prefix).await;
        assert!(!before.is_empty(), "{name}");
        for rate in [1.0, 2.0, 5.0] {
            let denied = limit.limit("user", rate).await.unwrap();
            assert!(!denied.success, "{name}");
            let small = if first.capacity() == 3 { 0 } else { 1 };
            assert!(!denied.limits[small].success, "{name}");
            assert!(
                denied.limits[1 - small].success,
                "{name}: the large limit admits"
            );
            assert_eq!(denied.limit, 3, "{name}: the limit that denies binds");
            assert_eq!(
                state(&servers, &prefix).await,
                before,
                "{name}, rate {rate}"
            );
        }
    }
}

/// A random limit of small capacity and a window of 200 ms to 3 s (Redis's own expiry, in real time,
/// stays behind the manual clock's).
fn random_rule(random: &mut Random) -> Algorithm {
    let ms = |random: &mut Random| Duration::from_millis(random.between(200..=3_000));
    match random.between(0..=3) {
        0 => FixedWindow::new(random.between(1..=8), ms(random))
            .unwrap()
            .into(),
        1 => SlidingWindow::new(random.between(1..=8), ms(random))
            .unwrap()
            .into(),
        2 => TokenBucket::new(random.between(1..=3), ms(random), random.between(1..=8))
            .unwrap()
            .into(),
        _ => Gcra::new(random.between(1..=8), ms(random), random.between(1..=8))
            .unwrap()
            .into(),
    }
}

/// A random cost every rule of `rules` takes: whole when one is a window, from -2 to 2 more than the
/// largest capacity (refunds, peeks, costs no state admits).
fn random_cost(random: &mut Random, rules: &[Algorithm]) -> Cost {
    let whole = rules.iter().any(|rule| {
        matches!(
            rule,
            Algorithm::FixedWindow(_) | Algorithm::SlidingWindow(_)
        )
    });
    let capacity = rules.iter().map(Algorithm::capacity).max().unwrap();
    let quarters = random.between(0..=(capacity + 4) * 4) as f64 - 8.0;
    let cost = if whole {
        (quarters / 4.0).round()
    } else {
        quarters / 4.0
    };
    rules[0].cost(cost).unwrap()
}

/// The set of `rules` (on `keys`, the dry ones in `dry_runs`) decided by `store` for `cost`: each
/// limit's decision.
async fn decide_set(
    store: &dyn Backend,
    rules: &[Algorithm],
    keys: &[String],
    dry_runs: &[bool],
    cost: Cost,
    now: u64,
) -> edgelimit::Result<Vec<edgelimit::Decision>> {
    let parts: Vec<Part> = (1..rules.len())
        .map(|index| Part {
            key: &keys[index],
            rule: rules[index],
            limit_key: None,
            dry_run: dry_runs[index],
        })
        .collect();
    let ask = Ask {
        key: &keys[0],
        cost,
        rule: rules[0],
        limit_key: None,
        now,
        with: With::Set(Set {
            dry_run: dry_runs[0],
            others: &parts,
        }),
    };
    match store.decide(&ask).await? {
        Verdict::Set(outcomes) => Ok(outcomes.iter().map(|outcome| outcome.decision).collect()),
        other => panic!("a set answered {other:?}"),
    }
}

/// The differential test of single limits (tests/redis_backend.rs), for sets: random sets of two or
/// three limits (any algorithms, some dry), random costs, peeks and refunds, time moving on; the set
/// script on Redis and the pure algorithms in the memory store decide every limit identically, which
/// they can only do if they also wrote the same states.
#[tokio::test]
async fn the_set_script_decides_as_the_pure_algorithms() {
    let servers = Servers::start();
    let clock = ManualClock::from_millis(1_700_000_000_000);
    let redis = RedisBackend::new(servers.gateway.transport()).with_clock(clock.clone());
    let seed = std::env::var("EDGELIMIT_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or(0x5e75);
    let mut random = Random(seed);
    let mut denied_by_one = 0;
    for run in 0..300 {
        let count = random.between(2..=3) as usize;
        let rules: Vec<Algorithm> = (0..count).map(|_| random_rule(&mut random)).collect();
        let dry_runs: Vec<bool> = (0..count).map(|_| random.between(0..=3) == 0).collect();
        let keys: Vec<String> = (0..count)
            .map(|index| format!("diff-set:{seed}:{run}#{index}:id"))
            .collect();
        let memory = MemoryBackend::new().with_clock(clock.clone());
        clock.advance(Duration::from_millis(random.between(0..=10_000)));
        for step in 0..24 {
            if random.between(0..=3) == 0 {
                clock.advance(Duration::from_micros(random.between(0..=2_000_000)));
                continue;
            }
            let cost = random_cost(&mut random, &rules);
            let now = clock.now_micros();
            let context = format!(
                "seed {seed}, run {run}, step {step}: {cost:?} on {rules:?}, dry {dry_runs:?}"
            );
            let m = decide_set(&memory, &rules, &keys, &dry_runs, cost, now).await;
            let r = decide_set(&redis, &rules, &keys, &dry_runs, cost, now).await;
            assert_eq!(m, r, "{context}");
            let allowed: Vec<bool> = m.unwrap().iter().map(|decision| decision.allowed).collect();
            if allowed.contains(&true) && allowed.contains(&false) {
                denied_by_one += 1;
            }
        }
    }
    assert!(
        denied_by_one > 100,
        "only {denied_by_one} sets where one limit denied"
    );
}

/// The same traffic through a set live and through the same set with every limit dry leaves the same
/// state in Redis; the dry answers all admit and say what the live ones answered.
#[tokio::test]
async fn a_dry_run_writes_what_live_limits_write_and_answers_what_they_answer() {
    let servers = Servers::start();
    let stamp = support::now_ms();
    for (index, (first, second)) in pairs(5, 3).into_iter().enumerate() {
        let name = format!("{} then {}", first.name(), second.name());
        // One clock for both, so that both decide at the same times (GCRA keeps microseconds).
        let clock = ManualClock::from_millis(support::now_ms());
        let make = |prefix: &str, dry_run: bool| {
            let store = RedisBackend::new(servers.gateway.transport()).with_clock(clock.clone());
            Ratelimit::new(store, first)
                .with_clock(clock.clone())
                .with_prefix(prefix)
                .with_dry_run(dry_run)
                .with_limit(Limit::new(second).with_dry_run(dry_run))
                .unwrap()
        };
        let (live_prefix, dry_prefix) = (
            format!("live:{stamp}:{index}"),
            format!("dry:{stamp}:{index}"),
        );
        let (live, dry) = (make(&live_prefix, false), make(&dry_prefix, true));
        for (step, rate) in [1.0, 1.0, 2.0, 1.0, 3.0, 1.0, -1.0, 1.0, 1.0, 0.0, 1.0]
            .into_iter()
            .enumerate()
        {
            clock.advance(Duration::from_millis(7));
            let live_answer = live.limit("user", rate).await.unwrap();
            let dry_answer = dry.limit("user", rate).await.unwrap();
            let context = format!("{name}, step {step}, rate {rate}");
            assert!(dry_answer.success, "{context}");
            let told = dry_answer
                .live
                .expect("a dry run says what live limits answer");
            assert_eq!(told.success, live_answer.success, "{context}");
            assert_eq!(
                (told.limit, told.remaining, told.reset),
                (live_answer.limit, live_answer.remaining, live_answer.reset),
                "{context}"
            );
            let reason = (!live_answer.success).then_some(Reason::DryRun);
            assert_eq!(
                dry_answer.reason,
                reason.or(live_answer.reason),
                "{context}"
            );
            assert_eq!(told.reason, live_answer.reason, "{context}");
            assert_eq!(
                dry_answer.limits.len(),
                live_answer.limits.len(),
                "{context}"
            );
            for (dry_limit, live_limit) in dry_answer.limits.iter().zip(&live_answer.limits) {
                assert_eq!(
                    (dry_limit.limit, dry_limit.remaining),
                    (live_limit.limit, live_limit.remaining),
                    "{context}"
                );
            }
        }
        let renamed = |state: BTreeMap<String, (Value, bool)>,
                       prefix: &str|
         -> Vec<(String, (Value, bool))> {
            state
                .into_iter()
                .map(|(key, value)| (key[prefix.len()..].to_owned(), value))
                .collect()
        };
        let live_state = renamed(state(&servers, &live_prefix).await, &live_prefix);
        let dry_state = renamed(state(&servers, &dry_prefix).await, &dry_prefix);
        assert!(!live_state.is_empty(), "{name}");
        assert_eq!(dry_state, live_state, "{name}");
    }
}

/// Beside live limits, a dry limit never denies, never holds back the live limits' counts, and its
/// own state is written as a live limit's would be.
#[tokio::test]
async fn a_dry_limit_beside_live_ones_only_reports() {
    let servers = Servers::start();
    let stamp = support::now_ms();
    let first = FixedWindow::new(10, HOUR).unwrap();
    let second = SlidingWindow::new(2, HOUR).unwrap();
    let prefix = format!("mixed:{stamp}");
    let limit = Ratelimit::new(RedisBackend::new(servers.gateway.transport()), first)
        .with_prefix(&prefix)
        .with_ephemeral_cache(Some(100))
        .with_limit(Limit::new(second).with_dry_run(true))
        .unwrap();
    let mut answers = Vec::new();
    for _ in 0..12 {
        answers.push(limit.limit("user", 1.0).await.unwrap());
    }
    let admitted: Vec<bool> = answers.iter().map(|answer| answer.success).collect();
    assert_eq!(admitted, [vec![true; 10], vec![false; 2]].concat());
    for (index, answer) in answers.iter().enumerate().take(10) {
        let live = answer.live.unwrap();
        assert_eq!(live.success, index < 2, "{index}");
        assert_eq!(
            answer.reason,
            (index >= 2).then_some(Reason::DryRun),
            "{index}"
        );
        assert_eq!(answer.limit, 10, "the live limit binds");
        assert_eq!(answer.remaining, 9.0 - index as f64);
        assert_eq!(
            answer.limits[1].remaining,
            if index == 0 { 1.0 } else { 0.0 }
        );
        assert!(answer.limits[1].dry_run);
    }
    // The live limit counted all ten; the dry one the two it admitted.
    let counted = state(&servers, &prefix).await;
    let values: Vec<&Value> = counted.values().map(|(value, _)| value).collect();
    assert_eq!(values.len(), 2, "{counted:?}");
    assert!(
        values.contains(&&Value::from("10")) && values.contains(&&Value::from("2")),
        "{counted:?}"
    );
    assert_eq!(
        answers[11].reason,
        Some(Reason::CacheBlock),
        "the live limit's denial is cached"
    );
}

/// The memory store locks the shards of a set's keys together: threads deciding one identifier
/// never pass a limit, and both limits count exactly the admitted requests.
#[test]
fn the_memory_store_decides_a_set_atomically() {
    let store = Arc::new(MemoryBackend::new());
    let limit = Arc::new(
        Ratelimit::new(store, FixedWindow::new(100, HOUR).unwrap())
            .with_ephemeral_cache(None)
            .with_limit(Limit::new(SlidingWindow::new(60, HOUR).unwrap()))
            .unwrap(),
    );
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let limit = limit.clone();
            std::thread::spawn(move || {
                (0..50)
                    .filter(|_| pollster::block_on(limit.limit("hot", 1.0)).unwrap().success)
                    .count()
            })
        })
        .collect();
    let admitted: usize = threads
        .into_iter()
        .map(|thread| thread.join().unwrap())
        .sum();
    assert_eq!(admitted, 60);
    let left = pollster::block_on(limit.get_remaining("hot")).unwrap();
    let each: Vec<f64> = left.limits.iter().map(|limit| limit.remaining).collect();
    assert_eq!(each, [40.0, 0.0], "a denied request is counted by neither");
    assert_eq!((left.remaining, left.limit), (0.0, 60));
}

/// `getRemaining`, `resetUsedTokens`, `blockUntilReady` and dynamic limits on a set in Redis: each
/// limit under its own prefix, as `@upstash/ratelimit` instances keep them.
#[tokio::test]
async fn every_method_works_on_the_set() {
    let servers = Servers::start();
    let prefix = format!("methods:{}", support::now_ms());
    let day = Duration::from_secs(86_400);
    let limit = Ratelimit::new(
        RedisBackend::new(servers.gateway.transport()),
        SlidingWindow::new(4, Duration::from_secs(1)).unwrap(),
    )
    .with_prefix(&prefix)
    .with_dynamic_limits(true)
    .with_ephemeral_cache(None)
    .with_limit(Limit::new(FixedWindow::new(6, day).unwrap()).with_prefix(format!("{prefix}-day")))
    .unwrap();
    for _ in 0..4 {
        assert!(limit.limit("user", 1.0).await.unwrap().success);
    }
    let left = limit.get_remaining("user").await.unwrap();
    assert_eq!((left.remaining, left.limit), (0.0, 4));
    assert_eq!(
        left.limits.iter().map(|l| l.remaining).collect::<Vec<_>>(),
        [0.0, 2.0]
    );
    // Waits for the second window, while the daily quota holds.
    let waited = limit
        .block_until_ready("user", 1.0, Duration::from_secs(5), tokio::time::sleep)
        .await
        .unwrap();
    assert!(waited.success);
    assert_eq!(waited.limits[1].remaining, 1.0);
    // Each limit reads the dynamic limit of its own prefix.
    command(
        &servers,
        &["SET", &format!("{prefix}-day:dynamic:global"), "5"],
    )
    .await
    .unwrap();
    let paused = limit.limit("user", 1.0).await.unwrap();
    assert!(!paused.success);
    assert_eq!(
        (paused.limits[1].success, paused.limits[1].limit),
        (false, 5)
    );
    limit.set_dynamic_limit(Some(0)).await.unwrap();
    assert_eq!(limit.limit("other", 1.0).await.unwrap().limits[0].limit, 0);
    limit.set_dynamic_limit(None).await.unwrap();
    command(&servers, &["DEL", &format!("{prefix}-day:dynamic:global")])
        .await
        .unwrap();
    limit.reset_used_tokens("user").await.unwrap();
    let left = limit.get_remaining("user").await.unwrap();
    assert_eq!(
        left.limits.iter().map(|l| l.remaining).collect::<Vec<_>>(),
        [4.0, 6.0]
    );
    assert!(state(&servers, &format!("{prefix}:user")).await.is_empty());
    assert!(state(&servers, &format!("{prefix}-day:user"))
        .await
        .is_empty());
}
