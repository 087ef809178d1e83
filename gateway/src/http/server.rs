//! The accept loop, HTTP/1.1 (and HTTP/2 over TLS, when the client asks for it by ALPN): a cap on open connections, a header-read and an idle timeout per
//! connection, a lingering close, and a graceful shutdown with a deadline. (`axum::serve` has none
//! of these.)

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use prometheus_client::metrics::gauge::Gauge;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

use super::routes::GatewayService;
use crate::config::Limits;

/// After the last reply, how long a connection may keep sending (the rest of a body refused with
/// 413) before it is closed: closing with unread data makes the kernel send a reset, which can
/// reach the client before the reply it has not read yet.
const LINGER_TIME: Duration = Duration::from_secs(5);

/// How many bytes a lingering connection may send before it is closed anyway.
const LINGER_BYTES: usize = 16 * 1024 * 1024;

/// "No time": `head_started` when no request head is being read.
const NONE: u64 = u64::MAX;

/// What one connection is doing, in milliseconds since it was accepted.
struct Activity {
    accepted: Instant,
    last_byte: AtomicU64,
    head_started: AtomicU64,
    in_flight: AtomicUsize,
    /// HTTP/2: frames come and go between requests (settings, pings), so no byte starts a head.
    multiplexed: AtomicBool,
}

impl Activity {
    fn new() -> Self {
        Self {
            accepted: Instant::now(),
            last_byte: AtomicU64::new(0),
            head_started: AtomicU64::new(NONE),
            in_flight: AtomicUsize::new(0),
            multiplexed: AtomicBool::new(false),
        }
    }

    fn now(&self) -> u64 {
        self.accepted.elapsed().as_millis() as u64
    }

    fn read(&self) {
        let now = self.now();
        self.last_byte.store(now, Ordering::Relaxed);
        if self.in_flight.load(Ordering::Relaxed) == 0 && !self.multiplexed.load(Ordering::Relaxed)
        {
            let _ =
                self.head_started
                    .compare_exchange(NONE, now, Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    fn wrote(&self) {
        self.last_byte.store(self.now(), Ordering::Relaxed);
    }

    /// A request head was read: the service runs until the guard drops.
    fn begin(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        self.head_started.store(NONE, Ordering::Relaxed);
        InFlight(self.clone())
    }

    /// Why the connection should be closed now, if it should.
    fn expired(&self, limits: &Limits) -> Option<&'static str> {
        if self.in_flight.load(Ordering::Relaxed) > 0 {
            return None;
        }
        let now = self.now();
        let head = self.head_started.load(Ordering::Relaxed);
        if head != NONE {
            (now.saturating_sub(head) > limits.header_read.as_millis() as u64)
                .then_some("request head not complete in time")
        } else {
            (now.saturating_sub(self.last_byte.load(Ordering::Relaxed))
                > limits.idle.as_millis() as u64)
                .then_some("idle")
        }
    }
}

struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.wrote();
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A TCP stream that records when bytes move.
struct Tracked {
    stream: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.stream).poll_read(cx, buf);
        if matches!(result, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.read();
        }
        result
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.stream).poll_write(cx, buf);
        if matches!(result, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.wrote();
        }
        result
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// An open connection's place under `--max-connections`, and its count in the metrics.
struct Slot {
    _permit: OwnedSemaphorePermit,
    connections: Gauge,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.connections.dec();
    }
}

/// Serves `service` on `listener` until `signal` resolves, then lets in-flight requests finish
/// for at most `limits.shutdown_grace`. Returns whether every connection finished in time.
pub async fn serve(
    listener: TcpListener,
    service: GatewayService,
    limits: Limits,
    tls: Option<TlsAcceptor>,
    connections: Gauge,
    signal: impl Future<Output = ()>,
) -> bool {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let (stop, stopped) = watch::channel(false);
    tokio::pin!(signal);
    loop {
        let permit = tokio::select! {
            () = &mut signal => break,
            permit = slots.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let stream = tokio::select! {
            () = &mut signal => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    // Out of file descriptors and the like: wait instead of spinning.
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // Replies are written in one piece; do not let Nagle hold them back.
        let _ = stream.set_nodelay(true);
        connections.inc();
        let slot = Slot {
            _permit: permit,
            connections: connections.clone(),
        };
        tokio::spawn(connection(
            stream,
            tls.clone(),
            service.clone(),
            limits,
            stopped.clone(),
            slot,
        ));
    }
    drop(listener);
    let _ = stop.send(true);
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    let finished = tokio::time::timeout(limits.shutdown_grace, slots.acquire_many(all))
        .await
        .is_ok();
    if !finished {
        tracing::warn!(
            grace_ms = limits.shutdown_grace.as_millis() as u64,
            "requests still in flight after the shutdown deadline; exiting anyway"
        );
    }
    finished
}

/// One connection, over TLS if `tls`: the handshake must end within `--header-read-timeout-ms`
/// as a request head must.
async fn connection(
    stream: TcpStream,
    tls: Option<TlsAcceptor>,
    service: GatewayService,
    limits: Limits,
    mut stopped: watch::Receiver<bool>,
    _slot: Slot,
) {
    let activity = Arc::new(Activity::new());
    let tracked = Tracked {
        stream,
        activity: activity.clone(),
    };
    let Some(acceptor) = tls else {
        return http1(tracked, activity, service, limits, stopped).await;
    };
    let handshake = tokio::time::timeout(limits.header_read, acceptor.accept(tracked));
    let stream = tokio::select! {
        result = handshake => match result {
            Ok(Ok(stream)) => stream,
            Ok(Err(error)) => {
                tracing::debug!(%error, "TLS handshake failed");
                return;
            }
            Err(_) => {
                tracing::debug!("TLS handshake not complete in time");
                return;
            }
        },
        _ = stopped.changed() => return,
    };
    if stream.get_ref().1.alpn_protocol() == Some(b"h2") {
        activity.multiplexed.store(true, Ordering::Relaxed);
        activity.head_started.store(NONE, Ordering::Relaxed);
        return http2(stream, activity, service, limits, stopped).await;
    }
    http1(stream, activity, service, limits, stopped).await;
}

/// HTTP/2 (chosen by the client over ALPN) on one connection: closed when idle (see [`Limits`]),
/// or, after the shutdown signal, with a GOAWAY once its requests in flight are answered.
async fn http2<S>(
    stream: S,
    activity: Arc<Activity>,
    service: GatewayService,
    limits: Limits,
    mut stopped: watch::Receiver<bool>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let on_request = activity.clone();
    let hyper_service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let guard = on_request.begin();
        let service = service.clone();
        async move {
            let response = service.oneshot(request.map(Body::new)).await;
            drop(guard);
            response
        }
    });
    let conn = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
        .timer(TokioTimer::new())
        .serve_connection(TokioIo::new(stream), hyper_service);
    tokio::pin!(conn);
    let mut watchdog = tokio::time::interval(
        (limits.idle / 4).clamp(Duration::from_millis(5), Duration::from_secs(1)),
    );
    let mut shutting_down = false;
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(%error, "HTTP/2 connection ended with an error");
                }
                return;
            }
            _ = watchdog.tick(), if !shutting_down => {
                if let Some(reason) = activity.expired(&limits) {
                    tracing::debug!(reason, "closing HTTP/2 connection");
                    return;
                }
            }
            _ = stopped.changed(), if !shutting_down => {
                shutting_down = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

/// HTTP/1.1 on one connection, closed when it expires (see [`Limits`]) or, after the shutdown
/// signal, once its request in flight is answered.
async fn http1<S>(
    stream: S,
    activity: Arc<Activity>,
    service: GatewayService,
    limits: Limits,
    mut stopped: watch::Receiver<bool>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let io = TokioIo::new(stream);
    let on_request = activity.clone();
    let hyper_service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let guard = on_request.begin();
        let service = service.clone();
        // Boxed: `poll_without_shutdown` (the socket back, to linger) needs an `Unpin` future.
        Box::pin(async move {
            let response = service.oneshot(request.map(Body::new)).await;
            drop(guard);
            response
        })
    });
    // The head timeout is the watchdog's (`--header-read-timeout-ms`): hyper's own would arm a
    // timer for every request.
    let mut conn = hyper::server::conn::http1::Builder::new()
        .header_read_timeout(None)
        .serve_connection(io, hyper_service);
    let tick = limits.header_read.min(limits.idle) / 4;
    let mut watchdog =
        tokio::time::interval(tick.clamp(Duration::from_millis(5), Duration::from_secs(1)));
    let mut shutting_down = false;
    loop {
        tokio::select! {
            result = std::future::poll_fn(|cx| conn.poll_without_shutdown(cx)) => {
                if let Err(error) = result {
                    tracing::debug!(%error, "connection ended with an error");
                }
                break;
            }
            _ = watchdog.tick(), if !shutting_down => {
                if let Some(reason) = activity.expired(&limits) {
                    tracing::debug!(reason, "closing connection");
                    return;
                }
            }
            _ = stopped.changed(), if !shutting_down => {
                shutting_down = true;
                Pin::new(&mut conn).graceful_shutdown();
            }
        }
    }
    if !shutting_down {
        let stream = conn.into_parts().io.into_inner();
        // A shutdown does not wait for lingering connections.
        tokio::select! {
            () = linger(stream) => {}
            _ = stopped.changed() => {}
        }
    }
}

/// Closes a connection politely: sends FIN after the replies, then reads and discards what the
/// client still sends (at most `LINGER_BYTES`, for at most `LINGER_TIME`) until it closes too.
async fn linger(mut stream: impl AsyncRead + AsyncWrite + Unpin) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    if stream.shutdown().await.is_err() {
        return;
    }
    let drain = async {
        let mut sink = vec![0u8; 16 * 1024];
        let mut left = LINGER_BYTES;
        while left > 0 {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => return,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    };
    let _ = tokio::time::timeout(LINGER_TIME, drain).await;
}
