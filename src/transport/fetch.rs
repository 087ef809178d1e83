//! The WebAssembly transport: the runtime's own `fetch`, so it works in browsers, Workers, Deno, Node
//! and Vercel Edge alike.
//!
//! Everything JavaScript is reached through the global object (`globalThis`), never through `window`,
//! which workers, Deno and Node do not have. Promises are adopted with `Promise.resolve` and responses
//! are cast unchecked, because Vercel's edge-runtime hands back objects from another realm, for which
//! `instanceof` checks fail.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use js_sys::{Array, Function, Object, Promise, Reflect};
use wasm_bindgen::closure::Closure;
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

    fn url(&self, path: &str) -> String {
        if path.starts_with('/') {
            format!("{}{path}", self.base_url)
        } else {
            format!("{}/{path}", self.base_url)
        }
    }

    /// The `init` argument of `fetch`: method, headers, body, keepalive and abort signal.
    fn init(&self, body: String, signal: Option<&web_sys::AbortSignal>) -> Result<Object> {
        let headers = Object::new();
        set(
            &headers,
            "Authorization",
            &self.authorization.as_str().into(),
        )?;
        set(&headers, "Content-Type", &"application/json".into())?;
        let init = Object::new();
        set(&init, "method", &"POST".into())?;
        set(&init, "headers", &headers)?;
        if body.len() < KEEPALIVE_MAX_BODY {
            set(&init, "keepalive", &JsValue::TRUE)?;
        }
        set(&init, "body", &body.into())?;
        if let Some(signal) = signal {
            set(&init, "signal", signal)?;
        }
        Ok(init)
    }

    async fn send(
        &self,
        global: &Object,
        url: &str,
        init: &Object,
        timer: Option<&Timer>,
    ) -> Result<HttpReply> {
        let fetch = match &self.fetch {
            Some(fetch) => fetch.clone(),
            None => global_function(global, "fetch")?,
        };
        let pending = fetch
            .call2(global, &url.into(), init)
            .map_err(|e| network("fetch threw", &e))?;
        let response = settle(Promise::resolve(&pending), timer)
            .await
            .map_err(|e| network("fetch failed", &e))?;
        if response.is_null() || !response.is_object() {
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
        let text = settle(Promise::resolve(&text), timer)
            .await
            .map_err(|e| network("reading the body failed", &e))?;
        let body = text.as_string().ok_or_else(|| Error::Network {
            message: format!("the body read as {} instead of text", describe(&text)),
        })?;
        Ok(HttpReply { status, body })
    }
}

#[async_trait::async_trait(?Send)]
impl Transport for FetchTransport {
    async fn post(&self, path: &str, body: String) -> Result<HttpReply> {
        let global = js_sys::global();
        let url = self.url(path);
        let timer = match self.timeout {
            Some(after) => Some(Timer::start(&global, after)?),
            None => None,
        };
        let init = self.init(body, timer.as_ref().map(|t| &t.signal))?;
        let result = self.send(&global, &url, &init, timer.as_ref()).await;
        match (result, &timer) {
            (Err(_), Some(timer)) if timer.fired.get() => {
                Err(Error::Timeout { after: timer.after })
            }
            (result, _) => result,
        }
        // `timer` drops here, clearing the pending `setTimeout`.
    }
}

/// A `setTimeout` that aborts the request's `AbortController` and settles `expired`.
///
/// Racing against `expired` as well as aborting means a `fetch` that ignores `signal` (a custom one)
/// still gives up on time. Dropping the timer clears the JavaScript timeout, so none is left pending
/// (it would keep Node alive, and call a freed closure).
struct Timer {
    after: Duration,
    signal: web_sys::AbortSignal,
    expired: Promise,
    fired: Rc<Cell<bool>>,
    clear: Function,
    global: Object,
    id: JsValue,
    _on_expiry: Closure<dyn FnMut()>,
}

impl Timer {
    fn start(global: &Object, after: Duration) -> Result<Self> {
        let set_timeout = global_function(global, "setTimeout")?;
        let clear = global_function(global, "clearTimeout")?;
        let controller =
            AbortController::new().map_err(|e| network("AbortController is unavailable", &e))?;
        let signal = controller.signal();

        let mut resolve_expired = None;
        // `new_typed`, the constructor wasm-bindgen-futures uses too: one import in the glue, not two.
        let expired =
            Promise::new_typed::<JsValue>(&mut |resolve, _reject| resolve_expired = Some(resolve));
        let resolve_expired = resolve_expired.ok_or_else(|| Error::Network {
            message: "the Promise constructor did not run its executor".to_owned(),
        })?;

        let fired = Rc::new(Cell::new(false));
        let on_expiry = {
            let fired = Rc::clone(&fired);
            Closure::<dyn FnMut()>::new(move || {
                if fired.replace(true) {
                    return;
                }
                controller.abort();
                let _ = resolve_expired.call1(&JsValue::UNDEFINED, &JsValue::UNDEFINED);
            })
        };
        let millis = after.as_millis().min(i32::MAX as u128) as f64;
        let id = set_timeout
            .call2(global, on_expiry.as_ref(), &millis.into())
            .map_err(|e| network("setTimeout threw", &e))?;
        Ok(Self {
            after,
            signal,
            expired,
            fired,
            clear,
            global: global.clone(),
            id,
            _on_expiry: on_expiry,
        })
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        let _ = self.clear.call1(&self.global, &self.id);
    }
}

/// Awaits `promise`, or the timer's expiry if that comes first (then an error: the caller reports
/// the timeout).
async fn settle(promise: Promise, timer: Option<&Timer>) -> std::result::Result<JsValue, JsValue> {
    let Some(timer) = timer else {
        return JsFuture::from(promise).await;
    };
    let race = Promise::race(&Array::of2(&promise, &timer.expired));
    let value = JsFuture::from(race).await?;
    if timer.fired.get() {
        return Err(JsValue::from_str("timed out"));
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

fn set(target: &Object, key: &str, value: &JsValue) -> Result<()> {
    Reflect::set(target, &key.into(), value)
        .map(drop)
        .map_err(|e| network("building the request failed", &e))
}

fn network(context: &str, error: &JsValue) -> Error {
    Error::Network {
        message: format!("{context}: {}", describe(error)),
    }
}

/// A JavaScript value as text: `name: message` for errors, with the `cause` when there is one
/// (Node's `fetch failed` says what went wrong only there).
fn describe(value: &JsValue) -> String {
    if let Some(text) = value.as_string() {
        return text;
    }
    if !value.is_object() {
        // A primitive (`undefined`, a number, a symbol...) as `String(value)` writes it; not `{:?}`,
        // whose JavaScript half is a page of glue.
        return if value.is_function() {
            "a function".to_owned()
        } else {
            crate::number::js_string(value)
        };
    }
    let field = |of: &JsValue, key: &str| {
        Reflect::get(of, &key.into())
            .ok()
            .and_then(|v| v.as_string())
            .filter(|s| !s.is_empty())
    };
    let mut text = match (field(value, "name"), field(value, "message")) {
        (Some(name), Some(message)) => format!("{name}: {message}"),
        (None, Some(message)) => message,
        _ => js_sys::JSON::stringify(value)
            .ok()
            .and_then(|s| s.as_string())
            .unwrap_or_else(|| "an unknown JavaScript error".to_owned()),
    };
    if let Ok(cause) = Reflect::get(value, &"cause".into()) {
        if cause.is_object() {
            if let Some(message) = field(&cause, "message") {
                text = format!("{text} ({message})");
            }
        }
    }
    text
}
