//! `FetchTransport` against a real gateway and redis-server.
//!
//! Run through `bash scripts/with_gateway.sh wasm-pack test --node` (or `--headless --chrome`), which
//! starts the servers and passes their addresses at compile time.
#![cfg(target_arch = "wasm32")]

use std::time::Duration;

use edgelimit::transport::{FetchTransport, HttpReply, Transport};
use edgelimit::Error;
use js_sys::{Function, Object, Promise, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::wasm_bindgen_test;

/// A compile-time setting from `scripts/with_gateway.sh`.
fn setting(value: Option<&'static str>, name: &str) -> &'static str {
    value.unwrap_or_else(|| {
        panic!(
            "{name} was not set at compile time: run the tests through \
             `bash scripts/with_gateway.sh wasm-pack test --node`"
        )
    })
}

fn gateway_url() -> &'static str {
    setting(option_env!("EDGELIMIT_TEST_URL"), "EDGELIMIT_TEST_URL")
}

fn token() -> &'static str {
    setting(option_env!("EDGELIMIT_TEST_TOKEN"), "EDGELIMIT_TEST_TOKEN")
}

fn closed_url() -> &'static str {
    setting(
        option_env!("EDGELIMIT_TEST_CLOSED_URL"),
        "EDGELIMIT_TEST_CLOSED_URL",
    )
}

fn blackhole_url() -> &'static str {
    setting(
        option_env!("EDGELIMIT_TEST_BLACKHOLE_URL"),
        "EDGELIMIT_TEST_BLACKHOLE_URL",
    )
}

/// A key no other test (or earlier run against the same Redis) uses.
fn unique_key(name: &str) -> String {
    format!(
        "edgelimit:test:wasm_fetch:{name}:{}",
        js_sys::Math::random()
    )
}

fn json(body: &[u8]) -> serde_json::Value {
    serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(body)))
}

fn now_ms() -> f64 {
    js_sys::Date::now()
}

async fn sleep(ms: u32) {
    let global = js_sys::global();
    let set_timeout: Function = Reflect::get(&global, &"setTimeout".into())
        .unwrap()
        .unchecked_into();
    let promise = Promise::new(&mut |resolve, _| {
        set_timeout.call2(&global, &resolve, &ms.into()).unwrap();
    });
    JsFuture::from(promise).await.unwrap();
}

/// A `fetch` that records each call in `state` and delegates to the global `fetch`; the first
/// `state.redirect` calls go to `state.to` instead of `state.from`.
fn recording_fetch(state: &Object) -> Function {
    let factory = Function::new_with_args(
        "state",
        "return function (url, init) {
            state.calls.push({ url, init });
            if (state.redirect > 0) {
                state.redirect -= 1;
                url = state.to + url.slice(state.from.length);
            }
            return fetch(url, init);
        };",
    );
    factory
        .call1(&JsValue::NULL, state)
        .unwrap()
        .unchecked_into()
}

fn get(target: &JsValue, path: &[&str]) -> JsValue {
    path.iter().fold(target.clone(), |value, key| {
        Reflect::get(&value, &(*key).into()).unwrap()
    })
}

async fn set_then_get(transport: &FetchTransport, name: &str) -> HttpReply {
    let key = unique_key(name);
    let body = serde_json::json!([["SET", key, name], ["GET", key]]).to_string();
    transport
        .post("/pipeline", body)
        .await
        .expect("the pipeline request failed")
}

#[wasm_bindgen_test]
async fn pipeline_set_then_get() {
    // A trailing slash on the base URL is tolerated.
    let transport = FetchTransport::new(&format!("{}/", gateway_url()), token());
    let reply = set_then_get(&transport, "hello").await;
    assert_eq!(
        reply.status,
        200,
        "body: {}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(
        json(&reply.body),
        serde_json::json!([{ "result": "OK" }, { "result": "hello" }])
    );
}

#[wasm_bindgen_test]
async fn large_body_is_sent_without_keepalive() {
    // Browsers reject keepalive bodies of 64 KiB or more; this one must still go through.
    let transport =
        FetchTransport::new(gateway_url(), token()).with_timeout(Some(Duration::from_secs(10)));
    let key = unique_key("large");
    let value = "x".repeat(100 * 1024);
    let body = serde_json::json!([["SET", key, value], ["STRLEN", key]]).to_string();
    let reply = transport
        .post("/pipeline", body)
        .await
        .expect("the large request failed");
    assert_eq!(
        reply.status,
        200,
        "body: {}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(
        json(&reply.body),
        serde_json::json!([{ "result": "OK" }, { "result": 100 * 1024 }])
    );
}

#[wasm_bindgen_test]
async fn bad_token_is_a_401_reply() {
    let transport = FetchTransport::new(gateway_url(), "not-the-token");
    let reply = transport
        .post("/pipeline", r#"[["GET","k"]]"#.to_owned())
        .await
        .expect("a 401 is a reply, not an error");
    assert_eq!(
        reply.status,
        401,
        "body: {}",
        String::from_utf8_lossy(&reply.body)
    );
}

#[wasm_bindgen_test]
async fn closed_port_is_a_network_error() {
    let transport =
        FetchTransport::new(closed_url(), token()).with_timeout(Some(Duration::from_secs(10)));
    match transport.post("/pipeline", "[]".to_owned()).await {
        Err(Error::Network { message }) => assert!(!message.is_empty()),
        other => panic!("expected Error::Network, got {other:?}"),
    }
}

#[wasm_bindgen_test]
async fn silent_server_times_out_promptly() {
    let after = Duration::from_millis(300);
    let transport = FetchTransport::new(blackhole_url(), token()).with_timeout(Some(after));
    let started = now_ms();
    let result = transport.post("/pipeline", "[]".to_owned()).await;
    let elapsed = now_ms() - started;
    assert_eq!(result, Err(Error::Timeout { after }));
    assert!(
        (250.0..3_000.0).contains(&elapsed),
        "timed out after {elapsed} ms, expected about 300"
    );
}

#[wasm_bindgen_test]
async fn custom_fetch_is_used() {
    let state = Object::new();
    Reflect::set(&state, &"calls".into(), &js_sys::Array::new()).unwrap();
    let transport = FetchTransport::new(gateway_url(), token())
        .with_timeout(Some(Duration::from_secs(10)))
        .with_fetch(Some(recording_fetch(&state)));
    let reply = set_then_get(&transport, "custom").await;
    assert_eq!(
        reply.status,
        200,
        "body: {}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(
        json(&reply.body),
        serde_json::json!([{ "result": "OK" }, { "result": "custom" }])
    );

    let calls: js_sys::Array = get(&state, &["calls"]).unchecked_into();
    assert_eq!(
        calls.length(),
        1,
        "the custom fetch was not called exactly once"
    );
    let call = calls.get(0);
    assert_eq!(
        get(&call, &["url"]).as_string().as_deref(),
        Some(format!("{}/pipeline", gateway_url()).as_str())
    );
    assert_eq!(
        get(&call, &["init", "method"]).as_string().as_deref(),
        Some("POST")
    );
    assert_eq!(
        get(&call, &["init", "headers", "Authorization"]).as_string(),
        Some(format!("Bearer {}", token()))
    );
    assert_eq!(
        get(&call, &["init", "headers", "Content-Type"])
            .as_string()
            .as_deref(),
        Some("application/json")
    );
    assert_eq!(get(&call, &["init", "keepalive"]).as_bool(), Some(true));
    assert!(
        get(&call, &["init", "signal"]).is_object(),
        "no abort signal was passed"
    );
}

#[wasm_bindgen_test]
async fn transport_works_after_a_timeout() {
    // One transport: its first request is sent to the black hole and times out, the next ones
    // reach the gateway.
    let state = Object::new();
    Reflect::set(&state, &"calls".into(), &js_sys::Array::new()).unwrap();
    Reflect::set(&state, &"redirect".into(), &1.into()).unwrap();
    Reflect::set(&state, &"from".into(), &gateway_url().into()).unwrap();
    Reflect::set(&state, &"to".into(), &blackhole_url().into()).unwrap();
    let after = Duration::from_millis(300);
    let transport = FetchTransport::new(gateway_url(), token())
        .with_timeout(Some(after))
        .with_fetch(Some(recording_fetch(&state)));

    let timed_out = transport.post("/pipeline", "[]".to_owned()).await;
    assert_eq!(timed_out, Err(Error::Timeout { after }));

    let reply = set_then_get(&transport, "after-timeout").await;
    assert_eq!(
        reply.status,
        200,
        "body: {}",
        String::from_utf8_lossy(&reply.body)
    );
    // Outlive the first request's timer: nothing stale may fire into the next request.
    sleep(400).await;
    let reply = set_then_get(&transport, "after-sleep").await;
    assert_eq!(
        reply.status,
        200,
        "body: {}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(
        json(&reply.body),
        serde_json::json!([{ "result": "OK" }, { "result": "after-sleep" }])
    );
}

#[wasm_bindgen_test]
async fn a_fetch_that_is_no_function_is_a_programming_error() {
    // A "fetch" option that is not a function makes the call throw: an error, not a panic, and no
    // outage for the fail mode to answer.
    let not_callable: Function = JsValue::from(Object::new()).unchecked_into();
    let transport = FetchTransport::new(gateway_url(), token()).with_fetch(Some(not_callable));
    match transport.post("/pipeline", "[]".to_owned()).await {
        Err(error @ Error::Fetch { .. }) => {
            assert!(!error.is_outage());
            assert!(error.to_string().contains("custom `fetch`"), "{error}");
        }
        other => panic!("expected Error::Fetch, got {other:?}"),
    }
}
