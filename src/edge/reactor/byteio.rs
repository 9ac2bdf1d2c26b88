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

/// Bytes waiting to be written to one non-blocking destination: what is
/// queued, how much of it is already out, and whether its owner asked the
/// poller for writable events.
#[derive(Debug, Default)]
pub(super) struct WriteQueue {
    buf: Vec<u8>,
    written: usize,
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

    /// The bytes the queue holds (written ones included, until it empties):
    /// what a memory budget counts.
    pub(super) fn held(&self) -> usize {
        self.buf.len()
    }

    /// Whether nothing is left to write.
    pub(super) fn is_drained(&self) -> bool {
        self.written >= self.buf.len()
    }

    /// Writes as much as `dst` takes, retrying interrupted writes.
    pub(super) fn flush(&mut self, dst: &mut impl Write) -> Flushed {
        while self.written < self.buf.len() {
            match dst.write(&self.buf[self.written..]) {
                Ok(0) => {
                    self.clear();
                    return Flushed::Closed;
                }
                Ok(n) => self.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Flushed::Blocked,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.clear();
                    return Flushed::Failed(e);
                }
            }
        }
        self.clear();
        Flushed::Done
    }

    /// Drops everything queued (the capacity too, past `keep_capacity`).
    pub(super) fn clear(&mut self) {
        self.buf.clear();
        self.written = 0;
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
