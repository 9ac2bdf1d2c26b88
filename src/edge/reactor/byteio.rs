//! The reactor's byte plumbing: one write queue type for every output stream
//! (the stdio protocol stream, HTTP connections) and one read loop for every
//! input stream (stdin, HTTP connections, pool output).
//!
//! Neither knows the poller: a [`WriteQueue`] keeps the flag saying whether
//! writable events are asked for and tells its owner when to ask or stop
//! asking; [`read_until`] hands each chunk to its caller, who says whether to
//! read on. So both are tested with fakes and pipes, no sockets.

use std::io::{self, Read, Write};
use std::ops::ControlFlow;
use std::os::fd::RawFd;
use std::rc::Rc;

use crate::format::json::{self, page::Paged};

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

/// Output made as the destination drains, after what is queued: the body
/// of a JSON string holding a shared value's text (a stored result, held
/// once by its table), escaped [`STREAM_SLICE`] bytes of text at a time,
/// then `after`.
#[derive(Debug)]
pub(in crate::edge::reactor) struct Streamed {
    value: Rc<Paged>,
    /// The next byte of the value's text to escape.
    at: usize,
    after: Vec<u8>,
}

/// Bytes of a streamed text escaped into the queue at a time.
const STREAM_SLICE: usize = 64 * 1024;

impl Streamed {
    pub(in crate::edge::reactor) fn new(value: Rc<Paged>, after: Vec<u8>) -> Streamed {
        Streamed {
            value,
            at: 0,
            after,
        }
    }

    /// Appends the next slice to `out`; false once everything is out.
    fn next_into(&mut self, out: &mut Vec<u8>) -> bool {
        let text = self.value.text();
        if self.at >= text.len() {
            out.append(&mut self.after);
            return false;
        }
        let mut end = (self.at + STREAM_SLICE).min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let mut escaped = String::with_capacity(end - self.at + 64);
        json::write_str_body(&mut escaped, &text[self.at..end]);
        out.extend_from_slice(escaped.as_bytes());
        self.at = end;
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

    /// The bytes the queue holds (written ones included, until it empties):
    /// what a memory budget counts. A streamed value is not counted: it
    /// is the result table's, held once, and only a slice of it at a time
    /// is here.
    pub(super) fn held(&self) -> usize {
        self.buf.len() + self.streamed.as_ref().map_or(0, |s| s.after.len())
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
        let n = unsafe { libc::read(self.0, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
}

#[cfg(test)]
mod tests;
