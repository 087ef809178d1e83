//! The Upstash REST protocol over a [`Transport`]: commands out as JSON, replies and errors back typed.
//!
//! A reply is a [`serde_json::Value`], used as is: Redis replies are integers, strings, arrays and
//! null, which JSON holds without loss. serde_json keeps an integer that fits `i64` or `u64` exact
//! and reads any other number as a float, which `as_i64`/`as_u64` refuse, so no such number is ever
//! taken for a count.

use crate::error::{Error, Result};
use crate::transport::{HttpReply, Transport};
use futures_channel::oneshot;
use serde_json::Value;
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

/// A command waiting for its batch: its JSON array of strings, and where its reply goes.
struct Queued {
    command: Value,
    reply: oneshot::Sender<Result<Value>>,
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
        let (sender, reply) = oneshot::channel();
        let queued = Queued {
            command: command.iter().copied().map(Value::from).collect(),
            reply: sender,
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
            let (commands, senders): (Vec<Value>, Vec<_>) = batch
                .into_iter()
                .map(|queued| (queued.command, queued.reply))
                .unzip();
            let body = Value::Array(commands).to_string();
            deliver(self.transport.post("/pipeline", body).await, senders);
        }
        // A dropped sender: the caller sending the batch was cancelled before it had the replies.
        reply.await.unwrap_or_else(|oneshot::Canceled| {
            Err(Error::Network {
                message: "the caller sending this command's batch was cancelled".to_owned(),
            })
        })
    }

    fn lock_queue(&self) -> std::sync::MutexGuard<'_, Vec<Queued>> {
        // Pushing and taking cannot panic halfway, so a poisoned lock still holds a consistent queue.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Hands each command of a batch its result from the `/pipeline` request's `reply`.
fn deliver(reply: Result<HttpReply>, senders: Vec<oneshot::Sender<Result<Value>>>) {
    let mut replies = reply
        .and_then(|reply| decode_pipeline(reply, senders.len()))
        .map(Vec::into_iter);
    for sender in senders {
        let reply = match &mut replies {
            Ok(replies) => replies
                .next()
                .unwrap_or_else(|| Err(malformed("a missing reply"))),
            Err(error) => Err(error.clone()),
        };
        // The caller may be gone (cancelled): then nobody wants its reply.
        let _ = sender.send(reply);
    }
}

/// Turns a `/pipeline` reply into one result per command, `count` of them.
fn decode_pipeline(reply: HttpReply, count: usize) -> Result<Vec<Result<Value>>> {
    let parsed = serde_json::from_slice::<Value>(&reply.body);
    let text = || {
        String::from_utf8_lossy(&reply.body)
            .chars()
            .take(200)
            .collect::<String>()
    };
    if !(200..300).contains(&reply.status) {
        let message = parsed
            .as_ref()
            .ok()
            .and_then(|body| body.get("error"))
            .and_then(Value::as_str)
            .map_or_else(text, str::to_owned);
        return Err(Error::Http {
            status: reply.status,
            message,
        });
    }
    let Ok(Value::Array(items)) = parsed else {
        return Err(malformed(&format!("expected a JSON array, got {}", text())));
    };
    if items.len() != count {
        return Err(malformed(&format!(
            "{} replies to {count} commands",
            items.len()
        )));
    }
    Ok(items.into_iter().map(decode_item).collect())
}

fn decode_item(item: Value) -> Result<Value> {
    let Value::Object(mut item) = item else {
        return Err(malformed("a pipeline item is not an object"));
    };
    if let Some(error) = item.remove("error") {
        return Err(Error::Redis {
            message: error
                .as_str()
                .map_or_else(|| error.to_string(), str::to_owned),
        });
    }
    item.remove("result")
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(body: &str) -> HttpReply {
        HttpReply {
            status: 200,
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn a_body_that_is_not_json_is_a_malformed_reply_quoting_it() {
        let error = decode_pipeline(ok(r#"[{"result": 1"#), 1).unwrap_err();
        assert!(
            matches!(&error, Error::MalformedReply { message } if message.contains(r#"[{"result": 1"#)),
            "{error}"
        );
    }

    #[test]
    fn integers_stay_exact_and_other_numbers_are_never_counts() {
        let body =
            r#"[{"result":[1796220043830,-5,18446744073709551615,18446744073709551616,1.5]}]"#;
        let reply = decode_pipeline(ok(body), 1).unwrap().remove(0).unwrap();
        let numbers = reply.as_array().unwrap();
        assert_eq!(numbers[0].as_u64(), Some(1_796_220_043_830));
        assert_eq!(numbers[1].as_i64(), Some(-5));
        assert_eq!(numbers[2].as_u64(), Some(u64::MAX));
        for number in &numbers[3..] {
            assert_eq!((number.as_u64(), number.as_i64()), (None, None), "{number}");
        }
    }
}
