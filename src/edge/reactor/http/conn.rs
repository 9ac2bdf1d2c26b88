//! One HTTP connection: its socket, what it has received and not handled,
//! its output queue, the request it is busy with, and how it ends.
//!
//! The state is private to this module; `HttpFront` drives a connection
//! through the small API here (read, parse the next request, queue and
//! flush output, timers) and decides what the requests mean.

use std::borrow::Cow;
use std::net::{IpAddr, Shutdown};
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Interest, Registry, Token};

use super::peers::Unread;
use super::{KEEP_ALIVE, KEEP_CAPACITY, LINGER, LINGER_BYTES, MAX_BUFFERED};
use crate::edge::reactor::byteio::{read_until, Flushed, ReadEnd, Streamed, WriteQueue};
use crate::protocol::http::{self, Framing, HttpError, Parser, Progress, Request};
use crate::protocol::jsonrpc;
use crate::protocol::mcp;
use crate::protocol::mcp::call::Outgoing;
use serde_json::Value as Json;

/// The head of an answer: its status, content type, header fields and
/// whether the connection stays open after it.
pub(in crate::edge::reactor) struct Head<'a> {
    pub(in crate::edge::reactor) status: u16,
    pub(in crate::edge::reactor) content_type: Option<&'a str>,
    pub(in crate::edge::reactor) headers: &'a [(String, String)],
    pub(in crate::edge::reactor) keep_alive: bool,
}

/// What follows an answer's head.
pub(in crate::edge::reactor) enum Content<'a> {
    /// A body held whole.
    Body(&'a [u8]),
    /// A JSON-RPC message (or a call's response), serialized straight into
    /// the connection's buffer, its length counted first: a large result is
    /// not held a third time as an intermediate string.
    Json(&'a Outgoing<'a>),
    /// A body made from the store as the socket drains: its envelope
    /// held, the stored texts in it escaped into the queue a slice at a
    /// time (`byteio::Streamed`), so the answer is never held whole.
    Streamed(Streamed),
    /// No head: the end of the event stream already open, after its last
    /// event (if any).
    StreamEnd(Option<&'a Json>),
}

/// A request waiting for its tool call, or a long-lived subscription.
pub(super) struct Busy {
    /// The legacy session; empty for a modern request.
    pub(super) session: String,
    /// Streaming `text/event-stream` (head already written).
    pub(super) sse: bool,
    pub(super) keep_alive: bool,
    pub(super) cors: Vec<(String, String)>,
    /// A modern request: closing the connection cancels it, and its answer
    /// gets the modern status.
    pub(super) modern: bool,
    /// A modern `subscriptions/listen` stream: its request id, and when the
    /// next keep-alive comment is due.
    pub(super) listen: Option<(jsonrpc::RequestId, Instant)>,
}

/// What becomes of a connection once its output is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Then {
    KeepOpen,
    Close,
    /// The answer refuses the request: shut the write side, then drop input
    /// for a moment (`LINGER`) before closing.
    Linger,
}

/// Received bytes not yet handled, and the parser they go through.
struct Input {
    parser: Parser,
    buf: Vec<u8>,
    /// Bytes of `buf` already given to the parser; dropped from the front
    /// once they are half the buffer, so consuming many small pipelined
    /// requests costs linear time.
    pos: usize,
    /// The declared body length of the request being received, admitted
    /// against the budget when its head was checked.
    reserved: usize,
    /// When the first byte of the request being received arrived.
    started: Option<Instant>,
}

impl Input {
    fn new() -> Input {
        Input {
            parser: Parser::new(http::Limits::default()),
            buf: Vec::new(),
            pos: 0,
            reserved: 0,
            started: None,
        }
    }

    fn unparsed(&self) -> usize {
        self.buf.len() - self.pos
    }
}

pub(in crate::edge::reactor) struct Conn {
    stream: TcpStream,
    input: Input,
    /// `pump` is running for this connection; nested calls return at once.
    pumping: bool,
    out: WriteQueue,
    busy: Option<Busy>,
    then: Then,
    last_active: Instant,
    /// The peer closed its side; answer what is pending, then close.
    peer_closed: bool,
    /// The request being answered is a HEAD: its response has no body.
    head_request: bool,
    /// The peer's address (IPv4-mapped IPv6 as IPv4).
    peer: IpAddr,
    /// What this connection was last counted for: its input (in the
    /// budget) and its unread answers (its address's, see `peers`).
    held: Held,
    /// Not read, for backpressure (see `peers`).
    paused: bool,
    /// Lingering after a refusal: until when, and the bytes dropped so far.
    linger: Option<(Instant, usize)>,
    /// Under OAuth, whom the request being served speaks for (`None` for
    /// the static token's holders).
    principal: Option<crate::protocol::oauth::Principal>,
}

/// What a connection holds: its input (buffered, and its request body) and
/// its answers not yet written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Held {
    pub(super) input: usize,
    pub(super) output: Unread,
}

/// What the next buffered bytes of a connection gave.
pub(super) enum Parsed {
    /// Nothing to parse now: the connection is busy with a request, has
    /// output pending, is closing, or holds no unparsed input.
    Idle,
    /// Input was taken (`used`) and the request is still incomplete;
    /// `chunked`: its head is in and its body is chunked (so it is counted
    /// against the budget as it grows).
    NeedMore { used: bool, chunked: bool },
    /// A request's head is complete and none of its body was taken;
    /// `expect_continue`: the client waits for `100 Continue`.
    Head { expect_continue: bool },
    /// A complete request.
    Request(Request),
    /// A malformed request.
    Bad(HttpError),
}

/// How a flush left the connection.
pub(super) enum Flush {
    /// Output is still pending.
    Pending,
    /// Writing failed: the connection is dead.
    Failed,
    /// Everything is written and the connection stays open.
    Open,
    /// Everything is written and the connection is to be closed.
    Close,
    /// Everything is written, the write side is shut and input is dropped
    /// until the linger ends.
    Lingering,
}

/// How long a request may take to arrive (`--request-timeout`) and an idle
/// keep-alive connection may stay open (`--idle-timeout`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Timeouts {
    pub(super) request: Duration,
    pub(super) idle: Duration,
}

/// What is due on a connection at a timer tick.
pub(super) enum Due {
    Nothing,
    /// The request being read is late: answer 408.
    Late,
    /// Idle (or lingering) too long: close.
    Idle,
    /// A listen stream's keep-alive comment.
    Quiet,
}

/// What a connection needs once a pump ends.
pub(super) enum AfterPump {
    Keep,
    Close,
    /// The client gave up on its request: cancel the call, then close.
    CancelAndClose,
}

impl Conn {
    pub(super) fn new(stream: TcpStream, peer: IpAddr) -> Conn {
        Conn {
            stream,
            input: Input::new(),
            pumping: false,
            out: WriteQueue::new(KEEP_CAPACITY),
            busy: None,
            then: Then::KeepOpen,
            last_active: Instant::now(),
            peer_closed: false,
            head_request: false,
            peer,
            held: Held::default(),
            paused: false,
            linger: None,
            principal: None,
        }
    }

    pub(super) fn peer(&self) -> IpAddr {
        self.peer
    }

    /// Counts again what the connection holds (its buffers and its request
    /// body, at least the length admitted for it); returns (before, now).
    pub(super) fn recount(&mut self) -> (Held, Held) {
        let input = &self.input;
        // Body bytes still waiting in the input buffer are counted there,
        // not twice.
        let body_len = input.parser.body_len();
        let body = input.reserved.max(body_len);
        let waiting = input
            .unparsed()
            .min(input.reserved.saturating_sub(body_len));
        let held = Held {
            input: input.buf.len() + body - waiting,
            output: Unread {
                bytes: self.out.held(),
                held: self.out.in_memory(),
            },
        };
        (std::mem::replace(&mut self.held, held), held)
    }

    /// What the connection was last counted for.
    pub(super) fn held(&self) -> Held {
        self.held
    }

    /// Answer bytes queued now.
    pub(super) fn unread(&self) -> usize {
        self.out.held()
    }

    /// Marks the connection paused or not; true when that changed.
    pub(super) fn set_paused(&mut self, paused: bool) -> bool {
        std::mem::replace(&mut self.paused, paused) != paused
    }

    pub(super) fn is_paused(&self) -> bool {
        self.paused
    }

    pub(super) fn deregister(&mut self, registry: &Registry) {
        let _ = registry.deregister(&mut self.stream);
    }

    /// Marks a pump as running; false if one already is.
    pub(super) fn start_pump(&mut self) -> bool {
        !std::mem::replace(&mut self.pumping, true)
    }

    /// Ends a pump: what the connection needs now.
    pub(super) fn end_pump(&mut self) -> AfterPump {
        self.pumping = false;
        if self.peer_closed && self.busy.is_none() && self.out.is_drained() {
            // Every complete request has been answered; what is left (if
            // anything) can never be completed.
            AfterPump::Close
        } else if self.peer_closed && self.busy.as_ref().is_some_and(|b| !b.sse || b.modern) {
            // For a modern request closing its stream is the way to cancel
            // it, events or not.
            AfterPump::CancelAndClose
        } else {
            AfterPump::Keep
        }
    }

    /// Reads until the socket would block, the peer closes, or the buffer
    /// holds `MAX_BUFFERED` unparsed bytes; while no request head is
    /// complete, one read at most. Returns whether anything changed.
    pub(super) fn read_in(&mut self, buf: &mut [u8]) -> bool {
        let lingering = self.linger.is_some();
        if self.peer_closed || (!lingering && self.input.unparsed() >= MAX_BUFFERED) {
            return false;
        }
        let mut changed = false;
        let end = read_until(&mut self.stream, buf, |chunk| {
            // After a refusal, what still comes is dropped unread, up to a
            // point; then the connection is treated as closed.
            if let Some((_, dropped)) = self.linger.as_mut() {
                *dropped += chunk.len();
                if *dropped >= LINGER_BYTES {
                    self.peer_closed = true;
                    changed = true;
                    return ControlFlow::Break(());
                }
                return ControlFlow::Continue(());
            }
            self.input.buf.extend_from_slice(chunk);
            let now = Instant::now();
            self.last_active = now;
            // The request deadline runs from the first byte of anything,
            // blank lines included, so a client cannot hold the connection
            // by dribbling line endings.
            if self.busy.is_none() {
                self.input.started.get_or_insert(now);
            }
            changed = true;
            // Until a head is complete, one read at a time: the caller
            // parses it, so at most one read's worth of a body arrives
            // before its head is checked.
            if self.input.parser.head().is_none() || self.input.unparsed() >= MAX_BUFFERED {
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        });
        match end {
            ReadEnd::Drained | ReadEnd::Stopped => changed,
            ReadEnd::Eof => {
                self.peer_closed = true;
                true
            }
            ReadEnd::Failed(_) => {
                self.peer_closed = true;
                self.input.buf.clear();
                self.input.pos = 0;
                true
            }
        }
    }

    /// Parses the next buffered bytes while the connection is free (no
    /// call running, no output pending, not closing).
    pub(super) fn parse_next(&mut self) -> Parsed {
        let input = &mut self.input;
        if self.busy.is_some()
            || !self.out.is_drained()
            || self.then != Then::KeepOpen
            || input.pos >= input.buf.len()
        {
            return Parsed::Idle;
        }
        match input.parser.advance(&input.buf[input.pos..]) {
            Ok((Progress::NeedMore, used)) => {
                input.pos += used;
                if used > 0 {
                    input.started.get_or_insert_with(Instant::now);
                }
                // A declared length is admitted whole when the head is
                // checked; a chunked body is counted as it grows.
                let chunked = input.parser.head().is_some() && input.reserved == 0;
                Parsed::NeedMore {
                    used: used > 0,
                    chunked,
                }
            }
            Ok((progress @ (Progress::Head | Progress::Continue), used)) => {
                input.pos += used;
                input.started.get_or_insert_with(Instant::now);
                Parsed::Head {
                    expect_continue: progress == Progress::Continue,
                }
            }
            Ok((Progress::Done(request), used)) => {
                input.pos += used;
                input.reserved = 0;
                input.started = None;
                self.head_request = request.method == "HEAD";
                Parsed::Request(request)
            }
            Err(e) => {
                self.head_request = false;
                Parsed::Bad(e)
            }
        }
    }

    /// Drops the parsed bytes from the front of the input buffer once they
    /// are half of it (and frees a big buffer once empty).
    pub(super) fn compact_input(&mut self) {
        let input = &mut self.input;
        if input.pos > 0 && input.pos * 2 >= input.buf.len() {
            input.buf.drain(..input.pos);
            input.pos = 0;
            if input.buf.is_empty() && input.buf.capacity() > KEEP_CAPACITY {
                input.buf = Vec::new();
            }
        }
    }

    /// The head of the request being received, once complete.
    pub(super) fn head(&self) -> Option<&Request> {
        self.input.parser.head()
    }

    /// How many more bytes of the declared body are to come (at least 1
    /// for a declared body; 0 for none or a chunked one).
    pub(super) fn body_due(&self) -> u64 {
        let unparsed = self.input.unparsed() as u64;
        let declared = self.input.parser.declared_body();
        declared.map_or(0, |d| d.saturating_sub(unparsed).max(1))
    }

    /// Admits the declared body against the budget (see `recount`).
    pub(super) fn reserve_body(&mut self) {
        let declared = self.input.parser.declared_body();
        self.input.reserved = declared.map_or(0, |d| usize::try_from(d).unwrap_or(usize::MAX));
    }

    /// Whether the whole declared body is already in the input buffer.
    pub(super) fn body_is_here(&self) -> bool {
        let unparsed = self.input.unparsed() as u64;
        let declared = self.input.parser.declared_body();
        declared.is_some_and(|n| n <= unparsed)
    }

    /// Drops what is buffered of the request being refused; once the
    /// refusal is written, the connection lingers and closes.
    pub(super) fn refuse(&mut self) {
        self.input = Input::new();
        self.then = Then::Linger;
    }

    /// Forgets the late request being read (its 408 follows).
    pub(super) fn expire_request(&mut self) {
        self.input.started = None;
        self.head_request = false;
    }

    /// The output buffer, to append a response to.
    pub(super) fn out(&mut self) -> &mut Vec<u8> {
        self.out.buf()
    }

    /// Queues output made as the socket drains, after what is queued.
    pub(super) fn stream_out(&mut self, streamed: Streamed) {
        self.out.stream(streamed);
    }

    /// Nothing running and nothing left to write.
    pub(super) fn is_quiet(&self) -> bool {
        self.out.is_drained() && self.busy.is_none()
    }

    /// The request being answered is a HEAD.
    pub(super) fn is_head_request(&self) -> bool {
        self.head_request
    }

    /// Closes the connection once its output is written.
    pub(super) fn close_after_write(&mut self) {
        if self.then == Then::KeepOpen {
            self.then = Then::Close;
        }
    }

    pub(super) fn busy(&self) -> Option<&Busy> {
        self.busy.as_ref()
    }

    pub(super) fn set_busy(&mut self, busy: Busy) {
        self.busy = Some(busy);
    }

    /// Queues an answer (a HEAD request gets the same head and no content;
    /// see RFC 9110 section 9.3.2), closing after it unless `keep_alive`.
    /// Its status, and what the access line reads of its body (a streamed
    /// one's skeleton).
    pub(super) fn queue_answer<'c>(
        &mut self,
        head: Head<'_>,
        content: Content<'c>,
    ) -> (u16, Option<Cow<'c, [u8]>>) {
        let Head {
            status,
            content_type,
            headers,
            keep_alive,
        } = head;
        let refs = header_refs(headers);
        let bare = self.is_head_request();
        let mut sniff = None;
        match content {
            Content::Body(body) => {
                if bare {
                    let length = Some(body.len());
                    http::write_head(self.out(), status, content_type, length, &refs, keep_alive);
                } else {
                    http::write_response(self.out(), status, content_type, &refs, body, keep_alive);
                }
                sniff = Some(Cow::Borrowed(body));
            }
            Content::Json(msg) => {
                let length = Some(msg.length());
                http::write_head(self.out(), status, content_type, length, &refs, keep_alive);
                if !bare {
                    msg.write(self.out());
                }
            }
            Content::Streamed(streamed) => {
                let length = Some(streamed.len());
                http::write_head(self.out(), status, content_type, length, &refs, keep_alive);
                // The access line reads the outcome from the message
                // without its values (a small one).
                sniff = Some(Cow::Owned(streamed.skeleton()));
                if !bare {
                    self.stream_out(streamed);
                }
            }
            Content::StreamEnd(last) => {
                if let Some(msg) = last {
                    let text = mcp::structured::to_string(msg);
                    http::write_sse_message(self.out(), &text);
                }
                http::write_last_chunk(self.out());
            }
        }
        if !keep_alive {
            self.close_after_write();
        }
        (status, sniff)
    }

    /// Holds this connection for the answer of a tool call framed so; an
    /// event stream's head goes out first when the framing says so.
    pub(super) fn open_call(&mut self, framing: Framing) {
        if framing.sse {
            let refs = header_refs(&framing.headers);
            http::write_sse_head(self.out(), &refs, framing.keep_alive);
        }
        self.set_busy(Busy {
            session: framing.session,
            sse: framing.sse,
            keep_alive: framing.keep_alive,
            cors: framing.headers,
            modern: framing.modern,
            listen: None,
        });
    }

    /// Holds this connection for the event stream of `subscriptions/listen`
    /// request `id`, its head and acknowledgement `ack` written.
    pub(super) fn open_listen(
        &mut self,
        framing: Framing,
        id: &jsonrpc::RequestId,
        ack: &serde_json::Value,
    ) {
        let refs = header_refs(&framing.headers);
        http::write_sse_head(self.out(), &refs, framing.keep_alive);
        http::write_sse_message(self.out(), &crate::format::json::text(ack));
        self.set_busy(Busy {
            session: String::new(),
            sse: true,
            keep_alive: framing.keep_alive,
            cors: framing.headers,
            modern: true,
            listen: Some((id.clone(), Instant::now() + KEEP_ALIVE)),
        });
    }

    /// Sets whom the request being served speaks for (under OAuth).
    #[cfg_attr(not(feature = "oauth"), allow(dead_code))]
    pub(super) fn set_principal(&mut self, p: Option<crate::protocol::oauth::Principal>) {
        self.principal = p;
    }

    pub(super) fn principal(&self) -> Option<&crate::protocol::oauth::Principal> {
        self.principal.as_ref()
    }

    pub(super) fn take_busy(&mut self) -> Option<Busy> {
        self.busy.take()
    }

    /// Whether the request waiting here is an event stream.
    pub(super) fn streaming(&self) -> bool {
        self.busy.as_ref().is_some_and(|b| b.sse)
    }

    /// Writes what the socket takes; asks for writable events while output
    /// waits (and stops asking once it is out).
    pub(super) fn flush(&mut self, registry: &Registry, token: Token) -> Flush {
        match self.out.flush(&mut self.stream) {
            Flushed::Blocked => {
                if self.out.arm() {
                    let both = Interest::READABLE | Interest::WRITABLE;
                    let _ = registry.reregister(&mut self.stream, token, both);
                }
                return Flush::Pending;
            }
            Flushed::Failed(_) => return Flush::Failed,
            Flushed::Done | Flushed::Closed => {}
        }
        if self.out.disarm() {
            let _ = registry.reregister(&mut self.stream, token, Interest::READABLE);
        }
        match self.then {
            Then::KeepOpen => Flush::Open,
            Then::Close => Flush::Close,
            Then::Linger => {
                // The client may still be sending the refused request: shut
                // our side, then drop its input for a moment before closing.
                self.then = Then::KeepOpen;
                let _ = self.stream.shutdown(Shutdown::Write);
                self.linger = Some((Instant::now() + LINGER, 0));
                self.input = Input::new();
                Flush::Lingering
            }
        }
    }

    /// When the connection's next timer is due (see `due`).
    pub(super) fn deadline(&self, timeouts: Timeouts) -> Option<Instant> {
        let listen = self.busy.as_ref().and_then(|b| b.listen.as_ref());
        let linger = self.linger.map(|(at, _)| at);
        let timers = [listen.map(|(_, at)| *at), linger];
        if listen.is_some() || linger.is_some() {
            return timers.into_iter().flatten().min();
        }
        match (self.busy.is_some(), self.input.started) {
            (true, _) => None,
            (false, Some(start)) => Some(start + timeouts.request),
            (false, None) => Some(self.last_active + timeouts.idle),
        }
    }

    /// What is due at `now`.
    pub(super) fn due(&self, now: Instant, timeouts: Timeouts) -> Due {
        let request_timeout = timeouts.request;
        if let Some((at, _)) = self.linger {
            return if now >= at { Due::Idle } else { Due::Nothing };
        }
        if let Some((_, at)) = self.busy.as_ref().and_then(|b| b.listen.as_ref()) {
            return if now >= *at { Due::Quiet } else { Due::Nothing };
        }
        if self.busy.is_some() {
            return Due::Nothing;
        }
        match self.input.started {
            // Only line endings so far: no request to answer, just close.
            Some(start) if now >= start + request_timeout && self.input.parser.is_idle() => {
                Due::Idle
            }
            Some(start) if now >= start + request_timeout => Due::Late,
            None if now >= self.last_active + timeouts.idle => Due::Idle,
            _ => Due::Nothing,
        }
    }

    /// Queues a listen stream's keep-alive comment and sets the next one.
    pub(super) fn keep_alive(&mut self, now: Instant) {
        if let Some((_, at)) = self.busy.as_mut().and_then(|b| b.listen.as_mut()) {
            *at = now + KEEP_ALIVE;
        }
        http::write_sse_comment(self.out.buf());
    }
}

#[cfg(test)]
mod tests;

/// Header fields as the response writers take them.
fn header_refs(headers: &[(String, String)]) -> Vec<(&str, &str)> {
    headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}
