//! The real npm clients (`@upstash/redis` 1.39.0, `@upstash/ratelimit` 2.2.0) as peers.
//! Needs node 20+ and `npm ci` at the workspace root; fails (does not skip) without them.

mod common;

use common::*;

#[test]
fn upstash_redis_client() {
    let redis = Redis::start();
    let gw = Gateway::start(&redis.url(0));
    let out = run_node(
        "upstash_redis.mjs",
        &[
            ("GATEWAY_URL", gw.url()),
            ("GATEWAY_TOKEN", TOKEN.to_owned()),
            ("GATEWAY_READONLY_TOKEN", READONLY_TOKEN.to_owned()),
        ],
    );
    assert!(out.contains("all checks passed"), "{out}");
}

#[test]
fn upstash_ratelimit_single_region_uses_evalsha_hits() {
    let redis = Redis::start();
    let gw = Gateway::start(&redis.url(0));
    let out = run_node(
        "ratelimit.mjs",
        &[
            ("GATEWAY_URL", gw.url()),
            ("GATEWAY_TOKEN", TOKEN.to_owned()),
            ("REDIS_PORT", redis.port.to_string()),
        ],
    );
    assert!(out.contains("all checks passed"), "{out}");
}

#[test]
fn upstash_ratelimit_multi_region_over_two_servers() {
    let region_a = Redis::start();
    let region_b = Redis::start();
    let dir = std::env::temp_dir().join(format!("gw-regions-{}", free_port()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("tokens");
    std::fs::write(
        &file,
        format!(
            "region-a {}\nregion-b {}\n",
            region_a.url(0),
            region_b.url(3)
        ),
    )
    .expect("tokens file");
    let gw = Gateway::start_with(&["--tokens", file.to_str().expect("utf-8 path")]);
    let out = run_node(
        "multiregion.mjs",
        &[
            ("GATEWAY_URL", gw.url()),
            ("REGION_A_TOKEN", "region-a".to_owned()),
            ("REGION_B_TOKEN", "region-b".to_owned()),
        ],
    );
    let _ = std::fs::remove_dir_all(dir);
    assert!(out.contains("all checks passed"), "{out}");
}
