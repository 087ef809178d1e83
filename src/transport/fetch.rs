//! The WebAssembly transport: the runtime's own `fetch`, so it works in browsers, Workers, Deno, Node
//! and Vercel Edge alike.
//!
//! One request is one call into JavaScript (`post` of `src/js/boundary.js`), which sends it, reads the
//! body as bytes, applies the timeout and hands the outcome to one Rust function made once for the
//! instance ([`deliver`]), which completes the request's one-shot channel: no Promise is wrapped and no
//! callback made per request. The URL and the headers are JavaScript values made once per transport.
//! `fetch` is taken from the global object (`globalThis`), never from `window`, which workers, Deno
//! and Node do not have.

use std::time::Duration;

use std::cell::RefCell;

use futures_channel::oneshot;
use js_sys::{Array, Function, Uint8Array};
use slab::Slab;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};

use super::{HttpReply, Transport};
use crate::error::{Error, Result};
use crate::js::boundary;
use crate::js::globals;
use crate::maybe_send::BoxFuture;

/// The path of the pipeline endpoint, where the REST client sends every request.
const PIPELINE: &str = "/pipeline";

/// POSTs to an Upstash-compatible REST server with the JavaScript `fetch` function.
#[derive(Debug, Clone)]
pub struct FetchTransport {
    /// Why requests cannot be sent, when the server's address is unknown (see
    /// [`FetchTransport::unconfigured`]).
    unconfigured: Option<String>,
    base_url: String,
    headers: JsValue,
    timeout: Option<Duration>,
    fetch: JsValue,
    /// `<base_url>/pipeline`, where every request goes, as a JavaScript string.
    pipeline_url: JsValue,
}

impl FetchTransport {
    /// A transport to `base_url` (such as `https://eu1-x.upstash.io`; a trailing `/` is ignored)
    /// authenticating with `token`, with no timeout and the global `fetch`.
    pub fn new(base_url: &str, token: &str) -> Self {
        let base_url = base_url.trim_end_matches('/').to_owned();
        Self {
            unconfigured: None,
            pipeline_url: [base_url.as_str(), PIPELINE].concat().into(),
            base_url,
            headers: boundary::request_headers(&["Bearer ", token].concat()),
            timeout: None,
            fetch: JsValue::UNDEFINED,
        }
    }

    /// A transport with no server to send to, every request of which fails with
    /// [`Error::Unconfigured`] saying `why`.
    pub fn unconfigured(why: String) -> Self {
        Self {
            unconfigured: Some(why),
            ..Self::new("", "")
        }
    }

    /// Gives up on a request (aborting it) after `timeout`; `None` waits forever.
    pub fn with_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        self
    }

    /// Uses `fetch` instead of the global one; `None` restores the global one.
    ///
    /// It is called like the global `fetch`, as `fetch(url, init)` with `globalThis` as `this`, and
    /// must return a promise of a `Response` (or an object with `status` and `arrayBuffer()` or
    /// `text()`) whose body is unread. A rejection is an outage, as the platform's `fetch` rejects on
    /// a network failure; anything else that breaks this contract is [`Error::Fetch`].
    pub fn with_fetch(mut self, fetch: Option<Function>) -> Self {
        self.fetch = fetch.map_or(JsValue::UNDEFINED, JsValue::from);
        self
    }

    /// The base URL requests go to, without a trailing `/`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// `path` under the base URL, as a JavaScript string.
    fn url(&self, path: &str) -> JsValue {
        if path == PIPELINE {
            return self.pipeline_url.clone();
        }
        let separator = if path.starts_with('/') { "" } else { "/" };
        format!("{}{separator}{path}", self.base_url).into()
    }
}

impl Transport for FetchTransport {
    fn post<'a>(&'a self, path: &'a str, body: String) -> BoxFuture<'a, Result<HttpReply>> {
        self.send(path, body, self.timeout)
    }

    /// The `timeout` of a whole call, as `Ratelimit`'s option says.
    fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    fn post_within<'a>(
        &'a self,
        path: &'a str,
        body: String,
        within: Duration,
    ) -> BoxFuture<'a, Result<HttpReply>> {
        self.send(
            path,
            body,
            Some(self.timeout.map_or(within, |own| own.min(within))),
        )
    }
}

impl FetchTransport {
    /// GETs `url` (any URL, such as a list to load into Redis) with this transport's `fetch` and
    /// timeout; failures are the same errors as a POST's. No bearer token is sent.
    pub async fn get(&self, url: &str) -> Result<HttpReply> {
        let abort_ms = millis(self.timeout);
        let url = JsValue::from_str(url);
        self.request(self.timeout, |id, deliver| {
            boundary::get(&self.fetch, &url, abort_ms, id, deliver)
        })
        .await
    }

    /// POSTs `body` to `path`, answering a timeout after `timeout`; the request itself is aborted
    /// after the transport's own timeout.
    fn send<'a>(
        &'a self,
        path: &'a str,
        body: String,
        timeout: Option<Duration>,
    ) -> BoxFuture<'a, Result<HttpReply>> {
        Box::pin(async move {
            let (abort_ms, timeout_ms) = (millis(self.timeout), millis(timeout));
            let url = self.url(path);
            self.request(timeout, |id, deliver| {
                boundary::post(
                    &self.fetch,
                    &url,
                    &self.headers,
                    &body,
                    abort_ms,
                    timeout_ms,
                    id,
                    deliver,
                )
            })
            .await
        })
    }

    /// Sends a request with `start(id, deliver)` (a call of `boundary.js`) and waits for its outcome,
    /// a timeout when it was given up after `timeout`.
    async fn request(
        &self,
        timeout: Option<Duration>,
        start: impl FnOnce(u32, &JsValue),
    ) -> Result<HttpReply> {
        if let Some(why) = &self.unconfigured {
            return Err(Error::Unconfigured {
                message: why.clone(),
            });
        }
        let (sender, outcome) = oneshot::channel();
        let id = IN_FLIGHT.with_borrow_mut(|in_flight| in_flight.insert(sender)) as u32;
        DELIVER.with(|deliver| start(id, deliver.as_ref()));
        let outcome = outcome.await.unwrap_or_else(|_| {
            Err(Array::of2(&"the request was dropped".into(), &JsValue::UNDEFINED).into())
        });
        outcome.map_err(|failure| failure_error(&failure, timeout))
    }
}

/// `after` in whole milliseconds from 1 to 2^31 - 1 (`setTimeout`'s range), 0 for none.
fn millis(after: Option<Duration>) -> f64 {
    after.map_or(0.0, |after| {
        after.as_millis().clamp(1, i32::MAX as u128) as f64
    })
}

/// The error of a request that failed with `[stage, error]` (or whose sending threw `error`), given up
/// after `timeout`; `[stage, error, true]` is a `fetch` that broke its contract ([`Error::Fetch`]).
fn failure_error(failure: &JsValue, timeout: Option<Duration>) -> Error {
    let (stage, error, misused) = match failure.dyn_ref::<Array>() {
        Some(pair) => (
            pair.get(0).as_string().unwrap_or_default(),
            pair.get(1),
            pair.get(2).is_truthy(),
        ),
        None => ("the request failed".to_owned(), failure.clone(), false),
    };
    let message = format!("{stage}: {}", describe(&error));
    match timeout {
        _ if misused => Error::Fetch { message },
        Some(after) if stage == "timeout" => Error::Timeout { after },
        _ => Error::Network { message },
    }
}

/// What a request's JavaScript half delivers: the reply, or `[stage, error]`.
type Outcome = std::result::Result<HttpReply, JsValue>;

thread_local! {
    /// The requests sent and not yet delivered, by id.
    static IN_FLIGHT: RefCell<Slab<oneshot::Sender<Outcome>>> = const { RefCell::new(Slab::new()) };
    /// [`deliver`] as a JavaScript function, made once and kept for the life of the instance.
    static DELIVER: Closure<dyn FnMut(u32, f64, JsValue)> = Closure::new(deliver);
}

/// Hands request `id` its reply (`status` and a `Uint8Array` of the body), or, for a negative status,
/// its failure; a request whose caller went away is dropped.
fn deliver(id: u32, status: f64, payload: JsValue) {
    let sender = IN_FLIGHT.with_borrow_mut(|in_flight| in_flight.try_remove(id as usize));
    if let Some(sender) = sender {
        let outcome = if status < 0.0 {
            Err(payload)
        } else {
            Ok(HttpReply {
                status: status as u16,
                body: payload.unchecked_into::<Uint8Array>().to_vec(),
            })
        };
        let _ = sender.send(outcome);
    }
}

/// A JavaScript value as text: `name: message` for errors, with the `cause` when there is one
/// (Node's `fetch failed` says what went wrong only there).
fn describe(value: &JsValue) -> String {
    if value.is_function() {
        return "a function".to_owned();
    }
    if !value.is_object() {
        // A primitive (a string, `undefined`, a number, a symbol...) as `String(value)` writes it.
        return globals::string(value);
    }
    let message = field(value, "message");
    let mut text = match field(value, "name") {
        name if name.is_empty() || message.is_empty() => message,
        name => format!("{name}: {message}"),
    };
    if text.is_empty() {
        text = js_sys::JSON::stringify(value)
            .ok()
            .and_then(|s| s.as_string())
            .unwrap_or_else(|| "an unknown JavaScript error".to_owned());
    }
    if let Ok(cause) = js_sys::Reflect::get(value, &"cause".into()) {
        let message = field(&cause, "message");
        if !message.is_empty() {
            text = format!("{text} ({message})");
        }
    }
    text
}

/// `of[key]` if it is a string, else empty.
fn field(of: &JsValue, key: &str) -> String {
    js_sys::Reflect::get(of, &key.into())
        .ok()
        .and_then(|value| value.as_string())
        .unwrap_or_default()
}
