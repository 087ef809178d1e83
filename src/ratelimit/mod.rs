//! `Ratelimit`: a [`Backend`], an [`Algorithm`] and a key prefix, plus what `@upstash/ratelimit` adds on
//! top — an ephemeral cache of blocked identifiers (bounded here), local counts for `cachedFixedWindow`,
//! dynamic limits, `blockUntilReady`, a fail mode for backend errors, and the deny list and analytics
//! (`guarded.rs`).
//!
//! Keys are `<prefix>:<identifier>`, the layout of `@upstash/ratelimit`, so both can share one limit,
//! or `<prefix>:{<identifier>}` on a Redis Cluster ([`KeyLayout`]).

pub mod analytics;
mod beside;
pub(crate) mod deadline;
pub mod deny_list;
mod ephemeral_cache;
mod guarded;
mod headers;
mod local_counts;
mod settings;

pub use ephemeral_cache::{EphemeralCache, DEFAULT_CACHE_BYTES};
pub use guarded::{Answer, Request};
pub use headers::{rate_limit_headers, HeaderOptions, HeaderStyle};
pub(crate) use settings::Settings;

use crate::algorithm::{Algorithm, Cost, MAX_COUNT};
use crate::backend::Backend;
use crate::clock::{Clock, SystemClock};
use crate::decision::Decision;
use crate::error::{Error, Result};
use crate::identifier::SharedKeys;
use crate::key_layout::KeyLayout;
use crate::maybe_send::BoxFuture;
use deadline::Deadline;
use local_counts::LocalCounts;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// The prefix `@upstash/ratelimit` uses, and so the default.
pub const DEFAULT_PREFIX: &str = "@upstash/ratelimit";

/// How many blocked identifiers the ephemeral cache keeps unless told otherwise.
pub const DEFAULT_CACHE_SIZE: usize = 10_000;

/// Where the dynamic limit of a prefix is stored: `<prefix>:dynamic:global`, as `@upstash/ratelimit`.
const DYNAMIC_LIMIT_SUFFIX: &str = ":dynamic:global";

/// Work left after an answer (the backend write of `cachedFixedWindow`): drive it to completion, as
/// JavaScript's `waitUntil(pending)` does. It never fails; a failed write is forgotten locally.
/// `Send` natively, not on wasm.
pub type Pending = BoxFuture<'static, ()>;

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
    /// A value of the request is in the deny list ([`Ratelimit::with_protection`]).
    DenyList,
}

impl Reason {
    /// The name `@upstash/ratelimit` uses: `"timeout"`, `"cacheBlock"`, `"error"` or `"denyList"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Timeout => "timeout",
            Self::CacheBlock => "cacheBlock",
            Self::Error => "error",
            Self::DenyList => "denyList",
        }
    }
}

/// The answer to [`Ratelimit::limit`].
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// Whether the request may proceed.
    pub success: bool,
    /// The most the limit admits at once (the dynamic limit when one is set).
    pub limit: u64,
    /// What is left after this request.
    pub remaining: f64,
    /// When the limit is next restored, in milliseconds since the Unix epoch.
    pub reset: u64,
    /// How long until the same rate would be admitted if nothing else happens: zero when admitted,
    /// `None` when never, or when the fail mode answered.
    pub retry_after: Option<Duration>,
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
    /// The most the limit admits at once (the dynamic limit when one is set).
    pub limit: u64,
}

/// A rate limit applied to identifiers: a backend, an algorithm, a prefix, an ephemeral cache, a fail
/// mode, and optionally local counts (`cachedFixedWindow`) and dynamic limits.
pub struct Ratelimit {
    backend: Arc<dyn Backend>,
    algorithm: Algorithm,
    prefix: String,
    key_layout: KeyLayout,
    cache: Option<Arc<EphemeralCache>>,
    local_counts: Option<Arc<LocalCounts>>,
    /// Where the dynamic limit is stored (`<prefix>:dynamic:global`), when dynamic limits are enabled.
    limit_key: Option<String>,
    fail_mode: FailMode,
    clock: Arc<dyn Clock>,
    /// The deny list and analytics, off unless enabled.
    guards: guarded::Guards,
}

impl Ratelimit {
    /// A limit applying `algorithm` in `backend`, with the default prefix, an ephemeral cache of
    /// [`DEFAULT_CACHE_SIZE`] identifiers, failing open, on the system clock.
    pub fn new(backend: impl Backend + 'static, algorithm: impl Into<Algorithm>) -> Self {
        Self::from_settings(Arc::new(backend), algorithm.into(), Settings::default())
    }

    /// A limit set up as `settings` say, built in one step (a chain of builder methods makes a limit
    /// per call, and a default cache that a chosen one replaces), on the system clock.
    pub(crate) fn from_settings(
        backend: Arc<dyn Backend>,
        algorithm: Algorithm,
        settings: Settings,
    ) -> Self {
        let local_counts = match (algorithm, settings.local_counts) {
            (Algorithm::FixedWindow(rule), Some(max_entries)) => {
                Some(Arc::new(LocalCounts::new(rule, max_entries)))
            }
            _ => None,
        };
        let limit_key = limit_key(&settings.prefix, settings.dynamic_limits);
        Self {
            backend,
            algorithm,
            prefix: settings.prefix,
            key_layout: settings.key_layout,
            cache: settings.cache,
            local_counts,
            limit_key,
            fail_mode: settings.fail_mode,
            clock: Arc::new(SystemClock),
            guards: guarded::Guards::default(),
        }
    }

    /// The same limit with its keys laid out as `key_layout` says; with [`KeyLayout::Cluster`],
    /// dynamic limits, protection and analytics reach their keys by commands of their own (see there).
    pub fn with_key_layout(mut self, key_layout: KeyLayout) -> Self {
        self.key_layout = key_layout;
        self
    }

    /// The same limit with keys `<prefix>:<identifier>`.
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        let dynamic_limits = self.limit_key.is_some();
        self.with_dynamic_limits(dynamic_limits)
    }

    /// The same limit with an ephemeral cache of up to `max_entries` blocked identifiers (at least 1),
    /// or none for `None`.
    pub fn with_ephemeral_cache(mut self, max_entries: Option<usize>) -> Self {
        self.cache = max_entries.map(|max| Arc::new(EphemeralCache::new(max)));
        self
    }

    /// The same limit sharing `cache` (with other limits given the same one).
    pub fn with_shared_ephemeral_cache(mut self, cache: Arc<EphemeralCache>) -> Self {
        self.cache = Some(cache);
        self
    }

    /// The same limit answering from local counts of up to `max_entries` identifiers (the
    /// `cachedFixedWindow` of `@upstash/ratelimit`): once an identifier's count in the current window is
    /// known, a request is answered at once and written to the backend in [`Pending`] work. That saves
    /// a round trip per request but trades exactness across processes: each process admits against its
    /// own view, so a fleet may admit more than the limit until the writes land. Fixed window only.
    pub fn with_local_counts(mut self, max_entries: usize) -> Result<Self> {
        guarded::check_local_counts(self.guards.protects())?;
        let Algorithm::FixedWindow(rule) = self.algorithm else {
            return Err(Error::Unsupported {
                what: format!("local counts with the {} algorithm", self.algorithm.name()),
            });
        };
        self.local_counts = Some(Arc::new(LocalCounts::new(rule, max_entries)));
        Ok(self)
    }

    /// The same limit with dynamic limits on or off: when on, a limit stored with
    /// [`Ratelimit::set_dynamic_limit`] (key `<prefix>:dynamic:global`, shared with
    /// `@upstash/ratelimit`) replaces the algorithm's capacity for every identifier; except with local
    /// counts, which apply the configured limit, as `@upstash/ratelimit`'s `cachedFixedWindow` does.
    /// With [`KeyLayout::Cluster`], the limit is read before each decision: a second round trip.
    pub fn with_dynamic_limits(mut self, enabled: bool) -> Self {
        self.limit_key = limit_key(&self.prefix, enabled);
        self
    }

    /// The same limit answering backend failures as `fail_mode` says.
    pub fn with_fail_mode(mut self, fail_mode: FailMode) -> Self {
        self.fail_mode = fail_mode;
        self
    }

    /// The same limit reading the time for its caches from `clock`.
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

    /// How the identifier goes into its keys.
    pub fn key_layout(&self) -> KeyLayout {
        self.key_layout
    }

    /// The fail mode.
    pub fn fail_mode(&self) -> FailMode {
        self.fail_mode
    }

    /// How many identifiers the ephemeral cache holds now.
    pub fn cached_blocks(&self) -> usize {
        self.cache.as_ref().map_or(0, |cache| cache.len())
    }

    /// How many identifiers the local counts hold now.
    pub fn counted_identifiers(&self) -> usize {
        self.local_counts.as_ref().map_or(0, |counts| counts.len())
    }

    /// Takes `rate` from `identifier`'s limit (1 is one request; a negative rate refunds, zero peeks),
    /// including any [`Pending`] work, which this awaits.
    ///
    /// A rate that is not finite, above 2^53 - 1 in size or (for the window algorithms) fractional, is
    /// an error, and so is a key layout that a Redis Cluster refuses ([`Error::CrossSlot`]: a
    /// misconfiguration, which admitting or denying everything would hide). A backend failure is not:
    /// it is answered as the fail mode says, with [`Reason::Timeout`] or [`Reason::Error`].
    pub async fn limit(&self, identifier: &str, rate: f64) -> Result<Response> {
        let (response, pending) = self.limit_with_pending(identifier, rate).await?;
        if let Some(pending) = pending {
            pending.await;
        }
        Ok(response)
    }

    /// [`Ratelimit::limit`], returning the work left after the answer instead of awaiting it (only local
    /// counts leave any), so that the answer comes first.
    pub async fn limit_with_pending(
        &self,
        identifier: &str,
        rate: f64,
    ) -> Result<(Response, Option<Pending>)> {
        if self.guards.active() {
            // Boxed, so that the plain decision's future does not grow by the guarded one's state.
            let request = Request::default();
            let guarded = Box::pin(self.limit_request_with_pending(identifier, rate, &request));
            let answer = guarded.await?;
            return Ok((answer.response, answer.pending));
        }
        let key = self.key(identifier)?;
        let cost = self.cost(rate)?;
        // The clock is read only for the local caches (each read is a call into JavaScript on wasm),
        // or below, for an answer of the fail mode.
        let cached_now =
            (self.local_counts.is_some() || self.cache.is_some()).then(|| self.clock.now_micros());
        let now_micros = cached_now.unwrap_or_default();
        let now_ms = now_micros / 1_000;

        if let Some(answer) = self.local_answer(&key, cost, now_micros) {
            return Ok(answer);
        }
        if let Some(block) = self.cached_block(&key, rate, now_ms) {
            return Ok((block, None));
        }

        if let Some(counts) = &self.local_counts {
            let window = counts.window(now_micros);
            counts.sending(&key, window, rate, self.algorithm.capacity());
        }
        match self.decide(&key, cost).await {
            Ok(decision) => {
                self.learn(key, rate, &decision, now_micros);
                Ok((response(decision), None))
            }
            Err(error) => {
                if let Some(counts) = &self.local_counts {
                    counts.remove(&key); // nothing learnt: the backend is asked next time
                }
                if !error.is_outage() {
                    return Err(error);
                }
                let now_micros = cached_now.unwrap_or_else(|| self.clock.now_micros());
                Ok((self.fail_mode_response(&error, now_micros / 1_000), None))
            }
        }
    }

    /// The ephemeral cache's answer when it knows that `rate` on `key` is denied at `now_ms`; a refund
    /// forgets what it knows of `key`.
    fn cached_block(&self, key: &str, rate: f64, now_ms: u64) -> Option<Response> {
        self.cache.as_ref()?.answer(key, rate, now_ms)
    }

    /// Keeps what the backend's `decision` on `key` says for the local caches: the count of local
    /// counts, or the block of a denial in the ephemeral cache.
    fn learn(&self, key: String, rate: f64, decision: &Decision, now_micros: u64) {
        let now_ms = now_micros / 1_000;
        if let Some(counts) = &self.local_counts {
            let window = counts.window(now_micros);
            counts.answered(&key, window, rate, used(decision), decision.limit);
        } else if let Some(cache) = &self.cache {
            cache.learn(key, rate, decision, now_ms);
        }
    }

    /// Calls [`Ratelimit::limit`] until `identifier` is admitted, sleeping with `sleep` in between, for
    /// at most `timeout`. Returns the first admission, or the denial as soon as waiting cannot help: the
    /// wait would pass the deadline, the rate can never be admitted, or the fail mode answered.
    pub async fn block_until_ready<S, F>(
        &self,
        identifier: &str,
        rate: f64,
        timeout: Duration,
        sleep: S,
    ) -> Result<Response>
    where
        S: Fn(Duration) -> F,
        F: Future<Output = ()>,
    {
        let deadline = Deadline::after(self.clock.now_micros(), timeout);
        loop {
            let response = self.limit(identifier, rate).await?;
            let Some(wait) = deadline.wait(self.clock.now_micros(), &response) else {
                return Ok(response);
            };
            sleep(wait).await;
        }
    }

    /// What `identifier` could take now, and when its limit is next restored; backend failures are
    /// errors here.
    pub async fn get_remaining(&self, identifier: &str) -> Result<Remaining> {
        let key = self.key(identifier)?;
        let now_micros = self.clock.now_micros();
        if let Some(counts) = &self.local_counts {
            let window = counts.window(now_micros);
            if let Some(count) = counts.peek(&key, window) {
                return Ok(Remaining {
                    remaining: count.limit.saturating_sub(count.used) as f64,
                    reset: counts.window_end(window),
                    limit: count.limit,
                });
            }
        }
        let decision = self.decide(&key, Cost::PEEK).await?;
        Ok(Remaining {
            remaining: decision.remaining,
            reset: decision.reset,
            limit: decision.limit,
        })
    }

    /// Forgets everything used by `identifier`, in the backend and in the local caches.
    pub async fn reset_used_tokens(&self, identifier: &str) -> Result<()> {
        let key = self.key(identifier)?;
        if let Some(cache) = &self.cache {
            cache.remove(&key);
        }
        if let Some(counts) = &self.local_counts {
            counts.remove(&key);
        }
        self.backend.reset(&key, self.algorithm).await
    }

    /// Stores `limit` as the dynamic limit of this prefix (it must fit the algorithm as its capacity
    /// would; 0 pauses the limit, denying every request that takes something), or removes it for
    /// `None`. Needs [`Ratelimit::with_dynamic_limits`].
    pub async fn set_dynamic_limit(&self, limit: Option<u64>) -> Result<()> {
        let key = self.enabled_limit_key()?;
        if let Some(limit) = limit {
            self.algorithm.with_capacity(limit)?;
        }
        self.backend.set_dynamic_limit(key, limit).await
    }

    /// The dynamic limit of this prefix, if one is set. Needs [`Ratelimit::with_dynamic_limits`].
    pub async fn dynamic_limit(&self) -> Result<Option<u64>> {
        let key = self.enabled_limit_key()?;
        self.backend.dynamic_limit(key).await
    }

    /// The dynamic limit the decisions apply: none with local counts, as `@upstash/ratelimit`'s
    /// `cachedFixedWindow` ignores dynamic limits (so both count alike in a mixed fleet); the limit
    /// is still stored and read.
    fn applied_limit_key(&self) -> Option<&str> {
        self.limit_key
            .as_deref()
            .filter(|_| self.local_counts.is_none())
    }

    fn enabled_limit_key(&self) -> Result<&str> {
        self.limit_key.as_deref().ok_or_else(|| Error::Unsupported {
            what: "dynamic limits are not enabled for this limit".to_owned(),
        })
    }

    /// The backend's decision, through the dynamic limit when enabled.
    async fn decide(&self, key: &str, cost: Cost) -> Result<Decision> {
        let (rule, limit_key) = self.decision_rule().await?;
        let outcome = self.backend.decide(key, cost, rule, limit_key).await?;
        Ok(outcome.decision)
    }

    /// The rule a decision applies and the dynamic limit key its script reads. A script on a Redis
    /// Cluster cannot reach the dynamic limit, so with [`KeyLayout::Cluster`] the limit is read
    /// first, as the script would read it, and applied as the rule's capacity: a second round trip.
    async fn decision_rule(&self) -> Result<(Algorithm, Option<&str>)> {
        let limit_key = self.applied_limit_key();
        let (Some(limit_key), KeyLayout::Cluster) = (limit_key, self.key_layout) else {
            return Ok((self.algorithm, limit_key));
        };
        let Some(capacity) = (self.backend)
            .dynamic_capacity(limit_key, self.algorithm)
            .await?
        else {
            return Ok((self.algorithm, None));
        };
        Ok((
            with_dynamic_capacity(self.algorithm, capacity, limit_key)?,
            None,
        ))
    }

    /// The answer from the local counts, when they know `key`'s current window; a request they admit
    /// is written to the backend by the [`Pending`] work returned with it.
    fn local_answer(
        &self,
        key: &str,
        cost: Cost,
        now_micros: u64,
    ) -> Option<(Response, Option<Pending>)> {
        let counts = self.local_counts.as_ref()?;
        let window = counts.window(now_micros);
        let taken = counts.take(key, window, cost.get())?;
        let reset = counts.window_end(window);
        let response = Response {
            success: taken.allowed,
            limit: taken.limit,
            remaining: taken.limit.saturating_sub(taken.used) as f64,
            reset,
            retry_after: Some(if taken.allowed {
                Duration::ZERO
            } else {
                Duration::from_micros((reset * 1_000).saturating_sub(now_micros))
            }),
            reason: None,
        };
        if !taken.allowed || cost.is_peek() {
            return Some((response, None));
        }
        let backend = Arc::clone(&self.backend);
        let counts = Arc::clone(counts);
        let algorithm = self.algorithm;
        let limit_key = self.applied_limit_key().map(str::to_owned);
        let key = key.to_owned();
        let write: Pending = Box::pin(async move {
            match backend
                .decide(&key, cost, algorithm, limit_key.as_deref())
                .await
            {
                Ok(outcome) => {
                    let decision = outcome.decision;
                    counts.answered(&key, window, cost.get(), used(&decision), decision.limit);
                }
                // Ask the backend next time, which applies the fail mode if it still fails.
                Err(_) => counts.remove(&key),
            }
        });
        Some((response, Some(write)))
    }

    fn fail_mode_response(&self, error: &Error, now_ms: u64) -> Response {
        Response {
            success: self.fail_mode == FailMode::Open,
            limit: self.algorithm.capacity(),
            remaining: 0.0,
            reset: now_ms,
            retry_after: None,
            reason: Some(match error {
                Error::Timeout { .. } => Reason::Timeout,
                _ => Reason::Error,
            }),
        }
    }

    /// The base key of `identifier` in the key layout: `<prefix>:<identifier>` (an empty identifier is
    /// a key too, `<prefix>:`, as the peer makes it) or `<prefix>:{<identifier>}`. An identifier that
    /// is too long or would reach a key the enabled features share is refused.
    fn key(&self, identifier: &str) -> Result<String> {
        let shared = SharedKeys {
            dynamic_limit: self.limit_key.is_some(),
            deny_list: self.guards.protects(),
            analytics: self.records_events(),
        };
        shared.check(identifier)?;
        self.key_layout.key(&self.prefix, identifier)
    }

    /// `rate` checked once, as the cost every step after takes: at most 2^53 - 1 in size, and what
    /// the algorithm accepts.
    fn cost(&self, rate: f64) -> Result<Cost> {
        if rate.is_finite() && rate.abs() > MAX_COUNT as f64 {
            return Err(Error::InvalidCost {
                algorithm: self.algorithm.name(),
                cost: rate,
                reason: "must be at most 2^53 - 1 in size",
            });
        }
        self.algorithm.cost(rate)
    }
}

/// Where the dynamic limit of `prefix` is stored, if dynamic limits are `enabled`.
pub(crate) fn limit_key(prefix: &str, enabled: bool) -> Option<String> {
    enabled.then(|| prefix.to_owned() + DYNAMIC_LIMIT_SUFFIX)
}

/// `algorithm` with the capacity `capacity` read from the dynamic limit in `limit_key` before a
/// decision on a Redis Cluster (see [`KeyLayout::Cluster`]); a limit the algorithm cannot take is
/// an error, as the script's would be.
pub(crate) fn with_dynamic_capacity(
    algorithm: Algorithm,
    capacity: u64,
    limit_key: &str,
) -> Result<Algorithm> {
    algorithm
        .with_capacity(capacity)
        .map_err(|error| Error::Redis {
            message: format!("the dynamic limit {capacity} in {limit_key} does not fit: {error}"),
        })
}

/// The answer a backend decision gives.
fn response(decision: Decision) -> Response {
    Response {
        success: decision.allowed,
        limit: decision.limit,
        remaining: decision.remaining,
        reset: decision.reset,
        retry_after: decision.retry_after,
        reason: None,
    }
}

/// A fixed window's count after a decision: what it admits less what is left.
fn used(decision: &Decision) -> u64 {
    decision.limit.saturating_sub(decision.remaining as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::{FixedWindow, Gcra, SlidingWindow, TokenBucket};
    use crate::backend::{MemoryBackend, Outcome};
    use crate::clock::ManualClock;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
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

    impl Backend for Probe {
        fn decide<'a>(
            &'a self,
            key: &'a str,
            cost: Cost,
            params: Algorithm,
            limit_key: Option<&'a str>,
        ) -> BoxFuture<'a, Result<Outcome>> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            match &self.error {
                Some(error) => Box::pin(std::future::ready(Err(error.clone()))),
                None => self.inner.decide(key, cost, params, limit_key),
            }
        }
        fn reset<'a>(&'a self, key: &'a str, params: Algorithm) -> BoxFuture<'a, Result<()>> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            self.inner.reset(key, params)
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
            // Expired blocks answer nothing; the least recently used key makes room for a new one.
            clock.advance(Duration::from_secs(60));
            assert!(limiter.limit("u9", 1.0).await.unwrap().success);
            limiter.limit("late", 1.0).await.unwrap();
            limiter.limit("late", 1.0).await.unwrap();
            assert_eq!(limiter.cached_blocks(), 3);
            let blocked = limiter.limit("late", 1.0).await.unwrap();
            assert_eq!(blocked.reason, Some(Reason::CacheBlock));
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
    fn a_cross_slot_refusal_is_an_error_whatever_the_fail_mode() {
        let clock = ManualClock::from_millis(START_MS);
        let cross_slot = Error::CrossSlot {
            message: "CROSSSLOT Keys in request don't hash to the same slot".into(),
        };
        for mode in [FailMode::Open, FailMode::Closed] {
            let (backend, _) = probe(&clock, Some(cross_slot.clone()));
            let limiter = Ratelimit::new(backend, fixed(2, 60)).with_fail_mode(mode);
            let error = pollster::block_on(limiter.limit("u", 1.0)).unwrap_err();
            assert_eq!(error, cross_slot);
            assert!(error.to_string().contains("KeyLayout::Cluster"), "{error}");
            assert!(error.to_string().contains(r#"keys: "cluster""#), "{error}");
        }
    }

    #[test]
    fn only_outages_are_answered_by_the_fail_mode() {
        let clock = ManualClock::from_millis(START_MS);
        let http = |status| Error::Http {
            status,
            message: "x".into(),
        };
        let redis = |message: &str| Error::Redis {
            message: message.into(),
        };
        let outages = [
            http(500),
            http(503),
            http(429),
            redis("LOADING Redis is loading the dataset in memory"),
            redis("BUSY Redis is busy running a script"),
            redis("READONLY You can't write against a read only replica."),
        ];
        let errors = [
            http(400),
            http(401),
            http(403),
            http(413),
            redis("WRONGTYPE Operation against a key holding the wrong kind of value"),
            redis("ERR value is not an integer or out of range"),
            Error::MalformedReply {
                message: "x".into(),
            },
            Error::CorruptState {
                key: "@upstash/ratelimit:u".into(),
                message: "tokens is nan".into(),
            },
        ];
        for mode in [FailMode::Open, FailMode::Closed] {
            for outage in &outages {
                let (backend, _) = probe(&clock, Some(outage.clone()));
                let limiter = Ratelimit::new(backend, fixed(2, 60)).with_fail_mode(mode);
                let response = pollster::block_on(limiter.limit("u", 1.0)).unwrap();
                assert_eq!(response.success, mode == FailMode::Open, "{outage}");
                assert_eq!(response.reason, Some(Reason::Error), "{outage}");
            }
            for error in &errors {
                let (backend, _) = probe(&clock, Some(error.clone()));
                let limiter = Ratelimit::new(backend, fixed(2, 60)).with_fail_mode(mode);
                let returned = pollster::block_on(limiter.limit("u", 1.0)).unwrap_err();
                assert_eq!(&returned, error, "{mode:?}");
            }
        }
    }

    #[test]
    fn identifiers_that_reach_a_shared_key_never_reach_the_backend() {
        let clock = ManualClock::from_millis(START_MS);
        let (backend, calls) = probe(&clock, None);
        let limiter = Ratelimit::new(backend, fixed(2, 60))
            .with_dynamic_limits(true)
            .with_clock(clock);
        pollster::block_on(async {
            for identifier in ["dynamic", "dynamic:global"] {
                let error = limiter.limit(identifier, 1.0).await.unwrap_err();
                assert!(matches!(error, Error::InvalidIdentifier { .. }), "{error}");
                assert!(limiter.get_remaining(identifier).await.is_err());
                assert!(limiter.reset_used_tokens(identifier).await.is_err());
            }
            let long = "x".repeat(crate::MAX_IDENTIFIER_BYTES + 1);
            let error = limiter.limit(&long, 1.0).await.unwrap_err();
            assert!(matches!(error, Error::TooLong { .. }), "{error}");
            assert_eq!(
                calls.load(Ordering::SeqCst),
                0,
                "nothing reached the backend"
            );
            assert!(limiter.limit("events:1", 1.0).await.unwrap().success);
        });
    }

    #[test]
    fn bad_input_is_an_error_not_the_fail_mode() {
        let clock = ManualClock::from_millis(START_MS);
        let (backend, calls) = probe(&clock, None);
        let limiter = Ratelimit::new(backend, fixed(2, 60))
            .with_fail_mode(FailMode::Open)
            .with_clock(clock);
        pollster::block_on(async {
            for rate in [f64::NAN, f64::INFINITY, -f64::INFINITY, 1.5, 1e300, -1e300] {
                let error = limiter.limit("u", rate).await.unwrap_err();
                assert!(
                    matches!(error, Error::InvalidCost { .. }),
                    "{rate}: {error}"
                );
            }
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

    #[test]
    fn a_dynamic_limit_replaces_the_capacity_for_every_identifier_until_removed() {
        let clock = ManualClock::from_millis(START_MS);
        let limiter = Ratelimit::new(memory(&clock), fixed(2, 60))
            .with_dynamic_limits(true)
            .with_clock(clock.clone());
        pollster::block_on(async {
            assert_eq!(limiter.dynamic_limit().await.unwrap(), None);
            limiter.set_dynamic_limit(Some(4)).await.unwrap();
            assert_eq!(limiter.dynamic_limit().await.unwrap(), Some(4));
            for id in ["a", "b"] {
                for left in (0..4).rev() {
                    let response = limiter.limit(id, 1.0).await.unwrap();
                    assert!(response.success);
                    assert_eq!((response.limit, response.remaining), (4, left as f64));
                }
                assert!(!limiter.limit(id, 1.0).await.unwrap().success);
            }
            assert_eq!(limiter.get_remaining("c").await.unwrap().limit, 4);

            limiter.set_dynamic_limit(None).await.unwrap();
            assert_eq!(limiter.dynamic_limit().await.unwrap(), None);
            let response = limiter.limit("c", 1.0).await.unwrap();
            assert_eq!((response.limit, response.remaining), (2, 1.0));

            // 0 pauses the limit, as in @upstash/ratelimit: every request that takes something is denied.
            limiter.set_dynamic_limit(Some(0)).await.unwrap();
            assert_eq!(limiter.dynamic_limit().await.unwrap(), Some(0));
            let paused = limiter.limit("d", 1.0).await.unwrap();
            assert!(!paused.success);
            assert_eq!((paused.limit, paused.remaining), (0, 0.0));
            assert!(limiter.limit("d", 0.0).await.unwrap().success);
            limiter.set_dynamic_limit(None).await.unwrap();
            assert!(limiter.limit("d", 1.0).await.unwrap().success);

            let huge = limiter.set_dynamic_limit(Some(1 << 53)).await.unwrap_err();
            assert!(matches!(huge, Error::InvalidParameter { .. }), "{huge}");
        });
    }

    #[test]
    fn the_cluster_layout_keeps_an_identifier_under_a_hash_tag() {
        let clock = ManualClock::from_millis(START_MS);
        let shared = Arc::new(memory(&clock));
        let cluster = Ratelimit::new(Arc::clone(&shared), fixed(2, 60))
            .with_prefix("p")
            .with_key_layout(KeyLayout::Cluster)
            .with_clock(clock.clone());
        let upstash = Ratelimit::new(Arc::clone(&shared), fixed(2, 60)).with_prefix("p");
        pollster::block_on(async {
            assert!(cluster.limit("u", 2.0).await.unwrap().success);
            let stored = shared
                .decide("p:{u}", Cost::PEEK, cluster.algorithm(), None)
                .await
                .unwrap();
            assert_eq!(stored.decision.remaining, 0.0);
            assert_eq!(upstash.get_remaining("u").await.unwrap().remaining, 2.0);
            assert!(!cluster.limit("u", 1.0).await.unwrap().success);
            assert_eq!(cluster.cached_blocks(), 1);
            cluster.reset_used_tokens("u").await.unwrap();
            assert_eq!(cluster.cached_blocks(), 0);
            assert_eq!(cluster.get_remaining("u").await.unwrap().remaining, 2.0);
            let empty = cluster.limit("", 1.0).await.unwrap_err();
            assert!(matches!(empty, Error::InvalidParameter { .. }), "{empty}");
        });
    }

    #[test]
    fn the_cluster_layout_reads_the_dynamic_limit_before_deciding_whatever_the_order() {
        let clock = ManualClock::from_millis(START_MS);
        let shared = Arc::new(memory(&clock));
        let layout_first = Ratelimit::new(Arc::clone(&shared), fixed(2, 60))
            .with_key_layout(KeyLayout::Cluster)
            .with_dynamic_limits(true)
            .with_clock(clock.clone());
        let layout_last = Ratelimit::new(Arc::clone(&shared), fixed(2, 60))
            .with_dynamic_limits(true)
            .with_key_layout(KeyLayout::Cluster)
            .with_clock(clock.clone());
        pollster::block_on(async {
            layout_first.set_dynamic_limit(Some(3)).await.unwrap();
            for left in (0..3).rev() {
                let response = layout_last.limit("u", 1.0).await.unwrap();
                assert_eq!((response.success, response.limit), (true, 3));
                assert_eq!(response.remaining, left as f64);
            }
            assert!(!layout_first.limit("u", 1.0).await.unwrap().success);
            assert_eq!(layout_first.get_remaining("v").await.unwrap().limit, 3);
            layout_first.set_dynamic_limit(Some(0)).await.unwrap();
            let paused = layout_last.limit("v", 1.0).await.unwrap();
            assert_eq!((paused.success, paused.limit), (false, 0));
            layout_first.set_dynamic_limit(None).await.unwrap();
            assert_eq!(layout_last.limit("v", 1.0).await.unwrap().limit, 2);
        });
    }

    #[test]
    fn the_dynamic_limit_key_follows_the_prefix_whatever_the_order() {
        let clock = ManualClock::from_millis(START_MS);
        let shared = Arc::new(memory(&clock));
        let prefix_first = Ratelimit::new(Arc::clone(&shared), fixed(2, 60))
            .with_prefix("p")
            .with_dynamic_limits(true);
        let prefix_last = Ratelimit::new(Arc::clone(&shared), fixed(2, 60))
            .with_dynamic_limits(true)
            .with_prefix("p");
        let other = Ratelimit::new(Arc::clone(&shared), fixed(2, 60)).with_dynamic_limits(true);
        pollster::block_on(async {
            prefix_first.set_dynamic_limit(Some(7)).await.unwrap();
            assert_eq!(prefix_last.dynamic_limit().await.unwrap(), Some(7));
            assert_eq!(other.dynamic_limit().await.unwrap(), None);
            assert_eq!(
                shared.dynamic_limit("p:dynamic:global").await.unwrap(),
                Some(7)
            );
        });
    }

    #[test]
    fn dynamic_limits_must_be_enabled() {
        let clock = ManualClock::from_millis(START_MS);
        let limiter = Ratelimit::new(memory(&clock), fixed(2, 60)).with_clock(clock);
        pollster::block_on(async {
            let error = limiter.set_dynamic_limit(Some(5)).await.unwrap_err();
            assert!(matches!(error, Error::Unsupported { .. }), "{error}");
            assert!(limiter.dynamic_limit().await.is_err());
        });
    }

    #[test]
    fn local_counts_answer_at_once_and_write_in_the_pending_work() {
        let clock = ManualClock::from_millis(START_MS);
        let (backend, calls) = probe(&clock, None);
        let limiter = Ratelimit::new(backend, fixed(3, 60))
            .with_local_counts(100)
            .unwrap()
            .with_clock(clock.clone());
        pollster::block_on(async {
            let (first, pending) = limiter.limit_with_pending("u", 1.0).await.unwrap();
            assert!(
                first.success && pending.is_none(),
                "a miss asks the backend"
            );
            assert_eq!(calls.load(Ordering::SeqCst), 1);

            let mut writes = Vec::new();
            for left in [1.0, 0.0] {
                let (response, pending) = limiter.limit_with_pending("u", 1.0).await.unwrap();
                assert!(response.success);
                assert_eq!(response.remaining, left);
                writes.push(pending.expect("an admitted request leaves its write"));
            }
            assert_eq!(calls.load(Ordering::SeqCst), 1, "answered locally");
            let (denied, pending) = limiter.limit_with_pending("u", 1.0).await.unwrap();
            assert!(!denied.success && pending.is_none());
            assert_eq!(denied.retry_after, Some(Duration::from_secs(60)));
            assert_eq!(denied.reset, START_MS + 60_000);

            for write in writes {
                write.await;
            }
            assert_eq!(calls.load(Ordering::SeqCst), 3);
            let remaining = limiter.get_remaining("u").await.unwrap();
            assert_eq!((remaining.remaining, remaining.limit), (0.0, 3));
            assert_eq!(
                calls.load(Ordering::SeqCst),
                3,
                "getRemaining read the local count"
            );

            clock.advance(Duration::from_secs(60));
            let (next_window, pending) = limiter.limit_with_pending("u", 1.0).await.unwrap();
            assert!(next_window.success && pending.is_none());
            assert_eq!(
                calls.load(Ordering::SeqCst),
                4,
                "a new window asks the backend"
            );
            assert_eq!(limiter.counted_identifiers(), 1);
        });
    }

    #[test]
    fn local_counts_learn_from_the_backend_and_forget_a_failed_write() {
        let clock = ManualClock::from_millis(START_MS);
        let shared = Arc::new(memory(&clock));
        let other_process =
            Ratelimit::new(Arc::clone(&shared), fixed(3, 60)).with_clock(clock.clone());
        let limiter = Ratelimit::new(Arc::clone(&shared), fixed(3, 60))
            .with_local_counts(100)
            .unwrap()
            .with_clock(clock.clone());
        pollster::block_on(async {
            assert!(limiter.limit("u", 1.0).await.unwrap().success);
            assert!(other_process.limit("u", 1.0).await.unwrap().success);
            // The local count (1) does not know of the other process until a write brings it back.
            let response = limiter.limit("u", 1.0).await.unwrap(); // awaits its write
            assert_eq!(response.remaining, 1.0);
            assert_eq!(limiter.get_remaining("u").await.unwrap().remaining, 0.0);
            assert!(!limiter.limit("u", 1.0).await.unwrap().success);
        });

        let (failing, _) = probe(
            &clock,
            Some(Error::Network {
                message: "down".into(),
            }),
        );
        let limiter = Ratelimit::new(failing, fixed(3, 60))
            .with_local_counts(100)
            .unwrap()
            .with_clock(clock.clone());
        pollster::block_on(async {
            let response = limiter.limit("u", 1.0).await.unwrap();
            assert_eq!(response.reason, Some(Reason::Error));
            assert_eq!(limiter.counted_identifiers(), 0, "a failure is not counted");
        });
    }

    #[test]
    fn local_counts_are_bounded_and_fixed_window_only() {
        let clock = ManualClock::from_millis(START_MS);
        let limiter = Ratelimit::new(memory(&clock), fixed(3, 60))
            .with_local_counts(10)
            .unwrap()
            .with_clock(clock.clone());
        pollster::block_on(async {
            for id in 0..100 {
                limiter.limit(&id.to_string(), 1.0).await.unwrap();
                assert!(limiter.counted_identifiers() <= 10);
            }
        });
        let bucket = TokenBucket::new(1, Duration::from_secs(1), 2).unwrap();
        let error = Ratelimit::new(memory(&clock), bucket)
            .with_local_counts(10)
            .err()
            .expect("only the fixed window has local counts");
        assert!(matches!(error, Error::Unsupported { .. }), "{error}");
    }

    #[test]
    fn block_until_ready_sleeps_until_admitted_or_returns_when_waiting_cannot_help() {
        let clock = ManualClock::from_millis(START_MS);
        let gcra = Gcra::new(1, Duration::from_secs(10), 1).unwrap();
        let limiter = Ratelimit::new(memory(&clock), gcra)
            .with_ephemeral_cache(None)
            .with_clock(clock.clone());
        let slept = Arc::new(Mutex::new(Vec::new()));
        let sleep = |wait: Duration| {
            slept.lock().unwrap().push(wait);
            clock.advance(wait);
            std::future::ready(())
        };
        pollster::block_on(async {
            let minute = Duration::from_secs(60);
            assert!(
                limiter
                    .block_until_ready("u", 1.0, minute, sleep)
                    .await
                    .unwrap()
                    .success
            );
            let second = limiter
                .block_until_ready("u", 1.0, minute, sleep)
                .await
                .unwrap();
            assert!(second.success);
            assert_eq!(*slept.lock().unwrap(), [Duration::from_secs(10)]);

            let short = limiter
                .block_until_ready("u", 1.0, Duration::from_secs(5), sleep)
                .await
                .unwrap();
            assert!(
                !short.success,
                "10 s to wait, 5 s allowed: no point sleeping"
            );
            let never = limiter
                .block_until_ready("u", 2.0, minute, sleep)
                .await
                .unwrap();
            assert!(!never.success && never.retry_after.is_none());
            assert_eq!(slept.lock().unwrap().len(), 1);
        });
    }

    #[test]
    fn block_until_ready_returns_the_fail_mode_answer_at_once() {
        let clock = ManualClock::from_millis(START_MS);
        let (failing, calls) = probe(
            &clock,
            Some(Error::Network {
                message: "down".into(),
            }),
        );
        let limiter = Ratelimit::new(failing, fixed(1, 60))
            .with_fail_mode(FailMode::Closed)
            .with_clock(clock.clone());
        let response = pollster::block_on(limiter.block_until_ready(
            "u",
            1.0,
            Duration::from_secs(60),
            |_| async { panic!("no sleep") },
        ))
        .unwrap();
        assert_eq!(
            (response.success, response.reason),
            (false, Some(Reason::Error))
        );
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_shared_ephemeral_cache_serves_every_limit_given_it() {
        let clock = ManualClock::from_millis(START_MS);
        let cache = Arc::new(EphemeralCache::new(100));
        let (backend, calls) = probe(&clock, None);
        let shared = Arc::new(backend);
        let first = Ratelimit::new(Arc::clone(&shared), fixed(1, 60))
            .with_shared_ephemeral_cache(Arc::clone(&cache))
            .with_clock(clock.clone());
        let second = Ratelimit::new(Arc::clone(&shared), fixed(1, 60))
            .with_shared_ephemeral_cache(Arc::clone(&cache))
            .with_clock(clock.clone());
        pollster::block_on(async {
            assert!(first.limit("u", 1.0).await.unwrap().success);
            assert!(!first.limit("u", 1.0).await.unwrap().success);
            assert_eq!(cache.len(), 1);
            let blocked = second.limit("u", 1.0).await.unwrap();
            assert_eq!(blocked.reason, Some(Reason::CacheBlock));
            assert_eq!(calls.load(Ordering::SeqCst), 2);
        });
    }
}
