//! The Upstash REST protocol over a [`Transport`]: commands out as JSON, replies and errors back typed.

use super::json::{self, Value};
use super::slot::{slot, Filler};
use crate::error::{Error, Result};
use crate::transport::{HttpReply, Transport};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, PoisonError};
use std::task::{Context, Poll};

/// A client of an Upstash-compatible REST server. Every request goes to `/pipeline`; with coalescing on,
/// commands issued by concurrent callers in the same tick share one `/pipeline` request (each command
/// keeps its own atomicity; a pipeline is not a transaction).
pub struct RestClient<T> {
    transport: T,
    coalesce: bool,
    queue: Mutex<Vec<Queued>>,
}

/// A command waiting for its batch: its JSON text, and where its reply goes.
struct Queued {
    command: String,
    reply: Filler,
}

impl<T: Transport> RestClient<T> {
    /// A client sending through `transport`, coalescing concurrent commands.
    pub fn new(transport: T) -> Self {
        Self {
            transport,
            coalesce: true,
            queue: Mutex::new(Vec::new()),
        }
    }

    /// The same client with coalescing on or off (off: one HTTP request per command).
    pub fn with_coalescing(mut self, coalesce: bool) -> Self {
        self.coalesce = coalesce;
        self
    }

    /// The transport underneath.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// Runs one command, its name then its arguments; Redis errors come back as [`Error::Redis`].
    pub async fn command(&self, command: &[&str]) -> Result<Value> {
        self.send(json::encode_command(command)).await
    }

    /// Runs one command given as JSON text (see [`json::encode_command`]).
    pub(crate) async fn send(&self, command: String) -> Result<Value> {
        let (filler, reply) = slot();
        let queued = Queued {
            command,
            reply: filler,
        };
        let batch = if self.coalesce {
            self.lock_queue().push(queued);
            // Let every caller that is ready in this tick queue its command; the first to resume
            // sends them all, the others find the queue empty and wait for their reply.
            YieldOnce(false).await;
            std::mem::take(&mut *self.lock_queue())
        } else {
            vec![queued]
        };
        if !batch.is_empty() {
            let (body, fillers) = split(batch);
            deliver(self.transport.post("/pipeline", body).await, fillers);
        }
        reply.await
    }

    fn lock_queue(&self) -> std::sync::MutexGuard<'_, Vec<Queued>> {
        // Pushing and taking cannot panic halfway, so a poisoned lock still holds a consistent queue.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The `/pipeline` body sending `batch`, and where each reply goes, in order.
fn split(batch: Vec<Queued>) -> (String, Vec<Filler>) {
    let mut body = String::from("[");
    let mut fillers = Vec::with_capacity(batch.len());
    for queued in batch {
        if !fillers.is_empty() {
            body.push(',');
        }
        body.push_str(&queued.command);
        fillers.push(queued.reply);
    }
    body.push(']');
    (body, fillers)
}

/// Hands each command of a batch its result from the `/pipeline` request's `reply`.
fn deliver(reply: Result<HttpReply>, fillers: Vec<Filler>) {
    let mut replies = reply
        .and_then(|reply| decode_pipeline(reply, fillers.len()))
        .map(Vec::into_iter);
    for filler in fillers {
        let reply = match &mut replies {
            Ok(replies) => replies
                .next()
                .unwrap_or_else(|| Err(malformed("a missing reply"))),
            Err(error) => Err(error.clone()),
        };
        filler.fill(reply);
    }
}

/// Turns a `/pipeline` reply into one result per command, `count` of them.
fn decode_pipeline(reply: HttpReply, count: usize) -> Result<Vec<Result<Value>>> {
    let parsed = json::parse(&reply.body);
    if !(200..300).contains(&reply.status) {
        let message = parsed
            .as_ref()
            .ok()
            .and_then(|body| body.get("error"))
            .and_then(Value::as_str)
            .map_or_else(|| reply.body.chars().take(200).collect(), str::to_owned);
        return Err(Error::Http {
            status: reply.status,
            message,
        });
    }
    let Ok(Value::Array(items)) = parsed else {
        return Err(malformed(&format!(
            "expected a JSON array, got {:.200}",
            reply.body
        )));
    };
    if items.len() != count {
        return Err(malformed(&format!(
            "{} replies to {count} commands",
            items.len()
        )));
    }
    Ok(items.into_iter().map(decode_item).collect())
}

fn decode_item(mut item: Value) -> Result<Value> {
    if !matches!(item, Value::Object(_)) {
        return Err(malformed("a pipeline item is not an object"));
    }
    if let Some(error) = item.take("error") {
        return Err(Error::Redis {
            message: error
                .as_str()
                .map_or_else(|| error.to_string(), str::to_owned),
        });
    }
    item.take("result")
        .ok_or_else(|| malformed("a pipeline item has neither result nor error"))
}

/// An [`Error::MalformedReply`] saying `what`.
pub(crate) fn malformed(what: &str) -> Error {
    Error::MalformedReply {
        message: what.to_owned(),
    }
}

/// A future that is pending once, waking itself, so other ready tasks run before it resumes.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            context.waker().wake_by_ref();
            Poll::Pending
        }
    }
}
