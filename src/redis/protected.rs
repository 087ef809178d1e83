//! Deny lists and analytics in the same request as the decision.
//!
//! `@upstash/ratelimit` checks its deny list with a second script beside the limit (two commands, and
//! the limit is consumed even when the value is denied), then records the analytics event with a third
//! command once the answer is known. Here all three are one script: each algorithm's script has a
//! guarded variant (built by build.rs: `scripts/guard/head.lua`, the prelude, the algorithm's body as a
//! function, `scripts/guard/tail.lua`) that looks the values up in `<prefix>:denyList:all` with
//! `SMISMEMBER` first and returns at once, counting nothing, when one is there; otherwise it decides
//! as the plain script does and adds the event of the outcome to the hour's sorted set with `ZINCRBY`.
//! An event that cannot be recorded changes nothing decided: the script wraps its reply as
//! `{'eventFailed', error, reply}`, read as [`Verdict::Unrecorded`]. A deny list of another type than a
//! set is a misconfiguration, answered as [`Error::CorruptState`] naming it (never admitted).
//! The events of both outcomes are sent written out (the caller knows them), so the script only picks
//! one. A decision is thus still one EVALSHA, coalesced with others into one `/pipeline` request, and
//! the answer waits for nothing more than without the guard. A value found in the deny list, a rare
//! answer, has its event recorded by the caller in the pending work: one event per value checked
//! would otherwise travel with every request.
//!
//! Keys and members are those of the peer, so a fleet mixing both libraries shares its deny lists and
//! its analytics. The guard's keys and arguments go after the algorithm's; the head hides them from the
//! algorithm's body, so the plain scripts need no change.

use super::backend::{outcome, RedisBackend};
use super::corrupt::corrupt;
use super::layout::PRELUDE;
use super::reply::Reply;
use super::rest::malformed;
use super::script::Script;
use crate::algorithm::Algorithm;
use crate::backend::{Ask, Guard, ProtectedBackend, Verdict};
use crate::error::{Error, Result};
use crate::maybe_send::BoxFuture;
use crate::transport::Transport;

/// The head of every guarded script, as sent (see build.rs).
const HEAD: &str = include_str!(concat!(env!("OUT_DIR"), "/scripts/guard/head.lua"));
/// The tail of every guarded script, as sent.
const TAIL: &str = include_str!(concat!(env!("OUT_DIR"), "/scripts/guard/tail.lua"));

/// The guarded variant of the script `src/redis/scripts/$file`, made of the same fragments as build.rs
/// makes it, with the SHA-1 it computes.
macro_rules! guarded {
    ($name:literal, $file:literal) => {
        Script::from_parts(
            $name,
            &[
                HEAD,
                PRELUDE,
                "local function decide()\n",
                include_str!(concat!(env!("OUT_DIR"), "/scripts/", $file, ".lua")),
                "\nend\n",
                TAIL,
            ],
            include_str!(concat!(env!("OUT_DIR"), "/", $file, ".guarded.lua.sha1")),
        )
    };
}

static FIXED_WINDOW: Script = guarded!("fixed window", "fixed_window");
static SLIDING_WINDOW: Script = guarded!("sliding window", "sliding_window");
static TOKEN_BUCKET: Script = guarded!("token bucket", "token_bucket");
static GCRA: Script = guarded!("gcra", "gcra");

/// The guarded variant of every algorithm's script, in the order of [`SCRIPTS`](super::SCRIPTS).
pub static GUARDED_SCRIPTS: [&Script; 4] = [&FIXED_WINDOW, &SLIDING_WINDOW, &TOKEN_BUCKET, &GCRA];

/// The guarded variant of `rule`'s script.
fn guarded(rule: &Algorithm) -> &'static Script {
    match rule {
        Algorithm::FixedWindow(_) => &FIXED_WINDOW,
        Algorithm::SlidingWindow(_) => &SLIDING_WINDOW,
        Algorithm::TokenBucket(_) => &TOKEN_BUCKET,
        Algorithm::Gcra(_) => &GCRA,
    }
}

impl<T: Transport> RedisBackend<T> {
    /// The guarded decision of `ask`: the guarded variant of its rule's script, the deny list first,
    /// then the decision and its event. The request is made before the future, which borrows nothing of
    /// `ask` or `guard`.
    #[inline(never)]
    pub(super) fn guarded(
        &self,
        ask: &Ask<'_>,
        guard: Guard<'_>,
    ) -> BoxFuture<'_, Result<Verdict>> {
        let (_, mut keys, mut args) = self.call(ask, None);
        let (rule, cost) = (ask.rule, ask.cost);
        let script = guarded(&rule);
        let values = guard.deny_list.map_or(&[][..], |(_, values)| values);
        if let Some((deny_key, _)) = guard.deny_list {
            keys.push(deny_key);
            for value in values {
                args.push(value);
            }
        }
        if let Some(events) = guard.events {
            keys.push(events.key);
            args.push(events.admitted).push(events.limited);
        }
        args.push_number(values.len() as u64);
        args.push(if guard.events.is_some() { "1" } else { "0" });
        let checked = values.len();
        let events_key = guard.events.map(|events| events.key.to_owned());
        let elapsed = self.elapsed();
        Box::pin(async move {
            let reply = script.run(self.client(), &keys, &args, &elapsed).await?;
            if let Some([Reply::Text(tag), Reply::Text(failure), decided]) = reply.as_array() {
                if tag == "eventFailed" {
                    let outcome = outcome(rule, script, decided, cost)?;
                    let events_key = events_key.as_deref().unwrap_or_default();
                    return Ok(Verdict::Unrecorded(
                        outcome,
                        event_error(events_key, failure),
                    ));
                }
            }
            if let Some([Reply::Text(tag), Reply::Array(found)]) = reply.as_array() {
                let found: Vec<bool> = found.iter().map(|flag| flag.as_i64() == Some(1)).collect();
                if tag != "denyList" || found.len() != checked || !found.contains(&true) {
                    return Err(malformed(&format!(
                        "the guarded {} script returned {reply}",
                        script.name()
                    )));
                }
                return Ok(Verdict::Denied(found));
            }
            outcome(rule, script, &reply, cost).map(Verdict::Decided)
        })
    }

    /// `SMISMEMBER key values…`: whether each of `values` is in the set `key`; a key of another type
    /// is a misconfiguration, [`Error::CorruptState`] naming it, as in the guarded script.
    pub(super) async fn smismember(&self, key: &str, values: &[String]) -> Result<Vec<bool>> {
        let mut command = vec!["SMISMEMBER", key];
        command.extend(values.iter().map(String::as_str));
        let reply = match self.client().command(&command).await {
            Err(Error::Redis { message }) if message.starts_with("WRONGTYPE") => {
                return Err(corrupt(
                    key,
                    format!("is no set of denied values: {message}"),
                ));
            }
            reply => reply?,
        };
        match reply.as_array() {
            Some(flags) if flags.len() == values.len() => {
                Ok(flags.iter().map(|flag| flag.as_i64() == Some(1)).collect())
            }
            _ => Err(malformed(&format!("SMISMEMBER {key} returned {reply}"))),
        }
    }

    /// `ZINCRBY key 1 member`.
    pub(super) async fn zincrby(&self, key: &str, member: &str) -> Result<()> {
        match self.client().command(&["ZINCRBY", key, "1", member]).await {
            Ok(_) => Ok(()),
            Err(Error::Redis { message }) => Err(event_error(key, &message)),
            Err(error) => Err(error),
        }
    }
}

impl<T: Transport> ProtectedBackend for RedisBackend<T> {
    fn record_event<'a>(&'a self, key: &'a str, member: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.zincrby(key, member))
    }

    fn find_denied<'a>(
        &'a self,
        key: &'a str,
        values: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<bool>>> {
        Box::pin(self.smismember(key, values))
    }
}

/// The error of an analytics event Redis refused to record in `key`: a key of another type (a hash
/// left by `@upstash/ratelimit` before 1.1.2) is [`Error::CorruptState`] naming it.
fn event_error(key: &str, message: &str) -> Error {
    if message.starts_with("WRONGTYPE") {
        corrupt(
            key,
            format!("is no sorted set of analytics events: {message}"),
        )
    } else {
        Error::Redis {
            message: message.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::script::tests::code_lines;
    use crate::redis::SCRIPTS;

    #[test]
    fn each_guarded_sha1_is_that_of_the_shipped_text() {
        for script in GUARDED_SCRIPTS {
            let expected = sha1_smol::Sha1::from(script.source()).digest().to_string();
            assert_eq!(script.sha1(), expected, "{}", script.name());
        }
    }

    #[test]
    fn each_guarded_script_is_head_prelude_body_as_a_function_and_tail() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/redis/scripts/");
        let read = |file: &str| std::fs::read_to_string(dir.to_owned() + file).unwrap();
        for (plain, guarded) in SCRIPTS.iter().zip(GUARDED_SCRIPTS) {
            assert_eq!(plain.name(), guarded.name());
            let body = read(&(plain.name().replace(' ', "_") + ".lua"));
            let source = read("guard/head.lua")
                + &read("prelude.lua")
                + "local function decide()\n"
                + &body
                + "\nend\n"
                + &read("guard/tail.lua");
            assert_eq!(
                code_lines(guarded.source()),
                code_lines(&source),
                "{}",
                plain.name()
            );
        }
    }
}
