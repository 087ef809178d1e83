//! The smallest package shaped like edgelimit's: `new Ratelimit({ url, token })` checks its two options,
//! `limit(identifier)` sends one command over the global `fetch`, awaits the reply and answers
//! `{ success, limit, remaining, pending }`; a panic hook reports panics; talc allocates. No algorithm,
//! no cache, no timeout, no fail mode. bench/size/probes.sh builds it as scripts/build_pkg.sh builds
//! edgelimit, to show how much of edgelimit's size any wasm-bindgen package that does this pays.

use js_sys::{Function, JsString, Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = console, js_name = error)]
    fn console_error(text: &str);
}

/// A Redis REST endpoint.
#[wasm_bindgen]
pub struct Redis {
    url: String,
}

#[wasm_bindgen]
impl Redis {
    /// The endpoint at `url`.
    #[wasm_bindgen(constructor)]
    pub fn new(url: String) -> Redis {
        Redis { url }
    }

    /// Its URL.
    pub fn url(&self) -> String {
        self.url.clone()
    }
}

/// A limit of 10 per identifier, counted by the server the options name.
#[wasm_bindgen]
pub struct Ratelimit {
    url: String,
    token: String,
}

/// `options[name]`, which must be a string.
fn string_option(options: &JsValue, name: &str) -> Result<String, JsValue> {
    Reflect::get(options, &name.into())?
        .as_string()
        .ok_or_else(|| js_sys::TypeError::new(&format!("{name} must be a string")).into())
}

/// `object[name] = value`.
fn set(object: &Object, name: &str, value: &JsValue) -> Result<(), JsValue> {
    Reflect::set(object, &name.into(), value).map(drop)
}

#[wasm_bindgen]
impl Ratelimit {
    /// Reads `url` and `token` from `options`.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<Ratelimit, JsValue> {
        std::panic::set_hook(Box::new(|info| {
            console_error(&format!("size-floor panicked: {info}"))
        }));
        Ok(Ratelimit {
            url: string_option(&options, "url")?,
            token: string_option(&options, "token")?,
        })
    }

    /// Counts one request of `identifier`.
    pub fn limit(&self, identifier: String) -> Promise {
        const LIMIT: f64 = 10.0;
        let (url, token) = (self.url.clone(), self.token.clone());
        wasm_bindgen_futures::future_to_promise(async move {
            let global = js_sys::global();
            let fetch: Function = Reflect::get(&global, &"fetch".into())?.unchecked_into();
            let headers = Object::new();
            set(
                &headers,
                "authorization",
                &JsString::from(format!("Bearer {token}")),
            )?;
            let init = Object::new();
            set(&init, "method", &"POST".into())?;
            set(&init, "headers", &headers)?;
            set(
                &init,
                "body",
                &JsString::from(format!("[\"INCR\",\"{identifier}\"]")),
            )?;
            let reply = fetch.call2(&global, &JsString::from(url), &init)?;
            let reply = JsFuture::from(Promise::resolve(&reply)).await?;
            let json: Function = Reflect::get(&reply, &"json".into())?.unchecked_into();
            let body = JsFuture::from(Promise::resolve(&json.call0(&reply)?)).await?;
            let count = Reflect::get(&body, &"result".into())?
                .as_f64()
                .unwrap_or(f64::NAN);
            let answer = Object::new();
            set(&answer, "success", &(count <= LIMIT).into())?;
            set(&answer, "limit", &LIMIT.into())?;
            set(&answer, "remaining", &(LIMIT - count).max(0.0).into())?;
            set(&answer, "pending", &Promise::resolve(&JsValue::UNDEFINED))?;
            Ok(answer.into())
        })
    }
}
