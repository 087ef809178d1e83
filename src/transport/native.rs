//! `HttpTransport`: the native transport, reqwest with rustls, for Rust services and native tests.

use super::{HttpReply, Transport};
use crate::error::{Error, Result};
use crate::maybe_send::BoxFuture;
use std::time::Duration;

/// Sends Upstash REST requests with a pooled `reqwest` client (keep-alive, HTTP/1.1).
#[derive(Debug, Clone)]
pub struct HttpTransport {
    client: reqwest::Client,
    base_url: String,
    authorization: String,
    timeout: Option<Duration>,
}

impl HttpTransport {
    /// A transport to the server at `base_url` (such as `https://…upstash.io`) with `token`, and no timeout.
    ///
    /// Fails when the HTTP client cannot be built (no TLS provider).
    pub fn new(base_url: &str, token: &str) -> Result<Self> {
        let client = reqwest::Client::builder()
            .build()
            .map_err(|error| Error::Network {
                message: error_chain(&error),
            })?;
        Ok(Self {
            client,
            base_url: base_url.trim_end_matches('/').to_owned(),
            authorization: format!("Bearer {token}"),
            timeout: None,
        })
    }

    /// The same transport giving up after `timeout` per request (`None`: wait for ever).
    pub fn with_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        self
    }
}

impl Transport for HttpTransport {
    fn post<'a>(&'a self, path: &'a str, body: String) -> BoxFuture<'a, Result<HttpReply>> {
        Box::pin(async move {
            let mut request = self
                .client
                .post(format!("{}{path}", self.base_url))
                .header(reqwest::header::AUTHORIZATION, &self.authorization)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body);
            if let Some(timeout) = self.timeout {
                request = request.timeout(timeout);
            }
            let failed = |error: reqwest::Error| match self.timeout {
                Some(after) if error.is_timeout() => Error::Timeout { after },
                _ => Error::Network {
                    message: error_chain(&error),
                },
            };
            let response = request.send().await.map_err(failed)?;
            let status = response.status().as_u16();
            let body = response.bytes().await.map_err(failed)?.to_vec();
            Ok(HttpReply { status, body })
        })
    }
}

/// The error and its sources, so "connection refused" is not hidden behind "error sending request".
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}
