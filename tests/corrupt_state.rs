//! Stored state the algorithm cannot read (issue 22): against real redis-server, in both fail modes and
//! both key layouts, every call settles, corrupt state is [`Error::CorruptState`] and stays as it was,
//! valid state (every layout the peer writes) is decided as the pure algorithm decides it, and a side
//! effect that fails never changes a decision.
//!
//! `corrupt_and_valid_states_at_random` takes `FUZZ_SEED` and `FUZZ_ITERATIONS` (per algorithm and
//! layout, 25 by default: 200 in all) from the environment for longer runs; its default seed is fixed.

#![cfg(not(target_arch = "wasm32"))]

mod support;

use edgelimit::algorithm::{
    Algorithm, FixedWindowState, GcraState, SlidingWindowState, State, TokenBucketState,
};
use edgelimit::ratelimit::{FailMode, Ratelimit, Response};
use edgelimit::Configure;
use edgelimit::{
    Error, FixedWindow, Gcra, KeyLayout, ManualClock, RedisBackend, SlidingWindow, TokenBucket,
};
use serde_json::Value;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{command, Random, Servers};

/// The manual clock's start, in microseconds: 1,234 ms into an hour.
const T0: u64 = 1_700_000_000_000_000 + 1_234_000;
/// An hour, the window of every limit here.
const HOUR: Duration = Duration::from_secs(3_600);
/// How long a call may take before it counts as hanging: generous, it is no timing assertion.
const SETTLES: Duration = Duration::from_secs(30);

/// Both fail modes.
const MODES: [FailMode; 2] = [FailMode::Open, FailMode::Closed];
/// Both key layouts.
const LAYOUTS: [KeyLayout; 2] = [KeyLayout::Upstash, KeyLayout::Cluster];

/// One limit of each algorithm: 5 an hour (the token bucket refills 1 a minute).
fn rules() -> [Algorithm; 4] {
    [
        FixedWindow::new(5, HOUR).unwrap().into(),
        SlidingWindow::new(5, HOUR).unwrap().into(),
        TokenBucket::new(1, Duration::from_secs(60), 5)
            .unwrap()
            .into(),
        Gcra::new(5, HOUR, 5).unwrap().into(),
    ]
}

/// A limiter of `rule` on the servers' Redis, on `clock`, without caches.
fn limiter(
    servers: &Servers,
    rule: Algorithm,
    prefix: &str,
    layout: KeyLayout,
    mode: FailMode,
    clock: &ManualClock,
) -> Ratelimit {
    let backend = RedisBackend::new(servers.gateway.transport()).with_clock(clock.clone());
    Ratelimit::new(backend, rule)
        .with_prefix(prefix)
        .with_key_layout(layout)
        .with_ephemeral_cache(None)
        .with_fail_mode(mode)
        .with_clock(clock.clone())
}

/// The key holding `rule`'s state for `identifier` at `now` (µs); `back` windows earlier for the
/// window algorithms.
fn state_key(
    rule: &Algorithm,
    prefix: &str,
    layout: KeyLayout,
    identifier: &str,
    now: u64,
    back: u64,
) -> String {
    let base = layout.key(prefix, identifier).unwrap();
    match rule {
        Algorithm::FixedWindow(rule) => format!("{base}:{}", rule.window_index(now) - back),
        Algorithm::SlidingWindow(rule) => format!("{base}:{}", rule.window_index(now) - back),
        Algorithm::TokenBucket(_) => base,
        Algorithm::Gcra(_) => format!("{base}:gcra"),
    }
}

/// Runs `call`, failing the test if it does not settle.
async fn settled<T>(call: impl Future<Output = T>) -> T {
    tokio::time::timeout(SETTLES, call)
        .await
        .expect("the call settles")
}

/// Sends `words` to Redis.
async fn redis(servers: &Servers, words: &[&str]) -> Value {
    command(servers, words).await.unwrap()
}

/// What `key` holds, whatever its type, to check that nothing wrote it.
async fn snapshot(servers: &Servers, key: &str) -> (Value, Value) {
    let kind = redis(servers, &["TYPE", key]).await;
    let content = match kind.as_str() {
        Some("string") => redis(servers, &["GET", key]).await,
        Some("hash") => redis(servers, &["HGETALL", key]).await,
        Some("list") => redis(servers, &["LRANGE", key, "0", "-1"]).await,
        Some("set") => redis(servers, &["SMEMBERS", key]).await,
        Some("zset") => redis(servers, &["ZRANGE", key, "0", "-1", "WITHSCORES"]).await,
        _ => Value::Null,
    };
    (kind, content)
}

/// Asserts that `result` is corrupt state in `key` (or Redis's own WRONGTYPE).
fn assert_corrupt<T: std::fmt::Debug>(result: Result<T, Error>, key: &str, context: &str) {
    match result {
        Err(Error::CorruptState { key: found, .. }) => assert_eq!(found, key, "{context}"),
        Err(Error::Redis { message }) if message.starts_with("WRONGTYPE") => {}
        other => panic!("{context}: not corrupt state in {key}: {other:?}"),
    }
}

/// Every call of a limiter on `identifier` (limit, get_remaining, block_until_ready, a refund) refuses
/// the corrupt state in `key` in both fail modes and both layouts' answer alike, writing nothing.
async fn refused_everywhere(
    servers: &Servers,
    rule: Algorithm,
    prefix: &str,
    layout: KeyLayout,
    identifier: &str,
    key: &str,
    clock: &ManualClock,
) {
    let before = snapshot(servers, key).await;
    for mode in MODES {
        let limit = limiter(servers, rule, prefix, layout, mode, clock);
        let context = format!("{} {layout:?} {mode:?} {key}", rule.name());
        assert_corrupt(settled(limit.limit(identifier, 1.0)).await, key, &context);
        assert_corrupt(settled(limit.limit(identifier, -1.0)).await, key, &context);
        assert_corrupt(
            settled(limit.get_remaining(identifier)).await,
            key,
            &context,
        );
        let sleep = |_| async {};
        let blocked = limit.block_until_ready(identifier, 1.0, Duration::from_secs(5), sleep);
        assert_corrupt(settled(blocked).await, key, &context);
        assert_eq!(snapshot(servers, key).await, before, "{context}: written");
    }
}

#[tokio::test]
async fn a_token_bucket_deep_in_debt_settles_denied_with_nothing_left() {
    let servers = Servers::start();
    let clock = ManualClock::new(T0);
    let rule = rules()[2];
    for layout in LAYOUTS {
        for (index, tokens) in ["-1e20", "-100000000000000000000", "-1e300", "-2"]
            .into_iter()
            .enumerate()
        {
            let identifier = format!("debt-{index}");
            let key = state_key(&rule, "debt", layout, &identifier, T0, 0);
            let at = (T0 / 1_000).to_string();
            redis(
                &servers,
                &["HSET", &key, "refilledAt", &at, "tokens", tokens],
            )
            .await;
            for mode in MODES {
                let limit = limiter(&servers, rule, "debt", layout, mode, &clock);
                let answer = settled(limit.limit(&identifier, 1.0)).await.unwrap();
                assert!(!answer.success, "{tokens}: {answer:?}");
                assert_eq!((answer.remaining, answer.reason), (0.0, None), "{tokens}");
                let remaining = settled(limit.get_remaining(&identifier)).await.unwrap();
                assert_eq!(remaining.remaining, 0.0, "{tokens}");
                let sleep = |_| async {};
                let blocked =
                    limit.block_until_ready(&identifier, 1.0, Duration::from_secs(1), sleep);
                assert!(!settled(blocked).await.unwrap().success, "{tokens}");
            }
        }
    }
}

#[tokio::test]
async fn a_counter_that_is_no_integer_counter_is_corrupt_state_and_kept() {
    let servers = Servers::start();
    let clock = ManualClock::new(T0);
    for rule in &rules()[..2] {
        for layout in LAYOUTS {
            for (index, junk) in [
                "nan",
                "-inf",
                "inf",
                "1e400",
                "junk",
                "9223372036854775808",
                "-9223372036854775809",
                "1.5",
                " 2",
                "0x2",
                "007",
                "",
            ]
            .into_iter()
            .enumerate()
            {
                let identifier = format!("counter-{index}");
                let key = state_key(rule, "counter", layout, &identifier, T0, 0);
                redis(&servers, &["SET", &key, junk]).await;
                refused_everywhere(
                    &servers,
                    *rule,
                    "counter",
                    layout,
                    &identifier,
                    &key,
                    &clock,
                )
                .await;
            }
        }
    }
}

#[tokio::test]
async fn a_previous_window_that_is_no_counter_is_corrupt_state_too() {
    let servers = Servers::start();
    let clock = ManualClock::new(T0);
    let rule = rules()[1];
    for layout in LAYOUTS {
        let key = state_key(&rule, "previous", layout, "u", T0, 1);
        redis(&servers, &["SET", &key, "nan"]).await;
        refused_everywhere(&servers, rule, "previous", layout, "u", &key, &clock).await;
    }
}

#[tokio::test]
async fn counters_up_to_what_incrby_holds_are_decided_on_and_stay_exact() {
    let servers = Servers::start();
    let clock = ManualClock::new(T0);
    let rule = rules()[0];
    for layout in LAYOUTS {
        for (index, stored) in [
            "9223372036854775807",
            "-9223372036854775808",
            "9007199254740993",
        ]
        .into_iter()
        .enumerate()
        {
            let identifier = format!("i64-{index}");
            let key = state_key(&rule, "i64", layout, &identifier, T0, 0);
            redis(&servers, &["SET", &key, stored]).await;
            let limit = limiter(&servers, rule, "i64", layout, FailMode::Open, &clock);
            let answer = settled(limit.limit(&identifier, 1.0)).await.unwrap();
            assert_eq!(answer.reason, None, "{stored}");
            assert_eq!(answer.success, stored.starts_with('-'), "{stored}");
            let now = redis(&servers, &["GET", &key]).await;
            let expected = match stored {
                // Credit is counted down exactly; a count past 2^53 - 1 is saturated.
                "-9223372036854775808" => "-9223372036854775807",
                other => other,
            };
            assert_eq!(now, Value::from(expected), "{stored}");
        }
    }
}

#[tokio::test]
async fn a_key_of_another_type_is_corrupt_state_naming_it() {
    let servers = Servers::start();
    let clock = ManualClock::new(T0);
    for rule in rules() {
        for layout in LAYOUTS {
            let key = state_key(&rule, "type", layout, "u", T0, 0);
            redis(&servers, &["DEL", &key]).await;
            redis(&servers, &["RPUSH", &key, "x"]).await;
            refused_everywhere(&servers, rule, "type", layout, "u", &key, &clock).await;
        }
    }
}

#[tokio::test]
async fn malformed_token_bucket_fields_are_corrupt_state() {
    let servers = Servers::start();
    let clock = ManualClock::new(T0);
    let rule = rules()[2];
    let now_ms = (T0 / 1_000).to_string();
    let cases: [&[&str]; 9] = [
        &["tokens", "3"],
        &["refilledAt", &now_ms],
        &["refilledAt", &now_ms, "tokens", "nan"],
        &["refilledAt", &now_ms, "tokens", "-inf"],
        &["refilledAt", &now_ms, "tokens", "1e400"],
        &["refilledAt", &now_ms, "tokens", "0x3"],
        &["refilledAt", "junk", "tokens", "3"],
        &["refilledAt", "9223372036854775808", "tokens", "3"],
        &["other", "1"],
    ];
    for layout in LAYOUTS {
        for (index, fields) in cases.iter().enumerate() {
            let identifier = format!("fields-{index}");
            let key = state_key(&rule, "fields", layout, &identifier, T0, 0);
            let mut words = vec!["HSET", &key];
            words.extend_from_slice(fields);
            redis(&servers, &words).await;
            refused_everywhere(&servers, rule, "fields", layout, &identifier, &key, &clock).await;
        }
    }
}

#[tokio::test]
async fn a_gcra_arrival_time_that_is_no_whole_time_is_corrupt_state() {
    let servers = Servers::start();
    let clock = ManualClock::new(T0);
    let rule = rules()[3];
    for layout in LAYOUTS {
        for (index, junk) in ["nan", "-5", "1.5", "9007199254740992", "junk"]
            .into_iter()
            .enumerate()
        {
            let identifier = format!("tat-{index}");
            let key = state_key(&rule, "tat", layout, &identifier, T0, 0);
            redis(&servers, &["SET", &key, junk]).await;
            refused_everywhere(&servers, rule, "tat", layout, &identifier, &key, &clock).await;
        }
    }
}

#[tokio::test]
async fn an_analytics_key_left_as_a_hash_leaves_the_decision_and_tells_the_hook() {
    let servers = Servers::start();
    let clock = ManualClock::new(T0);
    let now_ms = T0 / 1_000;
    let events = format!("events:events:{}", now_ms / 3_600_000 * 3_600_000);
    redis(&servers, &["HSET", &events, "old", "1"]).await;
    for rule in rules() {
        for layout in LAYOUTS {
            for mode in MODES {
                let identifier = format!("{}-{layout:?}-{mode:?}", rule.name());
                let told = Arc::new(Mutex::new(Vec::new()));
                let hook = Arc::clone(&told);
                let limit = limiter(&servers, rule, "events", layout, mode, &clock)
                    .with_analytics(true)
                    .with_event_errors(move |error| hook.lock().unwrap().push(error.clone()));
                let answers: Vec<Response> = {
                    let mut answers = Vec::new();
                    for _ in 0..6 {
                        answers.push(settled(limit.limit(&identifier, 1.0)).await.unwrap());
                    }
                    answers
                };
                let admitted: Vec<bool> = answers.iter().map(|answer| answer.success).collect();
                assert_eq!(
                    admitted,
                    [true, true, true, true, true, false],
                    "{identifier}"
                );
                assert!(
                    answers.iter().all(|answer| answer.reason.is_none()),
                    "{identifier}"
                );
                let told = told.lock().unwrap();
                assert_eq!(told.len(), 6, "{identifier}");
                for error in told.iter() {
                    assert!(
                        matches!(error, Error::CorruptState { key, .. } if *key == events),
                        "{identifier}: {error}"
                    );
                }
            }
        }
    }
    assert_eq!(
        redis(&servers, &["HGETALL", &events]).await,
        Value::from(vec!["old", "1"])
    );
}

#[tokio::test]
async fn a_deny_list_of_another_type_is_an_error_never_an_admission() {
    let servers = Servers::start();
    let clock = ManualClock::new(T0);
    redis(&servers, &["SET", "deny:denyList:all", "x"]).await;
    for rule in rules() {
        for layout in LAYOUTS {
            for mode in MODES {
                let limit = limiter(&servers, rule, "deny", layout, mode, &clock)
                    .with_protection(true)
                    .unwrap();
                let result = settled(limit.limit("u", 1.0)).await;
                assert_corrupt(result, "deny:denyList:all", &format!("{layout:?} {mode:?}"));
            }
        }
    }
}

#[tokio::test]
async fn both_layouts_read_a_stored_dynamic_limit_alike() {
    let servers = Servers::start();
    let clock = ManualClock::new(T0);
    for (index, stored) in [
        "1e-7", " 2 ", "0x2", "inf", "2.5", "-3", "junk", "nan", "-inf",
    ]
    .into_iter()
    .enumerate()
    {
        let prefix = format!("dynamic-{index}");
        let limit_key = format!("{prefix}:dynamic:global");
        redis(&servers, &["SET", &limit_key, stored]).await;
        for rule in rules() {
            let mut answers = Vec::new();
            for layout in LAYOUTS {
                let limit = limiter(&servers, rule, &prefix, layout, FailMode::Open, &clock)
                    .with_dynamic_limits(true);
                let answer = match settled(limit.limit("u", 1.0)).await {
                    Ok(answer) => {
                        assert_eq!(answer.reason, None, "{stored:?}");
                        Ok((answer.success, answer.limit, answer.remaining))
                    }
                    Err(Error::CorruptState { key, .. }) => Err(key),
                    Err(other) => panic!("{stored:?} {layout:?}: {other}"),
                };
                answers.push(answer);
            }
            assert_eq!(answers[0], answers[1], "{stored:?} {}", rule.name());
            // GCRA cannot take a burst of 2^53 - 1 (its tolerance would not fit): corrupt for it.
            let too_large = stored == "inf" && matches!(rule, Algorithm::Gcra(_));
            let corrupt = ["junk", "nan"].contains(&stored) || too_large;
            assert_eq!(
                answers[0].is_err(),
                corrupt,
                "{stored:?} {}: {answers:?}",
                rule.name()
            );
        }
    }
}

/// A value written under a state key.
enum Stored {
    Missing,
    Text(String),
    Hash(Vec<(String, String)>),
    List,
}

/// Counters: valid integers around the limit and at INCRBY's ends, and junk.
fn counter(random: &mut Random) -> (Stored, Option<i64>) {
    const VALID: [i64; 10] = [
        0,
        1,
        4,
        5,
        6,
        -3,
        1 << 53,
        (1 << 53) + 1,
        i64::MAX,
        i64::MIN,
    ];
    const JUNK: [&str; 10] = [
        "nan",
        "inf",
        "-inf",
        "1e400",
        "junk",
        "9223372036854775808",
        "1.5",
        " 3",
        "0x3",
        "-0",
    ];
    match random.between(0..=9) {
        0 => (Stored::Missing, Some(0)),
        1 => (Stored::List, None),
        2..=3 => (
            Stored::Text(JUNK[random.between(0..=9) as usize].to_owned()),
            None,
        ),
        _ => {
            let value = VALID[random.between(0..=9) as usize];
            (Stored::Text(value.to_string()), Some(value))
        }
    }
}

/// A token bucket hash: what the peer's versions write (negative tokens too), and malformed ones.
fn bucket(random: &mut Random, now_ms: u64) -> (Stored, Option<Option<TokenBucketState>>) {
    const TOKENS: [f64; 8] = [0.0, 2.5, 5.0, 8.0, -2.0, -1e20, -1e300, 4.999_999_999];
    let refilled_at = now_ms - random.between(0..=600_000);
    let tokens = TOKENS[random.between(0..=7) as usize];
    let field = |name: &str, value: String| (name.to_owned(), value);
    match random.between(0..=9) {
        0 => (Stored::Missing, Some(None)),
        1 => (Stored::List, None),
        2 => (Stored::Hash(vec![field("tokens", "3".into())]), None),
        3 => {
            let junk = ["nan", "-inf", "1e400", "0x3", "junk"][random.between(0..=4) as usize];
            let fields = vec![
                field("refilledAt", refilled_at.to_string()),
                field("tokens", junk.into()),
            ];
            (Stored::Hash(fields), None)
        }
        _ => {
            let fields = vec![
                field("refilledAt", refilled_at.to_string()),
                field("tokens", tokens.to_string()),
            ];
            let state = TokenBucketState {
                refilled_at,
                tokens,
            };
            (Stored::Hash(fields), Some(Some(state)))
        }
    }
}

/// A GCRA arrival time: around now, or junk.
fn arrival(random: &mut Random, now: u64) -> (Stored, Option<Option<GcraState>>) {
    match random.between(0..=9) {
        0 => (Stored::Missing, Some(None)),
        1 => (Stored::List, None),
        2..=3 => {
            let junk =
                ["nan", "-5", "1.5", "9007199254740992", "1e400"][random.between(0..=4) as usize];
            (Stored::Text(junk.into()), None)
        }
        _ => {
            let tat = now + random.between(0..=2 * 3_600_000_000) - 3_600_000_000;
            (Stored::Text(tat.to_string()), Some(Some(GcraState { tat })))
        }
    }
}

/// Writes `stored` under `key`.
async fn write(servers: &Servers, key: &str, stored: &Stored) {
    redis(servers, &["DEL", key]).await;
    match stored {
        Stored::Missing => {}
        Stored::Text(text) => {
            redis(servers, &["SET", key, text]).await;
        }
        Stored::Hash(fields) => {
            let mut words = vec!["HSET", key];
            for (name, value) in fields {
                words.push(name);
                words.push(value);
            }
            redis(servers, &words).await;
        }
        Stored::List => {
            redis(servers, &["RPUSH", key, "x"]).await;
        }
    }
}

#[tokio::test]
async fn corrupt_and_valid_states_at_random() {
    let seed = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or(0x22);
    let iterations: u64 = std::env::var("FUZZ_ITERATIONS")
        .ok()
        .and_then(|count| count.parse().ok())
        .unwrap_or(25);
    let servers = Servers::start();
    let mut random = Random(seed);
    for rule in rules() {
        for layout in LAYOUTS {
            for iteration in 0..iterations {
                let context = format!(
                    "seed {seed}, {} {layout:?}, iteration {iteration}",
                    rule.name()
                );
                let now = T0 + random.between(0..=3_600_000_000 - 2_000_000);
                let clock = ManualClock::new(now);
                let identifier = format!("fuzz-{iteration}");
                let key = |back| state_key(&rule, "fuzz", layout, &identifier, now, back);
                // The keys written, their values, and the state they make (None if corrupt).
                let mut written = Vec::new();
                let state: Option<Option<State>> = match rule {
                    Algorithm::FixedWindow(rule) => {
                        let (stored, used) = counter(&mut random);
                        written.push((key(0), stored));
                        used.map(|used| {
                            let window = rule.window_index(now);
                            Some(FixedWindowState { window, used }.into())
                        })
                    }
                    Algorithm::SlidingWindow(rule) => {
                        let (current, used) = counter(&mut random);
                        let (previous, before) = counter(&mut random);
                        written.push((key(0), current));
                        written.push((key(1), previous));
                        used.zip(before).map(|(current, previous)| {
                            let window = rule.window_index(now);
                            let count = |value: i64| value.max(0) as u64;
                            let state = SlidingWindowState {
                                window,
                                current: count(current),
                                previous: count(previous),
                            };
                            Some(state.into())
                        })
                    }
                    Algorithm::TokenBucket(_) => {
                        let (stored, state) = bucket(&mut random, now / 1_000);
                        written.push((key(0), stored));
                        state.map(|state| state.map(State::from))
                    }
                    Algorithm::Gcra(_) => {
                        let (stored, state) = arrival(&mut random, now);
                        written.push((key(0), stored));
                        state.map(|state| state.map(State::from))
                    }
                };
                for (key, stored) in &written {
                    write(&servers, key, stored).await;
                }
                let capacity = rule.capacity() as f64;
                let costs = [0.0, 1.0, -1.0, 2.0, capacity, capacity + 1.0];
                let cost = costs[random.between(0..=5) as usize];
                match state {
                    None => {
                        let mut before = Vec::new();
                        for (key, _) in &written {
                            before.push(snapshot(&servers, key).await);
                        }
                        for mode in MODES {
                            let limit = limiter(&servers, rule, "fuzz", layout, mode, &clock);
                            let result = settled(limit.limit(&identifier, cost)).await;
                            let Err(error) = result else {
                                panic!("{context}: corrupt state decided: {result:?}");
                            };
                            let named = written.iter().any(|(key, _)| match &error {
                                Error::CorruptState { key: found, .. } => found == key,
                                Error::Redis { message } => message.starts_with("WRONGTYPE"),
                                _ => false,
                            });
                            assert!(named, "{context}: {error}");
                            let remaining = settled(limit.get_remaining(&identifier)).await;
                            assert!(remaining.is_err(), "{context}: {remaining:?}");
                        }
                        for ((key, _), before) in written.iter().zip(before) {
                            assert_eq!(snapshot(&servers, key).await, before, "{context}: written");
                        }
                    }
                    Some(state) => {
                        let mode = MODES[(iteration % 2) as usize];
                        let limit = limiter(&servers, rule, "fuzz", layout, mode, &clock);
                        let answer = settled(limit.limit(&identifier, cost)).await;
                        let answer = answer.unwrap_or_else(|error| panic!("{context}: {error}"));
                        let expected = rule.acquire(state.as_ref(), now, cost).unwrap().decision;
                        assert_eq!(answer.reason, None, "{context}");
                        assert_eq!(answer.success, expected.allowed, "{context}: {state:?}");
                        assert_eq!(answer.remaining, expected.remaining, "{context}");
                        assert!(answer.remaining >= 0.0, "{context}");
                        assert_eq!(answer.reset, expected.reset, "{context}");
                        assert_eq!(answer.retry_after, expected.retry_after, "{context}");
                    }
                }
            }
        }
    }
}
