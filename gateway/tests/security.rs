//! An attacker holding a token, against a real redis-server: scripts that would take Redis
//! hostage, scripts the gateway does not know, commands Redis must refuse even from Lua.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::json;
use test_support::{gateway_refusal, Gateway, Redis, READONLY_TOKEN, TOKEN};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_kill_reaches_a_redis_busy_with_an_endless_script() {
    // Redis reads other clients only once a script has run this long (5 s by default).
    let redis = Redis::start_with(&["--busy-reply-threshold", "200"]);
    let gw = Gateway::in_front_of(&redis, &["--timeout-ms", "1000"]);
    let c = http();
    // An endless function, loaded by the operator (the gateway's user may not load code).
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("#!lua name=spin\nredis.register_function('spin', function() while true do end end)")
        .query(&mut redis.conn(0))
        .expect("FUNCTION LOAD");
    // The kill through `/`, then through `/pipeline` as @upstash/redis sends it; FUNCTION KILL
    // for a function.
    for (path, kill, busy) in [
        (
            "/",
            r#"["SCRIPT","KILL"]"#,
            r#"["EVAL","while true do end",0]"#,
        ),
        (
            "/pipeline",
            r#"[["script","kill"]]"#,
            r#"["EVAL","while true do end",0]"#,
        ),
        ("/", r#"["FUNCTION","KILL"]"#, r#"["FCALL","spin",0]"#),
    ] {
        let hostage = spawn_post(gw.url(), busy.to_owned());
        tokio::time::sleep(Duration::from_millis(300)).await;
        wait_readyz(&c, &gw, 503, Duration::from_secs(5)).await;
        let started = Instant::now();
        let r = post(&c, &gw, path, kill).await;
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "SCRIPT KILL took {:?}",
            started.elapsed()
        );
        assert_eq!(r.status, 200, "{:?}", r.json);
        let result = if path == "/" { &r.json } else { &r.json[0] };
        assert_eq!(result, &json!({"result": "OK"}), "{path}");
        let stopped = hostage.await.expect("hostage task").expect("http request");
        assert_ne!(stopped.status, 200, "{:?}", stopped.json);
        // Normal requests work again, on every route.
        assert_eq!(
            post(&c, &gw, "/", r#"["SET","k","v"]"#).await.json,
            json!({"result": "OK"})
        );
        assert_eq!(
            post(&c, &gw, "/pipeline", r#"[["GET","k"]]"#).await.json,
            json!([{"result": "v"}])
        );
        assert_eq!(
            post(&c, &gw, "/multi-exec", r#"[["INCR","n"]]"#)
                .await
                .status,
            200
        );
        wait_readyz(&c, &gw, 200, Duration::from_secs(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn known_scripts_only_refuses_any_other_lua() {
    let redis = Redis::start();
    let dir = std::env::temp_dir().join(format!("gw-scripts-{}", test_support::free_port()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let known_text = "return 'known'";
    let text_file = dir.join("known.lua");
    std::fs::write(&text_file, known_text).expect("script file");
    let listed = "return 'listed'";
    let sha_file = dir.join("shas");
    std::fs::write(&sha_file, format!("# extra\n{}\n", sha1_hex(listed))).expect("sha file");
    let gw = Gateway::in_front_of(
        &redis,
        &[
            "--known-scripts-only",
            "--scripts-file",
            text_file.to_str().expect("utf-8 path"),
            "--scripts-file",
            sha_file.to_str().expect("utf-8 path"),
        ],
    );
    let _ = std::fs::remove_dir_all(&dir);
    let c = http();
    post(&c, &gw, "/", r#"["SET","keep","me"]"#).await;
    // Known scripts run, by text and by SHA-1.
    let r = post(&c, &gw, "/", &json!(["EVAL", known_text, 0]).to_string()).await;
    assert_eq!(r.json, json!({"result": "known"}));
    let r = post(
        &c,
        &gw,
        "/",
        &json!(["EVALSHA", sha1_hex(known_text), 0]).to_string(),
    )
    .await;
    assert_eq!(r.json, json!({"result": "known"}));
    let r = post(&c, &gw, "/", &json!(["EVAL", listed, 0]).to_string()).await;
    assert_eq!(r.json, json!({"result": "listed"}));
    // Anything else is refused before it reaches Redis.
    for body in [
        json!(["EVAL", "return redis.call('FLUSHALL')", 0]),
        json!(["EVAL", "while true do end", 0]),
        json!(["EVALSHA", sha1_hex("return 1"), 0]),
        json!(["SCRIPT", "LOAD", "return redis.call('FLUSHALL')"]),
        json!([
            "FUNCTION",
            "LOAD",
            "#!lua name=x\nredis.register_function('f', function() return 1 end)"
        ]),
    ] {
        let r = post(&c, &gw, "/", &body.to_string()).await;
        assert_eq!(r.status, 403, "{body}: {:?}", r.json);
        assert!(
            r.json["error"]
                .as_str()
                .is_some_and(|e| e.contains("known")),
            "{:?}",
            r.json
        );
    }
    // In a pipeline the refusal answers in place.
    let r = post(
        &c,
        &gw,
        "/pipeline",
        &json!([["EVAL", "return 1", 0], ["GET", "keep"]]).to_string(),
    )
    .await;
    assert_eq!(
        r.json[0]["error"].as_str().map(|e| e.contains("known")),
        Some(true)
    );
    assert_eq!(r.json[1], json!({"result": "me"}));
    let kept: Option<String> = redis::cmd("GET")
        .arg("keep")
        .query(&mut redis.conn(0))
        .expect("get");
    assert_eq!(kept.as_deref(), Some("me"));
}

/// A new Redis holding `value` under `key` (in database 0).
fn redis_holding(key: &str, value: &str) -> Redis {
    let redis = Redis::start();
    let _: () = redis::cmd("SET")
        .arg(key)
        .arg(value)
        .query(&mut redis.conn(0))
        .expect("set");
    redis
}

fn sha1_hex(text: &str) -> String {
    sha1_smol::Sha1::from(text).digest().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_acl_user_stops_lua_from_flushing_or_migrating() {
    // The harness's gateway connects as the user of gateway/README.md ("Redis ACL").
    let redis = redis_holding("keep", "me");
    let gw = Gateway::in_front_of(&redis, &[]);
    let c = http();
    for script in [
        "return redis.call('FLUSHALL')",
        "return redis.call('FLUSHDB')",
        "return redis.call('MIGRATE', '127.0.0.1', '1', 'keep', '0', '100')",
        "return redis.call('SWAPDB', '0', '1')",
    ] {
        let r = post(&c, &gw, "/", &json!(["EVAL", script, 0]).to_string()).await;
        assert_eq!(r.status, 400, "{script}: {:?}", r.json);
        assert!(
            r.json["error"]
                .as_str()
                .is_some_and(|e| e.contains("can't run this command")),
            "{script}: {:?}",
            r.json
        );
    }
    // Functions cannot be loaded (they would run outside the script rules), nor flushed.
    let library = "#!lua name=wipe\nredis.register_function('wipe', function() return redis.call('FLUSHALL') end)";
    for body in [
        json!(["FUNCTION", "LOAD", library]),
        json!(["FUNCTION", "FLUSH"]),
    ] {
        let r = post(&c, &gw, "/pipeline", &json!([body]).to_string()).await;
        assert!(
            r.json[0]["error"]
                .as_str()
                .is_some_and(|e| e.contains("NOPERM")),
            "{body}: {:?}",
            r.json
        );
    }
    let r = post(&c, &gw, "/", r#"["FCALL","wipe",0]"#).await;
    assert_eq!(r.status, 400, "{:?}", r.json);
    let kept: Option<String> = redis::cmd("GET")
        .arg("keep")
        .query(&mut redis.conn(0))
        .expect("get");
    assert_eq!(kept.as_deref(), Some("me"), "the data survives");
    // Everything else still works for that user.
    let r = post(
        &c,
        &gw,
        "/",
        r#"["EVAL","return redis.call('GET', KEYS[1])",1,"keep"]"#,
    )
    .await;
    assert_eq!(r.json, json!({"result": "me"}));
    let r = post(&c, &gw, "/multi-exec", r#"[["INCR","n"],["GET","keep"]]"#).await;
    assert_eq!(r.json, json!([{"result": 1}, {"result": "me"}]));
}

#[test]
fn the_gateway_refuses_to_start_with_a_user_that_may_run_denied_commands() {
    let redis = Redis::start();
    // The default user may run everything.
    let stderr = gateway_refusal(&["--redis", &redis.admin_url(0), "--token", TOKEN]);
    for named in ["flushall", "migrate", "config|set", "--unsafe-allow-admin"] {
        assert!(stderr.contains(named), "{named} missing from: {stderr}");
    }
    // A user restricted except for FLUSHALL: only FLUSHALL is named.
    let mut rules = test_support::gateway_acl_rules();
    rules.push("+flushall".to_owned());
    let rules: Vec<&str> = rules.iter().map(String::as_str).collect();
    redis.set_user("almost", &rules);
    let url = format!(
        "redis://almost:{}@127.0.0.1:{}/0",
        test_support::GATEWAY_PASSWORD,
        redis.port
    );
    let stderr = gateway_refusal(&["--redis", &url, "--token", TOKEN]);
    assert!(stderr.contains("may run flushall,"), "{stderr}");
    assert!(!stderr.contains("config"), "{stderr}");
    // --unsafe-allow-admin starts it anyway: the one test that needs it.
    let gw = Gateway::start_with(&[
        "--redis",
        &redis.admin_url(0),
        "--token",
        TOKEN,
        "--unsafe-allow-admin",
    ]);
    let reply = test_support::raw_http(
        gw.port,
        &format!(
            "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Length: 8\r\nConnection: close\r\n\r\n"
        ),
        br#"["PING"]"#,
    )
    .expect("reply");
    assert!(reply.contains("PONG"), "{reply}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_and_pipelines_are_bounded() {
    let redis = redis_holding("big", &"x".repeat(1024 * 1024));
    let limit = (2 * 1024 * 1024 + 1024).to_string();
    let gw = Gateway::in_front_of(
        &redis,
        &["--max-reply-bytes", &limit, "--max-pipeline-commands", "8"],
    );
    let c = http();
    let gets = |n: usize| json!(vec![["GET", "big"]; n]).to_string();
    // Within the bound: two 1 MiB values.
    let r = post(&c, &gw, "/pipeline", &gets(2)).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json[1]["result"].as_str().map(str::len),
        Some(1024 * 1024)
    );
    // Over it: three, in a pipeline or a transaction, or LRANGE-like in one command.
    for path in ["/pipeline", "/multi-exec"] {
        let r = post(&c, &gw, path, &gets(3)).await;
        assert_eq!(r.status, 400, "{path}");
        let error = r.json["error"].as_str().expect("error");
        assert!(error.contains("reply is larger than the limit"), "{error}");
    }
    let r = post(
        &c,
        &gw,
        "/",
        r#"["EVAL","return {redis.call('GET','big'),redis.call('GET','big'),redis.call('GET','big')}",0]"#,
    )
    .await;
    assert_eq!(r.status, 400, "{:?}", r.json["error"]);
    // Pipelines are bounded in length.
    let r = post(&c, &gw, "/pipeline", &json!(vec![["PING"]; 9]).to_string()).await;
    assert_eq!(r.status, 400);
    assert!(r.json["error"]
        .as_str()
        .is_some_and(|e| e.contains("the limit is 8")));
    let r = post(&c, &gw, "/pipeline", &json!(vec![["PING"]; 8]).to_string()).await;
    assert_eq!(r.status, 200);
}

/// A line of `/proc/<pid>/status` in KiB (`VmRSS`, `VmHWM`).
fn memory_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} missing from /proc/{pid}/status"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_reply_is_refused_while_it_is_read_and_memory_stays_bounded() {
    let redis = redis_holding("big", &"x".repeat(1024 * 1024));
    let limit = 4 * 1024 * 1024;
    let gw = Gateway::in_front_of(&redis, &["--max-reply-bytes", &limit.to_string()]);
    let c = http();
    let before_kib = memory_kib(gw.pid(), "VmRSS");
    // Others keep using the shared connection meanwhile, and are served.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let bystander = {
        let (stop, url) = (stop.clone(), gw.url());
        tokio::spawn(async move {
            let client = http();
            let auth = format!("Bearer {TOKEN}");
            let mut served = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let r = send(
                    &client,
                    "POST",
                    &format!("{url}/pipeline"),
                    &[("Authorization", &auth)],
                    r#"[["INCR","n"],["STRLEN","big"]]"#,
                )
                .await;
                assert_eq!(r.status, 200, "{:?}", r.json);
                assert_eq!(r.json[1], json!({"result": 1024 * 1024}));
                served += 1;
            }
            served
        })
    };
    // 100 MiB from one script (read-only, as a read-only token could send it), and a 7 KB
    // pipeline of 300 GETs of the 1 MiB value (300 MiB), on every route.
    let script = r#"["EVAL_RO","return string.rep('x', 100 * 1024 * 1024)",0]"#;
    let gets = json!(vec![["GET", "big"]; 300]).to_string();
    for (path, body) in [
        ("/", script.to_owned()),
        ("/pipeline", gets.clone()),
        ("/multi-exec", gets),
        ("/pipeline", format!("[{script}]")),
    ] {
        let r = post(&c, &gw, path, &body).await;
        assert_eq!(r.status, 400, "{path}: {:?}", r.json);
        let error = r.json["error"].as_str().expect("error");
        assert!(error.contains("reply is larger than the limit"), "{error}");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(bystander.await.expect("bystander") > 0);
    // The gateway never held the replies: its peak is far below even one of them.
    let peak_kib = memory_kib(gw.pid(), "VmHWM");
    let now_kib = memory_kib(gw.pid(), "VmRSS");
    assert!(
        peak_kib < before_kib + 48 * 1024,
        "peak RSS {peak_kib} KiB, {before_kib} KiB before"
    );
    assert!(now_kib <= peak_kib);
    // Within the bound, the same value is served on the same connection.
    let r = post(
        &c,
        &gw,
        "/pipeline",
        &json!([["GET", "big"], ["GET", "big"]]).to_string(),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json[1]["result"].as_str().map(str::len),
        Some(1024 * 1024)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_redis_user_is_checked_for_writes_and_scripts_cannot_write() {
    let redis = redis_holding("keep", "me");
    // A read-write user behind read-only tokens alone: refused, naming writes.
    let stderr = gateway_refusal(&[
        "--redis",
        &redis.url(0),
        "--token",
        TOKEN,
        "--readonly-token",
        READONLY_TOKEN,
        "--readonly-redis",
        &redis.url(1),
    ]);
    assert!(stderr.contains("read-only tokens may not"), "{stderr}");
    assert!(
        stderr.contains("incrby") || stderr.contains("more"),
        "{stderr}"
    );
    // The README's read-only user: served, and Redis refuses every write.
    let gw = Gateway::start_with(&[
        "--redis",
        &redis.url(0),
        "--token",
        TOKEN,
        "--readonly-token",
        READONLY_TOKEN,
        "--readonly-redis",
        &redis.readonly_url(0),
    ]);
    let c = http();
    let auth = format!("Bearer {READONLY_TOKEN}");
    let ro = |body: &'static str| {
        let (c, url, auth) = (c.clone(), gw.url(), auth.clone());
        async move { send(&c, "POST", &url, &[("Authorization", &auth)], body).await }
    };
    assert_eq!(ro(r#"["GET","keep"]"#).await.json, json!({"result": "me"}));
    assert_eq!(ro(r#"["SET","keep","x"]"#).await.status, 403);
    for script in [
        r#"["EVAL_RO","return redis.call('SET','keep','x')",0]"#,
        r#"["EVAL_RO","return redis.call('DEL','keep')",0]"#,
    ] {
        let r = ro(script).await;
        assert_eq!(r.status, 400, "{script}: {:?}", r.json);
    }
    let r = ro(r#"["EVAL_RO","return redis.call('GET','keep')",0]"#).await;
    assert_eq!(r.json, json!({"result": "me"}));
    // The read-write token still writes, through its own user.
    assert_eq!(
        post(&c, &gw, "/", r#"["SET","other","v"]"#).await.status,
        200
    );
    let kept: Option<String> = redis::cmd("GET")
        .arg("keep")
        .query(&mut redis.conn(0))
        .expect("get");
    assert_eq!(kept.as_deref(), Some("me"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_on_a_unix_socket_is_checked_served_and_bounded_alike() {
    let dir = std::env::temp_dir().join(format!("gw-unix-{}", test_support::free_port()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let socket = dir.join("redis.sock");
    let socket = socket.to_str().expect("utf-8 path");
    let redis = Redis::start_with(&["--unixsocket", socket, "--unixsocketperm", "700"]);
    let url = format!(
        "redis+unix://{socket}?user={}&pass={}",
        test_support::GATEWAY_USER,
        test_support::GATEWAY_PASSWORD
    );
    let gw = Gateway::start_with(&[
        "--redis",
        &url,
        "--token",
        TOKEN,
        "--max-reply-bytes",
        "1024",
    ]);
    let c = http();
    assert_eq!(post(&c, &gw, "/", r#"["SET","k","v"]"#).await.status, 200);
    let r = post(
        &c,
        &gw,
        "/pipeline",
        r#"[["GET","k"],["EVAL","return redis.call('FLUSHALL')",0]]"#,
    )
    .await;
    assert_eq!(r.json[0], json!({"result": "v"}));
    assert!(r.json[1]["error"].is_string(), "{:?}", r.json);
    let r = post(
        &c,
        &gw,
        "/",
        r#"["EVAL_RO","return string.rep('x', 5000)",0]"#,
    )
    .await;
    assert_eq!(r.status, 400);
    assert!(r.json["error"]
        .as_str()
        .is_some_and(|e| e.contains("reply is larger")));
    assert_eq!(
        post(&c, &gw, "/", r#"["GET","k"]"#).await.json,
        json!({"result": "v"})
    );
    drop(gw);
    drop(redis);
    let _ = std::fs::remove_dir_all(&dir);
}
