//! Redis replies as JSON, optionally with every string base64-encoded (`Upstash-Encoding: base64`).
//!
//! Bulk strings that are not valid UTF-8 can only be returned exactly with base64; without it
//! they are returned with the invalid bytes replaced by U+FFFD (clients that store binary
//! data must ask for base64, which `@upstash/redis` does by default).

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use redis::Value;
use serde_json::{json, Value as Json};

use crate::error::error_text;

fn text(bytes: &[u8], base64: bool) -> Json {
    if base64 {
        Json::String(STANDARD.encode(bytes))
    } else {
        Json::String(String::from_utf8_lossy(bytes).into_owned())
    }
}

/// Converts one Redis value to JSON; strings at every depth are base64 if `base64` is set.
pub fn to_json(value: &Value, base64: bool) -> Json {
    match value {
        Value::Nil => Json::Null,
        Value::Int(i) => json!(i),
        Value::BulkString(bytes) => text(bytes, base64),
        Value::SimpleString(s) => text(s.as_bytes(), base64),
        Value::Okay => text(b"OK", base64),
        Value::Array(items) | Value::Set(items) => {
            Json::Array(items.iter().map(|v| to_json(v, base64)).collect())
        }
        Value::Map(pairs) => Json::Array(
            pairs
                .iter()
                .flat_map(|(k, v)| [to_json(k, base64), to_json(v, base64)])
                .collect(),
        ),
        Value::Attribute { data, .. } => to_json(data, base64),
        Value::Double(f) => json!(f),
        Value::Boolean(b) => json!(i64::from(*b)),
        Value::VerbatimString { text: t, .. } => text(t.as_bytes(), base64),
        Value::Push { data, .. } => Json::Array(data.iter().map(|v| to_json(v, base64)).collect()),
        Value::ServerError(e) => json!({ "error": error_text(e) }),
        // Big numbers (RESP3 only) and later additions of the non-exhaustive enum.
        other => Json::String(format!("{other:?}")),
    }
}

/// One `{"result": …}` or `{"error": …}` item of a reply.
pub fn result_item(value: &Value, base64: bool) -> Json {
    match value {
        Value::ServerError(e) => json!({ "error": error_text(e) }),
        other => json!({ "result": to_json(other, base64) }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_reaches_every_depth() {
        let v = Value::Array(vec![
            Value::Okay,
            Value::BulkString(b"v".to_vec()),
            Value::Int(3),
            Value::Nil,
            Value::Array(vec![Value::SimpleString("OK".into())]),
        ]);
        assert_eq!(
            to_json(&v, true),
            json!(["T0s=", "dg==", 3, null, ["T0s="]])
        );
        assert_eq!(to_json(&v, false), json!(["OK", "v", 3, null, ["OK"]]));
    }

    #[test]
    fn invalid_utf8_is_lossy_without_base64() {
        let v = Value::BulkString(vec![0xff, b'a']);
        assert_eq!(to_json(&v, false), json!("\u{fffd}a"));
        assert_eq!(to_json(&v, true), json!("/2E="));
    }
}
