//! Connection events: accepting under the caps, reading and parsing
//! requests in order, admitting each head (checks and budget) before its
//! body is taken, writing output, timers, refusals and closing.

use crate::edge::log;
use std::fs::File;
use std::io;
use std::time::Instant;

use mio::{Interest, Token};

use super::caps::refuse;
use super::conn::{AfterPump, Conn, Due, Flush, Parsed};
use super::HttpFront;
use crate::edge::reactor::{Client, Reactor, Source};
use crate::protocol::http::{self, Answer, Notice};

/// Reads of a connection per turn, before the rest waits for a later turn.
const PUMP_READS: usize = 2;

impl Reactor {
    pub(in crate::edge::reactor) fn accept_http(&mut self) {
        loop {
            let Some(front) = self.http.as_mut() else {
                return;
            };
            let Some(listener) = front.listener.as_ref() else {
                return;
            };
            match listener.accept() {
                Ok((mut stream, addr)) => {
                    let peer = addr.ip().to_canonical();
                    if front.conns.len() >= front.max_conns {
                        refuse(stream, "too many connections");
                        let max = front.max_conns;
                        front.notice(Notice::ConnCap, || {
                            format!("all {max} connection slots are taken; a new connection from {peer} got 503")
                        });
                        continue;
                    }
                    if front.peers.at_cap(peer) {
                        refuse(stream, "too many connections from your address");
                        let max = front.peers.max_conns();
                        front.notice(Notice::PeerCap, || {
                            format!("{peer} holds {max} connections, its cap (--max-conns-per-peer); its new connection got 503")
                        });
                        continue;
                    }
                    // Small request/response exchanges: don't wait for Nagle.
                    let _ = stream.set_nodelay(true);
                    let token = self.token(Source::Conn);
                    if self
                        .poll
                        .registry()
                        .register(&mut stream, token, Interest::READABLE)
                        .is_err()
                    {
                        self.sources.remove(&token);
                        continue;
                    }
                    if let Some(front) = self.http.as_mut() {
                        front.conns.insert(token, Conn::new(stream, peer));
                        front.peers.open(peer);
                    }
                    // Edge-triggered: data may already be waiting.
                    self.pump(token);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e)
                    if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
                        && front.spare_fd.is_some() =>
                {
                    // Out of descriptors: free the spare to take the
                    // connection and refuse it, then hold a spare again.
                    front.spare_fd = None;
                    if let Some(Ok((stream, _))) = front.listener.as_ref().map(|l| l.accept()) {
                        refuse(stream, "too many connections");
                    }
                    front.spare_fd = File::open("/dev/null").ok();
                }
                Err(e) => {
                    // Out of fds with no spare, and the like: log and keep serving.
                    log::error(&format!("accept failed: {e}"));
                    return;
                }
            }
        }
    }

    pub(in crate::edge::reactor) fn http_event(
        &mut self,
        token: Token,
        readable: bool,
        writable: bool,
    ) {
        if writable {
            self.flush_conn(token);
        }
        if readable || writable {
            // Drained output may unblock requests waiting in the buffer.
            self.pump(token);
        }
    }

    /// The connection `token`, if it is still open.
    pub(in crate::edge::reactor) fn conn_mut(&mut self, token: Token) -> Option<&mut Conn> {
        self.http.as_mut().and_then(|f| f.conns.get_mut(&token))
    }

    /// Reads, parses and answers on one connection until nothing more can be
    /// done for now. Every event that may unblock a connection (bytes
    /// arriving, output draining, its call finishing) ends up here.
    ///
    /// Readiness is edge-triggered, so reading stops only at `WouldBlock` or
    /// when the buffer is full; in the latter case bytes stay in the socket
    /// with no event to come, and the loop reads again as soon as requests
    /// have been consumed. A request answered synchronously (a ping, an
    /// in-process call) can lead back here through `http_reply`; that nested
    /// call returns at once and this loop carries on, so the stack stays flat
    /// however many requests are pipelined.
    pub(in crate::edge::reactor) fn pump(&mut self, token: Token) {
        let Some(conn) = self.conn_mut(token) else {
            return;
        };
        if !conn.start_pump() {
            return;
        }
        let mut reads = 0;
        loop {
            // A client not reading its answers starts nothing new (see
            // `peers`): its requests wait in its socket.
            if self.http.as_mut().is_some_and(|f| f.paused(token)) {
                break;
            }
            let read = self.read_conn(token);
            let handled = self.process_conn(token);
            if !read && !handled {
                break;
            }
            // A client sending fast gets a few reads per turn; the rest
            // on a later turn (`calls::prepare`), so others are not held up.
            reads += usize::from(read);
            if reads >= PUMP_READS {
                self.preparing.pump_later(token);
                break;
            }
        }
        let Some(front) = self.http.as_mut() else {
            return;
        };
        front.recount(token);
        // A connection not paused before its answer was queued is now.
        front.paused(token);
        let Some(conn) = front.conns.get_mut(&token) else {
            return;
        };
        match conn.end_pump() {
            AfterPump::Keep => {}
            AfterPump::Close => self.close_conn(token),
            AfterPump::CancelAndClose => {
                // The client gave up on its request: stop the call.
                self.cancel_conn(token);
                self.close_conn(token);
            }
        }
    }

    /// Reads what connection `token` has for us (see `Conn::read_in`).
    fn read_conn(&mut self, token: Token) -> bool {
        let mut buf = self.take_scratch();
        let changed = self.conn_mut(token).is_some_and(|c| c.read_in(&mut buf));
        self.scratch = buf;
        changed
    }

    /// Parses and handles buffered requests, one at a time, in order, while
    /// the connection is free (no call running, no output pending). Returns
    /// whether any input was consumed.
    fn process_conn(&mut self, token: Token) -> bool {
        let mut consumed = false;
        loop {
            let Some(conn) = self.conn_mut(token) else {
                return consumed;
            };
            match conn.parse_next() {
                Parsed::Idle => break,
                Parsed::NeedMore { used, chunked } => {
                    consumed |= used;
                    // A chunked body is counted as it grows: past the
                    // budget, it is refused (a declared length is admitted
                    // whole when the head is checked, and never refused).
                    if chunked {
                        let over = self.http.as_mut().and_then(|f| f.over_budget(token, 0));
                        if let Some(answer) = over {
                            self.refuse_request(token, answer);
                            return true;
                        }
                    }
                    break;
                }
                Parsed::Head { expect_continue } => {
                    consumed = true;
                    // Refuse before any of the body is taken, if the head
                    // alone decides or the body does not fit the budget.
                    match self.http.as_mut().and_then(|f| f.admit(token)) {
                        // A small request refused with keep-alive whose body
                        // is already here: take it, and answer as usual
                        // (the checks run again on the whole request).
                        Some(answer)
                            if answer.keep_alive
                                && self.http.as_ref().is_some_and(|f| f.body_is_here(token)) => {}
                        Some(answer) => {
                            self.refuse_request(token, answer);
                            return true;
                        }
                        None if expect_continue => {
                            let Some(conn) = self.conn_mut(token) else {
                                return true;
                            };
                            http::write_continue(conn.out());
                            self.flush_conn(token);
                        }
                        None => {}
                    }
                }
                Parsed::Request(mut request) => {
                    if self.http.as_ref().is_some_and(HttpFront::draining) {
                        // Draining: answer, then close, so the balancer's
                        // next request goes to another instance.
                        request.keep_alive = false;
                    }
                    consumed = true;
                    self.serve_request(token, request, true);
                    self.flush_conn(token);
                }
                Parsed::Bad(e) => {
                    let answer = Answer::error(e.status(), Vec::new(), &e.to_string(), false);
                    self.refuse_request(token, answer);
                    return true;
                }
            }
        }
        if let Some(conn) = self.conn_mut(token) {
            conn.compact_input();
        }
        consumed
    }

    /// Answers the request on `token` with `answer` and `Connection: close`,
    /// dropping whatever of it was buffered; the connection then lingers
    /// (see `LINGER`) and closes.
    pub(super) fn refuse_request(&mut self, token: Token, answer: Answer) {
        let Some(conn) = self.conn_mut(token) else {
            return;
        };
        conn.refuse();
        self.respond(token, answer.status, &answer.headers, &answer.body, false);
    }

    pub(in crate::edge::reactor) fn flush_conn(&mut self, token: Token) {
        // What was logged about a request is on stderr before its answer.
        log::flush();
        let Some(front) = self.http.as_mut() else {
            return;
        };
        let Some(conn) = front.conns.get_mut(&token) else {
            return;
        };
        match conn.flush(self.poll.registry(), token) {
            Flush::Pending => front.recount(token),
            Flush::Failed => {
                self.cancel_conn(token);
                self.close_conn(token);
            }
            Flush::Open => front.recount(token),
            Flush::Close => self.close_conn(token),
            Flush::Lingering => {
                front.recount(token);
                // Input may be waiting, with no edge to come.
                self.pump(token);
            }
        }
    }

    pub(super) fn close_conn(&mut self, token: Token) {
        let Some(front) = self.http.as_mut() else {
            return;
        };
        front.remove_conn(token, self.poll.registry());
        self.sources.remove(&token);
        self.listeners
            .remove_where(|c| matches!(c, Client::Http { conn, .. } if *conn == token));
    }

    pub(in crate::edge::reactor) fn http_timers(&mut self, now: Instant) {
        let Some(front) = self.http.as_mut() else {
            return;
        };
        let parked = front.jwks_timers(now, self.poll.registry(), &mut self.sources);
        self.serve_parked(parked);
        let Some(front) = self.http.as_mut() else {
            return;
        };
        let mut late = Vec::new();
        let mut idle = Vec::new();
        let mut quiet = Vec::new();
        for (token, due) in front.conns.due(now, front.timeouts) {
            match due {
                Due::Nothing => {}
                Due::Late => late.push(token),
                Due::Idle => idle.push(token),
                Due::Quiet => quiet.push(token),
            }
        }
        for token in late {
            if let Some(conn) = self.conn_mut(token) {
                conn.expire_request();
            }
            let answer = Answer::error(408, Vec::new(), "request not received in time", false);
            self.refuse_request(token, answer);
        }
        for token in idle {
            self.close_conn(token);
        }
        for token in quiet {
            let Some(conn) = self.conn_mut(token) else {
                continue;
            };
            conn.keep_alive(now);
            self.flush_conn(token);
        }
    }
}
