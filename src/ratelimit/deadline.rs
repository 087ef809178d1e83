//! `Deadline`: when `blockUntilReady` stops waiting, and how long it waits before asking again.

use super::Response;
use std::time::Duration;

/// The shortest wait between two requests of `block_until_ready`.
const MIN_WAIT: Duration = Duration::from_millis(1);

/// The end of a `block_until_ready`, in microseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Deadline(u64);

impl Deadline {
    /// `timeout` from `now_micros`; saturating, so that a timeout of `Duration::MAX` waits for ever.
    pub(crate) fn after(now_micros: u64, timeout: Duration) -> Self {
        Self(now_micros.saturating_add(micros(timeout)))
    }

    /// How long to wait at `now_micros` before asking again after `response`: `None` when waiting
    /// cannot help (admitted, never admitted, answered by the fail mode, or the wait would pass the
    /// deadline), so that `response` is the answer.
    pub(crate) fn wait(self, now_micros: u64, response: &Response) -> Option<Duration> {
        let wait = response
            .retry_after
            .filter(|_| !response.success)?
            .max(MIN_WAIT);
        (now_micros.saturating_add(micros(wait)) <= self.0).then_some(wait)
    }
}

/// `duration` in microseconds, saturating.
fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn denied(retry_after: Option<Duration>) -> Response {
        Response {
            success: false,
            limit: 1,
            remaining: 0.0,
            reset: 0,
            retry_after,
            reason: None,
            limits: Vec::new(),
            live: None,
        }
    }

    #[test]
    fn waits_as_long_as_the_limit_says_while_the_deadline_allows() {
        let deadline = Deadline::after(1_000, Duration::from_millis(10));
        let wait = Duration::from_millis(4);
        assert_eq!(deadline.wait(1_000, &denied(Some(wait))), Some(wait));
        // The deadline is at 11_000 µs: a wait may end on it, not after it.
        assert_eq!(deadline.wait(7_000, &denied(Some(wait))), Some(wait));
        assert_eq!(deadline.wait(7_001, &denied(Some(wait))), None);
    }

    #[test]
    fn waits_at_least_a_millisecond() {
        let deadline = Deadline::after(0, Duration::from_secs(1));
        assert_eq!(
            deadline.wait(0, &denied(Some(Duration::ZERO))),
            Some(MIN_WAIT)
        );
    }

    #[test]
    fn does_not_wait_when_waiting_cannot_help() {
        let deadline = Deadline::after(0, Duration::from_secs(60));
        assert_eq!(deadline.wait(0, &denied(None)), None);
        let admitted = Response {
            success: true,
            ..denied(Some(Duration::ZERO))
        };
        assert_eq!(deadline.wait(0, &admitted), None);
    }

    #[test]
    fn saturates_instead_of_overflowing() {
        let forever = Deadline::after(u64::MAX - 5, Duration::MAX);
        assert_eq!(forever, Deadline(u64::MAX));
        let long = Duration::from_secs(u64::MAX);
        assert_eq!(forever.wait(u64::MAX, &denied(Some(long))), Some(long));
        let soon = Deadline::after(0, Duration::from_millis(1));
        assert_eq!(soon.wait(u64::MAX - 1, &denied(Some(MIN_WAIT))), None);
    }
}
