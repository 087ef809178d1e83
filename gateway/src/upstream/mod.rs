//! What a token's requests run on: one Redis server or a Redis Cluster, behind one interface so
//! the routes do not tell them apart; the reply bound on their sockets; the ACL check of their users.

pub mod acl;
mod cluster;
mod pool;
mod reply_bound;

use std::time::Duration;

use redis::Value;

use self::cluster::Cluster;
use self::pool::Server;
use crate::commands::command::Command;
use crate::config::Target;
use crate::error::GatewayError;
use crate::metrics::ConnectCounters;

/// One database behind the gateway.
pub enum Upstream {
    /// One redis-server.
    Server(Server),
    /// A Redis Cluster.
    Cluster(Cluster),
}

impl Upstream {
    /// Prepares the connections to `target`; nothing is opened before the first request.
    pub fn new(
        target: &Target,
        timeout: Duration,
        dedicated: usize,
        max_reply_bytes: usize,
        connects: ConnectCounters,
    ) -> Result<Self, String> {
        Ok(match target {
            Target::Server(url) => Self::Server(Server::new(
                url,
                timeout,
                dedicated,
                max_reply_bytes,
                connects,
            )?),
            Target::Cluster(urls) => {
                Self::Cluster(Cluster::new(urls, timeout, max_reply_bytes, connects)?)
            }
        })
    }

    /// Whether Redis (every master of a cluster) answers PING in time.
    pub async fn ready(&self) -> Result<(), GatewayError> {
        match self {
            Self::Server(server) => server.ready().await,
            Self::Cluster(cluster) => cluster.ready().await,
        }
    }

    /// One reply per command, in order; error replies are `Value::ServerError` items.
    pub async fn pipeline(&self, commands: &[Command]) -> Result<Vec<Value>, GatewayError> {
        match self {
            Self::Server(server) => server.pipeline(commands).await,
            Self::Cluster(cluster) => cluster.pipeline(commands).await,
        }
    }

    /// The reply of `EXEC` after `MULTI` and the commands.
    pub async fn transaction(&self, commands: &[Command]) -> Result<Value, GatewayError> {
        match self {
            Self::Server(server) => server.transaction(commands).await,
            Self::Cluster(cluster) => cluster.transaction(commands).await,
        }
    }

    /// `SCRIPT KILL` or `FUNCTION KILL`, on connections of their own.
    pub async fn kill(&self, command: &Command) -> Result<Value, GatewayError> {
        match self {
            Self::Server(server) => server.kill(command).await,
            Self::Cluster(cluster) => cluster.kill(command).await,
        }
    }
}
