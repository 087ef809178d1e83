//! [`Ask`]: one decision asked of a store, built once by the limit that asks it; [`Decided`], the
//! store's answer, given at once by a store in this process and later by one over the network; and
//! [`Verdict`], what it holds.

use super::{Guard, Outcome, Renewal, Set};
use crate::algorithm::{Algorithm, Cost};
use crate::error::{Error, Result};
use crate::now_or_later::NowOrLater;

/// One decision asked of a store: the key, the checked cost, the rule, the dynamic limit's key and
/// the time of the asking limit's one clock, and what the store does besides deciding.
#[derive(Debug, Clone, Copy)]
pub struct Ask<'a> {
    /// The key of the identifier's state.
    pub key: &'a str,
    /// The cost, checked for the rule ([`Cost::PEEK`] only reads).
    pub cost: Cost,
    /// The algorithm and its parameters.
    pub rule: Algorithm,
    /// Where the dynamic limit that replaces the rule's capacity is stored, when dynamic limits are on.
    pub limit_key: Option<&'a str>,
    /// The time of the decision, µs since the Unix epoch, read once by the asking limit. A store that
    /// keeps its own time (Redis's `TIME`) decides at its own.
    pub now: u64,
    /// What the store does in the same atomic step as the decision.
    pub with: With<'a>,
}

/// What a store does beside a decision, in the same atomic step.
#[derive(Debug, Clone, Copy, Default)]
pub enum With<'a> {
    /// Nothing: the decision alone.
    #[default]
    Nothing,
    /// Looks values up in a deny list first and records an analytics event
    /// ([`ProtectedBackend`](super::ProtectedBackend)).
    Guard(Guard<'a>),
    /// Closes leases and reserves a new one ([`LeaseBackend`](super::LeaseBackend)).
    Lease(&'a Renewal),
    /// Decides other limits with this one, all or nothing ([`Verdict::Set`]).
    Set(Set<'a>),
}

/// What a store answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The limit decided.
    Decided(Outcome),
    /// A guard's values were in the deny list (`true` for each one found, in the order sent): nothing
    /// was counted or recorded.
    Denied(Vec<bool>),
    /// The limit decided, but the guard's analytics event could not be recorded (the error says why):
    /// the decision stands, as a side effect never decides.
    Unrecorded(Outcome, Error),
    /// The limit decided and reserved `units` whole units more for the lease `id` (none when denied
    /// or nothing was left; the id is then empty), counted as used.
    Leased {
        /// The decision, counting the leased units as used.
        outcome: Outcome,
        /// The units reserved besides the request's cost.
        units: u64,
        /// The lease's id in the store's ledger.
        id: Box<str>,
    },
    /// Each limit of a [`With::Set`] decided on its state, the ask's own first: what each found and
    /// decided alone. The states of those that admit were written if the set admits
    /// ([`super::set::admits`]), none otherwise.
    Set(Vec<Outcome>),
}

impl Verdict {
    /// The limit's decision (a set's first limit's), unless a deny list answered.
    pub fn outcome(&self) -> Option<&Outcome> {
        match self {
            Self::Decided(outcome) | Self::Unrecorded(outcome, _) => Some(outcome),
            Self::Leased { outcome, .. } => Some(outcome),
            Self::Set(outcomes) => outcomes.first(),
            Self::Denied(_) => None,
        }
    }

    /// The limit's decision of an [`Ask`] with nothing beside it, which a deny list cannot answer.
    pub fn into_outcome(self) -> Result<Outcome> {
        match self {
            Self::Decided(outcome) | Self::Unrecorded(outcome, _) => Ok(outcome),
            Self::Leased { outcome, .. } => Ok(outcome),
            Self::Denied(_) => Err(Error::MalformedReply {
                message: "a deny list answered a decision that checked none".to_owned(),
            }),
            Self::Set(_) => Err(Error::MalformedReply {
                message: "a set's decisions answered a decision of one limit".to_owned(),
            }),
        }
    }
}

/// A store's answer to an [`Ask`]: at once ([`NowOrLater::Now`]) from a store in this process, or
/// later from one over the network.
pub type Decided<'a> = NowOrLater<'a, Verdict>;
