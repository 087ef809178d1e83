//! Protection (the deny list) and analytics of `Ratelimit` against real redis-server through the real
//! gateway: the guarded scripts, one request per decision, nothing counted for a denied value, the
//! events core-analytics reads.

#![cfg(not(target_arch = "wasm32"))]

mod support;

use edgelimit::ratelimit::{analytics, Ratelimit, Reason, Request};
use edgelimit::redis::GUARDED_SCRIPTS;
use edgelimit::Configure;
use edgelimit::{Error, FixedWindow, MemoryBackend, RedisBackend};
use serde_json::{json, Value};
use std::time::Duration;
use support::{command, hour_limits, now_ms, Counting, Servers};

#[tokio::test]
async fn every_guarded_script_loads_on_redis_under_the_sha_the_crate_computes() {
    let servers = Servers::start();
    for script in GUARDED_SCRIPTS {
        let sha = command(&servers, &["SCRIPT", "LOAD", script.source()])
            .await
            .unwrap();
        assert_eq!(sha, json!(script.sha1()), "{}", script.name());
    }
}

#[tokio::test]
async fn a_denied_value_is_answered_in_one_request_without_counting() {
    let servers = Servers::start();
    for (index, rule) in hour_limits(3).into_iter().enumerate() {
        let prefix = format!("protect{index}");
        let (transport, traffic) = Counting::new(servers.gateway.transport());
        let limiter = Ratelimit::new(RedisBackend::new(transport), rule)
            .with_prefix(&prefix)
            .with_ephemeral_cache(None)
            .with_protection(true)
            .unwrap();
        let deny_key = format!("{prefix}:denyList:all");
        command(
            &servers,
            &["SADD", &deny_key, "bad-id", "6.6.6.6", "evil-agent", "XX"],
        )
        .await
        .unwrap();
        let request = |ip, user_agent, country| Request {
            ip,
            user_agent,
            country,
            geo: &[],
        };
        // The first call loads the script (EVALSHA, then EVAL); every call after is one request.
        let (first, _) = limiter
            .limit_request("warm", 1.0, &Request::default())
            .await
            .unwrap();
        assert!(first.success);
        traffic.take();
        for (identifier, request, denied) in [
            ("bad-id", request(None, None, None), "bad-id"),
            ("u1", request(Some("6.6.6.6"), None, None), "6.6.6.6"),
            (
                "u2",
                request(Some("1.1.1.1"), Some("evil-agent"), None),
                "evil-agent",
            ),
            ("u3", request(None, Some("ok-agent"), Some("XX")), "XX"),
        ] {
            let (response, value) = limiter
                .limit_request(identifier, 1.0, &request)
                .await
                .unwrap();
            assert_eq!(traffic.take().0, 1, "{}: one request", rule.name());
            assert_eq!(value.as_deref(), Some(denied), "{}", rule.name());
            assert_eq!(
                (
                    response.success,
                    response.limit,
                    response.remaining,
                    response.reset
                ),
                (false, 0, 0.0, 0)
            );
            assert_eq!(response.reason, Some(Reason::DenyList));
            assert_eq!(response.retry_after, None);
            // Nothing was counted: the identifier still has its whole limit.
            assert_eq!(
                limiter.get_remaining(identifier).await.unwrap().remaining,
                3.0
            );
            traffic.take();
            // Remembered: answered again without a request.
            let (again, value) = limiter
                .limit_request(identifier, 1.0, &request)
                .await
                .unwrap();
            assert_eq!(
                (again.reason, value.as_deref()),
                (Some(Reason::DenyList), Some(denied))
            );
            assert_eq!(traffic.take().0, 0, "{}: from the cache", rule.name());
        }
        assert_eq!(limiter.cached_denied_values(), 4);
        // A clean request is counted as without protection, in one request.
        for left in [2.0, 1.0, 0.0] {
            let (response, value) = limiter
                .limit_request("u9", 1.0, &request(Some("1.1.1.1"), Some("ok"), Some("DE")))
                .await
                .unwrap();
            assert!(response.success && value.is_none());
            assert_eq!(response.remaining, left, "{}", rule.name());
        }
        let (limited, _) = limiter
            .limit_request("u9", 1.0, &Request::default())
            .await
            .unwrap();
        assert!(!limited.success && limited.reason.is_none());
        assert_eq!(traffic.take().0, 4);
    }
}

#[tokio::test]
async fn analytics_are_recorded_as_core_analytics_reads_them_in_the_same_request() {
    let servers = Servers::start();
    let (transport, traffic) = Counting::new(servers.gateway.transport());
    let rule = FixedWindow::new(3, Duration::from_secs(3600)).unwrap();
    let limiter = Ratelimit::new(RedisBackend::new(transport), rule)
        .with_prefix("stats")
        .with_ephemeral_cache(None)
        .with_analytics(true)
        .with_protection(true)
        .unwrap();
    command(&servers, &["SADD", "stats:denyList:all", "9.9.9.9"])
        .await
        .unwrap();
    let geo = [("country", "DE"), ("city", "Berlin")];
    let request = Request {
        geo: &geo,
        ..Request::default()
    };
    limiter
        .limit_request("warm", 0.0, &Request::default())
        .await
        .unwrap();
    traffic.take();
    let before = now_ms();
    for _ in 0..5 {
        limiter.limit_request("user", 1.0, &request).await.unwrap();
    }
    assert_eq!(traffic.take().0, 5, "each event travels with its decision");
    let denied = Request {
        ip: Some("9.9.9.9"),
        geo: &geo,
        ..Request::default()
    };
    limiter.limit_request("user", 1.0, &denied).await.unwrap();
    let after = now_ms();
    // Across an hour's end the events split between two buckets: read both.
    let mut counts = serde_json::Map::new();
    for key in [
        analytics::events_key("stats", before),
        analytics::events_key("stats", after),
    ] {
        let found = command(&servers, &["ZRANGE", &key, "0", "-1", "WITHSCORES"])
            .await
            .unwrap();
        for pair in found.as_array().unwrap().chunks(2) {
            let member = pair[0].as_str().unwrap().to_owned();
            let score: u64 = pair[1].as_str().unwrap().parse().unwrap();
            let total = counts.get(&member).and_then(Value::as_u64).unwrap_or(0) + score;
            counts.insert(member, json!(total));
        }
        if before / 3_600_000 == after / 3_600_000 {
            break;
        }
    }
    assert_eq!(
        Value::Object(counts),
        json!({
            r#"{"identifier":"warm","success":true}"#: 1,
            r#"{"identifier":"user","success":true,"country":"DE","city":"Berlin"}"#: 3,
            r#"{"identifier":"user","success":false,"country":"DE","city":"Berlin"}"#: 2,
            r#"{"identifier":"9.9.9.9","success":"denied","country":"DE","city":"Berlin"}"#: 1,
        })
    );
}

#[tokio::test]
async fn answers_given_without_redis_record_their_event_in_the_pending_work() {
    let servers = Servers::start();
    let rule = FixedWindow::new(1, Duration::from_secs(3600)).unwrap();
    let limiter = Ratelimit::new(RedisBackend::new(servers.gateway.transport()), rule)
        .with_prefix("pending")
        .with_analytics(true);
    let key = || analytics::events_key("pending", now_ms());
    assert!(limiter.limit("u", 1.0).await.unwrap().success);
    assert!(!limiter.limit("u", 1.0).await.unwrap().success);
    let answer = limiter
        .limit_request_with_pending("u", 1.0, &Request::default())
        .await
        .unwrap();
    assert_eq!(answer.response.reason, Some(Reason::CacheBlock));
    let member = r#"{"identifier":"u","success":false}"#;
    let before = command(&servers, &["ZSCORE", &key(), member])
        .await
        .unwrap();
    answer
        .pending
        .expect("the event of a cached block is pending")
        .await;
    let after = command(&servers, &["ZSCORE", &key(), member])
        .await
        .unwrap();
    let score = |value: Value| {
        value
            .as_str()
            .map_or(0, |text| text.parse::<u64>().unwrap())
    };
    assert_eq!(score(after), score(before) + 1);
}

#[tokio::test]
async fn protection_needs_a_store_that_has_it_and_no_local_counts() {
    let rule = FixedWindow::new(5, Duration::from_secs(3600)).unwrap();
    let limiter = Ratelimit::new(MemoryBackend::new(), rule)
        .with_protection(true)
        .unwrap();
    let error = limiter.limit("u", 1.0).await.unwrap_err();
    assert!(matches!(error, Error::Unsupported { .. }), "{error}");
    let error = Ratelimit::new(MemoryBackend::new(), rule)
        .with_local_counts(10)
        .unwrap()
        .with_protection(true)
        .err()
        .expect("local counts answer without the deny list");
    assert!(matches!(error, Error::Unsupported { .. }), "{error}");
    let analytics = Ratelimit::new(MemoryBackend::new(), rule).with_analytics(true);
    assert!(matches!(
        analytics.limit("u", 1.0).await,
        Err(Error::Unsupported { .. })
    ));
}

#[tokio::test]
async fn the_guarded_scripts_read_the_dynamic_limit_and_the_redis_clock_as_the_plain_ones() {
    let servers = Servers::start();
    for (index, rule) in hour_limits(5).into_iter().enumerate() {
        let prefix = format!("dynamic{index}");
        let backend = RedisBackend::new(servers.gateway.transport()).with_redis_time(true);
        let limiter = Ratelimit::new(backend, rule)
            .with_prefix(&prefix)
            .with_ephemeral_cache(None)
            .with_dynamic_limits(true)
            .with_analytics(true)
            .with_protection(true)
            .unwrap();
        limiter.set_dynamic_limit(Some(2)).await.unwrap();
        command(
            &servers,
            &["SADD", &format!("{prefix}:denyList:all"), "9.9.9.9"],
        )
        .await
        .unwrap();
        let mut answers = Vec::new();
        for _ in 0..3 {
            let (response, _) = limiter
                .limit_request("u", 1.0, &Request::default())
                .await
                .unwrap();
            answers.push((response.success, response.limit));
        }
        assert_eq!(
            answers,
            [(true, 2), (true, 2), (false, 2)],
            "{}",
            rule.name()
        );
        let ip = Request {
            ip: Some("9.9.9.9"),
            ..Request::default()
        };
        let (denied, value) = limiter.limit_request("w", 1.0, &ip).await.unwrap();
        assert_eq!(
            (denied.reason, value.as_deref()),
            (Some(Reason::DenyList), Some("9.9.9.9"))
        );
        assert_eq!(limiter.get_remaining("w").await.unwrap().remaining, 2.0);
    }
}

#[tokio::test]
async fn guarded_and_plain_scripts_decide_identically() {
    use edgelimit::{Ask, Backend, Clock, Events, Guard, ManualClock, Verdict, With};
    let servers = Servers::start();
    let clock = ManualClock::from_millis(1_700_000_000_000);
    let store = RedisBackend::new(servers.gateway.transport()).with_clock(clock.clone());
    let mut random = support::Random(7);
    let values = ["clean-value".to_owned()];
    for rule in hour_limits(10) {
        for step in 0..60 {
            let cost = rule.cost(random.between(0..=4) as f64 - 1.0).unwrap();
            let guard = Guard {
                deny_list: Some(("guarded:denyList:all", &values)),
                events: Some(Events {
                    key: "guarded:events",
                    admitted: "yes",
                    limited: "no",
                }),
            };
            let ask = |key, with| Ask {
                key,
                cost,
                rule,
                limit_key: None,
                now: clock.now_micros(),
                with,
            };
            let plain = store.decide(&ask("plain:u", With::Nothing)).await.unwrap();
            let guarded = (store.decide(&ask("guarded:u", With::Guard(guard))))
                .await
                .unwrap();
            assert!(matches!(plain, Verdict::Decided(_)), "{plain:?}");
            assert_eq!(guarded, plain, "{} step {step}", rule.name());
            clock.advance(Duration::from_secs(random.between(0..=600)));
        }
    }
    let score = |value: Value| {
        value
            .as_str()
            .map_or(0, |text| text.parse::<u64>().unwrap())
    };
    let admitted = score(
        command(&servers, &["ZSCORE", "guarded:events", "yes"])
            .await
            .unwrap(),
    );
    let limited = score(
        command(&servers, &["ZSCORE", "guarded:events", "no"])
            .await
            .unwrap(),
    );
    assert_eq!(admitted + limited, 4 * 60, "one event per decision");
    assert!(
        admitted > 0 && limited > 0,
        "{admitted} admitted, {limited} limited"
    );
}

/// A gateway that runs only the scripts it knows (`--known-scripts-only`) knows the guarded ones: the
/// first call of each (EVALSHA, then EVAL) and the ones after are answered, not refused.
#[tokio::test]
async fn the_guarded_scripts_run_behind_a_gateway_that_knows_only_its_scripts() {
    let redis = support::Redis::start();
    let gateway = support::Gateway(test_support::Gateway::in_front_of(
        &redis,
        &["--known-scripts-only"],
    ));
    for (index, rule) in hour_limits(3).into_iter().enumerate() {
        let limiter = Ratelimit::new(RedisBackend::new(gateway.transport()), rule)
            .with_prefix(format!("known{index}"))
            .with_ephemeral_cache(None)
            .with_analytics(true)
            .with_protection(true)
            .unwrap();
        for _ in 0..2 {
            let (response, _) = limiter
                .limit_request("u", 1.0, &Request::default())
                .await
                .unwrap();
            assert!(response.success, "{}", rule.name());
            assert_eq!(response.reason, None, "{}", rule.name());
        }
    }
}
