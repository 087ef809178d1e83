//! `RedisBackend`: every algorithm as one atomic Lua script, one HTTP request per decision.

use super::json::{encode_command, Value};
use super::layout::{self, Call};
use super::rest::{malformed, RestClient};
use crate::algorithm::{Algorithm, State};
use crate::backend::Backend;
use crate::clock::{Clock, SystemClock};
use crate::decision::Decision;
use crate::error::{quote, Error, Result};
use crate::number::{format_f64, parse_i64};
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

/// What a script found and decided, and the rule it applied (the dynamic limit may change it).
struct Outcome {
    allowed: bool,
    now: u64,
    stored: Option<State>,
    rule: Algorithm,
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
    async fn run(
        &self,
        rule: Algorithm,
        key: &str,
        cost: f64,
        limit_key: Option<&str>,
    ) -> Result<Outcome> {
        let now = self.clock.now_micros();
        // Refuse a bad cost before anything reaches the network.
        rule.acquire(None, now, cost)?;
        let Call {
            script,
            mut keys,
            args: [a, b, c],
        } = layout::call(&rule, key, now, self.redis_time);
        let time = if self.redis_time {
            String::new()
        } else {
            now.to_string()
        };
        let mut args = vec![
            time,
            a.to_string(),
            b.to_string(),
            c.to_string(),
            format_f64(cost),
        ];
        if let Some(limit_key) = limit_key {
            keys.push(limit_key.to_owned());
            args.push("1".to_owned());
        }
        let reply = script.run(&self.client, &keys, &args).await?;
        let fields = reply.as_array().unwrap_or_default();
        let flag = |index: usize| fields.get(index).and_then(Value::as_u64);
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
        Ok(Outcome {
            allowed: allowed == 1,
            now,
            stored: layout::decode(&rule, fields.get(3..).unwrap_or_default())?,
            rule,
        })
    }
}

impl Outcome {
    /// The decision on a request of `cost`, which the script ran: the algorithm's, checked to agree
    /// with the script's.
    fn decision(self, cost: f64) -> Result<Decision> {
        let decision = self
            .rule
            .acquire(self.stored.as_ref(), self.now, cost)?
            .decision;
        if decision.allowed != self.allowed {
            return Err(malformed(&format!(
                "the {} script {} a request the algorithm {}",
                self.rule.name(),
                if self.allowed { "admitted" } else { "denied" },
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
        self.run(params, key, cost, None).await?.decision(cost)
    }

    async fn available(&self, key: &str, params: Algorithm) -> Result<f64> {
        let outcome = self.run(params, key, 0.0, None).await?;
        Ok(params.available(outcome.stored.as_ref(), outcome.now))
    }

    async fn time_until_available(
        &self,
        key: &str,
        cost: f64,
        params: Algorithm,
    ) -> Result<Duration> {
        let outcome = self.run(params, key, 0.0, None).await?;
        params.time_until_available(outcome.stored.as_ref(), outcome.now, cost)
    }

    async fn reset(&self, key: &str, params: Algorithm) -> Result<()> {
        let keys = layout::call(&params, key, self.clock.now_micros(), true).keys;
        let mut command = vec!["DEL"];
        command.extend(keys.iter().map(String::as_str));
        self.client.send(encode_command(&command)).await.map(drop)
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
        self.run(params, key, cost, Some(limit_key))
            .await?
            .decision(cost)
    }

    async fn dynamic_limit(&self, limit_key: &str) -> Result<Option<u64>> {
        let reply = self
            .client
            .send(encode_command(&["GET", limit_key]))
            .await?;
        // The stored text read as numeric reply fields are (the same parser).
        match &reply {
            Value::Null => Ok(None),
            Value::String(text) => match parse_i64(text) {
                Some(limit @ 0..) => Ok(Some(limit.unsigned_abs())),
                _ => Err(malformed(&format!(
                    "the dynamic limit in {limit_key} is not a whole number from 0: {}",
                    quote(text)
                ))),
            },
            _ => Err(malformed(&format!("GET {limit_key} returned {reply}"))),
        }
    }

    async fn set_dynamic_limit(&self, limit_key: &str, limit: Option<u64>) -> Result<()> {
        let command = match limit {
            Some(limit) => encode_command(&["SET", limit_key, &limit.to_string()]),
            None => encode_command(&["DEL", limit_key]),
        };
        self.client.send(command).await.map(drop)
    }
}
