//! What a limiter answers about one request.

use std::time::Duration;

/// The outcome of one `acquire`: whether it was admitted and what is left.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decision {
    /// Whether the request was admitted (and its cost consumed).
    pub allowed: bool,
    /// The most the limit admits at once (requests per window, bucket size or burst).
    pub limit: u64,
    /// What is left after this request; never negative.
    pub remaining: f64,
    /// When the limit is next fully or partly restored, in milliseconds since the Unix epoch
    /// (the window's end, the next refill, or the moment the GCRA bucket is empty again).
    pub reset: u64,
    /// How long until the same cost would be admitted: zero when `allowed`, `None` when never
    /// (the cost exceeds the limit's capacity).
    pub retry_after: Option<Duration>,
}
