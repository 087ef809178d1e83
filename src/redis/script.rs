//! A Lua script with its SHA-1, run as EVALSHA first and EVAL only when Redis does not know it.

use super::rest::{Command, RestClient};
use crate::error::{Error, Result};
use crate::transport::Transport;
use serde_json::Value;
use std::sync::OnceLock;

/// A Lua script, its SHA-1 computed once on first use.
pub struct Script {
    name: &'static str,
    source: &'static str,
    sha1: OnceLock<String>,
}

impl Script {
    /// A script called `name` (for messages) with the text `source`.
    pub const fn new(name: &'static str, source: &'static str) -> Self {
        Self {
            name,
            source,
            sha1: OnceLock::new(),
        }
    }

    /// The script's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The script's Lua text.
    pub fn source(&self) -> &'static str {
        self.source
    }

    /// The hex SHA-1 of the text, as EVALSHA and SCRIPT LOAD name it.
    pub fn sha1(&self) -> &str {
        self.sha1
            .get_or_init(|| sha1_smol::Sha1::from(self.source).digest().to_string())
    }

    /// Runs the script with `keys` and `args`: EVALSHA, then EVAL once if Redis answers NOSCRIPT
    /// (which also caches the script for the next call).
    pub async fn run<T: Transport>(
        &self,
        client: &RestClient<T>,
        keys: &[String],
        args: &[String],
    ) -> Result<Value> {
        match client
            .command(self.command("EVALSHA", self.sha1(), keys, args))
            .await
        {
            Err(Error::Redis { message }) if message.starts_with("NOSCRIPT") => {
                client
                    .command(self.command("EVAL", self.source, keys, args))
                    .await
            }
            reply => reply,
        }
    }

    fn command(&self, verb: &str, script: &str, keys: &[String], args: &[String]) -> Command {
        let mut command = Vec::with_capacity(3 + keys.len() + args.len());
        command.extend([verb.to_owned(), script.to_owned(), keys.len().to_string()]);
        command.extend(keys.iter().cloned());
        command.extend(args.iter().cloned());
        command
    }
}
