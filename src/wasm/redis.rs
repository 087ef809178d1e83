//! `Redis`: where an Upstash-compatible REST server is and how to reach it.

use super::options::{self, get, JsResult};
use js_sys::{Function, Reflect};
use wasm_bindgen::prelude::*;

const URL_VAR: &str = "UPSTASH_REDIS_REST_URL";
const TOKEN_VAR: &str = "UPSTASH_REDIS_REST_TOKEN";

/// The connection settings of an Upstash-compatible REST server: `new Redis({ url, token, fetch? })`.
#[wasm_bindgen(js_name = Redis)]
#[derive(Debug, Clone)]
pub struct JsRedis {
    pub(super) config: RedisConfig,
}

/// The checked settings.
#[derive(Debug, Clone)]
pub struct RedisConfig {
    /// The REST URL (`http://` or `https://`).
    pub url: String,
    /// The bearer token.
    pub token: String,
    /// A `fetch` to use instead of the global one.
    pub fetch: Option<Function>,
}

impl RedisConfig {
    /// Reads `{ url, token, fetch? }` from `value` (a `Redis` or any object with those fields).
    pub fn read(context: &str, value: &JsValue) -> JsResult<Self> {
        options::object(context, "redis", value, false)?;
        let url = get(value, "url")?;
        let token = get(value, "token")?;
        let fetch = get(value, "fetch")?;
        Self::check(context, &url, &token, &fetch)
    }

    fn check(context: &str, url: &JsValue, token: &JsValue, fetch: &JsValue) -> JsResult<Self> {
        let url_text = options::string(context, "url", url, false)?;
        if !(url_text.starts_with("https://") || url_text.starts_with("http://")) {
            return Err(options::range_error(
                context,
                "url",
                "must start with https:// or http://",
                url,
            ));
        }
        Ok(Self {
            url: url_text,
            token: options::string(context, "token", token, false)?,
            fetch: options::function(context, "fetch", fetch)?,
        })
    }
}

#[wasm_bindgen(js_class = Redis)]
impl JsRedis {
    /// `new Redis({ url, token, fetch? })`.
    #[wasm_bindgen(constructor)]
    pub fn new(config: JsValue) -> JsResult<JsRedis> {
        super::install_panic_hook();
        const CONTEXT: &str = "new Redis";
        options::object(CONTEXT, "config", &config, false)?;
        let config = RedisConfig::check(
            CONTEXT,
            &get(&config, "url")?,
            &get(&config, "token")?,
            &get(&config, "fetch")?,
        )?;
        Ok(JsRedis { config })
    }

    /// `Redis.fromEnv(env?)`: `UPSTASH_REDIS_REST_URL` and `_TOKEN` from `env`, else `process.env`,
    /// else `Deno.env`.
    #[wasm_bindgen(js_name = fromEnv)]
    pub fn from_env(env: JsValue) -> JsResult<JsRedis> {
        super::install_panic_hook();
        const CONTEXT: &str = "Redis.fromEnv";
        options::object(CONTEXT, "env", &env, true)?;
        let url = lookup(&env, URL_VAR)?;
        let token = lookup(&env, TOKEN_VAR)?;
        for (name, value) in [(URL_VAR, &url), (TOKEN_VAR, &token)] {
            if value.as_string().is_none_or(|text| text.is_empty()) {
                return Err(options::type_error(
                    CONTEXT,
                    name,
                    "set to a non-empty string",
                    value,
                ));
            }
        }
        let config = RedisConfig::check(CONTEXT, &url, &token, &JsValue::UNDEFINED)?;
        Ok(JsRedis { config })
    }

    /// The server's URL.
    #[wasm_bindgen(getter)]
    pub fn url(&self) -> String {
        self.config.url.clone()
    }

    /// The bearer token.
    #[wasm_bindgen(getter)]
    pub fn token(&self) -> String {
        self.config.token.clone()
    }

    /// The custom `fetch`, if any.
    #[wasm_bindgen(getter)]
    pub fn fetch(&self) -> JsValue {
        self.config
            .fetch
            .as_ref()
            .map_or(JsValue::UNDEFINED, |f| f.clone().into())
    }
}

/// `name` from `env` if given, else from `process.env`, else from `Deno.env.get`; undefined if unset.
fn lookup(env: &JsValue, name: &str) -> JsResult<JsValue> {
    if !env.is_undefined() {
        return get(env, name);
    }
    let global: JsValue = js_sys::global().into();
    let process = Reflect::get(&global, &"process".into()).unwrap_or(JsValue::UNDEFINED);
    if process.is_object() {
        let process_env = Reflect::get(&process, &"env".into()).unwrap_or(JsValue::UNDEFINED);
        if process_env.is_object() {
            let value = Reflect::get(&process_env, &name.into()).unwrap_or(JsValue::UNDEFINED);
            if !value.is_undefined() {
                return Ok(value);
            }
        }
    }
    let deno = Reflect::get(&global, &"Deno".into()).unwrap_or(JsValue::UNDEFINED);
    if deno.is_object() {
        let deno_env = Reflect::get(&deno, &"env".into()).unwrap_or(JsValue::UNDEFINED);
        if let Ok(getter) = Reflect::get(&deno_env, &"get".into()) {
            if getter.is_function() {
                let getter: Function = getter.unchecked_into();
                // Without --allow-env, Deno throws: treat the variable as unset.
                if let Ok(value) = getter.call1(&deno_env, &name.into()) {
                    return Ok(value);
                }
            }
        }
    }
    Ok(JsValue::UNDEFINED)
}
