//! [`Outcome`]: what a store found on a key and decided.

use crate::algorithm::{Algorithm, State};
use crate::decision::Decision;

/// What [`Backend::decide`](super::Backend::decide) found on a key and decided.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    /// The store's time of the decision, in microseconds since the Unix epoch.
    pub now: u64,
    /// The key's state before the request (`None`: never seen, forgotten or expired).
    pub found: Option<State>,
    /// The algorithm applied: the one asked for, with the dynamic limit as its capacity if one applied.
    pub rule: Algorithm,
    /// The decision on the request.
    pub decision: Decision,
}
