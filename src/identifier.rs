//! Which identifiers a limit takes. Identifiers usually come from clients (user names, API keys, paths),
//! so none may reach a key that every identifier shares, and each is bounded in length: one request to
//! Redis, with every feature on, always fits the 1 MiB body Upstash and the gateway accept.

use crate::error::{Error, Result};

/// The longest identifier taken, in bytes of UTF-8 (8 KiB). Its keys, its analytics event and its
/// deny-list lookup, escaped as JSON in the worst case, stay far below the 1 MiB of one request.
pub const MAX_IDENTIFIER_BYTES: usize = 8 * 1024;

/// The longest analytics event taken (the identifier and the request's geo fields as JSON), in bytes:
/// room for the longest identifier escaped as JSON at worst (`\u0001`: 6 bytes a byte), and 16 KiB of
/// geo fields.
pub(crate) const MAX_EVENT_BYTES: usize = 8 * MAX_IDENTIFIER_BYTES;

/// The keys under `<prefix>:` that the enabled features share between every identifier, by their
/// first name: an identifier equal to one of these names, or starting with it and `:`, would make its
/// own keys (`<prefix>:<identifier>`, `<prefix>:<identifier>:<window>`, ...) those shared keys.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SharedKeys {
    /// `<prefix>:dynamic:global`, the dynamic limit.
    pub dynamic_limit: bool,
    /// `<prefix>:denyList:all` (and `:denyList:ipDenyList`, `:ipDenyListStatus`), the deny lists.
    pub deny_list: bool,
    /// `<prefix>:events:<hour>`, the analytics events.
    pub analytics: bool,
}

impl SharedKeys {
    /// `identifier` if the limit takes it: at most [`MAX_IDENTIFIER_BYTES`], and none of the shared
    /// keys' names (see [`SharedKeys`]) in any key layout, so that one rule holds wherever a fleet
    /// moves.
    #[inline]
    pub fn check(self, identifier: &str) -> Result<()> {
        check_length("identifier", identifier)?;
        if self == Self::default() {
            return Ok(());
        }
        let features: [(bool, &[&str], &str); 3] = [
            (self.dynamic_limit, &["dynamic"], "dynamic limits"),
            (
                self.deny_list,
                &["denyList", "ipDenyListStatus"],
                "protection",
            ),
            (self.analytics, &["events"], "analytics"),
        ];
        for (enabled, names, feature) in features {
            if !enabled {
                continue;
            }
            let clash = names.iter().find(|name| {
                identifier
                    .strip_prefix(**name)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with(':'))
            });
            if let Some(name) = clash {
                return Err(Error::InvalidIdentifier {
                    identifier: identifier.to_owned(),
                    reason: format!(
                        "its keys would be `<prefix>:{name}:…`, which {feature} share between every identifier (with {feature} on, an identifier may not be `{name}` or start with `{name}:`)"
                    ),
                });
            }
        }
        Ok(())
    }
}

/// `value` of the request field `field` if it is at most [`MAX_IDENTIFIER_BYTES`] long, the bound of
/// everything a client chooses that goes into a request to Redis.
pub(crate) fn check_length(field: &'static str, value: &str) -> Result<()> {
    check_bytes(field, value, MAX_IDENTIFIER_BYTES)
}

/// `value` of `field` if it is at most `max` bytes long.
pub(crate) fn check_bytes(field: &'static str, value: &str, max: usize) -> Result<()> {
    if value.len() > max {
        return Err(Error::TooLong {
            field,
            bytes: value.len(),
            max,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: SharedKeys = SharedKeys {
        dynamic_limit: true,
        deny_list: true,
        analytics: true,
    };

    #[test]
    fn identifiers_that_would_reach_a_shared_key_are_refused() {
        for identifier in [
            "dynamic",
            "dynamic:global",
            "denyList",
            "denyList:all",
            "denyList:ipDenyList",
            "ipDenyListStatus",
            "events",
            "events:1700000000000",
        ] {
            let error = ALL.check(identifier).unwrap_err();
            assert!(matches!(error, Error::InvalidIdentifier { .. }), "{error}");
            assert!(error.to_string().contains("share between every identifier"));
        }
    }

    #[test]
    fn only_the_enabled_features_reserve_their_names() {
        let analytics_only = SharedKeys {
            analytics: true,
            ..SharedKeys::default()
        };
        assert!(analytics_only.check("dynamic:global").is_ok());
        assert!(analytics_only.check("denyList:all").is_ok());
        assert!(analytics_only.check("events:1").is_err());
        assert!(SharedKeys::default().check("events").is_ok());
    }

    #[test]
    fn names_that_only_look_alike_are_taken() {
        for identifier in [
            "",
            "dynamics",
            "dynamic-global",
            "user:dynamic:global",
            "Events",
            "eventsx:1",
            ":events",
            "denyListed",
        ] {
            assert_eq!(ALL.check(identifier), Ok(()), "{identifier:?}");
        }
    }

    #[test]
    fn identifiers_are_bounded_in_bytes() {
        assert_eq!(ALL.check(&"a".repeat(MAX_IDENTIFIER_BYTES)), Ok(()));
        assert_eq!(
            ALL.check(&"a".repeat(MAX_IDENTIFIER_BYTES + 1)),
            Err(Error::TooLong {
                field: "identifier",
                bytes: MAX_IDENTIFIER_BYTES + 1,
                max: MAX_IDENTIFIER_BYTES
            })
        );
        // Bytes, not characters: 2,731 three-byte characters are 8,193 bytes.
        assert!(ALL.check(&"€".repeat(2_731)).is_err());
    }
}
