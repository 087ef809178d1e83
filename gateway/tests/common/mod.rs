//! What the gateway's protocol tests add to the shared harness (`test-support`): a direct Redis
//! connection and an HTTP client whose every reply must be JSON.

use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use test_support::{Gateway, Redis, TOKEN};

/// A direct connection to a test Redis, for checking state behind the gateway's back.
#[allow(dead_code)] // cluster.rs reaches its nodes by port
pub trait Direct {
    /// A connection to database `db` as the all-powerful `default` user.
    fn conn(&self, db: u8) -> redis::Connection;
}

impl Direct for Redis {
    fn conn(&self, db: u8) -> redis::Connection {
        redis::Client::open(self.admin_url(db))
            .and_then(|c| c.get_connection())
            .expect("direct redis connection")
    }
}

/// A reply: status, headers and parsed JSON body.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    #[allow(dead_code)] // protocol.rs reads it, resilience.rs does not
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
    try_send(client, method, url, headers, body)
        .await
        .expect("http request")
}

/// Sends one request; an error if the connection failed. Every reply body must be JSON.
pub async fn try_send(
    client: &Http,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> Result<Reply, hyper_util::client::legacy::Error> {
    let mut req = hyper::Request::builder().method(method).uri(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req.body(Full::new(body.into())).expect("request");
    let res = tokio::time::timeout(Duration::from_secs(20), client.request(req))
        .await
        .expect("gateway answered in time")?;
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
    Ok(Reply {
        status,
        headers,
        json,
    })
}

/// POSTs `body` to `url` with the read-write token, on a client and task of its own: a request
/// kept in flight (a script keeping Redis busy) while the test does something else.
#[allow(dead_code)] // protocol.rs sends every request in line
pub fn spawn_post(
    url: String,
    body: String,
) -> tokio::task::JoinHandle<Result<Reply, hyper_util::client::legacy::Error>> {
    tokio::spawn(async move {
        let client = http();
        let auth = format!("Bearer {TOKEN}");
        try_send(&client, "POST", &url, &[("Authorization", &auth)], body).await
    })
}

/// POSTs with the read-write token.
#[allow(dead_code)] // operations.rs starts its gateways with tokens of its own
pub async fn post(client: &Http, gw: &Gateway, path: &str, body: &str) -> Reply {
    post_as(client, gw, TOKEN, path, body).await
}

/// POSTs `body` to `path` with `token`.
#[allow(dead_code)] // each test binary uses a different part
pub async fn post_as(client: &Http, gw: &Gateway, token: &str, path: &str, body: &str) -> Reply {
    let auth = format!("Bearer {token}");
    send(
        client,
        "POST",
        &format!("{}{path}", gw.url()),
        &[("authorization", &auth)],
        body.to_owned(),
    )
    .await
}

/// GET /readyz without a token; its status.
#[allow(dead_code)] // not every test file checks readiness
pub async fn readyz(client: &Http, gw: &Gateway) -> u16 {
    send(client, "GET", &format!("{}/readyz", gw.url()), &[], "")
        .await
        .status
}

/// Polls /readyz until it answers `want`; panics after `within`.
#[allow(dead_code)] // not every test file checks readiness
pub async fn wait_readyz(client: &Http, gw: &Gateway, want: u16, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let status = readyz(client, gw).await;
        if status == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "/readyz still answers {status}, expected {want}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
