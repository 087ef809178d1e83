//! Drives every algorithm on the in-memory backend with a manual clock and prints each decision.
//! `make demo` runs it.

use edgelimit::algorithm::Algorithm;
use edgelimit::{
    parse_duration, Backend, FixedWindow, Gcra, ManualClock, MemoryBackend, SlidingWindow,
    TokenBucket,
};
use std::time::Duration;

/// One request of the script: wait this long, then ask for this cost.
struct Request {
    after_ms: u64,
    cost: f64,
}

fn main() -> Result<(), edgelimit::Error> {
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

    for (name, limiter) in limiters {
        let clock = ManualClock::from_millis(1_700_000_000_000);
        let store = MemoryBackend::new().with_clock(clock.clone());
        println!("\n{name}, in memory");
        println!(
            "{:>8} {:>6} {:>8} {:>9} {:>9} {:>12}",
            "t (ms)", "cost", "allowed", "remaining", "reset in", "retry after"
        );
        let mut t = 0;
        for request in &script {
            clock.advance(Duration::from_millis(request.after_ms));
            t += request.after_ms;
            let decision = pollster::block_on(store.acquire("user:42", request.cost, limiter))?;
            let retry = match decision.retry_after {
                None => "never".to_owned(),
                Some(wait) if wait.is_zero() => "-".to_owned(),
                Some(wait) => format!("{} ms", wait.as_millis()),
            };
            println!(
                "{t:>8} {:>6} {:>8} {:>9} {:>9} {retry:>12}",
                request.cost,
                if decision.allowed { "yes" } else { "no" },
                decision.remaining,
                format!(
                    "{} ms",
                    decision.reset.saturating_sub(1_700_000_000_000 + t)
                ),
            );
        }
    }
    Ok(())
}
