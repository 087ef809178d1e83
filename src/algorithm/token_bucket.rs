//! Token bucket with step refills, as `@upstash/ratelimit` keeps it: `refill_rate` tokens are added at
//! each whole `interval` since the last refill, up to `max_tokens`; a new bucket starts full.
//!
//! Unlike `@upstash/ratelimit` 2.2, a cost larger than the tokens left is denied (the peer only denies
//! at zero and lets the count go negative), and a denied request consumes nothing. A bucket that has
//! refilled to the brim is the same as a new one, which is what the peer's key expiry makes of it too.
//! Tokens above the maximum, which the peer's refunds leave, are kept until the next refill caps
//! them, as the peer keeps them. Tokens below zero, which older versions of the peer wrote, are a debt
//! that refills like any missing token; `remaining` never reports them (it is 0).

use super::cost::{self, Cost, Demand};
use super::params;
use super::{micros, saturating_product, until, Policy, Transition};
use crate::decision::Decision;
use crate::error::Result;
use std::time::Duration;

/// A bucket of `max_tokens` that gains `refill_rate` tokens per whole `interval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenBucket {
    refill_rate: u64,
    interval_ms: u64,
    max_tokens: u64,
}

/// The bucket's level and the time of its last refill.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenBucketState {
    /// When the bucket was last refilled (or created), in milliseconds since the epoch.
    pub refilled_at: u64,
    /// Tokens in the bucket at `refilled_at` (fractional after fractional costs).
    pub tokens: f64,
}

impl TokenBucket {
    /// A bucket of `max_tokens` that gains `refill_rate` tokens every `interval`.
    ///
    /// Fails when a count is 0 or above 2^53 - 1, or `interval` is not a positive whole number of milliseconds.
    pub fn new(refill_rate: u64, interval: Duration, max_tokens: u64) -> Result<Self> {
        Ok(Self {
            refill_rate: params::count(Self::NAME, "refillRate", refill_rate)?,
            interval_ms: params::millis(Self::NAME, "interval", interval)?,
            max_tokens: params::count(Self::NAME, "maxTokens", max_tokens)?,
        })
    }

    /// Tokens added per interval.
    pub fn refill_rate(&self) -> u64 {
        self.refill_rate
    }

    /// The refill interval in milliseconds.
    pub fn interval_ms(&self) -> u64 {
        self.interval_ms
    }

    /// The bucket as it is at `now` (microseconds): refilled by whole steps, or new if it is full by now.
    fn load(&self, state: Option<TokenBucketState>, now: u64) -> TokenBucketState {
        let now_ms = now / 1_000;
        match state {
            // A capacity of 0 (a dynamic limit) pauses the bucket, whatever it held.
            Some(state) if self.max_tokens > 0 && now < self.idle_at(&state) => {
                let steps = now_ms.saturating_sub(state.refilled_at) / self.interval_ms;
                // Tokens above the maximum (a refund of the peer's) last until the next refill, which
                // caps them, as the peer's refill does.
                let tokens = match steps {
                    0 => state.tokens,
                    _ => (state.tokens + steps as f64 * self.refill_rate as f64)
                        .min(self.max_tokens as f64),
                };
                TokenBucketState {
                    // Whole steps up to `now_ms`: no overflow.
                    refilled_at: state.refilled_at + steps * self.interval_ms,
                    tokens,
                }
            }
            _ => TokenBucketState {
                refilled_at: now_ms,
                tokens: self.max_tokens as f64,
            },
        }
    }

    /// The state after a request of `cost` that was admitted at `now`, even if this state would deny
    /// it: the replay of requests merged from several regions, which may together take more than the
    /// bucket held and then leave it below empty until refills make the debt good.
    pub fn consume(
        &self,
        state: Option<TokenBucketState>,
        now: u64,
        cost: f64,
    ) -> TokenBucketState {
        let bucket = self.load(state, now);
        let tokens = if cost < 0.0 {
            (bucket.tokens - cost).min(self.max_tokens as f64)
        } else {
            bucket.tokens - cost
        };
        TokenBucketState {
            refilled_at: bucket.refilled_at,
            tokens,
        }
    }

    /// How long from `now` until `bucket` holds `take` tokens: the closed form, checked by a few
    /// steps for rounding. Computed in floating point and saturating, so that a bucket deep in debt
    /// (tokens far below zero, as older versions of the peer left them) waits as long as a
    /// [`Duration`] of `u64` microseconds holds, at most, in constant time.
    fn wait(&self, bucket: TokenBucketState, now: u64, take: f64) -> Duration {
        let rate = self.refill_rate as f64;
        let refilled = |steps: f64| (bucket.tokens + steps * rate).min(self.max_tokens as f64);
        let mut steps = ((take - bucket.tokens) / rate).ceil().max(1.0);
        for _ in 0..ROUNDING_STEPS {
            if refilled(steps) >= take {
                break;
            }
            steps += 1.0;
        }
        // `as` saturates a float beyond `u64`; the products saturate too.
        until(
            bucket
                .refilled_at
                .saturating_add(saturating_product(steps as u64, self.interval_ms)),
            now,
        )
    }
}

/// How many refill steps past the closed form [`TokenBucket::wait`] may look, for rounding: one is
/// enough for any bucket whose numbers are exact; past 2^53 a step no longer changes the float, and the
/// wait is beyond anything a caller waits for.
const ROUNDING_STEPS: usize = 2;

impl Policy for TokenBucket {
    type State = TokenBucketState;
    const NAME: &'static str = "token bucket";
    const WHOLE_COSTS: bool = false;

    fn capacity(&self) -> u64 {
        self.max_tokens
    }

    fn with_capacity(&self, capacity: u64) -> Result<Self> {
        Ok(Self {
            max_tokens: params::capacity(Self::NAME, "maxTokens", capacity)?,
            ..*self
        })
    }

    fn apply(&self, state: Option<Self::State>, now: u64, cost: Cost) -> Transition<Self::State> {
        let bucket = self.load(state, now);
        let (tokens, allowed, retry_after) = match cost.against(self.max_tokens) {
            // A refund fills up to the maximum, never taking away credit already above it.
            Demand::Refund(refund) => (
                (bucket.tokens + refund).min(bucket.tokens.max(self.max_tokens as f64)),
                true,
                Some(Duration::ZERO),
            ),
            Demand::TooLarge(_) => (bucket.tokens, false, None),
            Demand::Take(take) if bucket.tokens >= take => {
                (bucket.tokens - take, true, Some(Duration::ZERO))
            }
            Demand::Take(take) => (bucket.tokens, false, Some(self.wait(bucket, now, take))),
        };
        Transition {
            state: TokenBucketState {
                refilled_at: bucket.refilled_at,
                tokens,
            },
            decision: Decision {
                allowed,
                limit: self.max_tokens,
                // A debt (tokens below zero) is not reported: nothing is left.
                remaining: tokens.max(0.0),
                reset: bucket.refilled_at.saturating_add(self.interval_ms),
                retry_after,
            },
        }
    }

    fn available(&self, state: Option<Self::State>, now: u64) -> f64 {
        self.load(state, now).tokens.max(0.0)
    }

    fn time_until(&self, state: Option<Self::State>, now: u64, cost: Cost) -> Result<Duration> {
        let bucket = self.load(state, now);
        match cost.against(self.max_tokens) {
            Demand::Refund(_) => Ok(Duration::ZERO),
            Demand::TooLarge(cost) => Err(cost::never(cost, self.max_tokens)),
            Demand::Take(take) if bucket.tokens >= take => Ok(Duration::ZERO),
            Demand::Take(take) => Ok(self.wait(bucket, now, take)),
        }
    }

    /// The moment the bucket is full again: `refilled_at + ceil(missing / refill_rate) · interval`,
    /// saturating (a huge dynamic limit refills for ever); for a bucket above its maximum, the next
    /// refill, which caps it.
    fn idle_at(&self, state: &Self::State) -> u64 {
        let missing = self.max_tokens as f64 - state.tokens;
        if missing == 0.0 {
            return 0;
        }
        let steps = if missing < 0.0 {
            1
        } else {
            (missing / self.refill_rate as f64).ceil() as u64
        };
        micros(
            state
                .refilled_at
                .saturating_add(saturating_product(steps, self.interval_ms)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000;
    const T0: u64 = 1_700_000_000_123 * MS;

    /// 2 tokens per second, up to 5.
    fn bucket() -> TokenBucket {
        TokenBucket::new(2, Duration::from_secs(1), 5).unwrap()
    }

    fn run(
        rule: &TokenBucket,
        state: &mut Option<TokenBucketState>,
        now: u64,
        cost: f64,
    ) -> Decision {
        let transition = rule.acquire(*state, now, cost).unwrap();
        *state = Some(transition.state);
        transition.decision
    }

    #[test]
    fn starts_full_then_denies_then_refills_in_whole_steps() {
        let rule = bucket();
        let mut state = None;
        let first = run(&rule, &mut state, T0, 1.0);
        assert_eq!(
            (first.allowed, first.remaining, first.reset),
            (true, 4.0, T0 / MS + 1_000)
        );
        assert!(run(&rule, &mut state, T0, 4.0).allowed);
        let denied = run(&rule, &mut state, T0 + 999 * MS, 1.0);
        assert!(!denied.allowed);
        assert_eq!(denied.retry_after, Some(Duration::from_millis(1)));
        let refilled = run(&rule, &mut state, T0 + 1_000 * MS, 1.0);
        assert_eq!((refilled.allowed, refilled.remaining), (true, 1.0));
        // Two more steps bring 4 tokens; one more would reach the brim.
        let later = run(&rule, &mut state, T0 + 3_500 * MS, 0.0);
        assert_eq!(later.remaining, 5.0);
    }

    #[test]
    fn a_cost_larger_than_what_is_left_is_denied_and_consumes_nothing() {
        let rule = bucket();
        let mut state = None;
        run(&rule, &mut state, T0, 4.0);
        let denied = run(&rule, &mut state, T0, 3.0);
        assert!(!denied.allowed, "the peer admits this and goes to -2");
        assert_eq!(denied.remaining, 1.0);
        // 2 missing tokens come with the first refill step.
        assert_eq!(denied.retry_after, Some(Duration::from_secs(1)));
    }

    #[test]
    fn fractional_costs_and_refunds_capped_at_the_brim() {
        let rule = bucket();
        let mut state = None;
        assert_eq!(run(&rule, &mut state, T0, 0.5).remaining, 4.5);
        assert_eq!(run(&rule, &mut state, T0, -0.25).remaining, 4.75);
        assert_eq!(run(&rule, &mut state, T0, -10.0).remaining, 5.0);
    }

    #[test]
    fn cost_above_capacity_is_never_admitted() {
        let rule = bucket();
        let decision = rule.acquire(None, T0, 5.5).unwrap().decision;
        assert_eq!(
            (decision.allowed, decision.retry_after, decision.remaining),
            (false, None, 5.0)
        );
        assert!(rule.time_until_available(None, T0, 6.0).is_err());
    }

    #[test]
    fn a_bucket_full_again_is_a_new_bucket() {
        let rule = bucket();
        let state = rule.acquire(None, T0, 3.0).unwrap().state;
        // 3 missing at 2 per step: full after 2 steps.
        assert_eq!(rule.idle_at(&state), T0 + 2_000 * MS);
        let later = rule.acquire(Some(state), T0 + 2_500 * MS, 1.0).unwrap();
        assert_eq!(later.state.refilled_at, (T0 + 2_500 * MS) / MS);
    }

    #[test]
    fn a_bucket_deep_in_debt_waits_saturated_and_reports_nothing_left() {
        let rule = bucket();
        for tokens in [-2.0, -1e20, -1e300, f64::MIN] {
            let state = Some(TokenBucketState {
                refilled_at: T0 / MS,
                tokens,
            });
            let decision = rule.acquire(state, T0, 1.0).unwrap().decision;
            assert!(!decision.allowed, "{tokens}");
            assert_eq!(decision.remaining, 0.0, "{tokens}");
            assert!(decision.retry_after.unwrap() > Duration::ZERO, "{tokens}");
            assert_eq!(rule.available(state, T0), 0.0, "{tokens}");
            assert!(rule.time_until_available(state, T0, 1.0).is_ok());
        }
        // -2 tokens refill by 2 per second: 1 token after 2 seconds.
        let state = Some(TokenBucketState {
            refilled_at: T0 / MS,
            tokens: -2.0,
        });
        let wait = rule.time_until_available(state, T0, 1.0).unwrap();
        assert_eq!(wait, Duration::from_secs(2));
    }

    #[test]
    fn parameters_are_validated() {
        let second = Duration::from_secs(1);
        assert!(TokenBucket::new(0, second, 1).is_err());
        assert!(TokenBucket::new(1, Duration::ZERO, 1).is_err());
        assert!(TokenBucket::new(1, second, 0).is_err());
        let error = TokenBucket::new(1, second, 0).unwrap_err().to_string();
        assert!(error.contains("maxTokens"), "{error}");
    }
}
