//! Leases: most decisions on a hot identifier answered with no round trip to Redis, and still never
//! one admission over the limit ([`Ratelimit::with_lease`](super::Ratelimit::with_lease)).
//!
//! # What a lease is
//!
//! A lease is a reservation that the algorithm's own state counts as used. When an identifier is hot,
//! the decision that goes to Redis anyway also takes up to `n` whole units more, in the same script
//! run (`ARGV[7]`, see `leased` in src/redis/scripts/prelude.lua), as many as the limit has left after
//! the request ([`Algorithm::lease_room`](crate::algorithm::Algorithm::lease_room)). This instance
//! then answers the next requests on that identifier from those units, as settled answers with no
//! request, until they are spent or the lease expires. Since the units were taken from the limit
//! before any of them is handed out, every instance, leasing or not, `@upstash/ratelimit` included,
//! sees them as used: the units admitted across a fleet never pass what the algorithm admits.
//!
//! Every lease is recorded in the identifier's ledger in Redis (src/redis/lease.rs: per lease id, its
//! units, its end and its window), and closed by its holder: by the call that renews it, by the next
//! decision on the identifier once it expired (either way in the same script call as that decision),
//! in [`Pending`](super::Pending) work when it cannot be kept, or all at once with
//! [`Ratelimit::return_leases`](super::Ratelimit::return_leases). A close gives back the units the
//! holder did not spend, at most what the ledger still records for the lease: the algorithm's refund,
//! which never makes a count negative nor a bucket more than full. A lease the ledger no longer holds
//! (voided by a reset, closed already, or dropped `ttl` after it ended) gives nothing back, so no close
//! ever creates units.

//! # Per algorithm
//!
//! - **Fixed window**: the units are an `INCRBY` of the window's counter (the peer's key). A lease
//!   expires at the end of the window it was taken in, at the latest, so a unit is only ever spent in
//!   the window that counted it. A return refunds that window's counter (the ledger keeps the
//!   lease's window), never a later one, whose count never held the units.
//! - **Sliding window**: the units are added to the current window's counter, as an admitted request
//!   is, and the lease expires with that window. Units counted in window `w` weigh on `w + 1` as its
//!   previous window; a return after `w` ended lowers that weight to what was truly admitted in `w`,
//!   which is what the weighting would have seen without the lease: sound too.
//! - **Token bucket** and **GCRA**: the units are tokens taken out of the bucket (the TAT moved
//!   forward by `n·T`). Every admitted unit is then a token the bucket held when it was taken, which
//!   is the bucket's invariant; the ttl bounds how late a taken token may be spent. A return is the
//!   refund, never above a full bucket. (A token spent up to `ttl` after it left the bucket can make
//!   a burst, measured at the moments of use, of the bucket plus what it refills in `ttl`; the count
//!   of tokens taken never passes what the bucket gives.)
//!
//! Leases are reserved by Redis only ([`LeaseBackend`](crate::backend::LeaseBackend)): the memory
//! store makes no round trip to save. They do not go with dynamic limits: a lease is spent with no
//! request, so it could not obey a pause or a lower limit set meanwhile, by any instance, before it
//! ends.
//!
//! # Expiry and truthful answers
//!
//! A lease expires `ttl` after the request that reserved it left, or at the end of its window if
//! that comes first (measured from the local time before the request, against the store's time of
//! the decision, so it never outlives the window even with Redis's clock): a unit reserved in a
//! window is never spent after it. The ledger records each lease's end on Redis's clock (`TIME`),
//! whatever clock decides, so that every instance judges alike which leases are live. An answer from a lease
//! says what this instance could still take: the lease's units left plus what the limit had left for
//! everyone when the lease was taken; `reset` is the reservation's. `get_remaining` asks Redis, where
//! every lease counts as used, and adds this instance's own unused units.
//!
//! # What leasing costs, bounded
//!
//! Units held by an instance that does not use them are refused to others until its lease is closed.
//! A lease holds at most `min(tokens, limit / MAX_SHARE)` units ([`most`]); a limit below
//! [`MIN_LEASED_LIMIT`] is never leased; an identifier is leased only once it has been decided twice
//! within `ttl` in this instance. Sizes adapt to the identifier's rate in this instance: the first
//! lease is an eighth of the most ([`first`]), each lease spent before it expired is followed by one
//! twice as large ([`grow`]), each that expired with units unused by one half as large ([`shrink`]).
//! So a lease holds at most twice what the instance spent of the previous one, or the first size:
//! an instance whose traffic stops withholds at most that, until its next decision on the
//! identifier closes the lease, or [`Ratelimit::return_leases`](super::Ratelimit::return_leases).
//!
//! An instance that dies holding a lease never closes it, and nobody else can: only the holder knew
//! how many of its units it had admitted, and giving back units it had spent would admit them twice.
//! So the ledger drops such a lease `ttl` after it ended without a refund, and its units come back
//! when the window ends (window algorithms) or as the bucket refills (token bucket, GCRA): at most one
//! lease per dead instance and identifier, never for good. (Returning them at the lease's end would
//! need what the holder spent, which it tells nobody without a request per decision.)
//!
//! # Resets
//!
//! `resetUsedTokens` forgets what an identifier used except the units other instances hold in live
//! leases, which they may still spend without asking Redis: the reset script (`lease_reset.lua`)
//! deletes the state and counts those units again, from the ledger, each in the window it was taken
//! in; live by Redis's clock, not the resetting instance's, so a reset by an instance whose clock
//! runs ahead forgets none. A ledger holding anything but whole numbers up to 2^53 - 1, or units
//! summing past that, is corrupt state to every call that reads it, and so is, to a GCRA reset, one
//! whose live units would move the arrival time past 2^53 - 1 microseconds: nothing is written. The resetting instance drops its
//! own lease on the identifier (its ids are voided in the ledger, not counted). So after a reset the
//! fleet still admits at most the limit; what the reset does not give back is, per live lease, the
//! units its holder had spent before the reset, until the lease is closed (then the units it spent
//! before the reset stay counted until the window ends or the bucket refills). Every reset by
//! edgelimit, leasing or not, keeps live leases counted; a reset by `@upstash/ratelimit` (or any
//! plain `DEL`) does not, and a fleet may then admit, beyond the limit, up to the units the holders
//! had not spent at that reset.

mod held;

pub(super) use held::{Leases, Taken};

use crate::algorithm::{Algorithm, Policy};
use crate::error::{Error, Result};
use std::time::Duration;

/// The largest share of a limit one lease holds: `limit / MAX_SHARE`.
pub const MAX_SHARE: u64 = 10;

/// The smallest limit leased: below it, a lease would hold under 2 units.
pub const MIN_LEASED_LIMIT: u64 = 2 * MAX_SHARE;

/// What [`Ratelimit::with_lease`](super::Ratelimit::with_lease) reserves: up to `tokens` units of a
/// hot identifier's limit for at most `ttl` (see the module documentation for the bound).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    /// The most units one lease holds (at least 1, at most the limit).
    pub tokens: u64,
    /// How long a lease lasts at most (a whole number of milliseconds, at most the algorithm's window).
    pub ttl: Duration,
}

impl Lease {
    /// The lease checked against `algorithm`: `tokens` from 1 to its limit, `ttl` a positive whole
    /// number of milliseconds no longer than its window ([`window_ms`]); else
    /// [`Error::InvalidParameter`] naming the field.
    pub(crate) fn checked(self, algorithm: &Algorithm) -> Result<Self> {
        let invalid = |name, value: String, reason| Error::InvalidParameter {
            algorithm: "lease",
            name,
            value,
            reason,
        };
        if self.tokens == 0 {
            return Err(invalid("tokens", "0".into(), "must be at least 1"));
        }
        if self.tokens > algorithm.capacity() {
            return Err(invalid(
                "tokens",
                self.tokens.to_string(),
                "must be at most the limit",
            ));
        }
        let ttl_ms = crate::algorithm::params::millis("lease", "ttl", self.ttl)?;
        if ttl_ms > window_ms(algorithm) {
            return Err(invalid(
                "ttl",
                format!("{ttl_ms}ms"),
                "must be at most the algorithm's window",
            ));
        }
        Ok(self)
    }
}

/// The algorithm's window in milliseconds, the longest a lease may last: the window of the window
/// algorithms, the time a token bucket takes to refill from empty, GCRA's period.
pub(crate) fn window_ms(algorithm: &Algorithm) -> u64 {
    match algorithm {
        Algorithm::FixedWindow(rule) => rule.window_ms(),
        Algorithm::SlidingWindow(rule) => rule.window_ms(),
        Algorithm::TokenBucket(rule) => rule
            .interval_ms()
            .saturating_mul(rule.capacity().div_ceil(rule.refill_rate())),
        Algorithm::Gcra(rule) => rule.period_ms(),
    }
}

/// The most units one lease of `tokens` holds under a limit of `capacity`: `tokens`, at most
/// `capacity / MAX_SHARE`; 0 (never leased) below [`MIN_LEASED_LIMIT`].
pub fn most(tokens: u64, capacity: u64) -> u64 {
    if capacity < MIN_LEASED_LIMIT {
        return 0;
    }
    tokens.min(capacity / MAX_SHARE)
}

/// The share of [`most`] the first lease of a key asks for: `most / FIRST_SHARE`, rounded up.
pub const FIRST_SHARE: u64 = 8;

/// The size of a key's first lease: an eighth of `most` (at least 1 when `most` is).
pub fn first(most: u64) -> u64 {
    most.div_ceil(FIRST_SHARE)
}

/// The size of the lease after one of `size` units that was spent before it expired: twice as many,
/// at most `most`.
pub fn grow(size: u64, most: u64) -> u64 {
    size.saturating_mul(2).max(first(most)).min(most)
}

/// The size of the lease after one of `size` units that expired with units unused: half as many, at
/// least 1.
pub fn shrink(size: u64) -> u64 {
    (size / 2).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::{FixedWindow, Gcra, SlidingWindow, TokenBucket};

    fn refused(lease: Lease, algorithm: Algorithm) -> (&'static str, String) {
        match lease.checked(&algorithm) {
            Err(Error::InvalidParameter {
                algorithm: "lease",
                name,
                value,
                ..
            }) => (name, value),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_leases_are_refused_naming_the_field() {
        let second = Duration::from_secs(1);
        let window: Algorithm = FixedWindow::new(100, second).unwrap().into();
        let lease = |tokens, ttl| Lease { tokens, ttl };
        assert_eq!(refused(lease(0, second), window).0, "tokens");
        assert_eq!(
            refused(lease(101, second), window),
            ("tokens", "101".into())
        );
        assert_eq!(refused(lease(10, Duration::ZERO), window).0, "ttl");
        assert_eq!(
            refused(lease(10, Duration::from_micros(1_500)), window).0,
            "ttl"
        );
        assert_eq!(
            refused(lease(10, Duration::from_millis(1_001)), window),
            ("ttl", "1001ms".into())
        );
        assert!(lease(100, second).checked(&window).is_ok());
        let sliding: Algorithm = SlidingWindow::new(100, second).unwrap().into();
        assert!(lease(10, second).checked(&sliding).is_ok());
        // A bucket of 100 refilled 10 per second is full again after 10 s; GCRA's period is 1 s.
        let bucket: Algorithm = TokenBucket::new(10, second, 100).unwrap().into();
        assert!(lease(10, Duration::from_secs(10)).checked(&bucket).is_ok());
        assert_eq!(
            refused(lease(10, Duration::from_millis(10_001)), bucket).0,
            "ttl"
        );
        let gcra: Algorithm = Gcra::new(100, second, 100).unwrap().into();
        assert_eq!(
            refused(lease(10, Duration::from_millis(1_001)), gcra).0,
            "ttl"
        );
    }

    #[test]
    fn a_lease_starts_at_an_eighth_of_its_most_and_doubles_up_to_it() {
        assert_eq!(most(20, 19), 0, "a small limit");
        assert_eq!(most(20, 20), 2, "a tenth of 20");
        assert_eq!(most(20, 1_000), 20, "the tokens");
        assert_eq!(most(500, 1_000), 100, "a tenth of 1000");
        assert_eq!(first(0), 0);
        assert_eq!(first(2), 1);
        assert_eq!(first(100), 13);
        assert_eq!(grow(13, 100), 26);
        assert_eq!(grow(80, 100), 100);
        assert_eq!(grow(0, 0), 0);
        assert_eq!(shrink(13), 6);
        assert_eq!(shrink(1), 1);
    }
}
