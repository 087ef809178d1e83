//! `MultiRegionRatelimit`: one limit replicated over several Redis databases (one per region),
//! answered by the first region to reply and synchronised in the background, in the [`Pending`] work
//! returned with the answer.
//!
//! # State: a grow-only ledger per window, merged by union
//!
//! The windows keep the state of `@upstash/ratelimit`'s `MultiRegionRatelimit`, so a fleet mixing
//! both enforces one limit: per window, the hash `<prefix>:<identifier>:<window>` maps each admitted
//! request's id (16 random bytes from `getrandom`, in hex) to its cost ([`Ledger`]); a window has used
//! the sum of its costs. A request goes to every region at once; each region decides it atomically on
//! what it holds (one script: the sums, the pure algorithm's rule, the id written if admitted) and
//! returns its windows as they were. The first region to reply answers.
//!
//! The synchronisation is a CRDT merge: the union of the ledgers, an id seen with two costs keeping
//! the larger — idempotent, commutative and associative, so regions converge whatever the order and
//! however often merges repeat. As each region replies, it joins the union, and every region heard
//! from is sent, by a merge script, exactly the ids it lacks, each with its own cost (the peer writes
//! the current request's rate for every missing id, and skips regions already at the limit; here full
//! regions are merged too). A region that is down or slow holds up neither the answer nor the other
//! regions' merge; when it comes back, the next requests' merges bring it up to date, because every
//! reachable region then holds the union of the ids.
//!
//! A request that the answering region denied but a slower one admitted is merged everywhere: it is
//! counted although it was denied. That errs on the side of admitting less, never more.
//!
//! A refund (a negative cost) is recorded as at most what the region's window used, or what its
//! bucket lacked, at that moment (the script replies the cost it recorded, which the merge carries):
//! never below empty, so no merge and no replay order turns it into credit. Refunds decided at once
//! in several regions may each give back the same units (at most what was used, per region).
//!
//! Each hash expires at the end of the last window (or epoch) that reads it plus
//! [`LATE_MS`](crate::redis::LATE_MS), set on every write from the window's end as the caller's clock
//! reads it, so that a request stamped before a window ended finds it counted; decisions across
//! regions are timed by the caller's clock, since each region has its own.
//!
//! # Token bucket and GCRA: timed requests per epoch, replayed
//!
//! A bucket's state is one number (GCRA's TAT) or two (the token bucket's level and last refill), which
//! no union merges. Here the bucket is rebuilt from its requests: per epoch (the time a bucket takes to
//! go from empty to full: `ceil(maxTokens / refillRate) · interval`, or `burst · T + T` for GCRA), the
//! hash `<prefix>:<identifier>:bucket:<epoch>` maps `<time µs>:<request id>` to the cost, a ledger
//! merged by union like the windows'. The state is the replay, in time order (then id), of the requests
//! of the current and the previous epochs, starting from the state entering the previous epoch; each
//! request is consumed even past empty (`Gcra::consume`, `TokenBucket::consume`), since merged
//! requests may together exceed what a bucket holds. The state entering an epoch is written into its
//! hash with the epoch's first admitted request (fields `base` and, for the token bucket, `-tokens`)
//! and merged by keeping the larger value, the more cautious one. With regions in sync, the replay is
//! the single-region algorithm exactly (a differential property test checks it); the debt left by
//! requests that regions admitted together is waited out, so the excess of one period is taken from
//! the next instead of being forgotten.
//!
//! Two limits of the design: a request merged into an epoch after the next epoch's base was written
//! is not in that base (its effect lasts at most one epoch), and a dynamic limit larger than the
//! configured capacity makes the epoch shorter than the bucket's refill time, so some of the oldest
//! debt may be forgotten. Both can only admit more than a single region would by what other regions
//! admitted within one merge delay.
//!
//! # Over-admission
//!
//! Regions decide on what they hold, so requests decided before a merge reaches them may together
//! exceed the limit: with `R` regions, at most `R · limit` can be admitted in one window (or burst)
//! when every region fills up before hearing of the others, and in general the excess is bounded by
//! what was admitted in the other regions during the last merge delay (the one-way latency from a
//! client to the slowest region, plus a round trip for the merge write). The sliding window carries
//! that excess into the next window through its weighted previous window, and the buckets through
//! their debt; the fixed window forgets it at the window's end. A client whose `pending` has settled
//! has merged every reachable region, and no region then admits past the limit on that state.
//! `make bench` measures the excess beside the peer's (section 6).

mod flight;
mod known;
mod region;
mod state;

pub use state::{derived, epoch_ms, field, Delta, Ledger, Merge};

use crate::algorithm::{Algorithm, Cost};
use crate::decision::Decision;
use crate::error::{quote, Error, Result};
use crate::identifier::SharedKeys;
use crate::key_layout::KeyLayout;
use crate::maybe_send::BoxFuture;
use crate::ratelimit::deadline::Deadline;
use crate::ratelimit::{
    with_dynamic_capacity, Configure, HasSettings, Pending, Remaining, Response, Settings,
};
use crate::redis::{Reply, RestClient};
use crate::transport::Transport;
use flight::Flight;
use known::Known;
use region::{Decided, Plan};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// How many bytes a limit keeps of what it learns from its replies, over every key (see [`Known`]):
/// about 20,000 requests of 100 bytes.
const KNOWN_BYTES: usize = 2 << 20;

/// A limit replicated over several Redis databases, one per region (see the module's documentation),
/// with the [`Settings`] of any limit (set with [`Configure`]).
pub struct MultiRegionRatelimit<T> {
    regions: Vec<Arc<RestClient<T>>>,
    settings: Settings,
    known: Arc<Known>,
}

impl<T> HasSettings for MultiRegionRatelimit<T> {
    fn settings(&self) -> &Settings {
        &self.settings
    }

    fn settings_mut(&mut self) -> &mut Settings {
        &mut self.settings
    }
}

impl<T> Configure for MultiRegionRatelimit<T> {}

/// What a region answered: a decision, or a plain command's reply (merges, deletes, dynamic limits).
enum Event {
    Decided(Result<Decided>),
    Replied(Result<Reply>),
}

impl<T: Transport + 'static> MultiRegionRatelimit<T> {
    /// A limit applying `algorithm` in every region of `regions` (at least one), with the default
    /// prefix, an ephemeral cache of [`DEFAULT_CACHE_SIZE`] identifiers, failing open, on the system
    /// clock.
    pub fn new(regions: Vec<T>, algorithm: impl Into<Algorithm>) -> Result<Self> {
        Self::from_settings(regions, Settings::new(algorithm.into()))
    }

    /// A limit applying `settings` in every region of `regions` (at least one), built in one step.
    pub(crate) fn from_settings(regions: Vec<T>, settings: Settings) -> Result<Self> {
        if regions.is_empty() {
            return Err(Error::InvalidParameter {
                algorithm: "multi-region ratelimit",
                name: "regions",
                value: "[]".to_owned(),
                reason: "must name at least one region",
            });
        }
        Ok(Self {
            regions: regions
                .into_iter()
                .map(|transport| Arc::new(RestClient::new(transport)))
                .collect(),
            settings,
            known: Arc::new(Known::new(KNOWN_BYTES)),
        })
    }

    /// How many regions the limit spans.
    pub fn regions(&self) -> usize {
        self.regions.len()
    }

    /// Takes `rate` from `identifier`'s limit and awaits the synchronisation of the regions.
    pub async fn limit(&self, identifier: &str, rate: f64) -> Result<Response> {
        let (response, pending) = self.limit_with_pending(identifier, rate).await?;
        pending.await;
        Ok(response)
    }

    /// Takes `rate` from `identifier`'s limit (1 is one request; a negative rate refunds, zero peeks):
    /// the answer of the first region to reply, and the [`Pending`] work that merges the regions,
    /// which settles once every region that replied holds the union of their windows (it never fails).
    ///
    /// Bad input is an error, and so is a key layout that a Redis Cluster refuses
    /// ([`Error::CrossSlot`]) when no region decided; regions failing otherwise are not: when none
    /// replies, the fail mode answers, with [`Reason::Timeout`] if they all timed out, else
    /// [`Reason::Error`].
    pub fn limit_with_pending<'a>(
        &'a self,
        identifier: &'a str,
        rate: f64,
    ) -> BoxFuture<'a, Result<(Response, Pending)>> {
        Box::pin(async move {
            let key = self.key(identifier)?;
            let cost = self.settings.cost(rate)?;
            let now = self.settings.clock.now_micros();
            let now_ms = now / 1_000;
            let cached = self.settings.cache.as_ref();
            if let Some(block) = cached.and_then(|cache| cache.answer(&key, rate, now_ms)) {
                return Ok((block, settled()));
            }
            let (decision, pending) = match self.decide(&key, cost, now).await {
                Ok(decided) => decided,
                Err(error) => return Ok((self.settings.failed(error, now_ms)?, settled())),
            };
            if let Some(cache) = &self.settings.cache {
                cache.learn(&key, rate, &decision, now_ms);
            }
            Ok((Response::decided(decision), pending))
        })
    }

    /// Calls [`MultiRegionRatelimit::limit_with_pending`] until `identifier` is admitted, sleeping with
    /// `sleep` in between, for at most `timeout`; returns as soon as waiting cannot help. The pending
    /// work of every call is returned together.
    pub async fn block_until_ready<S, F>(
        &self,
        identifier: &str,
        rate: f64,
        timeout: Duration,
        sleep: S,
    ) -> Result<(Response, Pending)>
    where
        S: Fn(Duration) -> F,
        F: Future<Output = ()>,
    {
        let deadline = Deadline::after(self.settings.clock.now_micros(), timeout);
        let mut pendings = Vec::new();
        let response = loop {
            let (response, pending) = self.limit_with_pending(identifier, rate).await?;
            pendings.push(pending);
            let Some(wait) = deadline.wait(self.settings.clock.now_micros(), &response) else {
                break response;
            };
            sleep(wait).await;
        };
        let pending: Pending = Box::pin(async move {
            for pending in pendings {
                pending.await;
            }
        });
        Ok((response, pending))
    }

    /// What `identifier` could take now, as the first region to reply sees it (its merge with the
    /// others left undone); an error when no region replies.
    pub async fn get_remaining(&self, identifier: &str) -> Result<Remaining> {
        let key = self.key(identifier)?;
        let (decision, _) = self
            .decide(&key, Cost::PEEK, self.settings.clock.now_micros())
            .await?;
        Ok(Remaining {
            remaining: decision.remaining.max(0.0),
            reset: decision.reset,
            limit: decision.limit,
            limits: Vec::new(),
        })
    }

    /// Forgets everything used by `identifier` in every region, awaiting them all; the first error
    /// if any region failed. A union has no removal: the merges of earlier requests still running
    /// (their [`Pending`] work) may write their ids back, so reset once they have settled.
    pub async fn reset_used_tokens(&self, identifier: &str) -> Result<()> {
        let key = self.key(identifier)?;
        if let Some(cache) = &self.settings.cache {
            cache.remove(&key);
        }
        let plan = Plan::new(
            &self.settings.algorithm,
            &key,
            self.settings.clock.now_micros(),
        );
        let around = plan.around();
        self.known.forget(&around);
        let mut command = vec!["DEL".to_owned()];
        command.extend(around);
        self.everywhere(command, false).await.map(drop)
    }

    /// Stores `limit` as the dynamic limit of this prefix in every region, or removes it for `None`;
    /// the first error if any region failed. Needs [`MultiRegionRatelimit::with_dynamic_limits`].
    pub async fn set_dynamic_limit(&self, limit: Option<u64>) -> Result<()> {
        let key = self.settings.enabled_limit_key()?.to_owned();
        let command = match limit {
            Some(limit) => {
                self.settings.algorithm.with_capacity(limit)?;
                vec!["SET".to_owned(), key, limit.to_string()]
            }
            None => vec!["DEL".to_owned(), key],
        };
        self.everywhere(command, false).await.map(drop)
    }

    /// The dynamic limit of this prefix as the first region to reply holds it. Needs
    /// [`MultiRegionRatelimit::with_dynamic_limits`].
    pub async fn dynamic_limit(&self) -> Result<Option<u64>> {
        let key = self.settings.enabled_limit_key()?;
        let reply = self
            .everywhere(vec!["GET".to_owned(), key.to_owned()], true)
            .await?;
        match &reply {
            Reply::Nil => Ok(None),
            Reply::Text(text) => match text.parse::<u64>() {
                Ok(limit) => Ok(Some(limit)),
                Err(_) => Err(Error::MalformedReply {
                    message: format!(
                        "the dynamic limit in {key} is not a whole number from 0: {}",
                        quote(text)
                    ),
                }),
            },
            _ => Err(Error::MalformedReply {
                message: format!("GET {key} returned {reply}"),
            }),
        }
    }

    /// Decides `cost` on `key` at `now` in every region at once: the decision of the first region to
    /// reply, checked by the pure algorithm, and the [`Pending`] merge; the errors' verdict when no
    /// region replies (a timeout if they all timed out, else the first error).
    fn decide<'a>(
        &'a self,
        key: &'a str,
        cost: Cost,
        now: u64,
    ) -> BoxFuture<'a, Result<(Decision, Pending)>> {
        Box::pin(async move {
            let rule = self.settings.algorithm;
            let plan = Arc::new(Plan::new(&rule, key, now));
            let id: Arc<str> = state::field(&rule, now, &request_id()?).into();
            let seen = self.known.get(&plan.keys[0]);
            let mut flight = Flight::new();
            let read_first = self.settings.key_layout == KeyLayout::Cluster;
            for (index, region) in self.regions.iter().enumerate() {
                let (region, plan, id) = (Arc::clone(region), Arc::clone(&plan), Arc::clone(&id));
                let limit_key = self.settings.limit_key().map(str::to_owned);
                let clock = Arc::clone(&self.settings.clock);
                let elapsed = move || Duration::from_micros(clock.now_micros().saturating_sub(now));
                flight.push(
                    index,
                    Box::pin(async move {
                        let decided = async {
                            // A script on a Redis Cluster cannot reach the dynamic limit: read it
                            // first, in this region, and decide with it as the capacity.
                            let (rule, limit_key) = match limit_key.as_deref() {
                                Some(limit_key) if read_first => {
                                    (region::dynamic_rule(&region, rule, limit_key).await?, None)
                                }
                                limit_key => (rule, limit_key),
                            };
                            region::decide(
                                &region, &rule, &plan, now, &id, cost, limit_key, &elapsed,
                            )
                            .await
                        }
                        .await;
                        Event::Decided(decided)
                    }),
                );
            }

            let mut merge = Merge::new(self.regions.len(), plan.keys.len());
            let mut failure: Option<Error> = None;
            let mut answer = None;
            while let Some((index, event)) = flight.next().await {
                match event {
                    Event::Decided(Ok(decided)) => {
                        let region = (index, &decided);
                        heard(
                            &mut merge,
                            &self.known,
                            &mut flight,
                            &self.regions,
                            &plan,
                            region,
                            &id,
                        );
                        answer = Some(decided);
                        break;
                    }
                    Event::Decided(Err(error)) => failure = Some(worse(failure, error)),
                    Event::Replied(_) => {}
                }
            }
            let Some(decided) = answer else {
                return Err(failure.unwrap_or_else(no_region));
            };
            let decision = self.decision(&decided, &plan, cost, seen.as_deref())?;
            let (regions, known) = (self.regions.clone(), Arc::clone(&self.known));
            let pending: Pending = Box::pin(async move {
                while let Some((index, event)) = flight.next().await {
                    if let Event::Decided(Ok(decided)) = event {
                        let region = (index, &decided);
                        heard(
                            &mut merge,
                            &known,
                            &mut flight,
                            &regions,
                            &plan,
                            region,
                            &id,
                        );
                    }
                }
            });
            Ok((decision, pending))
        })
    }

    /// Runs `command` in every region at once: with `first`, the first success (or the first error
    /// if every region failed); without, once all have replied, the first error if any failed.
    fn everywhere(&self, command: Vec<String>, first: bool) -> BoxFuture<'_, Result<Reply>> {
        Box::pin(async move {
            let command: Arc<[String]> = command.into();
            let mut flight = Flight::new();
            for (index, region) in self.regions.iter().enumerate() {
                let (region, command) = (Arc::clone(region), Arc::clone(&command));
                flight.push(
                    index,
                    Box::pin(async move {
                        let command: Vec<&str> = command.iter().map(String::as_str).collect();
                        Event::Replied(region.command(&command).await)
                    }),
                );
            }
            let mut failure = None;
            let mut success = None;
            while let Some((_, event)) = flight.next().await {
                match event {
                    Event::Replied(Ok(reply)) if first => return Ok(reply),
                    Event::Replied(Ok(reply)) => success = Some(reply),
                    Event::Replied(Err(error)) => {
                        failure.get_or_insert(error);
                    }
                    Event::Decided(_) => {}
                }
            }
            match (failure, success) {
                (Some(error), _) => Err(error),
                (None, Some(reply)) => Ok(reply),
                (None, None) => Err(no_region()),
            }
        })
    }

    /// The pure algorithm's decision on what a region held, checked against the region's own; then,
    /// if the region admitted the request, the decision on that together with what this limit has
    /// `seen` of the same hashes, which may deny it (the region has recorded it: it is counted,
    /// erring on the side of admitting less).
    fn decision(
        &self,
        decided: &Decided,
        plan: &Plan,
        cost: Cost,
        seen: Option<&[Ledger]>,
    ) -> Result<Decision> {
        let algorithm = self.settings.algorithm;
        let rule = if decided.limit == algorithm.capacity() {
            algorithm
        } else {
            let limit_key = self.settings.limit_key().unwrap_or("the dynamic limit");
            with_dynamic_capacity(algorithm, decided.limit, limit_key)?
        };
        let found = state::derived(&rule, plan.window, &decided.ledgers);
        let decision = rule.apply(found.as_ref(), decided.now, cost).decision;
        if decision.allowed != decided.allowed {
            return Err(Error::MalformedReply {
                message: format!(
                    "a region {} a request the {} algorithm {}",
                    if decided.allowed {
                        "admitted"
                    } else {
                        "denied"
                    },
                    rule.name(),
                    if decision.allowed { "admits" } else { "denies" },
                ),
            });
        }
        let Some(seen) = seen.filter(|_| decision.allowed) else {
            return Ok(decision);
        };
        let mut ledgers = decided.ledgers.clone();
        for (ledger, known) in ledgers.iter_mut().zip(seen) {
            ledger.merge(known);
        }
        let found = state::derived(&rule, plan.window, &ledgers);
        Ok(rule.apply(found.as_ref(), decided.now, cost).decision)
    }

    /// The base key of `identifier` (see [`Settings::write_key`]).
    fn key(&self, identifier: &str) -> Result<String> {
        let mut key = String::new();
        self.settings
            .write_key(identifier, SharedKeys::default(), &mut key)?;
        Ok(key)
    }
}

/// Takes in the decision `decided` of region `index` (request `id`): joins it to `merge`, learns the
/// union, and starts in `flight` the merge writes now due. One body for the answer and the pending
/// merge, which both hear regions.
#[inline(never)]
fn heard<T: Transport + 'static>(
    merge: &mut Merge,
    known: &Known,
    flight: &mut Flight<Event>,
    regions: &[Arc<RestClient<T>>],
    plan: &Arc<Plan>,
    (index, decided): (usize, &Decided),
    id: &str,
) {
    let due = merge.heard(index, held(decided, id));
    known.learn(&plan.keys[0], merge.union());
    for delta in due {
        push_write(flight, regions, plan, delta);
    }
}

/// Starts the merge write `delta` in `flight`; a failed write is made good by later requests' merges.
fn push_write<T: Transport + 'static>(
    flight: &mut Flight<Event>,
    regions: &[Arc<RestClient<T>>],
    plan: &Arc<Plan>,
    delta: Delta,
) {
    let Some(region) = regions.get(delta.region) else {
        return;
    };
    let (region, plan) = (Arc::clone(region), Arc::clone(plan));
    flight.push(
        delta.region,
        Box::pin(async move {
            let Some(key) = plan.keys.get(delta.window) else {
                return Event::Replied(Ok(Reply::Nil));
            };
            Event::Replied(region::merge(&region, key, plan.ttl_ms(), &delta.ledger).await)
        }),
    );
}

/// The error a decision that no region made answers with: one that is no outage (corrupt state, a
/// refused request) over any outage, so that the fail mode never hides it; among outages, a timeout
/// only if every region timed out.
fn worse(failure: Option<Error>, error: Error) -> Error {
    match failure {
        None => error,
        Some(failure) if !failure.is_outage() => failure,
        Some(_) if !error.is_outage() => error,
        Some(Error::Timeout { .. }) => error,
        Some(failure) => failure,
    }
}

/// What a region holds after deciding: its windows as read, plus the request if it admitted it, at
/// the cost its script recorded (a refund at most what was used, never below empty).
fn held(decided: &Decided, id: &str) -> Vec<Ledger> {
    let mut ledgers = decided.ledgers.clone();
    if let Some(current) = ledgers.first_mut().filter(|_| decided.recorded != 0.0) {
        current.insert(id, decided.recorded);
    }
    ledgers
}

/// Pending work that is already done.
fn settled() -> Pending {
    Box::pin(std::future::ready(()))
}

/// The error of a limit without regions, which [`MultiRegionRatelimit::new`] refuses.
fn no_region() -> Error {
    Error::Unsupported {
        what: "a limit without regions".to_owned(),
    }
}

/// A request id: 16 random bytes from the platform (`crypto.getRandomValues` on wasm), in hex.
fn request_id() -> Result<String> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|_| Error::Unsupported {
        what: "randomness for request ids (getrandom failed)".to_owned(),
    })?;
    let mut id = String::with_capacity(32);
    for byte in bytes {
        id.push(char::from(HEX[usize::from(byte >> 4)]));
        id.push(char::from(HEX[usize::from(byte & 15)]));
    }
    Ok(id)
}
