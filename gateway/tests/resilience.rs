//! Faults, concurrency and shutdown: Redis going away under load, transactions that must not
//! interleave, SIGTERM with a request in flight.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use serde_json::json;
use test_support::{Gateway, Redis, TOKEN};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_gives_quick_json_errors_then_recovers() {
    let mut redis = Redis::start();
    let gw = Gateway::in_front_of(&redis, &["--timeout-ms", "2000"]);
    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for i in 0..32 {
        let (stop, ok, failed) = (stop.clone(), ok.clone(), failed.clone());
        let url = format!("{}/pipeline", gw.url());
        tasks.push(tokio::spawn(async move {
            let client = http();
            let auth = format!("Bearer {TOKEN}");
            let body = format!(r#"[["incr","c{i}"],["get","c{i}"]]"#);
            let mut slowest = Duration::ZERO;
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                // `send` fails the test on a hang (20 s) or a non-JSON reply.
                let r = send(
                    &client,
                    "POST",
                    &url,
                    &[("Authorization", &auth)],
                    body.clone(),
                )
                .await;
                slowest = slowest.max(started.elapsed());
                if r.status == 200 && r.json[0].get("result").is_some() {
                    ok.fetch_add(1, Ordering::Relaxed);
                } else {
                    assert!(
                        r.status >= 500,
                        "unexpected reply {} {:?}",
                        r.status,
                        r.json
                    );
                    assert!(r.json["error"].is_string());
                    failed.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
            slowest
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = ok.load(Ordering::Relaxed);
    assert!(before > 0, "no request succeeded before the fault");
    redis.stop();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        failed.load(Ordering::Relaxed) > 0,
        "no request noticed Redis being down"
    );
    redis.restart();
    let recovered_at = ok.load(Ordering::Relaxed);
    let deadline = Instant::now() + Duration::from_secs(15);
    while ok.load(Ordering::Relaxed) < recovered_at + 64 {
        assert!(
            Instant::now() < deadline,
            "gateway did not recover after Redis came back"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        let slowest = task.await.expect("client task");
        assert!(
            slowest < Duration::from_secs(4),
            "a request took {slowest:?}"
        );
    }
    let c = http();
    assert_eq!(
        post(&c, &gw, "/", r#"["PING"]"#).await.json,
        json!({"result": "PONG"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_transactions_never_interleave() {
    let redis = Redis::start();
    let gw = Gateway::start(&redis.url(0));
    let mut tasks = Vec::new();
    for i in 1..=64i64 {
        let url = format!("{}/multi-exec", gw.url());
        tasks.push(tokio::spawn(async move {
            let client = http();
            let auth = format!("Bearer {TOKEN}");
            let body = json!([
                ["incrby", "ctr", i],
                ["incrby", "ctr", -i],
                ["incrby", "ctr", i]
            ])
            .to_string();
            let r = send(&client, "POST", &url, &[("Authorization", &auth)], body).await;
            assert_eq!(r.status, 200, "{:?}", r.json);
            let v: Vec<i64> = (0..3)
                .map(|k| r.json[k]["result"].as_i64().expect("int"))
                .collect();
            // Inside one transaction nobody else may touch the counter.
            assert_eq!(v[0], v[1] + i, "interleaved: {v:?}");
            assert_eq!(v[2], v[0], "interleaved: {v:?}");
        }));
    }
    for task in tasks {
        task.await.expect("transaction task");
    }
    let total: i64 = redis::cmd("GET")
        .arg("ctr")
        .query(&mut redis.conn(0))
        .expect("get");
    assert_eq!(total, (1..=64).sum::<i64>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_in_flight_requests_finish() {
    let redis = Redis::start();
    let mut gw = Gateway::start(&redis.url(0));
    // A script that keeps Redis busy for about 600 ms.
    let slow = r#"local t = redis.call('TIME'); local start = t[1] * 1000000 + t[2]
while true do t = redis.call('TIME'); if t[1] * 1000000 + t[2] - start > 600000 then break end end
return 'done'"#;
    let url = gw.url();
    let request = tokio::spawn(async move {
        let client = http();
        let auth = format!("Bearer {TOKEN}");
        send(
            &client,
            "POST",
            &url,
            &[("Authorization", &auth)],
            json!(["EVAL", slow, 0]).to_string(),
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let status = std::process::Command::new("kill")
        .args(["-TERM", &gw.pid().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let r = request.await.expect("request task");
    assert_eq!(r.json, json!({"result": "done"}));
    assert_eq!(
        gw.wait_exit(Duration::from_secs(10)),
        Some(true),
        "gateway did not exit cleanly"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_follows_redis_while_healthz_stays_up() {
    let mut redis = Redis::start();
    let gw = Gateway::in_front_of(&redis, &["--timeout-ms", "2000"]);
    let c = http();
    assert_eq!(readyz(&c, &gw).await, 200);
    redis.stop();
    wait_readyz(&c, &gw, 503, Duration::from_secs(5)).await;
    let r = send(&c, "GET", &format!("{}/readyz", gw.url()), &[], "").await;
    assert!(r.json["error"].is_string(), "{:?}", r.json);
    let health = send(&c, "GET", &format!("{}/healthz", gw.url()), &[], "").await;
    assert_eq!(health.status, 200, "liveness does not depend on Redis");
    redis.restart();
    wait_readyz(&c, &gw, 200, Duration::from_secs(10)).await;
}
