//! Leases against real redis-server through the real gateway: instances with separate stores on one
//! identifier never admit past the limit, whatever the algorithm; returned leases give their units
//! back; a holder that dies loses its units only until the window ends or the bucket refills; a hot
//! identifier costs a fraction of a request per decision; a ledger holding anything but leases is
//! corrupt state, refused and kept.

#![cfg(not(target_arch = "wasm32"))]

mod support;

use edgelimit::algorithm::Algorithm;
use edgelimit::ratelimit::{Lease, Ratelimit};
use edgelimit::{
    Closing, Configure, Error, FixedWindow, Gcra, MemoryBackend, RedisBackend, Renewal,
};
use std::sync::Arc;
use std::time::Duration;
use support::{hour_limits, Counting, Servers, Traffic};

const LIMIT: u64 = 200;

fn lease(tokens: u64) -> Lease {
    Lease {
        tokens,
        ttl: Duration::from_secs(1),
    }
}

/// A leasing instance with its own store, and what its transport sends.
fn instance(
    servers: &Servers,
    rule: Algorithm,
    prefix: &str,
    tokens: u64,
) -> (Ratelimit, Arc<Traffic>) {
    let (transport, traffic) = Counting::new(servers.gateway.transport());
    let limit = Ratelimit::new(RedisBackend::new(transport), rule)
        .with_prefix(prefix)
        .with_lease(lease(tokens))
        .unwrap();
    (limit, traffic)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_leasing_instances_never_admit_past_the_limit_and_return_what_they_hold() {
    let servers = Servers::start();
    for rule in hour_limits(LIMIT) {
        let prefix = format!("lease:{}", rule.name());
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let (limit, _) = instance(&servers, rule, &prefix, 20);
            tasks.push(tokio::spawn(async move {
                let mut admitted = 0;
                for _ in 0..60 {
                    if limit.limit("hot", 1.0).await.unwrap().success {
                        admitted += 1;
                    }
                }
                limit.return_leases().await;
                admitted
            }));
        }
        let mut admitted = 0;
        for task in tasks {
            admitted += task.await.unwrap();
        }
        let name = rule.name();
        assert!(admitted <= LIMIT, "{name}: {admitted} admitted of {LIMIT}");
        // Every lease returned: a later client, which does not lease, gets the whole unused part.
        let later = Ratelimit::new(RedisBackend::new(servers.gateway.transport()), rule)
            .with_prefix(&prefix);
        let left = later.get_remaining("hot").await.unwrap().remaining as u64;
        let unused = LIMIT - admitted;
        match rule {
            Algorithm::FixedWindow(_) | Algorithm::SlidingWindow(_) => {
                assert_eq!(left, unused, "{name}: {admitted} admitted")
            }
            // The bucket and GCRA refill meanwhile (one unit in 18 s at most here).
            _ => assert!(
                (unused..=unused + 1).contains(&left),
                "{name}: {left} left, {admitted} admitted"
            ),
        }
        let mut more = 0;
        while later.limit("hot", 1.0).await.unwrap().success {
            more += 1;
        }
        assert!(admitted + more <= LIMIT + 1, "{name}");
        assert!(more >= unused, "{name}: {more} of {unused}");
    }
}

/// `store`'s decision of `cost` on `key` under `rule` with `renewal`: the outcome, the units leased and
/// the lease's id.
async fn leasing(
    store: &dyn edgelimit::Backend,
    key: &str,
    cost: edgelimit::Cost,
    rule: Algorithm,
    renewal: &Renewal,
) -> Leasing {
    let ask = edgelimit::Ask {
        key,
        cost,
        rule,
        limit_key: None,
        now: store.now_micros(),
        with: edgelimit::With::Lease(renewal),
    };
    match store.decide(&ask).await.unwrap() {
        edgelimit::Verdict::Leased { outcome, units, id } => Leasing { outcome, units, id },
        other => panic!("not a lease's answer: {other:?}"),
    }
}

/// What [`leasing`] answered.
struct Leasing {
    outcome: edgelimit::Outcome,
    units: u64,
    id: Box<str>,
}

#[tokio::test]
async fn a_hot_identifier_costs_a_fraction_of_a_request_per_decision() {
    let servers = Servers::start();
    for rule in hour_limits(10_000) {
        let prefix = format!("lease:rate:{}", rule.name());
        let (limit, traffic) = instance(&servers, rule, &prefix, 100);
        let decisions = 2_000;
        for _ in 0..decisions {
            assert!(limit.limit("hot", 1.0).await.unwrap().success);
        }
        let (requests, _, _) = traffic.take();
        let per_decision = requests as f64 / decisions as f64;
        println!("{}: {per_decision} requests per decision", rule.name());
        assert!(per_decision <= 0.1, "{}: {requests} requests", rule.name());
        // What Redis reports counts the lease as used, and this instance's own units as left.
        let remaining = limit.get_remaining("hot").await.unwrap().remaining;
        let other = Ratelimit::new(RedisBackend::new(servers.gateway.transport()), rule)
            .with_prefix(&prefix);
        let theirs = other.get_remaining("hot").await.unwrap().remaining;
        assert!(
            theirs <= remaining && remaining <= theirs + 100.0,
            "{theirs} {remaining}"
        );
        assert!(theirs <= (10_000 - decisions) as f64 + 1.0);
    }
}

#[tokio::test]
async fn a_holder_that_dies_withholds_its_units_only_until_the_window_ends_or_the_bucket_refills() {
    let servers = Servers::start();
    let second = Duration::from_secs(1);
    let rules: [Algorithm; 2] = [
        FixedWindow::new(100, second).unwrap().into(),
        Gcra::new(100, second, 100).unwrap().into(),
    ];
    for rule in rules {
        let prefix = format!("lease:dead:{}", rule.name());
        let (holder, _) = instance(&servers, rule, &prefix, 10);
        assert!(holder.limit("k", 1.0).await.unwrap().success);
        assert!(holder.limit("k", 1.0).await.unwrap().success);
        drop(holder); // dies holding its lease, never returned
        let other = Ratelimit::new(RedisBackend::new(servers.gateway.transport()), rule)
            .with_prefix(&prefix);
        tokio::time::sleep(Duration::from_millis(1_100)).await;
        let back = other.get_remaining("k").await.unwrap().remaining;
        assert_eq!(back, 100.0, "{}", rule.name());
    }
}

#[tokio::test]
async fn reset_voids_this_instances_lease_and_the_memory_store_cannot_lease() {
    let servers = Servers::start();
    let rule = hour_limits(LIMIT)[0];
    let (limit, traffic) = instance(&servers, rule, "lease:reset", 20);
    for _ in 0..3 {
        assert!(limit.limit("k", 1.0).await.unwrap().success);
    }
    limit.reset_used_tokens("k").await.unwrap();
    traffic.take();
    let first = limit.limit("k", 1.0).await.unwrap();
    assert_eq!(
        first.remaining,
        (LIMIT - 1) as f64,
        "nothing held after the reset"
    );
    assert_eq!(traffic.take().0, 1, "asked of Redis, not of a voided lease");

    let refused = Ratelimit::new(MemoryBackend::new(), rule).with_lease(lease(20));
    assert!(matches!(refused, Err(Error::Unsupported { .. })));
}

#[tokio::test]
async fn a_reset_by_another_instance_never_lets_the_fleet_admit_past_the_limit() {
    let servers = Servers::start();
    for rule in hour_limits(LIMIT) {
        let name = rule.name();
        let prefix = format!("lease:reset-fleet:{name}");
        let (holder, _) = instance(&servers, rule, &prefix, 20);
        // Hot: the holder takes a lease of 3 and spends 1 of it; it keeps 2 when another instance
        // resets, which it may still spend.
        for _ in 0..3 {
            assert!(holder.limit("k", 1.0).await.unwrap().success);
        }
        let (resetter, _) = instance(&servers, rule, &prefix, 20);
        resetter.reset_used_tokens("k").await.unwrap();
        let held = LIMIT as f64 - resetter.get_remaining("k").await.unwrap().remaining;
        assert!(held >= 1.0, "{name}: the holder's live lease is counted");
        let plain = Ratelimit::new(RedisBackend::new(servers.gateway.transport()), rule)
            .with_prefix(&prefix)
            .with_ephemeral_cache(None);
        let mut admitted = 0;
        while plain.limit("k", 1.0).await.unwrap().success {
            admitted += 1;
        }
        // The holder spends what it still holds, then asks Redis, which has nothing left.
        while holder.limit("k", 1.0).await.unwrap().success {
            admitted += 1;
        }
        holder.return_leases().await;
        // The bucket and GCRA refill meanwhile (one unit in 18 s at most here).
        assert!(
            admitted <= LIMIT + 1,
            "{name}: {admitted} admitted after the reset"
        );
        assert!(admitted >= LIMIT - 20, "{name}: {admitted}");
        assert!(
            plain.get_remaining("k").await.unwrap().remaining <= 1.0,
            "{name}"
        );
    }
}

#[tokio::test]
async fn closing_a_lease_the_ledger_no_longer_holds_gives_nothing_back() {
    let servers = Servers::start();
    let store = RedisBackend::new(servers.gateway.transport());
    let leases = edgelimit::Backend::leases(&store).unwrap();
    let store: &dyn edgelimit::Backend = &store;
    for rule in hour_limits(LIMIT) {
        let name = rule.name();
        let key = format!("lease:closed:{name}");
        let key = key.as_str();
        let one = rule.cost(1.0).unwrap();
        let renewal = |want, units: f64, ids: &[&str]| Renewal {
            want,
            ttl: Duration::from_secs(1),
            closing: Closing {
                units,
                ids: ids.iter().map(|&id| id.into()).collect(),
            },
        };
        let taken = leasing(store, key, one, rule, &renewal(10, 0.0, &[])).await;
        assert_eq!(taken.units, 10, "{name}");
        let id = taken.id.to_string();
        // What is left once `renewal` is closed.
        let peek = |renewal: Renewal| async move {
            let peeked = leasing(store, key, edgelimit::Cost::PEEK, rule, &renewal).await;
            peeked.outcome.decision.remaining
        };
        let before = peek(renewal(0, 0.0, &[])).await;
        assert!(before <= (LIMIT - 11) as f64 + 1.0, "{name}: {before}");
        // Voided by this holder's own reset: the lease is gone from the ledger and not counted.
        leases
            .reset_leases(
                key,
                rule,
                None,
                Duration::from_secs(1),
                &[id.clone().into()],
            )
            .await
            .unwrap();
        let reset = peek(renewal(0, 0.0, &[])).await;
        assert_eq!(reset, LIMIT as f64, "{name}");
        // Its holder's return (late, or from a stale copy) finds nothing: no unit is created.
        let spend = leasing(store, key, one, rule, &renewal(0, 0.0, &[])).await;
        assert!(spend.outcome.decision.allowed);
        let returned = peek(renewal(0, 10.0, &[&id])).await;
        assert_eq!(
            returned,
            (LIMIT - 1) as f64,
            "{name}: a voided lease gives nothing back"
        );
        // A live lease closed twice gives back once, and at most what it took.
        let taken = leasing(store, key, one, rule, &renewal(5, 0.0, &[])).await;
        let id = taken.id.to_string();
        let once = peek(renewal(0, 50.0, &[&id])).await;
        let twice = peek(renewal(0, 50.0, &[&id])).await;
        assert_eq!(once, (LIMIT - 2) as f64, "{name}");
        assert_eq!(twice, once, "{name}");
    }
}

#[tokio::test]
async fn idle_holders_withhold_at_most_a_tenth_of_the_limit_each() {
    let servers = Servers::start();
    for rule in hour_limits(LIMIT) {
        let prefix = format!("lease:idle:{}", rule.name());
        let mut idle = Vec::new();
        let mut admitted = 0;
        for _ in 0..4 {
            let (holder, _) = instance(&servers, rule, &prefix, 50);
            for _ in 0..2 {
                admitted += u64::from(holder.limit("k", 1.0).await.unwrap().success);
            }
            idle.push(holder); // alive, holding its lease, and sending nothing more
        }
        let busy = Ratelimit::new(RedisBackend::new(servers.gateway.transport()), rule)
            .with_prefix(&prefix)
            .with_ephemeral_cache(None); // asks Redis again after its denial
        while busy.limit("k", 1.0).await.unwrap().success {
            admitted += 1;
        }
        let withheld = LIMIT - admitted;
        println!(
            "{}: {withheld} of {LIMIT} withheld by 4 idle holders",
            rule.name()
        );
        assert!(withheld <= 4 * LIMIT / 10, "{}: {withheld}", rule.name());
        // Once the idle holders return what they hold, it is admitted again.
        for holder in &idle {
            holder.return_leases().await;
        }
        let mut more = 0;
        while busy.limit("k", 1.0).await.unwrap().success {
            more += 1;
        }
        // The fixed window counts the busy client's denied request too, as the peer does.
        let denied_counted = u64::from(matches!(rule, Algorithm::FixedWindow(_)));
        assert_eq!(more, withheld - denied_counted, "{}", rule.name());
    }
}

#[tokio::test]
async fn a_lease_takes_at_most_what_a_window_admits_whatever_credit_the_peer_left() {
    let servers = Servers::start();
    let hour = Duration::from_secs(3600);
    let rule = FixedWindow::new(100, hour).unwrap();
    let store = RedisBackend::new(servers.gateway.transport());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64;
    let key = format!("lease:credit:{}", rule.window_index(now));
    // The peer's refunds left credit: the counter is below zero.
    support::command(&servers, &["SET", &key, "-5"])
        .await
        .unwrap();
    let algorithm = Algorithm::from(rule);
    let renewal = Renewal {
        want: 10,
        ttl: Duration::from_secs(1),
        closing: Closing::default(),
    };
    let cost = algorithm.cost(95.0).unwrap();
    let leased = leasing(&store, "lease:credit", cost, algorithm, &renewal).await;
    assert!(leased.outcome.decision.allowed);
    assert_eq!(leased.units, 5, "95 + 5 is what a window of 100 admits");
    let stored = support::command(&servers, &["GET", &key]).await.unwrap();
    assert_eq!(stored, serde_json::json!("95"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_redis_cluster_the_ledger_shares_the_identifiers_slot() {
    let cluster = test_support::Cluster::start(5_000);
    let tokens =
        std::env::temp_dir().join(format!("edgelimit-lease-tokens-{}", std::process::id()));
    let token = test_support::TOKEN;
    std::fs::write(&tokens, format!("{token} cluster:{} rw\n", cluster.urls())).unwrap();
    let gateway = test_support::Gateway::start_with(&["--tokens", tokens.to_str().unwrap()]);
    let _ = std::fs::remove_file(&tokens);
    let transport = || {
        edgelimit::transport::HttpTransport::new(&gateway.url(), token)
            .unwrap()
            .with_timeout(Some(Duration::from_secs(10)))
    };
    for rule in hour_limits(LIMIT) {
        let name = rule.name();
        let prefix = format!("lease-cl:{name}");
        let limits: Vec<Ratelimit> = (0..4)
            .map(|_| {
                Ratelimit::new(RedisBackend::new(transport()), rule)
                    .with_prefix(&prefix)
                    .with_key_layout(edgelimit::KeyLayout::Cluster)
                    .with_lease(lease(20))
                    .unwrap()
            })
            .collect();
        for identifier in ["a", "b", "c"] {
            let mut admitted = 0;
            for _ in 0..80 {
                for limit in &limits {
                    admitted += u64::from(limit.limit(identifier, 1.0).await.unwrap().success);
                }
            }
            assert!(admitted <= LIMIT, "{name} {identifier}: {admitted}");
            assert!(
                admitted >= LIMIT - 4 * 20,
                "{name} {identifier}: {admitted}"
            );
            limits[0].reset_used_tokens(identifier).await.unwrap();
            for limit in &limits {
                limit.return_leases().await;
            }
            let left = limits[1].get_remaining(identifier).await.unwrap().remaining;
            assert!(left >= (LIMIT - 1) as f64, "{name} {identifier}: {left}");
        }
    }
}

#[tokio::test]
async fn a_ledger_that_is_no_ledger_is_corrupt_state_to_decisions_and_resets_and_is_kept() {
    let servers = Servers::start();
    let junk: [&[&str]; 3] = [
        &["SET", "not a hash"],
        &["HSET", "1.1", "three words here"],
        &["HSET", "1.1", "5 9 x"],
    ];
    for rule in hour_limits(LIMIT) {
        let prefix = format!("lease:corrupt:{}", rule.name());
        for (index, words) in junk.iter().enumerate() {
            let identifier = format!("ledger-{index}");
            let ledger = format!("edgelimit-lease|{prefix}:{identifier}");
            let mut command = vec![words[0], ledger.as_str()];
            command.extend_from_slice(&words[1..]);
            support::command(&servers, &command).await.unwrap();
            let before = support::command(&servers, &["DUMP", &ledger])
                .await
                .unwrap();
            let (limit, _) = instance(&servers, rule, &prefix, 20);
            let name = rule.name();
            // The first decisions do not lease (the identifier is not hot yet) and leave the
            // ledger alone; the first that leases reads it.
            let mut decided = Ok(());
            for _ in 0..10 {
                decided = limit.limit(&identifier, 1.0).await.map(|_| ());
                if decided.is_err() {
                    break;
                }
            }
            match decided {
                Err(Error::CorruptState { key, message }) => {
                    assert_eq!(key, ledger, "{name} {index}: {message}");
                    assert!(message.contains("lease"), "{name} {index}: {message}");
                }
                other => panic!("{name} {index}: {other:?}"),
            }
            // A reset of a leasing limit reads the ledger too, to keep others' live leases counted.
            match limit.reset_used_tokens(&identifier).await {
                Err(Error::CorruptState { key, .. }) => assert_eq!(key, ledger, "{name} {index}"),
                other => panic!("{name} {index}: reset {other:?}"),
            }
            let after = support::command(&servers, &["DUMP", &ledger])
                .await
                .unwrap();
            assert_eq!(before, after, "{name} {index}: the ledger was changed");
        }
    }
}
