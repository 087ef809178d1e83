//! The deny list of `@upstash/ratelimit`: its key, and the values it denies remembered for a while (as
//! the peer does, but bounded). The IP deny list, which the npm package writes with the peer's keys, is
//! one more set of values joined into it.

use crate::ratelimit::EphemeralCache;

/// How many denied values are remembered (the peer empties its cache past 1 000).
pub const DENIED_VALUES_CACHED: usize = 1_000;

/// How long a denied value is answered without asking Redis, as the peer: a minute.
const DENIED_FOR_MS: u64 = 60_000;

/// `<prefix>:denyList:all`: the set of every denied value, the one the Upstash console edits.
pub fn all_key(prefix: &str) -> String {
    format!("{prefix}:denyList:all")
}

/// The keys of the deny lists under `prefix`, as the peer names them: every denied value
/// ([`all_key`]), the IP deny list joined into it, and the IP deny list's status.
pub fn keys(prefix: &str) -> [String; 3] {
    [
        all_key(prefix),
        format!("{prefix}:denyList:ipDenyList"),
        format!("{prefix}:ipDenyListStatus"),
    ]
}

/// Values found in the deny list, answered locally for a minute; at most [`DENIED_VALUES_CACHED`].
#[derive(Debug)]
pub(crate) struct DeniedValues(EphemeralCache);

impl DeniedValues {
    pub fn new() -> Self {
        Self(EphemeralCache::new(DENIED_VALUES_CACHED))
    }

    /// The first of `values` known to be denied at `now_ms`, and its position.
    pub fn find(&self, values: &[String], now_ms: u64) -> Option<usize> {
        values
            .iter()
            .position(|value| self.0.blocked(value, 0.0, now_ms).is_some())
    }

    /// Remembers each of `values` that `found` says is denied; the position of the last one, the value
    /// the peer reports.
    pub fn remember(&self, values: &[String], found: &[bool], now_ms: u64) -> Option<usize> {
        let mut last = None;
        for (index, value) in values.iter().enumerate() {
            if found.get(index) == Some(&true) {
                self.0
                    .insert(value.clone(), 0.0, now_ms + DENIED_FOR_MS, 0, now_ms);
                last = Some(index);
            }
        }
        last
    }

    /// How many values it holds now.
    pub fn len(&self) -> usize {
        self.0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denied_values_are_remembered_for_a_minute_and_bounded() {
        let denied = DeniedValues::new();
        let values = ["id".to_owned(), "1.2.3.4".to_owned(), "ua".to_owned()];
        assert_eq!(denied.remember(&values, &[false, true, true], 0), Some(2));
        assert_eq!(denied.find(&values, 1), Some(1));
        assert_eq!(denied.find(&values[..1], 1), None);
        assert_eq!(denied.find(&values, 60_000), None);
        for value in 0..5_000 {
            denied.remember(&[value.to_string()], &[true], 100_000);
        }
        assert!(denied.len() <= DENIED_VALUES_CACHED);
    }
}
