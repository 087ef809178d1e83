//! The crate's one error type.

/// Everything that can go wrong in edgelimit, as variants a caller can act on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// A duration string or number that is not a positive whole number of milliseconds.
    #[error("invalid duration {input:?}: {reason}")]
    InvalidDuration {
        /// The input exactly as given.
        input: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// An algorithm parameter out of range (zero, too large, ...).
    #[error("invalid {algorithm} parameter `{name}` = {value}: {reason}")]
    InvalidParameter {
        /// The algorithm the parameter belongs to.
        algorithm: &'static str,
        /// The parameter's name.
        name: &'static str,
        /// The refused value, formatted.
        value: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// A cost the algorithm cannot take (NaN, infinite, fractional for a window algorithm).
    #[error("invalid cost {} for {algorithm}: {reason}", crate::number::format_f64(*.cost))]
    InvalidCost {
        /// The algorithm that refused it.
        algorithm: &'static str,
        /// The refused cost.
        cost: f64,
        /// Why it was refused.
        reason: &'static str,
    },
    /// A cost larger than the limit's capacity: it can never be admitted.
    #[error(
        "cost {} exceeds the capacity {capacity}: it can never be admitted",
        crate::number::format_f64(*.cost)
    )]
    CostExceedsCapacity {
        /// The requested cost.
        cost: f64,
        /// The most the limit can ever admit at once.
        capacity: u64,
    },
    /// The server could not be reached, or the connection failed before a reply.
    #[error("network error: {message}")]
    Network {
        /// What the platform reported.
        message: String,
    },
    /// No reply within the configured timeout.
    #[error("no reply within {} ms", after.as_millis())]
    Timeout {
        /// The timeout that elapsed.
        after: std::time::Duration,
    },
    /// The server replied with an HTTP error (401 bad token, 5xx, ...).
    #[error("HTTP {status}: {message}")]
    Http {
        /// The HTTP status code.
        status: u16,
        /// The server's `error` field, or the body.
        message: String,
    },
    /// Redis answered the command with an error.
    #[error("redis error: {message}")]
    Redis {
        /// Redis's error message (`NOSCRIPT ...`, `WRONGTYPE ...`).
        message: String,
    },
    /// The reply was not what the protocol or the script promises.
    #[error("malformed reply: {message}")]
    MalformedReply {
        /// What was wrong with it.
        message: String,
    },
}

impl Error {
    /// Whether the caller's input caused this error (a bad duration, parameter or cost), as opposed to
    /// the store or the network failing.
    pub fn is_invalid_input(&self) -> bool {
        matches!(
            self,
            Self::InvalidDuration { .. }
                | Self::InvalidParameter { .. }
                | Self::InvalidCost { .. }
                | Self::CostExceedsCapacity { .. }
        )
    }
}

/// `Result` with edgelimit's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
