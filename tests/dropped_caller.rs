//! A coalesced `/pipeline` request belongs to all its callers: when the caller that happened to send
//! it is dropped (a timeout around `limit()`, a cancelled handler), the others still get their real
//! answers from real Redis, not a network error answered by the fail mode.

#![cfg(not(target_arch = "wasm32"))]

mod support;

use edgelimit::ratelimit::Ratelimit;
use edgelimit::transport::{HttpReply, HttpTransport, Transport};
use edgelimit::Configure;
use edgelimit::{BoxFuture, FixedWindow, RedisBackend};
use futures::channel::oneshot;
use futures::future::{FutureExt, Shared};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::Servers;

/// A transport that holds every request at a gate until it opens, then forwards it.
struct Gated {
    inner: HttpTransport,
    gate: Shared<oneshot::Receiver<()>>,
    posted: Arc<AtomicUsize>,
}

impl Transport for Gated {
    fn post<'a>(
        &'a self,
        path: &'a str,
        body: String,
    ) -> BoxFuture<'a, edgelimit::Result<HttpReply>> {
        Box::pin(async move {
            self.posted.fetch_add(1, Ordering::SeqCst);
            let _ = self.gate.clone().await;
            self.inner.post(path, body).await
        })
    }
}

#[tokio::test]
async fn the_other_callers_of_a_batch_get_real_answers_when_its_sender_is_dropped() {
    let servers = Servers::start();
    let rule = FixedWindow::new(100, Duration::from_secs(3600)).unwrap();
    // The script is loaded first, so each caller's EVALSHA is the one request of the batch.
    let warm = Ratelimit::new(RedisBackend::new(servers.gateway.transport()), rule);
    assert!(warm.limit("dropped:warm", 1.0).await.unwrap().success);

    let (open, gate) = oneshot::channel();
    let posted = Arc::new(AtomicUsize::new(0));
    let transport = Gated {
        inner: servers.gateway.transport(),
        gate: gate.shared(),
        posted: Arc::clone(&posted),
    };
    let limiter = Ratelimit::new(RedisBackend::new(transport), rule).with_ephemeral_cache(None);

    let mut sender = Box::pin(limiter.limit("dropped:user", 1.0));
    let mut others: Vec<_> = (0..7)
        .map(|_| Box::pin(limiter.limit("dropped:user", 1.0)))
        .collect();
    // Each queues its command; then the first resumes, sends the batch of 8 and waits at the gate.
    assert!(futures::poll!(&mut sender).is_pending());
    for other in &mut others {
        assert!(futures::poll!(other).is_pending());
    }
    assert!(futures::poll!(&mut sender).is_pending());
    assert_eq!(posted.load(Ordering::SeqCst), 1, "one request for all 8");

    drop(sender);
    open.send(()).unwrap();
    let answers = futures::future::join_all(others).await;
    for answer in &answers {
        let answer = answer.as_ref().unwrap();
        assert_eq!(answer.reason, None, "a real answer, not the fail mode's");
        assert!(answer.success);
    }
    // The batch ran once, all 8 commands in it (the dropped caller's was sent before it went).
    let mut remaining: Vec<_> = answers
        .iter()
        .map(|a| a.as_ref().unwrap().remaining)
        .collect();
    remaining.sort_by(f64::total_cmp);
    assert_eq!(remaining, [92.0, 93.0, 94.0, 95.0, 96.0, 97.0, 98.0]);
    assert_eq!(posted.load(Ordering::SeqCst), 1);
    assert_eq!(
        warm.get_remaining("dropped:user").await.unwrap().remaining,
        92.0
    );
}

#[tokio::test]
async fn a_batch_whose_callers_are_all_dropped_is_cancelled_and_the_client_keeps_working() {
    let servers = Servers::start();
    let rule = FixedWindow::new(100, Duration::from_secs(3600)).unwrap();
    let (_open, gate) = oneshot::channel::<()>();
    let posted = Arc::new(AtomicUsize::new(0));
    let transport = Gated {
        inner: servers.gateway.transport(),
        gate: gate.shared(),
        posted: Arc::clone(&posted),
    };
    let held = Ratelimit::new(RedisBackend::new(transport), rule);
    let mut callers: Vec<_> = (0..3)
        .map(|_| Box::pin(held.limit("dropped:all", 1.0)))
        .collect();
    for _ in 0..2 {
        for caller in &mut callers {
            assert!(futures::poll!(caller).is_pending());
        }
    }
    assert_eq!(posted.load(Ordering::SeqCst), 1);
    drop(callers);

    // Nothing was sent past the gate; another client of the same Redis sees nothing used.
    let other = Ratelimit::new(RedisBackend::new(servers.gateway.transport()), rule);
    assert_eq!(
        other.get_remaining("dropped:all").await.unwrap().remaining,
        100.0
    );
}
