//! [`LeaseBackend`]: a store that can lease units of a limit to one caller (see
//! `ratelimit::lease` for the design), reached through [`Backend::leases`](super::Backend::leases).

use super::Outcome;
use crate::algorithm::{Algorithm, Cost};
use crate::error::Result;
use crate::maybe_send::{BoxFuture, MaybeSendSync};

/// A decision that also reserved units for a lease.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Leased {
    /// The decision on the request, counting the leased units as used.
    pub outcome: Outcome,
    /// The whole units reserved besides the request's cost (0 when denied or nothing is left).
    pub units: u64,
}

/// A store whose decisions can reserve units for a lease, and take unused ones back. Both are
/// atomic per key, as [`Backend::decide`](super::Backend::decide) is.
pub trait LeaseBackend: MaybeSendSync {
    /// Decides a request of `cost` on `key` as [`Backend::decide`](super::Backend::decide) does and,
    /// when it is admitted, takes up to `want` whole units more in the same step (as many as
    /// [`Algorithm::lease_room`] allows), counted as used for everyone.
    fn decide_leasing<'a>(
        &'a self,
        key: &'a str,
        cost: Cost,
        want: u64,
        params: Algorithm,
        limit_key: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Leased>>;

    /// Gives `units` reserved by a lease back to `key`'s limit: for the window algorithms to the
    /// window holding `at` (the store's time of the reservation, µs), never to a later one (whose
    /// count never held them); for the token bucket and GCRA to the bucket as it is now, never above
    /// full. A count already below `units` (reset, expired) is emptied, never made negative.
    fn give_back<'a>(
        &'a self,
        key: &'a str,
        units: f64,
        params: Algorithm,
        limit_key: Option<&'a str>,
        at: u64,
    ) -> BoxFuture<'a, Result<()>>;
}
