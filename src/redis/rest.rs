//! The Upstash REST protocol over a [`Transport`]: commands out as JSON, replies and errors back typed.
//!
//! Commands go out as JSON arrays of strings (see [`super::command`]); replies come back as
//! [`Reply`]s, read by serde_json straight from the body.

use super::reply::{Key, Reply};
use crate::error::{Error, Result};
use crate::maybe_send::BoxFuture;
use crate::transport::{HttpReply, Transport};
use futures_channel::oneshot;
use futures_util::future::{FutureExt, Shared};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

/// A client of an Upstash-compatible REST server. Every request goes to `/pipeline`; with coalescing on,
/// commands issued by concurrent callers in the same tick share one `/pipeline` request (each command
/// keeps its own atomicity; a pipeline is not a transaction).
///
/// A shared request belongs to all its callers, not to the one that happened to send it: any caller
/// still waiting drives it, so a caller dropped mid-request (a timeout around it, a cancelled
/// handler) costs the others nothing.
pub struct RestClient<T> {
    transport: Arc<T>,
    coalesce: bool,
    queue: Mutex<Vec<Queued>>,
    /// The scripts a caller is loading into this server (see [`RestClient::load`]), by SHA-1.
    loading: Mutex<Vec<&'static str>>,
}

/// The right to load a script into a server, held by one caller at a time (see
/// [`RestClient::load`]); given back when dropped, even by a caller cancelled midway.
pub(crate) struct Loading<'a> {
    loading: &'a Mutex<Vec<&'static str>>,
    sha1: &'static str,
}

impl Drop for Loading<'_> {
    fn drop(&mut self) {
        let mut loading = self.loading.lock().unwrap_or_else(PoisonError::into_inner);
        loading.retain(|sha1| *sha1 != self.sha1);
    }
}

/// The most bytes of commands one coalesced `/pipeline` request carries; the commands of a larger
/// burst go in several requests. Upstash and the gateway refuse bodies over 1 MiB by default, and
/// a refused request would answer every command in it with the fail mode.
const MAX_BATCH_BYTES: usize = 256 * 1024;

/// A command waiting for its batch: its JSON array of strings, and where its batch is handed.
struct Queued {
    command: String,
    /// What is left of its call's time, for an EVAL after NOSCRIPT (see [`RestClient::send`]).
    within: Option<Duration>,
    batch: oneshot::Sender<(Batch, usize)>,
}

/// A `/pipeline` request in flight, shared by its callers: one slot per command, each taken by its
/// caller.
type Batch = Shared<BoxFuture<'static, Arc<[Slot]>>>;

/// A command's result in its batch, until its caller takes it.
type Slot = Mutex<Option<Result<Reply>>>;

impl<T: Transport> RestClient<T> {
    /// A client sending through `transport`, coalescing concurrent commands.
    pub fn new(transport: T) -> Self {
        Self {
            transport: Arc::new(transport),
            coalesce: true,
            queue: Mutex::new(Vec::new()),
            loading: Mutex::new(Vec::new()),
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
    pub async fn command(&self, command: &[&str]) -> Result<Reply> {
        self.send(json_array(command), None).await
    }

    /// Runs `commands` (each its name then its arguments) as one MULTI/EXEC transaction, a
    /// `/multi-exec` request of its own: each command's result, or the first error (the request's, or
    /// a command's Redis error).
    pub async fn transaction(&self, commands: &[Vec<&str>]) -> Result<Vec<Reply>> {
        let mut body = String::from("[");
        for (index, command) in commands.iter().enumerate() {
            if index > 0 {
                body.push(',');
            }
            body += &json_array(command);
        }
        body.push(']');
        let reply = self.transport.post("/multi-exec", body).await?;
        decode_pipeline(reply, commands.len())?
            .into_iter()
            .collect()
    }

    /// The right to load the script `sha1` into this server (with EVAL, after NOSCRIPT), unless
    /// another caller holds it: then that caller's EVAL is on its way, queued first when both
    /// retry in the same tick, and EVALSHA after it needs no script text. A burst of callers that
    /// all met NOSCRIPT thus sends the script once, not once each.
    pub(crate) fn load(&self, sha1: &'static str) -> Option<Loading<'_>> {
        let mut loading = self.loading.lock().unwrap_or_else(PoisonError::into_inner);
        if loading.contains(&sha1) {
            return None;
        }
        loading.push(sha1);
        Some(Loading {
            loading: &self.loading,
            sha1,
        })
    }

    /// Runs `command` (a JSON array), alone or coalesced with the commands queued in this tick,
    /// answering a timeout after `within` if given (see [`Transport::post_within`]): for a retry that
    /// must fit in what is left of its call's time. A request then answers within the least time any
    /// of its commands has left, and concurrent retries keep their order in it.
    pub(super) async fn send(&self, command: String, within: Option<Duration>) -> Result<Reply> {
        if !self.coalesce {
            return self.alone(command, within).await;
        }
        let (sender, batch) = oneshot::channel();
        self.lock_queue().push(Queued {
            command,
            within,
            batch: sender,
        });
        // Let every caller that is ready in this tick queue its command; the first to resume
        // sends them all, the others find the queue empty and wait for their batch.
        YieldOnce(false).await;
        let mut queued = std::mem::take(&mut *self.lock_queue());
        // Alone in its batch, nobody else waits for the request: it needs no sharing.
        if let [alone] = queued.as_mut_slice() {
            if alone.batch.is_connected_to(&batch) {
                let command = std::mem::take(&mut alone.command);
                return self.alone(command, alone.within).await;
            }
        }
        self.start_batches(queued);
        // The batch is handed over in the same step that takes the queue, so it always arrives.
        let (batch, index) = batch.await.map_err(|oneshot::Canceled| Error::Network {
            message: "the command was never sent".to_owned(),
        })?;
        let slots = batch.await;
        let slot = slots
            .get(index)
            .and_then(|slot| slot.lock().unwrap_or_else(PoisonError::into_inner).take());
        slot.unwrap_or_else(|| Err(malformed("a missing reply")))
    }

    /// Starts the `/pipeline` requests for `queued`, in order, each body under [`MAX_BATCH_BYTES`] (a
    /// command alone may pass it). Not inlined: a command sent alone (a first decision) needs none of
    /// it.
    #[inline(never)]
    fn start_batches(&self, queued: Vec<Queued>) {
        let mut queued = queued.into_iter().peekable();
        while queued.peek().is_some() {
            let mut bytes = 0;
            let batch: Vec<Queued> = std::iter::from_fn(|| {
                let next = queued.peek()?;
                if bytes > 0 && bytes + next.command.len() + 1 > MAX_BATCH_BYTES {
                    return None;
                }
                bytes += next.command.len() + 1;
                queued.next()
            })
            .collect();
            self.start(batch);
        }
    }

    /// Starts one `/pipeline` request for `queued` and hands each caller the shared request and the
    /// place of its reply; the request runs while any of them waits for it.
    fn start(&self, queued: Vec<Queued>) {
        let mut body = String::with_capacity(
            2 + queued
                .iter()
                .map(|queued| queued.command.len() + 1)
                .sum::<usize>(),
        );
        let within = queued.iter().filter_map(|queued| queued.within).min();
        let mut senders = Vec::with_capacity(queued.len());
        for queued in queued {
            body.push(if senders.is_empty() { '[' } else { ',' });
            body += &queued.command;
            senders.push(queued.batch);
        }
        body.push(']');
        let transport = Arc::clone(&self.transport);
        let count = senders.len();
        let request: BoxFuture<'static, Arc<[Slot]>> = Box::pin(async move {
            let reply = match within {
                Some(within) => transport.post_within("/pipeline", body, within).await,
                None => transport.post("/pipeline", body).await,
            };
            deliver(reply, count)
        });
        let batch = request.shared();
        for (index, sender) in senders.into_iter().enumerate() {
            // A caller already gone (cancelled while queued) wants nothing.
            let _ = sender.send((batch.clone(), index));
        }
    }

    /// Sends `command` (a JSON array) in a request of its own, within `within` if given.
    async fn alone(&self, command: String, within: Option<Duration>) -> Result<Reply> {
        // The command has room for the body's brackets (see `command`): made in place.
        let mut body = command;
        body.insert(0, '[');
        body.push(']');
        let reply = match within {
            Some(within) => self.transport.post_within("/pipeline", body, within).await,
            None => self.transport.post("/pipeline", body).await,
        };
        let mut replies = decode_pipeline(reply?, 1)?;
        replies
            .pop()
            .unwrap_or_else(|| Err(malformed("a missing reply")))
    }

    fn lock_queue(&self) -> std::sync::MutexGuard<'_, Vec<Queued>> {
        // Pushing and taking cannot panic halfway, so a poisoned lock still holds a consistent queue.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `command` (its name then its arguments) as a JSON array of strings.
fn json_array(command: &[&str]) -> String {
    super::command::command(&[&command.iter().collect()])
}

/// Each of a batch's `count` commands' result from the `/pipeline` request's `reply`.
fn deliver(reply: Result<HttpReply>, count: usize) -> Arc<[Slot]> {
    let mut replies = reply
        .and_then(|reply| decode_pipeline(reply, count))
        .map(Vec::into_iter);
    (0..count)
        .map(|_| {
            Mutex::new(Some(match &mut replies {
                Ok(replies) => replies
                    .next()
                    .unwrap_or_else(|| Err(malformed("a missing reply"))),
                Err(error) => Err(error.clone()),
            }))
        })
        .collect()
}

/// Turns a `/pipeline` reply into one result per command, `count` of them.
fn decode_pipeline(reply: HttpReply, count: usize) -> Result<Vec<Result<Reply>>> {
    if !(200..300).contains(&reply.status) {
        return Err(http_error(&reply));
    }
    let Ok(Reply::Array(items)) = serde_json::from_slice::<Reply>(&reply.body) else {
        return Err(not_an_array(&reply));
    };
    if items.len() != count {
        return Err(miscounted(items.len(), count));
    }
    Ok(items.into_iter().map(decode_item).collect())
}

/// The error of a `/pipeline` reply whose body is no JSON array. Not inlined, as every error a
/// reply may carry: a first decision is answered with none.
#[inline(never)]
fn not_an_array(reply: &HttpReply) -> Error {
    malformed(&format!("expected a JSON array, got {}", body_text(reply)))
}

/// The error of a `/pipeline` reply of `replies` items to `count` commands.
#[inline(never)]
fn miscounted(replies: usize, count: usize) -> Error {
    malformed(&format!("{replies} replies to {count} commands"))
}

/// The error of a `/pipeline` request answered `reply`, a status other than 2xx: only a string
/// `error` is the message (the last, if repeated); anything else, the body itself. Not inlined: a
/// first decision is answered 200.
#[inline(never)]
fn http_error(reply: &HttpReply) -> Error {
    let message = match serde_json::from_slice::<Reply>(&reply.body) {
        Ok(Reply::Object(fields)) => fields
            .into_iter()
            .rev()
            .find(|(key, _)| *key == Key::Error)
            .and_then(|(_, error)| match error {
                Reply::Text(message) => Some(message),
                _ => None,
            }),
        _ => None,
    };
    Error::Http {
        status: reply.status,
        message: message.unwrap_or_else(|| body_text(reply)),
    }
}

/// The first 200 characters of `reply`'s body, to quote it.
fn body_text(reply: &HttpReply) -> String {
    String::from_utf8_lossy(&reply.body)
        .chars()
        .take(200)
        .collect()
}

/// A pipeline item's outcome, from `{"result": <reply>}` or `{"error": <text>}` (other keys ignored,
/// the last of a repeated key taken): Redis's error if it has one ([`Error::CrossSlot`] for a
/// `CROSSSLOT`, [`Error::CorruptState`] for a script's `CORRUPTSTATE`), else its result.
fn decode_item(item: Reply) -> Result<Reply> {
    let Reply::Object(fields) = item else {
        return Err(malformed("a pipeline item is not an object"));
    };
    let (mut result, mut error) = (None, None);
    for (key, value) in fields {
        match key {
            Key::Result => result = Some(value),
            Key::Error => error = Some(value),
            Key::Other(_) => {}
        }
    }
    match error {
        Some(error) => Err(item_error(error)),
        None => result.ok_or_else(|| malformed("a pipeline item has neither result nor error")),
    }
}

/// The error of a pipeline item's `error`: [`Error::CrossSlot`] for a `CROSSSLOT`,
/// [`Error::CorruptState`] for a script's `CORRUPTSTATE`, else [`Error::Redis`] with its message (its
/// JSON text if it is no string).
#[inline(never)]
fn item_error(error: Reply) -> Error {
    match error {
        Reply::Text(message) if message.starts_with("CROSSSLOT") => Error::CrossSlot { message },
        Reply::Text(message) => super::corrupt::parse(&message).unwrap_or(Error::Redis { message }),
        error => Error::Redis {
            message: error.to_string(),
        },
    }
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

    fn reply(status: u16, body: &str) -> HttpReply {
        HttpReply {
            status,
            body: body.as_bytes().to_vec(),
        }
    }

    /// A transport recording each body it is sent and answering `reply` to all.
    struct Canned {
        reply: HttpReply,
        sent: Mutex<Vec<String>>,
    }

    impl Transport for Canned {
        fn post<'a>(
            &'a self,
            _: &'a str,
            body: String,
        ) -> crate::maybe_send::BoxFuture<'a, Result<HttpReply>> {
            self.lock_sent().push(body);
            Box::pin(std::future::ready(Ok(self.reply.clone())))
        }
    }

    impl Canned {
        fn lock_sent(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
            self.sent.lock().unwrap()
        }
    }

    #[test]
    fn commands_go_out_as_json_arrays_of_strings() {
        let client = RestClient::new(Canned {
            reply: ok(r#"[{"result":"OK"}]"#),
            sent: Mutex::default(),
        });
        let reply = pollster::block_on(client.command(&["SET", "k\"\\\n", "é😀"]));
        assert_eq!(reply, Ok(Reply::Text("OK".to_owned())));
        assert_eq!(
            *client.transport().lock_sent(),
            [r#"[["SET","k\"\\\n","é😀"]]"#]
        );
    }

    #[test]
    fn a_transaction_is_one_multi_exec_request_answered_by_each_result_or_the_first_error() {
        let client = RestClient::new(Canned {
            reply: ok(r#"[{"result":1},{"result":"OK"}]"#),
            sent: Mutex::default(),
        });
        let commands = [vec!["SADD", "k", "a"], vec!["SET", "s", "valid"]];
        let results = pollster::block_on(client.transaction(&commands));
        assert_eq!(
            results,
            Ok(vec![Reply::Integer(1), Reply::Text("OK".to_owned())])
        );
        assert_eq!(
            *client.transport().lock_sent(),
            [r#"[["SADD","k","a"],["SET","s","valid"]]"#]
        );
        let failing = RestClient::new(Canned {
            reply: ok(r#"[{"result":1},{"error":"WRONGTYPE Operation against a key"}]"#),
            sent: Mutex::default(),
        });
        assert_eq!(
            pollster::block_on(failing.transaction(&commands)),
            Err(Error::Redis {
                message: "WRONGTYPE Operation against a key".to_owned()
            })
        );
    }

    #[test]
    fn each_item_is_its_commands_result_or_error() {
        let body = r#"[{"result":null},{"result":[1,"x"],"other":2},{"error":"NOSCRIPT No matching script"},
            {"error":{"code":1}},{"error":null},{"other":1},5,{"result":1,"result":2},
            {"error":"CROSSSLOT Keys in request don't hash to the same slot"}]"#;
        let redis = |message: &str| {
            Err(Error::Redis {
                message: message.to_owned(),
            })
        };
        assert_eq!(
            decode_pipeline(ok(body), 9).unwrap(),
            [
                Ok(Reply::Nil),
                Ok(Reply::Array(vec![
                    Reply::Integer(1),
                    Reply::Text("x".to_owned())
                ])),
                redis("NOSCRIPT No matching script"),
                redis(r#"{"code":1}"#),
                redis("null"),
                Err(malformed("a pipeline item has neither result nor error")),
                Err(malformed("a pipeline item is not an object")),
                Ok(Reply::Integer(2)),
                Err(Error::CrossSlot {
                    message: "CROSSSLOT Keys in request don't hash to the same slot".to_owned()
                }),
            ]
        );
        assert_eq!(
            decode_pipeline(ok(r#"[{"result":1}]"#), 2),
            Err(malformed("1 replies to 2 commands"))
        );
    }

    #[test]
    fn an_http_error_is_its_error_string_or_its_body_cut_at_200_chars() {
        let http = |status, message: &str| {
            Err(Error::Http {
                status,
                message: message.to_owned(),
            })
        };
        let wrongpass = r#"{"error":"WRONGPASS invalid or missing auth token","other":1}"#;
        assert_eq!(
            decode_pipeline(reply(401, wrongpass), 1),
            http(401, "WRONGPASS invalid or missing auth token")
        );
        for body in [r#"{"error":5}"#, r#"{"error":null}"#, "[]", "Bad gateway"] {
            assert_eq!(decode_pipeline(reply(502, body), 1), http(502, body));
        }
        let long = "é".repeat(300);
        assert_eq!(
            decode_pipeline(reply(500, &long), 1),
            http(500, &"é".repeat(200))
        );
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
