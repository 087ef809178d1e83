//! Connections to one Redis server: a shared multiplexed connection for single commands and
//! pipelines, and a small pool of dedicated connections for `/multi-exec`.
//!
//! Before a request is written to a connection opened earlier, its [`Watched`] flag is read: if
//! Redis has closed it (a restart, `timeout`, `CLIENT KILL`), which the connection's reader sees at
//! once, the request goes to a fresh connection instead of failing on the dead one. Nothing is
//! ever sent twice.
//!
//! Every connection's socket is [`Bounded`]: each request is written as one batch ending with the
//! empty command that marks it, and its replies are held to `--max-reply-bytes` as they are read.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::{
    AsyncConnectionConfig, Client, Cmd, ConnectionAddr, ConnectionInfo, Pipeline, RedisError, Value,
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::reply_bound::{Bounded, TOO_LARGE};
use crate::commands::command::Command;
use crate::error::{error_text, GatewayError};
use crate::metrics::ConnectCounters;

/// How long `SCRIPT KILL` may take: Redis reads other clients only once a script has run for
/// `busy-reply-threshold` (5 s by default), so the kill waits at least that long.
pub const KILL_TIMEOUT: Duration = Duration::from_secs(15);

/// How long opening a connection may take at most (less if `--timeout-ms` is shorter).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// How long `/readyz` waits for PING.
pub const READY_TIMEOUT: Duration = Duration::from_millis(1000);

/// One Redis server (one database) behind the gateway.
pub struct Server {
    client: Client,
    /// The same server, for `SCRIPT KILL` and `FUNCTION KILL` (see [`kill_client`]).
    kill_client: Client,
    /// The shared connection, once opened.
    shared: Mutex<Option<Conn>>,
    /// Held while the shared connection is being (re)opened; why the last attempt failed.
    reconnecting: tokio::sync::Mutex<Option<GatewayError>>,
    /// How many attempts to open the shared connection have ended.
    attempts: AtomicU64,
    idle: Arc<Mutex<Vec<Conn>>>,
    slots: Arc<Semaphore>,
    timeout: Duration,
    max_reply_bytes: usize,
    /// Connection attempts, for the metrics.
    connects: ConnectCounters,
}

/// The command as the `redis` crate sends it.
pub fn to_cmd(command: &Command) -> Cmd {
    let mut cmd = Cmd::new();
    for arg in &command.args {
        cmd.arg(arg.as_slice());
    }
    cmd
}

/// A multiplexed connection and whether its socket has closed.
#[derive(Clone)]
struct Conn {
    conn: MultiplexedConnection,
    closed: Arc<AtomicBool>,
}

impl Conn {
    /// Whether Redis has closed the connection (end of stream or a socket error), as its reader
    /// saw it; no system call.
    fn closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}

/// A socket that raises a flag once it reads the end of the stream or fails, or is dropped (its
/// connection's driver has ended). The driver of a multiplexed connection reads all the time,
/// idle or not, so a connection Redis closed is known as soon as the close arrives.
struct Watched<S> {
    inner: S,
    closed: Arc<AtomicBool>,
}

impl<S> Watched<S> {
    fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }
}

impl<S> Drop for Watched<S> {
    fn drop(&mut self) {
        self.close();
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        match &result {
            Poll::Ready(Ok(())) if buf.filled().len() == before && buf.remaining() > 0 => {
                self.close();
            }
            Poll::Ready(Err(_)) => self.close(),
            _ => {}
        }
        result
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(result, Poll::Ready(Err(_))) {
            self.close();
        }
        result
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A batch of `commands`, with the empty command that marks its end (see [`Bounded`]).
pub fn batch(commands: impl IntoIterator<Item = Cmd>) -> Pipeline {
    let mut pipe = Pipeline::new();
    for cmd in commands {
        pipe.add_command(cmd);
    }
    pipe.add_command(Cmd::new());
    pipe
}

/// A connection error as the gateway reports it: 504 for a timeout, 503 otherwise.
pub fn io_error(error: RedisError) -> GatewayError {
    if error.is_timeout() {
        GatewayError::Timeout
    } else {
        GatewayError::Unavailable(error.to_string())
    }
}

impl Server {
    /// Prepares the connections; nothing is opened until the first request, so the gateway
    /// starts (and keeps running) while Redis is down.
    pub fn new(
        url: &str,
        timeout: Duration,
        dedicated: usize,
        max_reply_bytes: usize,
        connects: ConnectCounters,
    ) -> Result<Self, String> {
        let client = Client::open(url).map_err(|e| format!("invalid Redis URL {url:?}: {e}"))?;
        let kill_client = kill_client(client.get_connection_info().clone())
            .map_err(|e| format!("invalid Redis URL {url:?}: {e}"))?;
        Ok(Self {
            client,
            kill_client,
            shared: Mutex::new(None),
            reconnecting: tokio::sync::Mutex::new(None),
            attempts: AtomicU64::new(0),
            idle: Arc::new(Mutex::new(Vec::new())),
            slots: Arc::new(Semaphore::new(dedicated)),
            timeout,
            max_reply_bytes,
            connects,
        })
    }

    /// Opens a connection (see [`Server::connect`]) and counts the attempt.
    async fn open(&self) -> Result<Conn, GatewayError> {
        let result = self.connect().await;
        self.connects.count(&result);
        result
    }

    /// Opens a connection on a [`Watched`], [`Bounded`] socket.
    async fn connect(&self) -> Result<Conn, GatewayError> {
        let connect_timeout = self.timeout.min(CONNECT_TIMEOUT);
        // Every request has its own deadline (`--timeout-ms`), so the crate's timer per request
        // would only duplicate it.
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(connect_timeout))
            .set_response_timeout(None);
        let info = self.client.get_connection_info();
        let unavailable = |e: std::io::Error| GatewayError::Unavailable(e.to_string());
        let connecting = |e: tokio::time::error::Elapsed| {
            GatewayError::Unavailable(format!("connecting to redis timed out ({e})"))
        };
        let closed = Arc::new(AtomicBool::new(false));
        let conn = match info.addr() {
            ConnectionAddr::Tcp(host, port) => {
                let stream = tokio::time::timeout(
                    connect_timeout,
                    tokio::net::TcpStream::connect((host.as_str(), *port)),
                )
                .await
                .map_err(connecting)?
                .map_err(unavailable)?;
                stream.set_nodelay(true).map_err(unavailable)?;
                self.handshake(stream, closed.clone(), config).await?
            }
            #[cfg(unix)]
            ConnectionAddr::Unix(path) => {
                let stream =
                    tokio::time::timeout(connect_timeout, tokio::net::UnixStream::connect(path))
                        .await
                        .map_err(connecting)?
                        .map_err(unavailable)?;
                self.handshake(stream, closed.clone(), config).await?
            }
            other => {
                return Err(GatewayError::Unavailable(format!(
                    "unsupported Redis address {other}"
                )))
            }
        };
        Ok(Conn { conn, closed })
    }

    /// Sets up a multiplexed connection (AUTH, SELECT, …) on `stream`, made [`Watched`] (raising
    /// `closed`) and [`Bounded`], and starts its driver.
    async fn handshake<S>(
        &self,
        stream: S,
        closed: Arc<AtomicBool>,
        config: AsyncConnectionConfig,
    ) -> Result<MultiplexedConnection, GatewayError>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let info = self.client.get_connection_info();
        let stream = Bounded::new(
            Watched {
                inner: stream,
                closed,
            },
            self.max_reply_bytes,
        );
        let setup = MultiplexedConnection::new_with_config(info.redis_settings(), stream, config);
        let (conn, driver) = tokio::time::timeout(self.timeout.min(CONNECT_TIMEOUT), setup)
            .await
            .map_err(|_| GatewayError::Timeout)?
            .map_err(io_error)?;
        tokio::spawn(driver);
        Ok(conn)
    }

    /// The shared connection if it is open.
    fn current(&self) -> Option<Conn> {
        let mut shared = self.shared.lock().ok()?;
        match &*shared {
            Some(conn) if !conn.closed() => Some(conn.clone()),
            Some(_) => {
                *shared = None;
                None
            }
            None => None,
        }
    }

    /// The shared connection, (re)opened if Redis closed it. One request at a time tries to open
    /// it; the requests that waited meanwhile share that attempt's outcome, so a Redis that is
    /// down sees one connection attempt at a time, and the first request after it is back gets
    /// through.
    async fn shared(&self) -> Result<Conn, GatewayError> {
        if let Some(conn) = self.current() {
            return Ok(conn);
        }
        let seen = self.attempts.load(Ordering::Acquire);
        let mut last_failure = self.reconnecting.lock().await;
        if let Some(conn) = self.current() {
            return Ok(conn);
        }
        if self.attempts.load(Ordering::Acquire) != seen {
            if let Some(error) = &*last_failure {
                return Err(error.clone());
            }
        }
        let attempt = self.open().await;
        self.attempts.fetch_add(1, Ordering::Release);
        match attempt {
            Ok(conn) => {
                *last_failure = None;
                if let Ok(mut shared) = self.shared.lock() {
                    *shared = Some(conn.clone());
                }
                Ok(conn)
            }
            Err(error) => {
                *last_failure = Some(error.clone());
                Err(error)
            }
        }
    }

    /// Forgets the shared connection after it broke, so the next request opens a new one.
    fn forget_shared(&self, error: &RedisError) {
        if error.is_connection_dropped() || error.is_unrecoverable_error() {
            if let Ok(mut shared) = self.shared.lock() {
                *shared = None;
            }
        }
    }

    /// Whether Redis answers PING within `READY_TIMEOUT` on the shared connection: an error
    /// while it is unreachable, busy (a long script: `BUSY`) or loading its data.
    pub async fn ready(&self) -> Result<(), GatewayError> {
        let ping = async {
            let mut conn = self.shared().await?.conn;
            conn.req_packed_commands(&batch([redis::cmd("PING")]), 0, 1)
                .await
                .map_err(|e| {
                    self.forget_shared(&e);
                    GatewayError::Unavailable(e.to_string())
                })?
                .pop()
                .ok_or_else(|| GatewayError::Unavailable("redis sent no reply".to_owned()))
        };
        match tokio::time::timeout(READY_TIMEOUT.min(self.timeout), ping).await {
            Ok(Ok(Value::ServerError(e))) => Err(GatewayError::Unavailable(error_text(&e))),
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(GatewayError::Unavailable(
                "redis did not answer PING in time".to_owned(),
            )),
        }
    }

    /// Runs commands as one pipeline (one write, one round trip) on the shared connection and
    /// returns one reply per command; error replies are `Value::ServerError` items. Replies over
    /// `--max-reply-bytes` together are an error.
    pub async fn pipeline(&self, commands: &[Command]) -> Result<Vec<Value>, GatewayError> {
        let pipe = batch(commands.iter().map(to_cmd));
        let run = async {
            let mut conn = self.shared().await?.conn;
            conn.req_packed_commands(&pipe, 0, commands.len())
                .await
                .map_err(|e| {
                    self.forget_shared(&e);
                    io_error(e)
                })
        };
        let values = match tokio::time::timeout(self.timeout, run).await {
            Ok(result) => result?,
            Err(_) => return Err(GatewayError::Timeout),
        };
        self.within_budget(&values)?;
        Ok(values)
    }

    /// An error if [`Bounded`] replaced replies of the request, over its budget.
    fn within_budget(&self, values: &[Value]) -> Result<(), GatewayError> {
        let over = |value: &Value| matches!(value, Value::ServerError(e) if e.code() == TOO_LARGE);
        if values.iter().any(over) {
            return Err(GatewayError::ReplyTooLarge(self.max_reply_bytes));
        }
        Ok(())
    }

    /// Runs `SCRIPT KILL` or `FUNCTION KILL` on a connection of its own, opened for it and closed
    /// after: on the shared connection it would queue behind the very script it should stop.
    pub async fn kill(&self, command: &Command) -> Result<Value, GatewayError> {
        kill(&self.kill_client, command, self.timeout).await
    }

    /// Runs `MULTI`, the commands and `EXEC` in one round trip on a connection that no other
    /// request uses meanwhile, and returns the reply of `EXEC` (an array, nil, or an error).
    pub async fn transaction(&self, commands: &[Command]) -> Result<Value, GatewayError> {
        let run = async {
            let mut lease = self.lease().await?;
            let pipe = batch(
                std::iter::once(redis::cmd("MULTI"))
                    .chain(commands.iter().map(to_cmd))
                    .chain(std::iter::once(redis::cmd("EXEC"))),
            );
            let conn = lease.conn.as_mut().ok_or(GatewayError::Timeout)?;
            let mut values = conn
                .conn
                .req_packed_commands(&pipe, 0, commands.len() + 2)
                .await
                .map_err(io_error)?;
            lease.release();
            self.within_budget(&values)?;
            values
                .pop()
                .ok_or_else(|| GatewayError::Unavailable("redis sent no reply to EXEC".to_owned()))
        };
        match tokio::time::timeout(self.timeout, run).await {
            Ok(result) => result,
            Err(_) => Err(GatewayError::Timeout),
        }
    }

    /// Takes an idle dedicated connection or opens a new one.
    async fn lease(&self) -> Result<Lease, GatewayError> {
        let permit = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| GatewayError::Unavailable("shutting down".to_owned()))?;
        // Idle connections Redis has closed meanwhile are dropped, never written to.
        let idle = loop {
            match self.idle.lock().ok().and_then(|mut idle| idle.pop()) {
                Some(conn) if conn.closed() => continue,
                other => break other,
            }
        };
        let conn = match idle {
            Some(conn) => conn,
            None => self.open().await?,
        };
        Ok(Lease {
            conn: Some(conn),
            idle: self.idle.clone(),
            released: false,
            _permit: permit,
        })
    }
}

/// A client for `info`'s server, database 0, no `CLIENT SETINFO`: the handshake of a connection
/// that must work while Redis runs a script and answers `BUSY` to nearly everything (`SELECT`
/// included).
pub fn kill_client(info: ConnectionInfo) -> Result<Client, RedisError> {
    let settings = info
        .redis_settings()
        .clone()
        .set_db(0)
        .set_skip_set_lib_name();
    Client::open(info.set_redis_settings(settings))
}

/// A new connection of `client`, for one errand, waiting at most `timeout` to connect and for
/// each reply.
pub async fn connect_once(
    client: &Client,
    timeout: Duration,
) -> Result<MultiplexedConnection, RedisError> {
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(timeout))
        .set_response_timeout(Some(timeout));
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
}

/// Runs `SCRIPT KILL` or `FUNCTION KILL` on a new connection of `client` (see [`kill_client`]),
/// within `timeout` or [`KILL_TIMEOUT`], whichever is longer; an error reply is a
/// `Value::ServerError`.
pub async fn kill(
    client: &Client,
    command: &Command,
    timeout: Duration,
) -> Result<Value, GatewayError> {
    let deadline = timeout.max(KILL_TIMEOUT);
    let run = async {
        let mut conn = connect_once(client, deadline).await.map_err(io_error)?;
        match conn.req_packed_command(&to_cmd(command)).await {
            Ok(value) => Ok(value),
            Err(e) => match e.try_into() {
                Ok(server_error) => Ok(Value::ServerError(server_error)),
                Err(e) => Err(io_error(e)),
            },
        }
    };
    match tokio::time::timeout(deadline, run).await {
        Ok(result) => result,
        Err(_) => Err(GatewayError::Timeout),
    }
}

/// A dedicated connection checked out for one transaction. It goes back to the pool only
/// after a complete round trip; if the request fails or is cancelled midway, the connection
/// (whose state is unknown) is dropped.
struct Lease {
    conn: Option<Conn>,
    idle: Arc<Mutex<Vec<Conn>>>,
    released: bool,
    _permit: OwnedSemaphorePermit,
}

impl Lease {
    fn release(&mut self) {
        self.released = true;
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if !self.released {
            return;
        }
        if let (Some(conn), Ok(mut idle)) = (self.conn.take(), self.idle.lock()) {
            idle.push(conn);
        }
    }
}
