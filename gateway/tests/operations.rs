//! What an operator runs the gateway with: tokens rotated by SIGHUP under load, JSON logs, and the
//! Prometheus metrics (parsed by a Prometheus text-format parser).

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use test_support::{free_port, raw_http, Gateway, Redis};

/// A directory of its own under the system's temporary one, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(what: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("gw-{what}-{}", free_port()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        Self(dir)
    }

    fn file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        write_atomically(&path, text);
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes `text` to a file beside `path`, then renames it over `path`, as an operator should.
fn write_atomically(path: &Path, text: &str) {
    let staged = path.with_extension("new");
    std::fs::write(&staged, text).expect("write");
    std::fs::rename(&staged, path).expect("rename");
}

/// Sends SIGHUP to a process.
fn hangup(pid: u32) {
    assert_ne!(pid, 0);
    let status = Command::new("kill")
        .args(["-HUP", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(status.success(), "kill -HUP {pid}");
}

/// Polls until `token` gets `want` on `["PING"]`; panics after 5 s.
async fn wait_status(client: &Http, gw: &Gateway, token: &str, want: u16) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let status = post_as(client, gw, token, "/", r#"["PING"]"#).await.status;
        if status == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "token {token:?} still gets {status}, expected {want}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_rotate_on_sighup_under_load_without_failing_the_kept_ones() {
    let redis = Redis::start();
    let url = redis.url(0);
    let dir = TempDir::new("rotate");
    let tokens = dir.file(
        "tokens",
        &format!("kept-token {url} rw name=main\nold-token {url} rw name=main\n"),
    );
    let gw = Gateway::start_with(&["--tokens", tokens.to_str().expect("utf-8")]);
    let client = http();
    wait_status(&client, &gw, "old-token", 200).await;
    wait_status(&client, &gw, "new-token", 401).await;

    // 16 clients on the kept token, each counting its own key.
    let stop = Arc::new(AtomicBool::new(false));
    let failures = Arc::new(AtomicUsize::new(0));
    let mut clients = Vec::new();
    for i in 0..16 {
        let (stop, failures, url) = (stop.clone(), failures.clone(), gw.url());
        clients.push(tokio::spawn(async move {
            let client = http();
            let mut ok = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let reply = send(
                    &client,
                    "POST",
                    &format!("{url}/pipeline"),
                    &[("authorization", "Bearer kept-token")],
                    format!(r#"[["incr","rotate:{i}"]]"#),
                )
                .await;
                if reply.status == 200 && reply.json[0]["result"].is_i64() {
                    ok += 1;
                } else {
                    failures.fetch_add(1, Ordering::Relaxed);
                }
            }
            ok
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;

    // Rotate: old-token out, new-token in.
    write_atomically(
        &tokens,
        &format!("kept-token {url} rw name=main\nnew-token {url} rw name=main\n"),
    );
    hangup(gw.pid());
    wait_status(&client, &gw, "new-token", 200).await;
    // Removed from the very next request once the new one works (one table, swapped whole).
    let reply = post_as(&client, &gw, "old-token", "/", r#"["PING"]"#).await;
    assert_eq!(reply.status, 401, "{:?}", reply.json);
    assert_eq!(
        reply.json["error"],
        "WRONGPASS invalid or missing auth token"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;

    // A file that does not parse keeps the old table.
    write_atomically(&tokens, "new-token\n");
    hangup(gw.pid());
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        post_as(&client, &gw, "new-token", "/", r#"["PING"]"#)
            .await
            .status,
        200
    );
    assert_eq!(
        post_as(&client, &gw, "old-token", "/", r#"["PING"]"#)
            .await
            .status,
        401
    );
    tokio::time::sleep(Duration::from_millis(200)).await;

    stop.store(true, Ordering::Relaxed);
    let mut admitted = 0;
    let mut conn = redis.conn(0);
    for (i, task) in clients.into_iter().enumerate() {
        let ok = task.await.expect("client");
        assert!(ok > 0, "client {i} made no request");
        let counted: u64 = redis::cmd("GET")
            .arg(format!("rotate:{i}"))
            .query(&mut conn)
            .expect("GET");
        assert_eq!(counted, ok, "client {i}: every 200 is counted, once");
        admitted += ok;
    }
    assert_eq!(failures.load(Ordering::Relaxed), 0, "kept token failed");
    println!("{admitted} requests on the kept token across two reloads, none failed");
}

/// A gateway started by the test itself, its stderr in a file (killed on drop).
struct Logged {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Logged {
    fn start(args: &[&str], log: PathBuf) -> Self {
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_edgelimit-gateway"))
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .args(args)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("gateway");
        let deadline = Instant::now() + Duration::from_secs(20);
        while raw_http(
            port,
            "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            b"",
        )
        .is_none_or(|reply| !reply.starts_with("HTTP/1.1 200"))
        {
            assert!(Instant::now() < deadline, "gateway did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Self { child, port, log }
    }

    fn lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .expect("log")
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for Logged {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn json_logs_are_one_object_per_line_and_say_why_a_reload_failed() {
    let redis = Redis::start();
    let dir = TempDir::new("jsonlog");
    let tokens = dir.file("tokens", &format!("a-token {} rw\n", redis.url(0)));
    let gw = Logged::start(
        &[
            "--tokens",
            tokens.to_str().expect("utf-8"),
            "--log-format",
            "json",
        ],
        dir.0.join("stderr"),
    );
    write_atomically(&tokens, "a-token redis://x rw bogus\n");
    hangup(gw.child.id());
    let deadline = Instant::now() + Duration::from_secs(5);
    let lines = loop {
        let lines = gw.lines();
        if lines.iter().any(|line| line.contains("not reloaded")) {
            break lines;
        }
        assert!(
            Instant::now() < deadline,
            "no reload error logged: {lines:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    for line in &lines {
        let json: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(
            json["level"].is_string() && json["fields"].is_object(),
            "{line}"
        );
    }
    let failure = lines
        .iter()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("json"))
        .find(|json| json["level"] == "ERROR")
        .expect("an ERROR line");
    let error = failure["fields"]["error"].as_str().expect("error field");
    assert!(error.contains("bogus"), "{error}");
    assert!(
        !lines.iter().any(|line| line.contains("a-token")),
        "a token was logged"
    );
    // The old table stays.
    let reply = raw_http(
        gw.port,
        "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a-token\r\nContent-Length: 8\r\nConnection: close\r\n\r\n",
        br#"["PING"]"#,
    )
    .expect("reply");
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
}

/// Scrapes `/metrics` and parses it with a Prometheus text-format parser.
async fn scrape(client: &Http, url: &str, auth: Option<&str>) -> (u16, String) {
    let auth = auth.map(|token| format!("Bearer {token}"));
    let headers: Vec<(&str, &str)> = auth
        .as_deref()
        .map(|auth| vec![("authorization", auth)])
        .unwrap_or_default();
    let request = headers
        .iter()
        .fold(hyper::Request::builder().uri(url), |r, (k, v)| {
            r.header(*k, *v)
        })
        .body(http_body_util::Full::new(hyper::body::Bytes::new()))
        .expect("request");
    let response = client.request(request).await.expect("scrape");
    let status = response.status().as_u16();
    let body = http_body_util::BodyExt::collect(response.into_body())
        .await
        .expect("body")
        .to_bytes();
    (status, String::from_utf8(body.to_vec()).expect("utf-8"))
}

/// The samples of a scrape: `name{labels}` → value.
fn samples(text: &str) -> HashMap<String, f64> {
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned())))
        .expect("Prometheus text format");
    let mut samples = HashMap::new();
    for sample in scrape.samples {
        let mut labels: Vec<String> = sample
            .labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        labels.sort();
        let value = match sample.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            prometheus_parse::Value::Histogram(buckets) => {
                buckets.iter().map(|b| b.count).fold(0.0, f64::max)
            }
            prometheus_parse::Value::Summary(_) => continue,
        };
        samples.insert(format!("{}{{{}}}", sample.metric, labels.join(",")), value);
    }
    samples
}

fn sample(samples: &HashMap<String, f64>, key: &str) -> f64 {
    samples.get(key).copied().unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_requests_per_database_and_never_show_a_token() {
    let mut redis = Redis::start();
    let dir = TempDir::new("metrics");
    let tokens = dir.file(
        "tokens",
        &format!(
            "sekrit-eu {} rw name=eu\nsekrit-us {} rw\n",
            redis.url(0),
            redis.url(1)
        ),
    );
    let metrics_port = free_port();
    let metrics_listen = format!("127.0.0.1:{metrics_port}");
    let gw = Gateway::start_with(&[
        "--tokens",
        tokens.to_str().expect("utf-8"),
        "--metrics-listen",
        &metrics_listen,
        "--metrics-token",
        "scrape-me",
        "--timeout-ms",
        "1000",
    ]);
    let client = http();
    let own = format!("http://{metrics_listen}/metrics");
    let (status, before) = scrape(&client, &own, None).await;
    assert_eq!(status, 200);
    let before = samples(&before);

    for _ in 0..5 {
        assert_eq!(
            post_as(&client, &gw, "sekrit-eu", "/pipeline", r#"[["incr","m"]]"#)
                .await
                .status,
            200
        );
    }
    assert_eq!(
        post_as(&client, &gw, "sekrit-us", "/", r#"["incr","m"]"#)
            .await
            .status,
        200
    );
    assert_eq!(
        post_as(&client, &gw, "wrong", "/", r#"["incr","m"]"#)
            .await
            .status,
        401
    );

    // Behind its own token on the main listener too; a Redis token does not read it.
    let on_main = format!("{}/metrics", gw.url());
    let (status, text) = scrape(&client, &on_main, Some("scrape-me")).await;
    assert_eq!(status, 200);
    assert!(text.contains("edgelimit_gateway_requests_total"));
    assert_eq!(scrape(&client, &on_main, Some("sekrit-eu")).await.0, 401);
    assert_eq!(scrape(&client, &on_main, None).await.0, 401);

    let (_, text) = scrape(&client, &own, None).await;
    let after = samples(&text);
    let moved = |key: &str| sample(&after, key) - sample(&before, key);
    assert_eq!(
        moved("edgelimit_gateway_requests_total{database=eu,route=/pipeline,status=200}"),
        5.0,
        "{text}"
    );
    let us = format!("gateway@127.0.0.1:{}/1", redis.port);
    assert_eq!(
        moved(&format!(
            "edgelimit_gateway_requests_total{{database={us},route=/,status=200}}"
        )),
        1.0,
        "{text}"
    );
    assert_eq!(
        moved("edgelimit_gateway_requests_total{database=,route=/,status=401}"),
        1.0,
        "{text}"
    );
    assert!(
        moved("edgelimit_gateway_request_duration_seconds_count{database=eu,route=/pipeline}")
            >= 5.0,
        "{text}"
    );
    assert!(
        sample(
            &after,
            "edgelimit_gateway_redis_connects_total{database=eu,outcome=ok}"
        ) >= 1.0,
        "{text}"
    );
    assert!(
        sample(&after, "edgelimit_gateway_connections_open{}") >= 1.0,
        "{text}"
    );
    assert_eq!(sample(&after, "edgelimit_gateway_tokens{}"), 2.0, "{text}");

    // Redis down: requests fail with 503, counted as Redis errors of their database.
    redis.stop();
    let reply = post_as(&client, &gw, "sekrit-eu", "/pipeline", r#"[["incr","m"]]"#).await;
    assert_eq!(reply.status, 503, "{:?}", reply.json);
    let (_, text) = scrape(&client, &own, None).await;
    let down = samples(&text);
    assert!(
        sample(
            &down,
            "edgelimit_gateway_redis_errors_total{database=eu,kind=unavailable}"
        ) >= 1.0,
        "{text}"
    );
    // The request that met the lost connection may answer before the gateway has tried to connect
    // again: the next requests do try, and each failed attempt is counted.
    let failed_connects = "edgelimit_gateway_redis_connects_total{database=eu,outcome=failed}";
    let mut text = text;
    for _ in 0..100 {
        if sample(&samples(&text), failed_connects) >= 1.0 {
            break;
        }
        let reply = post_as(&client, &gw, "sekrit-eu", "/pipeline", r#"[["incr","m"]]"#).await;
        assert_eq!(reply.status, 503, "{:?}", reply.json);
        tokio::time::sleep(Duration::from_millis(50)).await;
        text = scrape(&client, &own, None).await.1;
    }
    assert!(sample(&samples(&text), failed_connects) >= 1.0, "{text}");
    for secret in ["sekrit", "scrape-me", "gateway-test-password"] {
        assert!(!text.contains(secret), "{secret} in the metrics:\n{text}");
    }
    // The metrics listener serves nothing else.
    assert_eq!(
        scrape(&client, &format!("http://{metrics_listen}/"), None)
            .await
            .0,
        404
    );
}
