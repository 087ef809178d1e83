//! Where each algorithm keeps its state in Redis, the arguments its script takes, and the decoding
//! of the script's reply into the algorithm's own state.
//!
//! Key names follow `@upstash/ratelimit` 2.x for the algorithms it has: `<key>:<window>` for the window
//! counters, `<key>` for the token bucket hash. GCRA, which the peer lacks, uses `<key>:gcra`.

use super::json::Value;
use super::rest::malformed;
use super::script::Script;
use crate::algorithm::{
    FixedWindow, FixedWindowState, Gcra, GcraState, Policy, SlidingWindow, SlidingWindowState,
    TokenBucket, TokenBucketState,
};
use crate::error::Result;
use crate::number::{format_f64, parse_f64};

/// The prelude and the script `src/algorithm/$file`, comment lines blanked, as build.rs writes them.
macro_rules! script {
    ($name:literal, $file:literal) => {
        Script::new($name, include_str!(concat!(env!("OUT_DIR"), "/", $file)))
    };
}

static FIXED_WINDOW: Script = script!("fixed window", "fixed_window.lua");
static SLIDING_WINDOW: Script = script!("sliding window", "sliding_window.lua");
static TOKEN_BUCKET: Script = script!("token bucket", "token_bucket.lua");
static GCRA: Script = script!("gcra", "gcra.lua");

/// Every script the crate runs.
pub static SCRIPTS: [&Script; 4] = [&FIXED_WINDOW, &SLIDING_WINDOW, &TOKEN_BUCKET, &GCRA];

/// What a script needs sent, besides the time (`ARGV[1]`, added by the caller).
pub(crate) struct Call {
    pub keys: Vec<String>,
    pub args: Vec<String>,
}

/// An algorithm's Redis layout.
pub(crate) trait Layout: Policy + Clone {
    /// The script deciding a request.
    fn script(&self) -> &'static Script;

    /// Keys and arguments for a request of `cost` on `key` at the caller's time `now`. With
    /// `redis_time`, window algorithms send the windows next to the caller's too, so that a Redis clock
    /// up to a window apart still finds its keys.
    fn call(&self, key: &str, now: u64, redis_time: bool, cost: f64) -> Call;

    /// Every key that may hold state for `key` around `now`.
    fn keys(&self, key: &str, now: u64) -> Vec<String>;

    /// The stored state from the reply fields after `allowed`, `now` and the capacity applied.
    fn decode(&self, fields: &[Value]) -> Result<Option<Self::State>>;
}

/// Keys `<key>:<window>` for windows `from..=to`.
fn window_keys(key: &str, from: u64, to: u64) -> Vec<String> {
    (from..=to)
        .map(|window| format!("{key}:{window}"))
        .collect()
}

/// The call of a window algorithm's script, which reads the current window and `history` windows before it
/// (0 for a fixed window, 1 for a sliding one). With `redis_time`, one more window is sent on each side,
/// since Redis's clock decides which window is current. Arguments: first window sent, window length,
/// limit, cost.
fn window_call(
    key: &str,
    window: u64,
    window_ms: u64,
    limit: u64,
    history: u64,
    redis_time: bool,
    cost: f64,
) -> Call {
    let margin = u64::from(redis_time);
    let from = window.saturating_sub(history + margin);
    Call {
        keys: window_keys(key, from, window + margin),
        args: vec![
            number(from),
            number(window_ms),
            number(limit),
            format_f64(cost),
        ],
    }
}

/// Every counter a window algorithm may read around `window`, whichever clock decides.
fn all_window_keys(key: &str, window: u64, history: u64) -> Vec<String> {
    window_keys(key, window.saturating_sub(history + 1), window + 1)
}

/// A reply field as an integer (Redis replies integers; a script may also return numeric strings).
fn integer(fields: &[Value], index: usize) -> Result<i64> {
    match fields.get(index) {
        Some(Value::Number(number)) => number.as_i64(),
        Some(Value::String(text)) => text.parse().ok(),
        _ => None,
    }
    .ok_or_else(|| {
        malformed(&format!(
            "reply field {index} is not an integer: {:?}",
            fields.get(index)
        ))
    })
}

/// A counter stored by either library; a negative count (left by the peer's refunds) is empty.
fn count(fields: &[Value], index: usize) -> Result<u64> {
    Ok(integer(fields, index)?.max(0) as u64)
}

fn number(value: u64) -> String {
    value.to_string()
}

impl Layout for FixedWindow {
    fn script(&self) -> &'static Script {
        &FIXED_WINDOW
    }

    fn call(&self, key: &str, now: u64, redis_time: bool, cost: f64) -> Call {
        let window = self.window_index(now);
        window_call(
            key,
            window,
            self.window_ms(),
            self.capacity(),
            0,
            redis_time,
            cost,
        )
    }

    fn keys(&self, key: &str, now: u64) -> Vec<String> {
        all_window_keys(key, self.window_index(now), 0)
    }

    fn decode(&self, fields: &[Value]) -> Result<Option<FixedWindowState>> {
        Ok(Some(FixedWindowState {
            window: count(fields, 0)?,
            used: count(fields, 1)?,
        }))
    }
}

impl Layout for SlidingWindow {
    fn script(&self) -> &'static Script {
        &SLIDING_WINDOW
    }

    fn call(&self, key: &str, now: u64, redis_time: bool, cost: f64) -> Call {
        let window = self.window_index(now);
        window_call(
            key,
            window,
            self.window_ms(),
            self.capacity(),
            1,
            redis_time,
            cost,
        )
    }

    fn keys(&self, key: &str, now: u64) -> Vec<String> {
        all_window_keys(key, self.window_index(now), 1)
    }

    fn decode(&self, fields: &[Value]) -> Result<Option<SlidingWindowState>> {
        Ok(Some(SlidingWindowState {
            window: count(fields, 0)?,
            current: count(fields, 1)?,
            previous: count(fields, 2)?,
        }))
    }
}

impl Layout for TokenBucket {
    fn script(&self) -> &'static Script {
        &TOKEN_BUCKET
    }

    fn call(&self, key: &str, _now: u64, _redis_time: bool, cost: f64) -> Call {
        Call {
            keys: vec![key.to_owned()],
            args: vec![
                number(self.capacity()),
                number(self.interval_ms()),
                number(self.refill_rate()),
                format_f64(cost),
            ],
        }
    }

    fn keys(&self, key: &str, _now: u64) -> Vec<String> {
        vec![key.to_owned()]
    }

    fn decode(&self, fields: &[Value]) -> Result<Option<TokenBucketState>> {
        let refilled_at = integer(fields, 0)?;
        if refilled_at < 0 {
            return Ok(None);
        }
        let tokens = fields
            .get(1)
            .and_then(Value::as_str)
            .and_then(parse_f64)
            .filter(|tokens| tokens.is_finite())
            .ok_or_else(|| {
                malformed(&format!("token count is not a number: {:?}", fields.get(1)))
            })?;
        Ok(Some(TokenBucketState {
            refilled_at: refilled_at as u64,
            tokens,
        }))
    }
}

impl Layout for Gcra {
    fn script(&self) -> &'static Script {
        &GCRA
    }

    fn call(&self, key: &str, _now: u64, _redis_time: bool, cost: f64) -> Call {
        Call {
            keys: self.keys(key, 0),
            args: vec![
                number(self.emission_interval()),
                number(self.emission_interval() * self.capacity()),
                number(self.capacity()),
                format_f64(cost),
            ],
        }
    }

    fn keys(&self, key: &str, _now: u64) -> Vec<String> {
        vec![format!("{key}:gcra")]
    }

    fn decode(&self, fields: &[Value]) -> Result<Option<GcraState>> {
        let tat = integer(fields, 0)?;
        Ok((tat >= 0).then_some(GcraState { tat: tat as u64 }))
    }
}
