//! One region's Redis: the decision script, the merge script and deletes, with the decoding of their
//! replies into [`Ledger`]s.

use super::state::{self, Ledger};
use crate::algorithm::{Algorithm, Cost, Policy};
use crate::error::{Error, Result};
use crate::ratelimit::with_dynamic_capacity;
use crate::redis::{
    number_in, read_limit, Reply, RestClient, Strings, LATE_MS, MULTI_BUCKET, MULTI_MERGE,
    MULTI_WINDOW,
};
use crate::transport::Transport;
use std::time::Duration;

/// Where a decision at one time reads and writes: the hashes of the current window or epoch and the one
/// before (`<key>:<window>` for the windows, as `@upstash/ratelimit`'s `MultiRegionRatelimit` keeps
/// them; `<key>:bucket:<epoch>` for the token bucket and GCRA), and how long each is kept.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The index of the current window or epoch.
    pub window: u64,
    /// The length of a window or epoch, in milliseconds.
    pub length_ms: u64,
    /// The hashes, the current one first.
    pub keys: Vec<String>,
    /// How many windows after its own a hash is still read: 0 for a fixed window, 1 otherwise (as the
    /// previous window or epoch).
    read_after: u64,
    /// The time of the decision, in milliseconds.
    now_ms: u64,
    /// What every hash's key starts with, before the window's index.
    stem: String,
}

impl Plan {
    /// The plan of `rule` on `key` at `now` (µs).
    pub fn new(rule: &Algorithm, key: &str, now: u64) -> Self {
        let (stem, length_ms) = match rule {
            Algorithm::FixedWindow(rule) => (format!("{key}:"), rule.window_ms()),
            Algorithm::SlidingWindow(rule) => (format!("{key}:"), rule.window_ms()),
            Algorithm::TokenBucket(_) | Algorithm::Gcra(_) => {
                (format!("{key}:bucket:"), state::epoch_ms(rule))
            }
        };
        let now_ms = now / 1_000;
        let window = now_ms / length_ms;
        let read_after = u64::from(!matches!(rule, Algorithm::FixedWindow(_)));
        let keys = (0..=read_after)
            .map(|back| format!("{stem}{}", window.saturating_sub(back)))
            .collect();
        Self {
            window,
            length_ms,
            keys,
            read_after,
            now_ms,
            stem,
        }
    }

    /// The TTL (ms) of a hash written at the plan's time: until the end of the last window that
    /// reads the current one, plus [`LATE_MS`], as the caller's clock reads them (never from a first
    /// write, so that a request stamped before a window ended finds it counted). The previous
    /// window's hash, written by merges only, keeps it a window longer than it needs.
    pub fn ttl_ms(&self) -> u64 {
        ((self.window + self.read_after + 1) * self.length_ms + LATE_MS).saturating_sub(self.now_ms)
    }

    /// The keys a decision around now may use, for a reset: two back, one ahead for a clock a little
    /// in advance.
    pub fn around(&self) -> Vec<String> {
        (self.window.saturating_sub(2)..=self.window + 1)
            .map(|window| format!("{}{window}", self.stem))
            .collect()
    }
}

/// A region's answer to a decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Decided {
    /// Whether the region admitted the request (and recorded it).
    pub allowed: bool,
    /// The time of the decision (µs).
    pub now: u64,
    /// The limit applied (the dynamic limit when one is set there).
    pub limit: u64,
    /// The windows as they were before the request, the current one first.
    pub ledgers: Vec<Ledger>,
    /// The cost recorded for the request in the current window (0 for none): its cost, or for a
    /// refund at most what was used.
    pub recorded: f64,
}

/// Runs the decision of `cost` under `rule` as `plan` lays it out in one region: the request is
/// recorded as `field` (see [`state::field`]) if the region admits it. With `limit_key`, the dynamic
/// limit stored there replaces the capacity. `elapsed` says how long the call has taken, so that the
/// EVAL after a NOSCRIPT fits in what the timeout leaves (see [`Script::run`](crate::redis::Script::run)).
#[allow(clippy::too_many_arguments)]
pub async fn decide<T: Transport>(
    client: &RestClient<T>,
    rule: &Algorithm,
    plan: &Plan,
    now: u64,
    field: &str,
    cost: Cost,
    limit_key: Option<&str>,
    elapsed: &(dyn Fn() -> Duration + Sync),
) -> Result<Decided> {
    let mut keys: Strings = plan.keys.iter().collect();
    if let Some(limit_key) = limit_key {
        keys.push(limit_key);
    }
    let dynamic = if limit_key.is_some() { "1" } else { "0" };
    let cost = cost.get();
    let mut args = Strings::new();
    args.push_number(now);
    let mut bucket = |kind: &'static str, [a, b, c]: [u64; 3]| {
        args.push(kind).push_number(a).push_number(b).push_number(c);
        args.push(dynamic)
            .push_decimal(cost)
            .push(field)
            .push_number(plan.ttl_ms());
        &MULTI_BUCKET
    };
    let script = match rule {
        Algorithm::FixedWindow(_) | Algorithm::SlidingWindow(_) => {
            args.push_number(plan.length_ms)
                .push_number(rule.capacity())
                .push_decimal(cost)
                .push(field)
                .push(dynamic)
                .push_number(plan.ttl_ms());
            &MULTI_WINDOW
        }
        Algorithm::Gcra(rule) => bucket(
            "gcra",
            [rule.emission_interval(), rule.tolerance(), rule.capacity()],
        ),
        Algorithm::TokenBucket(rule) => bucket(
            "tb",
            [rule.capacity(), rule.interval_ms(), rule.refill_rate()],
        ),
    };
    let reply = script.run(client, &keys, &args, elapsed).await?;
    let fields = reply.as_array().unwrap_or_default();
    let number = |index: usize| fields.get(index).and_then(Reply::as_u64);
    let recorded = fields.get(5).and_then(Reply::as_str).and_then(number_in);
    let (Some(allowed @ 0..=1), Some(now), Some(limit), Some(recorded)) =
        (number(0), number(1), number(2), recorded)
    else {
        return Err(malformed(format!(
            "the {} script returned {reply}",
            script.name()
        )));
    };
    let ledgers = (0..plan.keys.len())
        .map(|window| ledger(fields.get(3 + window)))
        .collect::<Result<_>>()?;
    Ok(Decided {
        allowed: allowed == 1,
        now,
        limit,
        ledgers,
        recorded,
    })
}

/// `rule` with the capacity the dynamic limit in `limit_key` gives it in one region, read by a `GET`
/// as the multi-region scripts read it (a fraction rounded down for every algorithm, the sliding
/// window's too; negative is 0; at most 2^53 - 1), or `rule` itself when none is stored: for a
/// decision that cannot reach the key (a Redis Cluster), which then runs without it.
pub async fn dynamic_rule<T: Transport>(
    client: &RestClient<T>,
    rule: Algorithm,
    limit_key: &str,
) -> Result<Algorithm> {
    match read_limit(client, limit_key, false).await? {
        Some(capacity) => with_dynamic_capacity(rule, capacity, limit_key),
        None => Ok(rule),
    }
}

/// Merges `ledger` into the hash `key` of one region, which then expires in `ttl_ms`; the reply is
/// how many ids were written.
pub async fn merge<T: Transport>(
    client: &RestClient<T>,
    key: &str,
    ttl_ms: u64,
    ledger: &Ledger,
) -> Result<Reply> {
    let mut args = Strings::new();
    args.push_number(ttl_ms);
    for (id, cost) in ledger.iter() {
        args.push(id).push_decimal(cost);
    }
    // A merge runs in `pending`, which no answer waits for: its EVAL after a NOSCRIPT gets a whole
    // timeout of its own.
    MULTI_MERGE
        .run(client, &std::iter::once(key).collect(), &args, &|| {
            Duration::ZERO
        })
        .await
}

/// A hash as HGETALL returns it (`[id, cost, id, cost, ...]`) as a ledger; a cost that is no number
/// (never written by either library) counts as 0, as the script counts it.
fn ledger(fields: Option<&Reply>) -> Result<Ledger> {
    let Some(fields) = fields.and_then(Reply::as_array) else {
        return Err(malformed(format!(
            "a window's fields are not an array: {}",
            fields.map_or("nothing".to_owned(), Reply::to_string)
        )));
    };
    let mut ledger = Ledger::new();
    for pair in fields.chunks(2) {
        let (Some(id), Some(cost)) = (
            pair.first().and_then(Reply::as_str),
            pair.get(1).and_then(Reply::as_str),
        ) else {
            let found = pair.iter().map(Reply::to_string).collect::<Vec<_>>();
            return Err(malformed(format!(
                "a window field is not text: {}",
                found.join(", ")
            )));
        };
        let cost = number_in(cost.trim()).filter(|cost| cost.is_finite());
        ledger.insert(id, cost.unwrap_or(0.0));
    }
    Ok(ledger)
}

fn malformed(message: String) -> Error {
    Error::MalformedReply { message }
}
