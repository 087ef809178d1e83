//! The deny list of `@upstash/ratelimit`: its keys, the values it denies remembered for a while (as the
//! peer does, but bounded), and the IP deny list taken from the caller instead of downloaded.

use super::EphemeralCache;
use crate::error::{Error, Result};
use crate::redis::Reply;
use std::time::Duration;

/// How many denied values are remembered (the peer empties its cache past 1 000).
pub const DENIED_VALUES_CACHED: usize = 1_000;

/// How long a denied value is answered without asking Redis, as the peer: a minute.
const DENIED_FOR_MS: u64 = 60_000;

/// The score an IP must have to be denied when the caller's list carries scores, unless told
/// otherwise: the peer's default `denyListThreshold`.
pub const DEFAULT_THRESHOLD: f64 = 6.0;

/// The peer's range of `denyListThreshold`.
pub const THRESHOLDS: std::ops::RangeInclusive<f64> = 1.0..=8.0;

/// `<prefix>:denyList:all`: the set of every denied value, the one the Upstash console edits.
pub fn all_key(prefix: &str) -> String {
    format!("{prefix}:denyList:all")
}

/// The keys of the IP deny list: the set of every denied value, the IP deny list
/// (`<prefix>:denyList:ipDenyList`) and its status (`<prefix>:ipDenyListStatus`).
pub fn ip_keys(prefix: &str) -> [String; 3] {
    [
        all_key(prefix),
        format!("{prefix}:denyList:ipDenyList"),
        format!("{prefix}:ipDenyListStatus"),
    ]
}

/// Values found in the deny list, answered locally for a minute; at most [`DENIED_VALUES_CACHED`].
#[derive(Debug)]
pub(super) struct DeniedValues(EphemeralCache);

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

/// The IPs of a deny list given as lines: an IP, optionally followed by blanks and its score (how many
/// lists name it, as in the `ipsum` lists the peer downloads). Blank lines and `#` comments are skipped;
/// an IP with a score below `threshold` is left out; an IP without a score is kept.
pub fn ips_from_lines<'a>(
    lines: impl IntoIterator<Item = &'a str>,
    threshold: f64,
) -> Result<Vec<String>> {
    let mut ips = Vec::new();
    for (index, line) in lines.into_iter().enumerate() {
        let mut fields = line.split_whitespace();
        let Some(ip) = fields.next().filter(|ip| !ip.starts_with('#')) else {
            continue;
        };
        let score = match (fields.next(), fields.next()) {
            (None, _) => None,
            (Some(score), None) => Some(number(score)),
            (Some(_), Some(_)) => Some(None),
        };
        match score {
            None => ips.push(ip.to_owned()),
            Some(Some(score)) if score >= threshold => ips.push(ip.to_owned()),
            Some(Some(_)) => {}
            Some(None) => {
                return Err(Error::InvalidParameter {
                    algorithm: "ip deny list",
                    name: "list",
                    value: format!("line {}: {}", index + 1, crate::error::quote(line)),
                    reason: "each line must be an IP, optionally followed by its score",
                })
            }
        }
    }
    Ok(ips)
}

/// The number `text` is, read as the replies are (so the package carries no other number parser).
fn number(text: &str) -> Option<f64> {
    match serde_json::from_str::<Reply>(text).ok()? {
        Reply::Integer(integer) => Some(integer as f64),
        Reply::Unsigned(integer) => Some(integer as f64),
        Reply::Float(float) => Some(float),
        _ => None,
    }
}

/// `denyListThreshold` checked: a number from 1 to 8, as the peer accepts.
pub fn threshold(value: f64) -> Result<f64> {
    if THRESHOLDS.contains(&value) {
        Ok(value)
    } else {
        Err(Error::InvalidParameter {
            algorithm: "ratelimit",
            name: "denyListThreshold",
            value: crate::number::decimal(value),
            reason: "must be a number from 1 to 8",
        })
    }
}

/// How long an IP deny list stays valid when updated at `now_ms`: until the next 2 AM UTC, when the
/// peer's source list is refreshed (the peer's `getIpListTTL`).
pub fn ip_list_ttl(now_ms: u64) -> Duration {
    const DAY_MS: u64 = 24 * 3_600_000;
    const TWO_AM_MS: u64 = 2 * 3_600_000;
    let since_2am = (now_ms + DAY_MS - TWO_AM_MS) % DAY_MS;
    Duration::from_millis(DAY_MS - since_2am)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ips_are_read_with_or_without_scores_and_filtered_by_the_threshold() {
        let lines = [
            "# ipsum",
            "",
            "1.1.1.1\t8",
            "2.2.2.2 3",
            "  3.3.3.3  ",
            "4.4.4.4\t6",
            "::1",
        ];
        assert_eq!(
            ips_from_lines(lines, 6.0).unwrap(),
            ["1.1.1.1", "3.3.3.3", "4.4.4.4", "::1"]
        );
        assert_eq!(ips_from_lines(lines, 1.0).unwrap().len(), 5);
        let error = ips_from_lines(["1.1.1.1", "2.2.2.2 many"], 6.0).unwrap_err();
        assert!(
            error.to_string().contains("line 2: \"2.2.2.2 many\""),
            "{error}"
        );
        assert!(ips_from_lines(["1.1.1.1 2 3"], 6.0).is_err());
        assert!(ips_from_lines(["1.1.1.1 NaN"], 6.0).is_err());
    }

    #[test]
    fn thresholds_are_those_of_the_peer() {
        assert_eq!(threshold(1.0), Ok(1.0));
        assert_eq!(threshold(8.0), Ok(8.0));
        for bad in [0.0, 8.5, f64::NAN, -1.0] {
            assert!(threshold(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_ip_list_lives_until_the_next_2am_utc() {
        let day = 86_400_000;
        let midnight = 1_700_000_000_000 / day * day;
        assert_eq!(ip_list_ttl(midnight), Duration::from_secs(2 * 3600));
        assert_eq!(
            ip_list_ttl(midnight + 2 * 3_600_000),
            Duration::from_secs(24 * 3600)
        );
        assert_eq!(
            ip_list_ttl(midnight + 3 * 3_600_000),
            Duration::from_secs(23 * 3600)
        );
    }

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
