//! Which commands a request may run: denied, unsupported and read-only rules.

use std::collections::HashSet;

use super::command::Command;
use crate::error::GatewayError;

/// Commands that change the state of a shared connection or block it; the gateway never
/// forwards them because every request shares one multiplexed connection.
const UNSUPPORTED: &[&str] = &[
    "AUTH",
    "BLMOVE",
    "BLMPOP",
    "BLPOP",
    "BRPOP",
    "BRPOPLPUSH",
    "BZMPOP",
    "BZPOPMAX",
    "BZPOPMIN",
    "CLIENT",
    "DISCARD",
    "EXEC",
    "HELLO",
    "MONITOR",
    "MULTI",
    "PSUBSCRIBE",
    "PSYNC",
    "PUNSUBSCRIBE",
    "QUIT",
    "READONLY",
    "READWRITE",
    "REPLCONF",
    "RESET",
    "SELECT",
    "SSUBSCRIBE",
    "SUBSCRIBE",
    "SUNSUBSCRIBE",
    "SYNC",
    "UNSUBSCRIBE",
    "UNWATCH",
    "WAIT",
    "WAITAOF",
    "WATCH",
];

/// Commands a read-only token may run (they never write).
const READ_ONLY: &[&str] = &[
    "BITCOUNT",
    "BITFIELD_RO",
    "BITPOS",
    "DBSIZE",
    "DUMP",
    "ECHO",
    "EVALSHA_RO",
    "EVAL_RO",
    "EXISTS",
    "EXPIRETIME",
    "FCALL_RO",
    "GEODIST",
    "GEOHASH",
    "GEOPOS",
    "GEORADIUSBYMEMBER_RO",
    "GEORADIUS_RO",
    "GEOSEARCH",
    "GET",
    "GETBIT",
    "GETRANGE",
    "HEXISTS",
    "HGET",
    "HGETALL",
    "HKEYS",
    "HLEN",
    "HMGET",
    "HRANDFIELD",
    "HSCAN",
    "HSTRLEN",
    "HVALS",
    "KEYS",
    "LCS",
    "LINDEX",
    "LLEN",
    "LPOS",
    "LRANGE",
    "MGET",
    "PEXPIRETIME",
    "PFCOUNT",
    "PING",
    "PTTL",
    "RANDOMKEY",
    "SCAN",
    "SCARD",
    "SDIFF",
    "SINTER",
    "SINTERCARD",
    "SISMEMBER",
    "SMEMBERS",
    "SMISMEMBER",
    "SRANDMEMBER",
    "SSCAN",
    "STRLEN",
    "SUBSTR",
    "SUNION",
    "TIME",
    "TOUCH",
    "TTL",
    "TYPE",
    "XINFO",
    "XLEN",
    "XPENDING",
    "XRANGE",
    "XREVRANGE",
    "ZCARD",
    "ZCOUNT",
    "ZDIFF",
    "ZINTER",
    "ZINTERCARD",
    "ZLEXCOUNT",
    "ZMSCORE",
    "ZRANDMEMBER",
    "ZRANGE",
    "ZRANGEBYLEX",
    "ZRANGEBYSCORE",
    "ZRANK",
    "ZREVRANGE",
    "ZREVRANGEBYLEX",
    "ZREVRANGEBYSCORE",
    "ZREVRANK",
    "ZSCAN",
    "ZSCORE",
    "ZUNION",
];

/// The command rules of one gateway process.
#[derive(Debug)]
pub struct Policy {
    denied: HashSet<String>,
}

impl Policy {
    /// Creates the rules from the upper-case names of denied commands.
    pub fn new(denied: &[String]) -> Self {
        Self {
            denied: denied.iter().cloned().collect(),
        }
    }

    /// Checks one command; `readonly` is the kind of the token used.
    pub fn check(&self, command: &Command, readonly: bool) -> Result<(), GatewayError> {
        let name = command.name();
        let lower = name.to_ascii_lowercase();
        if self.denied.contains(&name) {
            return Err(GatewayError::Forbidden(format!(
                "ERR command '{lower}' is denied by the gateway configuration"
            )));
        }
        if UNSUPPORTED.contains(&name.as_str()) || blocks(command, &name) {
            return Err(GatewayError::BadRequest(format!(
                "ERR command '{lower}' is not supported by the REST gateway (it blocks or changes connection state)"
            )));
        }
        if readonly && !is_read(command, &name) {
            return Err(GatewayError::Forbidden(format!(
                "NOPERM this token is read-only and '{lower}' may write"
            )));
        }
        Ok(())
    }
}

/// `SCRIPT KILL` and `FUNCTION KILL`: they must reach a Redis that is busy running a script, so
/// they go out on a connection of their own.
pub fn is_kill(command: &Command) -> bool {
    matches!(command.name().as_str(), "SCRIPT" | "FUNCTION")
        && command.arg_upper(1).as_deref() == Some("KILL")
}

/// XREAD/XREADGROUP with BLOCK would stall the shared connection.
fn blocks(command: &Command, name: &str) -> bool {
    matches!(name, "XREAD" | "XREADGROUP")
        && command.args[1..]
            .iter()
            .any(|a| a.eq_ignore_ascii_case(b"BLOCK"))
}

fn is_read(command: &Command, name: &str) -> bool {
    if READ_ONLY.contains(&name) {
        return true;
    }
    match name {
        "SCRIPT" => command.arg_upper(1).as_deref() == Some("EXISTS"),
        "XREAD" => true,
        "COMMAND" => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        let p = Policy::new(&["FLUSHALL".to_owned()]);
        assert!(p.check(&Command::of(&["flushall"]), false).is_err());
        assert!(p.check(&Command::of(&["select", "1"]), false).is_err());
        assert!(p
            .check(
                &Command::of(&["xread", "block", "0", "streams", "s", "$"]),
                false
            )
            .is_err());
        assert!(p.check(&Command::of(&["set", "k", "v"]), false).is_ok());
        assert!(p.check(&Command::of(&["set", "k", "v"]), true).is_err());
        assert!(p.check(&Command::of(&["get", "k"]), true).is_ok());
        assert!(p
            .check(&Command::of(&["script", "exists", "x"]), true)
            .is_ok());
        assert!(p
            .check(&Command::of(&["script", "load", "x"]), true)
            .is_err());
        assert!(p
            .check(&Command::of(&["eval", "return 1", "0"]), true)
            .is_err());
    }
}
