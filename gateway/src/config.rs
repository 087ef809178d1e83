//! Command-line flags, environment variables and the token file, validated into [`Config`].

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
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

    /// File mapping tokens to Redis URLs, one per line: `<token> <redis-url> [rw|ro]
    /// [name=NAME]`, where `cluster:URL,URL…` names a Redis Cluster by some of its nodes and
    /// NAME names the database in metrics and logs. Blank lines and lines starting with `#` are
    /// ignored. Tokens that share a URL share its connections; different URLs are independent
    /// databases (e.g. regions). Re-read on SIGHUP.
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

    /// Threads that run the requests (tokio's worker threads). 1 (the default) keeps a request,
    /// its connection and the Redis driver on one thread: no wake-ups between threads, which
    /// cost more than a second thread gives while Redis and the clients share the cores.
    #[arg(long, env = "GATEWAY_WORKER_THREADS", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..))]
    pub worker_threads: u16,

    /// Log lines as plain text or as JSON objects (one per line, for log pipelines).
    #[arg(long, env = "GATEWAY_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Serve Prometheus metrics at `GET /metrics` on this address of its own, without a token
    /// (keep it private: loopback, or a network only the scraper reaches).
    #[arg(long, env = "GATEWAY_METRICS_LISTEN", value_name = "ADDR")]
    pub metrics_listen: Option<SocketAddr>,

    /// Serve Prometheus metrics at `GET /metrics` on `--listen` to this bearer token alone (no
    /// Redis token reads them, and this one runs no command).
    #[arg(long, env = "GATEWAY_METRICS_TOKEN", hide_env_values = true)]
    pub metrics_token: Option<String>,

    /// Serve HTTPS with this certificate chain (PEM, leaf first); needs `--tls-key`. Re-read,
    /// with the key, on SIGHUP and when either file changes; open connections keep theirs.
    #[arg(
        long,
        env = "GATEWAY_TLS_CERT",
        value_name = "FILE",
        requires = "tls_key"
    )]
    pub tls_cert: Option<PathBuf>,

    /// The private key of `--tls-cert` (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(
        long,
        env = "GATEWAY_TLS_KEY",
        value_name = "FILE",
        requires = "tls_cert"
    )]
    pub tls_key: Option<PathBuf>,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line (tracing-subscriber's JSON format).
    Json,
}

/// The certificate and key files of HTTPS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// PEM certificate chain, leaf first.
    pub cert: PathBuf,
    /// PEM private key.
    pub key: PathBuf,
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
    /// Index into [`TokenSet::databases`].
    pub upstream: usize,
    /// Whether only read commands are allowed.
    pub readonly: bool,
}

/// One database behind the gateway: what it connects to, and the name metrics and logs give it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Database {
    /// The server or cluster.
    pub target: Target,
    /// `name=` of the tokens file, or the target's `user@host:port/db` (never its password).
    pub name: String,
}

/// A Redis URL without its scheme, password and query: `user@host:port/db`.
fn address(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let rest = rest.split('?').next().unwrap_or(rest);
    match rest.rsplit_once('@') {
        Some((credentials, host)) => match credentials.split(':').next() {
            Some(user) if !user.is_empty() => format!("{user}@{host}"),
            _ => host.to_owned(),
        },
        None => rest.to_owned(),
    }
}

impl Database {
    /// The default name of a target: its address, never its password.
    fn default_name(target: &Target) -> String {
        match target {
            Target::Server(url) => address(url).to_owned(),
            Target::Cluster(urls) => {
                format!(
                    "cluster:{}",
                    urls.first().map(|url| address(url)).unwrap_or_default()
                )
            }
        }
    }
}

/// The accepted tokens and the databases they reach.
#[derive(Debug, Clone, Default)]
pub struct TokenSet {
    /// Distinct Redis servers and clusters, one upstream each.
    pub databases: Vec<Database>,
    /// All accepted tokens.
    pub tokens: Vec<TokenSpec>,
}

impl TokenSet {
    fn add(
        &mut self,
        token: String,
        target: Target,
        readonly: bool,
        name: Option<&str>,
    ) -> Result<(), String> {
        if token.is_empty() {
            return Err("tokens must not be empty".into());
        }
        if self.tokens.iter().any(|t| t.token == token) {
            return Err("the same token is configured twice".into());
        }
        let upstream = match self.databases.iter().position(|d| d.target == target) {
            Some(i) => {
                let database = &mut self.databases[i];
                if let Some(name) = name {
                    if database.name == Database::default_name(&target) {
                        database.name = name.to_owned();
                    } else if database.name != name {
                        return Err(format!(
                            "one database named twice: {:?} and {name:?}",
                            database.name
                        ));
                    }
                }
                i
            }
            None => {
                let taken = |name: &str| self.databases.iter().any(|d| d.name == name);
                let name = match name {
                    Some(name) if taken(name) => {
                        return Err(format!("two databases named {name:?}"))
                    }
                    Some(name) => name.to_owned(),
                    None => {
                        // Two URLs of one address (other options): numbered.
                        let base = Database::default_name(&target);
                        let mut name = base.clone();
                        let mut n = 1;
                        while taken(&name) {
                            n += 1;
                            name = format!("{base}#{n}");
                        }
                        name
                    }
                };
                self.databases.push(Database { target, name });
                self.databases.len() - 1
            }
        };
        self.tokens.push(TokenSpec {
            token,
            upstream,
            readonly,
        });
        Ok(())
    }

    /// Adds the lines of a tokens file: `<token> <redis-url> [rw|ro] [name=NAME]`.
    fn add_file(&mut self, path: &Path) -> Result<(), String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read tokens file {}: {e}", path.display()))?;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = |e: String| format!("{}:{}: {e}", path.display(), n + 1);
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 2 || fields.len() > 4 {
                return Err(at(
                    "expected `<token> <redis-url> [rw|ro] [name=NAME]`".to_owned()
                ));
            }
            let mut readonly = None;
            let mut name = None;
            for field in &fields[2..] {
                match (*field, field.strip_prefix("name=")) {
                    ("rw", _) if readonly.is_none() => readonly = Some(false),
                    ("ro", _) if readonly.is_none() => readonly = Some(true),
                    (_, Some(value)) if name.is_none() && !value.is_empty() => name = Some(value),
                    (other, _) => {
                        return Err(at(format!(
                            "expected rw, ro or name=NAME after the URL, got {other:?}"
                        )))
                    }
                }
            }
            let target = Target::parse(fields[1]).map_err(at)?;
            self.add(
                fields[0].to_owned(),
                target,
                readonly.unwrap_or(false),
                name,
            )
            .map_err(at)?;
        }
        Ok(())
    }
}

/// Validated settings the server runs with.
#[derive(Debug, Clone)]
pub struct Config {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// The tokens of the flags and of the tokens file, as read at start-up.
    pub tokens: TokenSet,
    /// The tokens of `--token` and `--readonly-token` (read from the environment once).
    flag_tokens: TokenSet,
    /// `--tokens`, re-read on SIGHUP.
    pub tokens_file: Option<PathBuf>,
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
    /// Where `/metrics` has a listener of its own.
    pub metrics_listen: Option<SocketAddr>,
    /// The token of `/metrics` on `--listen`.
    pub metrics_token: Option<String>,
    /// HTTPS certificate and key, if HTTPS.
    pub tls: Option<TlsFiles>,
}

impl Config {
    /// Validates the flags and reads the token file.
    pub fn from_args(args: Args) -> Result<Self, String> {
        let mut config = Config {
            listen: args.listen,
            tokens: TokenSet::default(),
            flag_tokens: TokenSet::default(),
            tokens_file: args.tokens.clone(),
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
            metrics_listen: args.metrics_listen,
            metrics_token: args.metrics_token.filter(|token| !token.is_empty()),
            tls: match (args.tls_cert, args.tls_key) {
                (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
                _ => None,
            },
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
                config.flag_tokens.add(token, target, false, None)?;
            }
            if let Some(token) = args.readonly_token {
                let target = match &args.readonly_redis {
                    Some(url) => Target::server(url)?,
                    None => main.clone().ok_or(
                        "--readonly-token needs --redis (or --readonly-redis, --redis-cluster) URL",
                    )?,
                };
                config.flag_tokens.add(token, target, true, None)?;
            }
        } else if main.is_some() && args.tokens.is_none() {
            return Err("--redis and --redis-cluster need --token (or --readonly-token)".into());
        }
        config.tokens = config.read_tokens()?;
        Ok(config)
    }

    /// The tokens of the flags and, if any, of the tokens file read now.
    pub fn read_tokens(&self) -> Result<TokenSet, String> {
        let mut set = self.flag_tokens.clone();
        if let Some(path) = &self.tokens_file {
            set.add_file(path)?;
        }
        if set.tokens.is_empty() {
            return Err("no token configured: use --token with --redis, or --tokens FILE".into());
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> Result<TokenSet, String> {
        let path = std::env::temp_dir().join(format!(
            "gw-config-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::write(&path, text).map_err(|e| e.to_string())?;
        let mut set = TokenSet::default();
        let result = set.add_file(&path).map(|()| set);
        let _ = std::fs::remove_file(path);
        result
    }

    #[test]
    fn the_name_column_is_optional_and_never_holds_a_password() {
        let set = file(
            "a redis://gateway:PW@127.0.0.1:6379/0\n\
             b redis://gateway:PW@127.0.0.1:6379/0 ro\n\
             c redis://127.0.0.1:6380/2 rw name=eu\n\
             d redis://:PW@127.0.0.1:6381 name=us ro\n",
        )
        .expect("valid file");
        let names: Vec<&str> = set.databases.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["gateway@127.0.0.1:6379/0", "eu", "us"]);
        assert!(set.tokens[1].readonly && set.tokens[3].readonly);
        assert!(!set.tokens[2].readonly);
    }

    #[test]
    fn bad_lines_name_their_line() {
        for (text, why) in [
            ("a redis://127.0.0.1 rw rw\n", "expected rw, ro or name"),
            ("a redis://127.0.0.1 name=\n", "expected rw, ro or name"),
            ("a\n", "expected `<token>"),
            (
                "a redis://127.0.0.1/0 name=x\nb redis://127.0.0.1/1 name=x\n",
                "two databases named",
            ),
            (
                "a redis://127.0.0.1/0 name=x\nb redis://127.0.0.1/0 name=y\n",
                "named twice",
            ),
        ] {
            let error = file(text).expect_err(text);
            assert!(
                error.contains(why) && error.contains(':'),
                "{text}: {error}"
            );
        }
    }
}
