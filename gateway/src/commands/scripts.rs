//! Lua shebang flags Redis does not know, and the SHA-1 map that hides the rewrite.
//!
//! `@upstash/ratelimit` 2.x starts its scripts with `#!lua flags=allow-key-locking`, a flag
//! only Upstash knows; Redis 7 rejects it. The gateway removes unknown flags (keeping the
//! ones Redis knows and the line itself, so error line numbers stay right) and remembers
//! `SHA-1(original) -> stripped script`, so EVALSHA with the client's SHA-1 hits the script
//! Redis really has. After a gateway restart or `SCRIPT FLUSH` the lookup misses and Redis
//! answers NOSCRIPT, which makes the client fall back to EVAL: nothing is ever answered wrong.

use std::collections::HashMap;
use std::sync::RwLock;

use redis::Value;

use super::command::Command;

/// Shebang flags Redis 7 accepts.
const KNOWN_FLAGS: &[&str] = &[
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];

/// How many rewritten scripts are remembered; beyond that new ones still run (via EVAL)
/// but their EVALSHA misses, which the client handles.
const MAX_SCRIPTS: usize = 10_000;

/// Lower-case hex SHA-1 of a script, as Redis computes it.
pub fn sha1_hex(script: &[u8]) -> String {
    sha1_smol::Sha1::from(script).digest().to_string()
}

/// Returns the script with unknown shebang flags removed, or `None` if nothing changes.
pub fn strip_unknown_flags(script: &[u8]) -> Option<Vec<u8>> {
    if !script.starts_with(b"#!") {
        return None;
    }
    let end = script
        .iter()
        .position(|&b| b == b'\n')
        .unwrap_or(script.len());
    let end = if end > 2 && script[end - 1] == b'\r' {
        end - 1
    } else {
        end
    };
    let line = std::str::from_utf8(&script[2..end]).ok()?;
    let mut words = line.split_ascii_whitespace();
    let engine = words.next()?;
    let mut changed = false;
    let mut out = vec![engine.to_owned()];
    for word in words {
        match word.strip_prefix("flags=") {
            Some(flags) => {
                let kept: Vec<&str> = flags
                    .split(',')
                    .filter(|f| !f.is_empty())
                    .filter(|f| {
                        let known = KNOWN_FLAGS.contains(f);
                        changed |= !known;
                        known
                    })
                    .collect();
                if !kept.is_empty() {
                    out.push(format!("flags={}", kept.join(",")));
                }
            }
            None => out.push(word.to_owned()),
        }
    }
    if !changed {
        return None;
    }
    let mut result = format!("#!{}", out.join(" ")).into_bytes();
    result.extend_from_slice(&script[end..]);
    Some(result)
}

/// A script as Redis knows it after the rewrite.
#[derive(Debug, Clone)]
struct Rewritten {
    sha: String,
}

/// What to change in Redis's reply to a rewritten command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyFix {
    /// Leave the reply alone.
    None,
    /// `SCRIPT LOAD` must answer the SHA-1 of the client's text, not of the stripped one.
    ScriptSha(String),
}

impl ReplyFix {
    /// Redis's reply as the client expects it.
    pub fn apply(&self, reply: Value) -> Value {
        match (self, reply) {
            (Self::ScriptSha(sha), Value::BulkString(_)) => {
                Value::BulkString(sha.clone().into_bytes())
            }
            (_, reply) => reply,
        }
    }
}

/// Map from the client's SHA-1 to the stripped script's SHA-1.
#[derive(Debug, Default)]
pub struct ScriptMap {
    by_client_sha: RwLock<HashMap<String, Rewritten>>,
}

impl ScriptMap {
    /// Creates an empty map.
    pub fn new() -> Self {
        Self::default()
    }

    fn remember(&self, client_sha: String, stripped: &[u8]) {
        let Ok(mut map) = self.by_client_sha.write() else {
            return;
        };
        if map.len() < MAX_SCRIPTS || map.contains_key(&client_sha) {
            map.insert(
                client_sha,
                Rewritten {
                    sha: sha1_hex(stripped),
                },
            );
        }
    }

    fn translate(&self, sha: &[u8]) -> Option<String> {
        let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
        let map = self.by_client_sha.read().ok()?;
        map.get(&sha).map(|r| r.sha.clone())
    }

    /// Rewrites EVAL/EVALSHA/SCRIPT LOAD/SCRIPT EXISTS in place and says how to fix the reply.
    pub fn rewrite(&self, command: &mut Command) -> ReplyFix {
        let name = command.name();
        match name.as_str() {
            "EVAL" | "EVAL_RO" if command.args.len() > 1 => {
                if let Some(stripped) = strip_unknown_flags(&command.args[1]) {
                    self.remember(sha1_hex(&command.args[1]), &stripped);
                    command.args[1] = stripped;
                }
                ReplyFix::None
            }
            "EVALSHA" | "EVALSHA_RO" if command.args.len() > 1 => {
                if let Some(sha) = self.translate(&command.args[1]) {
                    command.args[1] = sha.into_bytes();
                }
                ReplyFix::None
            }
            "SCRIPT" => match command.arg_upper(1).as_deref() {
                Some("LOAD") if command.args.len() == 3 => {
                    match strip_unknown_flags(&command.args[2]) {
                        Some(stripped) => {
                            let client_sha = sha1_hex(&command.args[2]);
                            self.remember(client_sha.clone(), &stripped);
                            command.args[2] = stripped;
                            ReplyFix::ScriptSha(client_sha)
                        }
                        None => ReplyFix::None,
                    }
                }
                Some("EXISTS") => {
                    for arg in command.args.iter_mut().skip(2) {
                        if let Some(sha) = self.translate(arg) {
                            *arg = sha.into_bytes();
                        }
                    }
                    ReplyFix::None
                }
                _ => ReplyFix::None,
            },
            _ => ReplyFix::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_only_unknown_flags() {
        assert_eq!(strip_unknown_flags(b"return 1"), None);
        assert_eq!(strip_unknown_flags(b"#!lua\nreturn 1"), None);
        assert_eq!(
            strip_unknown_flags(b"#!lua flags=no-writes\nreturn 1"),
            None
        );
        assert_eq!(
            strip_unknown_flags(b"#!lua flags=allow-key-locking\nreturn 1").unwrap(),
            b"#!lua\nreturn 1"
        );
        assert_eq!(
            strip_unknown_flags(b"#!lua flags=no-writes,allow-key-locking\r\nreturn 1").unwrap(),
            b"#!lua flags=no-writes\r\nreturn 1"
        );
    }

    #[test]
    fn maps_client_sha_to_stripped_sha() {
        let map = ScriptMap::new();
        let original = b"#!lua flags=allow-key-locking\nreturn 1".to_vec();
        let client_sha = sha1_hex(&original);
        let mut load = Command {
            args: vec![b"script".to_vec(), b"load".to_vec(), original],
        };
        assert_eq!(
            map.rewrite(&mut load),
            ReplyFix::ScriptSha(client_sha.clone())
        );
        let mut evalsha = Command {
            args: vec![
                b"evalsha".to_vec(),
                client_sha.to_uppercase().into_bytes(),
                b"0".to_vec(),
            ],
        };
        map.rewrite(&mut evalsha);
        assert_eq!(evalsha.args[1], sha1_hex(b"#!lua\nreturn 1").into_bytes());
    }
}
