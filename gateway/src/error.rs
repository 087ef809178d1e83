//! The one error type of the gateway and its mapping to HTTP replies.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// Everything that can go wrong while serving a request.
///
/// Every variant becomes a JSON body `{"error": "..."}` with `content-type: application/json`,
/// because the Upstash clients throw a parse error on anything else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GatewayError {
    /// Missing or wrong token (401).
    Unauthorized,
    /// The request itself is malformed: bad JSON, wrong shapes, empty command (400).
    BadRequest(String),
    /// Redis answered with an error reply, e.g. `ERR unknown command` (400).
    Redis(String),
    /// The command is refused by policy: read-only token or denied command (403).
    Forbidden(String),
    /// HTTP method other than HEAD, GET, POST, PUT (405).
    MethodNotAllowed,
    /// No such route: only on the listener of `--metrics-listen` (404).
    NotFound,
    /// The body is larger than the configured limit (413).
    PayloadTooLarge(usize),
    /// The replies of one request are larger than `--max-reply-bytes` (400).
    ReplyTooLarge(usize),
    /// Redis could not be reached or the connection broke (503).
    Unavailable(String),
    /// Redis did not answer within the request timeout (504).
    Timeout,
}

impl GatewayError {
    /// The HTTP status of this error.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::BadRequest(_) | Self::Redis(_) | Self::ReplyTooLarge(_) => {
                StatusCode::BAD_REQUEST
            }
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Timeout => StatusCode::GATEWAY_TIMEOUT,
        }
    }

    /// The text put in the `error` field of the JSON body.
    pub fn message(&self) -> String {
        match self {
            Self::Unauthorized => "WRONGPASS invalid or missing auth token".to_owned(),
            Self::BadRequest(m) | Self::Redis(m) | Self::Forbidden(m) => m.clone(),
            Self::MethodNotAllowed => {
                "ERR method not allowed (the protocol uses GET, HEAD, POST and PUT; /pipeline and /multi-exec need POST)".to_owned()
            }
            Self::NotFound => "ERR not found (this listener serves GET /metrics)".to_owned(),
            Self::PayloadTooLarge(limit) => {
                format!("ERR request body is larger than the limit of {limit} bytes")
            }
            Self::ReplyTooLarge(limit) => format!(
                "ERR reply is larger than the limit of {limit} bytes (ask for less: a range, a pipeline of fewer commands)"
            ),
            Self::Unavailable(m) => format!("ERR redis unavailable: {m}"),
            Self::Timeout => "ERR redis did not answer in time".to_owned(),
        }
    }

    /// The JSON value `{"error": "..."}` of this error.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({ "error": self.message() })
    }
}

impl std::fmt::Display for GatewayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for GatewayError {}

/// The text of a Redis error reply: code and details, e.g. `NOSCRIPT No matching script.`.
pub fn error_text(error: &redis::ServerError) -> String {
    match error.details() {
        Some(details) => format!("{} {}", error.code(), details),
        None => error.code().to_owned(),
    }
}

/// Builds a JSON reply with the given status.
pub fn json_response(status: StatusCode, body: &impl serde::Serialize) -> Response {
    let bytes =
        serde_json::to_vec(body).unwrap_or_else(|_| b"{\"error\":\"ERR internal\"}".to_vec());
    let mut response = (status, bytes).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// What a failed reply failed on, for the metrics layer: put in the response's extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Redis unreachable (503).
    Unavailable,
    /// Redis too slow (504).
    Timeout,
    /// A reply over `--max-reply-bytes`.
    ReplyTooLarge,
}

impl IntoResponse for GatewayError {
    fn into_response(self) -> Response {
        let mut response = json_response(self.status(), &self.to_json());
        let failure = match self {
            Self::Unavailable(_) => Some(Failure::Unavailable),
            Self::Timeout => Some(Failure::Timeout),
            Self::ReplyTooLarge(_) => Some(Failure::ReplyTooLarge),
            _ => None,
        };
        if let Some(failure) = failure {
            response.extensions_mut().insert(failure);
        }
        if let Self::PayloadTooLarge(_) = self {
            // The rest of the body is not read, so the connection cannot carry another request:
            // say so, or a client sends its next request on a connection that is closing.
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}
