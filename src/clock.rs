//! Where "now" comes from: injected, so that every algorithm can be tested with a manual clock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A source of wall-clock time in microseconds since the Unix epoch.
pub trait Clock: Send + Sync {
    /// The current time, in microseconds since the Unix epoch.
    fn now_micros(&self) -> u64;
}

/// The system's wall clock: `Date.now()` on wasm (millisecond resolution); natively `SystemTime`,
/// read once a second and followed in between by `quanta`'s clock (the calibrated TSC where the CPU
/// has a reliable one), which costs a fraction of a system call's time in a decision of ~100 ns. The
/// first read in a process calibrates that clock (about a millisecond on this project's machine).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[cfg(target_arch = "wasm32")]
    fn now_micros(&self) -> u64 {
        (crate::js::globals::date_now() as u64).saturating_mul(1_000)
    }

    #[cfg(not(target_arch = "wasm32"))]
    fn now_micros(&self) -> u64 {
        anchored::now_micros()
    }
}

/// The native wall clock: `SystemTime` at an anchor, plus `quanta`'s monotonic time since; the anchor
/// moves to the system's time once a second, so the clock follows the wall clock (its adjustments
/// included) within what the TSC's calibration drifts in a second.
#[cfg(not(target_arch = "wasm32"))]
mod anchored {
    use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
    use std::sync::OnceLock;
    use std::time::{SystemTime, UNIX_EPOCH};

    /// How often the system's clock is read again, in microseconds.
    const ANCHOR_EVERY_MICROS: u64 = 1_000_000;

    struct Anchor {
        /// Where the monotonic microseconds count from.
        origin: quanta::Instant,
        /// The system's time minus the monotonic time, at the last anchor (µs).
        offset: AtomicI64,
        /// The monotonic time of the last anchor (µs).
        anchored_at: AtomicU64,
    }

    static ANCHOR: OnceLock<Anchor> = OnceLock::new();

    fn system_micros() -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_micros() as i64)
    }

    pub(super) fn now_micros() -> u64 {
        let anchor = ANCHOR.get_or_init(|| Anchor {
            origin: quanta::Instant::now(),
            offset: AtomicI64::new(system_micros()),
            anchored_at: AtomicU64::new(0),
        });
        let monotonic = (quanta::Instant::now() - anchor.origin).as_micros() as u64;
        // Acquire: an anchor seen is seen with its offset (stored before it, with Release).
        if monotonic.saturating_sub(anchor.anchored_at.load(Ordering::Acquire))
            >= ANCHOR_EVERY_MICROS
        {
            let system = system_micros();
            anchor
                .offset
                .store(system - monotonic as i64, Ordering::Relaxed);
            anchor.anchored_at.store(monotonic, Ordering::Release);
            return system.max(0) as u64;
        }
        (monotonic as i64 + anchor.offset.load(Ordering::Relaxed)).max(0) as u64
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

    /// Read over more than an anchor's second, from several threads, the clock stays within a
    /// millisecond of `SystemTime` and never goes back by more than that.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn system_clock_follows_the_system_time() {
        let system = || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_micros() as u64
        };
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(move || {
                    let (start, mut last) = (system(), 0);
                    while system() - start < 1_300_000 {
                        let (before, clock, after) = (system(), SystemClock.now_micros(), system());
                        assert!(clock + 1_000 >= before && clock <= after + 1_000);
                        assert!(clock + 1_000 >= last, "went back from {last} to {clock}");
                        last = clock;
                        std::thread::sleep(Duration::from_micros(50));
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
    }
}
