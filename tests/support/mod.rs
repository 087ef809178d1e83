//! Real servers for native integration tests: redis-server and edgelimit-gateway on free loopback
//! ports, killed when dropped (also when a test panics), and a transport that counts what it sends.
#![allow(dead_code)] // each test binary uses a different part

use edgelimit::transport::{HttpReply, HttpTransport, Transport};
use edgelimit::BoxFuture;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The token every test gateway accepts.
pub const TOKEN: &str = "edgelimit-test-token";

/// A free loopback port (bound, then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("no free loopback port")
}

fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if ready() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{what} did not come up within 20 s");
}

/// A child process killed and reaped on drop.
struct Process(Option<Child>);

impl Process {
    fn stop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A redis-server on a free port.
pub struct Redis {
    pub port: u16,
    process: Process,
}

impl Redis {
    /// Starts redis-server and waits until it answers PING.
    pub fn start() -> Self {
        let mut redis = Self {
            port: free_port(),
            process: Process(None),
        };
        redis.spawn();
        redis
    }

    fn spawn(&mut self) {
        let child = Command::new("redis-server")
            .args([
                "--port",
                &self.port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server is missing: run `make bootstrap`");
        self.process = Process(Some(child));
        let port = self.port;
        wait_until("redis-server", || ping(port));
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Kills the server (Redis down).
    pub fn stop(&mut self) {
        self.process.stop();
    }

    /// Starts it again on the same port.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }
}

fn ping(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    let mut reply = [0u8; 7];
    stream.write_all(b"PING\r\n").is_ok()
        && stream.read_exact(&mut reply).is_ok()
        && &reply == b"+PONG\r\n"
}

/// The gateway binary, built once per test binary if `cargo test --workspace` has not built it.
fn gateway_binary() -> &'static PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        // The test executable lives in <target>/<profile>/deps/.
        let exe = std::env::current_exe().expect("test executable path");
        let binary = exe
            .parent()
            .and_then(|deps| deps.parent())
            .expect("target dir")
            .join("edgelimit-gateway");
        if !binary.exists() {
            let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
                .args(["build", "-p", "edgelimit-gateway"])
                .status()
                .expect("cargo build -p edgelimit-gateway");
            assert!(status.success(), "building the gateway failed");
        }
        binary
    })
}

/// An edgelimit-gateway in front of one Redis.
pub struct Gateway {
    pub port: u16,
    process: Process,
}

impl Gateway {
    /// Starts the gateway for `redis` with [`TOKEN`] and waits for `/healthz`.
    pub fn start(redis: &Redis) -> Self {
        let port = free_port();
        let child = Command::new(gateway_binary())
            .args([
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--redis",
                &redis.url(),
                "--token",
                TOKEN,
            ])
            .args(["--timeout-ms", "2000"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting edgelimit-gateway");
        let gateway = Self {
            port,
            process: Process(Some(child)),
        };
        wait_until("edgelimit-gateway", || {
            TcpStream::connect(("127.0.0.1", port))
                .and_then(|mut stream| {
                    stream.write_all(
                        b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                    )?;
                    let mut reply = String::new();
                    stream.read_to_string(&mut reply)?;
                    Ok(reply.starts_with("HTTP/1.1 200"))
                })
                .unwrap_or(false)
        });
        gateway
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A transport to this gateway with [`TOKEN`] and a 5 s timeout.
    pub fn transport(&self) -> HttpTransport {
        HttpTransport::new(&self.url(), TOKEN)
            .unwrap()
            .with_timeout(Some(Duration::from_secs(5)))
    }

    /// Kills the gateway.
    pub fn stop(&mut self) {
        self.process.stop();
    }
}

/// Redis and a gateway in front of it.
pub struct Servers {
    pub redis: Redis,
    pub gateway: Gateway,
}

impl Servers {
    /// Starts both.
    pub fn start() -> Self {
        let redis = Redis::start();
        let gateway = Gateway::start(&redis);
        Self { redis, gateway }
    }
}

/// What a [`Counting`] transport sent and received.
#[derive(Debug, Default)]
pub struct Traffic {
    pub requests: AtomicUsize,
    pub bytes_sent: AtomicUsize,
    pub bytes_received: AtomicUsize,
}

impl Traffic {
    /// `(requests, bytes sent, bytes received)` since the last call, and resets them.
    pub fn take(&self) -> (usize, usize, usize) {
        (
            self.requests.swap(0, Ordering::SeqCst),
            self.bytes_sent.swap(0, Ordering::SeqCst),
            self.bytes_received.swap(0, Ordering::SeqCst),
        )
    }
}

/// A transport that counts requests and body bytes on their way through another.
pub struct Counting<T> {
    pub inner: T,
    pub traffic: Arc<Traffic>,
}

impl<T> Counting<T> {
    /// Wraps `inner`; the counters are shared with the returned handle.
    pub fn new(inner: T) -> (Self, Arc<Traffic>) {
        let traffic = Arc::new(Traffic::default());
        (
            Self {
                inner,
                traffic: traffic.clone(),
            },
            traffic,
        )
    }
}

impl<T: Transport> Transport for Counting<T> {
    fn post<'a>(
        &'a self,
        path: &'a str,
        body: String,
    ) -> BoxFuture<'a, edgelimit::Result<HttpReply>> {
        Box::pin(async move {
            self.traffic.requests.fetch_add(1, Ordering::SeqCst);
            self.traffic
                .bytes_sent
                .fetch_add(body.len(), Ordering::SeqCst);
            let reply = self.inner.post(path, body).await?;
            self.traffic
                .bytes_received
                .fetch_add(reply.body.len(), Ordering::SeqCst);
            Ok(reply)
        })
    }
}

/// A deterministic pseudo-random generator (SplitMix64), so a failing seed can be replayed.
pub struct Random(pub u64);

impl Random {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `range`.
    pub fn between(&mut self, range: std::ops::RangeInclusive<u64>) -> u64 {
        range.start() + self.next() % (range.end() - range.start() + 1)
    }
}
