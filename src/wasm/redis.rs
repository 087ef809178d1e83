//! `Redis`: where an Upstash-compatible REST server is and how to reach it.

use super::errors::{range_error, type_error};
use super::options::{self, get, JsResult};
use js_sys::{Function, Reflect};
use wasm_bindgen::prelude::*;

/// The connection settings of an Upstash-compatible REST server: `new Redis({ url, token, fetch? })`.
#[wasm_bindgen(js_name = Redis)]
pub struct JsRedis {
    url: JsValue,
    token: JsValue,
    fetch: JsValue,
}

/// The checked settings.
pub struct RedisConfig {
    /// The REST URL (`http://` or `https://`).
    pub url: String,
    /// The bearer token.
    pub token: String,
    /// A `fetch` to use instead of the global one.
    pub fetch: Option<Function>,
}

impl RedisConfig {
    /// Reads `{ url, token, fetch? }` from `value` (a `Redis` or any object with those fields), the
    /// argument `field` of `context`.
    pub fn read(context: &str, field: &str, value: &JsValue) -> JsResult<Self> {
        let url = options::field(context, field, value, false, "url")?;
        Self::check(context, &url, &get(value, "token")?, &get(value, "fetch")?)
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
        })
    }
}

impl From<RedisConfig> for JsRedis {
    fn from(config: RedisConfig) -> Self {
        Self {
            url: config.url.into(),
            token: config.token.into(),
            fetch: config.fetch.map_or(JsValue::UNDEFINED, Into::into),
        }
    }
}

#[wasm_bindgen(js_class = Redis)]
impl JsRedis {
    /// `new Redis({ url, token, fetch? })`.
    #[wasm_bindgen(constructor)]
    pub fn new(config: JsValue) -> JsResult<JsRedis> {
        RedisConfig::read("new Redis", "config", &config).map(Self::from)
    }

    /// `Redis.fromEnv(env?)`: `UPSTASH_REDIS_REST_URL` and `_TOKEN` from `env`, else `process.env`,
    /// else `Deno.env`.
    #[wasm_bindgen(js_name = fromEnv)]
    pub fn from_env(env: JsValue) -> JsResult<JsRedis> {
        const CONTEXT: &str = "Redis.fromEnv";
        let url = variable(CONTEXT, &env, "UPSTASH_REDIS_REST_URL")?;
        let token = variable(CONTEXT, &env, "UPSTASH_REDIS_REST_TOKEN")?;
        RedisConfig::check(CONTEXT, &url, &token, &JsValue::UNDEFINED).map(Self::from)
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
}

/// The environment variable `name`, a non-empty string: from `env` if given, else from `process.env`,
/// else from `Deno.env.get`.
fn variable(context: &str, env: &JsValue, name: &str) -> JsResult<JsValue> {
    let value = if env.is_undefined() {
        from_globals(name)
    } else {
        options::field(context, "env", env, false, name)?
    };
    if value.as_string().is_none_or(|text| text.is_empty()) {
        return Err(type_error(
            context,
            name,
            "must be set to a non-empty string",
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
