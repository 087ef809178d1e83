//! How Upstash REST requests reach the server: one HTTP POST, whatever the platform.
//!
//! A [`Transport`] only moves bytes: it POSTs a JSON body to a path under the server's URL with the
//! bearer token, and returns the status and body. Encoding commands and decoding replies is the same on
//! every platform and lives in [`crate::redis`].

#[cfg(target_arch = "wasm32")]
mod fetch;
#[cfg(all(feature = "native", not(target_arch = "wasm32")))]
mod native;

#[cfg(target_arch = "wasm32")]
pub use fetch::FetchTransport;
#[cfg(all(feature = "native", not(target_arch = "wasm32")))]
pub use native::HttpTransport;

use crate::error::Result;
use crate::maybe_send::{BoxFuture, MaybeSendSync};
use std::time::Duration;

/// An HTTP reply: status code and body bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpReply {
    /// The HTTP status code.
    pub status: u16,
    /// The body, as received.
    pub body: Vec<u8>,
}

/// Sends one request to an Upstash-compatible REST server.
///
/// Implementations add `Authorization: Bearer <token>` and `Content-Type: application/json`, apply
/// their timeout, and map failures to [`crate::Error::Network`] (no reply at all) or
/// [`crate::Error::Timeout`]. Any reply, whatever its status, is returned as an [`HttpReply`].
/// A transport owns what it needs (`'static`), so that a request shared by coalesced callers can
/// outlive any one of them.
pub trait Transport: MaybeSendSync + 'static {
    /// POSTs `body` (JSON) to `path` (such as `"/pipeline"`) under the server's base URL.
    fn post<'a>(&'a self, path: &'a str, body: String) -> BoxFuture<'a, Result<HttpReply>>;

    /// The time of a whole call (the EVALSHA of a script, then its EVAL on NOSCRIPT), which
    /// [`Transport::post_within`] divides; by default none, each request having the transport's own.
    fn timeout(&self) -> Option<Duration> {
        None
    }

    /// [`Transport::post`], answering a timeout after `within` (what is left of a call's
    /// [`Transport::timeout`]) while the request itself runs on (an EVAL that loads its script for
    /// the next calls). By default, the same as `post`.
    fn post_within<'a>(
        &'a self,
        path: &'a str,
        body: String,
        within: Duration,
    ) -> BoxFuture<'a, Result<HttpReply>> {
        let _ = within;
        self.post(path, body)
    }
}
