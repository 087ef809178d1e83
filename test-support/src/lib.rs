//! Test harness shared by the workspace: a real redis-server (or a Redis Cluster of six) and the
//! edgelimit-gateway binary on free loopback ports, killed and reaped on drop (also when a test
//! panics).
//!
//! Every redis-server it starts has the ACL users that gateway/README.md tells operators to create
//! (`gateway`, and `gateway-ro` for read-only tokens; the rules are read from the README itself),
//! and gateways connect as them, so every test runs the gateway as it is meant to run: checking
//! the user's rules at start-up, with Lua scripts unable to run what the gateway denies.
//!
//! It knows no `edgelimit` type, so that `edgelimit` itself can use it as a dev-dependency.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The read-write token of [`Gateway::start`].
pub const TOKEN: &str = "t0k3n";

/// The read-only token of [`Gateway::start`].
pub const READONLY_TOKEN: &str = "r34d";

/// The Redis user gateways connect as ([`Redis::url`]).
pub const GATEWAY_USER: &str = "gateway";

/// The Redis user of read-only tokens ([`Redis::readonly_url`]).
pub const GATEWAY_READONLY_USER: &str = "gateway-ro";

/// The password of [`GATEWAY_USER`] and [`GATEWAY_READONLY_USER`].
pub const GATEWAY_PASSWORD: &str = "gateway-test-password";

/// The gateway's README, whose "Redis ACL" section gives the user's rules.
const GATEWAY_README: &str = include_str!("../../gateway/README.md");

/// The ACL rules of [`GATEWAY_USER`] as gateway/README.md gives them (the words after
/// `ACL SETUSER gateway`), with its password.
pub fn gateway_acl_rules() -> Vec<String> {
    readme_acl_rules(GATEWAY_USER)
}

/// The rules gateway/README.md gives `user` (`ACL SETUSER <user> …`), with [`GATEWAY_PASSWORD`].
fn readme_acl_rules(user: &str) -> Vec<String> {
    let prefix = format!("ACL SETUSER {user} ");
    let line = GATEWAY_README
        .lines()
        .find_map(|line| line.strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| panic!("gateway/README.md has no `{prefix}…` line"));
    line.split_whitespace()
        .map(|rule| match rule {
            ">PASSWORD" => format!(">{GATEWAY_PASSWORD}"),
            other => other.to_owned(),
        })
        .collect()
}

/// How long a server may take to come up.
const STARTUP: Duration = Duration::from_secs(20);

/// A free loopback port (bound, then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("no free loopback port")
}

/// A free loopback port for a cluster node, whose cluster bus listens 10,000 ports higher: at most
/// 55535 (redis-server refuses to start above), with that bus port free too.
fn free_cluster_port() -> u16 {
    loop {
        let port = free_port();
        let bus_free = port <= 55_535 && TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok();
        if bus_free {
            return port;
        }
    }
}

fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + STARTUP;
    while Instant::now() < deadline {
        if ready() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{what} did not come up within {STARTUP:?}");
}

/// A child process, killed and reaped on drop.
struct Process(Option<Child>);

impl Process {
    fn stop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A redis-server on a free loopback port, without persistence.
pub struct Redis {
    /// The port it listens on.
    pub port: u16,
    args: Vec<String>,
    process: Process,
}

impl Redis {
    /// Starts redis-server and waits until it answers PING.
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// Starts redis-server with extra configuration arguments (e.g. `--busy-reply-threshold 200`),
    /// kept for [`Redis::restart`].
    pub fn start_with(args: &[&str]) -> Self {
        let mut redis = Self {
            port: free_port(),
            args: args.iter().map(|arg| arg.to_string()).collect(),
            process: Process(None),
        };
        redis.spawn();
        redis
    }

    fn spawn(&mut self) {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server is missing: run `make bootstrap`");
        self.process = Process(Some(child));
        let port = self.port;
        wait_until("redis-server", || ping(port));
        for user in [GATEWAY_USER, GATEWAY_READONLY_USER] {
            let rules = readme_acl_rules(user);
            let rules: Vec<&str> = rules.iter().map(String::as_str).collect();
            self.set_user(user, &rules);
        }
    }

    /// `ACL SETUSER name rules…` as the all-powerful `default` user; panics unless Redis says OK.
    pub fn set_user(&self, name: &str, rules: &[&str]) {
        let mut args = vec!["ACL", "SETUSER", name];
        args.extend_from_slice(rules);
        let reply = command(self.port, &args);
        assert_eq!(reply, "+OK\r\n", "ACL SETUSER {name}");
    }

    /// `redis://gateway:…@127.0.0.1:<port>/<db>`: database `db` as [`GATEWAY_USER`], what a
    /// gateway connects with.
    pub fn url(&self, db: u8) -> String {
        format!(
            "redis://{GATEWAY_USER}:{GATEWAY_PASSWORD}@127.0.0.1:{}/{db}",
            self.port
        )
    }

    /// `redis://gateway-ro:…@127.0.0.1:<port>/<db>`: database `db` as [`GATEWAY_READONLY_USER`],
    /// for `--readonly-redis`.
    pub fn readonly_url(&self, db: u8) -> String {
        format!(
            "redis://{GATEWAY_READONLY_USER}:{GATEWAY_PASSWORD}@127.0.0.1:{}/{db}",
            self.port
        )
    }

    /// `redis://127.0.0.1:<port>/<db>`: the all-powerful `default` user, for a test's own checks
    /// behind the gateway's back.
    pub fn admin_url(&self, db: u8) -> String {
        format!("redis://127.0.0.1:{}/{db}", self.port)
    }

    /// Kills the server (Redis down).
    pub fn stop(&mut self) {
        self.process.stop();
    }

    /// Starts it again on the same port.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }
}

fn ping(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    let mut reply = [0u8; 7];
    stream.write_all(b"PING\r\n").is_ok()
        && stream.read_exact(&mut reply).is_ok()
        && &reply == b"+PONG\r\n"
}

/// Sends one command as the `default` user and returns the raw reply (one read).
fn command(port: u16, args: &[&str]) -> String {
    let mut request = format!("*{}\r\n", args.len());
    for arg in args {
        request.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
    }
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to redis-server");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("read timeout");
    stream
        .write_all(request.as_bytes())
        .expect("write to redis-server");
    let mut reply = [0u8; 4096];
    let n = stream.read(&mut reply).expect("reply from redis-server");
    String::from_utf8_lossy(&reply[..n]).into_owned()
}

/// The gateway binary next to the running test executable, built once if it is missing
/// (`cargo test --workspace` and `cargo test -p edgelimit-gateway` build it).
fn gateway_binary() -> &'static PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        // The test executable lives in <target>/<profile>/deps/.
        let exe = std::env::current_exe().expect("test executable path");
        let binary = exe
            .parent()
            .and_then(|deps| deps.parent())
            .expect("target dir")
            .join(format!("edgelimit-gateway{}", std::env::consts::EXE_SUFFIX));
        if !binary.exists() {
            let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
                .args(["build", "-p", "edgelimit-gateway"])
                .status()
                .expect("cargo build -p edgelimit-gateway");
            assert!(status.success(), "building the gateway failed");
        }
        binary
    })
}

/// An edgelimit-gateway process on a free loopback port.
pub struct Gateway {
    /// The port it listens on.
    pub port: u16,
    args: Vec<String>,
    process: Process,
}

impl Gateway {
    /// Starts the gateway for one Redis URL with [`TOKEN`] and [`READONLY_TOKEN`].
    pub fn start(redis_url: &str) -> Self {
        Self::start_with(&[
            "--redis",
            redis_url,
            "--token",
            TOKEN,
            "--readonly-token",
            READONLY_TOKEN,
        ])
    }

    /// Starts the gateway in front of `redis` (database 0) with [`TOKEN`] as its only token, and
    /// `extra` arguments besides.
    pub fn in_front_of(redis: &Redis, extra: &[&str]) -> Self {
        let url = redis.url(0);
        let mut args = vec!["--redis", &url, "--token", TOKEN];
        args.extend_from_slice(extra);
        Self::start_with(&args)
    }

    /// Starts the gateway with these arguments besides `--listen`, and waits for `/healthz`. It
    /// checks the Redis user's ACL rules: give it [`Redis::url`]s.
    pub fn start_with(args: &[&str]) -> Self {
        let mut gateway = Self {
            port: free_port(),
            args: args.iter().map(|arg| arg.to_string()).collect(),
            process: Process(None),
        };
        gateway.spawn();
        gateway
    }

    fn spawn(&mut self) {
        let child = Command::new(gateway_binary())
            .arg("--listen")
            .arg(format!("127.0.0.1:{}", self.port))
            .args(&self.args)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting edgelimit-gateway");
        self.process = Process(Some(child));
        let port = self.port;
        wait_until("edgelimit-gateway", || {
            raw_http(
                port,
                "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                b"",
            )
            .is_some_and(|reply| reply.starts_with("HTTP/1.1 200"))
        });
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The process id (for signals); 0 once stopped.
    pub fn pid(&self) -> u32 {
        self.process.0.as_ref().map_or(0, Child::id)
    }

    /// Kills the gateway.
    pub fn stop(&mut self) {
        self.process.stop();
    }

    /// Sends the gateway SIGTERM, asking it to shut down gracefully (see [`Gateway::wait_exit`]).
    pub fn terminate(&self) {
        let pid = self.pid();
        assert_ne!(pid, 0, "the gateway is not running"); // `kill 0` would signal the whole group
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .expect("kill");
        assert!(status.success(), "kill -TERM {pid}");
    }

    /// Kills and starts the gateway again (same port, same arguments).
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    /// Waits up to `timeout` for the process to exit by itself; whether it exited successfully.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<bool> {
        let deadline = Instant::now() + timeout;
        let child = self.process.0.as_mut()?;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                self.process.0 = None;
                return Some(status.success());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

/// Runs the gateway with these arguments (besides `--listen`, no `--unsafe-allow-admin`) when it is
/// expected to refuse to start: its stderr once it exited unsuccessfully. Panics if it is still
/// running after the start-up time, or exits successfully.
pub fn gateway_refusal(args: &[&str]) -> String {
    let mut child = Process(Some(
        Command::new(gateway_binary())
            .arg("--listen")
            .arg(format!("127.0.0.1:{}", free_port()))
            .args(args)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting edgelimit-gateway"),
    ));
    let deadline = Instant::now() + STARTUP;
    let process = child.0.as_mut().expect("child");
    let status = loop {
        if let Ok(Some(status)) = process.try_wait() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the gateway did not refuse to start"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!status.success(), "the gateway exited successfully");
    let mut stderr = String::new();
    if let Some(mut pipe) = process.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    stderr
}

/// Sends raw bytes as one HTTP/1.1 request on a new connection and returns the whole reply as
/// text (the request should say `Connection: close`).
pub fn raw_http(port: u16, head: &str, body: &[u8]) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    stream.write_all(head.as_bytes()).ok()?;
    stream.write_all(body).ok()?;
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).ok()?;
    Some(String::from_utf8_lossy(&reply).into_owned())
}

/// How long a new cluster may take to agree on its slots.
const CLUSTER_STARTUP: Duration = Duration::from_secs(60);

/// One node of a [`Cluster`].
struct Node {
    port: u16,
    process: Process,
}

/// Held by each [`Cluster`] while it runs: the clusters of a test binary run one at a time, so that
/// two cores keep up with their heartbeats (a node late by `cluster-node-timeout` would be failed
/// over).
static ONE_CLUSTER_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A Redis Cluster of three masters with one replica each, on free loopback ports, with the
/// gateway's ACL users (as [`Redis`]) on every node. Every process is killed and its files
/// removed on drop (also when a test panics). One runs at a time in a test binary.
pub struct Cluster {
    nodes: Vec<Node>,
    dir: PathBuf,
    _turn: std::sync::MutexGuard<'static, ()>,
}

impl Cluster {
    /// Starts six `redis-server --cluster-enabled yes` with `cluster-node-timeout` of
    /// `node_timeout_ms` (how soon a dead master's replica takes over), joins them with
    /// `redis-cli --cluster create --cluster-replicas 1`, and waits until every node says
    /// `cluster_state:ok`.
    pub fn start(node_timeout_ms: u64) -> Self {
        // A test that panicked with its cluster leaves the lock poisoned, and the cluster gone.
        let turn = ONE_CLUSTER_AT_A_TIME
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let dir = std::env::temp_dir().join(format!(
            "edgelimit-cluster-{}-{}",
            std::process::id(),
            free_port()
        ));
        std::fs::create_dir_all(&dir).expect("cluster directory");
        let mut cluster = Self {
            nodes: Vec::new(),
            dir,
            _turn: turn,
        };
        for _ in 0..6 {
            let port = free_cluster_port();
            let child = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .args(["--cluster-enabled", "yes"])
                .arg("--cluster-config-file")
                .arg(cluster.dir.join(format!("nodes-{port}.conf")))
                .args(["--cluster-node-timeout", &node_timeout_ms.to_string()])
                // Replicas sync at once, not after the default 5 s wait for more replicas.
                .args(["--repl-diskless-sync-delay", "0"])
                .arg("--dir")
                .arg(&cluster.dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server is missing: run `make bootstrap`");
            cluster.nodes.push(Node {
                port,
                process: Process(Some(child)),
            });
            wait_until("redis-server (cluster node)", || ping(port));
        }
        let addresses: Vec<String> = cluster
            .nodes
            .iter()
            .map(|node| format!("127.0.0.1:{}", node.port))
            .collect();
        let created = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("redis-cli is missing: run `make bootstrap`");
        assert!(created.success(), "redis-cli --cluster create failed");
        for port in cluster.live_ports() {
            for user in [GATEWAY_USER, GATEWAY_READONLY_USER] {
                let rules = readme_acl_rules(user);
                let rules: Vec<&str> = rules.iter().map(String::as_str).collect();
                cluster.set_user(port, user, &rules);
            }
        }
        cluster.wait_ok(CLUSTER_STARTUP);
        cluster
    }

    /// `ACL SETUSER name rules…` on the node on `port` alone (ACL users are not shared between
    /// nodes), as the `default` user; panics unless it says OK.
    pub fn set_user(&self, port: u16, name: &str, rules: &[&str]) {
        let mut args = vec!["ACL", "SETUSER", name];
        args.extend_from_slice(rules);
        assert_eq!(command(port, &args), "+OK\r\n", "ACL SETUSER {name}");
    }

    /// Waits until every live node says `cluster_state:ok`, three of them are masters and every
    /// replica is in sync with its master (a replica out of touch for long may not take over);
    /// panics after `within`.
    pub fn wait_ok(&self, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let masters = self.masters().len();
            let ok = self.live_ports().iter().all(|&port| {
                command(port, &["CLUSTER", "INFO"]).contains("cluster_state:ok")
                    && !command(port, &["INFO", "replication"]).contains("master_link_status:down")
            });
            if ok && masters == 3 {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the cluster is not ok after {within:?} ({masters} masters)"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The ports of the nodes still running.
    pub fn live_ports(&self) -> Vec<u16> {
        self.nodes
            .iter()
            .filter(|node| node.process.0.is_some())
            .map(|node| node.port)
            .collect()
    }

    /// The ports of the running nodes that are masters now (`ROLE`).
    pub fn masters(&self) -> Vec<u16> {
        self.live_ports()
            .into_iter()
            .filter(|&port| command(port, &["ROLE"]).starts_with("*3\r\n$6\r\nmaster"))
            .collect()
    }

    /// How many keys the node on `port` holds (`DBSIZE`, as the `default` user).
    pub fn dbsize(&self, port: u16) -> u64 {
        let reply = command(port, &["DBSIZE"]);
        reply
            .trim()
            .strip_prefix(':')
            .and_then(|count| count.parse().ok())
            .unwrap_or_else(|| panic!("DBSIZE on {port} answered {reply:?}"))
    }

    /// `redis://gateway:…@127.0.0.1:<port>,…` for every node: the seeds of `--redis-cluster`, as
    /// [`GATEWAY_USER`].
    pub fn urls(&self) -> String {
        self.nodes
            .iter()
            .map(|node| {
                format!(
                    "redis://{GATEWAY_USER}:{GATEWAY_PASSWORD}@127.0.0.1:{}",
                    node.port
                )
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// `redis://127.0.0.1:<port>`: one node as the all-powerful `default` user, for a test's own
    /// checks behind the gateway's back.
    pub fn admin_url(port: u16) -> String {
        format!("redis://127.0.0.1:{port}")
    }

    /// Kills the node on `port` with SIGKILL (a crash: nothing is flushed or handed over).
    pub fn kill(&mut self, port: u16) {
        if let Some(node) = self.nodes.iter_mut().find(|node| node.port == port) {
            node.process.stop();
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            node.process.stop();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
