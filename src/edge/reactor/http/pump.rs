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
use super::news::{Cx, HttpNews, Pumping};
use super::HttpFront;
use crate::edge::reactor::{Source, SCRATCH_LEN};
use crate::protocol::http::{self, Answer, Notice};

/// Reads of a connection per turn, before the rest waits for a later turn.
const PUMP_READS: usize = 2;

impl HttpFront {
    /// Accepts the waiting connections, refusing those over the caps; stops
    /// at one whose first requests left news, and goes on after them
    /// (`HttpNews::Accept`).
    pub(in crate::edge::reactor) fn accept(&mut self, cx: &mut Cx) {
        loop {
            let Some(listener) = self.listener.as_ref() else {
                return;
            };
            match listener.accept() {
                Ok((mut stream, addr)) => {
                    let peer = addr.ip().to_canonical();
                    if self.conns.len() >= self.max_conns {
                        refuse(stream, "too many connections");
                        let max = self.max_conns;
                        self.notice(Notice::ConnCap, || {
                            format!("all {max} connection slots are taken; a new connection from {peer} got 503")
                        });
                        continue;
                    }
                    if self.peers.at_cap(peer) {
                        refuse(stream, "too many connections from your address");
                        let max = self.peers.max_conns();
                        self.notice(Notice::PeerCap, || {
                            format!("{peer} holds {max} connections, its cap (--max-conns-per-peer); its new connection got 503")
                        });
                        continue;
                    }
                    // Small request/response exchanges: don't wait for Nagle.
                    let _ = stream.set_nodelay(true);
                    let token = cx.sources.add(Source::Conn);
                    if cx
                        .registry
                        .register(&mut stream, token, Interest::READABLE)
                        .is_err()
                    {
                        cx.sources.remove(&token);
                        continue;
                    }
                    self.conns.insert(token, Conn::new(stream, peer));
                    self.peers.open(peer);
                    // Edge-triggered: data may already be waiting.
                    let before = self.news.len();
                    self.pump(cx, token);
                    if self.news.len() > before {
                        self.news.push(HttpNews::Accept);
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e)
                    if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
                        && self.spare_fd.is_some() =>
                {
                    // Out of descriptors: free the spare to take the
                    // connection and refuse it, then hold a spare again.
                    self.spare_fd = None;
                    if let Some(Ok((stream, _))) = self.listener.as_ref().map(|l| l.accept()) {
                        refuse(stream, "too many connections");
                    }
                    self.spare_fd = File::open("/dev/null").ok();
                }
                Err(e) => {
                    // Out of fds with no spare, and the like: log and keep serving.
                    log::error(&format!("accept failed: {e}"));
                    return;
                }
            }
        }
    }

    /// An event on connection `token`.
    pub(in crate::edge::reactor) fn event(
        &mut self,
        cx: &mut Cx,
        token: Token,
        readable: bool,
        writable: bool,
    ) {
        if writable {
            self.flush(cx, token);
        }
        if readable || writable {
            // Drained output may unblock requests waiting in the buffer.
            self.pump(cx, token);
        }
    }

    /// Reads, parses and answers on one connection until nothing more can be
    /// done for now. Every event that may unblock a connection (bytes
    /// arriving, output draining, its call finishing) ends up here.
    ///
    /// Readiness is edge-triggered, so reading stops only at `WouldBlock` or
    /// when the buffer is full; in the latter case bytes stay in the socket
    /// with no event to come, and the loop reads again as soon as requests
    /// have been consumed. A request handed to the reactor stops the pump
    /// (`HttpNews::Resume` carries it on); a pump asked for meanwhile (its
    /// answer written, say) returns at once.
    pub(in crate::edge::reactor) fn pump(&mut self, cx: &mut Cx, token: Token) {
        let Some(conn) = self.conns.get_mut(&token) else {
            return;
        };
        if !conn.start_pump() {
            return;
        }
        let pumping = Pumping {
            token,
            reads: 0,
            read: false,
            serving: false,
        };
        self.pump_on(cx, pumping);
    }

    /// Carries on a pump stopped at a request the reactor has now served:
    /// its answer is written, and the next requests read.
    pub(in crate::edge::reactor) fn resume(&mut self, cx: &mut Cx, pumping: Pumping) {
        self.flush(cx, pumping.token);
        self.pump_on(cx, pumping);
    }

    /// The pump's loop, from where `at` stopped.
    fn pump_on(&mut self, cx: &mut Cx, mut at: Pumping) {
        let token = at.token;
        loop {
            if !at.serving {
                // A client not reading its answers starts nothing new (see
                // `peers`): its requests wait in its socket.
                if self.paused(token) {
                    break;
                }
                at.read = self.read(cx, token);
            }
            let Some(handled) = self.process(cx, token, at.serving) else {
                at.serving = true;
                self.news.push(HttpNews::Resume(at));
                return;
            };
            at.serving = false;
            if !at.read && !handled {
                break;
            }
            // A client sending fast gets a few reads per turn; the rest
            // on a later turn (`calls::prepare`), so others are not held up.
            at.reads += usize::from(at.read);
            if at.reads >= PUMP_READS {
                self.news.push(HttpNews::PumpLater(token));
                break;
            }
        }
        self.recount(token);
        // A connection not paused before its answer was queued is now.
        self.paused(token);
        let Some(conn) = self.conns.get_mut(&token) else {
            return;
        };
        match conn.end_pump() {
            AfterPump::Keep => {}
            AfterPump::Close => self.close(cx, token),
            AfterPump::CancelAndClose => {
                // The client gave up on its request: stop the call.
                self.news.push(HttpNews::Cancel(token));
                self.close(cx, token);
            }
        }
    }

    /// Reads what connection `token` has for us (see `Conn::read_in`).
    fn read(&mut self, cx: &mut Cx, token: Token) -> bool {
        if cx.scratch.len() != SCRATCH_LEN {
            *cx.scratch = vec![0u8; SCRATCH_LEN];
        }
        let conn = self.conns.get_mut(&token);
        conn.is_some_and(|c| c.read_in(cx.scratch))
    }

    /// Parses and handles buffered requests, one at a time, in order, while
    /// the connection is free (no call running, no output pending). Returns
    /// whether any input was consumed (`consumed`: some was already), or
    /// `None` when a request was handed to the reactor.
    fn process(&mut self, cx: &mut Cx, token: Token, mut consumed: bool) -> Option<bool> {
        loop {
            let Some(conn) = self.conns.get_mut(&token) else {
                return Some(consumed);
            };
            match conn.parse_next() {
                Parsed::Idle => break,
                Parsed::NeedMore { used, chunked } => {
                    consumed |= used;
                    // A chunked body is counted as it grows: past the
                    // budget, it is refused (a declared length is admitted
                    // whole when the head is checked, and never refused).
                    if chunked {
                        if let Some(answer) = self.over_budget(token, 0) {
                            self.refuse_request(cx, token, answer);
                            return Some(true);
                        }
                    }
                    break;
                }
                Parsed::Head { expect_continue } => {
                    consumed = true;
                    // Refuse before any of the body is taken, if the head
                    // alone decides or the body does not fit the budget.
                    match self.admit(token) {
                        // A small request refused with keep-alive whose body
                        // is already here: take it, and answer as usual
                        // (the checks run again on the whole request).
                        Some(answer) if answer.keep_alive && self.body_is_here(token) => {}
                        Some(answer) => {
                            self.refuse_request(cx, token, answer);
                            return Some(true);
                        }
                        None if expect_continue => {
                            let Some(conn) = self.conns.get_mut(&token) else {
                                return Some(true);
                            };
                            http::write_continue(conn.out());
                            self.flush(cx, token);
                        }
                        None => {}
                    }
                }
                Parsed::Request(mut request) => {
                    if self.draining() {
                        // Draining: answer, then close, so the balancer's
                        // next request goes to another instance.
                        request.keep_alive = false;
                    }
                    consumed = true;
                    let before = self.news.len();
                    self.serve_request(cx, token, request, true);
                    // The reactor has a part in it: the pump waits.
                    if self.news.len() > before {
                        return None;
                    }
                    self.flush(cx, token);
                }
                Parsed::Bad(e) => {
                    let answer = Answer::error(e.status(), Vec::new(), &e.to_string(), false);
                    self.refuse_request(cx, token, answer);
                    return Some(true);
                }
            }
        }
        if let Some(conn) = self.conns.get_mut(&token) {
            conn.compact_input();
        }
        Some(consumed)
    }

    /// Answers the request on `token` with `answer` and `Connection: close`,
    /// dropping whatever of it was buffered; the connection then lingers
    /// (see `LINGER`) and closes.
    pub(super) fn refuse_request(&mut self, cx: &mut Cx, token: Token, answer: Answer) {
        let Some(conn) = self.conns.get_mut(&token) else {
            return;
        };
        conn.refuse();
        let answer = Answer {
            keep_alive: false,
            ..answer
        };
        self.send(cx, token, answer, None);
    }

    /// Writes what connection `token`'s socket takes of its output.
    pub(in crate::edge::reactor) fn flush(&mut self, cx: &mut Cx, token: Token) {
        // What was logged about a request is on stderr before its answer.
        log::flush();
        let Some(conn) = self.conns.get_mut(&token) else {
            return;
        };
        match conn.flush(cx.registry, token) {
            Flush::Pending | Flush::Open => self.recount(token),
            Flush::Failed => {
                self.news.push(HttpNews::Cancel(token));
                self.close(cx, token);
            }
            Flush::Close => self.close(cx, token),
            Flush::Lingering => {
                self.recount(token);
                // Input may be waiting, with no edge to come.
                self.pump(cx, token);
            }
        }
    }

    /// Closes connection `token`, releasing what it held; its token is
    /// freed, and its subscriptions end (`HttpNews::Closed`).
    pub(super) fn close(&mut self, cx: &mut Cx, token: Token) {
        if self.remove_conn(token, cx.registry) {
            cx.sources.remove(&token);
            self.news.push(HttpNews::Closed(token));
        }
    }

    /// What is due at `now`: the key fetch's deadline, late requests
    /// (408), idle connections, listen streams' keep-alive comments.
    pub(in crate::edge::reactor) fn timers(&mut self, cx: &mut Cx, now: Instant) {
        let parked = self.jwks_timers(now, cx.registry, cx.sources);
        self.serve_parked(cx, parked);
        let mut late = Vec::new();
        let mut idle = Vec::new();
        let mut quiet = Vec::new();
        for (token, due) in self.conns.due(now, self.timeouts) {
            match due {
                Due::Nothing => {}
                Due::Late => late.push(token),
                Due::Idle => idle.push(token),
                Due::Quiet => quiet.push(token),
            }
        }
        for token in late {
            if let Some(conn) = self.conns.get_mut(&token) {
                conn.expire_request();
            }
            let answer = Answer::error(408, Vec::new(), "request not received in time", false);
            self.refuse_request(cx, token, answer);
        }
        for token in idle {
            self.close(cx, token);
        }
        for token in quiet {
            let Some(conn) = self.conns.get_mut(&token) else {
                continue;
            };
            conn.keep_alive(now);
            self.flush(cx, token);
        }
    }
}
