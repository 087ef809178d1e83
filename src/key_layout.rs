//! `KeyLayout`: how an identifier becomes its keys in Redis.
//!
//! Every key of an identifier starts with its base key: the windows are `<base>:<window>`, the token
//! bucket is `<base>`, GCRA is `<base>:gcra`, and the multi-region buckets are `<base>:bucket:<epoch>`.
//! On a Redis Cluster, a script's keys must share one hash slot; [`KeyLayout::Cluster`] wraps the
//! identifier in a hash tag (`{…}`), so that every key of one identifier hashes to one slot while
//! different identifiers spread over the masters. The keys shared by every identifier (the dynamic
//! limit, the deny list, the analytics events) cannot be in each identifier's slot, so that layout
//! refuses them ([`SharedKey`]).

use crate::error::{quote, Error, Result};

/// How an identifier becomes its keys in Redis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyLayout {
    /// `<prefix>:<identifier>`, the layout of `@upstash/ratelimit`: both libraries share one limit.
    /// On a Redis Cluster, scripts with keys in several slots (the sliding window's two windows, the
    /// dynamic limit's key) are refused with [`Error::CrossSlot`].
    #[default]
    Upstash,
    /// `<prefix>:{<identifier>}`: every key of an identifier in one hash slot of a Redis Cluster. Not
    /// shared with `@upstash/ratelimit`, so a fleet mixing both libraries must keep
    /// [`KeyLayout::Upstash`]. Refuses the keys shared by every identifier ([`SharedKey`]), and a key
    /// whose first braces hold nothing (the empty identifier, one starting with `}`, a prefix with
    /// `{}`), which Redis hashes whole.
    Cluster,
}

/// A key shared by every identifier of a prefix, which no identifier's hash slot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharedKey {
    /// The dynamic limit, `<prefix>:dynamic:global`.
    DynamicLimit,
    /// The deny list, `<prefix>:denyList:all`.
    DenyList,
    /// The analytics events, `<prefix>:events:<hour>`.
    Analytics,
}

impl SharedKey {
    /// Why the cluster layout cannot have it: the key's role, and the one-slot rule.
    pub fn reason(self) -> &'static str {
        match self {
            Self::DynamicLimit => "the dynamic limit is one key for every identifier, and a script on a Redis Cluster reaches one hash slot",
            Self::DenyList => "the deny list is one key for every identifier, and a script on a Redis Cluster reaches one hash slot",
            Self::Analytics => "the analytics events are one key for every identifier, and a script on a Redis Cluster reaches one hash slot",
        }
    }

    /// The feature's name in the Rust API.
    fn feature(self) -> &'static str {
        match self {
            Self::DynamicLimit => "dynamic limits",
            Self::DenyList => "protection (the deny list)",
            Self::Analytics => "analytics",
        }
    }
}

impl KeyLayout {
    /// The base key of `identifier` under `prefix`; with [`KeyLayout::Cluster`], a key whose hash
    /// tag would be empty is an error.
    pub fn key(self, prefix: &str, identifier: &str) -> Result<String> {
        let mut key = String::with_capacity(prefix.len() + 3 + identifier.len());
        key.push_str(prefix);
        key.push(':');
        match self {
            Self::Upstash => key.push_str(identifier),
            Self::Cluster => {
                key.push('{');
                key.push_str(identifier);
                key.push('}');
                // Redis's hash tag: from the first `{` to the next `}`; empty, the whole key counts.
                let open = key.find('{').unwrap_or_default();
                if key[open + 1..].starts_with('}') {
                    return Err(Error::InvalidParameter {
                        algorithm: "cluster key layout",
                        name: "identifier",
                        value: quote(identifier),
                        reason: "must not leave the key's hash tag empty (`{}`, as an empty identifier, one starting with `}` or a prefix holding `{}` do): Redis would hash the whole key",
                    });
                }
            }
        }
        Ok(key)
    }

    /// Whether this layout can have `shared`, enabled when `enabled`: an error for the cluster layout.
    pub fn allow(self, shared: SharedKey, enabled: bool) -> Result<()> {
        if enabled && self == Self::Cluster {
            return Err(Error::Unsupported {
                what: format!(
                    "the cluster key layout (`KeyLayout::Cluster`) with {} yet: {}",
                    shared.feature(),
                    shared.reason()
                ),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cluster_layout_wraps_the_identifier_in_a_hash_tag() {
        assert_eq!(KeyLayout::Upstash.key("p", "u:1").unwrap(), "p:u:1");
        assert_eq!(KeyLayout::Upstash.key("p", "").unwrap(), "p:");
        assert_eq!(KeyLayout::Cluster.key("p", "u:1").unwrap(), "p:{u:1}");
        assert_eq!(KeyLayout::Cluster.key("p", "{x}").unwrap(), "p:{{x}}");
        assert_eq!(KeyLayout::Cluster.key("{p", "x").unwrap(), "{p:{x}");
        for (prefix, identifier) in [("p", ""), ("p", "}{"), ("p", "}"), ("a{}", "x")] {
            let error = KeyLayout::Cluster.key(prefix, identifier).unwrap_err();
            assert!(matches!(error, Error::InvalidParameter { .. }), "{error}");
        }
    }

    #[test]
    fn the_cluster_layout_refuses_keys_shared_by_every_identifier() {
        for shared in [
            SharedKey::DynamicLimit,
            SharedKey::DenyList,
            SharedKey::Analytics,
        ] {
            assert_eq!(KeyLayout::Upstash.allow(shared, true), Ok(()));
            assert_eq!(KeyLayout::Cluster.allow(shared, false), Ok(()));
            let error = KeyLayout::Cluster.allow(shared, true).unwrap_err();
            assert!(error.to_string().contains(shared.reason()), "{error}");
            assert!(error.is_invalid_input());
        }
    }
}
