//! `--known-scripts-only`: EVAL, EVALSHA and SCRIPT LOAD restricted to scripts the gateway knows.
//!
//! Without it a token runs any Lua, and Lua can loop forever or call any command Redis allows the
//! gateway's user. The known scripts are edgelimit's own ([`edgelimit::redis::scripts`]),
//! `@upstash/ratelimit` 2.2.0's (`known_scripts/upstash_ratelimit_2_2_0/*.lua`, written by
//! `known_scripts/extract.mjs` from the SDK's dist, each checked against the SHA-1 the SDK ships)
//! and the ones given with `--scripts-file`.

use std::collections::HashSet;
use std::path::Path;

use crate::command::Command;
use crate::error::GatewayError;
use crate::scripts::{sha1_hex, strip_unknown_flags};

/// The scripts of `@upstash/ratelimit` 2.2.0, text as the SDK sends it (shebang line included).
const UPSTASH_RATELIMIT: &[&str] = &[
    include_str!("known_scripts/upstash_ratelimit_2_2_0/cached_fixed_window_limit_script.lua"),
    include_str!(
        "known_scripts/upstash_ratelimit_2_2_0/cached_fixed_window_remaining_token_script.lua"
    ),
    include_str!("known_scripts/upstash_ratelimit_2_2_0/check_deny_list_script.lua"),
    include_str!("known_scripts/upstash_ratelimit_2_2_0/fixed_window_limit_script.lua"),
    include_str!("known_scripts/upstash_ratelimit_2_2_0/fixed_window_limit_script2.lua"),
    include_str!("known_scripts/upstash_ratelimit_2_2_0/fixed_window_remaining_tokens_script.lua"),
    include_str!("known_scripts/upstash_ratelimit_2_2_0/fixed_window_remaining_tokens_script2.lua"),
    include_str!("known_scripts/upstash_ratelimit_2_2_0/reset_script.lua"),
    include_str!("known_scripts/upstash_ratelimit_2_2_0/sliding_window_limit_script.lua"),
    include_str!("known_scripts/upstash_ratelimit_2_2_0/sliding_window_limit_script2.lua"),
    include_str!(
        "known_scripts/upstash_ratelimit_2_2_0/sliding_window_remaining_tokens_script.lua"
    ),
    include_str!(
        "known_scripts/upstash_ratelimit_2_2_0/sliding_window_remaining_tokens_script2.lua"
    ),
    include_str!("known_scripts/upstash_ratelimit_2_2_0/token_bucket_limit_script.lua"),
    include_str!("known_scripts/upstash_ratelimit_2_2_0/token_bucket_remaining_tokens_script.lua"),
];

/// `FUNCTION` subcommands that load no code.
const HARMLESS_FUNCTION: &[&str] = &["KILL", "LIST", "STATS", "DUMP", "HELP"];

/// The SHA-1s (lower-case hex) of the scripts that may run.
#[derive(Debug)]
pub struct KnownScripts {
    shas: HashSet<String>,
}

fn is_sha1(text: &str) -> bool {
    text.len() == 40 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

impl KnownScripts {
    /// edgelimit's and `@upstash/ratelimit` 2.2.0's scripts, plus those of `files`: a file whose
    /// every line (blank lines and `#` comments aside) is a 40-digit SHA-1 lists SHA-1s; any other
    /// file is one script's text.
    pub fn new(files: &[impl AsRef<Path>]) -> Result<Self, String> {
        let mut known = Self {
            shas: HashSet::new(),
        };
        for script in edgelimit::redis::scripts() {
            known.add_text(script.source().as_bytes());
        }
        for text in UPSTASH_RATELIMIT {
            known.add_text(text.as_bytes());
        }
        for file in files {
            let path = file.as_ref();
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read scripts file {}: {e}", path.display()))?;
            let lines: Vec<&str> = text
                .lines()
                .map(str::trim)
                .filter(|line| !line.is_empty() && !line.starts_with('#'))
                .collect();
            if !lines.is_empty() && lines.iter().all(|line| is_sha1(line)) {
                known
                    .shas
                    .extend(lines.iter().map(|line| line.to_ascii_lowercase()));
            } else {
                known.add_text(text.as_bytes());
            }
        }
        Ok(known)
    }

    /// Knows a text under its own SHA-1 and under the SHA-1 of its shebang-stripped form.
    fn add_text(&mut self, text: &[u8]) {
        self.shas.insert(sha1_hex(text));
        if let Some(stripped) = strip_unknown_flags(text) {
            self.shas.insert(sha1_hex(&stripped));
        }
    }

    fn knows_text(&self, text: &[u8]) -> bool {
        self.shas.contains(&sha1_hex(text))
    }

    fn knows_sha(&self, sha: &[u8]) -> bool {
        std::str::from_utf8(sha).is_ok_and(|sha| self.shas.contains(&sha.to_ascii_lowercase()))
    }

    /// Refuses (403) a command that would run or load a script the gateway does not know,
    /// and any `FUNCTION` subcommand that loads or removes code. Checked on the text the
    /// client sent, before the shebang rewrite.
    pub fn check(&self, command: &Command) -> Result<(), GatewayError> {
        let arg = |i: usize| command.args.get(i).map(Vec::as_slice).unwrap_or_default();
        let known = match command.name().as_str() {
            "EVAL" | "EVAL_RO" => self.knows_text(arg(1)),
            "EVALSHA" | "EVALSHA_RO" => self.knows_sha(arg(1)),
            "SCRIPT" if command.arg_upper(1).as_deref() == Some("LOAD") => self.knows_text(arg(2)),
            "FUNCTION" => command
                .arg_upper(1)
                .is_some_and(|sub| HARMLESS_FUNCTION.contains(&sub.as_str())),
            _ => true,
        };
        if known {
            Ok(())
        } else {
            Err(GatewayError::Forbidden(format!(
                "NOPERM '{}' of a script the gateway does not know is refused (--known-scripts-only)",
                command.name().to_ascii_lowercase()
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SHA-1s `@upstash/ratelimit` 2.2.0 ships in `SCRIPTS` and `RESET_SCRIPT`: EVALSHA with
    /// each of them must pass.
    #[test]
    fn knows_every_sha_the_sdk_sends() {
        let known = KnownScripts::new(&[] as &[&Path]).unwrap();
        for sha in [
            "b2efc02798c8e9b471a10f9b1d5745db89923ff3",
            "823cb2a5a902d69681244f5e28e5ebb8f2a89edd",
            "74740bb3d7792848093cdef586b6b6037c455fd6",
            "7ca36169e0fc9caedd81b4eef8e99854c157f9b5",
            "d60be5bd3d83482ae229309f1f7425424f891204",
            "40daf4a441df736f5c99f8b77bbe176c909e5de4",
            "1861a700bafe96c833a483af6b1c28a8897cfdb0",
            "eb82f0e853d2fc9a236fa9bfbe704fda6ac2fc36",
            "e04b753a75909b7f99aae4c04cf8869a8de02a9e",
            "e066c8ce3eaca142b0894ad1541e0a58c9924819",
            "aeb4d8f381e8dafc8e69041baae1324d254ded44",
            "87828c1088f6a8d1f512a434ea330189982a1c0a",
            "54bd274ddc59fb3be0f42deee2f64322a10e2b50",
        ] {
            assert!(
                known.check(&Command::of(&["evalsha", sha, "0"])).is_ok(),
                "{sha}"
            );
        }
        for script in edgelimit::redis::scripts() {
            assert!(known
                .check(&Command::of(&["EVALSHA", script.sha1(), "0"]))
                .is_ok());
            assert!(known
                .check(&Command::of(&["EVAL", script.source(), "0"]))
                .is_ok());
        }
    }

    #[test]
    fn refuses_other_code() {
        let known = KnownScripts::new(&[] as &[&Path]).unwrap();
        let other = sha1_hex(b"return 1");
        assert!(known
            .check(&Command::of(&["eval", "return 1", "0"]))
            .is_err());
        assert!(known
            .check(&Command::of(&["evalsha", &other, "0"]))
            .is_err());
        assert!(known
            .check(&Command::of(&["script", "load", "return 1"]))
            .is_err());
        assert!(known
            .check(&Command::of(&["function", "load", "#!lua name=x"]))
            .is_err());
        assert!(known.check(&Command::of(&["function", "kill"])).is_ok());
        assert!(known.check(&Command::of(&["script", "kill"])).is_ok());
        assert!(known.check(&Command::of(&["get", "k"])).is_ok());
    }
}
