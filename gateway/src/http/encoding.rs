//! Redis replies written as JSON, optionally with every string base64-encoded
//! (`Upstash-Encoding: base64`), straight into the reply body: no JSON tree in between.
//!
//! Bulk strings that are not valid UTF-8 can only be returned exactly with base64; without it
//! they are returned with the invalid bytes replaced by U+FFFD (clients that store binary
//! data must ask for base64, which `@upstash/redis` does by default).

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use redis::Value;
use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::error::error_text;

/// One Redis value as JSON; strings at every depth are base64 if `base64` is set.
#[derive(Clone, Copy)]
pub struct Reply<'a> {
    /// The value.
    pub value: &'a Value,
    /// Strings as base64.
    pub base64: bool,
}

impl<'a> Reply<'a> {
    fn nested(&self, value: &'a Value) -> Self {
        Self {
            value,
            base64: self.base64,
        }
    }

    fn text<S: Serializer>(&self, bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        if self.base64 {
            serializer.serialize_str(&STANDARD.encode(bytes))
        } else {
            serializer.serialize_str(&String::from_utf8_lossy(bytes))
        }
    }
}

/// `{"error": text}`.
fn error<S: Serializer>(text: &str, serializer: S) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(Some(1))?;
    map.serialize_entry("error", text)?;
    map.end()
}

impl Serialize for Reply<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.value {
            Value::Nil => serializer.serialize_unit(),
            Value::Int(i) => serializer.serialize_i64(*i),
            Value::BulkString(bytes) => self.text(bytes, serializer),
            Value::SimpleString(s) => self.text(s.as_bytes(), serializer),
            Value::Okay => self.text(b"OK", serializer),
            Value::Array(items) | Value::Set(items) | Value::Push { data: items, .. } => {
                serializer.collect_seq(items.iter().map(|v| self.nested(v)))
            }
            Value::Map(pairs) => serializer.collect_seq(
                pairs
                    .iter()
                    .flat_map(|(k, v)| [self.nested(k), self.nested(v)]),
            ),
            Value::Attribute { data, .. } => self.nested(data).serialize(serializer),
            // Not finite: `null`, as serde_json writes it.
            Value::Double(f) => serializer.serialize_f64(*f),
            Value::Boolean(b) => serializer.serialize_i64(i64::from(*b)),
            Value::VerbatimString { text: t, .. } => self.text(t.as_bytes(), serializer),
            Value::ServerError(e) => error(&error_text(e), serializer),
            // Big numbers (RESP3 only) and later additions of the non-exhaustive enum.
            other => serializer.serialize_str(&format!("{other:?}")),
        }
    }
}

/// One item of a `/pipeline` or `/multi-exec` answer.
pub enum Item {
    /// Redis's reply: `{"result": …}`, or `{"error": …}` for an error reply.
    Reply(Value),
    /// The gateway's own answer (a refused command): `{"error": …}`.
    Error(String),
}

/// Items written as a JSON array.
pub struct Items<'a> {
    /// The items, in order.
    pub items: &'a [Item],
    /// Strings as base64.
    pub base64: bool,
}

/// `{"result": …}`, or `{"error": …}` for an error reply.
pub struct ResultItem<'a>(pub Reply<'a>);

impl Serialize for ResultItem<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if let Value::ServerError(_) = self.0.value {
            return self.0.serialize(serializer);
        }
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("result", &self.0)?;
        map.end()
    }
}

impl Serialize for Items<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.items.iter().map(|item| match item {
            Item::Reply(value) => ItemRef::Reply(ResultItem(Reply {
                value,
                base64: self.base64,
            })),
            Item::Error(text) => ItemRef::Error(text),
        }))
    }
}

/// An [`Item`] borrowed for writing.
enum ItemRef<'a> {
    Reply(ResultItem<'a>),
    Error(&'a str),
}

impl Serialize for ItemRef<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Reply(result) => result.serialize(serializer),
            Self::Error(text) => error(text, serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn to_json(value: &Value, base64: bool) -> serde_json::Value {
        serde_json::to_value(Reply { value, base64 }).expect("json")
    }

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

    #[test]
    fn items_are_results_or_errors() {
        let items = [
            Item::Reply(Value::Int(1)),
            Item::Reply(Value::Map(vec![(Value::Okay, Value::Double(0.5))])),
            Item::Error("ERR refused".to_owned()),
        ];
        let written = serde_json::to_string(&Items {
            items: &items,
            base64: false,
        })
        .expect("json");
        assert_eq!(
            written,
            r#"[{"result":1},{"result":["OK",0.5]},{"error":"ERR refused"}]"#
        );
    }
}
