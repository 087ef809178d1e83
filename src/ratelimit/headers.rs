//! The HTTP header fields of the IETF draft "RateLimit header fields for HTTP"
//! (draft-ietf-httpapi-ratelimit-headers) for one answer, plus `Retry-After` on a denial.
//!
//! The draft has changed shape over its revisions, and clients in the wild read each of them, so the
//! style is a choice ([`HeaderStyle`]). Every number is a whole one: what is left is rounded down, and
//! the seconds until the reset, or until a retry, are rounded up, so that a client that waits as long
//! as it is told never comes back too early.
//!
//! An answer of several limits ([`Response::limits`]) writes each as a policy, the items of
//! `RateLimit-Policy` (and of draft 11's `RateLimit`) in the order of the limits, named by their index,
//! while the fields that hold one limit describe the one that binds. Limits that run dry are left out
//! unless told otherwise ([`DryRunHeaders`]): a client sees the limits it is held to.

use super::{LimitResponse, Response};
use std::time::Duration;

/// Which revision of the draft the header fields follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HeaderStyle {
    /// `RateLimit-Limit: 10`, `RateLimit-Remaining: 3`, `RateLimit-Reset: 5` (drafts 00 to 06, and what
    /// most servers send today).
    #[default]
    Separate,
    /// `RateLimit: limit=10, remaining=3, reset=5` and, when the window is known,
    /// `RateLimit-Policy: 10;w=10` (draft 07).
    Draft07,
    /// `RateLimit: "default";r=3;t=5` and `RateLimit-Policy: "default";q=10;w=10`, `w` only when the
    /// window is known (drafts 08 to 11: a named policy, with its quota `q`, remaining `r` and reset `t`).
    Draft11,
}

/// What the header fields say of limits that run dry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DryRunHeaders {
    /// Nothing: they are left out, and an answer whose every limit runs dry has no header fields.
    #[default]
    Omit,
    /// Everything, as of live limits (a `Retry-After` only when the request was denied).
    Emit,
}

/// How to write the header fields.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HeaderOptions {
    /// Which revision of the draft.
    pub style: HeaderStyle,
    /// The limit's window (or period, or refill interval), for `RateLimit-Policy`; the separate style
    /// has no policy field for one limit and ignores it.
    pub window: Option<Duration>,
    /// Each limit's window, in order, for an answer of several limits (`window` is then unused).
    pub windows: Vec<Option<Duration>>,
    /// What to say of limits that run dry.
    pub dry_run: DryRunHeaders,
}

/// The policy name of the draft-11 style for an answer of one limit.
const POLICY: &str = "\"default\"";

/// The header fields describing `response` at `now_ms` (milliseconds since the Unix epoch), in the
/// order a server would send them; `Retry-After` is added when the request was denied.
///
/// `Retry-After` is the response's `retry_after` when it has one (exact for every algorithm), else the
/// whole seconds that pass the `reset` of the limits told that denied, the longest (so at least 1): a
/// client that waits that long is admitted, unless others took the capacity in the meantime (with only
/// `reset` known, a sliding window is sure to admit one request then, not a larger rate).
///
/// An answer of several limits tells each limit (every one, or the live ones) as a policy, and the one
/// that binds (the first that denied, else the one with least left) in the fields of one limit.
pub fn rate_limit_headers(
    response: &Response,
    now_ms: u64,
    options: &HeaderOptions,
) -> Vec<(&'static str, String)> {
    let emit = options.dry_run == DryRunHeaders::Emit;
    let several = !response.limits.is_empty();
    let one;
    let limits = if several {
        &response.limits[..]
    } else {
        // One limit: the answer itself, running dry when it has a live answer.
        one = LimitResponse {
            success: response.success,
            limit: response.limit,
            remaining: response.remaining,
            reset: response.reset,
            dry_run: response.live.is_some(),
        };
        std::slice::from_ref(&one)
    };
    let told: Vec<(usize, &LimitResponse)> = (limits.iter().enumerate())
        .filter(|(_, limit)| emit || !limit.dry_run)
        .collect();
    let Some(&(_, bound)) = told.iter().find(|(_, limit)| !limit.success).or_else(|| {
        told.iter()
            .min_by(|a, b| a.1.remaining.total_cmp(&b.1.remaining))
    }) else {
        return Vec::new();
    };
    let window = |index: usize| {
        if several {
            options.windows.get(index).copied().flatten()
        } else {
            options.window
        }
    };
    let name = |index: usize| {
        if several {
            format!("\"{index}\"")
        } else {
            POLICY.to_owned()
        }
    };
    let quota = |index: usize, limit: &LimitResponse, named: bool| {
        let quota = if named {
            format!("{};q={}", name(index), limit.limit)
        } else {
            limit.limit.to_string()
        };
        match window(index) {
            Some(window) => format!("{quota};w={}", seconds(window)),
            None => quota,
        }
    };
    let list = |item: &dyn Fn(usize, &LimitResponse) -> String| {
        (told.iter())
            .map(|&(index, limit)| item(index, limit))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (limit, remaining) = (bound.limit, whole_remaining(bound.remaining));
    let reset = seconds_until(bound.reset, now_ms);
    let mut headers = Vec::with_capacity(5);
    match options.style {
        HeaderStyle::Separate => {
            headers.push(("RateLimit-Limit", limit.to_string()));
            headers.push(("RateLimit-Remaining", remaining.to_string()));
            headers.push(("RateLimit-Reset", reset.to_string()));
        }
        HeaderStyle::Draft07 => headers.push((
            "RateLimit",
            format!("limit={limit}, remaining={remaining}, reset={reset}"),
        )),
        HeaderStyle::Draft11 => headers.push((
            "RateLimit",
            list(&|index, limit| {
                let left = whole_remaining(limit.remaining);
                let reset = seconds_until(limit.reset, now_ms);
                format!("{};r={left};t={reset}", name(index))
            }),
        )),
    }
    // The separate style has no policy field for one limit, and draft 07's needs the window.
    let policy = match options.style {
        HeaderStyle::Separate => several,
        HeaderStyle::Draft07 => several || window(0).is_some(),
        HeaderStyle::Draft11 => true,
    };
    if policy {
        let named = options.style == HeaderStyle::Draft11;
        headers.push((
            "RateLimit-Policy",
            list(&|index, limit| quota(index, limit, named)),
        ));
    }
    if !response.success {
        let wait = match response.retry_after {
            Some(wait) => seconds(wait).max(1),
            // Strictly after the reset: a sliding window still weighs the window that ended at `reset`
            // fully at that very millisecond, and admits a request from the next one.
            None => (told.iter().filter(|(_, limit)| !limit.success))
                .map(|(_, limit)| limit.reset.saturating_sub(now_ms) / 1_000 + 1)
                .max()
                .unwrap_or(1),
        };
        headers.push(("Retry-After", wait.to_string()));
    }
    headers
}

/// What is left as a whole number of requests, rounded down (a bucket may hold a fraction).
fn whole_remaining(remaining: f64) -> u64 {
    // `as` saturates: NaN and negatives are 0.
    remaining.floor() as u64
}

/// Whole seconds from `now_ms` until `at_ms`, rounded up; 0 when it has passed.
fn seconds_until(at_ms: u64, now_ms: u64) -> u64 {
    at_ms.saturating_sub(now_ms).div_ceil(1_000)
}

/// A duration in whole seconds, rounded up.
fn seconds(duration: Duration) -> u64 {
    let whole = duration.as_secs();
    if duration.subsec_nanos() > 0 {
        whole.saturating_add(1)
    } else {
        whole
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::{Algorithm, FixedWindow, Gcra, SlidingWindow, TokenBucket};
    use crate::backend::MemoryBackend;
    use crate::clock::{Clock, ManualClock};
    use crate::ratelimit::{Configure, Ratelimit};

    const START_MS: u64 = 1_700_000_040_000; // the start of a minute

    fn answer(
        success: bool,
        remaining: f64,
        reset: u64,
        retry_after: Option<Duration>,
    ) -> Response {
        Response {
            success,
            limit: 10,
            remaining,
            reset,
            retry_after,
            reason: None,
            limits: Vec::new(),
            live: None,
        }
    }

    fn get<'a>(headers: &'a [(&'static str, String)], name: &str) -> Option<&'a str> {
        headers
            .iter()
            .find(|(field, _)| *field == name)
            .map(|(_, value)| value.as_str())
    }

    #[test]
    fn the_separate_fields_round_the_reset_up_and_what_is_left_down() {
        let response = answer(true, 3.5, START_MS + 4_001, Some(Duration::ZERO));
        let headers = rate_limit_headers(&response, START_MS, &HeaderOptions::default());
        assert_eq!(
            headers,
            [
                ("RateLimit-Limit", "10".to_owned()),
                ("RateLimit-Remaining", "3".to_owned()),
                ("RateLimit-Reset", "5".to_owned()),
            ]
        );
        // Exactly on a second, and already past.
        let exact = rate_limit_headers(
            &answer(true, 0.0, START_MS + 5_000, None),
            START_MS,
            &HeaderOptions::default(),
        );
        assert_eq!(get(&exact, "RateLimit-Reset"), Some("5"));
        let past = rate_limit_headers(
            &answer(true, 0.0, START_MS, None),
            START_MS + 10,
            &HeaderOptions::default(),
        );
        assert_eq!(get(&past, "RateLimit-Reset"), Some("0"));
    }

    #[test]
    fn a_denial_carries_retry_after_from_retry_after_else_the_reset() {
        let options = HeaderOptions::default();
        let from_retry = answer(
            false,
            0.0,
            START_MS + 9_000,
            Some(Duration::from_millis(1_001)),
        );
        let headers = rate_limit_headers(&from_retry, START_MS, &options);
        assert_eq!(get(&headers, "Retry-After"), Some("2"));
        assert_eq!(get(&headers, "RateLimit-Reset"), Some("9"));

        let from_reset = answer(false, 0.0, START_MS + 2_500, None);
        let headers = rate_limit_headers(&from_reset, START_MS, &options);
        assert_eq!(get(&headers, "Retry-After"), Some("3"));
        // On a whole second, one more: a client arriving at the reset itself may still be denied.
        let on_the_second = answer(false, 0.0, START_MS + 2_000, None);
        let headers = rate_limit_headers(&on_the_second, START_MS, &options);
        assert_eq!(get(&headers, "RateLimit-Reset"), Some("2"));
        assert_eq!(get(&headers, "Retry-After"), Some("3"));

        // A fail-closed answer resets now: still a second to wait, never 0.
        let now = answer(false, 0.0, START_MS, None);
        assert_eq!(
            get(&rate_limit_headers(&now, START_MS, &options), "Retry-After"),
            Some("1")
        );
        let admitted = answer(true, 0.0, START_MS + 2_500, Some(Duration::ZERO));
        assert_eq!(
            get(
                &rate_limit_headers(&admitted, START_MS, &options),
                "Retry-After"
            ),
            None
        );
    }

    #[test]
    fn the_draft_styles_combine_the_fields_and_add_the_policy() {
        let response = answer(false, 3.0, START_MS + 4_500, None);
        let ten_seconds = Some(Duration::from_secs(10));
        let draft07 = HeaderOptions {
            style: HeaderStyle::Draft07,
            window: ten_seconds,
            ..HeaderOptions::default()
        };
        assert_eq!(
            rate_limit_headers(&response, START_MS, &draft07),
            [
                ("RateLimit", "limit=10, remaining=3, reset=5".to_owned()),
                ("RateLimit-Policy", "10;w=10".to_owned()),
                ("Retry-After", "5".to_owned()),
            ]
        );
        let no_window = HeaderOptions {
            window: None,
            ..draft07
        };
        assert_eq!(
            get(
                &rate_limit_headers(&response, START_MS, &no_window),
                "RateLimit-Policy"
            ),
            None
        );

        let draft11 = HeaderOptions {
            style: HeaderStyle::Draft11,
            window: Some(Duration::from_millis(1_500)),
            ..HeaderOptions::default()
        };
        assert_eq!(
            rate_limit_headers(&response, START_MS, &draft11),
            [
                ("RateLimit", "\"default\";r=3;t=5".to_owned()),
                ("RateLimit-Policy", "\"default\";q=10;w=2".to_owned()),
                ("Retry-After", "5".to_owned()),
            ]
        );
        let draft11 = HeaderOptions {
            window: None,
            ..draft11
        };
        assert_eq!(
            get(
                &rate_limit_headers(&response, START_MS, &draft11),
                "RateLimit-Policy"
            ),
            Some("\"default\";q=10")
        );
    }

    /// An answer of two limits, 10 a second (3 left) and 1,000 a day (`day_left`), the second
    /// running dry when `dry`.
    fn two_limits(success: bool, day_left: f64, dry: bool) -> Response {
        let limit = |limit, remaining, reset, dry_run| LimitResponse {
            success: remaining >= 0.0,
            limit,
            remaining: f64::max(remaining, 0.0),
            reset,
            dry_run,
        };
        Response {
            limits: vec![
                limit(10, 3.0, START_MS + 1_000, false),
                limit(1_000, day_left, START_MS + 86_400_000, dry),
            ],
            ..answer(success, 0.0, 0, None)
        }
    }

    #[test]
    fn several_limits_are_several_policies_and_the_one_that_binds_fills_the_rest() {
        let windows = vec![
            Some(Duration::from_secs(1)),
            Some(Duration::from_secs(86_400)),
        ];
        let style = |style| HeaderOptions {
            style,
            windows: windows.clone(),
            ..HeaderOptions::default()
        };
        let admitted = two_limits(true, 900.0, false);
        assert_eq!(
            rate_limit_headers(&admitted, START_MS, &style(HeaderStyle::Separate)),
            [
                ("RateLimit-Limit", "10".to_owned()),
                ("RateLimit-Remaining", "3".to_owned()),
                ("RateLimit-Reset", "1".to_owned()),
                ("RateLimit-Policy", "10;w=1, 1000;w=86400".to_owned()),
            ]
        );
        assert_eq!(
            rate_limit_headers(&admitted, START_MS, &style(HeaderStyle::Draft11)),
            [
                ("RateLimit", "\"0\";r=3;t=1, \"1\";r=900;t=86400".to_owned()),
                (
                    "RateLimit-Policy",
                    "\"0\";q=10;w=1, \"1\";q=1000;w=86400".to_owned()
                ),
            ]
        );
        // The daily quota denies: it binds, and Retry-After waits for it.
        let denied = two_limits(false, -1.0, false);
        let headers = rate_limit_headers(&denied, START_MS, &style(HeaderStyle::Draft07));
        assert_eq!(
            get(&headers, "RateLimit"),
            Some("limit=1000, remaining=0, reset=86400")
        );
        assert_eq!(
            get(&headers, "RateLimit-Policy"),
            Some("10;w=1, 1000;w=86400")
        );
        assert_eq!(get(&headers, "Retry-After"), Some("86401"));
        let unknown = rate_limit_headers(&denied, START_MS, &HeaderOptions::default());
        assert_eq!(get(&unknown, "RateLimit-Policy"), Some("10, 1000"));
    }

    #[test]
    fn limits_that_run_dry_are_left_out_unless_emitted() {
        let dry = two_limits(true, -1.0, true);
        let omitted = rate_limit_headers(&dry, START_MS, &HeaderOptions::default());
        assert_eq!(get(&omitted, "RateLimit-Policy"), Some("10"));
        assert_eq!(get(&omitted, "RateLimit-Remaining"), Some("3"));
        let emit = HeaderOptions {
            dry_run: DryRunHeaders::Emit,
            ..HeaderOptions::default()
        };
        let emitted = rate_limit_headers(&dry, START_MS, &emit);
        assert_eq!(get(&emitted, "RateLimit-Policy"), Some("10, 1000"));
        assert_eq!(
            get(&emitted, "RateLimit-Limit"),
            Some("1000"),
            "the dry limit denies"
        );
        assert_eq!(
            get(&emitted, "Retry-After"),
            None,
            "the request was admitted"
        );
        // One limit running dry: nothing, unless emitted.
        let single = Response {
            live: Some(crate::ratelimit::Live::of(&answer(
                false, 0.0, START_MS, None,
            ))),
            ..answer(true, 0.0, START_MS + 2_000, None)
        };
        assert!(rate_limit_headers(&single, START_MS, &HeaderOptions::default()).is_empty());
        assert_eq!(rate_limit_headers(&single, START_MS, &emit).len(), 3);
    }

    /// For every algorithm on a real limiter: the last admitted request and the first denied one, then
    /// a client that waits exactly `Retry-After` seconds is admitted, whether the answer has its
    /// `retry_after` or, as a JavaScript answer, only its `reset`; for every start in a window.
    #[test]
    fn a_client_that_waits_retry_after_is_admitted() {
        let window = Duration::from_secs(10);
        let algorithms: [Algorithm; 4] = [
            FixedWindow::new(3, window).unwrap().into(),
            SlidingWindow::new(3, window).unwrap().into(),
            TokenBucket::new(1, window, 3).unwrap().into(),
            Gcra::new(3, window, 3).unwrap().into(),
        ];
        // On a window's start, on a whole second and mid-second, so that rounding matters.
        let starts = [0, 2_000, 2_345, 9_999];
        for (algorithm, start, reset_only) in algorithms.iter().flat_map(|a| {
            starts
                .iter()
                .flat_map(move |s| [(*a, *s, false), (*a, *s, true)])
        }) {
            let name = format!(
                "{} from +{start} ms, reset only: {reset_only}",
                algorithm.name()
            );
            let clock = ManualClock::from_millis(START_MS + start);
            let store = MemoryBackend::new().with_clock(clock.clone());
            let limiter = Ratelimit::new(store, algorithm)
                .with_ephemeral_cache(None)
                .with_clock(clock.clone());
            let now_ms = || clock.now_micros() / 1_000;
            let options = HeaderOptions {
                style: HeaderStyle::Separate,
                window: Some(window),
                ..HeaderOptions::default()
            };
            pollster::block_on(async {
                for _ in 0..2 {
                    assert!(limiter.limit("u", 1.0).await.unwrap().success, "{name}");
                }
                let last = limiter.limit("u", 1.0).await.unwrap();
                assert!(last.success, "{name}");
                let headers = rate_limit_headers(&last, now_ms(), &options);
                assert_eq!(get(&headers, "RateLimit-Limit"), Some("3"), "{name}");
                assert_eq!(get(&headers, "RateLimit-Remaining"), Some("0"), "{name}");
                assert_eq!(get(&headers, "Retry-After"), None, "{name}");

                let mut denied = limiter.limit("u", 1.0).await.unwrap();
                assert!(!denied.success, "{name}");
                if reset_only {
                    denied.retry_after = None;
                }
                let headers = rate_limit_headers(&denied, now_ms(), &options);
                assert_eq!(get(&headers, "RateLimit-Remaining"), Some("0"), "{name}");
                let reset: u64 = get(&headers, "RateLimit-Reset").unwrap().parse().unwrap();
                assert!((1..=11).contains(&reset), "{name}: reset {reset}");
                let wait: u64 = get(&headers, "Retry-After").unwrap().parse().unwrap();
                assert!((1..=11).contains(&wait), "{name}: Retry-After {wait}");

                if !reset_only {
                    // A second less is (for these whole-second limits) too early ...
                    clock.advance(Duration::from_secs(wait - 1));
                    let early = limiter.get_remaining("u").await.unwrap().remaining;
                    assert!(
                        early < 1.0,
                        "{name}: {early} left a second before Retry-After"
                    );
                    clock.advance(Duration::from_secs(1));
                } else {
                    clock.advance(Duration::from_secs(wait));
                }
                // ... and Retry-After is enough.
                let retried = limiter.limit("u", 1.0).await.unwrap();
                assert!(retried.success, "{name}: denied after Retry-After {wait} s");
            });
        }
    }
}
