//! Leases (see `ratelimit::lease` for the design): what an [`Ask`](super::Ask) with a lease asks
//! ([`Renewal`], [`With::Lease`](super::With::Lease)), and [`LeaseBackend`], the rest of a store that
//! can lease units of a limit to one caller, reached through
//! [`Backend::leases`](super::Backend::leases).

use crate::algorithm::Algorithm;
use crate::error::Result;
use crate::maybe_send::{BoxFuture, MaybeSendSync};
use std::time::Duration;

/// Leases a holder closes with a call: the units it gives back (the ones it did not spend) and the
/// ids of the leases they come from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Closing {
    /// The unused units, given back.
    pub units: f64,
    /// The leases closed.
    pub ids: Vec<Box<str>>,
}

/// What a decision with a lease asks besides the decision ([`With::Lease`](super::With::Lease)): it
/// closes the leases of `closing` first, giving back to the key's limit at most the units each of them
/// took (nothing for a lease the ledger no longer holds: dropped after it ended, or voided by a
/// reset); then decides and, when the request is admitted, takes up to `want` whole units more in the
/// same step (as many as [`Algorithm::lease_room`] allows), counted as used for everyone and recorded
/// in the ledger for `ttl` at most ([`Verdict::Leased`](super::Verdict::Leased)). A cost of 0 only
/// closes.
///
/// A window algorithm's units go back to the window that counted them, never to a later one; the
/// token bucket's and GCRA's go back to the bucket as it is now, never above full.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Renewal {
    /// Up to how many whole units to reserve for a new lease (0: none).
    pub want: u64,
    /// How long a lease lasts at most.
    pub ttl: Duration,
    /// The leases closed first.
    pub closing: Closing,
}

/// What a store that leases offers besides its decisions, which take [`Renewal`]s. Every call is
/// atomic per key, as [`Backend::decide`](super::Backend::decide) is.
pub trait LeaseBackend: MaybeSendSync {
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
