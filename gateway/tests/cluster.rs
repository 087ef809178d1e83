//! The gateway in front of a Redis Cluster (`--redis-cluster`): three masters and three replicas
//! of real redis-server, commands routed by slot, pipelines across masters, transactions in one
//! slot, a limiter under concurrency, and a master killed under load.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value as Json};
use test_support::{gateway_refusal, Cluster, Gateway, GATEWAY_PASSWORD, TOKEN};

/// How soon a dead master's replica takes over.
const NODE_TIMEOUT_MS: u64 = 1000;

/// A direct connection to one node as the `default` user.
fn node(port: u16) -> redis::Connection {
    redis::Client::open(Cluster::admin_url(port))
        .and_then(|c| c.get_connection())
        .expect("direct connection to a cluster node")
}

fn result(reply: &Reply) -> &Json {
    assert_eq!(reply.status, 200, "{:?}", reply.json);
    &reply.json["result"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_pipelines_and_transactions_are_routed_by_slot() {
    let cluster = Cluster::start(NODE_TIMEOUT_MS);
    let gw = Gateway::start_with(&["--redis-cluster", &cluster.urls(), "--token", TOKEN]);
    let c = http();
    assert_eq!(readyz(&c, &gw).await, 200);

    // Single commands, body and path forms.
    assert_eq!(
        result(&post(&c, &gw, "/", r#"["SET","a","1"]"#).await),
        "OK"
    );
    assert_eq!(result(&post(&c, &gw, "/incr/a", "").await), 2);

    // One pipeline writes many keys, spread over every master; another reads them back in order.
    let keys: Vec<String> = (0..300).map(|i| format!("key:{i}")).collect();
    let sets: Vec<Json> = keys
        .iter()
        .map(|k| json!(["SET", k, format!("v-{k}")]))
        .collect();
    let r = post(&c, &gw, "/pipeline", &Json::Array(sets).to_string()).await;
    assert_eq!(r.status, 200, "{:?}", r.json);
    assert!(r
        .json
        .as_array()
        .unwrap()
        .iter()
        .all(|i| i["result"] == "OK"));
    let gets: Vec<Json> = keys.iter().map(|k| json!(["GET", k])).collect();
    let r = post(&c, &gw, "/pipeline", &Json::Array(gets).to_string()).await;
    let expected: Vec<Json> = keys
        .iter()
        .map(|k| json!({ "result": format!("v-{k}") }))
        .collect();
    assert_eq!(r.json, Json::Array(expected));
    let masters = cluster.masters();
    assert_eq!(masters.len(), 3);
    let sizes: Vec<i64> = masters
        .iter()
        .map(|&port| redis::cmd("DBSIZE").query(&mut node(port)).unwrap())
        .collect();
    assert!(sizes.iter().all(|&n| n > 50), "keys per master: {sizes:?}");
    assert_eq!(sizes.iter().sum::<i64>(), 301, "keys per master: {sizes:?}");

    // Commands on one key keep their order inside a pipeline; errors answer in place; a
    // multi-key command across slots is split and joined by the cluster client.
    let r = post(
        &c,
        &gw,
        "/pipeline",
        r#"[["DEL","p"],["INCR","p"],["PEXPIRE","p",60000],["INCRBY","p",10],["HSET","a","f","v"],["GET","p"],["MGET","key:1","key:2","p"]]"#,
    )
    .await;
    assert_eq!(r.json[0], json!({"result": 0}));
    assert_eq!(r.json[1], json!({"result": 1}));
    assert_eq!(r.json[2], json!({"result": 1}));
    assert_eq!(r.json[3], json!({"result": 11}));
    assert!(r.json[4]["error"]
        .as_str()
        .unwrap()
        .starts_with("WRONGTYPE"));
    assert_eq!(r.json[5], json!({"result": "11"}));
    assert_eq!(r.json[6], json!({"result": ["v-key:1", "v-key:2", "11"]}));

    // Scripts: SCRIPT LOAD reaches every master, EVALSHA runs where its first key lives.
    let script = "return redis.call('INCRBY', KEYS[1], ARGV[1])";
    let sha = post(&c, &gw, "/", &json!(["SCRIPT", "LOAD", script]).to_string()).await;
    let sha = result(&sha).as_str().unwrap().to_owned();
    for k in &keys[..30] {
        let counter = format!("{k}:n");
        let r = post(
            &c,
            &gw,
            "/",
            &json!(["EVALSHA", sha, 1, counter, 5]).to_string(),
        )
        .await;
        assert_eq!(result(&r), 5);
    }
    let r = post(
        &c,
        &gw,
        "/",
        &json!(["EVAL", script, 1, "key:7:n", 1]).to_string(),
    )
    .await;
    assert_eq!(result(&r), 6);

    // A transaction whose keys share a slot (a hash tag) runs; one across slots is refused.
    let r = post(
        &c,
        &gw,
        "/multi-exec",
        r#"[["SET","{user1}:a","1"],["INCR","{user1}:b"],["GET","{user1}:a"]]"#,
    )
    .await;
    assert_eq!(
        r.json,
        json!([{"result": "OK"}, {"result": 1}, {"result": "1"}])
    );
    for body in [
        r#"[["SET","a","1"],["SET","b","2"]]"#,
        r#"[["MSET","a","1","b","2"]]"#,
    ] {
        let r = post(&c, &gw, "/multi-exec", body).await;
        assert_eq!(r.status, 400, "{:?}", r.json);
        let error = r.json["error"].as_str().unwrap();
        assert!(error.starts_with("CROSSSLOT"), "{error}");
    }
    assert_eq!(result(&post(&c, &gw, "/get/b", "").await), &Json::Null);

    // SCRIPT KILL goes to every node; none runs a script.
    let r = post(&c, &gw, "/", r#"["SCRIPT","KILL"]"#).await;
    assert_eq!(r.status, 400, "{:?}", r.json);
    assert!(r.json["error"].as_str().unwrap().starts_with("NOTBUSY"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reply_bound_tokens_file_and_acl_check_on_a_cluster() {
    let cluster = Cluster::start(NODE_TIMEOUT_MS);
    let gw = Gateway::start_with(&[
        "--redis-cluster",
        &cluster.urls(),
        "--token",
        TOKEN,
        "--max-reply-bytes",
        "2048",
    ]);
    let c = http();
    let big = "x".repeat(4000);
    let medium = "y".repeat(900);
    let body = json!([
        ["SET", "big", big],
        ["SET", "m1", medium],
        ["SET", "m2", medium],
        ["SET", "m3", medium]
    ]);
    let r = post(&c, &gw, "/pipeline", &body.to_string()).await;
    assert_eq!(r.status, 200, "{:?}", r.json);
    // One reply over the limit, refused while it is read.
    let r = post(&c, &gw, "/", r#"["GET","big"]"#).await;
    assert_eq!(r.status, 400, "{:?}", r.json);
    assert!(r.json["error"]
        .as_str()
        .unwrap()
        .contains("larger than the limit"));
    // Replies under the limit each, over it together.
    let r = post(
        &c,
        &gw,
        "/pipeline",
        r#"[["GET","m1"],["GET","m2"],["GET","m3"]]"#,
    )
    .await;
    assert_eq!(r.status, 400, "{:?}", r.json);
    assert!(r.json["error"]
        .as_str()
        .unwrap()
        .contains("larger than the limit"));
    let r = post(&c, &gw, "/pipeline", r#"[["GET","m1"],["GET","m2"]]"#).await;
    assert_eq!(r.status, 200, "{:?}", r.json);

    // A tokens-file line names the cluster by `cluster:` and its seeds.
    let dir = std::env::temp_dir().join(format!("edgelimit-cluster-tokens-{}", gw.port));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tokens.txt");
    std::fs::write(
        &file,
        format!("# one cluster\nfrom-file cluster:{} rw\n", cluster.urls()),
    )
    .unwrap();
    let by_file = Gateway::start_with(&["--tokens", file.to_str().unwrap()]);
    let r = send(
        &c,
        "POST",
        &by_file.url(),
        &[("Authorization", "Bearer from-file")],
        r#"["GET","m1"]"#,
    )
    .await;
    assert_eq!(result(&r), &json!(medium));
    let _ = std::fs::remove_dir_all(dir);

    // The default user may run everything: refused.
    let admin = format!("redis://127.0.0.1:{}", cluster.live_ports()[0]);
    let stderr = gateway_refusal(&["--redis-cluster", &admin, "--token", TOKEN]);
    assert!(stderr.contains("may run flushall"), "{stderr}");
    // One node (not the seed) lets the gateway's user run FLUSHALL: found and refused too.
    let ports = cluster.live_ports();
    let mut rules = test_support::gateway_acl_rules();
    rules.push("+flushall".to_owned());
    let rules: Vec<&str> = rules.iter().map(String::as_str).collect();
    cluster.set_user(ports[4], "gateway", &rules);
    let seed = format!("redis://gateway:{GATEWAY_PASSWORD}@127.0.0.1:{}", ports[0]);
    let stderr = gateway_refusal(&["--redis-cluster", &seed, "--token", TOKEN]);
    assert!(stderr.contains("may run flushall"), "{stderr}");
    assert!(stderr.contains(&ports[4].to_string()), "{stderr}");
}

/// A fixed window: INCR, PEXPIRE on the first hit, admitted while the count is within the limit.
const FIXED_WINDOW: &str = "local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if n <= tonumber(ARGV[1]) then return 1 else return 0 end";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_callers_are_admitted_exactly_up_to_the_limit() {
    let cluster = Cluster::start(NODE_TIMEOUT_MS);
    let gw = Gateway::start_with(&["--redis-cluster", &cluster.urls(), "--token", TOKEN]);
    const LIMIT: i64 = 50;
    let ids: Vec<String> = (0..6).map(|i| format!("user{i}")).collect();
    let admitted = Arc::new(Mutex::new(HashMap::<String, i64>::new()));
    let mut tasks = Vec::new();
    for caller in 0..64 {
        let (url, ids, admitted) = (gw.url(), ids.clone(), admitted.clone());
        tasks.push(tokio::spawn(async move {
            let client = http();
            let auth = format!("Bearer {TOKEN}");
            for round in 0..12 {
                let id = &ids[(caller + round) % ids.len()];
                // The hash tag keeps every key of one identifier in one slot.
                let key = format!("rl:{{{id}}}:window");
                let body = json!(["EVAL", FIXED_WINDOW, 1, key, LIMIT, 60_000]).to_string();
                let r = send(&client, "POST", &url, &[("Authorization", &auth)], body).await;
                assert_eq!(r.status, 200, "{:?}", r.json);
                if r.json["result"] == 1 {
                    *admitted.lock().unwrap().entry(id.clone()).or_default() += 1;
                }
            }
        }));
    }
    for task in tasks {
        task.await.expect("caller task");
    }
    // 64 × 12 = 768 calls over 6 identifiers: 128 each, 50 admitted each.
    let admitted = admitted.lock().unwrap().clone();
    for id in &ids {
        assert_eq!(admitted.get(id), Some(&LIMIT), "{admitted:?}");
    }
    // The identifiers live on more than one master.
    let owners: std::collections::HashSet<u16> = ids
        .iter()
        .filter_map(|id| {
            let key = format!("rl:{{{id}}}:window");
            cluster.masters().into_iter().find(|&port| {
                redis::cmd("EXISTS")
                    .arg(&key)
                    .query::<i64>(&mut node(port))
                    .is_ok_and(|n| n == 1)
            })
        })
        .collect();
    assert!(owners.len() > 1, "all identifiers on one master");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_killed_under_load_is_replaced_without_losing_acknowledged_writes() {
    let mut cluster = Cluster::start(NODE_TIMEOUT_MS);
    let gw = Gateway::start_with(&[
        "--redis-cluster",
        &cluster.urls(),
        "--token",
        TOKEN,
        "--timeout-ms",
        "2000",
    ]);
    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    // Per client: INCRs answered 200, the slowest of them, and when each failed request was sent
    // and answered.
    let mut tasks = Vec::new();
    for i in 0..32 {
        let (stop, url) = (stop.clone(), gw.url());
        tasks.push(tokio::spawn(async move {
            let client = http();
            let auth = format!("Bearer {TOKEN}");
            let body = json!(["INCR", format!("counter:{i}")]).to_string();
            let (mut acknowledged, mut slowest, mut errors) = (0i64, Duration::ZERO, Vec::new());
            while !stop.load(Ordering::Relaxed) {
                let sent = started.elapsed();
                // `send` fails the test on a hang (20 s) or a reply that is not JSON.
                let r = send(
                    &client,
                    "POST",
                    &url,
                    &[("Authorization", &auth)],
                    body.clone(),
                )
                .await;
                let answered = started.elapsed();
                if r.status == 200 {
                    acknowledged += 1;
                    slowest = slowest.max(answered - sent);
                } else {
                    assert!(
                        r.status >= 500,
                        "unexpected reply {} {:?}",
                        r.status,
                        r.json
                    );
                    assert!(r.json["error"].is_string(), "{:?}", r.json);
                    errors.push((sent, answered, r.status, r.json["error"].to_string()));
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
            (i, acknowledged, slowest, errors)
        }));
    }
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let victim = cluster.masters()[0];
    let killed_at = started.elapsed();
    cluster.kill(victim);
    // Not ready while a slot has no master that answers.
    let c = http();
    wait_readyz(&c, &gw, 503, Duration::from_secs(10)).await;
    // The replica takes over; the cluster is whole again.
    tokio::task::block_in_place(|| cluster.wait_ok(Duration::from_secs(30)));
    let healed_at = started.elapsed();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    stop.store(true, Ordering::Relaxed);
    let mut acknowledged = HashMap::new();
    let mut slowest = Duration::ZERO;
    let mut errors = Vec::new();
    for task in tasks {
        let (i, n, slow, mut e) = task.await.expect("client task");
        acknowledged.insert(i, n);
        slowest = slowest.max(slow);
        errors.append(&mut e);
    }
    let statuses: std::collections::BTreeMap<u16, usize> =
        errors
            .iter()
            .fold(Default::default(), |mut m, (_, _, s, _)| {
                *m.entry(*s).or_default() += 1;
                m
            });
    eprintln!(
        "failover: master :{victim} killed at {killed_at:?}, cluster ok again at {healed_at:?}; \
         slowest 200: {slowest:?}"
    );
    let first_sent = errors.iter().map(|e| e.0).min();
    let last_answered = errors.iter().map(|e| e.1).max();
    if let (Some(from), Some(to)) = (first_sent, last_answered) {
        eprintln!(
            "failover: {} errors {statuses:?}, sent from {from:?}, answered until {to:?} \
             ({:?} window), e.g. {}",
            errors.len(),
            to - from,
            errors[0].3
        );
    } else {
        eprintln!("failover: no request failed");
    }
    // Answers resume without a restart, and every acknowledged INCR is counted.
    wait_readyz(&c, &gw, 200, Duration::from_secs(10)).await;
    let (mut lost, mut counted_total) = (Vec::new(), 0);
    for (i, n) in &acknowledged {
        let r = post(
            &c,
            &gw,
            "/",
            &json!(["GET", format!("counter:{i}")]).to_string(),
        )
        .await;
        let counted: i64 = result(&r).as_str().map_or(0, |s| s.parse().unwrap());
        counted_total += counted;
        if counted < *n {
            lost.push((i, n, counted));
        }
    }
    let total: i64 = acknowledged.values().sum();
    eprintln!(
        "failover: {total} INCRs acknowledged, {counted_total} counted; lost (counter, \
         acknowledged, counted): {lost:?}"
    );
    assert!(lost.is_empty(), "acknowledged INCRs were lost: {lost:?}");
}
