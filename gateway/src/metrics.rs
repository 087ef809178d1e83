//! Prometheus metrics (the Prometheus project's `prometheus-client`): what the gateway counts and
//! how `/metrics` encodes it. Labels name databases by the name the tokens file gives them, never
//! by a token.

use std::sync::Arc;

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::error::Failure;

/// The content type of [`Metrics::encode`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The routes requests are counted under, as labels (a handful, whatever the paths).
pub const ROUTES: [&str; 7] = [
    "/",
    "/pipeline",
    "/multi-exec",
    "/{command}",
    "/healthz",
    "/readyz",
    "/metrics",
];

/// How many of [`ROUTES`] take a token (the first ones): their counters are resolved per database.
const TOKEN_ROUTES: usize = 4;

/// The index in [`ROUTES`] of a request's path.
pub fn route_of(path: &str) -> usize {
    match path {
        "/" => 0,
        "/pipeline" => 1,
        "/multi-exec" => 2,
        "/healthz" => 4,
        "/readyz" => 5,
        "/metrics" => 6,
        _ => 3,
    }
}

/// A database's name as a label value (shared, cloned per request without copying the text).
pub type DbName = Arc<String>;

/// Labels of a request: its route, its status and the database its token reaches ("" before a
/// token was accepted).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub route: &'static str,
    pub status: u16,
    pub database: DbName,
}

/// Labels of a request's latency.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LatencyLabels {
    pub route: &'static str,
    pub database: DbName,
}

/// Labels of a failed Redis call: `unavailable` (503) or `timeout` (504).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RedisErrorLabels {
    pub database: DbName,
    pub kind: &'static str,
}

/// Labels of a connection attempt to Redis: `ok` or `failed`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ConnectLabels {
    pub database: DbName,
    pub outcome: &'static str,
}

/// A database alone.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DbLabels {
    pub database: DbName,
}

/// The outcome of a reload (`ok` or `failed`) and what was reloaded (`tokens` or `certificate`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReloadLabels {
    pub what: &'static str,
    pub outcome: &'static str,
}

fn latency_histogram() -> Histogram {
    // 100 µs to about 6.5 s.
    Histogram::new(exponential_buckets(0.0001, 2.0, 17))
}

/// Every metric of the gateway, and the registry that encodes them.
pub struct Metrics {
    registry: Registry,
    /// Requests answered, by route, status and database.
    pub requests: Family<RequestLabels, Counter>,
    /// Seconds from a request's head to its reply, by route and database.
    pub latency: Family<LatencyLabels, Histogram, fn() -> Histogram>,
    /// Requests that failed because Redis was unreachable or too slow.
    pub redis_errors: Family<RedisErrorLabels, Counter>,
    /// Connections opened to Redis (the shared one reopened after a restart, `/multi-exec` ones).
    pub redis_connects: Family<ConnectLabels, Counter>,
    /// Replies refused because they were larger than `--max-reply-bytes`.
    pub replies_refused: Family<DbLabels, Counter>,
    /// `SCRIPT KILL` / `FUNCTION KILL` that stopped a script.
    pub scripts_killed: Family<DbLabels, Counter>,
    /// Client connections open now.
    pub connections_open: Gauge,
    /// Token table and certificate reloads.
    pub reloads: Family<ReloadLabels, Counter>,
    /// Tokens accepted now.
    pub tokens: Gauge,
}

impl Metrics {
    /// A registry with every metric, all at zero.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("edgelimit_gateway");
        let metrics = Self {
            requests: Family::default(),
            latency: Family::new_with_constructor(latency_histogram as fn() -> Histogram),
            redis_errors: Family::default(),
            redis_connects: Family::default(),
            replies_refused: Family::default(),
            scripts_killed: Family::default(),
            connections_open: Gauge::default(),
            reloads: Family::default(),
            tokens: Gauge::default(),
            registry: Registry::default(),
        };
        registry.register(
            "requests",
            "HTTP requests answered, by route, status and database",
            metrics.requests.clone(),
        );
        registry.register(
            "request_duration_seconds",
            "Time from a request's head to its reply, by route and database",
            metrics.latency.clone(),
        );
        registry.register(
            "redis_errors",
            "Requests failed because Redis was unreachable (503) or too slow (504)",
            metrics.redis_errors.clone(),
        );
        registry.register(
            "redis_connects",
            "Connections opened to Redis, by outcome (reconnects after a restart included)",
            metrics.redis_connects.clone(),
        );
        registry.register(
            "replies_refused",
            "Replies refused for being larger than --max-reply-bytes",
            metrics.replies_refused.clone(),
        );
        registry.register(
            "scripts_killed",
            "SCRIPT KILL or FUNCTION KILL that stopped a running script",
            metrics.scripts_killed.clone(),
        );
        registry.register(
            "connections_open",
            "Client connections open",
            metrics.connections_open.clone(),
        );
        registry.register(
            "reloads",
            "Reloads of the tokens file or the TLS certificate, by outcome",
            metrics.reloads.clone(),
        );
        registry.register("tokens", "Tokens accepted now", metrics.tokens.clone());
        Self {
            registry,
            ..metrics
        }
    }

    /// The text exposition of every metric.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }

    /// Counts a reload of `what`.
    pub fn reloaded(&self, what: &'static str, ok: bool) {
        let outcome = if ok { "ok" } else { "failed" };
        self.reloads
            .get_or_create(&ReloadLabels { what, outcome })
            .inc();
    }

    /// Counts a request of `database` that failed on Redis, or whose reply was too large.
    pub fn failed(&self, database: &DbName, failure: Failure) {
        let database = database.clone();
        let kind = match failure {
            Failure::Unavailable => "unavailable",
            Failure::Timeout => "timeout",
            Failure::ReplyTooLarge => {
                self.replies_refused
                    .get_or_create(&DbLabels { database })
                    .inc();
                return;
            }
        };
        self.redis_errors
            .get_or_create(&RedisErrorLabels { database, kind })
            .inc();
    }

    /// The counters of one database's successful requests per route, resolved once.
    pub fn answered(&self, database: &DbName) -> Answered {
        Answered(
            ROUTES[..TOKEN_ROUTES]
                .iter()
                .map(|&route| {
                    let database = database.clone();
                    let requests = RequestLabels {
                        route,
                        status: 200,
                        database: database.clone(),
                    };
                    (
                        self.requests.get_or_create_owned(&requests),
                        self.latency
                            .get_or_create_owned(&LatencyLabels { route, database }),
                    )
                })
                .collect(),
        )
    }

    /// The counters of one database's connection attempts, resolved once.
    pub fn connects(&self, database: &DbName) -> ConnectCounters {
        let counter = |outcome| {
            self.redis_connects.get_or_create_owned(&ConnectLabels {
                database: database.clone(),
                outcome,
            })
        };
        ConnectCounters {
            ok: counter("ok"),
            failed: counter("failed"),
        }
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

/// One database's counter and latency histogram of 200s per route that takes a token: clones of
/// the registry's, so that the common request finds them without a lookup.
#[derive(Clone, Debug, Default)]
pub struct Answered(Vec<(Counter, Histogram)>);

impl Answered {
    /// Counts a 200 of `route` (an index in [`ROUTES`]); false if the route has no counters here.
    pub fn count(&self, route: usize, seconds: f64) -> bool {
        match self.0.get(route) {
            Some((requests, latency)) => {
                requests.inc();
                latency.observe(seconds);
                true
            }
            None => false,
        }
    }
}

/// One database's connection counters (clones of the registry's, so counting takes no lock).
#[derive(Clone, Debug, Default)]
pub struct ConnectCounters {
    ok: Counter,
    failed: Counter,
}

impl ConnectCounters {
    /// Counts an attempt to open a connection.
    pub fn count<T, E>(&self, result: &Result<T, E>) {
        match result {
            Ok(_) => self.ok.inc(),
            Err(_) => self.failed.inc(),
        };
    }
}
