//! `RedisBackend` against real redis-server through the real gateway: scripts, differential tests
//! against `MemoryBackend`, concurrency, coalescing, the NOSCRIPT path, Redis time, and every error.

#![cfg(not(target_arch = "wasm32"))]

mod support;

use edgelimit::algorithm::Algorithm;
use edgelimit::ratelimit::Ratelimit;
use edgelimit::redis::SCRIPTS;
use edgelimit::transport::HttpTransport;
use edgelimit::{
    Backend, Error, FixedWindow, Gcra, ManualClock, MemoryBackend, RedisBackend, SlidingWindow,
    TokenBucket,
};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use support::{command, hour_limits, Counting, Random, Servers, TOKEN};

const EPOCH_MS: u64 = 1_700_000_000_000;

async fn pttl(servers: &Servers, key: &str) -> i64 {
    command(servers, &["PTTL", key])
        .await
        .unwrap()
        .as_i64()
        .expect("PTTL answers an integer")
}

#[tokio::test]
async fn every_script_loads_on_redis_under_the_sha_the_crate_computes() {
    let servers = Servers::start();
    for script in SCRIPTS {
        let sha = command(&servers, &["SCRIPT", "LOAD", script.source()])
            .await
            .unwrap();
        assert_eq!(sha, json!(script.sha1()), "{}", script.name());
    }
}

/// One random operation of a differential run.
#[derive(Debug)]
enum Step {
    Advance(u64),
    Acquire(usize, f64),
    Available(usize),
    TimeUntilAvailable(usize, f64),
    Reset(usize),
}

fn random_limit(random: &mut Random) -> Algorithm {
    // Windows of at least 200 ms keep Redis's own expiry (real time) behind the manual clock's.
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

fn random_steps(random: &mut Random, rule: Algorithm, count: usize) -> Vec<Step> {
    let whole = matches!(
        rule,
        Algorithm::FixedWindow(_) | Algorithm::SlidingWindow(_)
    );
    let capacity = rule.capacity();
    let cost = |random: &mut Random| {
        // From -2 to 2 more than the capacity: refunds, and costs no state can admit.
        let quarters = random.between(0..=(capacity + 4) * 4) as f64 - 8.0;
        if whole {
            (quarters / 4.0).round()
        } else {
            quarters / 4.0
        }
    };
    (0..count)
        .map(|_| match random.between(0..=9) {
            0..=2 => Step::Advance(random.between(0..=3_000_000)),
            3..=6 => Step::Acquire(random.between(0..=2) as usize, cost(random)),
            7 => Step::Available(random.between(0..=2) as usize),
            8 => Step::TimeUntilAvailable(
                random.between(0..=2) as usize,
                cost(random).abs().min(capacity as f64),
            ),
            _ => Step::Reset(random.between(0..=2) as usize),
        })
        .collect()
}

#[tokio::test]
async fn memory_and_redis_backends_decide_identically() {
    let servers = Servers::start();
    let clock = ManualClock::from_millis(EPOCH_MS);
    let redis = RedisBackend::new(servers.gateway.transport()).with_clock(clock.clone());
    let seed = std::env::var("EDGELIMIT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed);
    let mut random = Random(seed);
    let (mut runs, mut steps_run) = (0, 0);
    for run in 0..1_000 {
        let rule = random_limit(&mut random);
        let memory = MemoryBackend::new().with_clock(clock.clone());
        let keys: Vec<String> = (0..3).map(|k| format!("diff:{seed}:{run}:{k}")).collect();
        clock.advance(Duration::from_millis(random.between(0..=10_000)));
        let steps = random_steps(&mut random, rule, 24);
        for (index, step) in steps.iter().enumerate() {
            let context =
                || format!("seed {seed}, run {run}, step {index}: {step:?} with {rule:?}");
            match *step {
                Step::Advance(micros) => clock.advance(Duration::from_micros(micros)),
                Step::Acquire(key, cost) => {
                    let (m, r) = (
                        memory.acquire(&keys[key], cost, rule).await,
                        redis.acquire(&keys[key], cost, rule).await,
                    );
                    assert_eq!(m, r, "{}", context());
                }
                Step::Available(key) => {
                    let (m, r) = (
                        memory.available(&keys[key], rule).await,
                        redis.available(&keys[key], rule).await,
                    );
                    assert_eq!(m, r, "{}", context());
                }
                Step::TimeUntilAvailable(key, cost) => {
                    let m = memory.time_until_available(&keys[key], cost, rule).await;
                    let r = redis.time_until_available(&keys[key], cost, rule).await;
                    assert_eq!(m, r, "{}", context());
                }
                Step::Reset(key) => {
                    memory.reset(&keys[key], rule).await.unwrap();
                    redis.reset(&keys[key], rule).await.unwrap();
                }
            }
        }
        runs += 1;
        steps_run += steps.len();
    }
    println!("{runs} random runs, {steps_run} steps: identical decisions");
}

#[tokio::test]
async fn sixty_four_concurrent_acquirers_get_exactly_the_limit() {
    let servers = Servers::start();
    let redis = Arc::new(RedisBackend::new(servers.gateway.transport()));
    for (index, rule) in hour_limits(100).into_iter().enumerate() {
        let key = format!("concurrent:{index}");
        let tasks: Vec<_> = (0..64)
            .map(|_| {
                let (redis, key) = (redis.clone(), key.clone());
                tokio::spawn(async move {
                    let mut admitted = 0;
                    for _ in 0..4 {
                        admitted +=
                            u64::from(redis.acquire(&key, 1.0, rule).await.unwrap().allowed);
                    }
                    admitted
                })
            })
            .collect();
        let mut admitted = 0;
        for task in tasks {
            admitted += task.await.unwrap();
        }
        assert_eq!(admitted, 100, "{}", rule.name());
    }
}

/// `cachedFixedWindow` in one process: requests of one identifier sent while the first answers are
/// still on their way, some answered by the local count once known, each write left in the background
/// as `waitUntil` does. However the answers and writes interleave, no more than the limit is admitted.
#[tokio::test]
async fn one_cached_fixed_window_process_admits_at_most_its_limit() {
    let servers = Servers::start();
    let limit = 3;
    let mut random = Random(7);
    let mut admitted_in_all = 0;
    for round in 0..40 {
        let ratelimit = Arc::new(
            Ratelimit::new(
                RedisBackend::new(servers.gateway.transport()),
                FixedWindow::new(limit, Duration::from_secs(3600)).unwrap(),
            )
            .with_local_counts(100)
            .unwrap(),
        );
        let identifier = format!("cached-concurrent:{round}");
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let (ratelimit, identifier) = (ratelimit.clone(), identifier.clone());
                let delay = Duration::from_micros(random.between(0..=3_000));
                tokio::spawn(async move {
                    tokio::time::sleep(delay).await;
                    let (response, pending) = ratelimit
                        .limit_with_pending(&identifier, 1.0)
                        .await
                        .unwrap();
                    if let Some(pending) = pending {
                        tokio::spawn(pending);
                    }
                    u64::from(response.success)
                })
            })
            .collect();
        let mut admitted = 0;
        for task in tasks {
            admitted += task.await.unwrap();
        }
        assert!(admitted <= limit, "round {round}: {admitted} admitted");
        admitted_in_all += admitted;
    }
    println!("{admitted_in_all} admitted of {}", 40 * limit);
    // Early denials are allowed (a write counted twice until its answer), but not many.
    assert!(
        admitted_in_all >= 40 * limit * 3 / 4,
        "{admitted_in_all} admitted"
    );
}

#[tokio::test]
async fn coalescing_sends_concurrent_decisions_as_one_pipeline() {
    let servers = Servers::start();
    for coalesce in [true, false] {
        let (transport, traffic) = Counting::new(servers.gateway.transport());
        let redis = RedisBackend::new(transport).with_coalescing(coalesce);
        for (index, rule) in hour_limits(1_000).into_iter().enumerate() {
            let key = format!("coalesce:{coalesce}:{index}");
            redis.acquire(&key, 1.0, rule).await.unwrap(); // loads the script
            traffic.take();
            let decisions =
                futures::future::join_all((0..64).map(|_| redis.acquire(&key, 1.0, rule))).await;
            assert!(decisions
                .iter()
                .all(|decision| decision.as_ref().unwrap().allowed));
            let (requests, sent, received) = traffic.take();
            println!(
                "{}: 64 concurrent decisions, coalescing {coalesce}: {requests} HTTP requests, {sent} bytes sent, {received} received",
                rule.name()
            );
            assert_eq!(requests, if coalesce { 1 } else { 64 }, "{}", rule.name());
        }
    }
}

#[tokio::test]
async fn one_decision_is_one_request_and_survives_script_flush() {
    let servers = Servers::start();
    let (transport, traffic) = Counting::new(servers.gateway.transport());
    let redis = RedisBackend::new(transport);
    for (index, rule) in hour_limits(10).into_iter().enumerate() {
        let key = format!("noscript:{index}");
        redis.acquire(&key, 1.0, rule).await.unwrap();
        traffic.take();
        redis.acquire(&key, 1.0, rule).await.unwrap();
        let (requests, sent, received) = traffic.take();
        println!(
            "{}: one decision = {requests} HTTP request, {sent} bytes sent, {received} received",
            rule.name()
        );
        assert_eq!(requests, 1, "{}", rule.name());

        command(&servers, &["SCRIPT", "FLUSH"]).await.unwrap();
        let after_flush = redis.acquire(&key, 1.0, rule).await.unwrap();
        assert!(after_flush.allowed);
        assert_eq!(after_flush.remaining, 7.0, "{}", rule.name());
        assert_eq!(traffic.take().0, 2, "EVALSHA, NOSCRIPT, then one EVAL");
        redis.acquire(&key, 1.0, rule).await.unwrap();
        assert_eq!(traffic.take().0, 1, "EVALSHA hits again");
    }
}

#[tokio::test]
async fn a_burst_that_meets_noscript_sends_the_script_once() {
    let servers = Servers::start();
    let (transport, traffic) = Counting::new(servers.gateway.transport());
    let redis = RedisBackend::new(transport);
    for (index, rule) in hour_limits(600).into_iter().enumerate() {
        command(&servers, &["SCRIPT", "FLUSH"]).await.unwrap();
        traffic.take();
        let key = format!("burst:{index}");
        // 600 EVALs would be over a megabyte, past the gateway's body limit.
        let burst = (0..600).map(|_| redis.acquire(&key, 1.0, rule));
        let decisions = futures::future::join_all(burst).await;
        let (requests, sent, _) = traffic.take();
        let admitted = decisions
            .into_iter()
            .map(|decision| decision.unwrap())
            .filter(|decision| decision.allowed)
            .count();
        assert_eq!(admitted, 600, "{}", rule.name());
        assert_eq!(
            requests,
            2,
            "{}: EVALSHAs, then one EVAL and EVALSHAs",
            rule.name()
        );
        // Twice 600 EVALSHAs of under 200 bytes, and the script once.
        assert!(sent < 300_000, "{}: {sent} bytes sent", rule.name());
        assert!(!redis.acquire(&key, 1.0, rule).await.unwrap().allowed);
    }
}

#[tokio::test]
async fn a_burst_larger_than_a_request_body_may_be_is_split_and_decided_exactly() {
    let servers = Servers::start();
    let (transport, traffic) = Counting::new(servers.gateway.transport());
    let redis = RedisBackend::new(transport);
    let rule: Algorithm = SlidingWindow::new(7_000, Duration::from_secs(3600))
        .unwrap()
        .into();
    redis.acquire("split", 0.0, rule).await.unwrap();
    traffic.take();
    // 8,000 EVALSHAs of about 150 bytes: past the gateway's 1 MiB body limit in one request.
    let burst = (0..8_000).map(|_| redis.acquire("split", 1.0, rule));
    let decisions = futures::future::join_all(burst).await;
    let (requests, sent, _) = traffic.take();
    assert!(sent > 1024 * 1024, "{sent} bytes sent");
    assert!(requests >= 5, "{requests} requests for {sent} bytes");
    let admitted = decisions
        .into_iter()
        .map(|decision| decision.unwrap())
        .filter(|decision| decision.allowed)
        .count();
    assert_eq!(admitted, 7_000);
}

#[tokio::test]
async fn keys_values_and_ttls_are_those_of_upstash_ratelimit() {
    let servers = Servers::start();
    let clock = ManualClock::from_millis(EPOCH_MS + 1_500);
    let redis = RedisBackend::new(servers.gateway.transport()).with_clock(clock.clone());
    let minute = Duration::from_secs(60);
    let window = EPOCH_MS / 60_000;

    redis
        .acquire("p:fixed", 2.0, FixedWindow::new(10, minute).unwrap().into())
        .await
        .unwrap();
    assert_eq!(
        command(&servers, &["GET", &format!("p:fixed:{window}")])
            .await
            .unwrap(),
        json!("2")
    );
    // Every key outlives its state by LATE_MS (10 s), from the window's end as the deciding clock
    // reads it, not from its first write.
    let into = (EPOCH_MS + 1_500) % 60_000;
    let ttl = pttl(&servers, &format!("p:fixed:{window}")).await as u64;
    let end = 60_000 - into + 10_000;
    assert!((end - 500..=end).contains(&ttl), "fixed window TTL {ttl}");

    redis
        .acquire(
            "p:sliding",
            3.0,
            SlidingWindow::new(10, minute).unwrap().into(),
        )
        .await
        .unwrap();
    assert_eq!(
        command(&servers, &["GET", &format!("p:sliding:{window}")])
            .await
            .unwrap(),
        json!("3")
    );
    let ttl = pttl(&servers, &format!("p:sliding:{window}")).await as u64;
    let end = end + 60_000;
    assert!(
        (end - 500..=end).contains(&ttl),
        "sliding window TTL {ttl}: the next window's end"
    );

    redis
        .acquire(
            "p:bucket",
            4.0,
            TokenBucket::new(2, minute, 10).unwrap().into(),
        )
        .await
        .unwrap();
    let fields = command(&servers, &["HGETALL", "p:bucket"]).await.unwrap();
    assert_eq!(
        fields,
        json!(["refilledAt", (EPOCH_MS + 1_500).to_string(), "tokens", "6"])
    );
    let ttl = pttl(&servers, "p:bucket").await;
    assert!(
        (129_500..=130_000).contains(&ttl),
        "token bucket TTL {ttl}: full after 2 refills"
    );

    redis
        .acquire("p:gcra", 1.0, Gcra::new(10, minute, 10).unwrap().into())
        .await
        .unwrap();
    let tat = command(&servers, &["GET", "p:gcra:gcra"]).await.unwrap();
    assert_eq!(
        tat,
        json!(((EPOCH_MS + 1_500) * 1_000 + 6_000_000).to_string())
    );

    // Reset deletes exactly the computed keys: identifier "a" never touches "a:1".
    let fixed: Algorithm = FixedWindow::new(10, minute).unwrap().into();
    for key in ["a", "a:1"] {
        redis.acquire(key, 1.0, fixed).await.unwrap();
    }
    redis.reset("a", fixed).await.unwrap();
    assert_eq!(redis.available("a", fixed).await.unwrap(), 10.0);
    assert_eq!(redis.available("a:1", fixed).await.unwrap(), 9.0);
}

/// `EVAL` of the script named `name` with `keys` and `args`, through the gateway.
async fn eval(
    servers: &Servers,
    name: &str,
    keys: &[&str],
    args: &[&str],
) -> edgelimit::Result<serde_json::Value> {
    let script = SCRIPTS.iter().find(|script| script.name() == name).unwrap();
    let count = keys.len().to_string();
    let mut line = vec!["EVAL", script.source(), &count];
    line.extend(keys.iter().chain(args));
    command(servers, &line).await
}

/// The TTL a counter written at `now` (µs, as text) in its window of 10^9 ms gets: until `span` windows
/// after its start, plus `LATE_MS`.
fn expiry(now: &str, span: u64) -> i64 {
    let now_ms = now.parse::<u64>().unwrap() / 1_000;
    let end = (now_ms / 1_000_000_000 + span) * 1_000_000_000;
    (end + edgelimit::redis::LATE_MS - now_ms) as i64
}

/// Now (µs) and its window of 10^9 ms, as text: windows that long put the caller's clock and Redis's
/// in the same one.
fn now_and_window() -> (String, u64) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64;
    (now.to_string(), now / 1_000 / 1_000_000_000)
}

/// A fixed window's common request (the caller's time, neither a dynamic limit nor a lease, a whole
/// cost from 1 to the limit) is decided before the script's prelude and answered with the count
/// alone; every other request goes the general way, whose reply carries the state it found.
#[tokio::test]
async fn a_fixed_windows_common_request_is_answered_with_its_count_alone() {
    let servers = Servers::start();
    let (now, window) = now_and_window();
    let window = window.to_string();
    let key = format!("fast:{window}");
    let fixed = |keys: &[&str], args: &[&str]| {
        let (keys, args): (Vec<String>, Vec<String>) = (
            keys.iter().map(|s| s.to_string()).collect(),
            args.iter().map(|s| s.to_string()).collect(),
        );
        let servers = &servers;
        async move {
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            eval(servers, "fixed window", &keys, &args).await
        }
    };
    let limit = |cost: &'static str| [now.as_str(), &window, "1000000000", "10", cost];

    // A counter @upstash/ratelimit's cachedFixedWindow left without an expiry gets one: its window's
    // end, plus LATE_MS.
    command(&servers, &["SET", &key, "3"]).await.unwrap();
    assert_eq!(fixed(&[&key], &limit("2")).await.unwrap(), json!(5));
    let ttl = pttl(&servers, &key).await;
    assert!(
        (expiry(&now, 1) - 1_000..=expiry(&now, 1)).contains(&ttl),
        "{ttl}"
    );
    let denied = fixed(&[&key], &limit("10")).await.unwrap();
    assert_eq!(denied, json!(15), "denied, counted");

    // The general way: {allowed, now, limit, window, count found}.
    let general = |reply: serde_json::Value, allowed: u64, found: &str| {
        let fields = reply.as_array().unwrap_or_else(|| panic!("{reply}"));
        assert_eq!(fields[0], json!(allowed), "{reply}");
        assert_eq!(fields[4], json!(found), "{reply}");
    };
    // A cost above the limit is denied without being counted, as the algorithm (and MemoryBackend)
    // decides it.
    general(fixed(&[&key], &limit("11")).await.unwrap(), 0, "15");
    let stored = command(&servers, &["GET", &key]).await.unwrap();
    assert_eq!(stored, json!("15"));
    // A refund.
    general(fixed(&[&key], &limit("-14")).await.unwrap(), 1, "15");
    // Redis's clock: the count with Redis's time.
    let redis_clock = ["", &window, "1000000000", "10", "1"];
    let timed = fixed(&[&key], &redis_clock).await.unwrap();
    assert_eq!(timed[0], json!(2), "{timed}");
    let redis_now = timed[1].as_u64().unwrap();
    assert!(
        redis_now.abs_diff(now.parse().unwrap()) < 60_000_000,
        "{timed}"
    );
    // A dynamic limit (ARGV[6] = '1'), none stored.
    let dynamic = [now.as_str(), &window, "1000000000", "10", "1", "1"];
    general(
        fixed(&[&key, "fast:dynamic"], &dynamic).await.unwrap(),
        1,
        "2",
    );
    // A counter INCRBY cannot count goes the general way, which names it.
    command(&servers, &["SET", &key, "x"]).await.unwrap();
    let refused = fixed(&[&key], &limit("1")).await;
    assert!(
        matches!(refused, Err(edgelimit::Error::CorruptState { .. })),
        "{refused:?}"
    );
}

/// A sliding window's common request (the caller's time, neither a dynamic limit nor a lease, a whole
/// cost from 1 to the limit, counters as the scripts write them) is decided before the script's
/// prelude and answered with the two counts found alone; anything else goes the general way.
#[tokio::test]
async fn a_sliding_windows_common_request_is_answered_with_its_counts_alone() {
    let servers = Servers::start();
    let (now, window) = now_and_window();
    let previous_window = (window - 1).to_string();
    let (previous, current) = ("slide:previous".to_owned(), "slide:current".to_owned());
    let keys = [previous.as_str(), current.as_str()];
    let sliding = |cost: &str, extra: &[&str]| {
        let mut args = vec![now.clone(), previous_window.clone(), "1000000000".into()];
        args.extend(["10".to_owned(), cost.to_owned()]);
        args.extend(extra.iter().map(|s| s.to_string()));
        let servers = &servers;
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            eval(servers, "sliding window", &keys, &args).await
        }
    };

    // Nothing stored: admitted, counted in the current window with the peer's expiry.
    assert_eq!(sliding("3", &[]).await.unwrap(), json!([0, 0]));
    assert_eq!(
        command(&servers, &["GET", &current]).await.unwrap(),
        json!("3")
    );
    let ttl = pttl(&servers, &current).await;
    assert!(
        (expiry(&now, 2) - 1_000..=expiry(&now, 2)).contains(&ttl),
        "{ttl}"
    );
    // A previous count weighs (at least 10 of 10^14 unless the window is all but over): denied,
    // nothing written.
    command(&servers, &["SET", &previous, "100000000000000"])
        .await
        .unwrap();
    assert_eq!(
        sliding("2", &[]).await.unwrap(),
        json!([3, 100_000_000_000_000u64])
    );
    assert_eq!(
        command(&servers, &["GET", &current]).await.unwrap(),
        json!("3")
    );

    // The general way: {allowed, now, limit, window, current, previous, ...}.
    let general = |reply: serde_json::Value| {
        let fields = reply.as_array().unwrap_or_else(|| panic!("{reply}"));
        assert!(fields.len() >= 6, "{reply}");
        (fields[0].clone(), fields[4].clone(), fields[5].clone())
    };
    // A cost above the limit, a refund, a dynamic limit (ARGV[6] = '1', none stored).
    assert_eq!(
        general(sliding("11", &[]).await.unwrap()),
        (json!(0), json!("3"), json!("100000000000000"))
    );
    assert_eq!(
        general(sliding("-1", &[]).await.unwrap()),
        (json!(1), json!("3"), json!("100000000000000"))
    );
    let dynamic_keys = [previous.as_str(), &current, "slide:dynamic"];
    let dynamic_args = [now.as_str(), &previous_window, "1000000000", "10", "1", "1"];
    let dynamic = eval(&servers, "sliding window", &dynamic_keys, &dynamic_args);
    assert_eq!(
        general(dynamic.await.unwrap()),
        (json!(0), json!("2"), json!("100000000000000"))
    );
    // A counter written otherwise than the scripts write counts: negative (credit the peer's
    // refunds left), or with a leading zero, which the general way names as corrupt.
    command(&servers, &["SET", &previous, "-4"]).await.unwrap();
    assert_eq!(
        general(sliding("1", &[]).await.unwrap()),
        (json!(1), json!("2"), json!("-4"))
    );
    command(&servers, &["SET", &previous, "007"]).await.unwrap();
    let refused = sliding("1", &[]).await;
    assert!(
        matches!(refused, Err(edgelimit::Error::CorruptState { .. })),
        "{refused:?}"
    );
}

#[tokio::test]
async fn redis_time_replaces_a_skewed_caller_clock() {
    let servers = Servers::start();
    let real_ms = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
    };
    // The caller's clock is 20 minutes fast; with Redis time the decisions follow Redis's clock.
    let skewed = ManualClock::from_millis(real_ms() + 20 * 60_000);
    let redis = RedisBackend::new(servers.gateway.transport())
        .with_clock(skewed.clone())
        .with_redis_time(true);
    let gcra: Algorithm = Gcra::new(10, Duration::from_secs(10), 10).unwrap().into();
    let decision = redis.acquire("skew:gcra", 1.0, gcra).await.unwrap();
    let now = real_ms();
    assert!(
        decision.reset >= now && decision.reset <= now + 1_100,
        "reset {} vs now {now}",
        decision.reset
    );

    let hourly: Algorithm = FixedWindow::new(3, Duration::from_secs(3600))
        .unwrap()
        .into();
    for expected in [true, true, true, false] {
        assert_eq!(
            redis
                .acquire("skew:fixed", 1.0, hourly)
                .await
                .unwrap()
                .allowed,
            expected
        );
    }
    // Beyond a window of skew the script cannot find its keys: an error naming the skew, in either
    // fail mode (no outage), not a wrong answer.
    skewed.advance(Duration::from_secs(3 * 3600));
    match redis.acquire("skew:fixed", 1.0, hourly).await {
        Err(error @ Error::Redis { .. }) => {
            assert!(error.to_string().contains("CLOCKSKEW"), "{error}");
            assert!(!error.is_outage());
        }
        other => panic!("{other:?}"),
    }
    // The caller's clock is used without it.
    let caller = RedisBackend::new(servers.gateway.transport())
        .with_clock(ManualClock::from_millis(EPOCH_MS));
    assert_eq!(
        caller
            .acquire("caller:gcra", 1.0, gcra)
            .await
            .unwrap()
            .reset,
        EPOCH_MS + 1_000
    );
}

#[tokio::test]
async fn failures_become_typed_errors() {
    let mut servers = Servers::start();
    let rule: Algorithm = FixedWindow::new(5, Duration::from_secs(60)).unwrap().into();

    let wrong_token =
        RedisBackend::new(HttpTransport::new(&servers.gateway.url(), "wrong").unwrap());
    assert!(matches!(
        wrong_token.acquire("e", 1.0, rule).await,
        Err(Error::Http { status: 401, .. })
    ));

    let closed = RedisBackend::new(
        HttpTransport::new(
            &format!("http://127.0.0.1:{}", test_support::free_port()),
            TOKEN,
        )
        .unwrap(),
    );
    assert!(matches!(
        closed.acquire("e", 1.0, rule).await,
        Err(Error::Network { .. })
    ));

    // A server that accepts connections and never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_url = format!("http://{}", silent.local_addr().unwrap());
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            held.push(stream);
        }
    });
    let timeout = Duration::from_millis(300);
    let slow = RedisBackend::new(
        HttpTransport::new(&silent_url, TOKEN)
            .unwrap()
            .with_timeout(Some(timeout)),
    );
    let started = std::time::Instant::now();
    assert_eq!(
        slow.acquire("e", 1.0, rule).await,
        Err(Error::Timeout { after: timeout })
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    holder.abort();

    // A server that answers 200 with something that is not the protocol.
    let garbage = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let garbage_url = format!("http://{}", garbage.local_addr().unwrap());
    let answerer = tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut stream, _)) = garbage.accept().await {
            let mut buffer = [0u8; 4096];
            let _ = stream.read(&mut buffer).await;
            let _ = stream
                .write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-length: 8\r\nconnection: close\r\n\r\nnot json",
                )
                .await;
        }
    });
    let confused = RedisBackend::new(HttpTransport::new(&garbage_url, TOKEN).unwrap());
    assert!(matches!(
        confused.acquire("e", 1.0, rule).await,
        Err(Error::MalformedReply { .. })
    ));
    answerer.abort();

    // Bad input is refused before anything is sent.
    let healthy = RedisBackend::new(servers.gateway.transport());
    assert!(matches!(
        healthy.acquire("e", 0.5, rule).await,
        Err(Error::InvalidCost { .. })
    ));
    assert!(matches!(
        healthy.acquire("e", f64::NAN, rule).await,
        Err(Error::InvalidCost { .. })
    ));

    // Redis down behind a live gateway: an HTTP 5xx, then service again once Redis is back.
    servers.redis.stop();
    match healthy.acquire("e", 1.0, rule).await {
        Err(Error::Http { status, .. }) => assert!(status >= 500, "status {status}"),
        other => panic!("expected an HTTP 5xx, got {other:?}"),
    }
    servers.redis.restart();
    let mut recovered = false;
    for _ in 0..50 {
        if healthy.acquire("e", 1.0, rule).await.is_ok() {
            recovered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        recovered,
        "the backend did not recover after Redis came back"
    );
}

#[tokio::test]
async fn a_dynamic_limit_is_read_by_each_script_atomically_and_agrees_with_memory() {
    let servers = Servers::start();
    let clock = ManualClock::from_millis(EPOCH_MS);
    let redis = Arc::new(RedisBackend::new(servers.gateway.transport()).with_clock(clock.clone()));
    let memory = MemoryBackend::new().with_clock(clock.clone());
    let limit_key = "dynamic-test:dynamic:global";
    for (index, rule) in hour_limits(3).into_iter().enumerate() {
        let key = format!("dynamic-test:{index}");
        for limit in [Some(5), None, Some(2), Some(0)] {
            redis.set_dynamic_limit(limit_key, limit).await.unwrap();
            memory.set_dynamic_limit(limit_key, limit).await.unwrap();
            assert_eq!(redis.dynamic_limit(limit_key).await.unwrap(), limit);
            redis.reset(&key, rule).await.unwrap();
            memory.reset(&key, rule).await.unwrap();
            let mut admitted = 0;
            for _ in 0..7 {
                let r = redis
                    .acquire_with_dynamic_limit(&key, 1.0, rule, limit_key)
                    .await
                    .unwrap();
                let m = memory
                    .acquire_with_dynamic_limit(&key, 1.0, rule, limit_key)
                    .await
                    .unwrap();
                assert_eq!(r, m, "{} with {limit:?}", rule.name());
                assert_eq!(r.limit, limit.unwrap_or(3), "{}", rule.name());
                admitted += u64::from(r.allowed);
            }
            assert_eq!(
                admitted,
                limit.unwrap_or(3),
                "{} with {limit:?}",
                rule.name()
            );
        }
    }

    // Sixty-four concurrent callers under a dynamic limit of 50 get exactly 50.
    redis.set_dynamic_limit(limit_key, Some(50)).await.unwrap();
    for (index, rule) in hour_limits(100).into_iter().enumerate() {
        let key = format!("dynamic-concurrent:{index}");
        let tasks: Vec<_> = (0..64)
            .map(|_| {
                let (redis, key) = (redis.clone(), key.clone());
                tokio::spawn(async move {
                    let decision = redis
                        .acquire_with_dynamic_limit(&key, 1.0, rule, limit_key)
                        .await
                        .unwrap();
                    u64::from(decision.allowed)
                })
            })
            .collect();
        let mut admitted = 0;
        for task in tasks {
            admitted += task.await.unwrap();
        }
        assert_eq!(admitted, 50, "{}", rule.name());
    }

    // A stored limit that is no number is corrupt state naming its key, not a silent default.
    command(&servers, &["SET", limit_key, "zero"])
        .await
        .unwrap();
    for rule in hour_limits(3) {
        let error = redis
            .acquire_with_dynamic_limit("dynamic-test:bad", 1.0, rule, limit_key)
            .await
            .unwrap_err();
        assert!(
            matches!(&error, Error::CorruptState { key, .. } if key == limit_key),
            "{}: {error}",
            rule.name()
        );
    }
    assert!(matches!(
        redis.dynamic_limit(limit_key).await,
        Err(Error::CorruptState { .. })
    ));
}
