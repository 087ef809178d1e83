//! The routes of the Upstash REST protocol and the layers around them.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use serde_json::json;
use tower::util::MapRequest;
use tower::ServiceExt;
use tower_http::cors::{Any, CorsLayer};

use super::auth::Grant;
use super::call::Call;
use super::state::App;
use crate::commands::command;
use crate::error::{json_response, GatewayError};

/// Name of the read-your-writes header the Upstash clients send and read back.
pub const SYNC_TOKEN: &str = "upstash-sync-token";

/// The whole gateway as one service.
pub type GatewayService = MapRequest<Router, fn(Request) -> Request>;

/// The whole gateway as one service: trailing slashes trimmed, then routed.
pub fn service(app: Arc<App>) -> GatewayService {
    router(app).map_request(trim_trailing_slashes)
}

/// `/pipeline/` is `/pipeline`. Leading slashes stay as sent (tower-http's `NormalizePath` would
/// merge them, turning the malformed `//set/k/v`, an empty command name, into a command).
fn trim_trailing_slashes(mut request: Request) -> Request {
    let path = request.uri().path();
    if path.len() < 2 || !path.ends_with('/') {
        return request;
    }
    let path = match path.trim_end_matches('/') {
        "" => "/",
        trimmed => trimmed,
    };
    let path_and_query = match request.uri().query() {
        Some(query) => format!("{path}?{query}"),
        None => path.to_owned(),
    };
    let mut parts = request.uri().clone().into_parts();
    if let Ok(path_and_query) = path_and_query.parse() {
        parts.path_and_query = Some(path_and_query);
        if let Ok(uri) = Uri::from_parts(parts) {
            *request.uri_mut() = uri;
        }
    }
    request
}

/// The routes of the protocol. Only HEAD, GET, POST and PUT exist; `/`, `/pipeline` and
/// `/multi-exec` need a body (POST or PUT).
fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/", post(single).put(single).get(body_required))
        .route("/pipeline", post(pipeline).put(pipeline).get(body_required))
        .route(
            "/multi-exec",
            post(multi_exec).put(multi_exec).get(body_required),
        )
        .route("/healthz", get(healthz).post(path_form).put(path_form))
        .route("/readyz", get(readyz).post(path_form).put(path_form))
        .route("/{*command}", get(path_form).post(path_form).put(path_form))
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(app.max_body_bytes))
        .layer(middleware::from_fn_with_state(app.clone(), stamp))
        .layer(cors())
        .with_state(app)
}

/// CORS for browser pages: any origin, the methods of the protocol, any request header.
fn cors() -> CorsLayer {
    CorsLayer::new()
        .allow_origin(Any)
        .allow_methods([Method::GET, Method::HEAD, Method::POST, Method::PUT])
        .allow_headers(Any)
        .expose_headers([HeaderName::from_static(SYNC_TOKEN)])
        .max_age(Duration::from_secs(86_400))
}

/// Adds the `upstash-sync-token` header to every reply; logs one line per request at debug level.
async fn stamp(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let mut response = next.run(request).await;
    let sync = app.sync_counter.fetch_add(1, Ordering::Relaxed) + 1;
    if let Ok(value) = HeaderValue::from_str(&sync.to_string()) {
        response.headers_mut().insert(SYNC_TOKEN, value);
    }
    tracing::debug!(
        %method,
        path = %path,
        status = response.status().as_u16(),
        micros = started.elapsed().as_micros() as u64,
        "request"
    );
    response
}

/// `GET /healthz`: answers without a token and without Redis (liveness: the process serves HTTP).
async fn healthz() -> Response {
    json_response(StatusCode::OK, &json!({ "result": "OK" }))
}

/// `GET /readyz`: answers without a token, 200 once every Redis answers PING in time, 503 while
/// one is unreachable or busy (a load balancer then sends traffic elsewhere).
async fn readyz(State(app): State<Arc<App>>) -> Result<Response, GatewayError> {
    for upstream in &app.upstreams {
        upstream.ready().await?;
    }
    Ok(json_response(StatusCode::OK, &json!({ "result": "OK" })))
}

/// `POST /`: one command array.
async fn single(call: Call) -> Result<Response, GatewayError> {
    call.single(command::single(&call.body)?).await
}

/// The path form `/set/k/v`; a non-empty body is the last argument.
async fn path_form(uri: Uri, call: Call) -> Result<Response, GatewayError> {
    call.single(command::from_path(uri.path(), &call.body)?)
        .await
}

/// `POST /pipeline`: commands in order, not atomic.
async fn pipeline(call: Call) -> Result<Response, GatewayError> {
    call.pipeline(command::batch(&call.body)?).await
}

/// `POST /multi-exec`: commands in one transaction.
async fn multi_exec(call: Call) -> Result<Response, GatewayError> {
    call.multi_exec(command::batch(&call.body)?).await
}

/// GET or HEAD on a route that needs a body: 405, once the token is valid.
async fn body_required(_: Grant) -> GatewayError {
    GatewayError::MethodNotAllowed
}

/// Any method other than HEAD, GET, POST and PUT: 405 before authentication.
async fn method_not_allowed() -> GatewayError {
    GatewayError::MethodNotAllowed
}
