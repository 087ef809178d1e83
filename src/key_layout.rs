//! `KeyLayout`: how an identifier becomes its keys in Redis.
//!
//! Every key of an identifier starts with its base key: the windows are `<base>:<window>`, the token
//! bucket is `<base>`, GCRA is `<base>:gcra`, and the multi-region buckets are `<base>:bucket:<epoch>`.
//! On a Redis Cluster, a script's keys must share one hash slot; [`KeyLayout::Cluster`] wraps the
//! identifier in a hash tag (`{…}`), so that every key of one identifier hashes to one slot while
//! different identifiers spread over the masters. The keys shared by every identifier (the dynamic
//! limit, the deny list, the analytics events) cannot be in each identifier's slot, so that layout
//! reaches them with commands of their own instead of inside the decision's script (see
//! [`KeyLayout::Cluster`]).

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
    /// [`KeyLayout::Upstash`]. Refuses a key whose first braces hold nothing (the empty identifier,
    /// one starting with `}`, a prefix with `{}`), which Redis hashes whole.
    ///
    /// The keys shared by every identifier are reached by commands beside the decision's script, as
    /// `@upstash/ratelimit` reaches them:
    /// - the deny list is checked by an `SMISMEMBER` sent with the script (the same `/pipeline`
    ///   request), so a denied request **is counted** by the limit, as the peer counts it (the default
    ///   layout denies it without counting);
    /// - the analytics event is written by a `ZINCRBY` in the pending work, once the answer is known;
    /// - the dynamic limit is read by a `GET` before the script, which applies it as its capacity
    ///   (by `MultiRegionRatelimit` in each region, before that region's script): on a cluster,
    ///   dynamic limits cost a second round trip.
    Cluster,
}

impl KeyLayout {
    /// The base key of `identifier` under `prefix`; with [`KeyLayout::Cluster`], a key whose hash
    /// tag would be empty is an error.
    pub fn key(self, prefix: &str, identifier: &str) -> Result<String> {
        let mut key = String::new();
        self.write_key(prefix, identifier, &mut key)?;
        Ok(key)
    }

    /// Writes `<prefix>:<identifier>`, or `<prefix>:{<identifier>}` in the cluster layout, into `key`,
    /// replacing what it held. An identifier that leaves the cluster layout's hash tag empty is refused.
    pub fn write_key(self, prefix: &str, identifier: &str, key: &mut String) -> Result<()> {
        key.clear();
        key.reserve(prefix.len() + identifier.len() + 3);
        self.write_head(prefix, key);
        let head = key.len();
        key.push_str(identifier);
        self.end_key(key, head)
    }

    /// Writes what every key of `prefix` starts with into `key`, replacing what it held: `<prefix>:`,
    /// or `<prefix>:{` in the cluster layout.
    pub fn write_head(self, prefix: &str, key: &mut String) {
        key.clear();
        key.push_str(prefix);
        key.push_str(match self {
            Self::Upstash => ":",
            Self::Cluster => ":{",
        });
    }

    /// Ends a `key` written as its head ([`KeyLayout::write_head`], its first `head` bytes) and then
    /// an identifier, as [`KeyLayout::write_key`] does.
    #[inline]
    pub fn end_key(self, key: &mut String, head: usize) -> Result<()> {
        if self == Self::Upstash {
            return Ok(());
        }
        key.push('}');
        // Redis's hash tag: from the first `{` to the next `}`; empty, the whole key counts.
        let open = key.find('{').unwrap_or_default();
        if key.as_bytes().get(open + 1) == Some(&b'}') {
            let identifier = key.get(head..key.len() - 1).unwrap_or_default();
            return Err(Error::InvalidParameter {
                algorithm: "cluster key layout",
                name: "identifier",
                value: quote(identifier),
                reason: "must not leave the key's hash tag empty (`{}`, as an empty identifier, one starting with `}` or a prefix holding `{}` do): Redis would hash the whole key",
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
}
