//! Several limits decided in one script ([`With::Set`](crate::backend::With::Set)): the set script is
//! built by build.rs from the algorithms' own bodies (`scripts/set/head.lua`, the prelude, each body as
//! a function named after its file, `scripts/set/tail.lua`), so a set decides each limit exactly as
//! that limit's script decides it, on its own keys (those of `@upstash/ratelimit` under the limit's
//! prefix), with the writes of every body queued until all have decided: the queued writes of the
//! limits that admit run if the set admits, none otherwise. One EVALSHA, coalesced with other
//! commands into one `/pipeline` request as every decision is.

use super::backend::{outcome, RedisBackend};
use super::command::Strings;
use super::layout::{self, PRELUDE};
use super::rest::malformed;
use super::script::Script;
use crate::algorithm::Algorithm;
use crate::backend::{Ask, Set, Verdict};
use crate::error::Result;
use crate::maybe_send::BoxFuture;
use crate::transport::Transport;

/// The script `src/redis/scripts/$file` as sent (see build.rs).
macro_rules! sent {
    ($file:literal) => {
        include_str!(concat!(env!("OUT_DIR"), "/scripts/", $file))
    };
}

/// The set script, made of the same fragments as build.rs makes it (the bodies in the order of their
/// files' names), with the SHA-1 it computes.
pub(crate) static SET: Script = Script::from_parts(
    "set",
    &[
        sent!("set/head.lua"),
        PRELUDE,
        "local function fixed_window()\n",
        sent!("fixed_window.lua"),
        "\nend\n",
        "local function gcra()\n",
        sent!("gcra.lua"),
        "\nend\n",
        "local function sliding_window()\n",
        sent!("sliding_window.lua"),
        "\nend\n",
        "local function token_bucket()\n",
        sent!("token_bucket.lua"),
        "\nend\n",
        sent!("set/tail.lua"),
    ],
    include_str!(concat!(env!("OUT_DIR"), "/set.lua.sha1")),
);

/// The scripts sets add to the algorithms'.
pub(crate) static SET_SCRIPTS: [&Script; 1] = [&SET];

/// The name of `rule`'s body in the set script.
fn body(rule: &Algorithm) -> &'static str {
    match rule {
        Algorithm::FixedWindow(_) => "fixed_window",
        Algorithm::SlidingWindow(_) => "sliding_window",
        Algorithm::TokenBucket(_) => "token_bucket",
        Algorithm::Gcra(_) => "gcra",
    }
}

impl<T: Transport> RedisBackend<T> {
    /// The decision of `ask` with the other limits of `set`, in the set script; each limit's reply
    /// is checked against its algorithm as a single decision's is. The request is made before the
    /// future, which borrows nothing of `ask` or `set`.
    #[inline(never)]
    pub(super) fn set(&self, ask: &Ask<'_>, set: Set<'_>) -> BoxFuture<'_, Result<Verdict>> {
        let own = (ask.key, ask.rule, ask.limit_key, set.dry_run);
        let others =
            (set.others.iter()).map(|part| (part.key, part.rule, part.limit_key, part.dry_run));
        let limits = std::iter::once(own).chain(others);
        let mut keys = Strings::new();
        let mut args = self.args_from_time(ask.now);
        args.push_decimal(ask.cost.get())
            .push_number(set.others.len() as u64 + 1);
        let mut rules = Vec::with_capacity(set.others.len() + 1);
        for (key, rule, limit_key, dry_run) in limits {
            let before = keys.len();
            let (_, [a, b, c]) = layout::call_into(&rule, key, ask.now, self.redis_time, &mut keys);
            args.push(body(&rule))
                .push_number((keys.len() - before) as u64)
                .push_number(a)
                .push_number(b)
                .push_number(c)
                .push(if limit_key.is_some() { "1" } else { "0" })
                .push(if dry_run { "1" } else { "0" });
            if let Some(limit_key) = limit_key {
                keys.push(limit_key);
            }
            rules.push(rule);
        }
        let cost = ask.cost;
        let elapsed = self.elapsed();
        Box::pin(async move {
            let reply = SET.run(self.client(), &keys, &args, &elapsed).await?;
            let replies = match reply.as_array() {
                Some(replies) if replies.len() == rules.len() => replies,
                _ => return Err(malformed(&format!("the set script returned {reply}"))),
            };
            let mut outcomes = Vec::with_capacity(rules.len());
            for (rule, reply) in rules.iter().zip(replies) {
                outcomes.push(outcome(*rule, &SET, reply, cost)?);
            }
            Ok(Verdict::Set(outcomes))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::SET;
    use crate::redis::script::tests::code_lines;

    #[test]
    fn the_set_script_is_head_prelude_each_body_as_a_function_and_tail() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/redis/scripts/");
        let read = |file: &str| std::fs::read_to_string(dir.to_owned() + file).unwrap();
        let mut source = read("set/head.lua") + &read("prelude.lua");
        for name in ["fixed_window", "gcra", "sliding_window", "token_bucket"] {
            source += &format!(
                "local function {name}()\n{}\nend\n",
                read(&format!("{name}.lua"))
            );
        }
        source += &read("set/tail.lua");
        assert_eq!(code_lines(SET.source()), code_lines(&source));
        let expected = sha1_smol::Sha1::from(SET.source()).digest().to_string();
        assert_eq!(SET.sha1(), expected);
    }
}
