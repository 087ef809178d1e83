//! `Ratelimit`: a [`Backend`] and the [`Settings`] every limit shares (`settings.rs`: an algorithm, a
//! key prefix, an ephemeral cache of blocked identifiers, bounded here, dynamic limits, a fail mode for
//! outages), plus what only the single-store limit has: local counts for `cachedFixedWindow`,
//! `blockUntilReady`, leases (`lease/`: most decisions on a hot identifier with no round trip), and the
//! deny list and analytics (`protection/`). Its answers are in `answer.rs`.
//!
//! Keys are `<prefix>:<identifier>`, the layout of `@upstash/ratelimit`, so both can share one limit,
//! or `<prefix>:{<identifier>}` on a Redis Cluster ([`KeyLayout`]).

mod answer;
pub(crate) mod deadline;
mod ephemeral_cache;
mod headers;
pub mod lease;
mod local_counts;
mod protection;
mod settings;

pub use answer::{FailMode, Pending, Reason, Remaining, Response};
pub use ephemeral_cache::{EphemeralCache, DEFAULT_CACHE_BYTES};
pub use headers::{rate_limit_headers, HeaderOptions, HeaderStyle};
pub use lease::Lease;
pub use protection::{analytics, deny_list, Answer, Request};
pub(crate) use settings::{with_dynamic_capacity, HasSettings};
pub use settings::{Configure, Settings, DEFAULT_CACHE_SIZE, DEFAULT_PREFIX};

use crate::algorithm::{Algorithm, Cost};
use crate::backend::{Backend, Closing, Renewal};
use crate::decision::Decision;
use crate::error::{Error, Result};
use crate::identifier::SharedKeys;
use crate::key_layout::KeyLayout;
use deadline::Deadline;
use lease::{Leases, Taken};
use local_counts::LocalCounts;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// A rate limit applied to identifiers: a backend and its [`Settings`] (set with [`Configure`]), and
/// optionally local counts (`cachedFixedWindow`), protection and analytics.
pub struct Ratelimit {
    backend: Arc<dyn Backend>,
    settings: Settings,
    local_counts: Option<Arc<LocalCounts>>,
    /// The leases held, when leasing is on.
    leases: Option<Arc<Leases>>,
    /// The deny list and analytics, off unless enabled.
    protection: protection::Protection,
}

impl HasSettings for Ratelimit {
    fn settings(&self) -> &Settings {
        &self.settings
    }

    fn settings_mut(&mut self) -> &mut Settings {
        &mut self.settings
    }
}

impl Configure for Ratelimit {}

impl Ratelimit {
    /// A limit applying `algorithm` in `backend`, with the default prefix, an ephemeral cache of
    /// [`DEFAULT_CACHE_SIZE`] identifiers, failing open, on the system clock.
    pub fn new(backend: impl Backend + 'static, algorithm: impl Into<Algorithm>) -> Self {
        Self::from_settings(Arc::new(backend), Settings::new(algorithm.into()))
    }

    /// A limit applying `settings` in `backend`, built in one step.
    pub(crate) fn from_settings(backend: Arc<dyn Backend>, settings: Settings) -> Self {
        Self {
            backend,
            settings,
            local_counts: None,
            leases: None,
            protection: protection::Protection::default(),
        }
    }

    /// The same limit answering from local counts of up to `max_entries` identifiers (the
    /// `cachedFixedWindow` of `@upstash/ratelimit`): once an identifier's count in the current window is
    /// known, a request is answered at once and written to the backend in [`Pending`] work. That saves
    /// a round trip per request but trades exactness across processes: each process admits against its
    /// own view, so a fleet may admit more than the limit until the writes land. Fixed window only.
    pub fn with_local_counts(mut self, max_entries: usize) -> Result<Self> {
        protection::check_local_counts(self.protection.protects())?;
        if self.leases.is_some() {
            return Err(leases_with("local counts"));
        }
        let Algorithm::FixedWindow(rule) = self.settings.algorithm else {
            return Err(Error::Unsupported {
                what: format!(
                    "local counts with the {} algorithm",
                    self.settings.algorithm.name()
                ),
            });
        };
        self.local_counts = Some(Arc::new(LocalCounts::new(rule, max_entries)));
        Ok(self)
    }

    /// The same limit leasing units of hot identifiers (see [`lease`]): a decision that goes to Redis
    /// anyway also reserves up to `lease.tokens` units for at most `lease.ttl`, and the next requests
    /// on that identifier are answered from them with no request, never admitting past the limit.
    /// Keeps what it knows of up to [`DEFAULT_CACHE_SIZE`] identifiers.
    ///
    /// Fails with [`Error::InvalidParameter`] naming `tokens` (0, or more than the limit) or `ttl`
    /// (not a positive whole number of milliseconds, or longer than the algorithm's window), and with
    /// [`Error::Unsupported`] for a store without leases (the memory store), local counts,
    /// protection or dynamic limits: a lease is spent with no request, so it could not obey a pause
    /// or a lower limit set meanwhile (by any instance) until it ends. Analytics or dynamic limits
    /// turned on later turn leasing off: each decision then records its event, or reads the limit,
    /// in Redis.
    pub fn with_lease(mut self, lease: Lease) -> Result<Self> {
        let lease = lease.checked(&self.settings.algorithm)?;
        if self.backend.leases().is_none() {
            return Err(Error::Unsupported {
                what: format!("leases in the {} store", self.backend.backend_name()),
            });
        }
        if self.local_counts.is_some() {
            return Err(leases_with("local counts"));
        }
        if self.settings.limit_key().is_some() {
            return Err(leases_with("dynamic limits"));
        }
        if self.protection.active() {
            return Err(leases_with("protection"));
        }
        self.leases = Some(Arc::new(Leases::new(lease, DEFAULT_CACHE_SIZE)));
        Ok(self)
    }

    /// Whether this limit leases (see [`Ratelimit::with_lease`]).
    pub(crate) fn leases(&self) -> bool {
        self.leases.is_some()
    }

    /// How many identifiers the leases know now (held or being watched for their rate).
    pub fn leased_identifiers(&self) -> usize {
        self.leases.as_ref().map_or(0, |leases| leases.len())
    }

    /// Ends every lease this limit holds: the returned work closes them, one after the other, giving
    /// their unused units back to the store (hand it to `waitUntil`, or await it before an instance
    /// stops).
    pub fn return_leases(&self) -> Pending {
        let returns: Vec<_> = self.leases.as_ref().map_or_else(Vec::new, |leases| {
            leases
                .end_all()
                .into_iter()
                .map(|(key, closing)| self.give_back(key.into(), closing))
                .collect()
        });
        // One after the other: it runs after the answers (in `waitUntil`), for the few identifiers
        // an instance leases.
        Box::pin(async move {
            for closing in returns {
                closing.await;
            }
        })
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
        if self.protection.active() {
            // Boxed, so that the plain decision's future does not grow by the guarded one's state.
            let request = Request::default();
            let guarded = Box::pin(self.limit_request_with_pending(identifier, rate, &request));
            let answer = guarded.await?;
            return Ok((answer.response, answer.pending));
        }
        let key = self.key(identifier)?;
        let cost = self.settings.cost(rate)?;
        let leasing = rate > 0.0 && self.settings.limit_key().is_none();
        if let Some(leases) = self.leases.as_ref().filter(|_| leasing) {
            return self.leased(key, cost, leases).await;
        }
        // The clock is read only for the local caches (each read is a call into JavaScript on wasm),
        // or below, for an answer of the fail mode.
        let cached_now = (self.local_counts.is_some() || self.settings.cache.is_some())
            .then(|| self.settings.clock.now_micros());
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
            counts.sending(&key, window, rate, self.settings.algorithm.capacity());
        }
        match self.decide(&key, cost).await {
            Ok(decision) => {
                self.learn(&key, rate, &decision, now_micros);
                Ok((Response::decided(decision), None))
            }
            Err(error) => {
                if let Some(counts) = &self.local_counts {
                    counts.remove(&key); // nothing learnt: the backend is asked next time
                }
                let now_micros = cached_now.unwrap_or_else(|| self.settings.clock.now_micros());
                let response = self.settings.failed(error, now_micros / 1_000)?;
                Ok((response, None))
            }
        }
    }

    /// [`Ratelimit::limit`] answered at once at `now_micros` (the caller's clock), when no I/O is
    /// needed and no work is left: a store in this process (or an ephemeral cache that knows the
    /// denial), without protection, leases or local counts. `None` when the answer needs
    /// [`Ratelimit::limit`]. `key` is scratch space for the identifier's key, kept by the caller
    /// between calls to spare an allocation per decision. The JavaScript package answers such
    /// decisions without a future.
    pub fn limit_at_once(
        &self,
        identifier: &str,
        rate: f64,
        now_micros: u64,
        key: &mut String,
    ) -> Option<Result<Response>> {
        if !self.answers_at_once() {
            return None;
        }
        if let Err(error) = self.write_key(identifier, key) {
            return Some(Err(error));
        }
        self.decide_at_once(key, rate, now_micros)
    }

    /// Writes what every key of this limit starts with into `key`, for
    /// [`Ratelimit::limit_key_at_once`].
    pub fn write_key_head(&self, key: &mut String) {
        self.settings.write_key_head(key);
    }

    /// [`Ratelimit::limit_at_once`] on a `key` holding its head ([`Ratelimit::write_key_head`], its
    /// first `head` bytes) and then the identifier, which spares writing the prefix per decision.
    /// `None` also when `head` does not end at a character of `key`.
    pub fn limit_key_at_once(
        &self,
        key: &mut String,
        head: usize,
        rate: f64,
        now_micros: u64,
    ) -> Option<Result<Response>> {
        if !self.answers_at_once() {
            return None;
        }
        if let Err(error) = self.settings.end_key(key, head, self.shared_keys())? {
            return Some(Err(error));
        }
        self.decide_at_once(key, rate, now_micros)
    }

    /// Whether [`Ratelimit::limit_at_once`] can answer: nothing the decision needs I/O or leaves work
    /// for but the store, which may still say it is not in this process.
    fn answers_at_once(&self) -> bool {
        let rule_read_first =
            self.applied_limit_key().is_some() && self.settings.key_layout == KeyLayout::Cluster;
        !(self.protection.active()
            || self.leases.is_some()
            || self.local_counts.is_some()
            || rule_read_first) // the rule needs the stored limit read first (`decision_rule`)
    }

    /// The decision of [`Ratelimit::limit_at_once`] on the base key `key`.
    fn decide_at_once(&self, key: &str, rate: f64, now_micros: u64) -> Option<Result<Response>> {
        let cost = match self.settings.cost(rate) {
            Ok(cost) => cost,
            Err(error) => return Some(Err(error)),
        };
        if let Some(block) = self.cached_block(key, rate, now_micros / 1_000) {
            return Some(Ok(block));
        }
        let decided = self.backend.decide_in_process(
            key,
            cost,
            self.settings.algorithm,
            self.applied_limit_key(),
            now_micros,
        )?;
        Some(match decided {
            Ok(decision) => {
                self.learn(key, rate, &decision, now_micros);
                Ok(Response::decided(decision))
            }
            Err(error) => self.settings.failed(error, now_micros / 1_000),
        })
    }

    /// The answer to a positive `cost` on `key` with leases: from `key`'s lease when it holds enough,
    /// else from the store, which closes the lease that expired or ran short in the same call and
    /// reserves a new one when `key` is hot; the work returned closes a lease that could not be kept.
    async fn leased(
        &self,
        key: String,
        cost: Cost,
        leases: &Leases,
    ) -> Result<(Response, Option<Pending>)> {
        let capacity = self.settings.algorithm.capacity();
        let now = self.settings.clock.now_micros();
        let (want, closing) = match leases.take(&key, cost.get(), capacity, now) {
            Taken::Answered(response) => return Ok((response, None)),
            Taken::Ask { want, closing } => (want, closing),
        };
        if let Some(block) = self.cached_block(&key, cost.get(), now / 1_000) {
            let pending = (!closing.ids.is_empty()).then(|| self.give_back(key.clone(), closing));
            return Ok((block, pending));
        }
        let decided = if want == 0 && closing.ids.is_empty() {
            self.decide(&key, cost)
                .await
                .map(|decision| (decision, 0, "".into(), 0))
        } else {
            let renewal = Renewal {
                want,
                ttl: leases.ttl(),
                closing,
            };
            self.decide_leasing(&key, cost, &renewal).await
        };
        match decided {
            Ok((decision, units, id, store_now)) => {
                let mut response = Response::decided(decision);
                let mut pending = None;
                if units > 0 {
                    response.remaining += units as f64;
                    let window_end = match self.settings.algorithm {
                        Algorithm::FixedWindow(_) | Algorithm::SlidingWindow(_) => {
                            Some(decision.reset)
                        }
                        Algorithm::TokenBucket(_) | Algorithm::Gcra(_) => None,
                    };
                    let back =
                        leases.granted(&key, units, id, now, &decision, store_now, window_end);
                    pending = back.map(|closing| self.give_back(key.clone(), closing));
                }
                self.learn(&key, cost.get(), &decision, now);
                Ok((response, pending))
            }
            Err(error) => {
                let now_ms = self.settings.clock.now_micros() / 1_000;
                Ok((self.settings.failed(error, now_ms)?, None))
            }
        }
    }

    /// The store's decision of `cost` on `key` closing and reserving leases as `renewal` says: the
    /// decision (counting the units reserved as used), the units reserved, the lease's id and the
    /// store's time of the decision (µs). A lease closed by a call that fails stays used until it
    /// ends (the ledger then drops it): never an admission too many.
    async fn decide_leasing(
        &self,
        key: &str,
        cost: Cost,
        renewal: &Renewal,
    ) -> Result<(Decision, u64, Box<str>, u64)> {
        let (rule, limit_key) = self.decision_rule().await?;
        let store = self.lease_store()?;
        let leased = store
            .decide_leasing(key, cost, rule, limit_key, renewal)
            .await?;
        Ok((
            leased.outcome.decision,
            leased.units,
            leased.id,
            leased.outcome.now,
        ))
    }

    /// The store's leases.
    fn lease_store(&self) -> Result<&dyn crate::backend::LeaseBackend> {
        self.backend.leases().ok_or_else(|| Error::Unsupported {
            what: format!("leases in the {} store", self.backend.backend_name()),
        })
    }

    /// The work closing the leases of `closing` on `key`, giving their unused units back. A close
    /// that fails leaves the units used until the window ends or the bucket refills them: never an
    /// admission too many.
    fn give_back(&self, key: String, closing: Closing) -> Pending {
        let backend = Arc::clone(&self.backend);
        let algorithm = self.settings.algorithm;
        let ttl = self
            .leases
            .as_ref()
            .map_or(Duration::ZERO, |leases| leases.ttl());
        let limit_key = match self.settings.key_layout {
            KeyLayout::Cluster => None,
            KeyLayout::Upstash => self.applied_limit_key().map(str::to_owned),
        };
        Box::pin(async move {
            if let Some(store) = backend.leases() {
                let renewal = Renewal {
                    want: 0,
                    ttl,
                    closing,
                };
                let closed = store.decide_leasing(
                    &key,
                    Cost::PEEK,
                    algorithm,
                    limit_key.as_deref(),
                    &renewal,
                );
                // A failed close only withholds units until they expire (see above).
                let _ = closed.await;
            }
        })
    }

    /// The ephemeral cache's answer when it knows that `rate` on `key` is denied at `now_ms`; a refund
    /// forgets what it knows of `key`.
    fn cached_block(&self, key: &str, rate: f64, now_ms: u64) -> Option<Response> {
        self.settings.cache.as_ref()?.answer(key, rate, now_ms)
    }

    /// Keeps what the backend's `decision` on `key` says for the local caches: the count of local
    /// counts, or the block of a denial in the ephemeral cache.
    fn learn(&self, key: &str, rate: f64, decision: &Decision, now_micros: u64) {
        let now_ms = now_micros / 1_000;
        if let Some(counts) = &self.local_counts {
            let window = counts.window(now_micros);
            counts.answered(key, window, rate, used(decision), decision.limit);
        } else if let Some(cache) = &self.settings.cache {
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
        let deadline = Deadline::after(self.settings.clock.now_micros(), timeout);
        loop {
            let response = self.limit(identifier, rate).await?;
            let Some(wait) = deadline.wait(self.settings.clock.now_micros(), &response) else {
                return Ok(response);
            };
            sleep(wait).await;
        }
    }

    /// What `identifier` could take now, and when its limit is next restored; backend failures are
    /// errors here.
    pub async fn get_remaining(&self, identifier: &str) -> Result<Remaining> {
        let key = self.key(identifier)?;
        let now_micros = self.settings.clock.now_micros();
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
        let own = self
            .leases
            .as_ref()
            .map_or(0.0, |leases| leases.held(&key, now_micros));
        Ok(Remaining {
            remaining: decision.remaining + own,
            reset: decision.reset,
            limit: decision.limit,
        })
    }

    /// Forgets everything used by `identifier`, in the backend and in the local caches.
    pub async fn reset_used_tokens(&self, identifier: &str) -> Result<()> {
        let key = self.key(identifier)?;
        if let Some(cache) = &self.settings.cache {
            cache.remove(&key);
        }
        if let Some(counts) = &self.local_counts {
            counts.remove(&key);
        }
        if let Some(leases) = &self.leases {
            let voided = leases.void(&key);
            let (rule, limit_key) = self.decision_rule().await?;
            let store = self.lease_store()?;
            return store
                .reset_leases(&key, rule, limit_key, leases.ttl(), &voided)
                .await;
        }
        self.backend.reset(&key, self.settings.algorithm).await
    }

    /// Stores `limit` as the dynamic limit of this prefix (it must fit the algorithm as its capacity
    /// would; 0 pauses the limit, denying every request that takes something), or removes it for
    /// `None`. Needs [`Ratelimit::with_dynamic_limits`].
    pub async fn set_dynamic_limit(&self, limit: Option<u64>) -> Result<()> {
        let key = self.settings.enabled_limit_key()?;
        if let Some(limit) = limit {
            self.settings.algorithm.with_capacity(limit)?;
        }
        self.backend.set_dynamic_limit(key, limit).await
    }

    /// The dynamic limit of this prefix, if one is set. Needs [`Ratelimit::with_dynamic_limits`].
    pub async fn dynamic_limit(&self) -> Result<Option<u64>> {
        let key = self.settings.enabled_limit_key()?;
        self.backend.dynamic_limit(key).await
    }

    /// The dynamic limit the decisions apply: none with local counts, as `@upstash/ratelimit`'s
    /// `cachedFixedWindow` ignores dynamic limits (so both count alike in a mixed fleet); the limit
    /// is still stored and read.
    fn applied_limit_key(&self) -> Option<&str> {
        self.settings
            .limit_key()
            .filter(|_| self.local_counts.is_none())
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
        let (Some(limit_key), KeyLayout::Cluster) = (limit_key, self.settings.key_layout) else {
            return Ok((self.settings.algorithm, limit_key));
        };
        let Some(capacity) = (self.backend)
            .dynamic_capacity(limit_key, self.settings.algorithm)
            .await?
        else {
            return Ok((self.settings.algorithm, None));
        };
        Ok((
            with_dynamic_capacity(self.settings.algorithm, capacity, limit_key)?,
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
        let algorithm = self.settings.algorithm;
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

    /// The base key of `identifier` (see [`Settings::write_key`]), refusing the names of the keys the
    /// deny list and analytics share when they are on.
    fn key(&self, identifier: &str) -> Result<String> {
        let mut key = String::new();
        self.write_key(identifier, &mut key)?;
        Ok(key)
    }

    /// [`Ratelimit::key`] written into `key`, replacing what it held.
    fn write_key(&self, identifier: &str, key: &mut String) -> Result<()> {
        self.settings.write_key(identifier, self.shared_keys(), key)
    }

    /// The keys the deny list and analytics share between every identifier, when they are on.
    fn shared_keys(&self) -> SharedKeys {
        SharedKeys {
            deny_list: self.protection.protects(),
            analytics: self.records_events(),
            ..SharedKeys::default()
        }
    }
}

/// The error of leases configured with `other`, which they cannot go with: local counts answer
/// without Redis in their own way, and protection's deny list is checked by the store on each
/// request.
fn leases_with(other: &str) -> Error {
    Error::Unsupported {
        what: format!("leases with {other}"),
    }
}

/// A fixed window's count after a decision: what it admits less what is left.
fn used(decision: &Decision) -> u64 {
    decision.limit.saturating_sub(decision.remaining as u64)
}

#[cfg(test)]
mod tests;
