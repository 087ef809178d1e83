//! `Ratelimit`: a [`Backend`] and the [`Settings`] every limit shares (`settings.rs`: an algorithm, a
//! key prefix, an ephemeral cache of blocked identifiers, bounded here, dynamic limits, a fail mode for
//! outages, one clock), plus what only the single-store limit has: more limits decided with the first,
//! all or nothing, and limits that run dry (`limits.rs`), what answers some decisions in this
//! process ([`Local`]: local counts for `cachedFixedWindow`, or leases, `lease/`), `blockUntilReady`,
//! and the deny list and analytics (`protection/`). Its answers are in `answer.rs`.
//!
//! Every decision takes one path, [`Ratelimit::decide`]: the answers this process can give (a value
//! remembered as denied, local counts, a lease, the ephemeral cache), then one [`Ask`] of the store,
//! answered at once by a store in this process and later by one over the network.
//!
//! Keys are `<prefix>:<identifier>`, the layout of `@upstash/ratelimit`, so both can share one limit,
//! or `<prefix>:{<identifier>}` on a Redis Cluster ([`KeyLayout`]).

mod answer;
pub(crate) mod deadline;
mod ephemeral_cache;
mod headers;
pub mod lease;
mod limits;
mod local_counts;
mod protection;
mod settings;

pub use answer::{
    Answer, FailMode, LimitResponse, Limited, Live, Pending, Reason, Remaining, Response,
};
pub use ephemeral_cache::{EphemeralCache, DEFAULT_CACHE_BYTES};
pub use headers::{rate_limit_headers, DryRunHeaders, HeaderOptions, HeaderStyle};
pub use lease::Lease;
pub use limits::{Limit, MAX_LIMITS};
pub use protection::{analytics, deny_list, Checks, Request};
pub(crate) use settings::{with_dynamic_capacity, HasSettings};
pub use settings::{Configure, Settings, DEFAULT_CACHE_SIZE, DEFAULT_PREFIX};

use crate::algorithm::{Algorithm, Cost};
use crate::backend::{Ask, Backend, Closing, Decided, Outcome, Part, Renewal, Set, Verdict, With};
use crate::decision::Decision;
use crate::error::{Error, Result};
use crate::identifier::SharedKeys;
use crate::key_layout::KeyLayout;
use crate::maybe_send::BoxFuture;
use answer::both;
use deadline::Deadline;
use lease::{Leases, Taken};
use limits::Member;
use local_counts::LocalCounts;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// A rate limit applied to identifiers: a backend, its [`Settings`] (set with [`Configure`]), what
/// answers some decisions in this process ([`Local`]), and optionally protection and analytics.
pub struct Ratelimit {
    backend: Arc<dyn Backend>,
    settings: Settings,
    local: Local,
    /// The deny list and analytics, off unless enabled.
    protection: protection::Protection,
}

/// What answers some of a limit's decisions in this process, besides the ephemeral cache: nothing
/// (every decision asks the store), local counts (`cachedFixedWindow`: answered at once, written in
/// the pending work), or leases (units reserved in the store and spent here). One at most; the deny
/// list goes with neither, and analytics not with leases ([`Ratelimit::check_local`]).
enum Local {
    Store,
    Counts(Arc<LocalCounts>),
    Leases(Arc<Leases>),
}

/// What one decision carries from its start to its answer: its key, cost and time (the limit's one
/// clock, read once), the checks of protection, and what it asked of the store besides deciding.
struct Asking<'a> {
    key: &'a str,
    cost: Cost,
    now: u64,
    checks: Checks<'a>,
    /// The analytics events' key of the hour, when analytics is on.
    events_key: Option<String>,
    /// The lease to close and the units to reserve, with leases.
    renewal: Option<Renewal>,
    /// The keys of the limits decided with the first, in order (see `limits.rs`).
    others: Vec<String>,
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
            local: Local::Store,
            protection: protection::Protection::default(),
        }
    }

    /// The same limit answering from local counts of up to `max_entries` identifiers (the
    /// `cachedFixedWindow` of `@upstash/ratelimit`): once an identifier's count in the current window is
    /// known, a request is answered at once and written to the backend in [`Pending`] work. That saves
    /// a round trip per request but trades exactness across processes: each process admits against its
    /// own view, so a fleet may admit more than the limit until the writes land. Fixed window only.
    pub fn with_local_counts(mut self, max_entries: usize) -> Result<Self> {
        let Algorithm::FixedWindow(rule) = self.settings.algorithm else {
            return Err(Error::Unsupported {
                what: format!(
                    "local counts with the {} algorithm",
                    self.settings.algorithm.name()
                ),
            });
        };
        self.check_one_limit("local counts")?;
        let local = Local::Counts(Arc::new(LocalCounts::new(rule, max_entries)));
        Self::check_local(&self.local, &local, &self.protection)?;
        self.local = local;
        Ok(self)
    }

    /// The same limit leasing units of hot identifiers (see [`lease`]): a decision that goes to Redis
    /// anyway also reserves up to `lease.tokens` units for at most `lease.ttl`, and the next requests
    /// on that identifier are answered from them with no request, never admitting past the limit.
    /// Keeps what it knows of up to [`DEFAULT_CACHE_SIZE`] identifiers.
    ///
    /// Fails with [`Error::InvalidParameter`] naming `tokens` (0, or more than the limit) or `ttl`
    /// (not a positive whole number of milliseconds, or longer than the algorithm's window), and with
    /// [`Error::Unsupported`] for a store without leases (the memory store), local counts, protection
    /// or dynamic limits, which a lease spent with no request could not obey at once. Analytics or
    /// dynamic limits turned on later turn leasing off: each decision then goes to Redis.
    pub fn with_lease(mut self, lease: Lease) -> Result<Self> {
        let lease = lease.checked(&self.settings.algorithm)?;
        self.check_one_limit("leases")?;
        if self.backend.leases().is_none() {
            return Err(Error::Unsupported {
                what: format!("leases in the {} store", self.backend.backend_name()),
            });
        }
        if self.settings.limit_key().is_some() {
            return Err(leases_with("dynamic limits"));
        }
        let local = Local::Leases(Arc::new(Leases::new(lease, DEFAULT_CACHE_SIZE)));
        Self::check_local(&self.local, &local, &self.protection)?;
        self.local = local;
        Ok(self)
    }

    /// The same limit deciding `limit` with its others, all or nothing (see `limits.rs`): a request is
    /// admitted only if every live limit admits it, and one the set denies is counted by none of
    /// them. `limit` keeps its state under its own prefix, or `<prefix>#<n>` for the limit at index
    /// `n` (the first limit, the one this limit was made with, is at 0); set the prefix first.
    ///
    /// Fails with [`Error::InvalidParameter`] for a set of more than [`MAX_LIMITS`], a limit the same
    /// as another, or a prefix another limit has (or that is another's followed by `:`), and with
    /// [`Error::Unsupported`] beside local counts, leases, protection or analytics.
    pub fn with_limit(mut self, limit: Limit) -> Result<Self> {
        if !matches!(self.local, Local::Store) || self.protection.active() {
            return Err(Error::Unsupported {
                what: "several limits with local counts, leases, protection or analytics"
                    .to_owned(),
            });
        }
        let index = self.settings.others.len() + 1;
        let dynamic_limits = self.settings.limit_key().is_some();
        let member = Member::new(limit, index, self.settings.prefix(), dynamic_limits);
        limits::check_new(&member.rule, &member.prefix, self.settings.limits())?;
        self.settings.others.push(member);
        Ok(self)
    }

    /// The same limit with its first limit (the one it was made with) running dry, or live: decided
    /// and counted as live, it never denies a request (see `limits.rs`).
    pub fn with_dry_run(mut self, dry_run: bool) -> Self {
        self.settings.dry_run = dry_run;
        self
    }

    /// An error when this limit decides several limits, which `what` cannot go with.
    fn check_one_limit(&self, what: &str) -> Result<()> {
        if self.settings.others.is_empty() {
            return Ok(());
        }
        Err(Error::Unsupported {
            what: format!("{what} with several limits"),
        })
    }

    /// Whether `local` may replace `current` beside `protection`: local counts and leases exclude each
    /// other, and the deny list (checked by the store on each request) excludes both; analytics
    /// excludes leases (each decision records its event in the store).
    fn check_local(
        current: &Local,
        local: &Local,
        protection: &protection::Protection,
    ) -> Result<()> {
        match (current, local) {
            (Local::Counts(_), Local::Leases(_)) | (Local::Leases(_), Local::Counts(_)) => {
                return Err(leases_with("local counts"))
            }
            _ => {}
        }
        match local {
            Local::Store => Ok(()),
            Local::Counts(_) => protection::check_local_counts(protection.protects()),
            Local::Leases(_) if protection.active() => Err(leases_with("protection")),
            Local::Leases(_) => Ok(()),
        }
    }

    /// The leases, when this limit leases (see [`Ratelimit::with_lease`]) and nothing turned it off
    /// since: analytics, or dynamic limits.
    fn leases(&self) -> Option<&Arc<Leases>> {
        match &self.local {
            Local::Leases(leases)
                if !self.protection.active() && self.settings.limit_key().is_none() =>
            {
                Some(leases)
            }
            _ => None,
        }
    }

    /// The local counts, when this limit keeps them (see [`Ratelimit::with_local_counts`]).
    fn counts(&self) -> Option<&Arc<LocalCounts>> {
        match &self.local {
            Local::Counts(counts) => Some(counts),
            _ => None,
        }
    }

    /// How many identifiers the leases know now (held or being watched for their rate).
    pub fn leased_identifiers(&self) -> usize {
        match &self.local {
            Local::Leases(leases) => leases.len(),
            _ => 0,
        }
    }

    /// Ends every lease this limit holds: the returned work closes them, one after the other, giving
    /// their unused units back to the store (hand it to `waitUntil`, or await it before an instance
    /// stops).
    pub fn return_leases(&self) -> Pending {
        let returns: Vec<_> = match &self.local {
            Local::Leases(leases) => leases
                .end_all()
                .into_iter()
                .map(|(key, closing)| self.give_back(key.into(), closing))
                .collect(),
            _ => Vec::new(),
        };
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
        self.counts().map_or(0, |counts| counts.len())
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

    /// [`Ratelimit::limit`], returning the work left after the answer instead of awaiting it, so that
    /// the answer comes first.
    pub async fn limit_with_pending(
        &self,
        identifier: &str,
        rate: f64,
    ) -> Result<(Response, Option<Pending>)> {
        let answer = if self.protection.active() {
            self.guarded(identifier, rate).await?
        } else {
            let key = self.key(identifier)?;
            let cost = self.settings.cost(rate)?;
            let now = self.settings.clock.now_micros();
            self.decide(&key, cost, now, Checks::default()).await?
        };
        Ok((answer.response, answer.pending))
    }

    /// [`Ratelimit::limit_request_with_pending`] with no request, boxed, so that the plain decision's
    /// future does not grow by the guarded one's state. Not inlined: most limits have no protection.
    #[inline(never)]
    fn guarded<'a>(&'a self, identifier: &'a str, rate: f64) -> BoxFuture<'a, Result<Answer>> {
        Box::pin(async move {
            (self.limit_request_with_pending(identifier, rate, &Request::default())).await
        })
    }

    /// Writes what every key of this limit starts with into `key`, for [`Ratelimit::decide_key`].
    pub fn write_key_head(&self, key: &mut String) {
        self.settings.write_key_head(key);
    }

    /// [`Ratelimit::decide`] on a `key` holding its head ([`Ratelimit::write_key_head`], its first
    /// `head` bytes) and then the identifier, which spares writing the prefix per decision: the
    /// identifier is checked and the key ended first. `None` when `head` does not end at a character
    /// of `key`.
    #[inline]
    pub fn decide_key<'a>(
        &'a self,
        key: &'a mut String,
        head: usize,
        cost: f64,
        now: u64,
    ) -> Option<Limited<'a>> {
        let ended = self.settings.end_key(key, head, self.shared_keys())?;
        let key: &'a String = key;
        Some(match ended.and_then(|()| self.settings.cost(cost)) {
            Ok(cost) => self.decide(key, cost, now, Checks::default()),
            Err(error) => Limited::now(Err(error)),
        })
    }

    /// Whether every answer of [`Ratelimit::decide`] without checks comes at once and leaves no work
    /// when the store answers at once (a store in this process): no local counts, leases or
    /// protection, and no dynamic limit to read before the decision (a Redis Cluster's). A caller
    /// that answers without a future (the JavaScript package) asks this once.
    pub fn answers_at_once(&self) -> bool {
        let rule_read_first =
            self.applied_limit_key().is_some() && self.settings.key_layout == KeyLayout::Cluster;
        let one_live_limit = self.settings.others.is_empty() && !self.settings.runs_dry();
        matches!(self.local, Local::Store)
            && !self.protection.active()
            && !rule_read_first
            && one_live_limit
    }

    /// The one decision of this limit: `cost` on `key` at `now` (µs, this limit's clock), with the
    /// `checks` of protection. Answered at once when this process can: a value remembered as denied,
    /// local counts, a lease, the ephemeral cache, or a store in this process; else when the store
    /// answers. A store's outage is answered as the fail mode says. When a limit runs dry, the answer
    /// carries what live limits would have answered; when every limit does, it admits.
    pub fn decide<'a>(
        &'a self,
        key: &'a str,
        cost: Cost,
        now: u64,
        checks: Checks<'a>,
    ) -> Limited<'a> {
        if !self.settings.runs_dry() {
            return self.decide_live(key, cost, now, checks);
        }
        self.answered_dry(self.decide_live(key, cost, now, checks))
    }

    /// `limited`, decided as live, answered as a limit that runs dry. Not inlined: most limits never
    /// run dry.
    #[inline(never)]
    fn answered_dry<'a>(&self, limited: Limited<'a>) -> Limited<'a> {
        let every_limit = self.settings.every_limit_runs_dry();
        let dry = move |answer: Answer| Answer {
            response: limits::dry_run(answer.response, every_limit),
            ..answer
        };
        match limited {
            Limited::Now(answer) => Limited::Now(answer.map(|answer| answer.map(dry))),
            Limited::Later(answer) => {
                Limited::Later(Box::pin(async move { answer.await.map(dry) }))
            }
        }
    }

    /// [`Ratelimit::decide`] as live limits answer.
    fn decide_live<'a>(
        &'a self,
        key: &'a str,
        cost: Cost,
        now: u64,
        checks: Checks<'a>,
    ) -> Limited<'a> {
        let now_ms = now / 1_000;
        if let Some(index) =
            (self.protection.denied_values()).and_then(|denied| denied.find(checks.values, now_ms))
        {
            return Limited::now(Ok(protection::denied(checks.values[index].clone())));
        }
        let mut asking = Asking {
            key,
            cost,
            now,
            checks,
            events_key: checks
                .members
                .map(|_| analytics::events_key(self.settings.prefix(), now_ms)),
            renewal: None,
            others: self.other_keys(key),
        };
        if !matches!(self.local, Local::Store) {
            if let Some(answered) = self.answer_locally(&mut asking) {
                return answered;
            }
        }
        let keys = std::iter::once(key).chain(asking.others.iter().map(String::as_str));
        if let Some(block) = keys
            .map(|key| self.cached_block(key, cost, now_ms))
            .fold(None, Option::or)
        {
            return Limited::now(Ok(self.blocked(&mut asking, block)));
        }
        if let Some(counts) = self.counts() {
            let window = counts.window(now);
            counts.sending(key, window, cost.get(), self.settings.algorithm.capacity());
        }
        if !asking.others.is_empty() && self.protection.active() {
            return Limited::now(Err(Error::Unsupported {
                what: "protection or analytics with several limits".to_owned(),
            }));
        }
        let cluster = self.settings.key_layout == KeyLayout::Cluster;
        if cluster && (self.protection.active() || self.applied_limit_key().is_some()) {
            return self.ask_on_cluster(asking);
        }
        let rule = (self.settings.algorithm, self.applied_limit_key());
        self.ask(asking, rule, &self.other_rules())
    }

    /// What a Redis Cluster asks in more than one script: the guard of protection beside the
    /// decision's script, or the dynamic limit read first.
    #[inline(never)]
    fn ask_on_cluster<'a>(&'a self, asking: Asking<'a>) -> Limited<'a> {
        if self.protection.active() {
            return Limited::Later(Box::pin(self.limit_beside(asking)));
        }
        Limited::Later(Box::pin(async move {
            match self.decision_rules().await {
                Ok(rules) => self.ask(asking, rules[0], &rules[1..]).await,
                Err(error) => self.failed(&asking, error),
            }
        }))
    }

    /// The answer of local counts to `asking`, or its lease's answer; else the renewal it asks of the
    /// store with its decision, in `asking`. Not inlined: most limits answer nothing locally.
    #[inline(never)]
    fn answer_locally<'a>(&'a self, asking: &mut Asking<'a>) -> Option<Limited<'a>> {
        let (key, cost, now) = (asking.key, asking.cost, asking.now);
        match &self.local {
            Local::Store => None,
            Local::Counts(counts) => {
                let (response, write) = self.local_answer(counts, key, cost, now)?;
                let pending = both(write, self.event(asking, response.success));
                Some(Limited::now(Ok(Answer {
                    pending,
                    ..Answer::of(response)
                })))
            }
            Local::Leases(_) if cost.get() <= 0.0 => None,
            Local::Leases(leases) => {
                let capacity = self.settings.algorithm.capacity();
                match leases.take(key, cost.get(), capacity, now) {
                    Taken::Answered(response) => Some(Limited::now(Ok(Answer::of(response)))),
                    Taken::Ask { want, closing } => {
                        asking.renewal = Some(Renewal {
                            want,
                            ttl: leases.ttl(),
                            closing,
                        });
                        None
                    }
                }
            }
        }
    }

    /// The answer to `asking` of the ephemeral cache's `block`: the lease it would have renewed closed,
    /// and its analytics event, in the pending work.
    #[inline(never)]
    fn blocked(&self, asking: &mut Asking<'_>, block: Response) -> Answer {
        let closing = asking.renewal.take().map(|renewal| renewal.closing);
        let give_back = closing
            .filter(|closing| !closing.ids.is_empty())
            .map(|closing| self.give_back(asking.key.to_owned(), closing));
        Answer {
            pending: both(give_back, self.event(asking, false)),
            ..Answer::of(block)
        }
    }

    /// Each limit's rule and the dynamic limit key its decision reads, the first's first.
    fn rules(&self) -> Vec<(Algorithm, Option<&str>)> {
        std::iter::once((self.settings.algorithm, self.applied_limit_key()))
            .chain(self.other_rules())
            .collect()
    }

    /// The rule and dynamic limit key of each limit after the first (no allocation for one limit).
    fn other_rules(&self) -> Vec<(Algorithm, Option<&str>)> {
        (self.settings.others.iter())
            .map(|member| (member.rule, member.limit_key.as_deref()))
            .collect()
    }

    /// The store's decision of `asking` under the first limit's `rule` (with the dynamic limit under
    /// its key) and the `others`' rules, with the guard of protection, the lease or the other limits
    /// it carries, and its answer.
    fn ask<'a>(
        &'a self,
        asking: Asking<'a>,
        (rule, limit_key): (Algorithm, Option<&str>),
        others: &[(Algorithm, Option<&str>)],
    ) -> Limited<'a> {
        let parts = self.parts(others, &asking.others);
        let deny_key =
            (self.protection.protects()).then(|| deny_list::all_key(self.settings.prefix()));
        let with = match (&asking.renewal, self.protection.active()) {
            _ if !parts.is_empty() => With::Set(Set {
                dry_run: self.settings.dry_run,
                others: &parts,
            }),
            (Some(renewal), _) if renewal.want > 0 || !renewal.closing.ids.is_empty() => {
                With::Lease(renewal)
            }
            (_, true) => With::Guard(protection::guard(
                deny_key.as_deref(),
                &asking.checks,
                asking.events_key.as_deref(),
            )),
            _ => With::Nothing,
        };
        let ask = Ask {
            key: asking.key,
            cost: asking.cost,
            rule,
            limit_key,
            now: asking.now,
            with,
        };
        let decided = self.backend.decide(&ask);
        drop(parts);
        match decided {
            Decided::Now(Some(verdict)) => Limited::now(self.answered(&asking, verdict)),
            Decided::Now(None) => Limited::now(Err(Error::Unsupported {
                what: "an answer given at once, taken".to_owned(),
            })),
            Decided::Later(verdict) => {
                Limited::Later(Box::pin(
                    async move { self.answered(&asking, verdict.await) },
                ))
            }
        }
    }

    /// The answer of the store's `verdict` on `asking`: what the local caches keep of it, the lease it
    /// reserved, the value a deny list found, or the fail mode's answer to an outage.
    fn answered(&self, asking: &Asking<'_>, verdict: Result<Verdict>) -> Result<Answer> {
        let (key, now) = (asking.key, asking.now);
        let decision = match verdict {
            Ok(Verdict::Decided(Outcome { decision, .. })) => decision,
            Ok(Verdict::Unrecorded(outcome, error)) => {
                self.protection.unrecorded(&error);
                outcome.decision
            }
            Ok(Verdict::Denied(found)) => {
                return Ok(self
                    .protection
                    .denied_found(asking.checks.values, &found, now / 1_000));
            }
            Ok(Verdict::Leased { outcome, units, id }) => {
                return Ok(self.leased(asking, &outcome, units, id));
            }
            Ok(Verdict::Set(outcomes)) => return self.set_answered(asking, &outcomes),
            Err(error) => {
                if let Some(counts) = self.counts() {
                    counts.remove(key); // nothing learnt: the backend is asked next time
                }
                return self.failed(asking, error);
            }
        };
        self.learn(key, asking.cost, &decision, now);
        Ok(Answer::of(Response::decided(decision)))
    }

    /// The limits after the first as a store is asked them: each one's rule and dynamic limit key in
    /// `rules`, and its key in `keys`.
    fn parts<'b>(
        &self,
        rules: &[(Algorithm, Option<&'b str>)],
        keys: &'b [String],
    ) -> Vec<Part<'b>> {
        (rules.iter().zip(keys))
            .zip(&self.settings.others)
            .map(|((&(rule, limit_key), key), member)| Part {
                key,
                rule,
                limit_key,
                dry_run: member.dry_run,
            })
            .collect()
    }

    /// The keys of the limits after the first for the identifier whose first key is `key`.
    fn other_keys(&self, key: &str) -> Vec<String> {
        (self.settings.others.iter())
            .map(|member| member.key(key, self.settings.prefix()))
            .collect()
    }

    /// The answer of a set's `outcomes` on `asking`, each limit's in order: the denials of the limits
    /// that decide (the live ones, or all when every limit runs dry) kept by the ephemeral cache.
    #[inline(never)]
    fn set_answered(&self, asking: &Asking<'_>, outcomes: &[Outcome]) -> Result<Answer> {
        let dry_runs: Vec<bool> = std::iter::once(self.settings.dry_run)
            .chain(self.settings.others.iter().map(|member| member.dry_run))
            .collect();
        if outcomes.len() != dry_runs.len() {
            return Err(Error::MalformedReply {
                message: format!(
                    "{} decisions for a set of {}",
                    outcomes.len(),
                    dry_runs.len()
                ),
            });
        }
        let every_limit = self.settings.every_limit_runs_dry();
        let keys = std::iter::once(asking.key).chain(asking.others.iter().map(String::as_str));
        for ((key, outcome), &dry_run) in keys.zip(outcomes).zip(&dry_runs) {
            if every_limit || !dry_run {
                self.learn(key, asking.cost, &outcome.decision, asking.now);
            }
        }
        Ok(Answer::of(limits::answer(outcomes, &dry_runs)))
    }

    /// The answer of a decision that reserved `units` for the lease `id`: they are kept to answer the
    /// next requests, and a lease that could not be kept is closed in the pending work.
    #[inline(never)]
    fn leased(&self, asking: &Asking<'_>, outcome: &Outcome, units: u64, id: Box<str>) -> Answer {
        let (key, now, decision) = (asking.key, asking.now, &outcome.decision);
        let mut response = Response::decided(*decision);
        let mut pending = None;
        if let (Some(leases), true) = (self.leases(), units > 0) {
            response.remaining += units as f64;
            let window_end = match self.settings.algorithm {
                Algorithm::FixedWindow(_) | Algorithm::SlidingWindow(_) => Some(decision.reset),
                Algorithm::TokenBucket(_) | Algorithm::Gcra(_) => None,
            };
            let back = leases.granted(key, units, id, now, decision, outcome.now, window_end);
            pending = back.map(|closing| self.give_back(key.to_owned(), closing));
        }
        self.learn(key, asking.cost, decision, now);
        Answer {
            pending,
            ..Answer::of(response)
        }
    }

    /// The fail mode's answer to the outage `error` of `asking`'s decision, with its analytics event
    /// in the pending work; any other error is returned as it is.
    #[inline(never)]
    fn failed(&self, asking: &Asking<'_>, error: Error) -> Result<Answer> {
        let now_ms = self.settings.clock.now_micros() / 1_000;
        let response = self.settings.failed(error, now_ms)?;
        Ok(Answer {
            pending: self.event(asking, response.success),
            ..Answer::of(response)
        })
    }

    /// The analytics event of an answer given without the store's decision (`success` or not),
    /// written in the pending work, when analytics is on.
    fn event(&self, asking: &Asking<'_>, success: bool) -> Option<Pending> {
        let (key, members) = (asking.events_key.clone()?, asking.checks.members?);
        Some(self.record(key, members.of(success).to_owned()))
    }

    /// The work closing the leases of `closing` on `key`, giving their unused units back. A close
    /// that fails leaves the units used until the window ends or the bucket refills them: never an
    /// admission too many.
    #[inline(never)]
    fn give_back(&self, key: String, closing: Closing) -> Pending {
        let backend = Arc::clone(&self.backend);
        let algorithm = self.settings.algorithm;
        let clock = Arc::clone(&self.settings.clock);
        let ttl = match &self.local {
            Local::Leases(leases) => leases.ttl(),
            _ => Duration::ZERO,
        };
        let limit_key = match self.settings.key_layout {
            KeyLayout::Cluster => None,
            KeyLayout::Upstash => self.applied_limit_key().map(str::to_owned),
        };
        Box::pin(async move {
            let renewal = Renewal {
                want: 0,
                ttl,
                closing,
            };
            let ask = Ask {
                key: &key,
                cost: Cost::PEEK,
                rule: algorithm,
                limit_key: limit_key.as_deref(),
                now: clock.now_micros(),
                with: With::Lease(&renewal),
            };
            // A failed close only withholds units until they expire (see above).
            let _ = backend.decide(&ask).await;
        })
    }

    /// The ephemeral cache's answer when it knows that `cost` on `key` is denied at `now_ms`; a refund
    /// forgets what it knows of `key`.
    fn cached_block(&self, key: &str, cost: Cost, now_ms: u64) -> Option<Response> {
        self.settings
            .cache
            .as_ref()?
            .answer(key, cost.get(), now_ms)
    }

    /// Keeps what the backend's `decision` on `key` at `now` (µs) says for the local caches: the count
    /// of local counts, or the block of a denial in the ephemeral cache.
    fn learn(&self, key: &str, cost: Cost, decision: &Decision, now: u64) {
        if let Some(counts) = self.counts() {
            let window = counts.window(now);
            counts.answered(key, window, cost.get(), used(decision), decision.limit);
        } else if let Some(cache) = &self.settings.cache {
            cache.learn(key, cost.get(), decision, now / 1_000);
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
        let now = self.settings.clock.now_micros();
        if let Some(counts) = self.counts() {
            let window = counts.window(now);
            if let Some(count) = counts.peek(&key, window) {
                return Ok(Remaining {
                    remaining: count.limit.saturating_sub(count.used) as f64,
                    reset: counts.window_end(window),
                    limit: count.limit,
                    limits: Vec::new(),
                });
            }
        }
        if !self.settings.others.is_empty() {
            return self.set_remaining(&key, now).await;
        }
        let decision = self.store_decision(&key, Cost::PEEK, now).await?;
        let own = self.leases().map_or(0.0, |leases| leases.held(&key, now));
        Ok(Remaining {
            remaining: decision.remaining + own,
            reset: decision.reset,
            limit: decision.limit,
            limits: Vec::new(),
        })
    }

    /// [`Ratelimit::get_remaining`] of several limits, on the identifier whose first key is `key`:
    /// each limit's, and the least left of those that decide (the live ones, or all when every limit
    /// runs dry).
    async fn set_remaining(&self, key: &str, now: u64) -> Result<Remaining> {
        let rules = self.decision_rules().await?;
        let others = self.other_keys(key);
        let parts = self.parts(&rules[1..], &others);
        let ask = Ask {
            key,
            cost: Cost::PEEK,
            rule: rules[0].0,
            limit_key: rules[0].1,
            now,
            with: With::Set(Set {
                dry_run: self.settings.dry_run,
                others: &parts,
            }),
        };
        let outcomes = match self.backend.decide(&ask).await? {
            Verdict::Set(outcomes) if outcomes.len() == rules.len() => outcomes,
            _ => {
                return Err(Error::MalformedReply {
                    message: format!("a set of {} limits answered otherwise", rules.len()),
                })
            }
        };
        let every_limit = self.settings.every_limit_runs_dry();
        let dry_runs = std::iter::once(self.settings.dry_run)
            .chain(self.settings.others.iter().map(|member| member.dry_run));
        let limits: Vec<Remaining> = (outcomes.iter())
            .map(|outcome| Remaining {
                remaining: outcome.decision.remaining.max(0.0),
                reset: outcome.decision.reset,
                limit: outcome.decision.limit,
                limits: Vec::new(),
            })
            .collect();
        let least = (limits.iter().zip(dry_runs))
            .filter(|(_, dry_run)| every_limit || !dry_run)
            .map(|(limit, _)| limit)
            .reduce(|least, limit| {
                if limit.remaining < least.remaining {
                    limit
                } else {
                    least
                }
            })
            .cloned()
            .unwrap_or_else(|| limits[0].clone());
        Ok(Remaining { limits, ..least })
    }

    /// Forgets everything used by `identifier`, in the backend and in the local caches.
    pub async fn reset_used_tokens(&self, identifier: &str) -> Result<()> {
        let key = self.key(identifier)?;
        if let Some(cache) = &self.settings.cache {
            cache.remove(&key);
        }
        if let Some(counts) = self.counts() {
            counts.remove(&key);
        }
        if !self.settings.others.is_empty() {
            // One after the other: a reset is rare, and each limit's keys are its own.
            let others = self.other_keys(&key);
            let keys = std::iter::once(key.as_str()).chain(others.iter().map(String::as_str));
            for (key, (rule, _)) in keys.zip(self.settings.limits()) {
                if let Some(cache) = &self.settings.cache {
                    cache.remove(key);
                }
                self.backend.reset(key, *rule).await?;
            }
            return Ok(());
        }
        if let Local::Leases(leases) = &self.local {
            let voided = leases.void(&key);
            let (rule, limit_key) = self.decision_rule().await?;
            let store = self.backend.leases().ok_or_else(|| Error::Unsupported {
                what: format!("leases in the {} store", self.backend.backend_name()),
            })?;
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
            .filter(|_| self.counts().is_none())
    }

    /// The store's decision of `cost` on `key` at `now`, through the dynamic limit when enabled, with
    /// nothing beside it: for a peek, and for the write of local counts.
    async fn store_decision(&self, key: &str, cost: Cost, now: u64) -> Result<Decision> {
        let (rule, limit_key) = self.decision_rule().await?;
        let ask = Ask {
            key,
            cost,
            rule,
            limit_key,
            now,
            with: With::Nothing,
        };
        Ok(self.backend.decide(&ask).await?.into_outcome()?.decision)
    }

    /// The rule the first limit's decision applies and the dynamic limit key its script reads (see
    /// [`Ratelimit::decision_rules`]).
    async fn decision_rule(&self) -> Result<(Algorithm, Option<&str>)> {
        let rules = self.decision_rules().await?;
        Ok(rules[0])
    }

    /// The rule each limit's decision applies and the dynamic limit key its script reads, the first's
    /// first. A script on a Redis Cluster cannot reach the dynamic limits, so with
    /// [`KeyLayout::Cluster`] they are read first, one after the other, as the script would read
    /// them, and applied as the rules' capacities: a round trip more per limit.
    async fn decision_rules(&self) -> Result<Vec<(Algorithm, Option<&str>)>> {
        let mut rules = self.rules();
        if self.settings.key_layout == KeyLayout::Cluster {
            for (rule, limit_key) in &mut rules {
                if let Some(key) = limit_key.take() {
                    if let Some(capacity) = self.backend.dynamic_capacity(key, *rule).await? {
                        *rule = with_dynamic_capacity(*rule, capacity, key)?;
                    }
                }
            }
        }
        Ok(rules)
    }

    /// The answer from the local counts, when they know `key`'s current window; a request they admit
    /// is written to the backend by the [`Pending`] work returned with it.
    #[inline(never)]
    fn local_answer(
        &self,
        counts: &Arc<LocalCounts>,
        key: &str,
        cost: Cost,
        now: u64,
    ) -> Option<(Response, Option<Pending>)> {
        let window = counts.window(now);
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
                Duration::from_micros((reset * 1_000).saturating_sub(now))
            }),
            reason: None,
            limits: Vec::new(),
            live: None,
        };
        if !taken.allowed || cost.is_peek() {
            return Some((response, None));
        }
        let backend = Arc::clone(&self.backend);
        let counts = Arc::clone(counts);
        let rule = self.settings.algorithm;
        let key = key.to_owned();
        let write: Pending = Box::pin(async move {
            let ask = Ask {
                key: &key,
                cost,
                rule,
                limit_key: None,
                now,
                with: With::Nothing,
            };
            match backend.decide(&ask).await.and_then(Verdict::into_outcome) {
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
        self.settings
            .write_key(identifier, self.shared_keys(), &mut key)?;
        Ok(key)
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
/// without Redis in their own way, protection's deny list is checked by the store on each request,
/// and a lease spent with no request could not obey a dynamic limit set meanwhile.
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
