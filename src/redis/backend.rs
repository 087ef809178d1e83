//! `RedisBackend`: every algorithm as one atomic Lua script, one HTTP request per decision.

use super::json::Value;
use super::layout::Layout;
use super::rest::{malformed, RestClient};
use crate::algorithm::{Algorithm, Policy};
use crate::backend::Backend;
use crate::clock::{Clock, SystemClock};
use crate::decision::Decision;
use crate::error::{Error, Result};
use crate::transport::Transport;
use std::sync::Arc;
use std::time::Duration;

/// A store in Redis, reached over the Upstash REST protocol through a [`Transport`].
///
/// Each decision is one script run atomically by Redis (EVALSHA, or EVAL the first time), so any number
/// of processes share one limit. The script decides and writes; it also returns the state it found,
/// on which the pure algorithm computes the answer's details (remaining, reset, retry-after) and checks
/// that it agrees with the script. Keys and values are those of `@upstash/ratelimit` 2.x.
pub struct RedisBackend<T> {
    client: RestClient<T>,
    clock: Arc<dyn Clock>,
    redis_time: bool,
}

/// Runs `$body` with `$rule` bound to the concrete algorithm inside `$algorithm`.
macro_rules! with_rule {
    ($algorithm:expr, |$rule:ident| $body:expr) => {
        match $algorithm {
            Algorithm::FixedWindow($rule) => $body,
            Algorithm::SlidingWindow($rule) => $body,
            Algorithm::TokenBucket($rule) => $body,
            Algorithm::Gcra($rule) => $body,
        }
    };
}

/// What a script found and decided, and the rule it applied (the dynamic limit may change it).
struct Outcome<L: Layout> {
    allowed: bool,
    now: u64,
    stored: Option<L::State>,
    rule: L,
}

impl<T: Transport> RedisBackend<T> {
    /// A store sending through `transport`, on the system clock, coalescing concurrent decisions.
    pub fn new(transport: T) -> Self {
        Self {
            client: RestClient::new(transport),
            clock: Arc::new(SystemClock),
            redis_time: false,
        }
    }

    /// The same store reading the caller's time from `clock`.
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// The same store with the scripts reading Redis's clock (`TIME`) instead of the caller's, for fleets
    /// whose clocks disagree. Window algorithms then tolerate a Redis clock up to one window away.
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

    /// Runs `rule`'s script for `cost` on `key`, with the dynamic limit stored under `limit_key` if
    /// given.
    async fn run<L: Layout>(
        &self,
        rule: &L,
        key: &str,
        cost: f64,
        limit_key: Option<&str>,
    ) -> Result<Outcome<L>> {
        let now = self.clock.now_micros();
        // Refuse a bad cost before anything reaches the network.
        rule.acquire(None, now, cost)?;
        let mut call = rule.call(key, now, self.redis_time, cost);
        let time = if self.redis_time {
            String::new()
        } else {
            now.to_string()
        };
        let mut args: Vec<String> = std::iter::once(time).chain(call.args).collect();
        if let Some(limit_key) = limit_key {
            call.keys.push(limit_key.to_owned());
            args.push("1".to_owned());
        }
        let reply = rule.script().run(&self.client, &call.keys, &args).await?;
        let Value::Array(fields) = reply else {
            return Err(malformed(&format!(
                "the {} script returned {reply}",
                rule.script().name()
            )));
        };
        let flag = |index: usize| fields.get(index).and_then(Value::as_u64);
        let (Some(allowed @ 0..=1), Some(now), Some(capacity)) = (flag(0), flag(1), flag(2)) else {
            return Err(malformed(&format!(
                "the {} script returned {fields:?}",
                rule.script().name()
            )));
        };
        let rule = if capacity == rule.capacity() {
            rule.clone()
        } else {
            rule.with_capacity(capacity).map_err(|error| Error::Redis {
                message: format!("the dynamic limit {capacity} does not fit: {error}"),
            })?
        };
        Ok(Outcome {
            allowed: allowed == 1,
            now,
            stored: rule.decode(&fields[3..])?,
            rule,
        })
    }

    async fn decide<L: Layout>(
        &self,
        rule: &L,
        key: &str,
        cost: f64,
        limit_key: Option<&str>,
    ) -> Result<Decision> {
        let outcome = self.run(rule, key, cost, limit_key).await?;
        let decision = outcome
            .rule
            .acquire(outcome.stored, outcome.now, cost)?
            .decision;
        if decision.allowed != outcome.allowed {
            return Err(malformed(&format!(
                "the {} script {} a request the algorithm {}",
                rule.script().name(),
                if outcome.allowed {
                    "admitted"
                } else {
                    "denied"
                },
                if decision.allowed { "admits" } else { "denies" },
            )));
        }
        Ok(decision)
    }
}

#[cfg_attr(target_arch = "wasm32", async_trait::async_trait(?Send))]
#[cfg_attr(not(target_arch = "wasm32"), async_trait::async_trait)]
impl<T: Transport> Backend for RedisBackend<T> {
    async fn acquire(&self, key: &str, cost: f64, params: Algorithm) -> Result<Decision> {
        with_rule!(params, |rule| self.decide(&rule, key, cost, None).await)
    }

    async fn available(&self, key: &str, params: Algorithm) -> Result<f64> {
        with_rule!(params, |rule| {
            let outcome = self.run(&rule, key, 0.0, None).await?;
            Ok(rule.available(outcome.stored, outcome.now))
        })
    }

    async fn time_until_available(
        &self,
        key: &str,
        cost: f64,
        params: Algorithm,
    ) -> Result<Duration> {
        with_rule!(params, |rule| {
            let outcome = self.run(&rule, key, 0.0, None).await?;
            rule.time_until_available(outcome.stored, outcome.now, cost)
        })
    }

    async fn reset(&self, key: &str, params: Algorithm) -> Result<()> {
        let keys = with_rule!(params, |rule| rule.keys(key, self.clock.now_micros()));
        let command = std::iter::once("DEL".to_owned()).chain(keys).collect();
        self.client.command(command).await.map(drop)
    }

    fn backend_name(&self) -> &str {
        "redis"
    }

    /// One script reads the dynamic limit and decides, atomically.
    async fn acquire_with_dynamic_limit(
        &self,
        key: &str,
        cost: f64,
        params: Algorithm,
        limit_key: &str,
    ) -> Result<Decision> {
        with_rule!(params, |rule| self
            .decide(&rule, key, cost, Some(limit_key))
            .await)
    }

    async fn dynamic_limit(&self, limit_key: &str) -> Result<Option<u64>> {
        let reply = self
            .client
            .command(vec!["GET".to_owned(), limit_key.to_owned()])
            .await?;
        match reply {
            Value::Null => Ok(None),
            Value::String(text) => match text.parse::<u64>() {
                Ok(limit) if limit >= 1 => Ok(Some(limit)),
                _ => Err(malformed(&format!(
                    "the dynamic limit in {limit_key} is not a whole number from 1: {text:?}"
                ))),
            },
            other => Err(malformed(&format!("GET {limit_key} returned {other}"))),
        }
    }

    async fn set_dynamic_limit(&self, limit_key: &str, limit: Option<u64>) -> Result<()> {
        let command = match limit {
            Some(limit) => vec!["SET".to_owned(), limit_key.to_owned(), limit.to_string()],
            None => vec!["DEL".to_owned(), limit_key.to_owned()],
        };
        self.client.command(command).await.map(drop)
    }
}
