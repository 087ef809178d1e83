//! Connections to one Redis server: a shared multiplexed connection for single commands and
//! pipelines, and a small pool of dedicated connections for `/multi-exec`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::aio::{
    ConnectionLike, ConnectionManager, ConnectionManagerConfig, MultiplexedConnection,
};
use redis::{AsyncConnectionConfig, Client, Cmd, Pipeline, RedisError, Value};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::command::Command;
use crate::error::GatewayError;

/// How long `SCRIPT KILL` may take: Redis reads other clients only once a script has run for
/// `busy-reply-threshold` (5 s by default), so the kill waits at least that long.
const KILL_TIMEOUT: Duration = Duration::from_secs(15);

/// How long `/readyz` waits for PING.
const READY_TIMEOUT: Duration = Duration::from_millis(1000);

/// One Redis server (one database) behind the gateway.
pub struct Backend {
    client: Client,
    /// The same server, database 0, no `CLIENT SETINFO`: the handshake of a connection that must
    /// work while Redis runs a script and answers `BUSY` to nearly everything (`SELECT` included).
    kill_client: Client,
    shared: ConnectionManager,
    idle: Arc<Mutex<Vec<MultiplexedConnection>>>,
    slots: Arc<Semaphore>,
    timeout: Duration,
}

fn to_cmd(command: &Command) -> Cmd {
    let mut cmd = Cmd::new();
    for arg in &command.args {
        cmd.arg(arg.as_slice());
    }
    cmd
}

fn io_error(error: RedisError) -> GatewayError {
    if error.is_timeout() {
        GatewayError::Timeout
    } else {
        GatewayError::Unavailable(error.to_string())
    }
}

impl Backend {
    /// Prepares the connections; nothing is opened until the first request, so the gateway
    /// starts (and keeps running) while Redis is down.
    pub fn new(url: &str, timeout: Duration, dedicated: usize) -> Result<Self, String> {
        let client = Client::open(url).map_err(|e| format!("invalid Redis URL {url:?}: {e}"))?;
        let connect_timeout = timeout.min(Duration::from_secs(2));
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(connect_timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(20))
            .set_max_delay(Duration::from_millis(200));
        let shared = ConnectionManager::new_lazy_with_config(client.clone(), config)
            .map_err(|e| format!("cannot set up Redis connection to {url:?}: {e}"))?;
        let info = client.get_connection_info().clone();
        let settings = info
            .redis_settings()
            .clone()
            .set_db(0)
            .set_skip_set_lib_name();
        let kill_client = Client::open(info.set_redis_settings(settings))
            .map_err(|e| format!("invalid Redis URL {url:?}: {e}"))?;
        Ok(Self {
            client,
            kill_client,
            shared,
            idle: Arc::new(Mutex::new(Vec::new())),
            slots: Arc::new(Semaphore::new(dedicated)),
            timeout,
        })
    }

    /// Whether Redis answers PING within `READY_TIMEOUT` on the shared connection: an error
    /// while it is unreachable, busy (a long script: `BUSY`) or loading its data.
    pub async fn ready(&self) -> Result<(), GatewayError> {
        let mut conn = self.shared.clone();
        let ping = async move { redis::cmd("PING").query_async::<Value>(&mut conn).await };
        match tokio::time::timeout(READY_TIMEOUT.min(self.timeout), ping).await {
            Ok(Ok(Value::ServerError(e))) => {
                Err(GatewayError::Unavailable(crate::encoding::error_text(&e)))
            }
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(GatewayError::Unavailable(e.to_string())),
            Err(_) => Err(GatewayError::Unavailable(
                "redis did not answer PING in time".to_owned(),
            )),
        }
    }

    /// Runs commands as one pipeline (one write, one round trip) on the shared connection and
    /// returns one reply per command; error replies are `Value::ServerError` items.
    pub async fn pipeline(&self, commands: &[Command]) -> Result<Vec<Value>, GatewayError> {
        let mut pipe = Pipeline::with_capacity(commands.len());
        for command in commands {
            pipe.add_command(to_cmd(command));
        }
        let mut conn = self.shared.clone();
        let run = async move { conn.req_packed_commands(&pipe, 0, commands.len()).await };
        match tokio::time::timeout(self.timeout, run).await {
            Ok(Ok(values)) => Ok(values),
            Ok(Err(e)) => Err(io_error(e)),
            Err(_) => Err(GatewayError::Timeout),
        }
    }

    /// Runs `SCRIPT KILL` or `FUNCTION KILL` on a connection of its own, opened for it and closed
    /// after: on the shared connection it would queue behind the very script it should stop.
    pub async fn kill(&self, command: &Command) -> Result<Value, GatewayError> {
        let run = async {
            let deadline = self.timeout.max(KILL_TIMEOUT);
            let config = AsyncConnectionConfig::new()
                .set_connection_timeout(Some(deadline))
                .set_response_timeout(Some(deadline));
            let mut conn = self
                .kill_client
                .get_multiplexed_async_connection_with_config(&config)
                .await
                .map_err(io_error)?;
            match conn.req_packed_command(&to_cmd(command)).await {
                Ok(value) => Ok(value),
                Err(e) => match e.try_into() {
                    Ok(server_error) => Ok(Value::ServerError(server_error)),
                    Err(e) => Err(io_error(e)),
                },
            }
        };
        match tokio::time::timeout(self.timeout.max(KILL_TIMEOUT), run).await {
            Ok(result) => result,
            Err(_) => Err(GatewayError::Timeout),
        }
    }

    /// Runs `MULTI`, the commands and `EXEC` in one round trip on a connection that no other
    /// request uses meanwhile, and returns the reply of `EXEC` (an array, nil, or an error).
    pub async fn transaction(&self, commands: &[Command]) -> Result<Value, GatewayError> {
        let run = async {
            let mut lease = self.lease().await?;
            let mut pipe = Pipeline::with_capacity(commands.len() + 2);
            pipe.add_command(redis::cmd("MULTI"));
            for command in commands {
                pipe.add_command(to_cmd(command));
            }
            pipe.add_command(redis::cmd("EXEC"));
            let conn = lease.conn.as_mut().ok_or(GatewayError::Timeout)?;
            let mut values = conn
                .req_packed_commands(&pipe, 0, commands.len() + 2)
                .await
                .map_err(io_error)?;
            lease.release();
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
        let idle = self.idle.lock().ok().and_then(|mut idle| idle.pop());
        let conn = match idle {
            Some(conn) => conn,
            None => {
                let config = AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(self.timeout))
                    .set_response_timeout(Some(self.timeout));
                self.client
                    .get_multiplexed_async_connection_with_config(&config)
                    .await
                    .map_err(io_error)?
            }
        };
        Ok(Lease {
            conn: Some(conn),
            idle: self.idle.clone(),
            released: false,
            _permit: permit,
        })
    }
}

/// A dedicated connection checked out for one transaction. It goes back to the pool only
/// after a complete round trip; if the request fails or is cancelled midway, the connection
/// (whose state is unknown) is dropped.
struct Lease {
    conn: Option<MultiplexedConnection>,
    idle: Arc<Mutex<Vec<MultiplexedConnection>>>,
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
