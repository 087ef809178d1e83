//! Test harness: real redis-server and gateway processes on free loopback ports, stopped on drop.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// A free loopback port (bound then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free port")
}

fn wait_until(what: &str, timeout: Duration, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if ready() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{what} not ready after {timeout:?}");
}

/// A redis-server child process; killed and reaped on drop.
pub struct Redis {
    pub port: u16,
    child: Option<Child>,
}

impl Redis {
    /// Starts redis-server on a free port and waits until it answers PING.
    pub fn start() -> Self {
        let port = free_port();
        let mut redis = Redis { port, child: None };
        redis.spawn();
        redis
    }

    fn spawn(&mut self) {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server must be installed (apt-get install redis-server)");
        self.child = Some(child);
        let port = self.port;
        wait_until("redis-server", Duration::from_secs(10), || redis_ping(port));
    }

    /// `redis://127.0.0.1:PORT/DB`
    pub fn url(&self, db: u8) -> String {
        format!("redis://127.0.0.1:{}/{db}", self.port)
    }

    /// A direct connection for checking state behind the gateway's back.
    pub fn conn(&self, db: u8) -> redis::Connection {
        redis::Client::open(self.url(db))
            .and_then(|c| c.get_connection())
            .expect("direct redis connection")
    }

    /// Kills the server (Redis down).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}

fn redis_ping(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    if s.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 7];
    s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
}

/// A gateway child process; killed and reaped on drop.
pub struct Gateway {
    pub port: u16,
    child: Option<Child>,
    args: Vec<String>,
}

impl Gateway {
    /// Starts the gateway with `--token t0k3n --readonly-token r34d` for one Redis URL.
    pub fn start(redis_url: &str) -> Self {
        Self::start_with(&[
            "--redis",
            redis_url,
            "--token",
            TOKEN,
            "--readonly-token",
            READONLY_TOKEN,
        ])
    }

    /// Starts the gateway with the given extra arguments (besides `--listen`).
    pub fn start_with(args: &[&str]) -> Self {
        let mut gw = Gateway {
            port: free_port(),
            child: None,
            args: args.iter().map(|s| s.to_string()).collect(),
        };
        gw.spawn();
        gw
    }

    fn spawn(&mut self) {
        let child = Command::new(env!("CARGO_BIN_EXE_edgelimit-gateway"))
            .arg("--listen")
            .arg(format!("127.0.0.1:{}", self.port))
            .args(&self.args)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start gateway");
        self.child = Some(child);
        let port = self.port;
        wait_until("gateway", Duration::from_secs(10), || {
            raw_http(
                port,
                "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                b"",
            )
            .is_some_and(|r| r.starts_with("HTTP/1.1 200"))
        });
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Kills and starts the gateway process again (same port, same flags).
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// The process id (for signals).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).unwrap_or(0)
    }

    /// Waits for the process to exit and returns whether it exited successfully.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<bool> {
        let deadline = Instant::now() + timeout;
        let child = self.child.as_mut()?;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                return Some(status.success());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        self.kill();
    }
}

pub const TOKEN: &str = "t0k3n";
pub const READONLY_TOKEN: &str = "r34d";

/// Sends raw bytes as an HTTP/1.1 request and returns the whole response as text.
pub fn raw_http(port: u16, head: &str, body: &[u8]) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    s.write_all(head.as_bytes()).ok()?;
    s.write_all(body).ok()?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).ok()?;
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// A reply: status, headers and parsed JSON body.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub json: serde_json::Value,
}

/// A keep-alive HTTP client.
pub type Http = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

/// A new keep-alive HTTP client.
pub fn http() -> Http {
    Client::builder(TokioExecutor::new()).build_http()
}

/// Sends one request; every reply body must be JSON.
pub async fn send(
    client: &Http,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> Reply {
    let mut req = hyper::Request::builder().method(method).uri(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req.body(Full::new(body.into())).expect("request");
    let res = tokio::time::timeout(Duration::from_secs(20), client.request(req))
        .await
        .expect("gateway answered in time")
        .expect("http request");
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    let bytes = res.into_body().collect().await.expect("body").to_bytes();
    let json = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        panic!(
            "reply is not JSON ({e}): {:?}",
            String::from_utf8_lossy(&bytes)
        )
    });
    if status != 200 {
        assert_eq!(
            headers.get("content-type").and_then(|v| v.to_str().ok()),
            Some("application/json"),
            "error replies must be JSON"
        );
    }
    Reply {
        status,
        headers,
        json,
    }
}

/// POSTs with the read-write token.
pub async fn post(client: &Http, gw: &Gateway, path: &str, body: &str) -> Reply {
    let auth = format!("Bearer {TOKEN}");
    send(
        client,
        "POST",
        &format!("{}{path}", gw.url()),
        &[("authorization", &auth)],
        body.to_owned(),
    )
    .await
}

/// Runs a node script from tests/js with the given environment; fails loudly if node or the
/// npm packages are missing.
pub fn run_node(script: &str, env: &[(&str, String)]) -> String {
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
