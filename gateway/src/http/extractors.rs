//! The small extractors of a command request: its body within the size limit, and the encoding
//! asked for.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;

use super::state::App;
use crate::error::GatewayError;

/// The request body, at most `--max-body-bytes` long (413 beyond).
pub struct Payload(pub Bytes);

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
pub struct Base64(pub bool);

impl<S: Send + Sync> FromRequestParts<S> for Base64 {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Infallible> {
        Ok(Self(parts.headers.get("upstash-encoding").is_some_and(
            |v| v.as_bytes().eq_ignore_ascii_case(b"base64"),
        )))
    }
}
