//! The shell both limits are built from: [`Settings`] (the algorithm, prefix, key layout, ephemeral
//! cache, dynamic limits, fail mode and clock, with the identifier and cost checks they imply) and
//! [`Configure`], the builder methods that set them on either limit.

use super::answer::{FailMode, Response};
use super::limits::{dynamic_limit_key, Member};
use super::EphemeralCache;
use crate::algorithm::{Algorithm, Cost, MAX_COUNT};
use crate::clock::{Clock, SystemClock};
use crate::error::{Error, Result};
use crate::identifier::SharedKeys;
use crate::key_layout::KeyLayout;
use std::sync::Arc;

/// The prefix `@upstash/ratelimit` uses, and so the default.
pub const DEFAULT_PREFIX: &str = "@upstash/ratelimit";

/// How many blocked identifiers the ephemeral cache keeps unless told otherwise.
pub const DEFAULT_CACHE_SIZE: usize = 10_000;

/// Everything a limit applies but its store: the same for [`Ratelimit`](super::Ratelimit) and the
/// multi-region limit. Set with [`Configure`]'s methods.
pub struct Settings {
    pub(crate) algorithm: Algorithm,
    prefix: String,
    pub(crate) key_layout: KeyLayout,
    /// The ephemeral cache of blocked identifiers, if any.
    pub(crate) cache: Option<Arc<EphemeralCache>>,
    /// Where the dynamic limit is stored (`<prefix>:dynamic:global`), when dynamic limits are on.
    limit_key: Option<String>,
    pub(crate) fail_mode: FailMode,
    pub(crate) clock: Arc<dyn Clock>,
    /// Whether the first limit, `algorithm`, runs dry.
    pub(crate) dry_run: bool,
    /// The limits decided with the first, in order (see `limits.rs`).
    pub(crate) others: Vec<Member>,
}

impl Settings {
    /// `algorithm` with the default prefix and key layout, an ephemeral cache of
    /// [`DEFAULT_CACHE_SIZE`] identifiers, no dynamic limits, failing open, on the system clock.
    pub(crate) fn new(algorithm: Algorithm) -> Self {
        Self {
            algorithm,
            prefix: DEFAULT_PREFIX.to_owned(),
            key_layout: KeyLayout::Upstash,
            cache: Some(Arc::new(EphemeralCache::new(DEFAULT_CACHE_SIZE))),
            limit_key: None,
            fail_mode: FailMode::Open,
            clock: Arc::new(SystemClock),
            dry_run: false,
            others: Vec::new(),
        }
    }

    /// Keys start with `prefix`; so does the dynamic limit's, when on, and those of the other limits
    /// that have no prefix of their own.
    pub(crate) fn set_prefix(&mut self, prefix: String) {
        self.prefix = prefix;
        self.set_dynamic_limits(self.limit_key.is_some());
    }

    /// Dynamic limits on or off, for every limit.
    pub(crate) fn set_dynamic_limits(&mut self, enabled: bool) {
        self.limit_key = enabled.then(|| dynamic_limit_key(&self.prefix));
        for (index, member) in self.others.iter_mut().enumerate() {
            member.placed(index + 1, &self.prefix, enabled);
        }
    }

    /// Every limit's rule and prefix, the first's first.
    pub(crate) fn limits(&self) -> impl Iterator<Item = (&Algorithm, &str)> + Clone {
        let first = (&self.algorithm, self.prefix.as_str());
        let others = (self.others.iter()).map(|member| (&member.rule, member.prefix.as_str()));
        std::iter::once(first).chain(others)
    }

    /// Whether a limit runs dry.
    pub(crate) fn runs_dry(&self) -> bool {
        self.dry_run || self.others.iter().any(|member| member.dry_run)
    }

    /// Whether every limit runs dry.
    pub(crate) fn every_limit_runs_dry(&self) -> bool {
        self.dry_run && self.others.iter().all(|member| member.dry_run)
    }

    /// The prefix of every key.
    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Where the dynamic limit is stored, when dynamic limits are on.
    pub(crate) fn limit_key(&self) -> Option<&str> {
        self.limit_key.as_deref()
    }

    /// Where the dynamic limit is stored, or an error saying dynamic limits are off.
    pub(crate) fn enabled_limit_key(&self) -> Result<&str> {
        self.limit_key().ok_or_else(|| Error::Unsupported {
            what: "dynamic limits are not enabled for this limit".to_owned(),
        })
    }

    /// Writes the base key of `identifier` into `key`, replacing what it held (its allocation is
    /// reused): `<prefix>:<identifier>` (an empty identifier is a key too, `<prefix>:`, as the peer
    /// makes it) or `<prefix>:{<identifier>}` in the cluster layout. An identifier too long, or one
    /// that would reach a key `protected` or the dynamic limit share between every identifier, is
    /// refused.
    pub(crate) fn write_key(
        &self,
        identifier: &str,
        protected: SharedKeys,
        key: &mut String,
    ) -> Result<()> {
        self.shared_keys(protected).check(identifier)?;
        self.key_layout.write_key(&self.prefix, identifier, key)
    }

    /// Writes what every base key of this limit starts with into `key` ([`KeyLayout::write_head`]).
    pub(crate) fn write_key_head(&self, key: &mut String) {
        self.key_layout.write_head(&self.prefix, key);
    }

    /// [`Settings::write_key`] for a `key` holding its head ([`Settings::write_key_head`], its first
    /// `head` bytes) and then the identifier: the identifier checked and the key ended; `None` when
    /// `head` does not end at a character of `key`.
    pub(crate) fn end_key(
        &self,
        key: &mut String,
        head: usize,
        protected: SharedKeys,
    ) -> Option<Result<()>> {
        let identifier = key.get(head..)?;
        Some(
            self.shared_keys(protected)
                .check(identifier)
                .and_then(|()| self.key_layout.end_key(key, head)),
        )
    }

    /// The keys `protected` and the dynamic limit share between every identifier.
    fn shared_keys(&self, protected: SharedKeys) -> SharedKeys {
        SharedKeys {
            dynamic_limit: self.limit_key.is_some(),
            ..protected
        }
    }

    /// `rate` checked once, as the cost every step after takes: at most 2^53 - 1 in size, and what
    /// the algorithm accepts.
    pub(crate) fn cost(&self, rate: f64) -> Result<Cost> {
        if rate.is_finite() && rate.abs() > MAX_COUNT as f64 {
            return Err(Error::InvalidCost {
                algorithm: self.algorithm.name(),
                cost: rate,
                reason: "must be at most 2^53 - 1 in size",
            });
        }
        self.algorithm.cost(rate)
    }

    /// The fail mode's answer to `error` at `now_ms` when it is an outage ([`Error::is_outage`]);
    /// any other error is returned as it is, so that the fail mode never answers for one.
    pub(crate) fn failed(&self, error: Error, now_ms: u64) -> Result<Response> {
        if !error.is_outage() {
            return Err(error);
        }
        Ok(Response::failed(
            self.fail_mode,
            self.algorithm.capacity(),
            &error,
            now_ms,
        ))
    }
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

mod sealed {
    /// Reaches a limit's [`Settings`](super::Settings); only the crate's limits have them.
    pub trait HasSettings {
        fn settings(&self) -> &super::Settings;
        fn settings_mut(&mut self) -> &mut super::Settings;
    }
}

pub(crate) use sealed::HasSettings;

/// The settings every limit takes, as builder methods and accessors: implemented by
/// [`Ratelimit`](super::Ratelimit) and the multi-region limit (`use edgelimit::Configure;`).
pub trait Configure: HasSettings + Sized {
    /// The same limit with its keys laid out as `key_layout` says; with [`KeyLayout::Cluster`], the
    /// keys every identifier shares (dynamic limit, deny list, analytics) are reached by commands of
    /// their own (see there).
    fn with_key_layout(mut self, key_layout: KeyLayout) -> Self {
        self.settings_mut().key_layout = key_layout;
        self
    }

    /// The same limit with keys `<prefix>:<identifier>…`.
    fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.settings_mut().set_prefix(prefix.into());
        self
    }

    /// The same limit with an ephemeral cache of up to `max_entries` blocked identifiers (at least 1),
    /// or none for `None`.
    fn with_ephemeral_cache(mut self, max_entries: Option<usize>) -> Self {
        self.settings_mut().cache = max_entries.map(|max| Arc::new(EphemeralCache::new(max)));
        self
    }

    /// The same limit sharing `cache` (with other limits given the same one).
    fn with_shared_ephemeral_cache(mut self, cache: Arc<EphemeralCache>) -> Self {
        self.settings_mut().cache = Some(cache);
        self
    }

    /// The same limit with dynamic limits on or off: when on, a limit stored under
    /// `<prefix>:dynamic:global` (shared with `@upstash/ratelimit`) replaces the algorithm's capacity
    /// for every identifier. With [`KeyLayout::Cluster`], it is read before each decision: a second
    /// round trip.
    fn with_dynamic_limits(mut self, enabled: bool) -> Self {
        self.settings_mut().set_dynamic_limits(enabled);
        self
    }

    /// The same limit answering outages of the store as `fail_mode` says.
    fn with_fail_mode(mut self, fail_mode: FailMode) -> Self {
        self.settings_mut().fail_mode = fail_mode;
        self
    }

    /// The same limit reading the time from `clock`.
    fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.settings_mut().clock = Arc::new(clock);
        self
    }

    /// The algorithm applied.
    fn algorithm(&self) -> Algorithm {
        self.settings().algorithm
    }

    /// The prefix of every key.
    fn prefix(&self) -> &str {
        self.settings().prefix()
    }

    /// How the identifier goes into its keys.
    fn key_layout(&self) -> KeyLayout {
        self.settings().key_layout
    }

    /// The fail mode.
    fn fail_mode(&self) -> FailMode {
        self.settings().fail_mode
    }

    /// How many identifiers the ephemeral cache holds now.
    fn cached_blocks(&self) -> usize {
        self.settings()
            .cache
            .as_ref()
            .map_or(0, |cache| cache.len())
    }
}
