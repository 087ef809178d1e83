//! The HTTP surface: routes, extractors and layers of the Upstash REST protocol.

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRef, FromRequest, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use redis::Value;
use serde_json::{json, Value as Json};
use tower::util::MapRequest;
use tower::ServiceExt;
use tower_http::cors::{Any, CorsLayer};

use super::auth::{Grant, TokenTable};
use super::encoding::{result_item, to_json};
use crate::commands::command::{self, Command};
use crate::commands::known_scripts::KnownScripts;
use crate::commands::policy::{self, Policy};
use crate::commands::scripts::{ReplyFix, ScriptMap};
use crate::error::{error_text, json_response, GatewayError};
use crate::upstream::Backend;

/// Name of the read-your-writes header the Upstash clients send and read back.
pub const SYNC_TOKEN: &str = "upstash-sync-token";

/// Everything a request handler needs.
pub struct App {
    /// One backend per distinct Redis server or cluster.
    pub backends: Vec<Backend>,
    /// Accepted tokens.
    pub tokens: TokenTable,
    /// Command rules.
    pub policy: Policy,
    /// The scripts that may run, under `--known-scripts-only`.
    pub known_scripts: Option<KnownScripts>,
    /// Shebang rewrites shared by all backends (the mapping depends only on the script text).
    pub scripts: ScriptMap,
    /// Body size limit in bytes.
    pub max_body_bytes: usize,
    /// Command count limit per pipeline or transaction.
    pub max_pipeline_commands: usize,
    /// Source of the opaque `upstash-sync-token` reply header.
    pub sync_counter: AtomicU64,
}

impl FromRef<Arc<App>> for TokenTable {
    fn from_ref(app: &Arc<App>) -> Self {
        app.tokens.clone()
    }
}

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

/// The request body, at most `--max-body-bytes` long (413 beyond).
struct Payload(Bytes);

impl FromRequest<Arc<App>> for Payload {
    type Rejection = GatewayError;

    async fn from_request(request: Request, app: &Arc<App>) -> Result<Self, GatewayError> {
        match Bytes::from_request(request, app).await {
            Ok(bytes) => Ok(Self(bytes)),
            Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                Err(GatewayError::PayloadTooLarge(app.max_body_bytes))
            }
            Err(rejection) => Err(GatewayError::BadRequest(format!(
                "ERR cannot read body: {}",
                rejection.body_text()
            ))),
        }
    }
}

/// Whether the client asked for `Upstash-Encoding: base64` replies.
struct Base64(bool);

impl<S: Send + Sync> FromRequestParts<S> for Base64 {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Infallible> {
        Ok(Self(parts.headers.get("upstash-encoding").is_some_and(
            |v| v.as_bytes().eq_ignore_ascii_case(b"base64"),
        )))
    }
}

/// `GET /healthz`: answers without a token and without Redis (liveness: the process serves HTTP).
async fn healthz() -> Response {
    json_response(StatusCode::OK, &json!({ "result": "OK" }))
}

/// `GET /readyz`: answers without a token, 200 once every Redis answers PING in time, 503 while
/// one is unreachable or busy (a load balancer then sends traffic elsewhere).
async fn readyz(State(app): State<Arc<App>>) -> Result<Response, GatewayError> {
    for backend in &app.backends {
        backend.ready().await?;
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

/// One authenticated request bound to its backend, as every command route takes it.
///
/// As an extractor it runs, in this order, [`Grant`] (401 before the body is read),
/// [`Base64`] and [`Payload`] (413 or 400), then finds the token's backend (503).
struct Call {
    app: Arc<App>,
    /// Its `backend` indexes `app.backends`: checked when the call was extracted.
    grant: Grant,
    base64: bool,
    /// The request body.
    body: Bytes,
}

impl FromRequest<Arc<App>> for Call {
    type Rejection = GatewayError;

    async fn from_request(request: Request, app: &Arc<App>) -> Result<Self, GatewayError> {
        let (mut parts, body) = request.into_parts();
        let grant = Grant::from_request_parts(&mut parts, app).await?;
        let Ok(Base64(base64)) = Base64::from_request_parts(&mut parts, app).await;
        let Payload(body) = Payload::from_request(Request::from_parts(parts, body), app).await?;
        if grant.backend >= app.backends.len() {
            return Err(GatewayError::Unavailable(
                "no backend for this token".to_owned(),
            ));
        }
        Ok(Self {
            app: app.clone(),
            grant,
            base64,
            body,
        })
    }
}

fn apply_fix(value: Value, fix: &ReplyFix) -> Value {
    match (fix, value) {
        (ReplyFix::ScriptSha(sha), Value::BulkString(_)) => {
            Value::BulkString(sha.clone().into_bytes())
        }
        (_, value) => value,
    }
}

/// One command of a pipeline: answered already, or waiting for its reply from the shared batch.
enum Slot {
    Done(Json),
    Shared(ReplyFix),
}

impl Call {
    /// The backend the token reaches.
    fn backend(&self) -> &Backend {
        &self.app.backends[self.grant.backend]
    }

    /// Refuses a pipeline or transaction of more than `--max-pipeline-commands` commands.
    fn check_length(&self, commands: &[Command]) -> Result<(), GatewayError> {
        let limit = self.app.max_pipeline_commands;
        if commands.len() > limit {
            return Err(GatewayError::BadRequest(format!(
                "ERR {} commands in one request; the limit is {limit}",
                commands.len()
            )));
        }
        Ok(())
    }

    /// Checks a command against the rules and rewrites scripts.
    fn prepare(&self, command: &mut Command) -> Result<ReplyFix, GatewayError> {
        self.app.policy.check(command, self.grant.readonly)?;
        if let Some(known) = &self.app.known_scripts {
            known.check(command)?;
        }
        Ok(self.app.scripts.rewrite(command))
    }

    async fn single(&self, mut command: Command) -> Result<Response, GatewayError> {
        let fix = self.prepare(&mut command)?;
        let reply = if policy::is_kill(&command) {
            self.backend().kill(&command).await?
        } else {
            self.backend()
                .pipeline(std::slice::from_ref(&command))
                .await?
                .pop()
                .ok_or_else(|| GatewayError::Unavailable("redis sent no reply".to_owned()))?
        };
        match apply_fix(reply, &fix) {
            Value::ServerError(e) => Err(GatewayError::Redis(error_text(&e))),
            value => Ok(json_response(
                StatusCode::OK,
                &json!({ "result": to_json(&value, self.base64) }),
            )),
        }
    }

    async fn pipeline(&self, commands: Vec<Command>) -> Result<Response, GatewayError> {
        self.check_length(&commands)?;
        // Commands refused by policy answer in place; kills go out on their own connection (in
        // order, before the batch: a kill must not wait behind a busy script); the others go to
        // Redis in one batch.
        let mut slots: Vec<Slot> = Vec::with_capacity(commands.len());
        let mut to_send: Vec<Command> = Vec::with_capacity(commands.len());
        for mut command in commands {
            slots.push(match self.prepare(&mut command) {
                Err(error) => Slot::Done(error.to_json()),
                Ok(_) if policy::is_kill(&command) => {
                    Slot::Done(match self.backend().kill(&command).await {
                        Ok(value) => result_item(&value, self.base64),
                        Err(error) => error.to_json(),
                    })
                }
                Ok(fix) => {
                    to_send.push(command);
                    Slot::Shared(fix)
                }
            });
        }
        let replies = if to_send.is_empty() {
            Vec::new()
        } else {
            self.backend().pipeline(&to_send).await?
        };
        let mut replies = replies.into_iter();
        let items: Vec<Json> = slots
            .into_iter()
            .map(|slot| match slot {
                Slot::Done(item) => item,
                Slot::Shared(fix) => match replies.next() {
                    Some(value) => result_item(&apply_fix(value, &fix), self.base64),
                    None => json!({ "error": "ERR redis sent too few replies" }),
                },
            })
            .collect();
        Ok(json_response(StatusCode::OK, &Json::Array(items)))
    }

    async fn multi_exec(&self, mut commands: Vec<Command>) -> Result<Response, GatewayError> {
        self.check_length(&commands)?;
        let mut fixes = Vec::with_capacity(commands.len());
        for command in commands.iter_mut() {
            fixes.push(self.prepare(command)?);
        }
        let reply = self.backend().transaction(&commands).await?;
        match reply {
            Value::Array(values) => {
                let items: Vec<Json> = values
                    .into_iter()
                    .zip(fixes.iter().chain(std::iter::repeat(&ReplyFix::None)))
                    .map(|(value, fix)| result_item(&apply_fix(value, fix), self.base64))
                    .collect();
                Ok(json_response(StatusCode::OK, &Json::Array(items)))
            }
            Value::ServerError(e) => Err(GatewayError::Redis(error_text(&e))),
            Value::Nil => Err(GatewayError::Redis(
                "EXECABORT Transaction discarded".to_owned(),
            )),
            other => Err(GatewayError::Unavailable(format!(
                "unexpected reply to EXEC: {other:?}"
            ))),
        }
    }
}
