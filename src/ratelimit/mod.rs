//! `Ratelimit`: a [`Backend`], an [`Algorithm`] and a key prefix, plus what `@upstash/ratelimit` adds on
//! top — an ephemeral cache of blocked identifiers (bounded here) and a fail mode for backend errors.
//!
//! Keys are `<prefix>:<identifier>`, the layout of `@upstash/ratelimit`, so both can share one limit.

use crate::algorithm::{Algorithm, MAX_COUNT};
use crate::backend::Backend;
use crate::clock::{Clock, SystemClock};
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// The prefix `@upstash/ratelimit` uses, and so the default.
pub const DEFAULT_PREFIX: &str = "@upstash/ratelimit";

/// How many blocked identifiers the ephemeral cache keeps unless told otherwise.
pub const DEFAULT_CACHE_SIZE: usize = 10_000;

/// What to answer when the backend fails (unreachable, timed out, returned an error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailMode {
    /// Admit the request (`success: true`), as `@upstash/ratelimit` does.
    #[default]
    Open,
    /// Deny the request (`success: false`).
    Closed,
}

/// Why an answer did not come from the backend's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The backend did not reply in time; the fail mode decided.
    Timeout,
    /// The identifier was blocked by the ephemeral cache, without asking the backend.
    CacheBlock,
    /// The backend failed otherwise; the fail mode decided.
    Error,
}

impl Reason {
    /// The name `@upstash/ratelimit` uses: `"timeout"`, `"cacheBlock"` or `"error"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Timeout => "timeout",
            Self::CacheBlock => "cacheBlock",
            Self::Error => "error",
        }
    }
}

/// The answer to [`Ratelimit::limit`].
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// Whether the request may proceed.
    pub success: bool,
    /// The most the limit admits at once.
    pub limit: u64,
    /// What is left after this request.
    pub remaining: f64,
    /// When the limit is next restored, in milliseconds since the Unix epoch.
    pub reset: u64,
    /// Set when the answer did not come from the backend's decision.
    pub reason: Option<Reason>,
}

/// The answer to [`Ratelimit::get_remaining`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Remaining {
    /// What could be taken now.
    pub remaining: f64,
    /// When the limit is next restored, in milliseconds since the Unix epoch.
    pub reset: u64,
    /// The most the limit admits at once.
    pub limit: u64,
}

/// A rate limit applied to identifiers: a backend, an algorithm, a prefix, an ephemeral cache and a
/// fail mode.
pub struct Ratelimit {
    backend: Box<dyn Backend>,
    algorithm: Algorithm,
    prefix: String,
    cache: Option<BlockCache>,
    fail_mode: FailMode,
    clock: Arc<dyn Clock>,
}

impl Ratelimit {
    /// A limit applying `algorithm` in `backend`, with the default prefix, an ephemeral cache of
    /// [`DEFAULT_CACHE_SIZE`] identifiers, failing open, on the system clock.
    pub fn new(backend: impl Backend + 'static, algorithm: impl Into<Algorithm>) -> Self {
        Self {
            backend: Box::new(backend),
            algorithm: algorithm.into(),
            prefix: DEFAULT_PREFIX.to_owned(),
            cache: Some(BlockCache::new(DEFAULT_CACHE_SIZE)),
            fail_mode: FailMode::Open,
            clock: Arc::new(SystemClock),
        }
    }

    /// The same limit with keys `<prefix>:<identifier>`.
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The same limit with an ephemeral cache of up to `max_entries` blocked identifiers (at least 1),
    /// or none for `None`.
    pub fn with_ephemeral_cache(mut self, max_entries: Option<usize>) -> Self {
        self.cache = max_entries.map(BlockCache::new);
        self
    }

    /// The same limit answering backend failures as `fail_mode` says.
    pub fn with_fail_mode(mut self, fail_mode: FailMode) -> Self {
        self.fail_mode = fail_mode;
        self
    }

    /// The same limit reading the time for its ephemeral cache from `clock`.
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// The algorithm applied.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The fail mode.
    pub fn fail_mode(&self) -> FailMode {
        self.fail_mode
    }

    /// How many identifiers the ephemeral cache holds now.
    pub fn cached_blocks(&self) -> usize {
        self.cache.as_ref().map_or(0, BlockCache::len)
    }

    /// Takes `rate` from `identifier`'s limit (1 is one request; a negative rate refunds, zero peeks).
    ///
    /// An empty identifier, or a rate that is not finite, above 2^53 - 1 in size or (for the window
    /// algorithms) fractional, is an error. A backend failure is not: it is answered as the fail mode
    /// says, with [`Reason::Timeout`] or [`Reason::Error`].
    pub async fn limit(&self, identifier: &str, rate: f64) -> Result<Response> {
        let key = self.key(identifier)?;
        let now_micros = self.clock.now_micros();
        self.check_rate(rate, now_micros)?;
        let now_ms = now_micros / 1_000;

        if let Some(cache) = &self.cache {
            if rate > 0.0 {
                if let Some(block) = cache.blocked(&key, rate, now_ms) {
                    return Ok(Response {
                        success: false,
                        limit: block.limit,
                        remaining: 0.0,
                        reset: block.until_ms,
                        reason: Some(Reason::CacheBlock),
                    });
                }
            } else if rate < 0.0 {
                cache.remove(&key);
            }
        }

        match self.backend.acquire(&key, rate, self.algorithm).await {
            Ok(decision) => {
                if let (Some(cache), false, Some(retry_after)) =
                    (&self.cache, decision.allowed, decision.retry_after)
                {
                    let until_ms = now_ms
                        .saturating_add(retry_after.as_millis() as u64)
                        .min(decision.reset.max(now_ms));
                    if until_ms > now_ms && rate > 0.0 {
                        cache.insert(key, rate, until_ms, decision.limit, now_ms);
                    }
                }
                Ok(Response {
                    success: decision.allowed,
                    limit: decision.limit,
                    remaining: decision.remaining,
                    reset: decision.reset,
                    reason: None,
                })
            }
            Err(error) if error.is_invalid_input() => Err(error),
            Err(error) => Ok(Response {
                success: self.fail_mode == FailMode::Open,
                limit: self.algorithm.capacity(),
                remaining: 0.0,
                reset: now_ms,
                reason: Some(match error {
                    Error::Timeout { .. } => Reason::Timeout,
                    _ => Reason::Error,
                }),
            }),
        }
    }

    /// What `identifier` could take now, and when its limit is next restored; backend failures are
    /// errors here.
    pub async fn get_remaining(&self, identifier: &str) -> Result<Remaining> {
        let key = self.key(identifier)?;
        let decision = self.backend.acquire(&key, 0.0, self.algorithm).await?;
        Ok(Remaining {
            remaining: decision.remaining,
            reset: decision.reset,
            limit: decision.limit,
        })
    }

    /// Forgets everything used by `identifier`, in the backend and in the ephemeral cache.
    pub async fn reset_used_tokens(&self, identifier: &str) -> Result<()> {
        let key = self.key(identifier)?;
        if let Some(cache) = &self.cache {
            cache.remove(&key);
        }
        self.backend.reset(&key, self.algorithm).await
    }

    fn key(&self, identifier: &str) -> Result<String> {
        if identifier.is_empty() {
            return Err(Error::InvalidParameter {
                algorithm: "ratelimit",
                name: "identifier",
                value: "\"\"".to_owned(),
                reason: "must not be empty",
            });
        }
        Ok(format!("{}:{identifier}", self.prefix))
    }

    /// Refuses a rate the algorithm would refuse, before anything reaches the backend.
    fn check_rate(&self, rate: f64, now_micros: u64) -> Result<()> {
        if rate.is_finite() && rate.abs() > MAX_COUNT as f64 {
            return Err(Error::InvalidCost {
                algorithm: self.algorithm.name(),
                cost: rate,
                reason: "must be at most 2^53 - 1 in size",
            });
        }
        self.algorithm.acquire(None, now_micros, rate).map(drop)
    }
}

/// Identifiers known to be blocked until some time, bounded in size.
struct BlockCache {
    entries: Mutex<HashMap<String, Block>>,
    max_entries: usize,
}

#[derive(Debug, Clone, Copy)]
struct Block {
    /// Milliseconds since the epoch until which the identifier is blocked.
    until_ms: u64,
    /// The smallest rate known to be denied until then.
    rate: f64,
    limit: u64,
}

impl BlockCache {
    fn new(max_entries: usize) -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
            max_entries: max_entries.max(1),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Block>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn len(&self) -> usize {
        self.lock().len()
    }

    /// The block on `key` if a request of `rate` at `now_ms` is known to be denied.
    fn blocked(&self, key: &str, rate: f64, now_ms: u64) -> Option<Block> {
        let mut entries = self.lock();
        let block = *entries.get(key)?;
        if block.until_ms <= now_ms {
            entries.remove(key);
            return None;
        }
        (rate >= block.rate).then_some(block)
    }

    fn insert(&self, key: String, rate: f64, until_ms: u64, limit: u64, now_ms: u64) {
        let mut entries = self.lock();
        if entries.len() >= self.max_entries && !entries.contains_key(&key) {
            entries.retain(|_, block| block.until_ms > now_ms);
            if entries.len() >= self.max_entries {
                // Still full of live blocks: drop the one that would expire first.
                let soonest = entries
                    .iter()
                    .min_by_key(|(_, block)| block.until_ms)
                    .map(|(key, _)| key.clone());
                if let Some(soonest) = soonest {
                    entries.remove(&soonest);
                }
            }
        }
        let rate = match entries.get(&key) {
            Some(old) if old.until_ms > now_ms => old.rate.min(rate),
            _ => rate,
        };
        entries.insert(
            key,
            Block {
                until_ms,
                rate,
                limit,
            },
        );
    }

    fn remove(&self, key: &str) {
        self.lock().remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::{FixedWindow, Gcra, SlidingWindow, TokenBucket};
    use crate::backend::MemoryBackend;
    use crate::clock::ManualClock;
    use crate::decision::Decision;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    const START_MS: u64 = 1_700_000_040_000; // the start of a minute

    fn memory(clock: &ManualClock) -> MemoryBackend {
        MemoryBackend::new().with_clock(clock.clone())
    }

    fn fixed(limit: u64, window_s: u64) -> FixedWindow {
        FixedWindow::new(limit, Duration::from_secs(window_s)).unwrap()
    }

    /// A backend that counts calls and forwards them, or fails with `error` when set.
    struct Probe {
        inner: MemoryBackend,
        calls: Arc<AtomicUsize>,
        error: Option<Error>,
    }

    #[cfg_attr(target_arch = "wasm32", async_trait::async_trait(?Send))]
    #[cfg_attr(not(target_arch = "wasm32"), async_trait::async_trait)]
    impl Backend for Probe {
        async fn acquire(&self, key: &str, cost: f64, params: Algorithm) -> Result<Decision> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            match &self.error {
                Some(error) => Err(error.clone()),
                None => self.inner.acquire(key, cost, params).await,
            }
        }
        async fn available(&self, key: &str, params: Algorithm) -> Result<f64> {
            self.inner.available(key, params).await
        }
        async fn time_until_available(
            &self,
            key: &str,
            cost: f64,
            params: Algorithm,
        ) -> Result<Duration> {
            self.inner.time_until_available(key, cost, params).await
        }
        async fn reset(&self, key: &str, params: Algorithm) -> Result<()> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            self.inner.reset(key, params).await
        }
        fn backend_name(&self) -> &str {
            "probe"
        }
    }

    fn probe(clock: &ManualClock, error: Option<Error>) -> (Probe, Arc<AtomicUsize>) {
        let calls = Arc::new(AtomicUsize::new(0));
        let probe = Probe {
            inner: memory(clock),
            calls: Arc::clone(&calls),
            error,
        };
        (probe, calls)
    }

    #[test]
    fn every_algorithm_admits_up_to_its_limit_then_denies() {
        let algorithms: [Algorithm; 4] = [
            fixed(3, 60).into(),
            SlidingWindow::new(3, Duration::from_secs(60))
                .unwrap()
                .into(),
            TokenBucket::new(1, Duration::from_secs(60), 3)
                .unwrap()
                .into(),
            Gcra::new(3, Duration::from_secs(60), 3).unwrap().into(),
        ];
        for algorithm in algorithms {
            let clock = ManualClock::from_millis(START_MS);
            let limiter = Ratelimit::new(memory(&clock), algorithm).with_clock(clock.clone());
            pollster::block_on(async {
                for left in (0..3).rev() {
                    let response = limiter.limit("user", 1.0).await.unwrap();
                    assert!(response.success, "{}", algorithm.name());
                    assert_eq!(response.remaining, left as f64, "{}", algorithm.name());
                    assert_eq!(response.limit, 3);
                    assert_eq!(response.reason, None);
                }
                let denied = limiter.limit("user", 1.0).await.unwrap();
                assert!(!denied.success, "{}", algorithm.name());
                assert!(denied.reset > START_MS, "{}", algorithm.name());
                // Another identifier has its own limit.
                assert!(limiter.limit("other", 1.0).await.unwrap().success);
            });
        }
    }

    #[test]
    fn keys_carry_the_prefix() {
        let clock = ManualClock::from_millis(START_MS);
        let store = Arc::new(memory(&clock));
        let limiter = Ratelimit::new(Arc::clone(&store), fixed(5, 60))
            .with_prefix("app")
            .with_clock(clock);
        pollster::block_on(async {
            limiter.limit("u1", 2.0).await.unwrap();
            let params = fixed(5, 60).into();
            assert_eq!(store.available("app:u1", params).await.unwrap(), 3.0);
            assert_eq!(
                store
                    .available(&format!("{DEFAULT_PREFIX}:u1"), params)
                    .await
                    .unwrap(),
                5.0
            );
        });
    }

    #[test]
    fn refunds_give_back_and_get_remaining_peeks() {
        let clock = ManualClock::from_millis(START_MS);
        let limiter = Ratelimit::new(memory(&clock), fixed(5, 60)).with_clock(clock.clone());
        pollster::block_on(async {
            assert_eq!(limiter.limit("u", 4.0).await.unwrap().remaining, 1.0);
            let refunded = limiter.limit("u", -2.0).await.unwrap();
            assert!(refunded.success);
            assert_eq!(refunded.remaining, 3.0);
            let remaining = limiter.get_remaining("u").await.unwrap();
            assert_eq!(remaining.remaining, 3.0);
            assert_eq!(remaining.limit, 5);
            assert_eq!(remaining.reset, START_MS + 60_000);
            // Peeking consumed nothing.
            assert_eq!(limiter.get_remaining("u").await.unwrap().remaining, 3.0);
            limiter.reset_used_tokens("u").await.unwrap();
            assert_eq!(limiter.get_remaining("u").await.unwrap().remaining, 5.0);
        });
    }

    #[test]
    fn the_ephemeral_cache_answers_blocked_identifiers_without_the_backend() {
        let clock = ManualClock::from_millis(START_MS);
        let (backend, calls) = probe(&clock, None);
        let limiter = Ratelimit::new(backend, fixed(2, 60)).with_clock(clock.clone());
        pollster::block_on(async {
            assert!(limiter.limit("u", 2.0).await.unwrap().success);
            let denied = limiter.limit("u", 1.0).await.unwrap();
            assert!(!denied.success);
            assert_eq!(denied.reason, None);
            assert_eq!(calls.load(Ordering::SeqCst), 2);

            let blocked = limiter.limit("u", 1.0).await.unwrap();
            assert!(!blocked.success);
            assert_eq!(blocked.reason, Some(Reason::CacheBlock));
            assert_eq!(blocked.reset, START_MS + 60_000);
            assert_eq!(blocked.limit, 2);
            assert_eq!(calls.load(Ordering::SeqCst), 2, "answered locally");

            // Once the window has passed, the backend is asked again.
            clock.advance(Duration::from_secs(60));
            assert!(limiter.limit("u", 1.0).await.unwrap().success);
            assert_eq!(calls.load(Ordering::SeqCst), 3);
            assert_eq!(limiter.cached_blocks(), 0);
        });
    }

    #[test]
    fn a_smaller_rate_or_a_refund_is_not_blocked_by_a_larger_denial() {
        let clock = ManualClock::from_millis(START_MS);
        let (backend, calls) = probe(&clock, None);
        // A token bucket: a denied request consumes nothing (a fixed window counts it).
        let bucket = TokenBucket::new(1, Duration::from_secs(60), 5).unwrap();
        let limiter = Ratelimit::new(backend, bucket).with_clock(clock.clone());
        pollster::block_on(async {
            assert!(limiter.limit("u", 3.0).await.unwrap().success);
            assert!(!limiter.limit("u", 3.0).await.unwrap().success);
            assert_eq!(
                limiter.limit("u", 4.0).await.unwrap().reason,
                Some(Reason::CacheBlock)
            );
            let smaller = limiter.limit("u", 2.0).await.unwrap();
            assert!(smaller.success, "{smaller:?}");
            assert_eq!(calls.load(Ordering::SeqCst), 3);
            assert!(limiter.limit("u", -5.0).await.unwrap().success);
            assert_eq!(limiter.cached_blocks(), 0, "a refund lifts the block");
            assert!(limiter.limit("u", 3.0).await.unwrap().success);
        });
    }

    #[test]
    fn the_ephemeral_cache_is_bounded_and_can_be_disabled() {
        let clock = ManualClock::from_millis(START_MS);
        let limiter = Ratelimit::new(memory(&clock), fixed(1, 60))
            .with_ephemeral_cache(Some(3))
            .with_clock(clock.clone());
        pollster::block_on(async {
            for i in 0..10 {
                let id = format!("u{i}");
                limiter.limit(&id, 1.0).await.unwrap();
                assert!(!limiter.limit(&id, 1.0).await.unwrap().success);
                assert!(limiter.cached_blocks() <= 3);
            }
            assert_eq!(limiter.cached_blocks(), 3);
            // Expired entries are pruned when a new one needs room.
            clock.advance(Duration::from_secs(60));
            limiter.limit("late", 1.0).await.unwrap();
            limiter.limit("late", 1.0).await.unwrap();
            assert_eq!(limiter.cached_blocks(), 1);
        });

        let (backend, calls) = probe(&clock, None);
        let uncached = Ratelimit::new(backend, fixed(1, 60))
            .with_ephemeral_cache(None)
            .with_clock(clock.clone());
        pollster::block_on(async {
            for _ in 0..3 {
                uncached.limit("u", 1.0).await.unwrap();
            }
        });
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert_eq!(uncached.cached_blocks(), 0);
    }

    #[test]
    fn a_cost_above_the_capacity_is_denied_but_not_cached() {
        let clock = ManualClock::from_millis(START_MS);
        let limiter = Ratelimit::new(memory(&clock), fixed(2, 60)).with_clock(clock.clone());
        pollster::block_on(async {
            let response = limiter.limit("u", 3.0).await.unwrap();
            assert!(!response.success);
            assert_eq!(limiter.cached_blocks(), 0);
            assert!(limiter.limit("u", 1.0).await.unwrap().success);
        });
    }

    #[test]
    fn backend_failures_follow_the_fail_mode() {
        let clock = ManualClock::from_millis(START_MS);
        let timeout = Error::Timeout {
            after: Duration::from_millis(5),
        };
        let network = Error::Network {
            message: "refused".into(),
        };
        for (mode, error, reason) in [
            (FailMode::Open, timeout.clone(), Reason::Timeout),
            (FailMode::Open, network.clone(), Reason::Error),
            (FailMode::Closed, timeout, Reason::Timeout),
            (FailMode::Closed, network.clone(), Reason::Error),
        ] {
            let (backend, _) = probe(&clock, Some(error));
            let limiter = Ratelimit::new(backend, fixed(2, 60))
                .with_fail_mode(mode)
                .with_clock(clock.clone());
            let response = pollster::block_on(limiter.limit("u", 1.0)).unwrap();
            assert_eq!(response.success, mode == FailMode::Open);
            assert_eq!(response.reason, Some(reason));
            assert_eq!(response.limit, 2);
            assert_eq!(limiter.cached_blocks(), 0);
        }
        let (backend, _) = probe(&clock, Some(network));
        let limiter = Ratelimit::new(backend, fixed(2, 60));
        assert!(pollster::block_on(limiter.get_remaining("u")).is_err());
    }

    #[test]
    fn bad_input_is_an_error_not_the_fail_mode() {
        let clock = ManualClock::from_millis(START_MS);
        let (backend, calls) = probe(&clock, None);
        let limiter = Ratelimit::new(backend, fixed(2, 60))
            .with_fail_mode(FailMode::Open)
            .with_clock(clock);
        pollster::block_on(async {
            let empty = limiter.limit("", 1.0).await.unwrap_err();
            assert!(empty.to_string().contains("identifier"), "{empty}");
            for rate in [f64::NAN, f64::INFINITY, -f64::INFINITY, 1.5, 1e300, -1e300] {
                let error = limiter.limit("u", rate).await.unwrap_err();
                assert!(
                    matches!(error, Error::InvalidCost { .. }),
                    "{rate}: {error}"
                );
            }
            assert!(limiter.get_remaining("").await.is_err());
            assert!(limiter.reset_used_tokens("").await.is_err());
            assert_eq!(
                calls.load(Ordering::SeqCst),
                0,
                "nothing reached the backend"
            );
            assert!(limiter.limit("u", 1.0).await.unwrap().success);
        });
    }

    #[test]
    fn fractional_rates_are_fine_for_the_bucket_algorithms() {
        let clock = ManualClock::from_millis(START_MS);
        let bucket = TokenBucket::new(1, Duration::from_secs(1), 2).unwrap();
        let limiter = Ratelimit::new(memory(&clock), bucket).with_clock(clock);
        let response = pollster::block_on(limiter.limit("u", 0.5)).unwrap();
        assert!(response.success);
        assert_eq!(response.remaining, 1.5);
    }
}
