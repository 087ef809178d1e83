//! No identifier reaches a key every identifier shares, against real redis-server through the gateway:
//! the attacker's identifier is refused before anything is sent, in every layout, algorithm and fail
//! mode, and 100 victims' calls are each limited as before.

#![cfg(not(target_arch = "wasm32"))]

mod support;

use edgelimit::ratelimit::{analytics, FailMode, Ratelimit};
use edgelimit::Configure;
use edgelimit::{Error, KeyLayout, MultiRegionRatelimit, RedisBackend, MAX_IDENTIFIER_BYTES};
use futures::future::join_all;
use serde_json::json;
use support::{command, hour_limits, now_ms, Servers};

/// What each feature shares, and the identifier an attacker would pick to overwrite it.
fn attacks(prefix: &str) -> [(&'static str, String); 3] {
    let events = analytics::events_key(prefix, now_ms());
    let events = events
        .strip_prefix(&format!("{prefix}:"))
        .unwrap()
        .to_owned();
    [
        ("dynamic limits", "dynamic:global".to_owned()),
        ("protection", "denyList:all".to_owned()),
        ("analytics", events),
    ]
}

fn limiter(
    servers: &Servers,
    rule: edgelimit::Algorithm,
    prefix: &str,
    layout: KeyLayout,
    mode: FailMode,
) -> Ratelimit {
    Ratelimit::new(RedisBackend::new(servers.gateway.transport()), rule)
        .with_prefix(prefix)
        .with_key_layout(layout)
        .with_ephemeral_cache(None)
        .with_fail_mode(mode)
        .with_dynamic_limits(true)
        .with_analytics(true)
        .with_protection(true)
        .unwrap()
}

#[tokio::test]
async fn an_identifier_naming_a_shared_key_is_refused_and_victims_stay_limited() {
    let servers = Servers::start();
    let mut case = 0;
    for rule in hour_limits(3) {
        for layout in [KeyLayout::Upstash, KeyLayout::Cluster] {
            for mode in [FailMode::Open, FailMode::Closed] {
                case += 1;
                let prefix = format!("shared{case}");
                let limiter = limiter(&servers, rule, &prefix, layout, mode);
                for (feature, attacker) in attacks(&prefix) {
                    let error = limiter.limit(&attacker, 1.0).await.unwrap_err();
                    assert!(
                        matches!(&error, Error::InvalidIdentifier { reason, .. } if reason.contains(feature)),
                        "{feature}: {error}"
                    );
                    assert!(limiter.get_remaining(&attacker).await.is_err());
                    assert!(limiter.reset_used_tokens(&attacker).await.is_err());
                    let key = format!("{prefix}:{attacker}");
                    assert_eq!(command(&servers, &["EXISTS", &key]).await, Ok(json!(0)));
                }
                let victims = (0..100).map(|victim| {
                    let limiter = &limiter;
                    async move {
                        let mut admitted = 0;
                        for _ in 0..5 {
                            let response = limiter.limit(&format!("v{victim}"), 1.0).await.unwrap();
                            assert_eq!(response.reason, None);
                            admitted += u32::from(response.success);
                        }
                        admitted
                    }
                });
                let admitted = join_all(victims).await;
                assert_eq!(admitted, vec![3; 100], "{rule:?} {layout:?} {mode:?}");
            }
        }
    }
}

#[tokio::test]
async fn the_multi_region_limit_refuses_the_dynamic_limit_key_and_long_identifiers() {
    let servers = Servers::start();
    let regions = vec![servers.gateway.transport(), servers.gateway.transport()];
    let rule = hour_limits(3)[0];
    let limiter = MultiRegionRatelimit::new(regions, rule)
        .unwrap()
        .with_prefix("shared-multi")
        .with_dynamic_limits(true);
    for identifier in ["dynamic", "dynamic:global"] {
        let error = limiter.limit(identifier, 1.0).await.unwrap_err();
        assert!(matches!(error, Error::InvalidIdentifier { .. }), "{error}");
    }
    let long = "x".repeat(MAX_IDENTIFIER_BYTES + 1);
    let error = limiter.limit(&long, 1.0).await.unwrap_err();
    assert!(matches!(error, Error::TooLong { .. }), "{error}");
    assert_eq!(
        command(&servers, &["EXISTS", "shared-multi:dynamic:global"]).await,
        Ok(json!(0))
    );
    assert!(limiter.limit("victim", 1.0).await.unwrap().success);
}

#[tokio::test]
async fn the_longest_identifier_with_every_feature_fits_one_request() {
    let servers = Servers::start();
    // Control characters: the JSON escaping that grows most (6 bytes a byte).
    let worst = "\u{1}".repeat(MAX_IDENTIFIER_BYTES);
    for (index, rule) in hour_limits(3).into_iter().enumerate() {
        let limiter = limiter(
            &servers,
            rule,
            &format!("longest{index}"),
            KeyLayout::Upstash,
            FailMode::Closed,
        );
        let request = edgelimit::ratelimit::Request {
            ip: Some(&worst),
            user_agent: Some(&worst),
            country: Some(&worst),
            geo: &[],
        };
        let (answer, _) = limiter.limit_request(&worst, 1.0, &request).await.unwrap();
        assert!(answer.success, "{rule:?}: {answer:?}");
        assert_eq!(answer.reason, None);
    }
}
