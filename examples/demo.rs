//! Drives every algorithm with the same requests on the in-memory backend and, when a gateway is
//! given (`EDGELIMIT_TEST_URL`, `EDGELIMIT_TEST_TOKEN`), on Redis through it, and prints each decision
//! side by side. `make demo` starts redis-server and the gateway, runs it, and stops them.

// The demo is native (tokio, reqwest); `wasm-pack test` builds examples for wasm32 too, where it is empty.
#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() -> Result<(), edgelimit::Error> {
    native::main()
}

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use edgelimit::algorithm::Algorithm;
    use edgelimit::transport::HttpTransport;
    use edgelimit::{
        parse_duration, Backend, Decision, FixedWindow, Gcra, ManualClock, MemoryBackend,
        RedisBackend, SlidingWindow, TokenBucket,
    };
    use std::time::Duration;

    const START_MS: u64 = 1_700_000_000_000;

    /// One request of the script: wait this long, then ask for this cost.
    struct Request {
        after_ms: u64,
        cost: f64,
    }

    fn cell(decision: &Decision, t: u64) -> String {
        let retry = match decision.retry_after {
            None => "never".to_owned(),
            Some(wait) if wait.is_zero() => "-".to_owned(),
            Some(wait) => format!("{} ms", wait.as_millis()),
        };
        format!(
            "{:>4} {:>9} {:>9} {retry:>9}",
            if decision.allowed { "yes" } else { "no" },
            decision.remaining,
            format!("{} ms", decision.reset.saturating_sub(START_MS + t)),
        )
    }

    #[tokio::main(flavor = "current_thread")]
    pub async fn main() -> Result<(), edgelimit::Error> {
        let window = parse_duration("10 s")?;
        let limiters: [(&str, Algorithm); 4] = [
            (
                "fixedWindow(5, \"10 s\")",
                FixedWindow::new(5, window)?.into(),
            ),
            (
                "slidingWindow(5, \"10 s\")",
                SlidingWindow::new(5, window)?.into(),
            ),
            (
                "tokenBucket(1, \"2 s\", 5)",
                TokenBucket::new(1, parse_duration("2 s")?, 5)?.into(),
            ),
            (
                "gcra(5, \"10 s\", burst 5)",
                Gcra::new(5, window, 5)?.into(),
            ),
        ];
        // A burst, a refund, a request too large for any limit, then traffic spread over 20 seconds.
        let script: Vec<Request> = [
            (0, 1.0),
            (0, 3.0),
            (0, 2.0),
            (0, -1.0),
            (0, 1.0),
            (0, 6.0),
            (0, 1.0),
        ]
        .into_iter()
        .chain((0..8).map(|_| (2_500, 1.0)))
        .map(|(after_ms, cost)| Request { after_ms, cost })
        .collect();
        let gateway = match (
            std::env::var("EDGELIMIT_TEST_URL"),
            std::env::var("EDGELIMIT_TEST_TOKEN"),
        ) {
            (Ok(url), Ok(token)) => {
                Some(HttpTransport::new(&url, &token)?.with_timeout(Some(Duration::from_secs(5))))
            }
            _ => None,
        };
        let run = std::process::id();

        for (name, limiter) in limiters {
            let clock = ManualClock::from_millis(START_MS);
            let memory = MemoryBackend::new().with_clock(clock.clone());
            let redis = gateway
                .clone()
                .map(|transport| RedisBackend::new(transport).with_clock(clock.clone()));
            let key = format!("demo:{run}:{name}");
            println!("\n{name}");
            let columns = format!(
                "{:>4} {:>9} {:>9} {:>9}",
                "ok", "remaining", "reset in", "retry"
            );
            let header = if redis.is_some() {
                format!("{columns}   | Redis via gateway: {columns}")
            } else {
                columns
            };
            println!("{:>7} {:>5}   in memory: {header}", "t (ms)", "cost");
            let mut t = 0;
            for request in &script {
                clock.advance(Duration::from_millis(request.after_ms));
                t += request.after_ms;
                let mut line = format!(
                    "{t:>7} {:>5}              {}",
                    request.cost,
                    cell(&memory.acquire(&key, request.cost, limiter).await?, t)
                );
                if let Some(redis) = &redis {
                    let decision = redis.acquire(&key, request.cost, limiter).await?;
                    line += &format!("   |                    {}", cell(&decision, t));
                }
                println!("{line}");
            }
            if let Some(redis) = &redis {
                redis.reset(&key, limiter).await?;
            }
        }
        if gateway.is_none() {
            println!("\n(in memory only: set EDGELIMIT_TEST_URL and EDGELIMIT_TEST_TOKEN, or run `make demo`, to add Redis)");
        }
        Ok(())
    }
}
