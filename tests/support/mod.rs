//! Real servers for native integration tests (the shared harness, `test-support`, with a transport
//! to its gateway) and a transport that counts what it sends.
#![allow(dead_code)] // each test binary uses a different part

use edgelimit::algorithm::Algorithm;
use edgelimit::redis::RestClient;
use edgelimit::transport::{HttpReply, HttpTransport, Transport};
use edgelimit::{BoxFuture, FixedWindow, Gcra, SlidingWindow, TokenBucket};
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub use test_support::{Redis, TOKEN};

/// Redis and a gateway in front of it.
pub struct Servers {
    pub redis: Redis,
    pub gateway: Gateway,
}

impl Servers {
    /// Starts both; the gateway accepts [`TOKEN`] and gives Redis 2 s per request.
    pub fn start() -> Self {
        let redis = Redis::start();
        let gateway = Gateway(test_support::Gateway::in_front_of(
            &redis,
            &["--timeout-ms", "2000"],
        ));
        Self { redis, gateway }
    }
}

/// The shared harness's gateway, with a transport to it.
pub struct Gateway(pub test_support::Gateway);

impl Gateway {
    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        self.0.url()
    }

    /// A transport to this gateway with [`TOKEN`] and a 5 s timeout.
    pub fn transport(&self) -> HttpTransport {
        HttpTransport::new(&self.url(), TOKEN)
            .unwrap()
            .with_timeout(Some(Duration::from_secs(5)))
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

/// One limit of each algorithm, `capacity` an hour.
pub fn hour_limits(capacity: u64) -> Vec<Algorithm> {
    let hour = Duration::from_secs(3600);
    vec![
        FixedWindow::new(capacity, hour).unwrap().into(),
        SlidingWindow::new(capacity, hour).unwrap().into(),
        TokenBucket::new(1, hour, capacity).unwrap().into(),
        Gcra::new(capacity, hour, capacity).unwrap().into(),
    ]
}

/// `command` sent to the gateway of `servers`, its reply as JSON.
pub async fn command(servers: &Servers, command: &[&str]) -> edgelimit::Result<Value> {
    let reply = RestClient::new(servers.gateway.transport())
        .command(command)
        .await?;
    // The crate's own JSON value, written out and read back by serde_json to compare with `json!`.
    Ok(serde_json::from_str(&reply.to_string()).expect("the crate writes valid JSON"))
}

/// The system clock, in milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}
