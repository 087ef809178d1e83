//! The routes of the Upstash REST protocol and the layers around them.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::json;
use tower::util::MapRequest;
use tower::ServiceExt;
use tower_http::cors::{Any, CorsLayer};

use super::auth::{bearer_is, Grant, Reached};
use super::call::Call;
use super::state::App;
use crate::commands::command;
use crate::error::{json_response, Failure, GatewayError};
use crate::metrics::{self, LatencyLabels, RequestLabels};

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
        .route(
            "/metrics",
            get(metrics_with_token).post(path_form).put(path_form),
        )
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

/// Adds the `upstash-sync-token` header to every reply; counts every request by route, status and
/// database, its latency and what it failed on; logs one line per request at debug level. A 200 of a
/// database is counted on counters resolved when the database was set up; other replies find theirs
/// by their labels.
async fn stamp(State(app): State<Arc<App>>, mut request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = metrics::route_of(request.uri().path());
    let reached = Reached::default();
    request.extensions_mut().insert(reached.clone());
    let mut response = next.run(request).await;
    let sync = app.sync_counter.fetch_add(1, Ordering::Relaxed) + 1;
    if let Ok(value) = HeaderValue::from_str(&sync.to_string()) {
        response.headers_mut().insert(SYNC_TOKEN, value);
    }
    let seconds = started.elapsed().as_secs_f64();
    let status = response.status().as_u16();
    let db = reached.db();
    tracing::debug!(
        route = metrics::ROUTES[route],
        database = db.map_or("", |db| db.name.as_str()),
        status,
        seconds,
        "request"
    );
    if status == 200 && db.is_some_and(|db| db.answered.count(route, seconds)) {
        return response;
    }
    let database = db.map(|db| db.name.clone()).unwrap_or_default();
    let metrics = &app.metrics;
    let route = metrics::ROUTES[route];
    metrics
        .requests
        .get_or_create(&RequestLabels {
            route,
            status,
            database: database.clone(),
        })
        .inc();
    metrics
        .latency
        .get_or_create(&LatencyLabels {
            route,
            database: database.clone(),
        })
        .observe(seconds);
    if let (false, Some(failure)) = (database.is_empty(), response.extensions().get::<Failure>()) {
        metrics.failed(&database, *failure);
    }
    response
}

/// `GET /metrics` on the main listener: with `--metrics-token` only, and only to that token.
async fn metrics_with_token(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
) -> Result<Response, GatewayError> {
    match &app.metrics_token {
        Some(expected) if bearer_is(&headers, expected) => Ok(metrics_text(&app)),
        _ => Err(GatewayError::Unauthorized),
    }
}

/// The metrics in the text format.
pub fn metrics_text(app: &App) -> Response {
    let mut response = app.metrics.encode().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(metrics::CONTENT_TYPE),
    );
    response
}

/// The router of `--metrics-listen`: `GET /metrics` without a token, nothing else.
pub fn metrics_service(app: Arc<App>) -> GatewayService {
    let router = Router::new()
        .route(
            "/metrics",
            get(|State(app): State<Arc<App>>| async move { metrics_text(&app) }),
        )
        .fallback(|| async { GatewayError::NotFound })
        .with_state(app);
    router.map_request(std::convert::identity as fn(Request) -> Request)
}

/// `GET /healthz`: answers without a token and without Redis (liveness: the process serves HTTP).
async fn healthz() -> Response {
    json_response(StatusCode::OK, &json!({ "result": "OK" }))
}

/// `GET /readyz`: answers without a token, 200 once every Redis answers PING in time, 503 while
/// one is unreachable or busy (a load balancer then sends traffic elsewhere).
async fn readyz(State(app): State<Arc<App>>) -> Result<Response, GatewayError> {
    for db in app.tokens().databases() {
        db.upstream.ready().await?;
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
