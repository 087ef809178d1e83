//! `Ratelimit` and `MultiRegionRatelimit` on a Redis Cluster (three masters, three replicas of real
//! redis-server) behind the gateway's `--redis-cluster`: the cluster key layout admits exactly the
//! limit under concurrency and spreads identifiers over every master; the default layout is refused
//! by the cluster with an error naming the option, in either fail mode; the keys shared by every
//! identifier (deny list, analytics events, dynamic limit, `MultiRegionRatelimit`'s too) are reached
//! beside the script; a master killed while clients decide loses no admitted request. A set of
//! several limits keeps every key of a decision in the identifier's slot, dynamic limits read first.
//!
//! One cluster serves the tests that leave it whole, in one test function; the failover test kills a
//! master of its own. A cluster of six is the slow part, so they run one at a time ([`Cluster`]).

#![cfg(not(target_arch = "wasm32"))]

mod support;

use edgelimit::algorithm::Algorithm;
use edgelimit::multi_region::MultiRegionRatelimit;
use edgelimit::ratelimit::{analytics, FailMode, Limit, Ratelimit, Reason, Request, Response};
use edgelimit::redis::{Reply, RestClient};
use edgelimit::transport::HttpTransport;
use edgelimit::Configure;
use edgelimit::{Error, FixedWindow, KeyLayout, RedisBackend, SlidingWindow};
use futures::future::join_all;
use std::time::Duration;
use support::{hour_limits, Counting};
use test_support::{Cluster, Gateway, TOKEN};

/// The second token of the gateway, reaching the same cluster (a second "region").
const OTHER_TOKEN: &str = "0th3r";

/// How many callers ask at once.
const CALLERS: usize = 64;

/// The limit of every test.
const LIMIT: u64 = 10;

/// A transport to `gateway` with `token`.
fn transport(gateway: &Gateway, token: &str) -> HttpTransport {
    HttpTransport::new(&gateway.url(), token)
        .unwrap()
        .with_timeout(Some(Duration::from_secs(10)))
}

/// A limit of `rule` under `prefix` through `gateway`, without an ephemeral cache (every call reaches
/// Redis), in `layout`, on Redis's clock (so that concurrent calls are decided in the order of their
/// times, and GCRA admits its whole burst).
fn limit(gateway: &Gateway, rule: Algorithm, prefix: &str, layout: KeyLayout) -> Ratelimit {
    Ratelimit::new(
        RedisBackend::new(transport(gateway, TOKEN)).with_redis_time(true),
        rule,
    )
    .with_prefix(prefix)
    .with_ephemeral_cache(None)
    .with_key_layout(layout)
}

/// Whether `response` admitted, checking that Redis decided it (not the fail mode).
fn decided(response: Response) -> edgelimit::Result<bool> {
    assert_eq!(response.reason, None, "{response:?}");
    Ok(response.success)
}

/// How many of [`CALLERS`] concurrent `call`s were admitted.
async fn admitted<F: std::future::Future<Output = edgelimit::Result<bool>>>(
    call: impl Fn() -> F,
) -> usize {
    let answers = join_all((0..CALLERS).map(|_| call())).await;
    answers
        .into_iter()
        .map(|answer| answer.expect("no error with the cluster layout"))
        .filter(|&success| success)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_redis_cluster() {
    let cluster = Cluster::start(5_000);
    let tokens =
        std::env::temp_dir().join(format!("edgelimit-cluster-tokens-{}", std::process::id()));
    std::fs::write(
        &tokens,
        format!(
            "{TOKEN} cluster:{urls} rw\n{OTHER_TOKEN} cluster:{urls} rw\n",
            urls = cluster.urls()
        ),
    )
    .unwrap();
    let gateway = Gateway::start_with(&["--tokens", tokens.to_str().unwrap()]);
    let _ = std::fs::remove_file(&tokens);

    every_algorithm_admits_exactly_its_limit_over_every_master(&cluster, &gateway).await;
    the_default_layout_is_refused_naming_the_option(&gateway).await;
    the_multi_region_mode_keeps_its_keys_in_one_slot(&gateway).await;
    the_deny_list_is_checked_in_the_same_request_and_counted(&gateway).await;
    dynamic_limits_are_read_first_and_rounded_as_the_scripts_round_them(&gateway).await;
    multi_region_dynamic_limits_are_read_first_in_each_region(&gateway).await;
    a_set_of_limits_keeps_a_decision_in_one_slot(&gateway).await;
}

/// Several limits under their own prefixes decide in one script with the cluster layout (the hash tag
/// puts every limit's keys of an identifier in its slot), each one's dynamic limit read first; the
/// default layout is refused naming the option, as for one limit.
async fn a_set_of_limits_keeps_a_decision_in_one_slot(gateway: &Gateway) {
    let [fixed, sliding, bucket, gcra] = <[Algorithm; 4]>::try_from(hour_limits(LIMIT)).unwrap();
    let set = |layout| {
        limit(gateway, sliding, "cl-set", layout)
            .with_dynamic_limits(true)
            .with_limit(Limit::new(fixed).with_prefix("cl-set-2"))
            .and_then(|set| set.with_limit(Limit::new(gcra.with_capacity(4).unwrap())))
            .and_then(|set| set.with_limit(Limit::new(bucket).with_prefix("cl-set-4")))
            .unwrap()
    };
    let cluster = set(KeyLayout::Cluster);
    command(gateway, &["SET", "cl-set-2:dynamic:global", "6"]).await;
    let count = admitted(|| async { decided(cluster.limit("user:1", 1.0).await?) }).await;
    assert_eq!(count, 4, "the GCRA of 4 binds");
    let left = cluster.get_remaining("user:1").await.unwrap();
    let each: Vec<(f64, u64)> = (left.limits.iter())
        .map(|l| (l.remaining, l.limit))
        .collect();
    assert_eq!(each, [(6.0, 10), (2.0, 6), (0.0, 4), (6.0, 10)]);
    cluster.reset_used_tokens("user:1").await.unwrap();
    assert_eq!(
        cluster.get_remaining("user:1").await.unwrap().remaining,
        4.0
    );
    let error = set(KeyLayout::Upstash)
        .limit("user:1", 1.0)
        .await
        .unwrap_err();
    assert!(matches!(error, Error::CrossSlot { .. }), "{error}");
}

/// `command` sent to the cluster through `gateway`.
async fn command(gateway: &Gateway, command: &[&str]) -> Reply {
    let client = RestClient::new(transport(gateway, TOKEN));
    client.command(command).await.unwrap()
}

/// Waits for the next hour when less than `span` is left of this one, so that the events of a test
/// that takes less than `span` fall in one hourly bucket.
async fn in_one_hour_for(span: Duration) {
    const HOUR_MS: u128 = 3_600_000;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let left = Duration::from_millis((HOUR_MS - now % HOUR_MS) as u64);
    if left < span {
        tokio::time::sleep(left + Duration::from_millis(100)).await;
    }
}

/// The deny list by an `SMISMEMBER` in the decision's request, a denied request counted as the peer
/// counts it, the denied value remembered, and every answer's event in the pending work, read back.
async fn the_deny_list_is_checked_in_the_same_request_and_counted(gateway: &Gateway) {
    let prefix = "cl-guard";
    let (counting, traffic) = Counting::new(transport(gateway, TOKEN));
    let rule = FixedWindow::new(3, Duration::from_secs(3600)).unwrap();
    let limiter = Ratelimit::new(RedisBackend::new(counting), rule)
        .with_prefix(prefix)
        .with_ephemeral_cache(None)
        .with_key_layout(KeyLayout::Cluster)
        .with_protection(true)
        .unwrap()
        .with_analytics(true);
    let deny_key = format!("{prefix}:denyList:all");
    command(gateway, &["SADD", &deny_key, "bad-id", "6.6.6.6"]).await;
    in_one_hour_for(Duration::from_secs(20)).await;
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let (warm, _) = limiter
        .limit_request("warm", 1.0, &Request::default())
        .await
        .unwrap();
    assert!(warm.success, "{warm:?}");
    // Loads the script on u1's master (EVALSHA, then EVAL): every master has its own scripts.
    limiter.get_remaining("u1").await.unwrap();
    traffic.take();

    let bad_ip = Request {
        ip: Some("6.6.6.6"),
        ..Request::default()
    };
    let answer = limiter
        .limit_request_with_pending("u1", 1.0, &bad_ip)
        .await
        .unwrap();
    assert_eq!(traffic.take().0, 1, "the check travels with the decision");
    assert_eq!(answer.denied_value.as_deref(), Some("6.6.6.6"));
    let denied = answer.response;
    assert_eq!(
        (denied.success, denied.reason),
        (false, Some(Reason::DenyList))
    );
    assert_eq!((denied.limit, denied.remaining), (3, 0.0), "{denied:?}");
    answer.pending.expect("the denied value's event").await;
    assert_eq!(traffic.take().0, 1, "the event, after the answer");
    assert_eq!(limiter.get_remaining("u1").await.unwrap().remaining, 2.0);
    assert_eq!(limiter.cached_denied_values(), 1);
    traffic.take();
    let (again, value) = limiter.limit_request("u1", 1.0, &bad_ip).await.unwrap();
    assert_eq!(
        (again.reason, value.as_deref()),
        (Some(Reason::DenyList), Some("6.6.6.6"))
    );
    assert_eq!(traffic.take().0, 1, "remembered: only its event is written");
    let (admitted, _) = limiter
        .limit_request("u2", 1.0, &Request::default())
        .await
        .unwrap();
    assert!(
        admitted.success && admitted.reason.is_none(),
        "{admitted:?}"
    );
    let (by_id, value) = limiter
        .limit_request("bad-id", 1.0, &Request::default())
        .await
        .unwrap();
    assert_eq!((by_id.success, value.as_deref()), (false, Some("bad-id")));

    let key = analytics::events_key(prefix, before);
    let events = command(gateway, &["ZRANGE", &key, "0", "-1", "WITHSCORES"]).await;
    let events = events.to_string();
    for expected in [
        r#""{\"identifier\":\"warm\",\"success\":true}","1""#,
        r#""{\"identifier\":\"u2\",\"success\":true}","1""#,
        r#""{\"identifier\":\"6.6.6.6\",\"success\":\"denied\"}","2""#,
        r#""{\"identifier\":\"bad-id\",\"success\":\"denied\"}","1""#,
    ] {
        assert!(events.contains(expected), "{expected} not in {events}");
    }
}

/// A dynamic limit read by a `GET` before the script: 2.5 admits 3 under the sliding window and 2
/// under the fixed window, 0 and a negative limit pause, and `set_dynamic_limit` reads back.
async fn dynamic_limits_are_read_first_and_rounded_as_the_scripts_round_them(gateway: &Gateway) {
    let hour = Duration::from_secs(3600);
    let rules: [(Algorithm, u64); 2] = [
        (SlidingWindow::new(10, hour).unwrap().into(), 3),
        (FixedWindow::new(10, hour).unwrap().into(), 2),
    ];
    for (rule, admits) in rules {
        let prefix = format!("cl-dyn-{}", rule.name().replace(' ', "-"));
        let (counting, traffic) = Counting::new(transport(gateway, TOKEN));
        let limiter = Ratelimit::new(RedisBackend::new(counting).with_redis_time(true), rule)
            .with_prefix(&prefix)
            .with_ephemeral_cache(None)
            .with_key_layout(KeyLayout::Cluster)
            .with_dynamic_limits(true);
        let limit_key = format!("{prefix}:dynamic:global");
        command(gateway, &["SET", &limit_key, "2.5"]).await;
        decided(limiter.limit("warm", 0.0).await.unwrap()).unwrap();
        traffic.take();
        let mut count = 0;
        for _ in 0..5 {
            let response = limiter.limit("u", 1.0).await.unwrap();
            assert_eq!(response.limit, admits, "{rule:?}");
            count += usize::from(decided(response).unwrap());
        }
        assert_eq!(count, admits as usize, "{rule:?} under 2.5");
        assert_eq!(traffic.take().0, 10, "a GET, then the script");
        for paused in ["0", "-1"] {
            command(gateway, &["SET", &limit_key, paused]).await;
            let response = limiter.limit("p", 1.0).await.unwrap();
            assert_eq!((response.success, response.limit), (false, 0), "{paused}");
        }
        limiter.set_dynamic_limit(Some(4)).await.unwrap();
        assert_eq!(limiter.dynamic_limit().await.unwrap(), Some(4));
        let response = limiter.limit("p", 1.0).await.unwrap();
        assert_eq!((response.success, response.limit), (true, 4), "{rule:?}");
        limiter.set_dynamic_limit(None).await.unwrap();
        assert_eq!(limiter.limit("p", 1.0).await.unwrap().limit, 10);
    }
}

/// `MultiRegionRatelimit`'s dynamic limit on the cluster layout, read by a `GET` in each region before
/// its script, rounded as the multi-region scripts round it with the default layout: 2.5 admits 2
/// under every algorithm (the multi-region sliding window rounds down, unlike `Ratelimit`'s), 0 and a
/// negative limit pause, and `set_dynamic_limit` reaches every region and reads back.
async fn multi_region_dynamic_limits_are_read_first_in_each_region(gateway: &Gateway) {
    for rule in hour_limits(10) {
        let prefix = format!("cl-mr-dyn-{}", rule.name().replace(' ', "-"));
        let (counting, traffic) = Counting::new(transport(gateway, TOKEN));
        let limiter = MultiRegionRatelimit::new(vec![counting], rule)
            .unwrap()
            .with_prefix(&prefix)
            .with_ephemeral_cache(None)
            .with_dynamic_limits(true)
            .with_key_layout(KeyLayout::Cluster);
        let limit_key = format!("{prefix}:dynamic:global");
        command(gateway, &["SET", &limit_key, "2.5"]).await;
        decided(limiter.limit("warm", 0.0).await.unwrap()).unwrap();
        traffic.take();
        let mut count = 0;
        for _ in 0..5 {
            let response = limiter.limit("u", 1.0).await.unwrap();
            assert_eq!(response.limit, 2, "{rule:?}");
            count += usize::from(decided(response).unwrap());
        }
        assert_eq!(count, 2, "{rule:?} under 2.5");
        assert_eq!(traffic.take().0, 10, "a GET, then the script");
        for paused in ["0", "-1"] {
            command(gateway, &["SET", &limit_key, paused]).await;
            let response = limiter.limit("p", 1.0).await.unwrap();
            assert_eq!((response.success, response.limit), (false, 0), "{paused}");
            assert_eq!(response.reason, None, "{paused}");
        }

        // Two regions (two tokens, one cluster): the limit is written to both and read in each.
        let two = MultiRegionRatelimit::new(
            vec![transport(gateway, TOKEN), transport(gateway, OTHER_TOKEN)],
            rule,
        )
        .unwrap()
        .with_prefix(&prefix)
        .with_ephemeral_cache(None)
        .with_key_layout(KeyLayout::Cluster)
        .with_dynamic_limits(true);
        two.set_dynamic_limit(Some(4)).await.unwrap();
        assert_eq!(two.dynamic_limit().await.unwrap(), Some(4));
        assert_eq!(limiter.dynamic_limit().await.unwrap(), Some(4));
        let response = two.limit("p", 1.0).await.unwrap();
        assert_eq!((response.success, response.limit), (true, 4), "{rule:?}");
        two.set_dynamic_limit(None).await.unwrap();
        assert_eq!(two.dynamic_limit().await.unwrap(), None);
        assert_eq!(two.limit("p", 1.0).await.unwrap().limit, 10, "{rule:?}");
    }
}

/// 64 callers per identifier, 8 identifiers, each algorithm: exactly the limit each, keys on every
/// master, and a reset that empties an identifier's keys.
async fn every_algorithm_admits_exactly_its_limit_over_every_master(
    cluster: &Cluster,
    gateway: &Gateway,
) {
    let identifiers: Vec<String> = (0..8).map(|i| format!("user:{i}")).collect();
    for rule in hour_limits(LIMIT) {
        let prefix = format!("cl-{}", rule.name());
        let limit = limit(gateway, rule, &prefix, KeyLayout::Cluster);
        // One peek per identifier, one after the other, loads the script on each master: the first
        // calls' EVALs, coalesced, would otherwise carry every caller's copy of the script in one
        // request, past the gateway's 1 MiB body limit (the fail mode would answer them).
        for identifier in &identifiers {
            decided(limit.limit(identifier, 0.0).await.unwrap()).unwrap();
        }
        let counts =
            join_all(identifiers.iter().map(|identifier| {
                admitted(|| async { decided(limit.limit(identifier, 1.0).await?) })
            }))
            .await;
        assert_eq!(counts, vec![LIMIT as usize; identifiers.len()], "{rule:?}");
        for identifier in &identifiers {
            let remaining = limit.get_remaining(identifier).await.unwrap();
            assert_eq!(remaining.remaining, 0.0, "{rule:?} {identifier}");
        }
        limit.reset_used_tokens(&identifiers[0]).await.unwrap();
        let remaining = limit.get_remaining(&identifiers[0]).await.unwrap();
        assert_eq!(remaining.remaining, LIMIT as f64, "{rule:?} after a reset");
    }
    let masters = cluster.masters();
    let sizes: Vec<u64> = masters.iter().map(|&port| cluster.dbsize(port)).collect();
    assert_eq!(sizes.len(), 3);
    assert!(
        sizes.iter().all(|&keys| keys > 0),
        "keys per master: {sizes:?}"
    );
}

/// The sliding window's two keys, in the default layout, are in two slots.
async fn the_default_layout_is_refused_naming_the_option(gateway: &Gateway) {
    let sliding = hour_limits(LIMIT)[1];
    for mode in [FailMode::Open, FailMode::Closed] {
        let limit = limit(gateway, sliding, "cl-default", KeyLayout::Upstash).with_fail_mode(mode);
        let error = limit.limit("user:1", 1.0).await.unwrap_err();
        assert!(matches!(error, Error::CrossSlot { .. }), "{error}");
        let message = error.to_string();
        assert!(message.contains("CROSSSLOT"), "{message}");
        assert!(message.contains("KeyLayout::Cluster"), "{message}");
        assert!(message.contains(r#"keys: "cluster""#), "{message}");
    }
}

/// `MultiRegionRatelimit`'s decisions, merges and resets on the cluster, in one and two regions.
async fn the_multi_region_mode_keeps_its_keys_in_one_slot(gateway: &Gateway) {
    for rule in hour_limits(LIMIT) {
        let regions = |tokens: &[&str]| {
            let transports = tokens
                .iter()
                .map(|token| transport(gateway, token))
                .collect();
            MultiRegionRatelimit::new(transports, rule)
                .unwrap()
                .with_prefix(format!("cl-mr-{}", rule.name()))
                .with_ephemeral_cache(None)
                .with_key_layout(KeyLayout::Cluster)
        };
        // One region: exactly the limit.
        let one = regions(&[TOKEN]);
        decided(one.limit("solo", 0.0).await.unwrap()).unwrap();
        let count = admitted(|| async { decided(one.limit("solo", 1.0).await?) }).await;
        assert_eq!(count, LIMIT as usize, "one region, {rule:?}");
        // Two regions on the same cluster decide on the same hashes, and merge into them: every call
        // decided without error, never more than the limit admitted (which region answers first
        // decides how many: a request one region denied and the other admitted is counted unanswered).
        let two = regions(&[TOKEN, OTHER_TOKEN]);
        let count = admitted(|| async { decided(two.limit("pair", 1.0).await?) }).await;
        assert!(count <= LIMIT as usize, "two regions, {rule:?}: {count}");
        two.reset_used_tokens("pair").await.unwrap();
        assert_eq!(
            two.get_remaining("pair").await.unwrap().remaining,
            LIMIT as f64,
            "{rule:?} after a reset"
        );
    }
}

/// 32 clients decide through the gateway while a master is killed: every call is answered (the fail
/// mode while the dead master's slots have none), no request Redis admitted is missing from its
/// identifier's count afterwards, and the gateway decides again once the replica has taken over,
/// without a restart. The window of failed calls is printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_killed_while_clients_decide_loses_no_admitted_request() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Instant;

    const LARGE: u64 = 1_000_000;
    let mut cluster = Cluster::start(1_000);
    let gateway = Gateway::start_with(&[
        "--redis-cluster",
        &cluster.urls(),
        "--token",
        TOKEN,
        "--timeout-ms",
        "2000",
    ]);
    let rule = FixedWindow::new(LARGE, Duration::from_secs(3600)).unwrap();
    let limiter = Arc::new(
        limit(&gateway, rule.into(), "cl-failover", KeyLayout::Cluster)
            .with_fail_mode(FailMode::Closed),
    );
    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..32)
        .map(|client| {
            let (limiter, stop) = (Arc::clone(&limiter), Arc::clone(&stop));
            tokio::spawn(async move {
                let identifier = format!("client-{client}");
                let (mut admitted, mut failed) = (0u64, Vec::new());
                while !stop.load(Ordering::Relaxed) {
                    let sent = started.elapsed();
                    let response = limiter.limit(&identifier, 1.0).await.unwrap();
                    match response.reason {
                        None if response.success => admitted += 1,
                        None => panic!("denied under a limit never reached: {response:?}"),
                        Some(reason) => {
                            assert!(!response.success, "the closed fail mode admitted");
                            assert!(matches!(reason, Reason::Error | Reason::Timeout));
                            failed.push((sent, started.elapsed()));
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                    }
                }
                (identifier, admitted, failed)
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    let victim = cluster.masters()[0];
    let killed_at = started.elapsed();
    cluster.kill(victim);
    tokio::task::block_in_place(|| cluster.wait_ok(Duration::from_secs(30)));
    let healed_at = started.elapsed();
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    stop.store(true, Ordering::Relaxed);

    let (mut total, mut failures) = (0, Vec::new());
    for client in clients {
        let (identifier, admitted, mut failed) = client.await.unwrap();
        let counted = LARGE as f64 - limiter.get_remaining(&identifier).await.unwrap().remaining;
        assert!(
            counted >= admitted as f64,
            "{identifier}: {admitted} admitted, {counted} counted"
        );
        let after = limiter.limit(&identifier, 1.0).await.unwrap();
        assert!(after.success && after.reason.is_none(), "{after:?}");
        total += admitted;
        failures.append(&mut failed);
    }
    let window = failures
        .iter()
        .map(|f| f.0)
        .min()
        .zip(failures.iter().map(|f| f.1).max());
    eprintln!(
        "failover: master :{victim} killed at {killed_at:?}, cluster whole at {healed_at:?}; \
         {total} admitted, all counted; {} calls failed (closed), sent/answered within {window:?}",
        failures.len()
    );
}
