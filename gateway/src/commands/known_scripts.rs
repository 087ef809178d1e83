//! `--known-scripts-only`: EVAL, EVALSHA and SCRIPT LOAD restricted to scripts the gateway knows.
//!
//! Without it a token runs any Lua, and Lua can loop forever or call any command Redis allows the
//! gateway's user. The known scripts are edgelimit's own ([`edgelimit::redis::scripts`]),
//! `@upstash/ratelimit` 2.2.0's (by SHA-1 alone, checked against the installed package by a test)
//! and the ones given with `--scripts-file`.

use std::collections::HashSet;
use std::path::Path;

use super::command::Command;
use super::scripts::{sha1_hex, strip_unknown_flags};
use crate::error::GatewayError;

/// The scripts of `@upstash/ratelimit` 2.2.0, by the SDK's name: the SHA-1 of the text the SDK
/// sends (shebang line included), and of that text once [`strip_unknown_flags`] has rewritten it
/// (`None`: nothing to strip). The texts belong to the SDK; the test
/// `sdk_script_shas_are_those_of_the_installed_package` reads them from it.
const UPSTASH_RATELIMIT: &[(&str, &str, Option<&str>)] = &[
    (
        "singleRegion.fixedWindow.limit",
        "b2efc02798c8e9b471a10f9b1d5745db89923ff3",
        Some("5a59d9254166567a53d2e692ee461dfe26382b9d"),
    ),
    (
        "singleRegion.fixedWindow.getRemaining",
        "823cb2a5a902d69681244f5e28e5ebb8f2a89edd",
        Some("66e38c2a38474d36bfb48f457450466467f49f72"),
    ),
    (
        "singleRegion.slidingWindow.limit",
        "74740bb3d7792848093cdef586b6b6037c455fd6",
        Some("e6dcdd5b33dc90919840930a53bffa7878992887"),
    ),
    (
        "singleRegion.slidingWindow.getRemaining",
        "7ca36169e0fc9caedd81b4eef8e99854c157f9b5",
        Some("6819c818928a1db9321d0cf582909f5b44f10f78"),
    ),
    (
        "singleRegion.tokenBucket.limit",
        "d60be5bd3d83482ae229309f1f7425424f891204",
        Some("b4727fa590938700c2865009589fb88341ae413d"),
    ),
    (
        "singleRegion.tokenBucket.getRemaining",
        "40daf4a441df736f5c99f8b77bbe176c909e5de4",
        Some("97b783171813346ae795d60824000febdfc64783"),
    ),
    (
        "singleRegion.cachedFixedWindow.limit",
        "1861a700bafe96c833a483af6b1c28a8897cfdb0",
        Some("28e1a327fdc0e1c74a804d58aa6f0587584c792e"),
    ),
    (
        "singleRegion.cachedFixedWindow.getRemaining",
        "eb82f0e853d2fc9a236fa9bfbe704fda6ac2fc36",
        Some("66d59517709ea3be3f39e3f68f70fe923cc9791d"),
    ),
    (
        "multiRegion.fixedWindow.limit",
        "e04b753a75909b7f99aae4c04cf8869a8de02a9e",
        Some("1948422f08b49882cbca8a9e7fdd1450332266b8"),
    ),
    (
        "multiRegion.fixedWindow.getRemaining",
        "e066c8ce3eaca142b0894ad1541e0a58c9924819",
        Some("873f2db6804bf7b1d3ebe0b66dfa37b330e2613e"),
    ),
    (
        "multiRegion.slidingWindow.limit",
        "aeb4d8f381e8dafc8e69041baae1324d254ded44",
        Some("e4342b31f3730d8516088c1da8a5dd90923c6be1"),
    ),
    (
        "multiRegion.slidingWindow.getRemaining",
        "87828c1088f6a8d1f512a434ea330189982a1c0a",
        Some("a9e89c281ac76719570645727b151159becf6c04"),
    ),
    ("reset", "54bd274ddc59fb3be0f42deee2f64322a10e2b50", None),
    (
        "checkDenyList",
        "e8062088fe7e67994f617766e5d766490de1afb8",
        None,
    ),
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
        for (_, sent, stripped) in UPSTASH_RATELIMIT {
            known.shas.insert((*sent).to_owned());
            known.shas.extend(stripped.map(str::to_owned));
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

    /// EVALSHA of every script of `@upstash/ratelimit` 2.2.0 must pass, with the SHA-1 the SDK
    /// sends and with the one Redis knows after the rewrite.
    #[test]
    fn knows_every_sha_the_sdk_sends() {
        let known = KnownScripts::new(&[] as &[&Path]).unwrap();
        for (name, sent, stripped) in UPSTASH_RATELIMIT {
            for sha in std::iter::once(*sent).chain(*stripped) {
                assert!(
                    known.check(&Command::of(&["evalsha", sha, "0"])).is_ok(),
                    "{name} {sha}"
                );
            }
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

    /// The table holds exactly the scripts of the installed `@upstash/ratelimit`, read from the
    /// package by `tests/js/ratelimit_scripts.mjs`: their SHA-1s as the SDK sends them (and ships
    /// them) and after [`strip_unknown_flags`].
    #[test]
    fn sdk_script_shas_are_those_of_the_installed_package() {
        let helper = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/js/ratelimit_scripts.mjs"
        );
        let output = std::process::Command::new("node")
            .arg(helper)
            .output()
            .expect("node runs");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let sdk: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(sdk["version"], "2.2.0", "the table is of 2.2.0's scripts");
        let mut installed: Vec<(String, String, Option<String>)> = sdk["scripts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|script| {
                let name = script["name"].as_str().unwrap().to_owned();
                let text = script["text"].as_str().unwrap().as_bytes();
                let sent = sha1_hex(text);
                if let Some(shipped) = script["hash"].as_str() {
                    assert_eq!(shipped, sent, "the SHA-1 the SDK ships for {name}");
                }
                let stripped = strip_unknown_flags(text).map(|text| sha1_hex(&text));
                (name, sent, stripped)
            })
            .collect();
        let mut table: Vec<(String, String, Option<String>)> = UPSTASH_RATELIMIT
            .iter()
            .map(|(name, sent, stripped)| {
                (
                    (*name).to_owned(),
                    (*sent).to_owned(),
                    stripped.map(str::to_owned),
                )
            })
            .collect();
        installed.sort();
        table.sort();
        assert_eq!(installed, table);
    }
}
