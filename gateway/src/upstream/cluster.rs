//! A Redis Cluster behind the gateway, through the `redis` crate's cluster client: it routes each
//! command to the master of its key's slot, follows `MOVED`/`ASK` redirects and finds the new
//! master after a failover.
//!
//! The crate connects to the nodes through [`NodeConn`], whose socket is [`Bounded`] as in
//! `pool.rs`: each command (or transaction) is written as one batch ending with the empty
//! command that marks it, and its replies are held to `--max-reply-bytes` as they are read. The
//! replies of the several commands of one `/pipeline` are added up after they are read.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster::{ClusterClient, ClusterClientBuilder};
use redis::cluster_async::{ClusterConnection, Connect};
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::{
    AsyncConnectionConfig, Cmd, ConnectionAddr, ConnectionInfo, IntoConnectionInfo, Pipeline,
    RedisError, RedisFuture, Value,
};

use super::pool::{
    batch, connect_once, io_error, kill, kill_client, to_cmd, CONNECT_TIMEOUT, READY_TIMEOUT,
};
use super::reply_bound::{Bounded, TOO_LARGE};
use crate::commands::command::Command;
use crate::error::{error_text, GatewayError};
use crate::metrics::ConnectCounters;

/// Most commands of one `/pipeline` waiting for their replies at once. Each reply is bounded on
/// the socket by itself, so this also bounds what one request holds before the sum is checked.
const IN_FLIGHT: usize = 32;

/// The reply budget of every node connection (`--max-reply-bytes`, one value for the process):
/// the crate's [`Connect`] hook is a function without state, so it reads the budget from here.
static MAX_REPLY_BYTES: AtomicUsize = AtomicUsize::new(usize::MAX);

/// What the gateway answers when the keys of a transaction are in different slots.
const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot (the keys of a \
     /multi-exec must share one: give them a hash tag, e.g. {user42}:a and {user42}:b)";

/// A connection to one node, on a [`Bounded`] socket.
#[derive(Clone)]
pub struct NodeConn(MultiplexedConnection);

impl Connect for NodeConn {
    fn connect_with_config<'a, T>(info: T, config: AsyncConnectionConfig) -> RedisFuture<'a, Self>
    where
        T: IntoConnectionInfo + Send + 'a,
    {
        Box::pin(async move {
            let info = info.into_connection_info()?;
            let ConnectionAddr::Tcp(host, port) = info.addr() else {
                return Err(RedisError::from((
                    redis::ErrorKind::InvalidClientConfig,
                    "only plain TCP cluster nodes are supported",
                )));
            };
            let stream = tokio::time::timeout(
                CONNECT_TIMEOUT,
                tokio::net::TcpStream::connect((host.as_str(), *port)),
            )
            .await
            .map_err(|_| {
                RedisError::from(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "connecting to a cluster node timed out",
                ))
            })??;
            stream.set_nodelay(true)?;
            let stream = Bounded::new(stream, MAX_REPLY_BYTES.load(Ordering::Relaxed));
            let (conn, driver) =
                MultiplexedConnection::new_with_config(info.redis_settings(), stream, config)
                    .await?;
            tokio::spawn(driver);
            Ok(Self(conn))
        })
    }
}

impl ConnectionLike for NodeConn {
    /// One command as a batch of its own; an error reply is an `Err`, as the crate expects of a
    /// single command (its multi-node answers, PING to every master, fail on one).
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            self.0
                .req_packed_commands(&batch([cmd.clone()]), 0, 1)
                .await?
                .pop()
                .ok_or_else(|| RedisError::from((redis::ErrorKind::Parse, "no reply")))?
                .extract_error()
        })
    }

    /// The commands as one batch; error replies are `Value::ServerError` items.
    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let pipe = batch(pipeline.cmd_iter().cloned());
            self.0.req_packed_commands(&pipe, offset, count).await
        })
    }

    fn get_db(&self) -> i64 {
        self.0.get_db()
    }
}

/// A Redis Cluster, known by some of its nodes (the seeds).
pub struct Cluster {
    client: ClusterClient,
    seeds: Vec<ConnectionInfo>,
    /// The cluster connection, once opened; the crate keeps it working afterwards.
    conn: std::sync::Mutex<Option<ClusterConnection<NodeConn>>>,
    /// Held while the cluster connection is being opened: one attempt at a time.
    connecting: tokio::sync::Mutex<()>,
    timeout: Duration,
    max_reply_bytes: usize,
    /// Attempts to open the cluster connection, for the metrics.
    connects: ConnectCounters,
}

/// A server's error reply as a value; any other failure as the gateway's error.
fn reply_or_error(error: RedisError) -> Result<Value, GatewayError> {
    match redis::ServerError::try_from(error) {
        Ok(reply) => Ok(Value::ServerError(reply)),
        Err(error) => Err(io_error(error)),
    }
}

fn is_code(value: &Value, code: &str) -> bool {
    matches!(value, Value::ServerError(e) if e.code() == code)
}

impl Cluster {
    /// Prepares the client; nothing is opened until the first request, so the gateway starts
    /// (and keeps running) while the cluster is down.
    pub fn new(
        urls: &[String],
        timeout: Duration,
        max_reply_bytes: usize,
        connects: ConnectCounters,
    ) -> Result<Self, String> {
        let invalid = |e: RedisError| format!("invalid Redis Cluster URLs {urls:?}: {e}");
        let seeds = urls
            .iter()
            .map(|url| url.as_str().into_connection_info())
            .collect::<Result<Vec<_>, _>>()
            .map_err(invalid)?;
        let client = ClusterClientBuilder::new(seeds.clone())
            .connection_timeout(timeout.min(CONNECT_TIMEOUT))
            .response_timeout(timeout)
            .build()
            .map_err(invalid)?;
        MAX_REPLY_BYTES.store(max_reply_bytes, Ordering::Relaxed);
        Ok(Self {
            client,
            seeds,
            conn: std::sync::Mutex::new(None),
            connecting: tokio::sync::Mutex::new(()),
            timeout,
            max_reply_bytes,
            connects,
        })
    }

    fn current(&self) -> Option<ClusterConnection<NodeConn>> {
        self.conn.lock().ok()?.clone()
    }

    /// The cluster connection, opened by the first request that finds a node.
    async fn connection(&self) -> Result<ClusterConnection<NodeConn>, GatewayError> {
        if let Some(conn) = self.current() {
            return Ok(conn);
        }
        let _attempt = self.connecting.lock().await;
        if let Some(conn) = self.current() {
            return Ok(conn);
        }
        let open = self.client.get_async_generic_connection::<NodeConn>();
        let conn = tokio::time::timeout(self.timeout.min(CONNECT_TIMEOUT), open)
            .await
            .map_err(|_| {
                GatewayError::Unavailable("connecting to the cluster timed out".to_owned())
            })
            .and_then(|opened| opened.map_err(|e| GatewayError::Unavailable(e.to_string())));
        self.connects.count(&conn);
        let conn = conn?;
        if let Ok(mut current) = self.conn.lock() {
            *current = Some(conn.clone());
        }
        Ok(conn)
    }

    /// Runs `run` within the request timeout (504 after).
    async fn within<T>(
        &self,
        run: impl std::future::Future<Output = Result<T, GatewayError>>,
    ) -> Result<T, GatewayError> {
        tokio::time::timeout(self.timeout, run)
            .await
            .unwrap_or(Err(GatewayError::Timeout))
    }

    /// Whether every slot has a master (`CLUSTER SLOTS`, asked of any node) and each master
    /// answers PING, all within `READY_TIMEOUT`: an error while one is unreachable (from a crash
    /// until the failover), busy or loading. (The crate's own PING to every master skips the
    /// masters it has no connection to.)
    pub async fn ready(&self) -> Result<(), GatewayError> {
        let check = async {
            let mut conn = self.connection().await?;
            let unavailable = |e: RedisError| GatewayError::Unavailable(e.to_string());
            let mut slots = redis::cmd("CLUSTER");
            slots.arg("SLOTS");
            let any_node = RoutingInfo::SingleNode(SingleNodeRoutingInfo::Random);
            let slots = conn
                .route_command(slots, any_node)
                .await
                .map_err(unavailable)?;
            let pings = masters(&slots)?.into_iter().map(|(host, port)| {
                let mut conn = conn.clone();
                async move {
                    let master = SingleNodeRoutingInfo::ByAddress { host, port };
                    conn.route_command(redis::cmd("PING"), RoutingInfo::SingleNode(master))
                        .await
                        .map_err(unavailable)
                }
            });
            futures_util::future::try_join_all(pings).await.map(drop)
        };
        tokio::time::timeout(READY_TIMEOUT.min(self.timeout), check)
            .await
            .unwrap_or_else(|_| {
                Err(GatewayError::Unavailable(
                    "a cluster master did not answer PING in time".to_owned(),
                ))
            })
    }

    /// Runs each command where the crate routes it (its key's master; every master for `SCRIPT
    /// LOAD`, …), sent in order, at most `IN_FLIGHT` at once, and returns the replies in order;
    /// error replies are `Value::ServerError` items. Replies over `--max-reply-bytes` together
    /// are an error.
    pub async fn pipeline(&self, commands: &[Command]) -> Result<Vec<Value>, GatewayError> {
        let cmds: Vec<Cmd> = commands.iter().map(to_cmd).collect();
        self.within(async {
            let conn = self.connection().await?;
            let mut replies = futures_util::stream::iter(cmds)
                .map(|cmd| {
                    let mut conn = conn.clone();
                    async move {
                        match conn.req_packed_command(&cmd).await {
                            Ok(value) => Ok(value),
                            Err(error) => reply_or_error(error),
                        }
                    }
                })
                .buffered(IN_FLIGHT);
            let mut values = Vec::with_capacity(commands.len());
            let mut spent = 0;
            while let Some(value) = replies.next().await {
                let value = value?;
                self.spend(&mut spent, std::slice::from_ref(&value))?;
                values.push(value);
            }
            Ok(values)
        })
        .await
    }

    /// Adds the size of `values` to `spent`; an error once it passes `--max-reply-bytes`, or if
    /// [`Bounded`] replaced one of them, over the budget by itself.
    fn spend(&self, spent: &mut usize, values: &[Value]) -> Result<(), GatewayError> {
        for value in values {
            *spent = spent.saturating_add(reply_size(value));
            if *spent > self.max_reply_bytes || is_code(value, TOO_LARGE) {
                return Err(GatewayError::ReplyTooLarge(self.max_reply_bytes));
            }
        }
        Ok(())
    }

    /// Runs `MULTI`, the commands and `EXEC` as one batch on the master of their keys' slot, and
    /// returns the reply of `EXEC`. Keys in several slots are refused with `CROSSSLOT` before
    /// anything is sent.
    pub async fn transaction(&self, commands: &[Command]) -> Result<Value, GatewayError> {
        let mut pipe = Pipeline::new();
        pipe.add_command(redis::cmd("MULTI"));
        for command in commands {
            pipe.add_command(to_cmd(command));
        }
        pipe.add_command(redis::cmd("EXEC"));
        self.within(async {
            let mut conn = self.connection().await?;
            let mut values = match conn.req_packed_commands(&pipe, 0, commands.len() + 2).await {
                Ok(values) => values,
                Err(error) if error.code() == Some("CROSSSLOT") => {
                    return Err(GatewayError::Redis(CROSSSLOT.to_owned()))
                }
                Err(error) => return reply_or_error(error),
            };
            self.spend(&mut 0, &values)?;
            // One command whose own keys are in several slots is refused by Redis while queued.
            if let Some(Value::ServerError(e)) = values.iter().find(|v| is_code(v, "CROSSSLOT")) {
                return Err(GatewayError::Redis(error_text(e)));
            }
            values
                .pop()
                .ok_or_else(|| GatewayError::Unavailable("redis sent no reply to EXEC".to_owned()))
        })
        .await
    }

    /// Sends `SCRIPT KILL` or `FUNCTION KILL` to every node, each on a connection of its own
    /// (see [`kill_client`]): `OK` if one of them stopped a script, else the first error reply
    /// (`NOTBUSY`).
    pub async fn kill(&self, command: &Command) -> Result<Value, GatewayError> {
        let nodes = match nodes(&self.seeds, self.timeout.min(CONNECT_TIMEOUT)).await {
            Ok(nodes) => nodes,
            Err(_) => self.seeds.clone(),
        };
        let kills = nodes.into_iter().map(|info| async move {
            let client = kill_client(info).map_err(io_error)?;
            kill(&client, command, self.timeout).await
        });
        let mut refusal = None;
        let mut failure = None;
        for outcome in futures_util::future::join_all(kills).await {
            match outcome {
                Ok(Value::ServerError(error)) => {
                    refusal.get_or_insert(Value::ServerError(error));
                }
                Ok(value) => return Ok(value),
                Err(error) => {
                    failure.get_or_insert(error);
                }
            }
        }
        match (refusal, failure) {
            (Some(reply), _) => Ok(reply),
            (None, Some(error)) => Err(error),
            (None, None) => Err(GatewayError::Unavailable(
                "no cluster node to send the kill to".to_owned(),
            )),
        }
    }
}

/// Every node of the cluster (masters and replicas, not those marked failed) as `CLUSTER NODES`
/// lists them, asked of the seeds in turn until one answers; each with the seeds' credentials.
pub async fn nodes(
    seeds: &[ConnectionInfo],
    timeout: Duration,
) -> Result<Vec<ConnectionInfo>, String> {
    let mut last_error = "no seed node".to_owned();
    for seed in seeds {
        let ask = async {
            let client = kill_client(seed.clone())?;
            let mut conn = connect_once(&client, timeout).await?;
            let listing = conn
                .req_packed_command(redis::cmd("CLUSTER").arg("NODES"))
                .await?;
            match listing {
                Value::BulkString(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
                Value::VerbatimString { text, .. } => Ok(text),
                other => Err(RedisError::from((
                    redis::ErrorKind::UnexpectedReturnType,
                    "unexpected reply to CLUSTER NODES",
                    format!("{other:?}"),
                ))),
            }
        };
        match tokio::time::timeout(timeout, ask).await {
            Ok(Ok(listing)) => return Ok(parse_nodes(&listing, seed)),
            Ok(Err(error)) => last_error = format!("{}: {error}", seed.addr()),
            Err(_) => last_error = format!("{}: no answer in time", seed.addr()),
        }
    }
    Err(format!(
        "cannot list the cluster's nodes (CLUSTER NODES): {last_error}"
    ))
}

/// The nodes of a `CLUSTER NODES` listing, with `asked`'s credentials (and its address for the
/// node that does not know its own).
fn parse_nodes(listing: &str, asked: &ConnectionInfo) -> Vec<ConnectionInfo> {
    listing
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (address, flags) = (fields.nth(1)?, fields.next()?);
            let gone = flags
                .split(',')
                .any(|flag| matches!(flag, "fail" | "noaddr" | "handshake"));
            if gone {
                return None;
            }
            // `host:port@cluster-port[,hostname]`
            let address = address.split(['@', ',']).next()?;
            let (host, port) = address.rsplit_once(':')?;
            let port: u16 = port.parse().ok()?;
            let addr = if host.is_empty() {
                asked.addr().clone()
            } else {
                ConnectionAddr::Tcp(host.to_owned(), port)
            };
            Some(asked.clone().set_addr(addr))
        })
        .collect()
}

/// The masters of a `CLUSTER SLOTS` reply (host and port); an error unless they cover every
/// slot.
fn masters(slots: &Value) -> Result<Vec<(String, u16)>, GatewayError> {
    let malformed = || GatewayError::Unavailable("unexpected reply to CLUSTER SLOTS".to_owned());
    let Value::Array(ranges) = slots else {
        return Err(malformed());
    };
    let (mut covered, mut masters) = (0i64, Vec::new());
    for range in ranges {
        let Value::Array(fields) = range else {
            return Err(malformed());
        };
        let (Some(Value::Int(first)), Some(Value::Int(last)), Some(Value::Array(master))) =
            (fields.first(), fields.get(1), fields.get(2))
        else {
            return Err(malformed());
        };
        let (Some(Value::BulkString(host)), Some(Value::Int(port))) =
            (master.first(), master.get(1))
        else {
            return Err(malformed());
        };
        let host = String::from_utf8_lossy(host).into_owned();
        let port = u16::try_from(*port).map_err(|_| malformed())?;
        covered += last - first + 1;
        if !masters.contains(&(host.clone(), port)) {
            masters.push((host, port));
        }
    }
    if covered != SLOTS {
        return Err(GatewayError::Unavailable(format!(
            "{} of the cluster's {SLOTS} slots have no master",
            SLOTS - covered
        )));
    }
    Ok(masters)
}

/// How many slots a Redis Cluster has.
const SLOTS: i64 = 16384;

/// About the bytes Redis sent `value` in (RESP2, the protocol the gateway speaks).
fn reply_size(value: &Value) -> usize {
    let digits = |n: usize| n.checked_ilog10().unwrap_or(0) as usize + 1;
    match value {
        Value::Nil | Value::Okay => 5,
        Value::Int(n) => 3 + n.to_string().len(),
        Value::BulkString(bytes) => 5 + digits(bytes.len()) + bytes.len(),
        Value::SimpleString(text) => 3 + text.len(),
        Value::Array(items) | Value::Set(items) => {
            3 + digits(items.len()) + items.iter().map(reply_size).sum::<usize>()
        }
        Value::Map(pairs) => {
            3 + digits(pairs.len())
                + pairs
                    .iter()
                    .map(|(k, v)| reply_size(k) + reply_size(v))
                    .sum::<usize>()
        }
        Value::ServerError(error) => 4 + error.code().len() + error.details().map_or(0, str::len),
        other => format!("{other:?}").len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_nodes_listing_gives_every_live_node() {
        let asked: ConnectionInfo = "redis://gateway:pw@10.0.0.1:7000"
            .into_connection_info()
            .unwrap();
        let listing = "\
a1 10.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460
b2 10.0.0.2:7001@17001,node-b master - 0 1 2 connected 5461-10922
c3 :0@0 master,noaddr - 0 0 3 disconnected
d4 10.0.0.4:7003@17003 slave,fail a1 0 0 1 disconnected
e5 ::1:7004@17004 slave b2 0 1 2 connected
";
        let nodes = parse_nodes(listing, &asked);
        let addrs: Vec<String> = nodes.iter().map(|n| n.addr().to_string()).collect();
        assert_eq!(addrs, ["10.0.0.1:7000", "10.0.0.2:7001", "::1:7004"]);
        assert!(nodes
            .iter()
            .all(|n| n.redis_settings().username() == Some("gateway")));
    }

    #[test]
    fn cluster_slots_give_the_masters_and_whether_every_slot_has_one() {
        let range = |first: i64, last: i64, port: i64| {
            Value::Array(vec![
                Value::Int(first),
                Value::Int(last),
                Value::Array(vec![
                    Value::BulkString(b"127.0.0.1".to_vec()),
                    Value::Int(port),
                ]),
            ])
        };
        let all = Value::Array(vec![range(0, 5460, 7000), range(5461, 16383, 7001)]);
        assert_eq!(
            masters(&all).unwrap(),
            [
                ("127.0.0.1".to_owned(), 7000),
                ("127.0.0.1".to_owned(), 7001)
            ]
        );
        let some = Value::Array(vec![range(0, 5460, 7000)]);
        assert!(masters(&some).is_err());
    }

    #[test]
    fn reply_sizes_are_those_of_resp2() {
        assert_eq!(reply_size(&Value::BulkString(b"hello".to_vec())), 11); // $5\r\nhello\r\n
        assert_eq!(reply_size(&Value::Int(42)), 5); // :42\r\n
        assert_eq!(
            reply_size(&Value::Array(vec![Value::Okay, Value::Nil])),
            14 // *2\r\n+OK\r\n$-1\r\n
        );
    }
}
