//! The real npm clients (`@upstash/redis` 1.39.0, `@upstash/ratelimit` 2.2.0) as peers.
//! Needs node 20+ and `npm ci` at the workspace root; fails (does not skip) without them.

use std::path::PathBuf;
use std::process::Command;

use test_support::{free_port, Gateway, Redis, READONLY_TOKEN, TOKEN};

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
    run_ratelimit_checks(&redis, &gw);
}

#[test]
fn upstash_ratelimit_runs_under_known_scripts_only() {
    let redis = Redis::start();
    let gw = Gateway::in_front_of(&redis, &["--known-scripts-only"]);
    run_ratelimit_checks(&redis, &gw);
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

#[test]
fn a_body_over_the_limit_gets_the_json_413_every_time() {
    let redis = Redis::start();
    let gw = Gateway::start(&redis.url(0));
    let out = run_node(
        "large_body.mjs",
        &[
            ("GATEWAY_URL", gw.url()),
            ("GATEWAY_TOKEN", TOKEN.to_owned()),
            ("ROUNDS", "60".to_owned()),
        ],
    );
    assert!(out.contains("all checks passed"), "{out}");
}

/// Runs `ratelimit.mjs` (single region) against `gw` in front of `redis`; it must pass.
fn run_ratelimit_checks(redis: &Redis, gw: &Gateway) {
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

/// Runs a node script from tests/js with the given environment; fails loudly if node or the
/// npm packages are missing.
fn run_node(script: &str, env: &[(&str, String)]) -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/js");
    let path = dir.join(script);
    let mut cmd = Command::new("node");
    cmd.arg(&path).current_dir(&dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap_or_else(|e| {
        panic!("cannot run `node` ({e}): install node 20+ and run `npm ci` at the workspace root")
    });
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if stderr.contains("ERR_MODULE_NOT_FOUND") {
        panic!("npm packages missing: run `npm ci` at the workspace root\n{stderr}");
    }
    assert!(
        out.status.success(),
        "node {script} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    stdout
}
