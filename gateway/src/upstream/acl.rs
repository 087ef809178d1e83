//! The start-up check that Redis itself refuses what the gateway denies.
//!
//! Lua scripts run with the rights of the connection's Redis user, not under the gateway's deny
//! list: with the all-powerful `default` user, `EVAL "return redis.call('FLUSHALL')" 0` wipes
//! everything. So the gateway connects as an ACL user without those commands, and before serving
//! asks Redis, with `ACL DRYRUN <user> <command> …`, whether that user could run any of them. A
//! Redis URL that serves only read-only tokens is checked for every write command too.

use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::{Client, IntoConnectionInfo, Value};

use super::cluster;
use super::pool::connect_once;
use crate::config::Target;

/// Calls that cover each command the gateway denies: every subcommand that writes or reveals
/// configuration, with arguments of the right arity (DRYRUN checks it).
const PROBES: &[&[&str]] = &[
    &["FLUSHALL"],
    &["FLUSHDB"],
    &["SWAPDB", "0", "1"],
    &["MIGRATE", "127.0.0.1", "6379", "k", "0", "1000"],
    &["CONFIG", "SET", "x", "y"],
    &["CONFIG", "GET", "x"],
    &["CONFIG", "REWRITE"],
    &["CONFIG", "RESETSTAT"],
    &["DEBUG", "SLEEP", "0"],
    &["SHUTDOWN"],
    &["MODULE", "LOAD", "x"],
    &["MODULE", "UNLOAD", "x"],
    &["ACL", "SETUSER", "x"],
    &["ACL", "DELUSER", "x"],
    &["ACL", "LOAD"],
    &["ACL", "SAVE"],
    &["SAVE"],
    &["BGSAVE"],
    &["BGREWRITEAOF"],
    &["REPLICAOF", "NO", "ONE"],
    &["SLAVEOF", "NO", "ONE"],
    &["FAILOVER"],
    &["FUNCTION", "LOAD", "x"],
    &["FUNCTION", "DELETE", "x"],
    &["FUNCTION", "FLUSH"],
    &["FUNCTION", "RESTORE", "x"],
];

/// Commands that are checked whether or not `--deny-commands` lists them: functions are code
/// that runs outside the script rules, and `FUNCTION FLUSH` deletes them all.
const ALWAYS: &[&str] = &["FUNCTION"];

/// Why the check did not pass.
#[derive(Debug)]
pub enum AclError {
    /// Redis could not be reached: the check has to wait.
    Unreachable(String),
    /// The user may run denied commands, or its rules cannot be read: do not serve.
    Refused(String),
}

/// The calls to try for the denied command names (upper case).
fn probes(denied: &[String]) -> Vec<Vec<String>> {
    let mut calls = Vec::new();
    for name in denied
        .iter()
        .map(String::as_str)
        .chain(ALWAYS.iter().copied())
    {
        let known: Vec<&&[&str]> = PROBES.iter().filter(|p| p[0] == name).collect();
        if known.is_empty() {
            calls.push(vec![name.to_owned()]);
        }
        for probe in known {
            let call: Vec<String> = probe.iter().map(|s| (*s).to_owned()).collect();
            if !calls.contains(&call) {
                calls.push(call);
            }
        }
    }
    calls
}

/// One call of every command and subcommand that writes (`COMMAND INFO` flags `write`), with as
/// many arguments as its arity asks for.
async fn write_probes(
    conn: &mut impl ConnectionLike,
    place: &str,
) -> Result<Vec<Vec<String>>, AclError> {
    let info = conn
        .req_packed_command(&redis::cmd("COMMAND").arg("INFO").clone())
        .await
        .map_err(|e| AclError::Unreachable(e.to_string()))?;
    let Value::Array(entries) = info else {
        return Err(AclError::Refused(format!(
            "unexpected reply to COMMAND INFO from the {place}"
        )));
    };
    let mut calls = Vec::new();
    let mut pending: Vec<Value> = entries;
    while let Some(entry) = pending.pop() {
        let Value::Array(fields) = entry else {
            continue;
        };
        if let Some(Value::Array(subcommands)) = fields.get(9) {
            if !subcommands.is_empty() {
                pending.extend(subcommands.iter().cloned());
                continue;
            }
        }
        let (Some(name), Some(Value::Int(arity)), Some(Value::Array(flags))) =
            (fields.first(), fields.get(1), fields.get(2))
        else {
            continue;
        };
        let writes = flags
            .iter()
            .any(|flag| text(flag).as_deref() == Some("write"));
        let Some(name) = text(name).filter(|_| writes) else {
            continue;
        };
        let mut call: Vec<String> = name.split('|').map(str::to_ascii_uppercase).collect();
        let wanted = usize::try_from(arity.unsigned_abs()).unwrap_or(0);
        while call.len() < wanted {
            call.push("1".to_owned());
        }
        calls.push(call);
    }
    if calls.is_empty() {
        return Err(AclError::Refused(format!(
            "the {place} lists no write command in COMMAND INFO"
        )));
    }
    Ok(calls)
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::SimpleString(s) => Some(s.clone()),
        Value::BulkString(bytes) => String::from_utf8(bytes.clone()).ok(),
        _ => None,
    }
}

/// Asks Redis whether the user of `target` may run any of the `denied` commands, or, for a target
/// of read-only tokens only (`readonly`), any command that writes. Every node of a cluster is
/// asked (each has its own users); the nodes are listed at the time of the check.
pub async fn check(
    target: &Target,
    denied: &[String],
    readonly: bool,
    timeout: Duration,
) -> Result<(), AclError> {
    match target {
        Target::Server(url) => check_node(url.as_str(), denied, readonly, timeout).await,
        Target::Cluster(urls) => {
            let seeds = urls
                .iter()
                .map(|url| url.as_str().into_connection_info())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| AclError::Refused(e.to_string()))?;
            let nodes = cluster::nodes(&seeds, timeout)
                .await
                .map_err(AclError::Unreachable)?;
            for node in nodes {
                check_node(node, denied, readonly, timeout).await?;
            }
            Ok(())
        }
    }
}

/// [`check`] for one server.
async fn check_node(
    node: impl IntoConnectionInfo,
    denied: &[String],
    readonly: bool,
    timeout: Duration,
) -> Result<(), AclError> {
    let client = Client::open(node).map_err(|e| AclError::Refused(e.to_string()))?;
    let info = client.get_connection_info();
    let user = info
        .redis_settings()
        .username()
        .unwrap_or("default")
        .to_owned();
    let place = format!("Redis user '{user}' at {}", info.addr());
    let mut conn = connect_once(&client, timeout)
        .await
        .map_err(|e| AclError::Unreachable(e.to_string()))?;
    let mut calls = probes(denied);
    if readonly {
        calls.extend(write_probes(&mut conn, &place).await?);
    }
    let mut allowed = Vec::new();
    for call in calls {
        let mut cmd = redis::cmd("ACL");
        cmd.arg("DRYRUN").arg(&user).arg(&call);
        let reply = match conn.req_packed_command(&cmd).await {
            Ok(value) => value,
            Err(e) if e.is_io_error() || e.is_timeout() => {
                return Err(AclError::Unreachable(e.to_string()))
            }
            Err(e) => match redis::ServerError::try_from(e) {
                Ok(error) => Value::ServerError(error),
                Err(e) => return Err(AclError::Unreachable(e.to_string())),
            },
        };
        match reply {
            Value::Okay => allowed.push(call_name(&call)),
            Value::SimpleString(s) if s == "OK" => allowed.push(call_name(&call)),
            // "This user has no permissions to run the '…' command".
            Value::BulkString(_) | Value::SimpleString(_) | Value::VerbatimString { .. } => {}
            Value::ServerError(error) if error.code() == "NOPERM" => {
                return Err(AclError::Refused(format!(
                    "cannot check the rules of the {place}: it may not run ACL DRYRUN \
                     (grant it +acl|dryrun, see gateway/README.md), or pass --unsafe-allow-admin"
                )))
            }
            Value::ServerError(error)
                if error
                    .details()
                    .is_some_and(|d| d.contains("not found") || d.contains("Unknown command"))
                    && call.len() == 1 =>
            {
                // A command this Redis does not have cannot be run either.
            }
            Value::ServerError(error) => {
                return Err(AclError::Refused(format!(
                    "cannot check the rules of the {place} with ACL DRYRUN ({} {}; Redis 7 or \
                     later is needed), or pass --unsafe-allow-admin",
                    error.code(),
                    error.details().unwrap_or_default()
                )))
            }
            other => {
                return Err(AclError::Refused(format!(
                    "unexpected reply to ACL DRYRUN from the {place}: {other:?}"
                )))
            }
        }
    }
    if allowed.is_empty() {
        return Ok(());
    }
    let (denied_to, user) = if readonly {
        (
            "its read-only tokens may not",
            "a user without write commands",
        )
    } else {
        ("the gateway denies", "a restricted ACL user")
    };
    Err(AclError::Refused(format!(
        "the {place} may run {}, which {denied_to}; Lua scripts run with the user's \
         rights, so a token could run them through a script. Connect as {user} \
         (see gateway/README.md, \"Redis ACL\"), or pass --unsafe-allow-admin to serve anyway",
        named(&allowed)
    )))
}

/// `a, b, c` for at most 30 names (every denied command fits), then how many more.
fn named(names: &[String]) -> String {
    const SHOWN: usize = 30;
    let mut text = names[..names.len().min(SHOWN)].join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    text
}

/// Commands whose first argument is a subcommand (ACL rules can name `config|set`).
const WITH_SUBCOMMANDS: &[&str] = &[
    "ACL", "CLIENT", "CLUSTER", "CONFIG", "FUNCTION", "MODULE", "OBJECT", "SCRIPT", "XGROUP",
];

/// `flushall`, or `config|set` for a subcommand.
fn call_name(call: &[String]) -> String {
    let name = call[0].to_ascii_lowercase();
    match call.get(1) {
        Some(sub) if WITH_SUBCOMMANDS.contains(&call[0].as_str()) => {
            format!("{name}|{}", sub.to_ascii_lowercase())
        }
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_cover_subcommands_and_unknown_names() {
        let calls = probes(&["CONFIG".to_owned(), "XYZ".to_owned()]);
        assert!(calls.contains(&vec!["CONFIG".into(), "SET".into(), "x".into(), "y".into()]));
        assert!(calls.contains(&vec!["XYZ".to_owned()]));
        assert!(calls.contains(&vec!["FUNCTION".into(), "FLUSH".into()]));
        assert_eq!(call_name(&["CONFIG".into(), "SET".into()]), "config|set");
        assert_eq!(
            call_name(&["SWAPDB".into(), "0".into(), "1".into()]),
            "swapdb"
        );
    }
}
