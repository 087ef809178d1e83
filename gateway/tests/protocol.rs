//! The Upstash REST protocol (PROTOCOL.md §1) against a real redis-server.

mod common;

use common::*;
use serde_json::json;
use test_support::{free_port, raw_http, Gateway, Redis, READONLY_TOKEN, TOKEN};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_paths_and_encodings() {
    let redis = Redis::start();
    let gw = Gateway::start(&redis.url(0));
    let c = http();
    let auth = format!("Bearer {TOKEN}");

    // Single command with numbers that must arrive as exact decimals.
    let r = post(&c, &gw, "/", r#"["SET","n",1796220043830]"#).await;
    assert_eq!((r.status, r.json.clone()), (200, json!({"result": "OK"})));
    assert!(r.headers.contains_key("upstash-sync-token"));
    let r = post(&c, &gw, "/", r#"["INCRBY","f",10.0]"#).await;
    assert_eq!(r.json, json!({"result": 10}));
    let r = post(&c, &gw, "/", r#"["SET","big",1.8e12]"#).await;
    assert_eq!(r.status, 200);
    let mut direct = redis.conn(0);
    let big: String = redis::cmd("GET").arg("big").query(&mut direct).unwrap();
    assert_eq!(big, "1800000000000");
    let n: String = redis::cmd("GET").arg("n").query(&mut direct).unwrap();
    assert_eq!(n, "1796220043830");

    // Path form, GET and POST, trailing slashes, percent-encoding, ?_token=.
    let url = gw.url();
    let r = send(
        &c,
        "GET",
        &format!("{url}/set/p%20k/v1/"),
        &[("Authorization", &auth)],
        "",
    )
    .await;
    assert_eq!(r.json, json!({"result": "OK"}));
    let r = send(
        &c,
        "POST",
        &format!("{url}/set/body"),
        &[("authorization", &auth)],
        "a \"q\"\nb",
    )
    .await;
    assert_eq!(r.json, json!({"result": "OK"}));
    let r = send(
        &c,
        "GET",
        &format!("{url}/get/body?_token={TOKEN}"),
        &[],
        "",
    )
    .await;
    assert_eq!(r.json, json!({"result": "a \"q\"\nb"}));
    let r = send(
        &c,
        "GET",
        &format!("{url}/get/p%20k"),
        &[("Authorization", &auth)],
        "",
    )
    .await;
    assert_eq!(r.json, json!({"result": "v1"}));

    // Pipeline: in order, one failing command does not stop the others.
    let r = post(
        &c,
        &gw,
        "/pipeline/",
        r#"[["set","p1","x"],["incr","p1"],["get","p1"]]"#,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json[0], json!({"result": "OK"}));
    assert!(r.json[1]["error"]
        .as_str()
        .unwrap()
        .starts_with("ERR value is not an integer"));
    assert_eq!(r.json[2], json!({"result": "x"}));

    // Base64 at every depth, including "OK" inside arrays; integers and null raw.
    let r = send(
        &c,
        "POST",
        &format!("{url}/pipeline"),
        &[("Authorization", &auth), ("Upstash-Encoding", "base64")],
        r#"[["set","u","héllo ✓"],["mget","u","missing"],["incr","cnt"],["eval","return {'OK', 1, {'v'}}",0]]"#,
    )
    .await;
    assert_eq!(
        r.json,
        json!([
            {"result": "T0s="},
            {"result": ["aMOpbGxvIOKckw==", null]},
            {"result": 1},
            {"result": ["T0s=", 1, ["dg=="]]}
        ])
    );

    // Transactions.
    let r = post(
        &c,
        &gw,
        "/multi-exec",
        r#"[["set","m","1"],["incr","m"],["get","m"]]"#,
    )
    .await;
    assert_eq!(
        r.json,
        json!([{"result": "OK"}, {"result": 2}, {"result": "2"}])
    );
    let r = post(&c, &gw, "/multi-exec", r#"[["set","m","9"],["nosuchcmd"]]"#).await;
    assert_eq!(r.status, 400);
    assert!(r.json["error"].as_str().unwrap().starts_with("EXECABORT"));
    let r = post(&c, &gw, "/multi-exec", r#"[["set","w","x"],["incr","w"]]"#).await;
    assert_eq!(r.status, 200);
    assert!(r.json[1]["error"].as_str().unwrap().starts_with("ERR"));

    // Binary data: invalid UTF-8 comes back exactly with base64, lossily without.
    let _: () = redis::cmd("SET")
        .arg("bin")
        .arg(&[0xffu8, b'a'][..])
        .query(&mut direct)
        .unwrap();
    let r = send(
        &c,
        "GET",
        &format!("{url}/get/bin"),
        &[("Authorization", &auth), ("upstash-encoding", "base64")],
        "",
    )
    .await;
    assert_eq!(r.json, json!({"result": "/2E="}));
    let r = send(
        &c,
        "GET",
        &format!("{url}/get/bin"),
        &[("Authorization", &auth)],
        "",
    )
    .await;
    assert_eq!(r.json, json!({"result": "\u{fffd}a"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_methods_cors_and_health() {
    let redis = Redis::start();
    let gw = Gateway::start(&redis.url(0));
    let c = http();
    let url = gw.url();
    let wrong = json!({"error": "WRONGPASS invalid or missing auth token"});
    for headers in [
        vec![],
        vec![("Authorization", "Bearer nope")],
        vec![("Authorization", "Bearer t0k3")],
        vec![("Authorization", "Bearer t0k3n-longer")],
        vec![("Authorization", "Basic t0k3n")],
    ] {
        let r = send(&c, "POST", &url, &headers, r#"["PING"]"#).await;
        assert_eq!((r.status, r.json), (401, wrong.clone()));
    }
    let r = send(&c, "GET", &format!("{url}/ping?_token=bad"), &[], "").await;
    assert_eq!(r.status, 401);
    // Header name in any case, scheme in any case (raw bytes, no client normalisation).
    let raw = raw_http(
        gw.port,
        "POST / HTTP/1.1\r\nHost: x\r\nAUTHORIZATION: bearer t0k3n\r\nContent-Length: 8\r\nConnection: close\r\n\r\n",
        br#"["PING"]"#,
    )
    .unwrap();
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    assert!(raw.contains(r#"{"result":"PONG"}"#), "{raw}");

    // Read-only token: reads pass, writes are refused clearly.
    let ro = format!("Bearer {READONLY_TOKEN}");
    post(&c, &gw, "/", r#"["SET","k","v"]"#).await;
    let r = send(
        &c,
        "POST",
        &url,
        &[("Authorization", &ro)],
        r#"["GET","k"]"#,
    )
    .await;
    assert_eq!(r.json, json!({"result": "v"}));
    let r = send(
        &c,
        "POST",
        &url,
        &[("Authorization", &ro)],
        r#"["SET","k","w"]"#,
    )
    .await;
    assert_eq!(r.status, 403);
    assert!(r.json["error"].as_str().unwrap().contains("read-only"));
    let r = send(
        &c,
        "POST",
        &format!("{url}/pipeline"),
        &[("Authorization", &ro)],
        r#"[["get","k"],["del","k"]]"#,
    )
    .await;
    assert_eq!(r.json[0], json!({"result": "v"}));
    assert!(r.json[1]["error"].as_str().unwrap().starts_with("NOPERM"));
    let r = send(
        &c,
        "POST",
        &url,
        &[("Authorization", &ro)],
        r#"["EVAL","return 1",0]"#,
    )
    .await;
    assert_eq!(r.status, 403);

    // Methods.
    for method in ["DELETE", "PATCH", "TRACE"] {
        let r = send(&c, method, &url, &[("Authorization", "Bearer t0k3n")], "").await;
        assert_eq!(r.status, 405, "{method}");
    }
    let r = send(
        &c,
        "GET",
        &format!("{url}/pipeline"),
        &[("Authorization", "Bearer t0k3n")],
        "",
    )
    .await;
    assert_eq!(r.status, 405);
    let raw = raw_http(
        gw.port,
        "HEAD /get/k?_token=t0k3n HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"",
    )
    .unwrap();
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");

    // CORS preflight.
    let raw = raw_http(
        gw.port,
        "OPTIONS /pipeline HTTP/1.1\r\nHost: x\r\nOrigin: http://page.test\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: authorization, content-type, upstash-encoding\r\nConnection: close\r\n\r\n",
        b"",
    )
    .unwrap()
    .to_ascii_lowercase();
    assert!(raw.starts_with("http/1.1 200"), "{raw}");
    assert!(raw.contains("access-control-allow-origin: *"), "{raw}");
    let r = send(
        &c,
        "POST",
        &url,
        &[
            ("Authorization", "Bearer t0k3n"),
            ("Origin", "http://page.test"),
        ],
        r#"["PING"]"#,
    )
    .await;
    assert_eq!(r.headers.get("access-control-allow-origin").unwrap(), "*");

    let r = send(&c, "GET", &format!("{url}/healthz"), &[], "").await;
    assert_eq!(r.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_json_errors_and_gateway_keeps_serving() {
    let redis = Redis::start();
    let gw = Gateway::in_front_of(&redis, &["--max-body-bytes", "4096"]);
    let c = http();
    let cases: &[(&str, &str, u16, &str)] = &[
        ("/", "{not json", 400, "ERR invalid JSON"),
        ("/", r#"{"cmd":"get"}"#, 400, "must be a JSON array"),
        ("/", r#""GET""#, 400, "must be a JSON array"),
        ("/", "[]", 400, "ERR empty command"),
        ("/", r#"["SET",{"a":1},"v"]"#, 400, "is an object"),
        ("/", r#"["SET",["a"],"v"]"#, 400, "is an array"),
        ("/", r#"["SET","k",null]"#, 400, "is null"),
        ("/", r#"["NOSUCHCOMMAND","x"]"#, 400, "ERR unknown command"),
        ("/", r#"["FLUSHALL"]"#, 403, "denied"),
        ("/", r#"["CONFIG","SET","maxmemory","1"]"#, 403, "denied"),
        ("/", r#"["SELECT","1"]"#, 400, "not supported"),
        ("/", r#"["BLPOP","q",0]"#, 400, "not supported"),
        ("/", r#"["LPUSH","s","a"]"#, 200, ""),
        ("/", r#"["INCR","s"]"#, 400, "WRONGTYPE"),
        (
            "/pipeline",
            r#"[["get","a"],"get"]"#,
            400,
            "must be a JSON array",
        ),
        ("/pipeline", r#"{"a":1}"#, 400, "must be a JSON array"),
        (
            "/multi-exec",
            r#"[["set","a","1"],["flushall"]]"#,
            403,
            "denied",
        ),
    ];
    for (path, body, status, needle) in cases {
        let r = post(&c, &gw, path, body).await;
        assert_eq!(r.status, *status, "{path} {body}: {:?}", r.json);
        if !needle.is_empty() {
            let e = r.json["error"].as_str().unwrap_or_default();
            assert!(e.contains(needle), "{body}: {e}");
        }
    }
    // Invalid UTF-8 inside a JSON string.
    let auth = format!("Bearer {TOKEN}");
    let r = send(
        &c,
        "POST",
        &gw.url(),
        &[("Authorization", &auth)],
        &b"[\"SET\",\"k\",\"\xff\xfe\"]"[..],
    )
    .await;
    assert_eq!(r.status, 400);
    // Oversized body, with and without Content-Length.
    let big = format!(r#"["SET","k","{}"]"#, "x".repeat(5000));
    let r = post(&c, &gw, "/", &big).await;
    assert_eq!(r.status, 413);
    assert!(r.json["error"].as_str().unwrap().contains("4096"));
    let head = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: {auth}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n{big}\r\n0\r\n\r\n",
        big.len()
    );
    let raw = raw_http(gw.port, &head, b"").unwrap();
    assert!(raw.starts_with("HTTP/1.1 413"), "{raw}");
    // Still serving.
    let r = post(&c, &gw, "/", r#"["PING"]"#).await;
    assert_eq!(r.json, json!({"result": "PONG"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shebang_scripts_map_to_stripped_sha() {
    let redis = Redis::start();
    let mut gw = Gateway::start(&redis.url(0));
    let c = http();
    let script = "#!lua flags=allow-key-locking\nreturn redis.call('INCR', KEYS[1])";
    let client_sha = sha1_smol::Sha1::from(script).digest().to_string();
    let evalsha = json!(["EVALSHA", client_sha, 1, "cnt"]).to_string();
    let exists = json!(["SCRIPT", "EXISTS", client_sha]).to_string();

    let r = post(&c, &gw, "/", &evalsha).await;
    assert_eq!(r.status, 400);
    assert!(r.json["error"].as_str().unwrap().starts_with("NOSCRIPT"));
    let r = post(&c, &gw, "/", &json!(["EVAL", script, 1, "cnt"]).to_string()).await;
    assert_eq!(r.json, json!({"result": 1}));
    let r = post(&c, &gw, "/", &evalsha).await;
    assert_eq!(r.json, json!({"result": 2}));
    assert_eq!(
        post(&c, &gw, "/", &exists).await.json,
        json!({"result": [1]})
    );

    // Known flags stay: a no-writes script may not write.
    let ro = "#!lua flags=no-writes,allow-key-locking\nreturn redis.call('SET', 'x', '1')";
    let r = post(&c, &gw, "/", &json!(["EVAL", ro, 0]).to_string()).await;
    assert_eq!(r.status, 400, "{:?}", r.json);

    // After SCRIPT FLUSH the client's SHA gets NOSCRIPT (so it falls back to EVAL).
    post(&c, &gw, "/", r#"["SCRIPT","FLUSH"]"#).await;
    let r = post(&c, &gw, "/", &evalsha).await;
    assert!(r.json["error"].as_str().unwrap().starts_with("NOSCRIPT"));
    // SCRIPT LOAD answers the client's SHA and EVALSHA hits.
    let r = post(&c, &gw, "/", &json!(["SCRIPT", "LOAD", script]).to_string()).await;
    assert_eq!(r.json, json!({"result": client_sha}));
    assert_eq!(
        post(&c, &gw, "/", &evalsha).await.json,
        json!({"result": 3})
    );

    // After a gateway restart the map is empty: NOSCRIPT, then EVAL works again.
    gw.restart();
    let c = http();
    let r = post(&c, &gw, "/", &evalsha).await;
    assert!(r.json["error"].as_str().unwrap().starts_with("NOSCRIPT"));
    assert_eq!(
        post(&c, &gw, "/", &exists).await.json,
        json!({"result": [0]})
    );
    post(&c, &gw, "/", &json!(["EVAL", script, 1, "cnt"]).to_string()).await;
    assert_eq!(
        post(&c, &gw, "/", &evalsha).await.json,
        json!({"result": 5})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_file_serves_independent_databases() {
    let redis = Redis::start();
    let dir = std::env::temp_dir().join(format!("gw-tokens-{}", free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tokens");
    std::fs::write(
        &file,
        format!(
            "# token url mode\nregion-a {} rw\nregion-b {}\nregion-b-ro {} ro\n",
            redis.url(1),
            redis.url(2),
            redis.url(2)
        ),
    )
    .unwrap();
    let gw = Gateway::start_with(&["--tokens", file.to_str().unwrap()]);
    let c = http();
    let url = gw.url();
    let set = |tok: &'static str, v: &'static str| {
        let c = c.clone();
        let url = url.clone();
        async move {
            send(
                &c,
                "POST",
                &url,
                &[("Authorization", &format!("Bearer {tok}"))],
                format!(r#"["SET","k","{v}"]"#),
            )
            .await
        }
    };
    assert_eq!(set("region-a", "a").await.status, 200);
    assert_eq!(set("region-b", "b").await.status, 200);
    assert_eq!(set("region-b-ro", "c").await.status, 403);
    let a: String = redis::cmd("GET")
        .arg("k")
        .query(&mut redis.conn(1))
        .unwrap();
    let b: String = redis::cmd("GET")
        .arg("k")
        .query(&mut redis.conn(2))
        .unwrap();
    assert_eq!((a.as_str(), b.as_str()), ("a", "b"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn help_explains_flags() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_edgelimit-gateway"))
        .arg("--help")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--listen",
        "--redis",
        "--token",
        "--readonly-token",
        "--tokens",
        "--timeout-ms",
        "--max-body-bytes",
        "--deny-commands",
    ] {
        assert!(text.contains(flag), "{flag} missing from --help");
    }
    // The README's flag table names every flag with its environment variable.
    let readme = include_str!("../README.md");
    let flags: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ',' || c == '[')
        .filter(|word| word.starts_with("--") && word.len() > 2)
        .filter(|word| !["--help", "--version"].contains(word))
        .collect();
    assert!(flags.len() > 10, "{flags:?}");
    for flag in flags {
        let row = readme
            .lines()
            .find(|line| line.starts_with(&format!("| `{flag}` (`GATEWAY_")));
        assert!(
            row.is_some(),
            "{flag} has no row in the README's flag table"
        );
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_edgelimit-gateway"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no token"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_on_any_number_of_worker_threads_and_refuses_zero() {
    let redis = Redis::start();
    let auth = format!("Bearer {TOKEN}");
    let c = http();
    for threads in ["1", "3"] {
        let gw = Gateway::in_front_of(&redis, &["--worker-threads", threads]);
        let url = gw.url();
        let r = send(
            &c,
            "POST",
            &format!("{url}/"),
            &[("authorization", &auth)],
            r#"["INCR","threads"]"#,
        )
        .await;
        assert_eq!(r.status, 200, "--worker-threads {threads}: {}", r.json);
        let r = send(
            &c,
            "POST",
            &format!("{url}/pipeline"),
            &[("authorization", &auth)],
            r#"[["INCR","threads"],["GET","threads"]]"#,
        )
        .await;
        assert_eq!(r.status, 200, "--worker-threads {threads}: {}", r.json);
    }
    let stderr = test_support::gateway_refusal(&[
        "--worker-threads",
        "0",
        "--redis",
        &redis.url(0),
        "--token",
        TOKEN,
    ]);
    assert!(stderr.contains("--worker-threads"), "{stderr}");
}
