//! `RedisBackend`: every algorithm as one atomic Lua script, one HTTP request per decision.

use super::command::Strings;
use super::corrupt::corrupt;
use super::dynamic_limit;
use super::layout::{self, Call};
use super::reply::Reply;
use super::rest::{malformed, RestClient};
use super::script::Script;
use crate::algorithm::{Algorithm, Cost, FixedWindowState, SlidingWindowState, State};
use crate::backend::{
    Ask, Backend, Decided, LeaseBackend, Outcome, ProtectedBackend, Verdict, With,
};
use crate::clock::{Clock, SystemClock};
use crate::error::{quote, Error, Result};
use crate::maybe_send::BoxFuture;
use crate::number;
use crate::transport::Transport;
use std::sync::Arc;
use std::time::Duration;

/// A store in Redis, reached over the Upstash REST protocol through a [`Transport`].
///
/// Each decision is one script run atomically by Redis (EVALSHA, or EVAL the first time), so any number
/// of processes share one limit. The script decides and writes; it also returns the state it found,
/// on which the pure algorithm computes the answer's details (remaining, reset, retry-after) and checks
/// that it agrees with the script (a window's common request returns only the counts: the client
/// knows the rest). Keys and values are those of `@upstash/ratelimit` 2.x.
///
/// Decisions are timed by Redis's clock (`TIME` in the script) unless a clock is given
/// ([`RedisBackend::with_clock`]): a request then counts in the window of the moment Redis decides it,
/// whatever the instance's clock says or however late it arrives.
pub struct RedisBackend<T> {
    client: RestClient<T>,
    clock: Arc<dyn Clock>,
    /// Whether the scripts decide on Redis's clock.
    pub(super) redis_time: bool,
}

impl<T: Transport> RedisBackend<T> {
    /// A store sending through `transport`, deciding on Redis's clock, coalescing concurrent decisions.
    pub fn new(transport: T) -> Self {
        Self {
            client: RestClient::new(transport),
            clock: Arc::new(SystemClock),
            redis_time: true,
        }
    }

    /// The same store deciding on the caller's time, read from `clock`, instead of Redis's (call
    /// [`RedisBackend::with_redis_time`] after it to keep Redis's clock and time only the calls'
    /// timeouts with `clock`). Every clock of a fleet that shares a limit must then agree within the
    /// allowance of [`LATE_MS`](super::LATE_MS), less the time a call takes.
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self.redis_time = false;
        self
    }

    /// The same store deciding on Redis's clock (`TIME` in the scripts), the default, or on the
    /// caller's clock.
    pub fn with_redis_time(mut self, redis_time: bool) -> Self {
        self.redis_time = redis_time;
        self
    }

    /// The same store with coalescing on or off: when on, decisions issued in the same tick share one
    /// `/pipeline` request.
    pub fn with_coalescing(mut self, coalesce: bool) -> Self {
        self.client = self.client.with_coalescing(coalesce);
        self
    }

    /// The REST client underneath.
    pub fn client(&self) -> &RestClient<T> {
        &self.client
    }

    /// The plain decision of `ask`: `ask.rule`'s script for its cost on its key, with the dynamic limit
    /// stored under `ask.limit_key` if given, checked against the algorithm run on the state the script
    /// found. The request is made before the future, which borrows nothing of `ask`.
    fn plain(&self, ask: &Ask<'_>) -> BoxFuture<'_, Result<Verdict>> {
        let (script, keys, args) = self.call(ask, None);
        let (rule, cost, sent) = (ask.rule, ask.cost, ask.now);
        let elapsed = self.elapsed();
        Box::pin(async move {
            let reply = script.run(&self.client, &keys, &args, &elapsed).await?;
            let outcome = match decided_first(rule, &reply, cost, sent) {
                Some(outcome) => outcome,
                None => outcome(rule, script, &reply, cost)?,
            };
            Ok(Verdict::Decided(outcome))
        })
    }

    /// How long a call started now has taken, on this store's clock, for a retry to fit in what the
    /// call's timeout leaves (see [`Script::run`]).
    pub(super) fn elapsed(&self) -> impl Fn() -> Duration + Sync + '_ {
        let clock = &*self.clock;
        let start = clock.now_micros();
        move || Duration::from_micros(clock.now_micros().saturating_sub(start))
    }

    /// The script deciding `ask` (its rule, cost, key and dynamic limit, at its time), its keys and
    /// its arguments. The dynamic limit's key and a lease's `ledger` follow the algorithm's keys when
    /// given, as [`follow`] sends them.
    pub(super) fn call(
        &self,
        ask: &Ask<'_>,
        ledger: Option<&str>,
    ) -> (&'static Script, Strings, Strings) {
        let Call {
            script,
            mut keys,
            args: [a, b, c],
        } = layout::call(&ask.rule, ask.key, ask.now, self.redis_time);
        let mut args = self.args_from_time(ask.now);
        args.push_number(a).push_number(b).push_number(c);
        args.push_decimal(ask.cost.get());
        follow(&mut keys, &mut args, ask.limit_key, ledger);
        (script, keys, args)
    }

    /// A script's arguments, starting with the time it is sent (`ARGV[1]`): `now` (µs), or nothing
    /// when it reads Redis's clock.
    pub(super) fn args_from_time(&self, now: u64) -> Strings {
        let mut args = Strings::new();
        if self.redis_time {
            args.push("");
        } else {
            args.push_number(now);
        }
        args
    }
}

/// Sends the keys that follow an algorithm's, the dynamic limit's `limit_key` then a lease's
/// `ledger`, and `ARGV[6]`, which names them for the prelude: `1` the dynamic limit, `2` the ledger,
/// `3` both, nothing when neither is sent.
pub(super) fn follow(
    keys: &mut Strings,
    args: &mut Strings,
    limit_key: Option<&str>,
    ledger: Option<&str>,
) {
    let flag = match (limit_key, ledger) {
        (None, None) => return,
        (Some(_), None) => "1",
        (None, Some(_)) => "2",
        (Some(_), Some(_)) => "3",
    };
    for key in limit_key.into_iter().chain(ledger) {
        keys.push(key);
    }
    args.push(flag);
}

/// The outcome of `rule`'s `script` for `cost` from its `reply`, checked: the algorithm, run on the
/// state the script found, must agree with it.
pub(super) fn outcome(
    rule: Algorithm,
    script: &Script,
    reply: &Reply,
    cost: Cost,
) -> Result<Outcome> {
    decided(rule, script, reply, cost, None).map(|(outcome, _)| outcome)
}

/// The outcome of a request its script decided before the prelude (src/redis/scripts/fast/), at the
/// time the caller `sent` and under the limit it sent, from the `reply` that carries only what the
/// client does not know: a fixed window's count after adding the whole `cost`, or a sliding window's
/// current and previous counts found, each followed by Redis's time when it decided on its clock.
/// `None` for any other reply, which [`outcome`] reads.
fn decided_first(rule: Algorithm, reply: &Reply, cost: Cost, sent: u64) -> Option<Outcome> {
    let fields = match reply {
        Reply::Array(fields) => fields.as_slice(),
        single => std::slice::from_ref(single),
    };
    let int = |index: usize| match fields.get(index) {
        Some(Reply::Integer(number)) => Some(*number),
        _ => None,
    };
    let counts = match rule {
        Algorithm::FixedWindow(_) => 1,
        Algorithm::SlidingWindow(_) => 2,
        _ => return None,
    };
    let now = match fields.len().checked_sub(counts)? {
        0 => sent,
        1 => u64::try_from(int(counts)?).ok()?,
        _ => return None,
    };
    let found: State = match rule {
        Algorithm::FixedWindow(window) => FixedWindowState {
            window: window.window_index(now),
            used: number::whole(cost.get()).and_then(|cost| int(0)?.checked_sub(cost))?,
        }
        .into(),
        Algorithm::SlidingWindow(window) => SlidingWindowState {
            window: window.window_index(now),
            current: u64::try_from(int(0)?).ok()?,
            previous: u64::try_from(int(1)?).ok()?,
        }
        .into(),
        _ => return None,
    };
    let found = Some(found);
    let decision = rule.apply_leasing(found.as_ref(), now, cost, 0).decision;
    Some(Outcome {
        now,
        found,
        rule,
        decision,
    })
}

/// [`outcome`], for a call that asked for a lease of up to `want` units when given: the reply then
/// ends with the units the script leased, which must be what [`Algorithm::lease_room`] allows on the
/// state it found, and the lease's id; the decision counts the units as used. Returns the outcome
/// and the units leased.
pub(super) fn decided(
    rule: Algorithm,
    script: &Script,
    reply: &Reply,
    cost: Cost,
    want: Option<u64>,
) -> Result<(Outcome, u64)> {
    let all = reply.as_array().unwrap_or_default();
    let (fields, leased) = match (want, all) {
        (Some(_), [rest @ .., units, _id]) => (rest, units.as_u64()),
        _ => (all, None),
    };
    let flag = |index: usize| fields.get(index).and_then(Reply::as_u64);
    let (Some(allowed @ 0..=1), Some(now), Some(capacity)) = (flag(0), flag(1), flag(2)) else {
        return Err(malformed(&format!(
            "the {} script returned {reply}",
            script.name()
        )));
    };
    let rule = if capacity == rule.capacity() {
        rule
    } else {
        rule.with_capacity(capacity).map_err(|error| Error::Redis {
            message: format!("the dynamic limit {capacity} does not fit: {error}"),
        })?
    };
    let found = layout::decode(&rule, fields.get(3..).unwrap_or_default())?;
    let units = match want {
        None => 0,
        Some(want) => {
            let units = rule.lease_room(found.as_ref(), now, cost, want);
            if leased != Some(units) {
                return Err(malformed(&format!(
                    "the {} script leased {} where the algorithm leases {units}: {reply}",
                    rule.name(),
                    leased.map_or("nothing".to_owned(), |leased| leased.to_string()),
                )));
            }
            units
        }
    };
    let decision = rule
        .apply_leasing(found.as_ref(), now, cost, units)
        .decision;
    let allowed = allowed == 1;
    if decision.allowed != allowed {
        return Err(malformed(&format!(
            "the {} script {} a request the algorithm {}",
            rule.name(),
            if allowed { "admitted" } else { "denied" },
            if decision.allowed { "admits" } else { "denies" },
        )));
    }
    Ok((
        Outcome {
            now,
            found,
            rule,
            decision,
        },
        units,
    ))
}

impl<T: Transport> Backend for RedisBackend<T> {
    /// One script reads the dynamic limit and decides, atomically, with the deny list and the
    /// analytics event of a guard, the leases of a renewal, or the other limits of a set, in the same
    /// script.
    fn decide<'a>(&'a self, ask: &Ask<'_>) -> Decided<'a> {
        // The other three calls are not inlined: a first plain decision compiles none of them.
        Decided::Later(match ask.with {
            With::Nothing => self.plain(ask),
            With::Guard(guard) => self.guarded(ask, guard),
            With::Lease(renewal) => self.leasing(ask, renewal),
            With::Set(set) => self.set(ask, set),
        })
    }

    /// Deletes `key`'s state, keeping the units of other instances' live leases counted (see
    /// [`LeaseBackend::reset_leases`]): a limit that does not lease may share an identifier with
    /// limits that do.
    fn reset<'a>(&'a self, key: &'a str, params: Algorithm) -> BoxFuture<'a, Result<()>> {
        self.reset_leases(key, params, None, Duration::ZERO, &[])
    }

    fn backend_name(&self) -> &str {
        "redis"
    }

    fn now_micros(&self) -> u64 {
        self.clock.now_micros()
    }

    fn dynamic_limit<'a>(&'a self, limit_key: &'a str) -> BoxFuture<'a, Result<Option<u64>>> {
        Box::pin(read_limit(&self.client, limit_key, false))
    }

    /// `GET`, read as the script's `capacity()` reads it: rounded up for the sliding window; a limit
    /// `params` cannot take is corrupt state, as in the script.
    fn dynamic_capacity<'a>(
        &'a self,
        limit_key: &'a str,
        params: Algorithm,
    ) -> BoxFuture<'a, Result<Option<u64>>> {
        let round_up = matches!(params, Algorithm::SlidingWindow(_));
        Box::pin(async move {
            let capacity = read_limit(&self.client, limit_key, round_up).await?;
            if let Some(capacity) = capacity {
                params.with_capacity(capacity).map_err(|error| {
                    corrupt(
                        limit_key,
                        format!("holds a limit the {} cannot take: {error}", params.name()),
                    )
                })?;
            }
            Ok(capacity)
        })
    }

    fn protected(&self) -> Option<&dyn ProtectedBackend> {
        Some(self)
    }

    fn leases(&self) -> Option<&dyn LeaseBackend> {
        Some(self)
    }

    fn set_dynamic_limit<'a>(
        &'a self,
        limit_key: &'a str,
        limit: Option<u64>,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            match limit {
                Some(limit) => {
                    let limit = limit.to_string();
                    self.client.command(&["SET", limit_key, &limit]).await
                }
                None => self.client.command(&["DEL", limit_key]).await,
            }
            .map(drop)
        })
    }
}

/// The limit stored under `limit_key` (`GET`), read as the scripts read it (see
/// [`dynamic_limit::capacity`]): its fraction rounded down, or up with `round_up`. Also
/// `MultiRegionRatelimit`'s read of a region's dynamic limit on a Redis Cluster. A value the scripts
/// refuse (no number, or a key of another type) is [`Error::CorruptState`], as theirs.
pub(crate) async fn read_limit<T: Transport>(
    client: &RestClient<T>,
    limit_key: &str,
    round_up: bool,
) -> Result<Option<u64>> {
    let reply = match client.command(&["GET", limit_key]).await {
        Err(Error::Redis { message }) if message.starts_with("WRONGTYPE") => {
            return Err(corrupt(limit_key, "is no string: not a dynamic limit"));
        }
        reply => reply?,
    };
    match &reply {
        Reply::Nil => Ok(None),
        Reply::Text(text) => dynamic_limit::capacity(text, round_up)
            .map(Some)
            .ok_or_else(|| {
                corrupt(
                    limit_key,
                    format!("holds {}, not a dynamic limit", quote(text)),
                )
            }),
        _ => Err(malformed(&format!("GET {limit_key} returned {reply}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::{FixedWindow, TokenBucket};
    use crate::redis::command::command;
    use crate::transport::HttpReply;
    use std::time::Duration;

    /// A transport answering every request with `body`, status 200.
    struct Canned(&'static str);

    impl Transport for Canned {
        fn post<'a>(&'a self, _: &'a str, _: String) -> BoxFuture<'a, Result<HttpReply>> {
            let body = self.0.as_bytes().to_vec();
            Box::pin(std::future::ready(Ok(HttpReply { status: 200, body })))
        }
    }

    fn malformed_message(result: Result<impl std::fmt::Debug>) -> String {
        match result {
            Err(Error::MalformedReply { message }) => message,
            other => panic!("not a malformed reply: {other:?}"),
        }
    }

    #[test]
    fn replies_that_are_not_what_the_script_promises_are_quoted() {
        let rule = Algorithm::from(FixedWindow::new(10, Duration::from_secs(1)).unwrap());
        let decide = |body| {
            let store = RedisBackend::new(Canned(body));
            let ask = Ask {
                key: "k",
                cost: rule.cost(1.0).unwrap(),
                rule,
                limit_key: None,
                now: 0,
                with: With::Nothing,
            };
            malformed_message(pollster::block_on(store.decide(&ask)))
        };
        assert_eq!(
            decide(r#"[{"result":[1,"x"]}]"#),
            r#"the fixed window script returned [1,"x"]"#
        );
        assert_eq!(
            decide(r#"[{"result":[1,1.5,10]}]"#),
            "the fixed window script returned [1,1.5,10]"
        );
        assert_eq!(
            decide(r#"[{"result":[1,0,10,0,{"b":1,"a":"\u00e9"}]}]"#),
            r#"reply field 1 is not an integer: {"b":1,"a":"é"}"#
        );
    }

    #[test]
    fn a_dynamic_limit_that_is_no_string_is_quoted() {
        let limit = |body| pollster::block_on(RedisBackend::new(Canned(body)).dynamic_limit("k"));
        assert_eq!(limit(r#"[{"result":null}]"#), Ok(None));
        assert_eq!(limit(r#"[{"result":"7"}]"#), Ok(Some(7)));
        assert_eq!(limit(r#"[{"result":"-1"}]"#), Ok(Some(0)));
        assert_eq!(
            limit(r#"[{"result":"ten"}]"#),
            Err(corrupt("k", r#"holds "ten", not a dynamic limit"#))
        );
        assert_eq!(
            malformed_message(limit(r#"[{"result":{"a":[1,"\n"]}}]"#)),
            r#"GET k returned {"a":[1,"\n"]}"#
        );
    }

    #[test]
    fn costs_are_sent_as_exact_decimals() {
        let rule = Algorithm::from(TokenBucket::new(1, Duration::from_secs(1), 10).unwrap());
        for (cost, text) in [
            (5.0, "5"),
            (0.5, "0.5"),
            (-0.25, "-0.25"),
            (1_796_220_043_830.0, "1796220043830"),
            (9_007_199_254_740_991.0, "9007199254740991"),
            (0.1 + 0.2, "0.30000000000000004"),
        ] {
            let mut args = Strings::new();
            args.push_plain("C")
                .push_decimal(rule.cost(cost).unwrap().get());
            assert_eq!(command(&[&args]), format!(r#"["C","{text}"]"#));
        }
    }
}
