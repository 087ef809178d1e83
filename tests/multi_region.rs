//! `MultiRegionRatelimit` against real regions: separate redis-servers behind one gateway, each reached
//! with its own token. Convergence, faults (a region down, every region down), reset, dynamic limits.

#![cfg(not(target_arch = "wasm32"))]

mod support;

use edgelimit::algorithm::Algorithm;
use edgelimit::ratelimit::{FailMode, Reason};
use edgelimit::redis::RestClient;
use edgelimit::transport::HttpTransport;
use edgelimit::Configure;
use edgelimit::{FixedWindow, Gcra, ManualClock, MultiRegionRatelimit, SlidingWindow, TokenBucket};
use std::collections::BTreeMap;
use std::time::Duration;
use support::Redis;

/// Redis servers, one per region, behind one gateway that maps the token `region-<i>` to server `i`.
struct Regions {
    servers: Vec<Redis>,
    gateway: test_support::Gateway,
    _dir: TempDir,
}

/// A directory removed on drop.
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Regions {
    fn start(count: usize) -> Self {
        let servers: Vec<Redis> = (0..count).map(|_| Redis::start()).collect();
        let dir =
            std::env::temp_dir().join(format!("edgelimit-regions-{}", test_support::free_port()));
        std::fs::create_dir_all(&dir).unwrap();
        let tokens: String = servers
            .iter()
            .enumerate()
            .map(|(index, server)| format!("region-{index} {}\n", server.url(0)))
            .collect();
        let file = dir.join("tokens");
        std::fs::write(&file, tokens).unwrap();
        let gateway = test_support::Gateway::start_with(&[
            "--tokens",
            file.to_str().unwrap(),
            "--timeout-ms",
            "1000",
        ]);
        Self {
            servers,
            gateway,
            _dir: TempDir(dir),
        }
    }

    fn transport(&self, index: usize) -> HttpTransport {
        HttpTransport::new(&self.gateway.url(), &format!("region-{index}"))
            .unwrap()
            .with_timeout(Some(Duration::from_secs(2)))
    }

    fn transports(&self) -> Vec<HttpTransport> {
        (0..self.servers.len())
            .map(|index| self.transport(index))
            .collect()
    }

    /// A limit over every region, with keys `mr:<identifier>:<window>`, at [`NOW_MS`].
    fn limit(&self, rule: impl Into<Algorithm>) -> MultiRegionRatelimit<HttpTransport> {
        MultiRegionRatelimit::new(self.transports(), rule)
            .unwrap()
            .with_prefix("mr")
            .with_clock(ManualClock::from_millis(NOW_MS))
    }

    async fn command(&self, index: usize, command: &[&str]) -> edgelimit::redis::Reply {
        RestClient::new(self.transport(index))
            .command(command)
            .await
            .unwrap()
    }

    /// The hash `key` in region `index`, id -> cost.
    async fn hash(&self, index: usize, key: &str) -> BTreeMap<String, String> {
        let reply = self.command(index, &["HGETALL", key]).await;
        let fields = reply.as_array().unwrap().to_vec();
        fields
            .chunks(2)
            .map(|pair| {
                (
                    pair[0].as_str().unwrap().to_owned(),
                    pair[1].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }

    /// Every key of region `index` matching `pattern`.
    async fn keys(&self, index: usize, pattern: &str) -> Vec<String> {
        let reply = self.command(index, &["KEYS", pattern]).await;
        let mut keys: Vec<String> = reply
            .as_array()
            .unwrap()
            .iter()
            .map(|key| key.as_str().unwrap().to_owned())
            .collect();
        keys.sort();
        keys
    }

    /// Asserts that every region holds the same hashes under `pattern`, and returns them.
    async fn converged(&self, pattern: &str) -> BTreeMap<String, BTreeMap<String, String>> {
        let mut first = None;
        for index in 0..self.servers.len() {
            let mut hashes = BTreeMap::new();
            for key in self.keys(index, pattern).await {
                let hash = self.hash(index, &key).await;
                hashes.insert(key, hash);
            }
            match &first {
                None => first = Some(hashes),
                Some(first) => assert_eq!(&hashes, first, "region {index} differs from region 0"),
            }
        }
        first.unwrap()
    }
}

/// The time of every decision: 20 minutes into an hour, so the previous hour's window is empty.
const NOW_MS: u64 = 1_700_000_000_000 + 1_200_000;

fn hour_limits(limit: u64) -> Vec<Algorithm> {
    let hour = Duration::from_secs(3600);
    vec![
        FixedWindow::new(limit, hour).unwrap().into(),
        SlidingWindow::new(limit, hour).unwrap().into(),
    ]
}

#[tokio::test]
async fn after_pending_every_region_holds_the_same_ids_each_with_its_own_cost() {
    let regions = Regions::start(3);
    for (round, rule) in hour_limits(20).into_iter().enumerate() {
        let identifier = format!("user-{round}");
        // Regions that disagree before: ids only one region knows, one written by the peer.
        let window = match rule {
            Algorithm::FixedWindow(rule) => rule.window_index(NOW_MS * 1_000),
            Algorithm::SlidingWindow(rule) => rule.window_index(NOW_MS * 1_000),
            _ => unreachable!(),
        };
        let key = format!("mr:{identifier}:{window}");
        regions.command(1, &["HSET", &key, "seen-in-1", "3"]).await;
        regions.command(2, &["HSET", &key, "seen-in-2", "2"]).await;

        let limiters: Vec<_> = (0..3).map(|_| regions.limit(rule)).collect();
        let mut pendings = Vec::new();
        for (index, rate) in [1.0, 2.0, 1.0, 3.0, 1.0].into_iter().enumerate() {
            let (response, pending) = limiters[index % 3]
                .limit_with_pending(&identifier, rate)
                .await
                .unwrap();
            assert!(response.success, "{rule:?}: {response:?}");
            assert!(response.remaining >= 0.0);
            pendings.push(pending);
        }
        futures::future::join_all(pendings).await;

        let hashes = regions.converged(&format!("mr:{identifier}:*")).await;
        let hash = &hashes[&key];
        assert_eq!(hash.len(), 7, "{hash:?}");
        assert_eq!(hash["seen-in-1"], "3");
        assert_eq!(hash["seen-in-2"], "2");
        let mut costs: Vec<&str> = hash
            .iter()
            .filter(|(id, _)| id.len() == 32)
            .map(|(_, cost)| cost.as_str())
            .collect();
        costs.sort_unstable();
        assert_eq!(
            costs,
            ["1", "1", "1", "2", "3"],
            "each id keeps its own cost"
        );
        for index in 0..3 {
            let ttl = regions
                .command(index, &["PTTL", &key])
                .await
                .as_i64()
                .unwrap();
            assert!(ttl > 0, "region {index} has a TTL on {key}: {ttl}");
        }
        let remaining = regions
            .limit(rule)
            .get_remaining(&identifier)
            .await
            .unwrap();
        assert_eq!(remaining.remaining, 20.0 - 13.0);
    }
}

#[tokio::test]
async fn a_full_region_is_merged_too_and_remaining_never_goes_negative() {
    let regions = Regions::start(2);
    let rule = FixedWindow::new(3, Duration::from_secs(3600)).unwrap();
    let window = rule.window_index(NOW_MS * 1_000);
    let key = format!("mr:full:{window}");
    // Both regions are full already, of different requests.
    for (index, ids) in [(0, ["a", "b", "c"]), (1, ["d", "e", "f"])] {
        for id in ids {
            regions.command(index, &["HSET", &key, id, "1"]).await;
        }
    }
    let limiter = regions.limit(rule).with_ephemeral_cache(None);
    let (response, pending) = limiter.limit_with_pending("full", 1.0).await.unwrap();
    pending.await;
    assert!(!response.success);
    assert_eq!(response.remaining, 0.0);
    let hashes = regions.converged("mr:full:*").await;
    let ids: Vec<&String> = hashes[&key].keys().collect();
    assert_eq!(
        ids,
        ["a", "b", "c", "d", "e", "f"],
        "full regions are merged"
    );
    let denied = limiter.limit("full", 1.0).await.unwrap();
    assert!(!denied.success);
    assert_eq!(denied.remaining, 0.0);
}

#[tokio::test]
async fn a_region_down_delays_nothing_and_is_brought_up_to_date_when_it_returns() {
    let mut regions = Regions::start(3);
    let rule = SlidingWindow::new(50, Duration::from_secs(3600)).unwrap();
    let limiter = regions.limit(rule);
    regions.servers[1].stop();
    for _ in 0..4 {
        let response = limiter.limit("down", 1.0).await.unwrap();
        assert!(
            response.success && response.reason.is_none(),
            "{response:?}"
        );
    }
    let before = regions.converged_over(&[0, 2], "mr:down:*").await;
    assert_eq!(before.values().map(BTreeMap::len).sum::<usize>(), 4);

    // It comes back empty (no persistence): the next request's merge gives it every id.
    regions.servers[1].restart();
    let response = limiter.limit("down", 1.0).await.unwrap();
    assert!(response.success);
    let after = regions.converged("mr:down:*").await;
    assert_eq!(after.values().map(BTreeMap::len).sum::<usize>(), 5);
}

impl Regions {
    /// [`Regions::converged`] over some regions only.
    async fn converged_over(
        &self,
        indices: &[usize],
        pattern: &str,
    ) -> BTreeMap<String, BTreeMap<String, String>> {
        let mut first = None;
        for &index in indices {
            let mut hashes = BTreeMap::new();
            for key in self.keys(index, pattern).await {
                hashes.insert(key.clone(), self.hash(index, &key).await);
            }
            match &first {
                None => first = Some(hashes),
                Some(first) => assert_eq!(&hashes, first, "region {index}"),
            }
        }
        first.unwrap()
    }
}

#[tokio::test]
async fn with_every_region_down_the_fail_mode_answers_with_a_reason() {
    let mut regions = Regions::start(2);
    for server in &mut regions.servers {
        server.stop();
    }
    for mode in [FailMode::Open, FailMode::Closed] {
        let limiter = regions.limit(hour_limits(5)[0]).with_fail_mode(mode);
        let (response, pending) = limiter.limit_with_pending("gone", 1.0).await.unwrap();
        pending.await;
        assert_eq!(response.success, mode == FailMode::Open);
        assert_eq!(response.reason, Some(Reason::Error));
        assert!(limiter.get_remaining("gone").await.is_err());
        assert!(limiter.reset_used_tokens("gone").await.is_err());
    }
}

#[tokio::test]
async fn corrupt_state_is_an_error_in_both_fail_modes_even_beside_a_region_down() {
    let mut regions = Regions::start(2);
    let window = (NOW_MS / 3_600_000).to_string();
    for (index, rule) in hour_limits(5).into_iter().enumerate() {
        let id = format!("corrupt{index}");
        let key = format!("mr:{id}:{window}");
        // Every region holds a cost that is no number: no region decides.
        for region in 0..2 {
            regions.command(region, &["HSET", &key, "1:x", "nan"]).await;
        }
        for mode in [FailMode::Open, FailMode::Closed] {
            let limiter = regions.limit(rule).with_fail_mode(mode);
            let error = limiter.limit(&id, 1.0).await.unwrap_err();
            assert!(
                matches!(&error, edgelimit::Error::CorruptState { key: named, .. } if *named == key),
                "{mode:?}: {error}"
            );
            assert!(limiter.get_remaining(&id).await.is_err());
        }
        for region in 0..2 {
            let stored = regions.command(region, &["HGET", &key, "1:x"]).await;
            assert_eq!(stored.to_string(), "\"nan\"", "never written back");
        }
    }
    // One region corrupt, the other down: the error, never the fail mode.
    regions.servers[1].stop();
    let limiter = regions.limit(hour_limits(5)[0]);
    let error = limiter.limit("corrupt0", 1.0).await.unwrap_err();
    assert!(
        matches!(error, edgelimit::Error::CorruptState { .. }),
        "{error}"
    );
}

#[tokio::test]
async fn reset_clears_every_region_and_dynamic_limits_reach_them_all() {
    let regions = Regions::start(2);
    for rule in hour_limits(4) {
        let limiter = regions.limit(rule).with_dynamic_limits(true);
        for _ in 0..4 {
            assert!(limiter.limit("r", 1.0).await.unwrap().success);
        }
        assert!(!limiter.limit("r", 1.0).await.unwrap().success);
        limiter.reset_used_tokens("r").await.unwrap();
        for index in 0..2 {
            assert_eq!(regions.keys(index, "mr:r:*").await, Vec::<String>::new());
        }
        assert!(limiter.limit("r", 1.0).await.unwrap().success);

        limiter.set_dynamic_limit(Some(2)).await.unwrap();
        for index in 0..2 {
            let stored = regions.command(index, &["GET", "mr:dynamic:global"]).await;
            assert_eq!(stored.as_str(), Some("2"), "region {index}");
        }
        assert_eq!(limiter.dynamic_limit().await.unwrap(), Some(2));
        let response = limiter.limit("r", 1.0).await.unwrap();
        assert_eq!(
            (response.success, response.limit, response.remaining),
            (true, 2, 0.0)
        );
        assert!(!limiter.limit("r", 1.0).await.unwrap().success);
        limiter.set_dynamic_limit(None).await.unwrap();
        assert_eq!(limiter.dynamic_limit().await.unwrap(), None);
        limiter.reset_used_tokens("r").await.unwrap();
    }
}

#[tokio::test]
async fn the_ephemeral_cache_can_be_turned_off_and_bad_input_is_an_error() {
    let regions = Regions::start(2);
    let rule = hour_limits(1)[0];
    let cached = regions.limit(rule);
    assert!(cached.limit("c", 1.0).await.unwrap().success);
    assert!(!cached.limit("c", 1.0).await.unwrap().success);
    assert_eq!(cached.cached_blocks(), 1);
    let blocked = cached.limit("c", 1.0).await.unwrap();
    assert_eq!(blocked.reason, Some(Reason::CacheBlock));

    let uncached = regions.limit(rule).with_ephemeral_cache(None);
    let denied = uncached.limit("c", 1.0).await.unwrap();
    assert!(!denied.success && denied.reason.is_none());
    assert_eq!(uncached.cached_blocks(), 0);

    // The empty identifier is a key like any other, as for `Ratelimit` and the peer.
    assert!(uncached.limit("", 1.0).await.unwrap().success);
    assert!(uncached.limit("c", 0.5).await.is_err());
    assert!(uncached.limit("c", f64::NAN).await.is_err());
    assert!(MultiRegionRatelimit::<HttpTransport>::new(Vec::new(), rule).is_err());
}

fn buckets() -> Vec<Algorithm> {
    vec![
        TokenBucket::new(2, Duration::from_millis(300), 5)
            .unwrap()
            .into(),
        Gcra::new(4, Duration::from_secs(1), 3).unwrap().into(),
    ]
}

#[tokio::test]
async fn buckets_in_sync_decide_as_the_single_region_algorithm() {
    let regions = Regions::start(3);
    for rule in buckets() {
        let clock = ManualClock::from_millis(NOW_MS);
        let limiter = regions
            .limit(rule)
            .with_ephemeral_cache(None)
            .with_clock(clock.clone());
        let mut single = None;
        // Costs in quarters, refunds among them; steps across several epochs.
        let steps = [
            (0, 1.0),
            (1, 1.0),
            (1, 2.5),
            (10, 1.0),
            (50, 3.0),
            (120, -1.0),
            (5, 1.0),
            (400, 1.0),
            (1, 1.0),
            (1, 1.0),
            (1, 1.0),
            (900, 2.0),
            (2_000, 6.0),
            (3, 0.25),
        ];
        for (advance_ms, cost) in steps {
            clock.advance(Duration::from_millis(advance_ms));
            let at = clock_micros(&clock);
            let expected = rule.acquire(single.as_ref(), at, cost).unwrap();
            single = Some(expected.state);
            let response = limiter.limit("b", cost).await.unwrap();
            assert_eq!(response.reason, None, "{rule:?} at {at}: {response:?}");
            assert_eq!(
                (response.success, response.remaining),
                (
                    expected.decision.allowed,
                    expected.decision.remaining.max(0.0)
                ),
                "{rule:?} at {at}, cost {cost}"
            );
        }
        let hashes = regions.converged("mr:b:bucket:*").await;
        assert!(!hashes.is_empty());
        limiter.reset_used_tokens("b").await.unwrap();
        let remaining = limiter.get_remaining("b").await.unwrap();
        assert_eq!(remaining.remaining, rule.capacity() as f64, "{rule:?}");
    }
}

#[tokio::test]
async fn buckets_converge_and_repay_what_regions_admitted_together() {
    let regions = Regions::start(2);
    for (round, rule) in buckets().into_iter().enumerate() {
        let id = format!("c{round}");
        let clock = ManualClock::from_millis(NOW_MS);
        // Each client reaches one region only: they admit without hearing of each other.
        let alone: Vec<_> = (0..2)
            .map(|index| {
                MultiRegionRatelimit::new(vec![regions.transport(index)], rule)
                    .unwrap()
                    .with_prefix("mr")
                    .with_ephemeral_cache(None)
                    .with_clock(clock.clone())
            })
            .collect();
        let capacity = rule.capacity();
        for limiter in &alone {
            for _ in 0..capacity {
                assert!(limiter.limit(&id, 1.0).await.unwrap().success);
            }
        }
        // A client of both merges them: both regions now hold twice the capacity, a debt.
        let both = regions
            .limit(rule)
            .with_ephemeral_cache(None)
            .with_clock(clock.clone());
        let (denied, pending) = both.limit_with_pending(&id, 1.0).await.unwrap();
        pending.await;
        assert!(!denied.success && denied.remaining == 0.0, "{denied:?}");
        let hashes = regions
            .converged_over(&[0, 1], &format!("mr:{id}:bucket:*"))
            .await;
        let requests: usize = hashes
            .values()
            .map(|hash| hash.keys().filter(|field| field.contains(':')).count())
            .sum();
        assert_eq!(requests, 2 * capacity as usize);
        // The debt is waited out: half the time a bucket takes to refill, and one region's client is
        // still denied, though a bucket without the debt would have refilled by then.
        let refill = Duration::from_millis(edgelimit::multi_region::epoch_ms(&rule));
        clock.advance(refill / 2);
        assert!(!alone[0].limit(&id, 1.0).await.unwrap().success, "{rule:?}");
        clock.advance(refill * 2);
        assert!(alone[0].limit(&id, 1.0).await.unwrap().success, "{rule:?}");
    }
}

fn clock_micros(clock: &ManualClock) -> u64 {
    use edgelimit::Clock;
    clock.now_micros()
}

#[tokio::test]
async fn a_client_never_admits_past_what_it_has_seen_though_a_region_has_not() {
    let regions = Regions::start(1);
    for (round, rule) in hour_limits(3).into_iter().chain(buckets()).enumerate() {
        let id = format!("seen{round}");
        let limiter = regions.limit(rule).with_ephemeral_cache(None);
        let capacity = rule.capacity();
        for _ in 0..capacity {
            assert!(limiter.limit(&id, 1.0).await.unwrap().success, "{rule:?}");
        }
        // The region loses its state (say, a restart without persistence): it would admit again, but
        // this client has seen the limit reached in this window.
        let keys = regions.keys(0, &format!("mr:{id}:*")).await;
        assert!(!keys.is_empty());
        let mut delete = vec!["DEL"];
        delete.extend(keys.iter().map(String::as_str));
        regions.command(0, &delete).await;
        let denied = limiter.limit(&id, 1.0).await.unwrap();
        assert!(!denied.success, "{rule:?}: {denied:?}");
        let other_client = regions.limit(rule).with_ephemeral_cache(None);
        assert!(
            other_client.limit(&id, 1.0).await.unwrap().success,
            "{rule:?}"
        );
        // A reset forgets what was seen too.
        limiter.reset_used_tokens(&id).await.unwrap();
        assert!(limiter.limit(&id, 1.0).await.unwrap().success, "{rule:?}");
    }
}

/// Issue 40: a refund gives back at most what the window or bucket used, never credit, in every
/// algorithm: on an unused identifier it gives back nothing.
#[tokio::test]
async fn issue_40_a_refund_never_goes_below_empty() {
    let regions = Regions::start(2);
    let hour = Duration::from_secs(3600);
    let rules: [Algorithm; 4] = [
        FixedWindow::new(5, hour).unwrap().into(),
        SlidingWindow::new(5, hour).unwrap().into(),
        TokenBucket::new(5, hour, 5).unwrap().into(),
        Gcra::new(5, hour, 5).unwrap().into(),
    ];
    for rule in rules {
        let name = rule.name();
        let id = format!("refund-{name}");
        let limiter = regions.limit(rule).with_ephemeral_cache(None);
        limiter.limit(&id, -(2f64.powi(53) - 1.0)).await.unwrap();
        let first = admitted(&limiter, &id).await;
        assert_eq!(first, 5, "{name}: after a refund on nothing");
        // Refunded after use, it gives back what was used.
        limiter.limit(&id, -1e15).await.unwrap();
        let second = admitted(&limiter, &id).await;
        assert_eq!(second, 5, "{name}: after a refund of more than used");
        let other = regions.limit(rule).with_ephemeral_cache(None);
        assert_eq!(admitted(&other, &id).await, 0, "{name}: another client");
    }
}

/// How many of 20 requests of `id` `limiter` admits.
async fn admitted(limiter: &MultiRegionRatelimit<HttpTransport>, id: &str) -> u64 {
    let mut admitted = 0;
    for _ in 0..20 {
        admitted += u64::from(limiter.limit(id, 1.0).await.unwrap().success);
    }
    admitted
}
