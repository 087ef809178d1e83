//! Where each algorithm keeps its state in Redis, the arguments its script takes, and the decoding
//! of the script's reply into the algorithm's own state.
//!
//! Key names follow `@upstash/ratelimit` 2.x for the algorithms it has: `<key>:<window>` for the window
//! counters, `<key>` for the token bucket hash. GCRA, which the peer lacks, uses `<key>:gcra`.

use super::command::Strings;
use super::reply::Reply;
use super::rest::malformed;
use super::script::Script;
use crate::algorithm::{
    Algorithm, FixedWindowState, GcraState, Policy, SlidingWindowState, State, TokenBucketState,
};
use crate::error::Result;

/// The prelude every script starts with, as sent (see build.rs).
pub(super) const PRELUDE: &str = include_str!(concat!(env!("OUT_DIR"), "/scripts/prelude.lua"));

/// The prelude and the script `src/redis/scripts/$file` as sent, with its SHA-1 as build.rs computes it;
/// `fast` first, for a script with a `fast/$file` (build.rs).
macro_rules! script {
    ($name:literal, $file:literal) => {
        script!($name, $file, [])
    };
    ($name:literal, $file:literal, fast) => {
        script!(
            $name,
            $file,
            [include_str!(concat!(env!("OUT_DIR"), "/scripts/fast/", $file))]
        )
    };
    ($name:literal, $file:literal, [$($fast:expr)?]) => {
        Script::from_parts(
            $name,
            &[
                $($fast,)?
                PRELUDE,
                include_str!(concat!(env!("OUT_DIR"), "/scripts/", $file)),
            ],
            include_str!(concat!(env!("OUT_DIR"), "/", $file, ".sha1")),
        )
    };
}

static FIXED_WINDOW: Script = script!("fixed window", "fixed_window.lua", fast);
static SLIDING_WINDOW: Script = script!("sliding window", "sliding_window.lua", fast);
static TOKEN_BUCKET: Script = script!("token bucket", "token_bucket.lua");
static GCRA: Script = script!("gcra", "gcra.lua");
/// The multi-region windows' decision (see [`crate::multi_region`]).
#[cfg(feature = "multi-region")]
pub(crate) static MULTI_WINDOW: Script = script!("multi window", "multi_window.lua");
/// The multi-region token bucket and GCRA decision.
#[cfg(feature = "multi-region")]
pub(crate) static MULTI_BUCKET: Script = script!("multi bucket", "multi_bucket.lua");
/// The multi-region merge of request ids into one region's hash.
#[cfg(feature = "multi-region")]
pub(crate) static MULTI_MERGE: Script = script!("multi merge", "multi_merge.lua");

/// The script of each algorithm of [`Ratelimit`](crate::ratelimit::Ratelimit).
pub static SCRIPTS: [&Script; 4] = [&FIXED_WINDOW, &SLIDING_WINDOW, &TOKEN_BUCKET, &GCRA];

/// The scripts of [`MultiRegionRatelimit`](crate::multi_region::MultiRegionRatelimit).
#[cfg(feature = "multi-region")]
pub static MULTI_REGION_SCRIPTS: [&Script; 3] = [&MULTI_WINDOW, &MULTI_BUCKET, &MULTI_MERGE];

/// What an algorithm's script needs sent, besides the time (`ARGV[1]`) and the cost (`ARGV[5]`).
pub(crate) struct Call {
    /// The script deciding a request.
    pub script: &'static Script,
    /// Its keys.
    pub keys: Strings,
    /// `ARGV[2..=4]`: for window algorithms the first window sent, the window length (ms) and the
    /// limit; for the token bucket its capacity, interval (ms) and refill rate; for GCRA the emission
    /// interval and the tolerance (µs), and the burst.
    pub args: [u64; 3],
}

/// The call deciding a request under `rule` on `key` at the caller's time `now`.
///
/// With `wide`, window algorithms send the windows next to the caller's too, so that a Redis clock up
/// to a window apart still finds its keys; the wide keys are also every key that may hold state for
/// `key` around `now`, which a reset deletes.
pub(crate) fn call(rule: &Algorithm, key: &str, now: u64, wide: bool) -> Call {
    // Room for the most keys a call sends (a sliding window's, wide: 4), each `key` and a window.
    let mut keys = Strings::with_capacity(4 * (key.len() + 24));
    let (script, args) = call_into(rule, key, now, wide, &mut keys);
    Call { script, keys, args }
}

/// [`call`], its keys added to `keys`: the script and its `ARGV[2..=4]`.
pub(crate) fn call_into(
    rule: &Algorithm,
    key: &str,
    now: u64,
    wide: bool,
    keys: &mut Strings,
) -> (&'static Script, [u64; 3]) {
    // A window algorithm reads the current window and `history` windows before it (0 for a fixed
    // window, 1 for a sliding one); wide, one more window on each side.
    let mut windows = |script, window: u64, window_ms, history: u64| {
        let margin = u64::from(wide);
        let from = window.saturating_sub(history + margin);
        keys.push_numbered(key, from..=window + margin);
        (script, [from, window_ms, rule.capacity()])
    };
    match rule {
        Algorithm::FixedWindow(rule) => {
            windows(&FIXED_WINDOW, rule.window_index(now), rule.window_ms(), 0)
        }
        Algorithm::SlidingWindow(rule) => {
            windows(&SLIDING_WINDOW, rule.window_index(now), rule.window_ms(), 1)
        }
        Algorithm::TokenBucket(rule) => {
            keys.push(key);
            (
                &TOKEN_BUCKET,
                [rule.capacity(), rule.interval_ms(), rule.refill_rate()],
            )
        }
        Algorithm::Gcra(rule) => {
            keys.push_suffixed(key, ":gcra");
            (
                &GCRA,
                [rule.emission_interval(), rule.tolerance(), rule.capacity()],
            )
        }
    }
}

/// The stored state, from the reply fields after `allowed`, `now` and the capacity applied.
pub(crate) fn decode(rule: &Algorithm, fields: &[Reply]) -> Result<Option<State>> {
    Ok(Some(match rule {
        Algorithm::FixedWindow(_) => FixedWindowState {
            window: count(fields, 0)?,
            // Negative: credit the peer's refunds left, honoured.
            used: integer(fields, 1)?,
        }
        .into(),
        Algorithm::SlidingWindow(_) => SlidingWindowState {
            window: count(fields, 0)?,
            current: count(fields, 1)?,
            previous: count(fields, 2)?,
        }
        .into(),
        Algorithm::TokenBucket(_) => {
            let Ok(refilled_at) = u64::try_from(integer(fields, 0)?) else {
                return Ok(None);
            };
            let tokens = fields
                .get(1)
                .and_then(Reply::as_str)
                .and_then(number_in)
                .filter(|tokens| tokens.is_finite())
                .ok_or_else(|| field_error(fields, 1, "a token count"))?;
            TokenBucketState {
                refilled_at,
                tokens,
            }
            .into()
        }
        Algorithm::Gcra(_) => {
            let Ok(tat) = u64::try_from(integer(fields, 0)?) else {
                return Ok(None);
            };
            GcraState { tat }.into()
        }
    }))
}

/// The number a script wrote as text (Lua's `tostring`, as JSON writes numbers), read by the JSON
/// parser the replies go through (the same instance of it, reading bytes): `None` for any other text.
pub(crate) fn number_in(text: &str) -> Option<f64> {
    match serde_json::from_slice::<Reply>(text.as_bytes()).ok()? {
        Reply::Integer(integer) => Some(integer as f64),
        Reply::Unsigned(integer) => Some(integer as f64),
        Reply::Float(float) => Some(float),
        _ => None,
    }
}

/// A reply field as an integer (Redis replies integers; a script may also return numeric strings).
fn integer(fields: &[Reply], index: usize) -> Result<i64> {
    match fields.get(index) {
        Some(Reply::Integer(integer)) => Some(*integer),
        Some(Reply::Text(text)) => text.parse().ok(),
        _ => None,
    }
    .ok_or_else(|| field_error(fields, index, "an integer"))
}

/// A counter stored by either library; a negative count (left by the peer's refunds) is empty.
fn count(fields: &[Reply], index: usize) -> Result<u64> {
    Ok(integer(fields, index)?.max(0) as u64)
}

/// A malformed-reply error: reply field `index` is not `expected`.
fn field_error(fields: &[Reply], index: usize, expected: &str) -> crate::error::Error {
    let found = fields
        .get(index)
        .map_or("nothing".to_owned(), Reply::to_string);
    malformed(&format!("reply field {index} is not {expected}: {found}"))
}
