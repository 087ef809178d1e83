//! Where "now" comes from: injected, so that every algorithm can be tested with a manual clock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A source of wall-clock time in microseconds since the Unix epoch.
pub trait Clock: Send + Sync {
    /// The current time, in microseconds since the Unix epoch.
    fn now_micros(&self) -> u64;
}

/// The system's wall clock: `Date.now()` on wasm (millisecond resolution), `SystemTime` natively.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[cfg(target_arch = "wasm32")]
    fn now_micros(&self) -> u64 {
        (crate::js::globals::date_now() as u64).saturating_mul(1_000)
    }

    #[cfg(not(target_arch = "wasm32"))]
    fn now_micros(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_micros() as u64)
    }
}

/// A clock that only moves when told to; clones share the same time.
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    micros: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock that reads `micros` microseconds since the epoch.
    pub fn new(micros: u64) -> Self {
        Self {
            micros: Arc::new(AtomicU64::new(micros)),
        }
    }

    /// A clock that reads `millis` milliseconds since the epoch.
    pub fn from_millis(millis: u64) -> Self {
        Self::new(millis * 1_000)
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        self.micros
            .fetch_add(by.as_micros() as u64, Ordering::SeqCst);
    }

    /// Sets the clock to `micros` microseconds since the epoch.
    pub fn set(&self, micros: u64) {
        self.micros.store(micros, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_micros(&self) -> u64 {
        self.micros.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told_and_clones_share_it() {
        let clock = ManualClock::from_millis(1_000);
        let other = clock.clone();
        assert_eq!(clock.now_micros(), 1_000_000);
        other.advance(Duration::from_micros(1_500));
        assert_eq!(clock.now_micros(), 1_001_500);
        clock.set(7);
        assert_eq!(other.now_micros(), 7);
    }

    #[test]
    fn system_clock_is_after_2024() {
        assert!(SystemClock.now_micros() > 1_700_000_000_000_000);
    }
}
