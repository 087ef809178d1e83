//! Turning request bodies and paths into Redis commands (lists of byte strings).

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::error::GatewayError;

/// One Redis command: the name followed by its arguments, as raw bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// `args[0]` is the command name as sent by the client.
    pub args: Vec<Vec<u8>>,
}

impl Command {
    /// The command name in upper case (ASCII only; other bytes are kept).
    pub fn name(&self) -> String {
        String::from_utf8_lossy(&self.args[0]).to_ascii_uppercase()
    }

    /// The argument at `i` in upper case, if any (used for subcommands and options).
    pub fn arg_upper(&self, i: usize) -> Option<String> {
        self.args
            .get(i)
            .map(|a| String::from_utf8_lossy(a).to_ascii_uppercase())
    }

    /// A command from its parts as text, for tests: `Command::of(&["SET", "k", "v"])`.
    #[cfg(test)]
    pub fn of(parts: &[&str]) -> Self {
        Command {
            args: parts.iter().map(|p| p.as_bytes().to_vec()).collect(),
        }
    }
}

fn bad(message: impl Into<String>) -> GatewayError {
    GatewayError::BadRequest(message.into())
}

/// A JSON value as a command reads it, parsed by serde_json without a JSON tree: an argument
/// already in the bytes Redis receives, an array, or what cannot be an argument.
enum Part {
    Bytes(Vec<u8>),
    Array(Vec<Part>),
    Null,
    Object,
    NonFinite,
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(PartVisitor)
    }
}

struct PartVisitor;

/// Numbers become exact decimal strings: integers as written, other numbers through the
/// shortest round-trip form without exponent (`1.8e12` becomes `1800000000000`, `10.0` becomes `10`).
impl<'de> Visitor<'de> for PartVisitor {
    type Value = Part;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_str<E>(self, v: &str) -> Result<Part, E> {
        Ok(Part::Bytes(v.as_bytes().to_vec()))
    }

    fn visit_string<E>(self, v: String) -> Result<Part, E> {
        Ok(Part::Bytes(v.into_bytes()))
    }

    fn visit_bool<E>(self, v: bool) -> Result<Part, E> {
        Ok(Part::Bytes(if v {
            b"true".to_vec()
        } else {
            b"false".to_vec()
        }))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Part, E> {
        Ok(Part::Bytes(v.to_string().into_bytes()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Part, E> {
        Ok(Part::Bytes(v.to_string().into_bytes()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Part, E> {
        Ok(if v.is_finite() {
            Part::Bytes(v.to_string().into_bytes())
        } else {
            Part::NonFinite
        })
    }

    fn visit_unit<E>(self) -> Result<Part, E> {
        Ok(Part::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Part, A::Error> {
        let mut parts = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(part) = seq.next_element()? {
            parts.push(part);
        }
        Ok(Part::Array(parts))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Part, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Part::Object)
    }
}

/// Parses a body that must be JSON.
fn parse_json(body: &[u8]) -> Result<Part, GatewayError> {
    serde_json::from_slice(body).map_err(|e| bad(format!("ERR invalid JSON body: {e}")))
}

/// One argument as Redis receives it.
fn scalar(part: Part, index: usize) -> Result<Vec<u8>, GatewayError> {
    match part {
        Part::Bytes(bytes) => Ok(bytes),
        Part::NonFinite => Err(bad(format!("ERR argument {index} is not a finite number"))),
        Part::Null => Err(bad(format!("ERR argument {index} is null"))),
        Part::Array(_) => Err(bad(format!(
            "ERR argument {index} is an array: arguments must be strings, numbers or booleans"
        ))),
        Part::Object => Err(bad(format!(
            "ERR argument {index} is an object: arguments must be strings, numbers or booleans"
        ))),
    }
}

/// Converts a JSON array like `["SET","k","v"]` to a command.
fn command_from_json(part: Part) -> Result<Command, GatewayError> {
    let Part::Array(items) = part else {
        return Err(bad(
            "ERR a command must be a JSON array of strings, e.g. [\"GET\",\"key\"]",
        ));
    };
    if items.is_empty() {
        return Err(bad("ERR empty command"));
    }
    let args = items
        .into_iter()
        .enumerate()
        .map(|(i, part)| scalar(part, i))
        .collect::<Result<Vec<_>, _>>()?;
    if args[0].is_empty() {
        return Err(bad("ERR empty command name"));
    }
    Ok(Command { args })
}

/// Parses the body of `POST /`: one command array.
pub fn single(body: &[u8]) -> Result<Command, GatewayError> {
    command_from_json(parse_json(body)?)
}

/// Parses the body of `/pipeline` and `/multi-exec`: an array of command arrays.
pub fn batch(body: &[u8]) -> Result<Vec<Command>, GatewayError> {
    let Part::Array(items) = parse_json(body)? else {
        return Err(bad(
            "ERR a pipeline must be a JSON array of command arrays, e.g. [[\"GET\",\"k\"]]",
        ));
    };
    if items.is_empty() {
        return Err(bad("ERR empty pipeline"));
    }
    items.into_iter().map(command_from_json).collect()
}

/// Builds a command from a request path (`/set/k/v`), one argument per percent-decoded
/// segment; a non-empty body becomes the last argument.
pub fn from_path(path: &str, body: &[u8]) -> Result<Command, GatewayError> {
    let path = path.strip_prefix('/').unwrap_or(path);
    let mut args: Vec<Vec<u8>> = path
        .split('/')
        .map(|s| percent_encoding::percent_decode_str(s).collect())
        .collect();
    if !body.is_empty() {
        args.push(body.to_vec());
    }
    if args.first().is_none_or(|a| a.is_empty()) {
        return Err(bad("ERR empty command"));
    }
    Ok(Command { args })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(c: &Command) -> Vec<String> {
        c.args
            .iter()
            .map(|a| String::from_utf8(a.clone()).unwrap())
            .collect()
    }

    #[test]
    fn numbers_become_exact_decimals() {
        let c = single(br#"["SET","k",1796220043830,"EX",10.0,1.8e12,-3,0.5,true]"#).unwrap();
        assert_eq!(
            strings(&c),
            [
                "SET",
                "k",
                "1796220043830",
                "EX",
                "10",
                "1800000000000",
                "-3",
                "0.5",
                "true"
            ]
        );
    }

    #[test]
    fn rejects_bad_shapes() {
        for body in [
            &b"{\"a\":1}"[..],
            b"[]",
            b"[[\"GET\"]]",
            b"[\"SET\",{\"a\":1}]",
            b"[\"SET\",null]",
            b"not json",
            b"\"GET\"",
            b"[\"\"]",
        ] {
            let err = single(body).unwrap_err();
            assert!(matches!(err, GatewayError::BadRequest(_)), "{body:?}");
        }
        assert!(batch(b"[]").is_err());
        assert!(batch(b"[\"GET\",\"k\"]").is_err());
        assert!(batch(b"[[\"GET\",\"k\"],[]]").is_err());
    }

    #[test]
    fn path_form_decodes_and_appends_body() {
        let c = from_path("/set/a%20b/", b"value").unwrap();
        assert_eq!(strings(&c), ["set", "a b", "", "value"]);
        assert!(from_path("/", b"").is_err());
    }
}
