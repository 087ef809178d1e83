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
    let request = spawn_post(gw.url(), json!(["EVAL", slow, 0]).to_string());
    tokio::time::sleep(Duration::from_millis(200)).await;
    gw.terminate();
    let r = request.await.expect("request task").expect("http request");
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

/// Reads from `stream` until EOF or error; how long that took, or `None` if it is still open
/// after `within`.
fn closed_within(stream: &mut std::net::TcpStream, within: Duration) -> Option<Duration> {
    use std::io::Read;
    let started = Instant::now();
    stream.set_read_timeout(Some(within)).expect("read timeout");
    let mut sink = Vec::new();
    match stream.read_to_end(&mut sink) {
        Ok(_) => Some(started.elapsed()),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            None
        }
        Err(_) => Some(started.elapsed()),
    }
}

#[test]
fn silent_slow_and_idle_connections_are_closed() {
    use std::io::Write;
    let redis = Redis::start();
    let gw = Gateway::in_front_of(
        &redis,
        &[
            "--idle-timeout-ms",
            "500",
            "--header-read-timeout-ms",
            "700",
        ],
    );
    // A connection that never sends a byte.
    let mut silent = std::net::TcpStream::connect(("127.0.0.1", gw.port)).expect("connect");
    let took =
        closed_within(&mut silent, Duration::from_secs(5)).expect("silent connection kept open");
    assert!(took < Duration::from_secs(2), "closed after {took:?}");
    // A client that trickles its request head one byte at a time, never finishing it.
    let mut slow = std::net::TcpStream::connect(("127.0.0.1", gw.port)).expect("connect");
    let started = Instant::now();
    let mut closed = false;
    for byte in
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
            .iter()
            .cycle()
            .take(200)
    {
        if slow.write_all(&[*byte]).is_err() {
            closed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        if started.elapsed() > Duration::from_secs(5) {
            break;
        }
    }
    let closed = closed || closed_within(&mut slow, Duration::from_millis(100)).is_some();
    assert!(
        closed,
        "a never-ending request head kept the connection open"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
    // A keep-alive connection: served while used, closed once idle.
    let mut keep = std::net::TcpStream::connect(("127.0.0.1", gw.port)).expect("connect");
    for _ in 0..3 {
        keep.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            .expect("write");
        // The whole reply: its head, then the body `{"result":"OK"}`.
        let mut reply = Vec::new();
        let mut byte = [0u8; 1];
        while !reply.ends_with(br#"{"result":"OK"}"#) {
            std::io::Read::read_exact(&mut keep, &mut byte).expect("reply");
            reply.push(byte[0]);
        }
        assert!(reply.starts_with(b"HTTP/1.1 200"));
        std::thread::sleep(Duration::from_millis(300));
    }
    let took = closed_within(&mut keep, Duration::from_secs(5)).expect("idle keep-alive kept open");
    assert!(took < Duration::from_secs(2), "closed after {took:?}");
}

#[test]
fn connections_over_the_cap_wait_for_a_free_slot() {
    let redis = Redis::start();
    let gw = Gateway::in_front_of(&redis, &["--max-connections", "1"]);
    // The harness's readiness probe has closed; this connection takes the only slot.
    let mut holder = std::net::TcpStream::connect(("127.0.0.1", gw.port)).expect("connect");
    std::thread::sleep(Duration::from_millis(200));
    let port = gw.port;
    let waiting = std::thread::spawn(move || {
        let started = Instant::now();
        let reply = test_support::raw_http(
            port,
            "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            b"",
        );
        (started.elapsed(), reply)
    });
    std::thread::sleep(Duration::from_millis(600));
    std::io::Write::write_all(
        &mut holder,
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .expect("write");
    let _ = closed_within(&mut holder, Duration::from_secs(5));
    let (took, reply) = waiting.join().expect("waiting client");
    assert!(reply.is_some_and(|r| r.starts_with("HTTP/1.1 200")));
    assert!(
        took >= Duration::from_millis(500),
        "served at once, in {took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_gives_up_on_requests_after_its_deadline() {
    let redis = Redis::start();
    let mut gw = Gateway::in_front_of(&redis, &["--shutdown-timeout-ms", "300"]);
    // Keeps Redis, and the request, busy for about 3 s.
    let slow = r#"local t = redis.call('TIME'); local start = t[1] * 1000000 + t[2]
while true do t = redis.call('TIME'); if t[1] * 1000000 + t[2] - start > 3000000 then break end end
return 'done'"#;
    // Its outcome does not matter: the gateway drops it at the deadline.
    let _request = spawn_post(gw.url(), json!(["EVAL", slow, 0]).to_string());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    gw.terminate();
    let exit = gw.wait_exit(Duration::from_secs(5));
    assert_eq!(
        exit,
        Some(false),
        "the gateway exits unsuccessfully, after its deadline"
    );
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "took {:?}",
        started.elapsed()
    );
}

/// How many connections the gateway's Redis user has open, as Redis counts them.
fn gateway_connections(redis: &Redis) -> usize {
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .query(&mut redis.conn(0))
        .expect("CLIENT LIST");
    list.lines()
        .filter(|line| line.contains(&format!(" user={} ", test_support::GATEWAY_USER)))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_request_fails_right_after_redis_restarts() {
    let mut redis = Redis::start();
    let gw = Gateway::in_front_of(&redis, &[]);
    let c = http();
    // Keeps Redis busy for about 30 ms inside a transaction, so concurrent ones overlap.
    let slow = r#"local t = redis.call('TIME'); local start = t[1] * 1000000 + t[2]
while true do t = redis.call('TIME'); if t[1] * 1000000 + t[2] - start > 30000 then break end end
return redis.call('INCR', KEYS[1])"#;
    let slow_transaction = json!([["EVAL", slow, 1, "b"], ["INCR", "b"]]).to_string();
    let mut failures = Vec::new();
    for round in 0..3 {
        // Every kind of connection in use: the shared one and several pooled transaction ones.
        assert_eq!(post(&c, &gw, "/", r#"["INCR","a"]"#).await.status, 200);
        let transactions: Vec<_> = (0..6)
            .map(|_| spawn_post(format!("{}/multi-exec", gw.url()), slow_transaction.clone()))
            .collect();
        for transaction in transactions {
            let r = transaction.await.expect("task").expect("http request");
            assert_eq!(r.status, 200, "{:?}", r.json);
        }
        let open = gateway_connections(&redis);
        assert!(open >= 3, "round {round}: only {open} gateway connections");
        // Returns once the new server answers PING.
        redis.restart();
        // All at once, on every route: the shared connection and every pooled one are dead.
        let requests: Vec<_> = (0..6)
            .map(|_| ("/multi-exec", slow_transaction.clone()))
            .chain((0..6).map(|i| ("/", format!(r#"["INCR","a{i}"]"#))))
            .chain((0..6).map(|i| ("/pipeline", format!(r#"[["INCR","p{i}"],["GET","a"]]"#))))
            .map(|(path, body)| (path, spawn_post(format!("{}{path}", gw.url()), body)))
            .collect();
        for (path, request) in requests {
            match request.await.expect("task") {
                Ok(r) if r.status == 200 => {}
                Ok(r) => failures.push(format!("round {round} {path}: {} {:?}", r.status, r.json)),
                Err(e) => failures.push(format!("round {round} {path}: {e}")),
            }
        }
        assert_eq!(readyz(&c, &gw).await, 200);
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_request_after_redis_returns_is_answered() {
    let mut redis = Redis::start();
    let gw = Gateway::in_front_of(&redis, &[]);
    let c = http();
    assert_eq!(post(&c, &gw, "/", r#"["INCR","a"]"#).await.status, 200);
    for round in 0..5 {
        redis.stop();
        // Failed attempts to reconnect, the last one just before Redis is back.
        for _ in 0..3 {
            let r = post(&c, &gw, "/", r#"["INCR","a"]"#).await;
            assert_eq!(r.status, 503, "round {round}: {:?}", r.json);
        }
        // Returns once the new server answers PING.
        redis.restart();
        for path in ["/", "/pipeline", "/multi-exec"] {
            let body = if path == "/" {
                r#"["INCR","a"]"#
            } else {
                r#"[["INCR","a"]]"#
            };
            let r = post(&c, &gw, path, body).await;
            assert_eq!(r.status, 200, "round {round} {path}: {:?}", r.json);
        }
    }
}

#[test]
fn a_lingering_connection_does_not_hold_up_shutdown() {
    use std::io::{Read, Write};
    let redis = Redis::start();
    let mut gw = Gateway::in_front_of(&redis, &["--max-body-bytes", "1024"]);
    // A body over the limit, of which the client sends only part, then waits without closing.
    let mut client = std::net::TcpStream::connect(("127.0.0.1", gw.port)).expect("connect");
    client
        .write_all(
            format!(
                "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\
                 Content-Length: 1000000\r\n\r\n"
            )
            .as_bytes(),
        )
        .expect("head");
    client.write_all(&[b'x'; 4096]).expect("part of the body");
    client
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("read timeout");
    let mut reply = Vec::new();
    let mut byte = [0u8; 1];
    while !reply.ends_with(b"}") {
        client.read_exact(&mut byte).expect("the 413");
        reply.push(byte[0]);
    }
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 413"), "{reply}");
    assert!(
        reply.to_ascii_lowercase().contains("connection: close"),
        "{reply}"
    );
    // The gateway lingers on that connection for the rest of the body; a shutdown ends it.
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    gw.terminate();
    assert_eq!(gw.wait_exit(Duration::from_secs(3)), Some(true));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
}
