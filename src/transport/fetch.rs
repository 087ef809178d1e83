//! The WebAssembly transport: the runtime's own `fetch`, so it works in browsers, Workers, Deno, Node
//! and Vercel Edge alike.
//!
//! Everything JavaScript is reached through the global object (`globalThis`), never through `window`,
//! which workers, Deno and Node do not have. Promises are adopted with `Promise.resolve` and responses
//! are cast unchecked, because Vercel's edge-runtime hands back objects from another realm, for which
//! `instanceof` checks fail.

use std::cell::Cell;
use std::time::Duration;

use js_sys::{Array, Function, Object, Promise, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, Response};

use super::{HttpReply, Transport};
use crate::error::{Error, Result};

/// Browsers refuse `keepalive` requests whose bodies add up to 64 KiB or more.
const KEEPALIVE_MAX_BODY: usize = 64 * 1024;

/// POSTs to an Upstash-compatible REST server with the JavaScript `fetch` function.
#[derive(Debug, Clone)]
pub struct FetchTransport {
    base_url: String,
    authorization: String,
    timeout: Option<Duration>,
    fetch: Option<Function>,
}

impl FetchTransport {
    /// A transport to `base_url` (such as `https://eu1-x.upstash.io`; a trailing `/` is ignored)
    /// authenticating with `token`, with no timeout and the global `fetch`.
    pub fn new(base_url: &str, token: &str) -> Self {
        Self {
            base_url: base_url.trim_end_matches('/').to_owned(),
            authorization: format!("Bearer {token}"),
            timeout: None,
            fetch: None,
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
    /// must return a promise of a `Response` (or an object with `status` and `text()`).
    pub fn with_fetch(mut self, fetch: Option<Function>) -> Self {
        self.fetch = fetch;
        self
    }

    /// The base URL requests go to, without a trailing `/`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The timeout set with [`FetchTransport::with_timeout`].
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// The `init` argument of `fetch`: method, headers, body, keepalive and the timer's abort signal.
    fn init(&self, body: String, timer: Option<&Timer>) -> Object {
        let headers = Object::new();
        set(
            &headers,
            "Authorization",
            &self.authorization.as_str().into(),
        );
        set(&headers, "Content-Type", &"application/json".into());
        let init = Object::new();
        set(&init, "method", &"POST".into());
        set(&init, "headers", &headers);
        set(
            &init,
            "keepalive",
            &JsValue::from_bool(body.len() < KEEPALIVE_MAX_BODY),
        );
        set(&init, "body", &body.into());
        if let Some(timer) = timer {
            set(&init, "signal", &timer.controller.signal());
        }
        init
    }

    async fn send(
        &self,
        global: &Object,
        path: &str,
        body: String,
        timer: Option<&Timer>,
    ) -> Result<HttpReply> {
        let fetch = match &self.fetch {
            Some(fetch) => fetch.clone(),
            None => global_function(global, "fetch")?,
        };
        let mut url = self.base_url.clone();
        if !path.starts_with('/') {
            url.push('/');
        }
        url.push_str(path);
        let pending = fetch
            .call2(global, &url.into(), &self.init(body, timer))
            .map_err(|e| network("fetch threw", &e))?;
        let response = settle(pending, timer)
            .await
            .map_err(|e| network("fetch failed", &e))?;
        if !response.is_object() {
            return Err(Error::Network {
                message: format!(
                    "fetch resolved to {} instead of a Response",
                    describe(&response)
                ),
            });
        }
        let response: Response = response.unchecked_into();
        let status = response.status();
        let text = response
            .text()
            .map_err(|e| network("reading the body threw", &e))?;
        let text = settle(text.into(), timer)
            .await
            .map_err(|e| network("reading the body failed", &e))?;
        let body = text.as_string().ok_or_else(|| Error::Network {
            message: format!("the body read as {} instead of text", describe(&text)),
        })?;
        Ok(HttpReply {
            status,
            body: body.into_bytes(),
        })
    }
}

#[async_trait::async_trait(?Send)]
impl Transport for FetchTransport {
    async fn post(&self, path: &str, body: String) -> Result<HttpReply> {
        let global = js_sys::global();
        let timer = match self.timeout {
            Some(after) => Some(Timer::start(&global, after)?),
            None => None,
        };
        let result = self.send(&global, path, body, timer.as_ref()).await;
        match timer {
            Some(timer) if timer.fired.get() => Err(Error::Timeout { after: timer.after }),
            _ => result,
        }
        // `timer` drops by now, clearing the pending `setTimeout`.
    }
}

/// A `setTimeout` that fulfils `expired` with the request's `AbortController`, a value no `fetch` or
/// `text()` resolves to.
///
/// Racing against `expired`, then aborting, means a `fetch` that ignores `signal` (a custom one) still
/// gives up on time. No Rust closure is involved: `setTimeout` calls the promise's own `resolve`.
/// Dropping the timer clears the JavaScript timeout, so none is left pending (it would keep Node
/// alive).
struct Timer {
    after: Duration,
    controller: AbortController,
    expired: Promise,
    fired: Cell<bool>,
    clear: Function,
    global: Object,
    id: JsValue,
}

impl Timer {
    fn start(global: &Object, after: Duration) -> Result<Self> {
        let set_timeout = global_function(global, "setTimeout")?;
        let clear = global_function(global, "clearTimeout")?;
        let controller =
            AbortController::new().map_err(|e| network("AbortController is unavailable", &e))?;
        let millis = JsValue::from_f64(after.as_millis().min(i32::MAX as u128) as f64);
        let mut id = Err(JsValue::UNDEFINED);
        // `new_typed`, the constructor wasm-bindgen-futures uses too: one import in the glue, not two.
        let expired = Promise::new_typed::<JsValue>(&mut |resolve, _reject| {
            id = set_timeout.call3(global, &resolve.into(), &millis, &controller);
        });
        let id = id.map_err(|e| network("setTimeout threw", &e))?;
        Ok(Self {
            after,
            controller,
            expired,
            fired: Cell::new(false),
            clear,
            global: global.clone(),
            id,
        })
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        let _ = self.clear.call1(&self.global, &self.id);
    }
}

/// Awaits `pending` (a promise or a value, of any realm), or the timer's expiry if that comes first:
/// then the request is aborted and the timer marked as fired (the caller reports the timeout).
async fn settle(pending: JsValue, timer: Option<&Timer>) -> std::result::Result<JsValue, JsValue> {
    // Without a timer, racing `pending` against itself adopts it as `Promise.resolve` would.
    let expired = timer.map_or(&pending, |timer| &timer.expired);
    let value = JsFuture::from(Promise::race(&Array::of2(&pending, expired))).await?;
    if let Some(timer) = timer {
        if value == **timer.controller {
            timer.fired.set(true);
            timer.controller.abort();
            return Err(value);
        }
    }
    Ok(value)
}

/// `globalThis[name]`, which must be a function.
fn global_function(global: &Object, name: &str) -> Result<Function> {
    let value = Reflect::get(global, &name.into()).map_err(|e| network(name, &e))?;
    if value.is_function() {
        Ok(value.unchecked_into())
    } else {
        Err(Error::Network {
            message: format!("this JavaScript runtime has no global `{name}` function"),
        })
    }
}

/// Sets `target[key]`; a fresh plain object takes any key, so there is no failure to report.
fn set(target: &Object, key: &str, value: &JsValue) {
    let _ = Reflect::set(target, &key.into(), value);
}

/// A network error: `context`, then the JavaScript value that came instead.
fn network(context: &str, error: &JsValue) -> Error {
    Error::Network {
        message: format!("{context}: {}", describe(error)),
    }
}

/// A JavaScript value as text: `name: message` for errors, with the `cause` when there is one
/// (Node's `fetch failed` says what went wrong only there).
fn describe(value: &JsValue) -> String {
    if value.is_function() {
        return "a function".to_owned();
    }
    if !value.is_object() {
        // A primitive (a string, `undefined`, a number, a symbol...) as `String(value)` writes it; not
        // `{:?}`, whose JavaScript half is a page of glue.
        return crate::number::js_string(value);
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
    if let Ok(cause) = Reflect::get(value, &"cause".into()) {
        let message = field(&cause, "message");
        if !message.is_empty() {
            text = format!("{text} ({message})");
        }
    }
    text
}

/// `of[key]` if it is a string, else empty.
fn field(of: &JsValue, key: &str) -> String {
    Reflect::get(of, &key.into())
        .ok()
        .and_then(|value| value.as_string())
        .unwrap_or_default()
}
