//! Turning request bodies and paths into Redis commands (lists of byte strings).

use serde_json::Value as Json;

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

/// Parses a body that must be JSON.
fn parse_json(body: &[u8]) -> Result<Json, GatewayError> {
    serde_json::from_slice(body).map_err(|e| bad(format!("ERR invalid JSON body: {e}")))
}

/// Converts one JSON scalar to the bytes Redis receives.
///
/// Numbers become exact decimal strings: integers as written, other numbers through the
/// shortest round-trip form without exponent (`1.8e12` becomes `1800000000000`, `10.0` becomes `10`).
fn scalar(value: &Json, index: usize) -> Result<Vec<u8>, GatewayError> {
    match value {
        Json::String(s) => Ok(s.as_bytes().to_vec()),
        Json::Bool(b) => Ok(if *b {
            b"true".to_vec()
        } else {
            b"false".to_vec()
        }),
        Json::Number(n) => {
            if let Some(i) = n.as_i64() {
                Ok(i.to_string().into_bytes())
            } else if let Some(u) = n.as_u64() {
                Ok(u.to_string().into_bytes())
            } else {
                match n.as_f64() {
                    Some(f) if f.is_finite() => Ok(f.to_string().into_bytes()),
                    _ => Err(bad(format!("ERR argument {index} is not a finite number"))),
                }
            }
        }
        Json::Null => Err(bad(format!("ERR argument {index} is null"))),
        Json::Array(_) => Err(bad(format!(
            "ERR argument {index} is an array: arguments must be strings, numbers or booleans"
        ))),
        Json::Object(_) => Err(bad(format!(
            "ERR argument {index} is an object: arguments must be strings, numbers or booleans"
        ))),
    }
}

/// Converts a JSON array like `["SET","k","v"]` to a command.
fn command_from_json(value: &Json) -> Result<Command, GatewayError> {
    let Json::Array(items) = value else {
        return Err(bad(
            "ERR a command must be a JSON array of strings, e.g. [\"GET\",\"key\"]",
        ));
    };
    if items.is_empty() {
        return Err(bad("ERR empty command"));
    }
    let args = items
        .iter()
        .enumerate()
        .map(|(i, v)| scalar(v, i))
        .collect::<Result<Vec<_>, _>>()?;
    if args[0].is_empty() {
        return Err(bad("ERR empty command name"));
    }
    Ok(Command { args })
}

/// Parses the body of `POST /`: one command array.
pub fn single(body: &[u8]) -> Result<Command, GatewayError> {
    command_from_json(&parse_json(body)?)
}

/// Parses the body of `/pipeline` and `/multi-exec`: an array of command arrays.
pub fn batch(body: &[u8]) -> Result<Vec<Command>, GatewayError> {
    let Json::Array(items) = parse_json(body)? else {
        return Err(bad(
            "ERR a pipeline must be a JSON array of command arrays, e.g. [[\"GET\",\"k\"]]",
        ));
    };
    if items.is_empty() {
        return Err(bad("ERR empty pipeline"));
    }
    items.iter().map(command_from_json).collect()
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
