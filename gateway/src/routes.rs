//! The HTTP surface: method and path dispatch, auth, body limit, replies.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use redis::Value;
use serde_json::{json, Value as Json};

use crate::auth::{Grant, TokenTable};
use crate::command::{self, Command};
use crate::encoding::{error_text, result_item};
use crate::error::{json_response, GatewayError};
use crate::policy::Policy;
use crate::redis_pool::Backend;
use crate::scripts::{ReplyFix, ScriptMap};

/// Name of the read-your-writes header the Upstash clients send and read back.
pub const SYNC_TOKEN: &str = "upstash-sync-token";

/// Everything a request handler needs.
pub struct App {
    /// One backend per distinct Redis URL.
    pub backends: Vec<Backend>,
    /// Accepted tokens.
    pub tokens: TokenTable,
    /// Command rules.
    pub policy: Policy,
    /// Shebang rewrites shared by all backends (the mapping depends only on the script text).
    pub scripts: ScriptMap,
    /// Body size limit in bytes.
    pub max_body_bytes: usize,
    /// Source of the opaque `upstash-sync-token` reply header.
    pub sync_counter: AtomicU64,
}

/// Serves every request: logs one line per request at debug level.
pub async fn handle(State(app): State<Arc<App>>, request: Request) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let mut response = match serve(&app, request).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    };
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

/// What the path asks for.
enum Route<'a> {
    Single,
    Pipeline,
    MultiExec,
    Path(Vec<&'a str>),
}

async fn serve(app: &App, request: Request) -> Result<Response, GatewayError> {
    let (parts, body) = request.into_parts();
    let method = parts.method;
    if !matches!(
        method,
        Method::GET | Method::HEAD | Method::POST | Method::PUT
    ) {
        return Err(GatewayError::MethodNotAllowed);
    }
    let has_body = matches!(method, Method::POST | Method::PUT);
    let path = parts.uri.path();
    let path = path.strip_prefix('/').unwrap_or(path).trim_end_matches('/');
    if path == "healthz" && !has_body {
        return Ok(json_response(StatusCode::OK, &json!({ "result": "OK" })));
    }
    let grant = app
        .tokens
        .authenticate(&parts.headers, parts.uri.query())
        .ok_or(GatewayError::Unauthorized)?;
    let route = match path {
        "" => Route::Single,
        "pipeline" => Route::Pipeline,
        "multi-exec" => Route::MultiExec,
        other => Route::Path(other.split('/').collect()),
    };
    if matches!(route, Route::Single | Route::Pipeline | Route::MultiExec) && !has_body {
        return Err(GatewayError::MethodNotAllowed);
    }
    let body = read_body(body, &parts.headers, app.max_body_bytes).await?;
    let base64 = parts
        .headers
        .get("upstash-encoding")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"base64"));
    let backend = app
        .backends
        .get(grant.backend)
        .ok_or_else(|| GatewayError::Unavailable("no backend for this token".to_owned()))?;
    let ctx = Ctx {
        app,
        backend,
        grant,
        base64,
    };
    match route {
        Route::Single => ctx.single(command::single(&body)?).await,
        Route::Path(segments) => ctx.single(command::from_path(&segments, &body)?).await,
        Route::Pipeline => ctx.pipeline(command::batch(&body)?).await,
        Route::MultiExec => ctx.multi_exec(command::batch(&body)?).await,
    }
}

/// Reads the body, refusing more than `limit` bytes with 413.
async fn read_body(body: Body, headers: &HeaderMap, limit: usize) -> Result<Vec<u8>, GatewayError> {
    let declared = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(GatewayError::PayloadTooLarge(limit));
    }
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes().to_vec()),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
            Err(GatewayError::PayloadTooLarge(limit))
        }
        Err(e) => Err(GatewayError::BadRequest(format!(
            "ERR cannot read body: {e}"
        ))),
    }
}

/// One authenticated request bound to its backend.
struct Ctx<'a> {
    app: &'a App,
    backend: &'a Backend,
    grant: Grant,
    base64: bool,
}

fn apply_fix(value: Value, fix: &ReplyFix) -> Value {
    match (fix, value) {
        (ReplyFix::ScriptSha(sha), Value::BulkString(_)) => {
            Value::BulkString(sha.clone().into_bytes())
        }
        (_, value) => value,
    }
}

impl Ctx<'_> {
    /// Checks a command against the rules and rewrites scripts.
    fn prepare(&self, command: &mut Command) -> Result<ReplyFix, GatewayError> {
        self.app.policy.check(command, self.grant.readonly)?;
        Ok(self.app.scripts.rewrite(command))
    }

    async fn single(&self, mut command: Command) -> Result<Response, GatewayError> {
        let fix = self.prepare(&mut command)?;
        let reply = self
            .backend
            .pipeline(std::slice::from_ref(&command))
            .await?
            .pop()
            .ok_or_else(|| GatewayError::Unavailable("redis sent no reply".to_owned()))?;
        match apply_fix(reply, &fix) {
            Value::ServerError(e) => Err(GatewayError::Redis(error_text(&e))),
            value => Ok(json_response(
                StatusCode::OK,
                &json!({ "result": crate::encoding::to_json(&value, self.base64) }),
            )),
        }
    }

    async fn pipeline(&self, mut commands: Vec<Command>) -> Result<Response, GatewayError> {
        // Commands refused by policy answer in place; the others go to Redis in one batch.
        let mut checked: Vec<Result<ReplyFix, GatewayError>> = Vec::with_capacity(commands.len());
        for command in commands.iter_mut() {
            checked.push(self.prepare(command));
        }
        let to_send: Vec<Command> = commands
            .into_iter()
            .zip(&checked)
            .filter(|(_, c)| c.is_ok())
            .map(|(command, _)| command)
            .collect();
        let mut replies = if to_send.is_empty() {
            Vec::new()
        } else {
            self.backend.pipeline(&to_send).await?
        }
        .into_iter();
        let mut items: Vec<Json> = Vec::with_capacity(checked.len());
        for check in &checked {
            items.push(match check {
                Ok(fix) => match replies.next() {
                    Some(value) => result_item(&apply_fix(value, fix), self.base64),
                    None => json!({ "error": "ERR redis sent too few replies" }),
                },
                Err(error) => error.to_json(),
            });
        }
        Ok(json_response(StatusCode::OK, &Json::Array(items)))
    }

    async fn multi_exec(&self, mut commands: Vec<Command>) -> Result<Response, GatewayError> {
        let mut fixes = Vec::with_capacity(commands.len());
        for command in commands.iter_mut() {
            fixes.push(self.prepare(command)?);
        }
        match self.backend.transaction(&commands).await? {
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
