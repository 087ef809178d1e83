//! A Lua script with its SHA-1, run as EVALSHA first and EVAL only when Redis does not know it.

use super::command::{command, Strings};
use super::reply::Reply;
use super::rest::RestClient;
use crate::error::{Error, Result};
use crate::maybe_send::BoxFuture;
use crate::transport::Transport;
use std::sync::OnceLock;
use std::time::Duration;

/// A Lua script and its SHA-1 (computed by build.rs).
pub struct Script {
    name: &'static str,
    text: Text,
    sha1: &'static str,
}

/// A script's text: whole, or the fragments it is made of, joined the first time it is needed (only
/// EVAL sends it), so that fragments shared by several scripts are stored once.
enum Text {
    Whole(&'static str),
    Parts(&'static [&'static str], OnceLock<String>),
}

impl Script {
    /// A script called `name` (for messages) with the text `source` and its hex SHA-1 `sha1`.
    pub const fn new(name: &'static str, source: &'static str, sha1: &'static str) -> Self {
        Self {
            name,
            text: Text::Whole(source),
            sha1,
        }
    }

    /// A script called `name` whose text is `parts` one after the other, with its hex SHA-1 `sha1`.
    pub const fn from_parts(
        name: &'static str,
        parts: &'static [&'static str],
        sha1: &'static str,
    ) -> Self {
        Self {
            name,
            text: Text::Parts(parts, OnceLock::new()),
            sha1,
        }
    }

    /// The script's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The script's Lua text.
    pub fn source(&self) -> &str {
        match &self.text {
            Text::Whole(text) => text,
            Text::Parts(parts, text) => text.get_or_init(|| parts.concat()),
        }
    }

    /// The hex SHA-1 of the text, as EVALSHA and SCRIPT LOAD name it.
    pub fn sha1(&self) -> &'static str {
        self.sha1
    }

    /// Runs the script with `keys` and `args`: EVALSHA, then, if Redis answers NOSCRIPT, EVAL (which
    /// also caches the script for the next calls) — by one caller at a time per server: the others
    /// send EVALSHA again after its EVAL, and EVAL only if that meets NOSCRIPT too (the loading
    /// EVAL was sent apart, or failed). The transport's timeout bounds them all together: `elapsed`
    /// says how long the call has taken, and each retry gets what is left (a trait object: one body
    /// for every caller).
    pub async fn run<T: Transport>(
        &self,
        client: &RestClient<T>,
        keys: &Strings,
        args: &Strings,
        elapsed: &(dyn Fn() -> Duration + Sync),
    ) -> Result<Reply> {
        let mut evalsha = Strings::with_capacity(64);
        evalsha
            .push_plain("EVALSHA")
            .push_plain(self.sha1)
            .push_number(keys.len() as u64);
        let reply = client.send(command(&[&evalsha, keys, args]), None).await;
        if !no_script(&reply) {
            return reply;
        }
        self.load_and_run(client, evalsha, keys, args, elapsed)
            .await
    }

    /// The rest of [`Script::run`] once Redis answered NOSCRIPT to `evalsha`: EVAL, or EVALSHA again
    /// after another caller's EVAL. Boxed and not inlined: a run's future carries none of it, and a
    /// first decision on a server that knows the script compiles none of it.
    #[inline(never)]
    fn load_and_run<'a, T: Transport>(
        &'a self,
        client: &'a RestClient<T>,
        evalsha: Strings,
        keys: &'a Strings,
        args: &'a Strings,
        elapsed: &'a (dyn Fn() -> Duration + Sync),
    ) -> BoxFuture<'a, Result<Reply>> {
        Box::pin(async move {
            let call = |head: &Strings| command(&[head, keys, args]);
            let mut eval = Strings::default();
            eval.push_plain("EVAL")
                .push(self.source())
                .push_number(keys.len() as u64);
            let eval = call(&eval);
            if let Some(_loading) = client.load(self.sha1) {
                return retry(client, eval, elapsed).await;
            }
            let reply = retry(client, call(&evalsha), elapsed).await;
            if !no_script(&reply) {
                return reply;
            }
            retry(client, eval, elapsed).await
        })
    }
}

/// Whether Redis answered NOSCRIPT: it does not have the script (yet).
fn no_script(reply: &Result<Reply>) -> bool {
    matches!(reply, Err(Error::Redis { message }) if message.starts_with("NOSCRIPT"))
}

/// Sends `command` (a JSON array) again, within what the transport's timeout leaves after `elapsed`.
async fn retry<T: Transport>(
    client: &RestClient<T>,
    command: String,
    elapsed: &(dyn Fn() -> Duration + Sync),
) -> Result<Reply> {
    let within = client
        .transport()
        .timeout()
        .map(|after| after.saturating_sub(elapsed()));
    client.send(command, within).await
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::redis::SCRIPTS;

    /// Like upstash/ratelimit-js's `hash.offline.test.ts`: each SHA-1 build.rs emitted is that of the
    /// shipped text.
    #[test]
    fn each_sha1_is_that_of_the_shipped_text() {
        for script in crate::redis::scripts() {
            let expected = sha1_smol::Sha1::from(script.source()).digest().to_string();
            assert_eq!(script.sha1(), expected, "{}", script.name());
        }
    }

    #[test]
    fn each_script_is_the_code_of_its_fast_path_the_prelude_and_its_file_without_comments() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/redis/scripts/");
        let read = |file: &str| std::fs::read_to_string(dir.to_owned() + file).unwrap();
        let scripts = SCRIPTS.iter();
        #[cfg(feature = "multi-region")]
        let scripts = scripts.chain(crate::redis::MULTI_REGION_SCRIPTS.iter());
        for script in scripts {
            let file = script.name().replace(' ', "_") + ".lua";
            let fast =
                std::fs::read_to_string(dir.to_owned() + "fast/" + &file).unwrap_or_default();
            let source = fast + &read("prelude.lua") + &read(&file);
            let code = code_lines(&source);
            assert_eq!(code_lines(script.source()), code, "{file}");
            assert_eq!(script.source().lines().count(), code.len(), "{file}");
            assert!(
                code.iter().any(|line| line.contains("redis.call")),
                "{file}"
            );
        }
    }

    /// The lines of a script that are code: trimmed, without comment lines and empty lines.
    pub(crate) fn code_lines(script: &str) -> Vec<&str> {
        script
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with("--"))
            .collect()
    }
}
