//! Issue 40, exact at every edge, against real redis-server through the real gateway: a request
//! stamped before its window ended and arriving after finds the window counted; a reset by an
//! instance whose clock runs ahead keeps other instances' live leases counted; leases refuse dynamic
//! limits, which they could not obey at once; a lease ledger whose numbers leave the exact integer
//! range is corrupt state, refused with nothing written.

#![cfg(not(target_arch = "wasm32"))]

mod support;

use edgelimit::algorithm::Algorithm;
use edgelimit::ratelimit::{Lease, Ratelimit};
use edgelimit::{
    Clock, Configure, Error, FixedWindow, Gcra, KeyLayout, ManualClock, RedisBackend,
    SlidingWindow, SystemClock, TokenBucket,
};
use std::time::Duration;
use support::{hour_limits, now_ms, Servers};

const LAYOUTS: [KeyLayout; 2] = [KeyLayout::Upstash, KeyLayout::Cluster];

/// The system clock moved by `.0` microseconds: an instance ahead (positive) or behind.
#[derive(Clone, Copy)]
struct Skewed(i64);

impl Clock for Skewed {
    fn now_micros(&self) -> u64 {
        SystemClock.now_micros().saturating_add_signed(self.0)
    }
}

/// A limit deciding on the caller's clock `clock` (not Redis's), with no ephemeral cache.
fn on_clock(
    servers: &Servers,
    rule: Algorithm,
    prefix: &str,
    layout: KeyLayout,
    clock: impl Clock + Clone + 'static,
) -> Ratelimit {
    let store = RedisBackend::new(servers.gateway.transport()).with_clock(clock.clone());
    Ratelimit::new(store, rule)
        .with_prefix(prefix)
        .with_key_layout(layout)
        .with_ephemeral_cache(None)
        .with_clock(clock)
}

/// Sleeps until `at` milliseconds since the epoch, by the system clock.
async fn until_ms(at: u64) {
    let now = now_ms();
    if at > now {
        tokio::time::sleep(Duration::from_millis(at - now)).await;
    }
}

fn skewed(offset_micros: i64) -> Skewed {
    Skewed(offset_micros)
}

#[tokio::test]
async fn issue_40_a_request_stamped_before_its_window_ended_finds_the_window_counted() {
    let servers = Servers::start();
    let second = Duration::from_secs(1);
    let rules: [Algorithm; 2] = [
        FixedWindow::new(5, second).unwrap().into(),
        SlidingWindow::new(5, second).unwrap().into(),
    ];
    for layout in LAYOUTS {
        for rule in rules {
            let context = format!("{} {layout:?}", rule.name());
            let prefix = format!("edges:late:{}:{layout:?}", rule.name());
            // Window W is exhausted at its start by an instance on time; its counter is created then.
            let start = (now_ms() / 1_000 + 1) * 1_000;
            until_ms(start + 5).await;
            let on_time = on_clock(&servers, rule, &prefix, layout, skewed(0));
            for _ in 0..5 {
                assert!(
                    on_time.limit("hot", 1.0).await.unwrap().success,
                    "{context}"
                );
            }
            // 40 ms after W ended, an instance 60 ms behind sends a request it stamps in W.
            until_ms(start + 1_040).await;
            let behind = ManualClock::from_millis(start + 980);
            let behind = on_clock(&servers, rule, &prefix, layout, behind);
            let late = behind.limit("hot", 1.0).await.unwrap();
            assert_eq!(late.reset, start + 1_000, "{context}: the answer names W");
            assert!(!late.success, "{context}: 6 admitted in W, of 5");
        }
    }
}

fn lease(tokens: u64) -> Lease {
    Lease {
        tokens,
        ttl: Duration::from_secs(1),
    }
}

#[tokio::test]
async fn issue_40_a_reset_by_an_instance_ahead_keeps_the_live_leases_of_others_counted() {
    let servers = Servers::start();
    const LIMIT: u64 = 1_000;
    for layout in LAYOUTS {
        for rule in hour_limits(LIMIT) {
            let context = format!("{} {layout:?}", rule.name());
            let prefix = format!("edges:reset-ahead:{}:{layout:?}", rule.name());
            let holder = on_clock(&servers, rule, &prefix, layout, skewed(0))
                .with_lease(lease(100))
                .unwrap();
            // Hot: the holder takes leases and keeps most of their units.
            for _ in 0..20 {
                assert!(holder.limit("k", 1.0).await.unwrap().success, "{context}");
            }
            let resetter = on_clock(&servers, rule, &prefix, layout, skewed(1_100_000));
            resetter.reset_used_tokens("k").await.unwrap();
            let mut admitted = 0;
            let plain = on_clock(&servers, rule, &prefix, layout, skewed(0));
            while plain.limit("k", 1.0).await.unwrap().success {
                admitted += 1;
            }
            while holder.limit("k", 1.0).await.unwrap().success {
                admitted += 1;
            }
            holder.return_leases().await;
            // The bucket and GCRA refill meanwhile (one unit in 3.6 s here).
            assert!(
                admitted <= LIMIT + 1,
                "{context}: {admitted} admitted after the reset"
            );
        }
    }
}

#[tokio::test]
async fn issue_40_leases_refuse_dynamic_limits_which_they_could_not_obey_at_once() {
    let servers = Servers::start();
    for rule in hour_limits(1_000) {
        let context = rule.name();
        let prefix = format!("edges:pause:{context}");
        let dynamic = on_clock(&servers, rule, &prefix, KeyLayout::Upstash, skewed(0))
            .with_dynamic_limits(true);
        match dynamic.with_lease(lease(100)) {
            Err(Error::Unsupported { what }) => {
                assert!(what.contains("dynamic limits"), "{context}: {what}")
            }
            Err(other) => panic!("{context}: {other}"),
            Ok(_) => panic!("{context}: leases with dynamic limits"),
        }
        // Turned on after the lease, dynamic limits turn leasing off: a pause holds at once.
        let holder = on_clock(&servers, rule, &prefix, KeyLayout::Upstash, skewed(0))
            .with_lease(lease(100))
            .unwrap()
            .with_dynamic_limits(true);
        for _ in 0..20 {
            assert!(holder.limit("k", 1.0).await.unwrap().success, "{context}");
        }
        holder.set_dynamic_limit(Some(0)).await.unwrap();
        let mut admitted = 0;
        for _ in 0..50 {
            admitted += u64::from(holder.limit("k", 1.0).await.unwrap().success);
        }
        holder.set_dynamic_limit(None).await.unwrap();
        assert_eq!(admitted, 0, "{context}: admitted while paused");
    }
}

/// Lease ledgers holding numbers past 2^53 - 1, or whose sums pass it, for `rule`: each is the units,
/// the end (µs) and the window of one entry, as the ledger writes them. For GCRA also 2^52 units,
/// which its reset would turn into an arrival time past 2^53 - 1 microseconds.
fn ledgers_past_the_bounds(rule: &Algorithm, ends: u64, window: u64) -> Vec<Vec<String>> {
    let entry = |units: &str| format!("{units} {ends} {window}");
    let mut ledgers = vec![
        vec![entry("10000000000000000000000")],
        vec![entry("2000000000000000000"); 5],
        vec![entry("9007199254740992")],
        vec![entry("9007199254740991"), entry("1")],
        vec![format!("5 {}0 {window}", ends)],
    ];
    if matches!(rule, Algorithm::Gcra(_)) {
        ledgers.push(vec![entry("4503599627370496")]);
    }
    ledgers
}

#[tokio::test]
async fn issue_40_a_ledger_past_the_exact_integers_is_corrupt_state_and_nothing_is_written() {
    let servers = Servers::start();
    for layout in LAYOUTS {
        for rule in hour_limits(100) {
            let name = rule.name();
            let prefix = format!("edges:ledger:{name}:{layout:?}");
            let window = match rule {
                Algorithm::FixedWindow(rule) => rule.window_index(now_ms() * 1_000),
                Algorithm::SlidingWindow(rule) => rule.window_index(now_ms() * 1_000),
                _ => 0,
            };
            let ends = (now_ms() + 3_600_000) * 1_000;
            let ledgers = ledgers_past_the_bounds(&rule, ends, window);
            for (index, entries) in ledgers.iter().enumerate() {
                let context = format!("{name} {layout:?} ledger {index}");
                let identifier = format!("ledger-{index}");
                let base = match layout {
                    KeyLayout::Upstash => format!("{prefix}:{identifier}"),
                    KeyLayout::Cluster => format!("{prefix}:{{{identifier}}}"),
                };
                let ledger = format!("edgelimit-lease|{base}");
                let mut command = vec!["HSET".to_owned(), ledger.clone()];
                for (n, entry) in entries.iter().enumerate() {
                    command.push(format!("1.{n}"));
                    command.push(entry.clone());
                }
                let words: Vec<&str> = command.iter().map(String::as_str).collect();
                support::command(&servers, &words).await.unwrap();
                let dump = || async {
                    let keys = support::command(&servers, &["KEYS", &format!("*{base}*")])
                        .await
                        .unwrap();
                    let mut keys: Vec<String> = keys
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|key| key.as_str().unwrap().to_owned())
                        .collect();
                    keys.sort();
                    let mut dumped = Vec::new();
                    for key in keys {
                        let value = support::command(&servers, &["DUMP", &key]).await.unwrap();
                        dumped.push((key, value));
                    }
                    dumped
                };
                let before = dump().await;
                let limit = on_clock(&servers, rule, &prefix, layout, skewed(0))
                    .with_lease(lease(10))
                    .unwrap();
                match limit.reset_used_tokens(&identifier).await {
                    Err(Error::CorruptState { key, .. }) => assert_eq!(key, ledger, "{context}"),
                    other => panic!("{context}: reset {other:?}"),
                }
                assert_eq!(dump().await, before, "{context}: the reset wrote");
                // The first decision that leases reads the ledger too; the GCRA ledger of 2^52
                // units is valid but for its reset.
                if index == 5 {
                    continue;
                }
                let mut decided = Ok(());
                for _ in 0..10 {
                    decided = limit.limit(&identifier, 1.0).await.map(drop);
                    if decided.is_err() {
                        break;
                    }
                }
                match decided {
                    Err(Error::CorruptState { key, .. }) => assert_eq!(key, ledger, "{context}"),
                    other => panic!("{context}: decided {other:?}"),
                }
            }
        }
    }
}

/// GCRA and the token bucket at 5 a second, the windows 5 a second.
#[allow(dead_code)]
fn second_limits() -> [Algorithm; 4] {
    let second = Duration::from_secs(1);
    [
        FixedWindow::new(5, second).unwrap().into(),
        SlidingWindow::new(5, second).unwrap().into(),
        TokenBucket::new(5, second, 5).unwrap().into(),
        Gcra::new(5, second, 5).unwrap().into(),
    ]
}
