//! The reply budget of one request (`--max-reply-bytes`), enforced while Redis's replies are read.
//!
//! Every batch the gateway writes to a Redis connection ends with an empty command, `*0\r\n`,
//! which Redis skips without a reply. [`Bounded`] wraps the connection's socket: on the way out it
//! counts the commands between those marks, so it knows how many replies belong to each request
//! (Redis answers in order); on the way in it follows the RESP framing, hands each top-level reply
//! on only once it is complete, and once the replies of one request pass the budget it discards
//! the rest of them as they arrive, putting a `-REPLYTOOLARGE` error in place of each. A reply of
//! any size costs at most the budget in memory, and the connection stays usable.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The code of the error reply that stands for a reply over the budget.
pub const TOO_LARGE: &str = "REPLYTOOLARGE";

const TOO_LARGE_REPLY: &[u8] = b"-REPLYTOOLARGE reply over the gateway's limit\r\n";

/// What a buffer may keep of its capacity once emptied; more is given back.
const KEEP_CAPACITY: usize = 64 * 1024;

/// Bytes read from the socket at once.
const CHUNK: usize = 16 * 1024;

/// Where a RESP scanner is inside the stream.
#[derive(Debug, Clone, Copy)]
enum At {
    /// Before the type byte of a value.
    Start,
    /// Inside a header line (after the type byte): its type and the number read so far.
    Line {
        kind: u8,
        number: u64,
        negative: bool,
    },
    /// The header line's `\r` was read; the `\n` comes next.
    LineEnd {
        kind: u8,
        number: u64,
        negative: bool,
    },
    /// Inside the payload of a bulk value, this many bytes (with its `\r\n`) left.
    Payload(u64),
}

/// Follows RESP values byte by byte, without keeping them: where one value ends.
#[derive(Debug)]
struct Scanner {
    at: At,
    /// Children still expected by each open aggregate, innermost last.
    open: Vec<u64>,
    /// Whether the last header was a top-level empty array (`*0`).
    empty: bool,
}

impl Scanner {
    fn new() -> Self {
        Self {
            at: At::Start,
            open: Vec::new(),
            empty: false,
        }
    }

    /// Reads `data` up to the end of the current top-level value; returns the bytes read and
    /// whether a top-level value ended there.
    fn advance(&mut self, data: &[u8]) -> io::Result<(usize, bool)> {
        let mut i = 0;
        while i < data.len() {
            match self.at {
                At::Start => {
                    self.at = At::Line {
                        kind: data[i],
                        number: 0,
                        negative: false,
                    };
                    i += 1;
                }
                At::Line {
                    kind,
                    number,
                    negative,
                } => {
                    // Only the header of a sized type carries a number; the others are skipped.
                    let sized =
                        matches!(kind, b'$' | b'!' | b'=' | b'*' | b'%' | b'~' | b'>' | b'|');
                    match memchr_cr(&data[i..]) {
                        Some(offset) => {
                            let (number, negative) = if sized {
                                parse_digits(&data[i..i + offset], number, negative)?
                            } else {
                                (number, negative)
                            };
                            self.at = At::LineEnd {
                                kind,
                                number,
                                negative,
                            };
                            i += offset + 1;
                        }
                        None => {
                            let (number, negative) = if sized {
                                parse_digits(&data[i..], number, negative)?
                            } else {
                                (number, negative)
                            };
                            self.at = At::Line {
                                kind,
                                number,
                                negative,
                            };
                            i = data.len();
                        }
                    }
                }
                At::LineEnd {
                    kind,
                    number,
                    negative,
                } => {
                    if data[i] != b'\n' {
                        return Err(invalid("a RESP line without \\n after \\r"));
                    }
                    i += 1;
                    if self.header(kind, number, negative) && self.ended() {
                        return Ok((i, true));
                    }
                }
                At::Payload(left) => {
                    let take = left.min((data.len() - i) as u64);
                    i += take as usize;
                    if take == left {
                        self.at = At::Start;
                        if self.ended() {
                            return Ok((i, true));
                        }
                    } else {
                        self.at = At::Payload(left - take);
                    }
                }
            }
        }
        Ok((i, false))
    }

    /// A header line was read: opens a payload or an aggregate; whether the value is complete.
    fn header(&mut self, kind: u8, number: u64, negative: bool) -> bool {
        self.at = At::Start;
        self.empty = kind == b'*' && number == 0 && !negative && self.open.is_empty();
        match kind {
            b'$' | b'!' | b'=' if !negative => {
                self.at = At::Payload(number.saturating_add(2));
                false
            }
            b'*' | b'~' | b'>' | b'%' | b'|' if !negative && number > 0 => {
                let children = match kind {
                    // A map holds key-value pairs; an attribute is its pairs and then the value.
                    b'%' => number.saturating_mul(2),
                    b'|' => number.saturating_mul(2).saturating_add(1),
                    _ => number,
                };
                self.open.push(children);
                false
            }
            _ => true,
        }
    }

    /// A value ended: counts it in its aggregate; whether the top-level value ended.
    fn ended(&mut self) -> bool {
        while let Some(left) = self.open.last_mut() {
            *left -= 1;
            if *left > 0 {
                return false;
            }
            self.open.pop();
        }
        true
    }
}

fn memchr_cr(data: &[u8]) -> Option<usize> {
    data.iter().position(|&b| b == b'\r')
}

fn parse_digits(digits: &[u8], mut number: u64, mut negative: bool) -> io::Result<(u64, bool)> {
    for &b in digits {
        match b {
            b'-' if number == 0 => negative = true,
            b'0'..=b'9' => {
                number = number
                    .checked_mul(10)
                    .and_then(|n| n.checked_add(u64::from(b - b'0')))
                    .ok_or_else(|| invalid("a RESP length out of range"))?;
            }
            _ => return Err(invalid("a RESP length that is not a number")),
        }
    }
    Ok((number, negative))
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_owned())
}

/// A Redis connection's socket with the reply budget of each request (see the module docs).
pub struct Bounded<S> {
    inner: S,
    budget: usize,
    /// Commands written since the last mark, and where the writer is in the current command.
    written: Scanner,
    written_count: usize,
    /// Replies expected by each marked request not fully answered yet, oldest first.
    requests: VecDeque<usize>,
    replies: Scanner,
    /// Replies read and bytes counted for the oldest request not fully answered.
    request_replies: usize,
    request_bytes: usize,
    over: bool,
    /// The incomplete top-level reply being read (empty while discarding).
    held: Vec<u8>,
    /// Complete replies not yet handed to the reader.
    ready: Vec<u8>,
    ready_from: usize,
    chunk: Box<[u8]>,
}

impl<S> Bounded<S> {
    /// Wraps `inner`, allowing `budget` bytes of replies per marked request.
    pub fn new(inner: S, budget: usize) -> Self {
        Self {
            inner,
            budget,
            written: Scanner::new(),
            written_count: 0,
            requests: VecDeque::new(),
            replies: Scanner::new(),
            request_replies: 0,
            request_bytes: 0,
            over: false,
            held: Vec::new(),
            ready: Vec::new(),
            ready_from: 0,
            chunk: vec![0; CHUNK].into_boxed_slice(),
        }
    }

    /// Follows commands written: an empty one ends a request.
    fn follow_commands(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            let (n, ended) = self.written.advance(data)?;
            data = &data[n..];
            if !ended {
                continue;
            }
            if self.written.empty {
                if self.written_count > 0 {
                    self.requests
                        .push_back(std::mem::take(&mut self.written_count));
                    self.next_request();
                }
            } else {
                self.written_count += 1;
            }
        }
        Ok(())
    }

    /// Moves on to the next request once the oldest one has all its replies.
    fn next_request(&mut self) {
        if let Some(&expected) = self.requests.front() {
            if self.request_replies >= expected {
                self.requests.pop_front();
                self.request_replies = 0;
                self.request_bytes = 0;
                self.over = false;
            }
        }
    }

    /// Follows replies read: complete ones within the budget go to `ready`, the others become
    /// `-REPLYTOOLARGE`.
    fn follow_replies(&mut self, data: &[u8]) -> io::Result<()> {
        let mut data = data;
        while !data.is_empty() {
            let (n, ended) = self.replies.advance(data)?;
            let (part, rest) = data.split_at(n);
            data = rest;
            self.request_bytes = self.request_bytes.saturating_add(n);
            if !self.over && self.request_bytes > self.budget {
                self.over = true;
                self.held = Vec::new();
            }
            if !self.over {
                if ended && self.held.is_empty() {
                    self.ready.extend_from_slice(part);
                } else {
                    self.held.extend_from_slice(part);
                    if ended {
                        // A large reply changes buffers instead of being copied.
                        if self.ready.is_empty() {
                            std::mem::swap(&mut self.ready, &mut self.held);
                        } else {
                            self.ready.extend_from_slice(&self.held);
                            self.held.clear();
                        }
                        if self.held.capacity() > KEEP_CAPACITY {
                            self.held = Vec::new();
                        }
                    }
                }
            }
            if ended {
                if self.over {
                    self.ready.extend_from_slice(TOO_LARGE_REPLY);
                }
                self.request_replies += 1;
                self.next_request();
            }
        }
        Ok(())
    }

    /// [`Bounded::follow_replies`] for bytes that cannot take the request past its budget
    /// (`request_bytes` plus their length is within it), with no reply held: they stay where they
    /// were read, and how many of them end complete replies is returned; the rest is held.
    fn follow_replies_in_place(&mut self, data: &[u8]) -> io::Result<usize> {
        let mut at = 0;
        let mut complete = 0;
        while at < data.len() {
            let (n, ended) = self.replies.advance(&data[at..])?;
            at += n;
            self.request_bytes += n;
            if ended {
                complete = at;
                self.request_replies += 1;
                self.next_request();
            }
        }
        self.held.extend_from_slice(&data[complete..]);
        Ok(complete)
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Bounded<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        loop {
            if this.ready_from < this.ready.len() {
                let n = (this.ready.len() - this.ready_from).min(buf.remaining());
                buf.put_slice(&this.ready[this.ready_from..this.ready_from + n]);
                this.ready_from += n;
                if this.ready_from == this.ready.len() {
                    this.ready.clear();
                    this.ready_from = 0;
                    if this.ready.capacity() > KEEP_CAPACITY {
                        this.ready = Vec::new();
                    }
                }
                return Poll::Ready(Ok(()));
            }
            if this.held.is_empty() {
                // Usually replies are small and whole: they are read into `buf` and left there.
                let before = buf.filled().len();
                match Pin::new(&mut this.inner).poll_read(cx, buf) {
                    Poll::Ready(Ok(())) => {}
                    other => return other,
                }
                let n = buf.filled().len() - before;
                if n == 0 {
                    return Poll::Ready(Ok(()));
                }
                if this.request_bytes.saturating_add(n) <= this.budget {
                    let complete = this.follow_replies_in_place(&buf.filled()[before..])?;
                    buf.set_filled(before + complete);
                    if complete > 0 {
                        return Poll::Ready(Ok(()));
                    }
                } else {
                    let data = buf.filled()[before..].to_vec();
                    buf.set_filled(before);
                    this.follow_replies(&data)?;
                }
                continue;
            }
            let mut chunk = ReadBuf::new(&mut this.chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut chunk) {
                Poll::Ready(Ok(())) => {}
                other => return other,
            }
            let n = chunk.filled().len();
            if n == 0 {
                // End of stream: an incomplete reply is dropped, the reader sees the end.
                return Poll::Ready(Ok(()));
            }
            let data = std::mem::take(&mut this.chunk);
            let result = this.follow_replies(&data[..n]);
            this.chunk = data;
            result?;
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Bounded<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = result {
            self.follow_commands(&buf[..n])?;
        }
        result
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the reader is handed for `replies` read in pieces of `step` bytes, after `commands`
    /// were written.
    fn through(budget: usize, commands: &[u8], replies: &[u8], step: usize) -> Vec<u8> {
        let mut bounded = Bounded::new((), budget);
        bounded.follow_commands(commands).expect("commands");
        for piece in replies.chunks(step) {
            bounded.follow_replies(piece).expect("replies");
        }
        bounded.ready
    }

    const GET: &[u8] = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";

    #[test]
    fn replies_within_the_budget_pass_unchanged_in_any_pieces() {
        let commands = [GET, GET, b"*0\r\n"].concat();
        let replies: &[u8] = b"*3\r\n$3\r\nabc\r\n:12\r\n*-1\r\n%1\r\n+k\r\n_\r\n";
        for step in 1..replies.len() {
            assert_eq!(through(100, &commands, replies, step), replies, "{step}");
        }
    }

    #[test]
    fn a_request_over_the_budget_gets_an_error_per_reply_and_the_next_one_is_served() {
        let commands = [GET, GET, b"*0\r\n", GET, b"*0\r\n"].concat();
        let big = format!("${}\r\n{}\r\n", 40, "x".repeat(40));
        let replies = [big.as_bytes(), big.as_bytes(), b"$2\r\nok\r\n"].concat();
        let want = [big.as_bytes(), TOO_LARGE_REPLY, b"$2\r\nok\r\n"].concat();
        for step in [1, 7, replies.len()] {
            assert_eq!(through(60, &commands, &replies, step), want, "{step}");
        }
    }

    #[test]
    fn replies_read_before_the_mark_is_written_count_for_their_request() {
        let mut bounded = Bounded::new((), 1000);
        bounded.follow_commands(GET).expect("command");
        bounded.follow_replies(b"$1\r\na\r\n").expect("reply");
        bounded.follow_commands(b"*0\r\n").expect("mark");
        bounded.follow_commands(GET).expect("command");
        bounded.follow_commands(b"*0\r\n").expect("mark");
        assert_eq!(bounded.requests, VecDeque::from([1]));
        assert_eq!(bounded.request_replies, 0);
    }

    #[tokio::test]
    async fn a_socket_read_in_any_pieces_hands_on_the_bounded_replies() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let commands = [GET, GET, b"*0\r\n", GET, b"*0\r\n", GET, b"*0\r\n"].concat();
        let big = format!("${}\r\n{}\r\n", 40, "x".repeat(40));
        let array: &[u8] = b"*2\r\n:1\r\n$1\r\na\r\n";
        let replies = [big.as_bytes(), big.as_bytes(), b"$2\r\nok\r\n", array].concat();
        let want = [big.as_bytes(), TOO_LARGE_REPLY, b"$2\r\nok\r\n", array].concat();
        for step in [1, 3, 16, replies.len()] {
            let (ours, mut redis) = tokio::io::duplex(4096);
            let mut bounded = Bounded::new(ours, 60);
            bounded.write_all(&commands).await.expect("write");
            let mut sent = vec![0; commands.len()];
            redis.read_exact(&mut sent).await.expect("commands");
            assert_eq!(sent, commands);
            let replies = replies.clone();
            let feeder = tokio::spawn(async move {
                for piece in replies.chunks(step) {
                    redis.write_all(piece).await.expect("reply");
                    tokio::task::yield_now().await;
                }
            });
            let mut got = Vec::new();
            let mut small = [0u8; 5];
            loop {
                let n = bounded.read(&mut small).await.expect("read");
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&small[..n]);
            }
            feeder.await.expect("feeder");
            assert_eq!(got, want, "pieces of {step}");
        }
    }

    #[test]
    fn nested_and_huge_headers_are_followed() {
        let mut scanner = Scanner::new();
        assert_eq!(
            scanner
                .advance(b"*2\r\n*1\r\n$-1\r\n|1\r\n+a\r\n:1\r\n#t\r\nrest")
                .expect("scan"),
            (29, true)
        );
        assert!(Scanner::new()
            .advance(b"$99999999999999999999999\r\n")
            .is_err());
        assert_eq!(
            Scanner::new().advance(b"$104857600\r\nxx").expect("scan"),
            (14, false)
        );
    }
}
