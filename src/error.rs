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
    /// The `fetch` that sends requests broke its contract: it threw instead of returning a Promise,
    /// resolved to something that is not a `Response`, or handed back a body already read. A
    /// programming error, not an outage: no fail mode answers it.
    #[error("{message}")]
    Fetch {
        /// Which `fetch` (the custom one or the global one) did what, and what it gave.
        message: String,
    },
    /// Requests cannot be sent as configured: the Redis of `Redis.fromEnv()` found an environment
    /// variable unset. A misconfiguration, not an outage: no fail mode answers it.
    #[error("{message}")]
    Unconfigured {
        /// What is missing, and where it was looked for.
        message: String,
    },
    /// The reply was not what the protocol or the script promises.
    #[error("malformed reply: {message}")]
    MalformedReply {
        /// What was wrong with it.
        message: String,
    },
    /// The state stored under `key` is not one the algorithm can read (a wrong type, junk, a number that
    /// is not finite or out of range, a missing field): never decided on, never written back. Fixing
    /// it takes `resetUsedTokens` or deleting the key.
    #[error("corrupt state in {}: {message}", quote(.key))]
    CorruptState {
        /// The key holding the state.
        key: String,
        /// What is wrong with it.
        message: String,
    },
    /// An identifier the limit refuses: not well-formed Unicode, or one whose keys would be those a
    /// feature shares between every identifier.
    #[error("invalid identifier {}: {reason}", quote_short(.identifier))]
    InvalidIdentifier {
        /// The identifier as given.
        identifier: String,
        /// Why it was refused.
        reason: String,
    },
    /// An identifier, or a value of a request (`ip`, `userAgent`, ...), longer than a limit takes
    /// ([`crate::MAX_IDENTIFIER_BYTES`]).
    #[error("`{field}` of {bytes} bytes: must be at most {max} bytes of UTF-8")]
    TooLong {
        /// What was too long (`identifier`, `ip`, ...).
        field: &'static str,
        /// Its length in bytes of UTF-8.
        bytes: usize,
        /// The most taken.
        max: usize,
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
                | Self::InvalidIdentifier { .. }
                | Self::TooLong { .. }
        )
    }

    /// Whether this error is an outage of the store, which the fail mode answers: no reply (network,
    /// timeout), an HTTP 5xx, an HTTP 429 (the database's own quota), or one of Redis's own replies of a
    /// server that cannot serve now (`LOADING`, `BUSY`, `OOM`, `READONLY`, `MASTERDOWN`, `CLUSTERDOWN`,
    /// `TRYAGAIN`). Anything else (another HTTP 4xx, any other Redis error, a malformed reply, corrupt
    /// state, bad input) is an error in either fail mode: admitting or denying everyone would hide it.
    pub fn is_outage(&self) -> bool {
        match self {
            Self::Network { .. } | Self::Timeout { .. } => true,
            Self::Http { status, .. } => *status >= 500 || *status == 429,
            Self::Redis { message } => {
                let code = message.split_ascii_whitespace().next().unwrap_or_default();
                OUTAGE_REPLIES.contains(&code)
            }
            _ => false,
        }
    }
}

/// The error codes of Redis replies that say the server cannot serve now, not that the request or the
/// data is wrong.
const OUTAGE_REPLIES: [&str; 7] = [
    "LOADING",
    "BUSY",
    "OOM",
    "READONLY",
    "MASTERDOWN",
    "CLUSTERDOWN",
    "TRYAGAIN",
];

/// [`quote`], cut to its first 80 characters for long text (an identifier may be 16 KiB).
fn quote_short(text: &str) -> String {
    match text.char_indices().nth(77) {
        Some((cut, _)) if text.chars().nth(80).is_some() => {
            quote(text.get(..cut).unwrap_or(text)) + "..."
        }
        _ => quote(text),
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
    fn only_outages_are_outages() {
        let http = |status| Error::Http {
            status,
            message: String::new(),
        };
        let redis = |message: &str| Error::Redis {
            message: message.to_owned(),
        };
        for outage in [
            Error::Network {
                message: "refused".to_owned(),
            },
            Error::Timeout {
                after: std::time::Duration::from_secs(1),
            },
            http(500),
            http(503),
            http(429),
            redis("LOADING Redis is loading the dataset in memory"),
            redis("BUSY Redis is busy running a script"),
            redis("OOM command not allowed when used memory > 'maxmemory'"),
            redis("READONLY You can't write against a read only replica."),
            redis("MASTERDOWN Link with MASTER is down"),
            redis("CLUSTERDOWN The cluster is down"),
            redis("TRYAGAIN Multiple keys request during rehashing of slot"),
        ] {
            assert!(outage.is_outage(), "{outage}");
        }
        for error in [
            http(400),
            http(401),
            http(403),
            http(413),
            redis("WRONGTYPE Operation against a key holding the wrong kind of value"),
            redis("ERR value is not an integer or out of range"),
            redis("NOSCRIPT No matching script"),
            redis("BUSYKEY Target key name already exists."),
            redis("LOADINGX"),
            Error::MalformedReply {
                message: "x".to_owned(),
            },
            Error::CorruptState {
                key: "k".to_owned(),
                message: "x".to_owned(),
            },
        ] {
            assert!(!error.is_outage(), "{error}");
        }
    }

    #[test]
    fn a_long_identifier_is_cut_in_messages() {
        let error = Error::InvalidIdentifier {
            identifier: "é".repeat(20_000),
            reason: "too long".to_owned(),
        };
        let message = error.to_string();
        assert!(message.len() < 200, "{message}");
        assert!(message.ends_with("...: too long"), "{message}");
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
