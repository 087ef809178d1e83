//! Command-line flags, environment variables and the token file, validated into [`Config`].

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

/// Commands refused by default: they can wipe or reconfigure the whole server.
pub const DEFAULT_DENIED: &str =
    "FLUSHALL,FLUSHDB,CONFIG,SHUTDOWN,DEBUG,MODULE,ACL,SAVE,BGSAVE,BGREWRITEAOF,REPLICAOF,SLAVEOF,FAILOVER,MIGRATE,SWAPDB";

/// The smallest `--max-reply-bytes`.
const MIN_REPLY_BYTES: usize = 1024;

/// Upstash-compatible REST gateway in front of redis-server.
///
/// Accepts the Upstash REST protocol (`POST /` command arrays, the path form `/set/k/v`,
/// `/pipeline`, `/multi-exec`) and forwards it to Redis. One process can serve several
/// independent databases: each token maps to one Redis URL (see `--tokens`).
#[derive(Debug, Parser)]
#[command(name = "edgelimit-gateway", version, about, long_about)]
pub struct Args {
    /// Address to listen on.
    #[arg(long, env = "GATEWAY_LISTEN", default_value = "127.0.0.1:8079")]
    pub listen: SocketAddr,

    /// Redis URL used by `--token` and `--readonly-token`, e.g. redis://127.0.0.1:6379/0.
    #[arg(long = "redis", env = "GATEWAY_REDIS_URL", value_name = "URL")]
    pub redis: Option<String>,

    /// A Redis Cluster instead of `--redis`: comma-separated URLs of some of its nodes, e.g.
    /// redis://gateway:PASSWORD@10.0.0.1:7000,redis://gateway:PASSWORD@10.0.0.2:7000. Commands
    /// go to the master of their key's slot; the rest of the cluster is discovered.
    #[arg(
        long = "redis-cluster",
        env = "GATEWAY_REDIS_CLUSTER_URLS",
        value_name = "URLS",
        conflicts_with_all = ["redis", "readonly_redis"]
    )]
    pub redis_cluster: Option<String>,

    /// Read-write token for `--redis` (sent as `Authorization: Bearer <token>` or `?_token=`).
    #[arg(long, env = "GATEWAY_TOKEN", hide_env_values = true)]
    pub token: Option<String>,

    /// Read-only token for `--redis` (or `--readonly-redis`): only read commands are accepted
    /// with it.
    #[arg(long, env = "GATEWAY_READONLY_TOKEN", hide_env_values = true)]
    pub readonly_token: Option<String>,

    /// Redis URL for `--readonly-token` alone, as a user without write commands (its rules are
    /// checked at start-up); `--redis` by default.
    #[arg(
        long = "readonly-redis",
        env = "GATEWAY_READONLY_REDIS_URL",
        value_name = "URL"
    )]
    pub readonly_redis: Option<String>,

    /// File mapping tokens to Redis URLs, one per line: `<token> <redis-url> [rw|ro]`, where
    /// `cluster:URL,URL…` names a Redis Cluster by some of its nodes. Blank lines and lines
    /// starting with `#` are ignored. Tokens that share a URL share its connections; different
    /// URLs are independent databases (e.g. regions).
    #[arg(long, env = "GATEWAY_TOKENS_FILE", value_name = "FILE")]
    pub tokens: Option<PathBuf>,

    /// Time a request may wait for Redis (connecting included) before a 504 JSON error.
    #[arg(long, env = "GATEWAY_TIMEOUT_MS", default_value_t = 5000)]
    pub timeout_ms: u64,

    /// Largest accepted request body in bytes; larger bodies get a 413 JSON error.
    #[arg(long, env = "GATEWAY_MAX_BODY_BYTES", default_value_t = 1024 * 1024)]
    pub max_body_bytes: usize,

    /// Largest reply of one request (all the replies of a pipeline together), in bytes as Redis
    /// sends them; larger replies are refused with a 400 JSON error while they are read.
    #[arg(long, env = "GATEWAY_MAX_REPLY_BYTES", default_value_t = 16 * 1024 * 1024)]
    pub max_reply_bytes: usize,

    /// Most commands in one `/pipeline` or `/multi-exec` request.
    #[arg(long, env = "GATEWAY_MAX_PIPELINE_COMMANDS", default_value_t = 10_000)]
    pub max_pipeline_commands: usize,

    /// Comma-separated commands refused with 403 (case-insensitive). Pass an empty string
    /// to deny nothing.
    #[arg(long, env = "GATEWAY_DENY_COMMANDS", default_value = DEFAULT_DENIED)]
    pub deny_commands: String,

    /// Run only known Lua scripts: EVAL, EVALSHA and SCRIPT LOAD of edgelimit's scripts,
    /// `@upstash/ratelimit` 2.2.0's and those of `--scripts-file`; anything else gets 403.
    #[arg(long, env = "GATEWAY_KNOWN_SCRIPTS_ONLY")]
    pub known_scripts_only: bool,

    /// More known scripts for `--known-scripts-only`: a file of SHA-1s (one per line, `#`
    /// comments) or one script's text. Repeat the flag (or separate with commas) for several.
    #[arg(
        long,
        env = "GATEWAY_SCRIPTS_FILE",
        value_name = "FILE",
        value_delimiter = ','
    )]
    pub scripts_file: Vec<PathBuf>,

    /// Time a client has from the first byte of a request head to its end before the
    /// connection is closed (slow-header clients).
    #[arg(long, env = "GATEWAY_HEADER_READ_TIMEOUT_MS", default_value_t = 10_000)]
    pub header_read_timeout_ms: u64,

    /// A connection with no request in flight and no byte either way for this long is closed
    /// (keep-alive connections, and connections that never send a byte).
    #[arg(long, env = "GATEWAY_IDLE_TIMEOUT_MS", default_value_t = 60_000)]
    pub idle_timeout_ms: u64,

    /// Most client connections open at once; further ones wait in the listen backlog.
    #[arg(long, env = "GATEWAY_MAX_CONNECTIONS", default_value_t = 4096)]
    pub max_connections: usize,

    /// After SIGTERM/SIGINT, how long in-flight requests may take before the process exits.
    #[arg(long, env = "GATEWAY_SHUTDOWN_TIMEOUT_MS", default_value_t = 10_000)]
    pub shutdown_timeout_ms: u64,

    /// Serve even if the Redis user may run commands the gateway denies (the default user
    /// may run everything, and Lua scripts run with its rights). Without it the gateway checks
    /// the user's ACL rules at start-up and refuses to start.
    #[arg(long, env = "GATEWAY_UNSAFE_ALLOW_ADMIN")]
    pub unsafe_allow_admin: bool,

    /// Most dedicated Redis connections open at once for `/multi-exec` (per Redis URL).
    #[arg(long, env = "GATEWAY_MULTI_CONNECTIONS", default_value_t = 32)]
    pub multi_connections: usize,
}

/// Limits on client connections, enforced by the accept loop.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// From the first byte of a request head to its end (slow-header clients).
    pub header_read: Duration,
    /// No request in flight and no byte either way for this long: the connection is closed
    /// (also a connection that never sends a byte).
    pub idle: Duration,
    /// Open connections at most; further ones wait in the listen backlog.
    pub max_connections: usize,
    /// After the shutdown signal, how long in-flight requests may take before the process exits.
    pub shutdown_grace: Duration,
}

/// The prefix of a Redis Cluster's seed URLs in the tokens file.
const CLUSTER_PREFIX: &str = "cluster:";

/// What one upstream connects to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// One Redis server (one database), by URL.
    Server(String),
    /// A Redis Cluster, by the URLs of some of its nodes.
    Cluster(Vec<String>),
}

impl Target {
    /// `cluster:URL,URL…` is a cluster, anything else one server's URL; every URL is checked.
    fn parse(spec: &str) -> Result<Self, String> {
        match spec.strip_prefix(CLUSTER_PREFIX) {
            Some(urls) => Self::cluster(urls),
            None => Self::server(spec),
        }
    }

    /// One server, by URL.
    fn server(url: &str) -> Result<Self, String> {
        check_url(url)?;
        Ok(Self::Server(url.to_owned()))
    }

    /// A cluster from comma-separated seed URLs.
    fn cluster(urls: &str) -> Result<Self, String> {
        let urls: Vec<String> = urls
            .split(',')
            .map(str::trim)
            .filter(|url| !url.is_empty())
            .map(str::to_owned)
            .collect();
        if urls.is_empty() {
            return Err("a Redis Cluster needs at least one node URL".into());
        }
        for url in &urls {
            check_url(url)?;
        }
        redis::cluster::ClusterClient::new(urls.clone())
            .map_err(|e| format!("invalid Redis Cluster URLs {urls:?}: {e}"))?;
        Ok(Self::Cluster(urls))
    }
}

fn check_url(url: &str) -> Result<(), String> {
    redis::Client::open(url).map_err(|e| format!("invalid Redis URL {url:?}: {e}"))?;
    Ok(())
}

/// One token and what it may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenSpec {
    /// The secret itself.
    pub token: String,
    /// Index into [`Config::targets`].
    pub upstream: usize,
    /// Whether only read commands are allowed.
    pub readonly: bool,
}

/// Validated settings the server runs with.
#[derive(Debug, Clone)]
pub struct Config {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Distinct Redis servers and clusters, one upstream each.
    pub targets: Vec<Target>,
    /// All accepted tokens.
    pub tokens: Vec<TokenSpec>,
    /// Per-request deadline for Redis work.
    pub timeout: Duration,
    /// Body size limit.
    pub max_body_bytes: usize,
    /// Reply size limit per request.
    pub max_reply_bytes: usize,
    /// Command count limit per pipeline or transaction.
    pub max_pipeline_commands: usize,
    /// Upper-case names of denied commands.
    pub denied: Vec<String>,
    /// Dedicated connections per upstream for transactions.
    pub multi_connections: usize,
    /// Client connection limits.
    pub limits: Limits,
    /// Whether to skip the ACL check of the Redis users.
    pub unsafe_allow_admin: bool,
    /// Whether only known scripts may run.
    pub known_scripts_only: bool,
    /// Files of extra known scripts.
    pub scripts_files: Vec<PathBuf>,
}

impl Config {
    /// Validates the flags and reads the token file.
    pub fn from_args(args: Args) -> Result<Self, String> {
        let mut config = Config {
            listen: args.listen,
            targets: Vec::new(),
            tokens: Vec::new(),
            timeout: Duration::from_millis(args.timeout_ms.max(1)),
            max_body_bytes: args.max_body_bytes,
            max_reply_bytes: args.max_reply_bytes,
            max_pipeline_commands: args.max_pipeline_commands.max(1),
            denied: args
                .deny_commands
                .split(',')
                .map(|c| c.trim().to_ascii_uppercase())
                .filter(|c| !c.is_empty())
                .collect(),
            multi_connections: args.multi_connections.max(1),
            limits: Limits {
                header_read: Duration::from_millis(args.header_read_timeout_ms.max(1)),
                idle: Duration::from_millis(args.idle_timeout_ms.max(1)),
                max_connections: args.max_connections.clamp(1, u32::MAX as usize),
                shutdown_grace: Duration::from_millis(args.shutdown_timeout_ms),
            },
            unsafe_allow_admin: args.unsafe_allow_admin,
            known_scripts_only: args.known_scripts_only,
            scripts_files: args.scripts_file,
        };
        if config.max_reply_bytes < MIN_REPLY_BYTES {
            return Err(format!(
                "--max-reply-bytes must be at least {MIN_REPLY_BYTES} (the connection handshake's \
                 replies count too)"
            ));
        }
        if !config.known_scripts_only && !config.scripts_files.is_empty() {
            return Err("--scripts-file needs --known-scripts-only".into());
        }
        if args.readonly_redis.is_some() && args.readonly_token.is_none() {
            return Err("--readonly-redis needs --readonly-token".into());
        }
        let main = match (&args.redis, &args.redis_cluster) {
            (Some(url), _) => Some(Target::server(url)?),
            (None, Some(urls)) => Some(Target::cluster(urls)?),
            (None, None) => None,
        };
        if args.token.is_some() || args.readonly_token.is_some() {
            if let Some(token) = args.token {
                let target = main
                    .clone()
                    .ok_or("--token needs --redis URL (or --redis-cluster)")?;
                config.add(token, target, false)?;
            }
            if let Some(token) = args.readonly_token {
                let target = match &args.readonly_redis {
                    Some(url) => Target::server(url)?,
                    None => main.clone().ok_or(
                        "--readonly-token needs --redis (or --readonly-redis, --redis-cluster) URL",
                    )?,
                };
                config.add(token, target, true)?;
            }
        } else if main.is_some() && args.tokens.is_none() {
            return Err("--redis and --redis-cluster need --token (or --readonly-token)".into());
        }
        if let Some(path) = &args.tokens {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read tokens file {}: {e}", path.display()))?;
            for (n, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let fields: Vec<&str> = line.split_whitespace().collect();
                let readonly = match fields.get(2).copied() {
                    None | Some("rw") => false,
                    Some("ro") => true,
                    Some(other) => {
                        return Err(format!(
                            "{}:{}: third field must be rw or ro, got {other:?}",
                            path.display(),
                            n + 1
                        ))
                    }
                };
                if fields.len() < 2 || fields.len() > 3 {
                    return Err(format!(
                        "{}:{}: expected `<token> <redis-url> [rw|ro]`",
                        path.display(),
                        n + 1
                    ));
                }
                let target = Target::parse(fields[1])
                    .map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))?;
                config.add(fields[0].to_owned(), target, readonly)?;
            }
        }
        if config.tokens.is_empty() {
            return Err("no token configured: use --token with --redis, or --tokens FILE".into());
        }
        Ok(config)
    }

    fn add(&mut self, token: String, target: Target, readonly: bool) -> Result<(), String> {
        if token.is_empty() {
            return Err("tokens must not be empty".into());
        }
        if self.tokens.iter().any(|t| t.token == token) {
            return Err("the same token is configured twice".into());
        }
        let upstream = match self.targets.iter().position(|t| *t == target) {
            Some(i) => i,
            None => {
                self.targets.push(target);
                self.targets.len() - 1
            }
        };
        self.tokens.push(TokenSpec {
            token,
            upstream,
            readonly,
        });
        Ok(())
    }
}
