//! A Redis reply as the Upstash REST protocol carries it in JSON, read by serde_json straight into
//! [`Reply`].
//!
//! serde_json hands an integer that fits `i64` or `u64` over exact and any other number as a float,
//! which [`Reply::Float`] keeps apart, so no such number is ever taken for a count.

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// One Redis reply: what a command's `result` holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `null`: a missing key or value.
    Nil,
    /// An integer from `i64::MIN` to `i64::MAX`, the range of Redis integers.
    Integer(i64),
    /// An integer above `i64::MAX`: Redis never replies one, but JSON can carry it, kept exact.
    Unsigned(u64),
    /// A JSON number that is no integer (fractional, or beyond `u64`): never a count.
    Float(f64),
    /// `true` or `false` (RESP3 booleans).
    Bool(bool),
    /// A string (bulk or simple).
    Text(String),
    /// An array of replies.
    Array(Vec<Reply>),
    /// A JSON object, which no Redis reply is but a `/pipeline` item is: its keys and values in the
    /// order sent.
    Object(Vec<(Key, Reply)>),
}

/// A key of a JSON object: the two of a `/pipeline` item by name (read without an allocation each),
/// any other as sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    /// `result`.
    Result,
    /// `error`.
    Error,
    /// Any other key.
    Other(String),
}

impl Key {
    /// The key as sent.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Result => "result",
            Self::Error => "error",
            Self::Other(key) => key,
        }
    }
}

impl Reply {
    /// The integer, if the reply is one that fits `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Self::Integer(integer) => Some(integer),
            _ => None,
        }
    }

    /// The integer, if the reply is one from 0 that fits `u64`.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Self::Integer(integer) => u64::try_from(integer).ok(),
            Self::Unsigned(integer) => Some(integer),
            _ => None,
        }
    }

    /// The string, if the reply is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Text(text) => Some(text),
            _ => None,
        }
    }

    /// The elements, if the reply is an array.
    pub fn as_array(&self) -> Option<&[Reply]> {
        match self {
            Self::Array(elements) => Some(elements),
            _ => None,
        }
    }
}

/// Compact JSON, as the server sent it (an object's keys in the order sent).
impl fmt::Display for Reply {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Nil => formatter.write_str("null"),
            Self::Integer(integer) => write!(formatter, "{integer}"),
            Self::Unsigned(integer) => write!(formatter, "{integer}"),
            // The shortest text that reads back the same, in positional notation: valid JSON for
            // any number JSON can hold (never NaN or infinite).
            Self::Float(float) => formatter.write_str(&crate::number::decimal(*float)),
            Self::Bool(boolean) => write!(formatter, "{boolean}"),
            Self::Text(text) => write_string(formatter, text),
            Self::Array(elements) => {
                formatter.write_str("[")?;
                for (index, element) in elements.iter().enumerate() {
                    if index > 0 {
                        formatter.write_str(",")?;
                    }
                    element.fmt(formatter)?;
                }
                formatter.write_str("]")
            }
            Self::Object(fields) => {
                formatter.write_str("{")?;
                for (index, (key, value)) in fields.iter().enumerate() {
                    if index > 0 {
                        formatter.write_str(",")?;
                    }
                    write_string(formatter, key.as_str())?;
                    write!(formatter, ":{value}")?;
                }
                formatter.write_str("}")
            }
        }
    }
}

/// `text` as a JSON string, escaped by serde_json (which fails only on a writer's I/O error, and a
/// `String` has none).
fn write_string(formatter: &mut fmt::Formatter<'_>, text: &str) -> fmt::Result {
    formatter.write_str(&serde_json::to_string(text).map_err(|_| fmt::Error)?)
}

impl<'de> Deserialize<'de> for Reply {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ReplyVisitor)
    }
}

/// Builds a [`Reply`] from whatever JSON value comes.
struct ReplyVisitor;

impl<'de> Visitor<'de> for ReplyVisitor {
    type Value = Reply;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a Redis reply")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Reply, E> {
        Ok(Reply::Nil)
    }

    fn visit_none<E: de::Error>(self) -> Result<Reply, E> {
        Ok(Reply::Nil)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Reply, D::Error> {
        Reply::deserialize(deserializer)
    }

    fn visit_bool<E: de::Error>(self, boolean: bool) -> Result<Reply, E> {
        Ok(Reply::Bool(boolean))
    }

    fn visit_i64<E: de::Error>(self, integer: i64) -> Result<Reply, E> {
        Ok(Reply::Integer(integer))
    }

    fn visit_u64<E: de::Error>(self, integer: u64) -> Result<Reply, E> {
        // One representation per number: `Unsigned` only above `i64::MAX`.
        Ok(i64::try_from(integer).map_or(Reply::Unsigned(integer), Reply::Integer))
    }

    fn visit_f64<E: de::Error>(self, float: f64) -> Result<Reply, E> {
        Ok(Reply::Float(float))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Reply, E> {
        Ok(Reply::Text(text.to_owned()))
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<Reply, E> {
        Ok(Reply::Text(text))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Reply, A::Error> {
        let mut elements = Vec::new();
        while let Some(element) = seq.next_element()? {
            elements.push(element);
        }
        Ok(Reply::Array(elements))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Reply, A::Error> {
        let mut fields = Vec::new();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            fields.push((key, map.next_value()?));
        }
        Ok(Reply::Object(fields))
    }
}

/// Reads an object's [`Key`]. A JSON key is always a string, and goes through `deserialize_any` as
/// every value does, so none of serde_json's typed paths (with their error formatting) is compiled in.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Key, D::Error> {
        deserializer.deserialize_any(KeySeed)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Key;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("an object key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
        Ok(match key {
            "result" => Key::Result,
            "error" => Key::Error,
            other => Key::Other(other.to_owned()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(json: &str) -> Reply {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn integers_stay_exact() {
        assert_eq!(reply("-9223372036854775808"), Reply::Integer(i64::MIN));
        assert_eq!(reply("9223372036854775807"), Reply::Integer(i64::MAX));
        assert_eq!(
            reply("9223372036854775808"),
            Reply::Unsigned(1 << 63),
            "above i64::MAX"
        );
        assert_eq!(reply("18446744073709551615"), Reply::Unsigned(u64::MAX));
        assert_eq!(reply("9007199254740993"), Reply::Integer((1 << 53) + 1));
        assert_eq!(reply("0").as_u64(), Some(0));
        assert_eq!(reply("-1").as_u64(), None);
        assert_eq!(reply("18446744073709551615").as_i64(), None);
    }

    #[test]
    fn other_numbers_are_floats_never_counts() {
        for json in ["1.5", "1.0", "-0", "1e3", "18446744073709551616"] {
            let number = reply(json);
            assert!(matches!(number, Reply::Float(_)), "{json}: {number:?}");
            assert_eq!((number.as_i64(), number.as_u64()), (None, None), "{json}");
        }
        assert_eq!(reply("1.5").to_string(), "1.5");
        assert_eq!(
            reply("18446744073709551616").to_string(),
            "18446744073709552000"
        );
    }

    #[test]
    fn null_bool_strings_and_nested_arrays() {
        assert_eq!(reply("null"), Reply::Nil);
        assert_eq!(reply("true"), Reply::Bool(true));
        assert_eq!(
            reply(r#"[1,["a",[null,[]]],"b"]"#),
            Reply::Array(vec![
                Reply::Integer(1),
                Reply::Array(vec![
                    Reply::Text("a".to_owned()),
                    Reply::Array(vec![Reply::Nil, Reply::Array(vec![])]),
                ]),
                Reply::Text("b".to_owned()),
            ])
        );
        let text = "say \"hi\"\\\n\t\u{1}é€😀";
        let json = serde_json::to_string(text).unwrap();
        assert_eq!(reply(&json), Reply::Text(text.to_owned()));
        assert_eq!(reply(r#""\u00e9\ud83d\ude00""#).as_str(), Some("é😀"));
    }

    #[test]
    fn display_is_compact_json() {
        let json = r#"[1,-2,null,true,"say \"hi\"\n\u0001é😀",[],[18446744073709551615,0.25]]"#;
        assert_eq!(reply(json).to_string(), json);
        assert_eq!(
            reply(r#"[ 1 , "x" ]"#).to_string(),
            r#"[1,"x"]"#,
            "whitespace dropped"
        );
    }

    #[test]
    fn an_object_is_no_redis_reply_and_is_quoted_as_sent() {
        let object = reply(r#"{ "b": [1, {"é\"": null}], "a": "x" }"#);
        assert_eq!(object.to_string(), r#"{"b":[1,{"é\"":null}],"a":"x"}"#);
        assert_eq!((object.as_str(), object.as_array()), (None, None));
    }

    #[test]
    fn an_object_keeps_its_keys_in_order_duplicates_too() {
        assert_eq!(
            reply(r#"{"result":null,"x\n":[1],"result":"a"}"#),
            Reply::Object(vec![
                (Key::Result, Reply::Nil),
                (
                    Key::Other("x\n".to_owned()),
                    Reply::Array(vec![Reply::Integer(1)])
                ),
                (Key::Result, Reply::Text("a".to_owned())),
            ])
        );
    }
}
