//! The crate's one error type.

/// Everything that can go wrong in edgelimit, as variants a caller can act on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// A duration string or number that is not a positive whole number of milliseconds.
    #[error("invalid duration {}: {reason}", quote(.input))]
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
    #[error("invalid cost {} for {algorithm}: {reason}", crate::number::decimal(*.cost))]
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
        crate::number::decimal(*.cost)
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
    #[error(
        "no reply within {} ms",
        u64::try_from(after.as_millis()).unwrap_or(u64::MAX)
    )]
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
    /// A Redis Cluster refused a script or command whose keys are in several hash slots (`CROSSSLOT`):
    /// the limit needs the cluster key layout. A misconfiguration, so the fail mode does not answer it.
    #[error(
        "redis error: {message} (on a Redis Cluster, use the cluster key layout: `keys: \"cluster\"` in JavaScript, `KeyLayout::Cluster` in Rust)"
    )]
    CrossSlot {
        /// Redis's error message (`CROSSSLOT Keys in request don't hash to the same slot`).
        message: String,
    },
    /// The operation needs something this limit or store does not offer (say, dynamic limits not
    /// enabled).
    #[error("unsupported: {what}")]
    Unsupported {
        /// What was asked and is missing.
        what: String,
    },
    /// The reply was not what the protocol or the script promises.
    #[error("malformed reply: {message}")]
    MalformedReply {
        /// What was wrong with it.
        message: String,
    },
}

impl Error {
    /// Whether the caller's input or configuration caused this error (a bad duration, parameter or
    /// cost, an unsupported operation, a key layout the Redis Cluster refuses), as opposed to the store
    /// or the network failing.
    pub fn is_invalid_input(&self) -> bool {
        matches!(
            self,
            Self::InvalidDuration { .. }
                | Self::InvalidParameter { .. }
                | Self::InvalidCost { .. }
                | Self::CostExceedsCapacity { .. }
                | Self::Unsupported { .. }
                | Self::CrossSlot { .. }
        )
    }
}

/// `text` as a JSON string: in double quotes, with quotes, backslashes and control characters
/// escaped.
pub(crate) fn quote(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

/// `Result` with edgelimit's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_writes_a_json_string() {
        for (text, quoted) in [
            ("", r#""""#),
            ("10 s", r#""10 s""#),
            ("say \"hi\"\\n", r#""say \"hi\"\\n""#),
            ("é€😀", r#""é€😀""#),
            ("a\u{1b}[0m\n", r#""a\u001b[0m\n""#),
        ] {
            assert_eq!(quote(text), quoted);
        }
    }

    #[test]
    fn messages_name_and_quote_the_value() {
        let error = Error::InvalidDuration {
            input: "1 \"x\"".to_owned(),
            reason: "no",
        };
        assert_eq!(error.to_string(), "invalid duration \"1 \\\"x\\\"\": no");
        let timeout = Error::Timeout {
            after: std::time::Duration::from_millis(1_500),
        };
        assert_eq!(timeout.to_string(), "no reply within 1500 ms");
        let cost = Error::InvalidCost {
            algorithm: "fixed window",
            cost: 0.5,
            reason: "must be whole",
        };
        assert_eq!(
            cost.to_string(),
            "invalid cost 0.5 for fixed window: must be whole"
        );
        let too_large = Error::CostExceedsCapacity {
            cost: 11.0,
            capacity: 10,
        };
        assert_eq!(
            too_large.to_string(),
            "cost 11 exceeds the capacity 10: it can never be admitted"
        );
    }
}
