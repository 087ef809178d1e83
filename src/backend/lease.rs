//! [`LeaseBackend`]: a store that can lease units of a limit to one caller (see
//! `ratelimit::lease` for the design), reached through [`Backend::leases`](super::Backend::leases).

use super::Outcome;
use crate::algorithm::{Algorithm, Cost};
use crate::error::Result;
use crate::maybe_send::{BoxFuture, MaybeSendSync};
use std::time::Duration;

/// A decision that also reserved units for a lease.
#[derive(Debug, Clone, PartialEq)]
pub struct Leased {
    /// The decision on the request, counting the leased units as used.
    pub outcome: Outcome,
    /// The whole units reserved besides the request's cost (0 when denied or nothing is left).
    pub units: u64,
    /// The lease's id in the store's ledger (empty when no unit was reserved).
    pub id: Box<str>,
}

/// Leases a holder closes with a call: the units it gives back (the ones it did not spend) and the
/// ids of the leases they come from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Closing {
    /// The unused units, given back.
    pub units: f64,
    /// The leases closed.
    pub ids: Vec<Box<str>>,
}

/// What a call of [`LeaseBackend::decide_leasing`] asks besides the decision.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Renewal {
    /// Up to how many whole units to reserve for a new lease (0: none).
    pub want: u64,
    /// How long a lease lasts at most.
    pub ttl: Duration,
    /// The leases closed first.
    pub closing: Closing,
}

/// A store whose decisions can reserve units for a lease, and take unused ones back, keeping a ledger
/// of the leases out. Every call is atomic per key, as [`Backend::decide`](super::Backend::decide) is.
pub trait LeaseBackend: MaybeSendSync {
    /// Closes the leases of `renewal.closing`, giving back to `key`'s limit at most the units each
    /// of them took (nothing for a lease the ledger no longer holds: dropped after it ended, or
    /// voided by a reset); then decides a request of `cost` on `key` as
    /// [`Backend::decide`](super::Backend::decide) does and, when it is admitted, takes up to
    /// `renewal.want` whole units more in the same step (as many as [`Algorithm::lease_room`]
    /// allows), counted as used for everyone and recorded in the ledger for `renewal.ttl` at most.
    /// A cost of 0 only closes.
    ///
    /// A window algorithm's units go back to the window that counted them, never to a later one; the
    /// token bucket's and GCRA's go back to the bucket as it is now, never above full.
    fn decide_leasing<'a>(
        &'a self,
        key: &'a str,
        cost: Cost,
        params: Algorithm,
        limit_key: Option<&'a str>,
        renewal: &'a Renewal,
    ) -> BoxFuture<'a, Result<Leased>>;

    /// Forgets what `key` used, except the units of live leases other than `voided` (whose holder
    /// drops them): the fresh state counts those, since their holders may still spend them.
    fn reset_leases<'a>(
        &'a self,
        key: &'a str,
        params: Algorithm,
        limit_key: Option<&'a str>,
        ttl: Duration,
        voided: &'a [Box<str>],
    ) -> BoxFuture<'a, Result<()>>;
}
