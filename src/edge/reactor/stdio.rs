//! The stdio transport: newline-delimited JSON-RPC read from stdin and
//! written to the protocol stream (a private copy of the original stdout).
//!
//! [`Stdio`] owns the client's session, its input framing and its output
//! queue; the reactor hands it stdin and stdout events. Input is left unread
//! while too much output is queued (a client that does not read its answers
//! cannot make the server buffer without bound), and resumed once the queue
//! drains. When stdin ends, calls still running get `EOF_GRACE` to finish.

use std::fs::File;
use std::io;
use std::ops::ControlFlow;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Interest, Poll};

use super::apply::Origin;
use super::byteio::{read_until, Flushed, RawReader, ReadEnd, WriteQueue};
use super::obs::{Access, StdioAccess};
use super::{Reactor, SCRATCH_LEN, STDIN, STDOUT};
use crate::edge::log;
use crate::edge::proc::{self, syscall};
use crate::protocol::jsonrpc::{self, Frame, LineFramer, RequestId};
use crate::protocol::mcp::call::Outgoing;
use crate::protocol::mcp::{self, Catalog, Session, Step};

/// Stop reading stdin while this much output is queued (client not reading).
const MAX_PENDING_OUTPUT: usize = 16 * 1024 * 1024;
/// After stdin closes, calls still running get this long to finish (so a
/// piped script gets its answers); then they are abandoned and we exit.
const EOF_GRACE: Duration = Duration::from_secs(5);

/// The stdio client: its session, its input framing and its output queue.
pub(super) struct Stdio {
    session: Session,
    out: File,
    queue: WriteQueue,
    /// The output fd is registered with the poller (epoll refuses regular files).
    out_pollable: bool,
    stdin_pollable: bool,
    stdin_open: bool,
    /// Set when stdin reaches EOF: the latest time to exit.
    eof_deadline: Option<Instant>,
    /// A message has been handled (eager pools may start).
    answered_any: bool,
    /// Input was left unread while too much output was queued.
    stdin_paused: bool,
    framer: LineFramer,
    /// The open access records of requests (`obs`).
    access: StdioAccess,
}

impl Stdio {
    pub(super) fn new(poll: &Poll, out: OwnedFd) -> io::Result<Stdio> {
        // stdin: a pipe or tty is polled; epoll refuses regular files and
        // /dev/null (EPERM), which are then read directly: they never block.
        let stdin_pollable =
            match poll
                .registry()
                .register(&mut SourceFd(&0), STDIN, Interest::READABLE)
            {
                Ok(()) => {
                    proc::set_nonblocking(borrow_fd(0))?;
                    true
                }
                Err(e) if e.raw_os_error() == Some(libc::EPERM) => false,
                Err(e) => return Err(e),
            };
        let out_fd = out.as_raw_fd();
        let out_pollable =
            match poll
                .registry()
                .register(&mut SourceFd(&out_fd), STDOUT, Interest::WRITABLE)
            {
                Ok(()) => {
                    proc::set_nonblocking(out.as_fd())?;
                    // Registered again only while there is something to write.
                    poll.registry().deregister(&mut SourceFd(&out_fd))?;
                    true
                }
                Err(e) if e.raw_os_error() == Some(libc::EPERM) => false,
                Err(e) => return Err(e),
            };
        Ok(Stdio {
            session: Session::default(),
            out: File::from(out),
            queue: WriteQueue::new(0),
            out_pollable,
            stdin_pollable,
            stdin_open: true,
            eof_deadline: None,
            answered_any: false,
            stdin_paused: false,
            framer: LineFramer::default(),
            access: Default::default(),
        })
    }

    /// The client's session.
    pub(super) fn session(&self) -> &Session {
        &self.session
    }

    /// A message has been handled.
    pub(super) fn answered_any(&self) -> bool {
        self.answered_any
    }

    /// When stdin ended plus the grace period, if it has ended.
    pub(super) fn eof_deadline(&self) -> Option<Instant> {
        self.eof_deadline
    }

    /// Whether stdin is a file read directly each turn (it cannot be
    /// polled), and has something to give now.
    pub(super) fn reads_directly(&self) -> bool {
        self.stdin_open && !self.stdin_pollable && self.queue.held() < MAX_PENDING_OUTPUT
    }

    /// Whether stdin has ended and the server may exit: every call left was
    /// abandoned (`all_abandoned`), or the grace period is over.
    pub(super) fn finished(&self, all_abandoned: bool, now: Instant) -> bool {
        !self.stdin_open && (all_abandoned || self.eof_deadline.is_some_and(|d| now >= d))
    }

    /// Whether stdin may be read now: it is open, the server is not
    /// `exiting`, and the output queue is not over its bound (else input
    /// pauses until `flush_stdout` drains it).
    fn may_read(&mut self, exiting: bool) -> bool {
        if self.queue.held() >= MAX_PENDING_OUTPUT {
            self.stdin_paused = true;
            return false;
        }
        !exiting && self.stdin_open
    }

    /// The step of the next complete stdin line, if any. A `tools/call`'s
    /// arguments are read from the line in place (`decode_call`), so a large
    /// one is encoded for its pool without a JSON tree.
    fn next_step(&mut self, catalog: &Catalog) -> Option<Step> {
        let frame = self.framer.next_line()?;
        self.answered_any = true;
        Some(match frame {
            Frame::Line(line) => {
                let mut step = match jsonrpc::decode_call(line) {
                    jsonrpc::Decoded::Call(call) => {
                        self.access.open_call(&call);
                        mcp::handle_call(catalog, &mut self.session, call)
                    }
                    jsonrpc::Decoded::Message(msg, arguments) => {
                        self.access.open(&msg);
                        mcp::handle_lazy(catalog, &mut self.session, msg, arguments)
                    }
                };
                step.hand_over(None, line);
                step
            }
            Frame::TooLong => {
                let msg = jsonrpc::Incoming::Invalid(jsonrpc::too_long_response());
                mcp::handle(catalog, &mut self.session, msg)
            }
        })
    }

    /// Stdin ended (`eof`: at its end, else on a read error): calls still
    /// running get their grace period. At the end, the step of a last line
    /// without its newline, if any.
    fn input_ended(&mut self, poll: &Poll, catalog: &Catalog, eof: bool) -> Option<Step> {
        self.stdin_open = false;
        self.eof_deadline = Some(Instant::now() + EOF_GRACE);
        if !eof {
            return None;
        }
        if self.stdin_pollable {
            let _ = poll.registry().deregister(&mut SourceFd(&0));
        }
        let msg = frame_message(self.framer.finish()?);
        self.answered_any = true;
        Some(mcp::handle(catalog, &mut self.session, msg))
    }
}

impl Stdio {
    /// Reads one chunk of stdin into the framer, the read buffer `scratch`
    /// sized first. `to_eagain` false allows stopping after a short read:
    /// the poller said no EOF came with this data, and further data brings
    /// a new event, so the read that would only say EAGAIN is skipped.
    fn read(&mut self, scratch: &mut Vec<u8>, to_eagain: bool) -> StdinRead {
        if scratch.len() != SCRATCH_LEN {
            *scratch = vec![0u8; SCRATCH_LEN];
        }
        let mut short = false;
        let framer = &mut self.framer;
        let end = read_until(&mut RawReader(0), scratch, |chunk| {
            framer.push(chunk);
            short = chunk.len() < SCRATCH_LEN;
            ControlFlow::Break(())
        });
        match end {
            // Regular file: one chunk per loop turn, so pool events
            // interleave with a long input file. A pipe may stop at a short
            // read unless the event also reported a closed writer: with
            // edge-triggered polling that EOF would otherwise never be seen.
            ReadEnd::Stopped => StdinRead::Chunk {
                more: self.stdin_pollable && (to_eagain || !short),
            },
            ReadEnd::Drained => StdinRead::Drained,
            ReadEnd::Eof => StdinRead::Ended { eof: true },
            ReadEnd::Failed(e) => {
                log::error(&format!("input read error: {e}"));
                StdinRead::Ended { eof: false }
            }
        }
    }

    /// Queues `msg` for the client (a response closes its request's
    /// access record).
    fn queue(&mut self, msg: &Outgoing<'_>) {
        self.access.reply(msg);
        let out = self.queue.buf();
        msg.write(out);
        out.push(b'\n');
    }

    /// Writes what the protocol stream takes, watching it for writability
    /// while output waits.
    fn flush(&mut self, poll: &Poll) -> StdoutFlush {
        let fd = self.out.as_raw_fd();
        match self.queue.flush(&mut self.out) {
            Flushed::Done => {}
            Flushed::Blocked => {
                if self.out_pollable && self.queue.arm() {
                    let _ =
                        poll.registry()
                            .register(&mut SourceFd(&fd), STDOUT, Interest::WRITABLE);
                }
                return StdoutFlush::Pending;
            }
            // The client went away: nothing more can be delivered.
            Flushed::Closed => return StdoutFlush::Gone(None),
            Flushed::Failed(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                return StdoutFlush::Gone(None)
            }
            Flushed::Failed(e) => return StdoutFlush::Gone(Some(e)),
        }
        if self.queue.disarm() {
            let _ = poll.registry().deregister(&mut SourceFd(&fd));
        }
        StdoutFlush::Done {
            resume: std::mem::take(&mut self.stdin_paused),
        }
    }

    /// At shutdown: whether output is still queued; if so, writes block
    /// from now on, so the flush that follows delivers it all.
    pub(super) fn block_for_exit(&mut self) -> bool {
        if self.queue.is_drained() {
            return false;
        }
        let _ = set_blocking(self.out.as_raw_fd());
        true
    }

    /// The open access record of request `id`, if any (`obs`).
    pub(super) fn access_of(&self, id: &RequestId) -> Option<&Access> {
        self.access.get(id)
    }

    /// The client cancelled request `id`: its access record ends.
    pub(super) fn cancelled(&mut self, id: &RequestId) {
        self.access.cancelled(id);
    }
}

/// What a read of stdin gave.
enum StdinRead {
    /// A chunk went into the framer; `more`: stdin may be read on once its
    /// lines are handled.
    Chunk { more: bool },
    /// Nothing more for now.
    Drained,
    /// Stdin ended (`eof`: at its end, else on a read error).
    Ended { eof: bool },
}

/// How a flush of the protocol stream left it.
enum StdoutFlush {
    /// Output still waits.
    Pending,
    /// Everything is written; `resume`: stdin was paused for it.
    Done { resume: bool },
    /// The stream is closed (the client went away) or failed.
    Gone(Option<io::Error>),
}

impl Reactor {
    /// Reads stdin and applies its messages' steps, a chunk at a time,
    /// while it may (see `Stdio::read`, `Stdio::may_read`).
    pub(super) fn read_stdin_until(&mut self, to_eagain: bool) {
        loop {
            let exiting = self.exit_code.is_some();
            let Some(stdio) = self.stdio.as_mut() else {
                return;
            };
            if !stdio.may_read(exiting) {
                return;
            }
            let read = stdio.read(&mut self.scratch, to_eagain);
            let more = match read {
                StdinRead::Chunk { more } => more,
                StdinRead::Drained => return,
                StdinRead::Ended { eof } => {
                    if let Some(step) = stdio.input_ended(&self.poll, &self.catalog, eof) {
                        self.apply(Origin::Stdio, step);
                    }
                    return;
                }
            };
            while let Some(step) = self.stdio.as_mut().and_then(|s| s.next_step(&self.catalog)) {
                self.apply(Origin::Stdio, step);
            }
            let Some(stdio) = self.stdio.as_mut() else {
                return;
            };
            stdio.framer.trim();
            if !more {
                return;
            }
        }
    }

    /// Writes a message (or a call's response) to the stdio client.
    pub(super) fn send_stdio<'a>(&mut self, msg: impl Into<Outgoing<'a>>) {
        let Some(stdio) = self.stdio.as_mut() else {
            return;
        };
        stdio.queue(&msg.into());
        self.flush_stdout();
    }

    pub(super) fn flush_stdout(&mut self) {
        // What was logged about a request is on stderr before its answer.
        log::flush();
        let Some(stdio) = self.stdio.as_mut() else {
            return;
        };
        match stdio.flush(&self.poll) {
            StdoutFlush::Pending => {}
            StdoutFlush::Done { resume } => {
                if resume {
                    self.read_stdin_until(true);
                }
            }
            StdoutFlush::Gone(None) => {
                log::info("protocol stream closed");
                self.exit_code.get_or_insert(0);
            }
            StdoutFlush::Gone(Some(err)) => {
                log::error(&format!("protocol write failed: {err}"));
                self.exit_code.get_or_insert(1);
            }
        }
    }
}

/// Borrows one of the standard descriptors, which stay open for the life of
/// the process.
fn borrow_fd(fd: RawFd) -> BorrowedFd<'static> {
    // SAFETY: only used for fds 0-2, which are never closed.
    unsafe { BorrowedFd::borrow_raw(fd) }
}

fn set_blocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: F_GETFL only reads the flags of a descriptor we own.
    let flags = syscall!(fcntl(fd, libc::F_GETFL))?;
    // SAFETY: F_SETFL with the flags just read, less O_NONBLOCK.
    syscall!(fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK))?;
    Ok(())
}

fn frame_message(frame: Frame<'_>) -> jsonrpc::Incoming {
    match frame {
        Frame::Line(line) => jsonrpc::decode(line),
        Frame::TooLong => jsonrpc::Incoming::Invalid(jsonrpc::too_long_response()),
    }
}
