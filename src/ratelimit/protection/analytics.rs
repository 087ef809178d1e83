//! Analytics as `@upstash/ratelimit` records them through `@upstash/core-analytics`: one sorted set per
//! hour, `<prefix>:events:<hour start in ms>`, whose members are the events as JSON
//! (`{"identifier":…,"success":…, geo fields…}`, `time` left out) and whose scores count them. The
//! Upstash console and core-analytics' own readers read what is written here.

use crate::error::quote;

/// The length of an analytics bucket: the peer's `window: "1h"`.
pub const BUCKET_MS: u64 = 3_600_000;

/// The sorted set counting the events of the hour of `now_ms`.
pub fn events_key(prefix: &str, now_ms: u64) -> String {
    format!("{prefix}:events:{}", now_ms / BUCKET_MS * BUCKET_MS)
}

/// An event's `success`: admitted, rate limited, or found in the deny list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// `true`.
    Admitted,
    /// `false`.
    Limited,
    /// `"denied"`.
    Denied,
}

/// The event of `identifier` (the denied value, for [`Outcome::Denied`]) as the member core-analytics
/// writes: `JSON.stringify({ identifier, time: undefined, success, ...geo })`, so a geo field named like
/// one of the first three replaces it in place, as the spread does.
pub fn member(identifier: &str, outcome: Outcome, geo: &[(&str, &str)]) -> String {
    let success = match outcome {
        Outcome::Admitted => "true",
        Outcome::Limited => "false",
        Outcome::Denied => "\"denied\"",
    };
    let mut fields: Vec<(&str, Option<String>)> = vec![
        ("identifier", Some(quote(identifier))),
        ("time", None),
        ("success", Some(success.to_owned())),
    ];
    for &(name, value) in geo {
        let value = Some(quote(value));
        match fields.iter_mut().find(|(field, _)| *field == name) {
            Some(field) => field.1 = value,
            None => fields.push((name, value)),
        }
    }
    let mut json = String::from("{");
    for (name, value) in fields {
        if let Some(value) = value {
            if json.len() > 1 {
                json.push(',');
            }
            json += &quote(name);
            json.push(':');
            json += &value;
        }
    }
    json.push('}');
    json
}

/// The events a decision of the limit records: admitted or rate limited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Members {
    /// The event if admitted.
    pub admitted: String,
    /// The event if rate limited.
    pub limited: String,
}

impl Members {
    /// The events of `identifier` with `geo` fields.
    pub fn new(identifier: &str, geo: &[(&str, &str)]) -> Self {
        Self {
            admitted: member(identifier, Outcome::Admitted, geo),
            limited: member(identifier, Outcome::Limited, geo),
        }
    }

    /// The event of an answer that was `success`ful or not.
    pub fn of(&self, success: bool) -> &str {
        if success {
            &self.admitted
        } else {
            &self.limited
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_written_as_core_analytics_writes_them() {
        assert_eq!(
            member("user:1", Outcome::Admitted, &[]),
            r#"{"identifier":"user:1","success":true}"#
        );
        assert_eq!(
            member(
                "a\"b/é",
                Outcome::Limited,
                &[("country", "DE"), ("city", "Berlin")]
            ),
            r#"{"identifier":"a\"b/é","success":false,"country":"DE","city":"Berlin"}"#
        );
        assert_eq!(
            member(
                "1.2.3.4",
                Outcome::Denied,
                &[("time", "t"), ("identifier", "x")]
            ),
            r#"{"identifier":"x","time":"t","success":"denied"}"#
        );
    }

    #[test]
    fn buckets_are_whole_hours() {
        assert_eq!(events_key("p", 1_700_000_123_456), "p:events:1699999200000");
    }
}
