//! The reactor's byte plumbing: one write queue type for every output stream
//! (the stdio protocol stream, HTTP connections) and one read loop for every
//! input stream (stdin, HTTP connections, pool output).
//!
//! Neither knows the poller: a [`WriteQueue`] keeps the flag saying whether
//! writable events are asked for and tells its owner when to ask or stop
//! asking; [`read_until`] hands each chunk to its caller, who says whether to
//! read on. So both are tested with fakes and pipes, no sockets.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::ops::ControlFlow;
use std::os::fd::RawFd;
use std::rc::Rc;

use serde_json::Value as Json;

use crate::format::json::{self, page::Paged};
use crate::protocol::mcp::structured;

pub(in crate::edge::reactor) use crate::format::json::page::Form;

/// What [`WriteQueue::flush`] achieved.
#[derive(Debug)]
pub(super) enum Flushed {
    /// Everything queued is written; the queue is empty.
    Done,
    /// The destination is full: the rest waits for a writable event.
    Blocked,
    /// A write took no byte (the destination is gone); the queue was dropped.
    Closed,
    /// A write failed; the queue was dropped.
    Failed(io::Error),
}

/// An answer made as the destination drains, after what is queued: bytes
/// held here (an envelope's head and tail) and spans of shared values'
/// texts (a stored result, a finished task's result), held once by their
/// tables and kept alive here until written, so a value freed meanwhile
/// still goes out whole. Each span is made [`STREAM_SLICE`] bytes of text
/// at a time, escaped as it goes where it sits in a JSON string.
#[derive(Debug, Default)]
pub(in crate::edge::reactor) struct Streamed {
    parts: VecDeque<Part>,
    /// Bytes still to be made (what the parts give, in all).
    left: usize,
}

/// A piece of a [`Streamed`] answer.
#[derive(Debug)]
enum Part {
    Bytes(Vec<u8>),
    /// Bytes `at..to` of the value's text, written as `form` says.
    Text {
        value: Rc<Paged>,
        at: usize,
        to: usize,
        form: Form,
    },
}

/// Bytes of a streamed text made into the queue at a time.
pub(super) const STREAM_SLICE: usize = 64 * 1024;

impl Streamed {
    pub(in crate::edge::reactor) fn new() -> Streamed {
        Streamed::default()
    }

    /// Appends bytes held here.
    pub(in crate::edge::reactor) fn bytes(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.left += bytes.len();
        match self.parts.back_mut() {
            Some(Part::Bytes(last)) => last.extend_from_slice(bytes),
            _ => self.parts.push_back(Part::Bytes(bytes.to_vec())),
        }
    }

    /// Appends bytes `range` of `value`'s text, written as `form` says
    /// (the range starts and ends between characters, and for `Decoded`
    /// between those of the string's body).
    pub(in crate::edge::reactor) fn text(
        &mut self,
        value: &Rc<Paged>,
        range: std::ops::Range<usize>,
        form: Form,
    ) {
        // A string's body escaped as the server escapes is its own page,
        // escaped: written as it is, not decoded and escaped again.
        let form = match form {
            Form::Decoded if value.canonical(range.clone()) => Form::Raw,
            other => other,
        };
        let text = &value.text()[range.clone()];
        self.left += match form {
            Form::Raw => text.len(),
            Form::Escaped => json::str_body_len(text),
            Form::Decoded => {
                let (mut at, mut len, mut chars) = (range.start, 0, String::new());
                while at < range.end {
                    chars.clear();
                    at = value.decode(at, range.end, STREAM_SLICE, &mut chars);
                    len += json::str_body_len(&chars);
                }
                len
            }
        };
        self.parts.push_back(Part::Text {
            value: Rc::clone(value),
            at: range.start,
            to: range.end,
            form,
        });
    }

    /// `msg` as the structured writer writes it, with `value`'s text held
    /// apart from it going where `at` says (`structured::Apart`): the
    /// message's bytes held here, the text's spans made from `value`.
    pub(in crate::edge::reactor) fn apart(msg: &Json, at: &[&str], value: &Rc<Paged>) -> Streamed {
        let apart = structured::Apart {
            at,
            len: value.bytes(),
        };
        let mut streamed = Streamed::new();
        for part in structured::parts(msg, apart) {
            match part {
                structured::Part::Bytes(bytes) => streamed.bytes(&bytes),
                structured::Part::Text(range, form) => streamed.text(value, range, form),
            }
        }
        streamed
    }

    /// The bytes this answer holds itself (its envelope), not yet out.
    fn owned(&self) -> usize {
        let own = |p: &Part| match p {
            Part::Bytes(bytes) => bytes.len(),
            Part::Text { .. } => 0,
        };
        self.parts.iter().map(own).sum()
    }

    /// The bytes the answer has in all, before any is made.
    pub(in crate::edge::reactor) fn len(&self) -> usize {
        self.left
    }

    /// The answer without its values: the bytes held here, each raw span a
    /// `null` (each other one sits in a string, left empty), so a JSON
    /// answer still reads as JSON (for its access line's outcome).
    pub(in crate::edge::reactor) fn skeleton(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for part in &self.parts {
            match part {
                Part::Bytes(bytes) => out.extend_from_slice(bytes),
                Part::Text {
                    form: Form::Raw, ..
                } => out.extend_from_slice(b"null"),
                Part::Text { .. } => {}
            }
        }
        out
    }

    /// Appends the next piece to `out`: the next bytes, or up to a slice
    /// of a text; false once everything is out.
    fn next_into(&mut self, out: &mut Vec<u8>) -> bool {
        let before = out.len();
        match self.parts.front_mut() {
            None => return false,
            Some(Part::Bytes(bytes)) => out.append(bytes),
            Some(Part::Text {
                value,
                at,
                to,
                form,
            }) => {
                let text = value.text();
                let mut end = (*at + STREAM_SLICE).min(*to);
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                let mut piece = String::new();
                match form {
                    Form::Raw => out.extend_from_slice(&text.as_bytes()[*at..end]),
                    Form::Escaped => json::write_str_body(&mut piece, &text[*at..end]),
                    Form::Decoded => {
                        let mut chars = String::with_capacity(STREAM_SLICE);
                        end = value.decode(*at, *to, STREAM_SLICE, &mut chars);
                        json::write_str_body(&mut piece, &chars);
                    }
                }
                out.extend_from_slice(piece.as_bytes());
                *at = end;
            }
        }
        self.left = self.left.saturating_sub(out.len() - before);
        if matches!(self.parts.front(), Some(Part::Bytes(b)) if b.is_empty())
            || matches!(self.parts.front(), Some(Part::Text { at, to, .. }) if at >= to)
        {
            self.parts.pop_front();
        }
        true
    }
}

/// Bytes waiting to be written to one non-blocking destination: what is
/// queued, how much of it is already out, and whether its owner asked the
/// poller for writable events.
#[derive(Debug, Default)]
pub(super) struct WriteQueue {
    buf: Vec<u8>,
    written: usize,
    /// Output still to be made once `buf` is written.
    streamed: Option<Streamed>,
    /// Writable events are asked for (see [`WriteQueue::arm`]).
    armed: bool,
    /// Once empty, a buffer of more capacity than this is freed (0: kept).
    keep_capacity: usize,
}

impl WriteQueue {
    /// A queue that frees its buffer, once empty, when a big write left it
    /// with more than `keep_capacity` bytes of capacity (0: never).
    pub(super) fn new(keep_capacity: usize) -> WriteQueue {
        WriteQueue {
            keep_capacity,
            ..WriteQueue::default()
        }
    }

    /// The buffer to append output to.
    pub(super) fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// Output to make once what is queued is written (one at a time).
    pub(super) fn stream(&mut self, streamed: Streamed) {
        debug_assert!(self.streamed.is_none());
        self.streamed = Some(streamed);
    }

    /// The answer bytes not yet out (written ones of the buffer included,
    /// until it empties): what the bounds on unread answers count. A
    /// streamed answer counts the bytes it is still to make, though only
    /// a slice of them is held at a time.
    pub(super) fn held(&self) -> usize {
        self.buf.len() + self.streamed.as_ref().map_or(0, Streamed::len)
    }

    /// Of [`WriteQueue::held`], the bytes held in memory here: the buffer
    /// and a streamed answer's own bytes, not the stored values it is
    /// made from (held once, by their tables): what a memory budget counts.
    pub(super) fn in_memory(&self) -> usize {
        self.buf.len() + self.streamed.as_ref().map_or(0, Streamed::owned)
    }

    /// Whether nothing is left to write.
    pub(super) fn is_drained(&self) -> bool {
        self.written >= self.buf.len() && self.streamed.is_none()
    }

    /// Writes as much as `dst` takes, retrying interrupted writes; a
    /// streamed value is made a slice at a time as the writes go through.
    pub(super) fn flush(&mut self, dst: &mut impl Write) -> Flushed {
        loop {
            if let Some(done) = self.write_buf(dst) {
                return done;
            }
            let Some(streamed) = self.streamed.as_mut() else {
                break;
            };
            self.buf.clear();
            self.written = 0;
            if !streamed.next_into(&mut self.buf) {
                self.streamed = None;
            }
        }
        self.clear();
        Flushed::Done
    }

    /// Writes what `buf` holds; `None` once all of it is written.
    fn write_buf(&mut self, dst: &mut impl Write) -> Option<Flushed> {
        while self.written < self.buf.len() {
            match dst.write(&self.buf[self.written..]) {
                Ok(0) => {
                    self.clear();
                    return Some(Flushed::Closed);
                }
                Ok(n) => self.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Some(Flushed::Blocked),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.clear();
                    return Some(Flushed::Failed(e));
                }
            }
        }
        None
    }

    /// Drops everything queued (the capacity too, past `keep_capacity`).
    pub(super) fn clear(&mut self) {
        self.buf.clear();
        self.written = 0;
        self.streamed = None;
        if self.keep_capacity > 0 && self.buf.capacity() > self.keep_capacity {
            self.buf = Vec::new();
        }
    }

    /// Notes that writable events are wanted; true when they were not yet
    /// (the owner then asks the poller for them).
    pub(super) fn arm(&mut self) -> bool {
        !std::mem::replace(&mut self.armed, true)
    }

    /// Notes that writable events are no longer wanted; true when they were
    /// (the owner then tells the poller).
    pub(super) fn disarm(&mut self) -> bool {
        std::mem::replace(&mut self.armed, false)
    }
}

/// How a [`read_until`] loop ended.
#[derive(Debug)]
pub(super) enum ReadEnd {
    /// Nothing more to read for now (`WouldBlock`).
    Drained,
    /// The caller stopped it.
    Stopped,
    /// End of input.
    Eof,
    /// A read failed.
    Failed(io::Error),
}

/// Reads `src` into `buf` and hands each chunk to `take`, until the source
/// would block, ends or fails, or `take` breaks. Interrupted reads are
/// retried. Whatever bounds a caller keeps (buffer caps, one chunk per turn)
/// it applies in `take`.
pub(super) fn read_until<R: Read + ?Sized>(
    src: &mut R,
    buf: &mut [u8],
    mut take: impl FnMut(&[u8]) -> ControlFlow<()>,
) -> ReadEnd {
    loop {
        match src.read(buf) {
            Ok(0) => return ReadEnd::Eof,
            Ok(n) => {
                if take(&buf[..n]).is_break() {
                    return ReadEnd::Stopped;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return ReadEnd::Drained,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return ReadEnd::Failed(e),
        }
    }
}

/// Reads a descriptor owned elsewhere (stdin, a pool's output pipe) without
/// borrowing its owner, so the reader's callback may use the reactor.
pub(super) struct RawReader(pub(super) RawFd);

impl Read for RawReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: `buf` is a valid writable buffer of that length; reading a
        // descriptor touches no memory of ours beyond it.
        let n = crate::edge::proc::syscall!(read(self.0, buf.as_mut_ptr().cast(), buf.len()))?;
        Ok(n as usize)
    }
}

#[cfg(test)]
mod tests;
