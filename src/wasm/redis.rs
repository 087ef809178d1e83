//! `Redis`: where an Upstash-compatible REST server is and how to reach it.

use super::errors::{range_error, type_error};
use super::options::{self, get, JsResult};
use crate::js::globals;
use crate::transport::FetchTransport;
use js_sys::{Function, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// The connection settings of an Upstash-compatible REST server: `new Redis({ url, token, fetch? })`.
#[wasm_bindgen(js_name = Redis)]
pub struct JsRedis {
    url: JsValue,
    token: JsValue,
    fetch: JsValue,
    /// What `Redis.fromEnv()` found unset in the environment, if anything: then there is no server.
    unset: Option<String>,
}

/// The checked settings.
pub struct RedisConfig {
    /// The REST URL (`http://` or `https://`).
    pub url: String,
    /// The bearer token.
    pub token: String,
    /// A `fetch` to use instead of the global one.
    pub fetch: Option<Function>,
    /// What `Redis.fromEnv()` found unset: every request then fails saying so.
    pub unset: Option<String>,
}

/// The options of `new Redis`: its own, and `@upstash/redis`'s `enableTelemetry` (edgelimit sends no
/// telemetry, so both values are honoured).
const REDIS_OPTIONS: [&str; 4] = ["url", "token", "fetch", "enableTelemetry"];

impl RedisConfig {
    /// Reads the settings from `value`, the argument `field` of `context`: an edgelimit `Redis`, any
    /// object with `{ url, token, fetch? }`, or an `@upstash/redis` `Redis`.
    pub fn read(context: &str, field: &str, value: &JsValue) -> JsResult<Self> {
        let url = options::field(context, field, value, false, "url")?;
        if url.is_undefined() {
            if let Some(unset) = get(value, "unset")?.as_string() {
                return Ok(Self::unconfigured(unset));
            }
            if let Some(config) = Self::upstash(context, value)? {
                return Ok(config);
            }
        }
        Self::check(context, &url, &get(value, "token")?, &get(value, "fetch")?)
    }

    /// No server: what `Redis.fromEnv()` says when `unset` is.
    fn unconfigured(unset: String) -> Self {
        Self {
            url: String::new(),
            token: String::new(),
            fetch: None,
            unset: Some(unset),
        }
    }

    /// The transport to this server, giving up after `timeout`; every request fails saying what is
    /// unset when `Redis.fromEnv()` found no server.
    pub fn transport(self, timeout: Option<std::time::Duration>) -> FetchTransport {
        match self.unset {
            Some(unset) => FetchTransport::unconfigured(unset),
            None => FetchTransport::new(&self.url, &self.token)
                .with_timeout(timeout)
                .with_fetch(self.fetch),
        }
    }

    /// The settings of an `@upstash/redis` `Redis` made with a URL and a token, else `None`.
    ///
    /// `@upstash/redis` (1.x) has no public accessor for them: its HTTP client keeps the URL as
    /// `client.baseUrl` and the token in `client.headers.authorization` (`"Bearer <token>"`), which is
    /// where `@upstash/redis` itself reads them on every request. It always sends with the global
    /// `fetch`, and so does edgelimit then. Not inlined: edgelimit's own `Redis` needs none of it.
    #[inline(never)]
    fn upstash(context: &str, value: &JsValue) -> JsResult<Option<Self>> {
        let client = get(value, "client")?;
        if !client.is_object() {
            return Ok(None);
        }
        let url = get(&client, "baseUrl")?;
        let headers = get(&client, "headers")?;
        if url.as_string().is_none() || !headers.is_object() {
            return Err(type_error(
                context,
                "redis",
                "must be made with a url and a token (a Redis over a custom requester has neither)",
                value,
            ));
        }
        let authorization = get(&headers, "authorization")?
            .as_string()
            .unwrap_or_default();
        let token = authorization.strip_prefix("Bearer ").unwrap_or_default();
        Self::check(context, &url, &token.into(), &JsValue::UNDEFINED).map(Some)
    }

    fn check(context: &str, url: &JsValue, token: &JsValue, fetch: &JsValue) -> JsResult<Self> {
        let url_text = options::string(context, "url", url, false)?;
        if !(url_text.starts_with("https://") || url_text.starts_with("http://")) {
            return Err(range_error(
                context,
                "url",
                "must start with https:// or http://",
                url,
            ));
        }
        let token = options::string(context, "token", token, false)?;
        // `is_function` rather than `instanceof`: a function from another realm is fine.
        let fetch = match fetch {
            _ if fetch.is_undefined() => None,
            _ if fetch.is_function() => Some(fetch.clone().unchecked_into()),
            _ => return Err(type_error(context, "fetch", "must be a function", fetch)),
        };
        Ok(Self {
            url: url_text,
            token,
            fetch,
            unset: None,
        })
    }
}

impl From<RedisConfig> for JsRedis {
    fn from(config: RedisConfig) -> Self {
        Self {
            url: config.url.into(),
            token: config.token.into(),
            fetch: config.fetch.map_or(JsValue::UNDEFINED, Into::into),
            unset: None,
        }
    }
}

#[wasm_bindgen(js_class = Redis)]
impl JsRedis {
    /// `new Redis({ url, token, fetch? })`.
    #[wasm_bindgen(constructor)]
    pub fn new(config: JsValue) -> JsResult<JsRedis> {
        const CONTEXT: &str = "new Redis";
        let redis = RedisConfig::read(CONTEXT, "config", &config)?;
        options::known_keys(CONTEXT, &config, &REDIS_OPTIONS)?;
        let telemetry = get(&config, "enableTelemetry")?;
        if !(telemetry.is_undefined() || telemetry.as_bool().is_some()) {
            return Err(type_error(
                CONTEXT,
                "enableTelemetry",
                "must be a boolean",
                &telemetry,
            ));
        }
        Ok(redis.into())
    }

    /// `Redis.fromEnv(env?)`: `UPSTASH_REDIS_REST_URL` and `_TOKEN` (or, as `@upstash/redis` reads
    /// them, Vercel's `KV_REST_API_URL` and `_TOKEN`) from `env`, else `process.env`, else `Deno.env`.
    /// A variable unset in `env` throws; unset in the environment, it is warned about (as
    /// `@upstash/redis` does) and every request of a limit with this Redis fails naming it: a build
    /// that evaluates modules without the runtime's variables (`next build`) still builds.
    #[wasm_bindgen(js_name = fromEnv)]
    pub fn from_env(env: JsValue) -> JsResult<JsRedis> {
        const CONTEXT: &str = "Redis.fromEnv";
        let variables = variable(CONTEXT, &env, "UPSTASH_REDIS_REST_URL", "KV_REST_API_URL")
            .and_then(|url| {
                let token = ("UPSTASH_REDIS_REST_TOKEN", "KV_REST_API_TOKEN");
                Ok((url, variable(CONTEXT, &env, token.0, token.1)?))
            });
        match variables {
            Ok((url, token)) => {
                RedisConfig::check(CONTEXT, &url, &token, &JsValue::UNDEFINED).map(Self::from)
            }
            Err(error) if env.is_undefined() => {
                let unset = match error.dyn_ref::<js_sys::Error>() {
                    Some(error) => String::from(error.message()),
                    None => globals::string(&error),
                };
                let _ = globals::console_warn(
                    &[&unset, ": requests will fail until it is set"].concat(),
                );
                Ok(Self {
                    url: JsValue::UNDEFINED,
                    token: JsValue::UNDEFINED,
                    fetch: JsValue::UNDEFINED,
                    unset: Some(unset),
                })
            }
            Err(error) => Err(error),
        }
    }

    /// The server's URL.
    #[wasm_bindgen(getter)]
    pub fn url(&self) -> JsValue {
        self.url.clone()
    }

    /// The bearer token.
    #[wasm_bindgen(getter)]
    pub fn token(&self) -> JsValue {
        self.token.clone()
    }

    /// The custom `fetch`, if any.
    #[wasm_bindgen(getter)]
    pub fn fetch(&self) -> JsValue {
        self.fetch.clone()
    }

    /// What `Redis.fromEnv()` found unset in the environment, if anything.
    #[wasm_bindgen(getter)]
    pub fn unset(&self) -> Option<String> {
        self.unset.clone()
    }
}

/// The environment variable `name`, else `fallback` (when `name` is unset or empty, as
/// `@upstash/redis` reads them), a non-empty string: from `env` if given, else from `process.env`, else
/// from `Deno.env.get`.
fn variable(context: &str, env: &JsValue, name: &str, fallback: &str) -> JsResult<JsValue> {
    let read = |name| {
        if env.is_undefined() {
            Ok(from_globals(name))
        } else {
            options::field(context, "env", env, false, name)
        }
    };
    let empty = |value: &JsValue| value.as_string().is_none_or(|text| text.is_empty());
    let mut value = read(name)?;
    if empty(&value) {
        let other = read(fallback)?;
        if !empty(&other) {
            value = other;
        }
    }
    if empty(&value) {
        return Err(type_error(
            context,
            name,
            &["(or `", fallback, "`) must be set to a non-empty string"].concat(),
            &value,
        ));
    }
    Ok(value)
}

/// `name` from `process.env`, else from `Deno.env.get`; undefined if unset.
fn from_globals(name: &str) -> JsValue {
    let global = js_sys::global().into();
    let value = property(&property(&property(&global, "process"), "env"), name);
    if !value.is_undefined() {
        return value;
    }
    let env = property(&property(&global, "Deno"), "env");
    let get = property(&env, "get");
    if get.is_function() {
        // Without --allow-env, Deno throws: the variable is unset.
        if let Ok(value) = get.unchecked_ref::<Function>().call1(&env, &name.into()) {
            return value;
        }
    }
    JsValue::UNDEFINED
}

/// `of[key]`; undefined when `of` is not an object or the getter throws.
fn property(of: &JsValue, key: &str) -> JsValue {
    Reflect::get(of, &key.into()).unwrap_or_default()
}
