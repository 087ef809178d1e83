//! The real `@upstash/ratelimit@2.2.0` (npm, run by node) and edgelimit on one identifier through the
//! same gateway and prefix: they must enforce one shared limit and read each other's state.

#![cfg(not(target_arch = "wasm32"))]

mod support;

use edgelimit::algorithm::Algorithm;
use edgelimit::{Backend, FixedWindow, RedisBackend, SlidingWindow, TokenBucket};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::{Servers, TOKEN};

/// The peer process, killed on drop.
struct Peer {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Peer {
    fn start(servers: &Servers) -> Self {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/js/peer.mjs");
        let mut child = Command::new("node")
            .arg(script)
            .env("EDGELIMIT_TEST_URL", servers.gateway.url())
            .env("EDGELIMIT_TEST_TOKEN", TOKEN)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("node is missing: run `make bootstrap`");
        let input = child.stdin.take().expect("peer stdin");
        let output = BufReader::new(child.stdout.take().expect("peer stdout"));
        Self {
            child,
            input,
            output,
        }
    }

    fn ask(&mut self, request: Value) -> Value {
        writeln!(self.input, "{request}").expect("writing to the peer");
        let mut line = String::new();
        self.output.read_line(&mut line).expect("reading the peer");
        let reply: Value = serde_json::from_str(&line).unwrap_or_else(|_| {
            panic!(
                "the peer answered {line:?} (are the npm packages installed? run `make bootstrap`)"
            )
        });
        assert!(reply.get("error").is_none(), "the peer failed: {reply}");
        reply
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn hour() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        / 3600
}

#[tokio::test]
async fn both_libraries_enforce_one_shared_limit_and_read_each_others_state() {
    let servers = Servers::start();
    let mut peer = Peer::start(&servers);
    let edgelimit = RedisBackend::new(servers.gateway.transport());
    let one_hour = Duration::from_secs(3600);
    let algorithms: [(&str, Algorithm); 3] = [
        (
            "fixedWindow",
            FixedWindow::new(10, one_hour).unwrap().into(),
        ),
        (
            "slidingWindow",
            SlidingWindow::new(10, one_hour).unwrap().into(),
        ),
        (
            "tokenBucket",
            TokenBucket::new(1, one_hour, 10).unwrap().into(),
        ),
    ];
    for (name, rule) in algorithms {
        // Windows are hours since the epoch; a run that straddles an hour is run again.
        for attempt in 0.. {
            let started = hour();
            let id = format!("interop:{name}:{attempt}:{}", std::process::id());
            let key = format!("@upstash/ratelimit:{id}");
            let mut admitted = 0;
            for call in 0..16 {
                let allowed = if call % 2 == 0 {
                    edgelimit.acquire(&key, 1.0, rule).await.unwrap().allowed
                } else {
                    peer.ask(json!({ "op": "limit", "algorithm": name, "id": id }))["success"]
                        == json!(true)
                };
                admitted += u32::from(allowed);
                if call == 5 {
                    // Six admitted, three by each: both read the same state.
                    let theirs =
                        peer.ask(json!({ "op": "getRemaining", "algorithm": name, "id": id }));
                    let ours = edgelimit.available(&key, rule).await.unwrap();
                    assert_eq!(theirs["remaining"], json!(4), "{name}: the peer's view");
                    assert_eq!(ours, 4.0, "{name}: edgelimit's view");
                }
            }
            if hour() != started && attempt == 0 {
                continue;
            }
            assert_eq!(
                admitted, 10,
                "{name}: both libraries together admit exactly the limit"
            );
            let theirs = peer.ask(json!({ "op": "getRemaining", "algorithm": name, "id": id }));
            assert_eq!(theirs["remaining"], json!(0), "{name}");
            assert_eq!(
                edgelimit.available(&key, rule).await.unwrap(),
                0.0,
                "{name}"
            );
            break;
        }
    }
}
