//! Load generator for `bench/gateway/run.sh` (loopback only, bounded in time).
//!
//! `load URL TOKEN SHA MODE CONCURRENCY SECONDS` where MODE is `single` (one EVALSHA per
//! request) or `pipeline16` (16 EVALSHA per `/pipeline` request). Prints Redis commands per
//! second. Each caller has keys of its own, so that a Redis Cluster spreads them over its masters.
//!
//! Each caller keeps one HTTP/1.1 connection of its own, as each `redis-benchmark` client does
//! (no pool to check out of): the CPU it leaves free is the gateway's. Like `redis-benchmark`
//! (one thread, one event loop), it runs on one thread, and each caller drives its connection in
//! its own task: no wake-up between threads or tasks per request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, url, token, sha, mode, concurrency, seconds] = args.as_slice() else {
        return Err("usage: load URL TOKEN SHA single|pipeline16 CONCURRENCY SECONDS".into());
    };
    let Some(address) = url.strip_prefix("http://") else {
        return Err("loopback URLs only".into());
    };
    if !address.starts_with("127.0.0.1:") {
        return Err("loopback URLs only".into());
    }
    let concurrency: usize = concurrency.parse()?;
    let duration = Duration::from_secs_f64(seconds.parse::<f64>()?.min(30.0));
    let evalsha = |key: String| format!(r#"["EVALSHA","{sha}",1,"{key}","60000"]"#);
    let (path, per_request) = match mode.as_str() {
        "single" => ("/", 1),
        "pipeline16" => ("/pipeline", 16),
        other => return Err(format!("unknown mode {other}").into()),
    };
    // The body of caller `caller`'s requests.
    let body = |caller: usize| {
        if per_request == 1 {
            return Bytes::from(evalsha(format!("bench:k{caller}")));
        }
        let items: Vec<String> = (0..per_request)
            .map(|i| evalsha(format!("bench:k{caller}:{i}")))
            .collect();
        Bytes::from(format!("[{}]", items.join(",")))
    };
    let auth = format!("Bearer {token}");
    let done = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let mut senders = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        let stream = tokio::net::TcpStream::connect(address).await?;
        stream.set_nodelay(true)?;
        senders.push(hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?);
    }
    let deadline = Instant::now() + duration;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (caller, (mut sender, connection)) in senders.into_iter().enumerate() {
        let (address, auth, body) = (address.to_owned(), auth.clone(), body(caller));
        let (done, errors) = (done.clone(), errors.clone());
        let requests = async move {
            while Instant::now() < deadline {
                let request = hyper::Request::post(path)
                    .header("host", &address)
                    .header("authorization", &auth)
                    .header("content-type", "application/json")
                    .body(Full::new(body.clone()));
                let Ok(request) = request else { break };
                if sender.ready().await.is_err() {
                    errors.fetch_add(1, Ordering::Relaxed);
                    break;
                }
                match sender.send_request(request).await {
                    Ok(response) => {
                        let ok = response.status().is_success();
                        let bytes = response.into_body().collect().await.map(|b| b.to_bytes());
                        if ok && bytes.is_ok_and(|b| !b.windows(8).any(|w| w == b"\"error\":")) {
                            done.fetch_add(1, Ordering::Relaxed);
                        } else {
                            errors.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    Err(_) => {
                        errors.fetch_add(1, Ordering::Relaxed);
                        break;
                    }
                }
            }
        };
        // The connection is polled in the caller's task, beside its requests.
        tasks.push(tokio::spawn(async move {
            tokio::select! {
                () = requests => {}
                _ = connection => {}
            }
        }));
    }
    for task in tasks {
        task.await?;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let errors = errors.load(Ordering::Relaxed);
    if errors > 0 {
        eprintln!("load: {errors} failed requests");
    }
    let commands = done.load(Ordering::Relaxed) * per_request;
    println!("{:.0}", commands as f64 / elapsed);
    Ok(())
}
