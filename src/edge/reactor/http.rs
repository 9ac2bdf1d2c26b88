//! The Streamable HTTP transport inside the reactor.
//!
//! A non-blocking listener and its connections live in the same poll loop as
//! the pools, so a slow or idle client never delays anyone else. Each
//! connection feeds its bytes to the pure `http::Parser`; a complete request
//! goes through the checks (Host, Origin, CORS preflight, bearer token, path,
//! method), then its JSON-RPC body through the session's `mcp::handle`.
//! The head-only checks run as soon as a request's head is complete, before
//! any byte of its body is taken, and a body is admitted only if it fits in
//! the buffer budget shared by all connections (`http::Budget`, owned here:
//! every change to what a connection holds is counted by `recount`). A
//! refused request is answered with `Connection: close`, and the connection
//! reads and drops what the client still sends for a moment (so the answer
//! is not lost to a reset) before it closes.
//! Requests on one connection are answered in order: while a tool call runs,
//! later pipelined requests wait in the connection's buffer. A call whose
//! client accepts `text/event-stream` and asked for progress (or logs) gets
//! an event stream carrying its notifications and then its response.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown};
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Interest, Poll, Token};
use serde_json::Value as Json;

use super::idhash::IdMap;
use super::{Client, Reactor, Source, StartError, LISTENER};
use crate::edge::cli::HttpConfig;
use crate::edge::proc;
use crate::protocol::http::{
    self, Budget, Notice, Notices, OriginPolicy, Parser, Progress, Request, SessionLimits, Sessions,
};
use crate::protocol::instance::InstanceId;
use crate::protocol::jsonrpc::{self};
use crate::protocol::mcp::{self, era, Catalog};

mod health;
mod requests;
mod vet;
use vet::{connection_cap, json_error, refuse, vet, Early};

/// Most open connections; one more gets 503 and is closed. Fewer when the
/// open-file limit cannot be raised far enough (see `connection_cap`).
const MAX_CONNECTIONS: usize = 1024;
/// The accept queue asked for (the system may cap it).
const LISTEN_BACKLOG: libc::c_int = 4096;
/// Descriptors kept free for pools, pipes and the like when sizing the
/// connection cap to the open-file limit.
const FD_RESERVE: libc::rlim_t = 64;
/// An idle keep-alive connection is closed after this long.
const IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// Most unparsed input kept per connection. Requests pipelined behind a
/// running call (or behind responses the client is slow to read) wait here;
/// beyond this the socket is not read until they have been answered, so a
/// client that sends without reading holds at most this much memory.
const MAX_BUFFERED: usize = 1024 * 1024;
/// A `subscriptions/listen` stream carries an SSE comment this often when
/// nothing else happens, so proxies and clients do not close it as idle (and
/// a vanished client is noticed).
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// After a refusal, how long what the client still sends is read and
/// dropped before the connection closes (closing with unread input would
/// reset it, and the client could lose the answer).
const LINGER: Duration = Duration::from_secs(2);
/// ... and how many bytes at most, so a client cannot keep the server busy
/// reading what it throws away.
const LINGER_BYTES: usize = 1024 * 1024;
/// A buffer left larger than this by a big request or response is freed
/// once empty, so an idle keep-alive connection holds next to nothing.
const KEEP_CAPACITY: usize = 64 * 1024;
/// Reads of a connection per turn, before the rest waits for a later turn.
const PUMP_READS: usize = 2;

pub(super) struct HttpFront {
    /// `None` once a drain has closed it (see `reactor::drain`).
    listener: Option<TcpListener>,
    /// A request's head and body must arrive within this time of its first
    /// byte (`cli::DEFAULT_REQUEST_TIMEOUT` unless changed for tests).
    request_timeout: Duration,
    token: Option<String>,
    policy: OriginPolicy,
    sessions: Sessions,
    conns: IdMap<Token, Conn>,
    /// The connection cap: `MAX_CONNECTIONS` or what the fd limit allows.
    max_conns: usize,
    /// An open descriptor given up when `accept` runs out of descriptors,
    /// so the waiting connection can be taken and refused with a 503
    /// instead of staying in the backlog (no event would come for it).
    spare_fd: Option<File>,
    /// Bytes held by all connections (`--max-buffered`).
    budget: Budget,
    /// Open connections per peer address.
    peers: HashMap<IpAddr, usize>,
    /// `--max-conns-per-peer`; 0 for no cap.
    max_per_peer: usize,
    notices: Notices,
}

/// A request waiting for its tool call, or a long-lived subscription.
struct Busy {
    /// The legacy session; empty for a modern request.
    session: String,
    /// Streaming `text/event-stream` (head already written).
    sse: bool,
    keep_alive: bool,
    cors: Vec<(String, String)>,
    /// A modern request: closing the connection cancels it, and its answer
    /// gets the modern status.
    modern: bool,
    /// A modern `subscriptions/listen` stream: its request id, and when the
    /// next keep-alive comment is due.
    listen: Option<(jsonrpc::RequestId, Instant)>,
}

struct Conn {
    stream: TcpStream,
    parser: Parser,
    inbuf: Vec<u8>,
    /// Bytes of `inbuf` already given to the parser; dropped from the front
    /// once they are half the buffer, so consuming many small pipelined
    /// requests costs linear time.
    inpos: usize,
    /// `pump` is running for this connection; nested calls return at once.
    pumping: bool,
    out: Vec<u8>,
    written: usize,
    busy: Option<Busy>,
    close_after_write: bool,
    /// When the first byte of the request being read arrived.
    request_started: Option<Instant>,
    last_active: Instant,
    writable_interest: bool,
    /// The peer closed its side; answer what is pending, then close.
    peer_closed: bool,
    /// The request being answered is a HEAD: its response has no body.
    head_request: bool,
    /// The peer's address (IPv4-mapped IPv6 as IPv4).
    peer: IpAddr,
    /// What this connection was last counted for in the budget.
    held: usize,
    /// The declared body length of the request being received, admitted
    /// against the budget when its head was checked.
    reserved: usize,
    /// The answer being written refuses the request: once it is out, the
    /// write side is shut and input is dropped until `linger`.
    refusing: bool,
    /// Lingering after a refusal: input is read and dropped until then.
    linger: Option<Instant>,
    /// Bytes dropped while lingering.
    dropped: usize,
}

impl HttpFront {
    pub(super) fn bind(
        poll: &Poll,
        config: HttpConfig,
        catalog: &Catalog,
        instance: &InstanceId,
    ) -> Result<HttpFront, StartError> {
        // IP literals and `localhost` only: no name service lookup, so a
        // static binary needs no NSS modules and start-up never waits on DNS.
        let ip = bind_ip(&config.host).ok_or_else(|| {
            StartError(format!(
                "--http-host '{}' is not an IP address or 'localhost'",
                config.host
            ))
        })?;
        let addr = std::net::SocketAddr::new(ip, config.port);
        // Judge the address, not its spelling: 127.0.0.2 and [::1] are loopback too.
        let loopback = match addr.ip() {
            std::net::IpAddr::V4(ip) => ip.is_loopback(),
            std::net::IpAddr::V6(ip) => {
                ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
            }
        };
        if !loopback && config.auth_token.is_none() && !config.allow_no_auth {
            return Err(StartError(format!(
                "refusing to serve on {addr} with no auth token (the address is not loopback); set --auth-token or MORLOC_MCP_TOKEN, or pass --allow-no-auth"
            )));
        }
        let max_conns = connection_cap();
        if max_conns < MAX_CONNECTIONS {
            eprintln!(
                "morloc-mcp: warning: the open-file limit allows only {max_conns} HTTP connections (of {MAX_CONNECTIONS})"
            );
        }
        let mut listener = TcpListener::bind(addr)
            .map_err(|e| StartError(format!("cannot listen on {addr}: {e}")))?;
        // A deeper accept queue than the 128 mio asks for: a client that
        // reconnects as fast as it is refused must not fill the queue and
        // make another client's SYN wait for a retransmission (1 s). Linux
        // caps it at net.core.somaxconn; on failure the 128 stays.
        // SAFETY: listen on a descriptor the listener owns.
        unsafe {
            libc::listen(std::os::fd::AsRawFd::as_raw_fd(&listener), LISTEN_BACKLOG);
        }
        let addr = listener
            .local_addr()
            .map_err(|e| StartError(format!("cannot read the bound address: {e}")))?;
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)
            .map_err(|e| StartError(format!("cannot watch the listener: {e}")))?;
        eprintln!(
            "morloc mcp: serving \"{}\" (instance {instance}) over HTTP at http://{addr}/mcp",
            catalog.server_name
        );
        let policy = OriginPolicy::new(&config.host, config.allow_origins.iter());
        let sessions = Sessions::new(
            SessionLimits {
                ttl: config.session_ttl,
                max_per_owner: config.max_sessions_per_owner,
                max_sessions: config.max_sessions,
            },
            instance.clone(),
        );
        Ok(HttpFront {
            listener: Some(listener),
            request_timeout: config.request_timeout,
            token: config.auth_token,
            policy,
            sessions,
            conns: IdMap::default(),
            max_conns,
            spare_fd: File::open("/dev/null").ok(),
            budget: Budget::new(config.max_buffered),
            peers: HashMap::new(),
            max_per_peer: config
                .max_conns_per_peer
                .unwrap_or(crate::edge::cli::DEFAULT_MAX_CONNS_PER_PEER),
            notices: Notices::new(http::NOTICE_PERIOD),
        })
    }

    /// Counts again what connection `token` holds against the budget: its
    /// input and output buffers, and its request body (at least the length
    /// admitted for it).
    fn recount(&mut self, token: Token) {
        let Some(conn) = self.conns.get_mut(&token) else {
            return;
        };
        // Body bytes still waiting in the input buffer are counted there,
        // not twice.
        let body = conn.reserved.max(conn.parser.body_len());
        let unparsed = conn.inbuf.len() - conn.inpos;
        let waiting = unparsed.min(conn.reserved.saturating_sub(conn.parser.body_len()));
        let held = conn.inbuf.len() + conn.out.len() + body - waiting;
        self.budget.update(conn.held, held);
        conn.held = held;
    }

    /// Counts `new` bytes instead of `old` against the budget for a call
    /// being prepared (`calls::prepare`).
    pub(super) fn count_prepared(&mut self, old: usize, new: usize) {
        self.budget.update(old, new);
    }

    /// Whether connection `token` is still open.
    pub(super) fn has_conn(&self, token: Token) -> bool {
        self.conns.contains_key(&token)
    }

    /// Prints `message()` as a diagnostic, unless a line of this kind was
    /// printed less than `NOTICE_PERIOD` ago (then it is only counted).
    fn notice(&mut self, kind: Notice, message: impl FnOnce() -> String) {
        if let Some(suppressed) = self.notices.note(kind, Instant::now()) {
            eprintln!(
                "morloc-mcp: HTTP: {}{}",
                message(),
                http::suppressed_suffix(suppressed, http::NOTICE_PERIOD)
            );
        }
    }

    /// The owner of what a request on `token` creates (sessions): the
    /// bearer token when the server has one (every accepted request carries
    /// the one token, so all its holders are one owner), else the peer
    /// address.
    fn owner_of(&self, token: Token) -> String {
        let peer = self.conns.get(&token).map(|c| c.peer);
        match (&self.token, peer) {
            (Some(_), _) => "token".to_string(),
            (None, Some(ip)) => format!("peer {ip}"),
            (None, None) => String::new(),
        }
    }

    pub(super) fn next_deadline(&self) -> Option<Instant> {
        let mut best: Option<Instant> = None;
        for conn in self.conns.values() {
            if let Some((_, at)) = conn.busy.as_ref().and_then(|b| b.listen.as_ref()) {
                best = Some(best.map_or(*at, |b| b.min(*at)));
                continue;
            }
            if conn.linger.is_some() {
                continue;
            }
            let t = match (conn.busy.is_some(), conn.request_started) {
                (true, _) => continue,
                (false, Some(start)) => start + self.request_timeout,
                (false, None) => conn.last_active + IDLE_TIMEOUT,
            };
            best = Some(best.map_or(t, |b| b.min(t)));
        }
        for conn in self.conns.values() {
            if let Some(at) = conn.linger {
                best = Some(best.map_or(at, |b| b.min(at)));
            }
        }
        best
    }

    /// A new session id. Session ids must not be guessable: without a
    /// random source, no session is made.
    fn random_id(&mut self) -> io::Result<[u8; 16]> {
        let mut bytes = [0u8; 16];
        proc::fill_random(&mut bytes)?;
        Ok(bytes)
    }
}

/// The address `--http-host` names: an IPv4 or IPv6 literal (brackets
/// allowed) or `localhost` (127.0.0.1).
fn bind_ip(host: &str) -> Option<std::net::IpAddr> {
    if host.eq_ignore_ascii_case("localhost") {
        return Some(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST));
    }
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    bare.parse().ok()
}

impl Reactor {
    pub(super) fn accept_http(&mut self) {
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
                    let from_peer = front.peers.get(&peer).copied().unwrap_or(0);
                    if front.max_per_peer > 0 && from_peer >= front.max_per_peer {
                        refuse(stream, "too many connections from your address");
                        let max = front.max_per_peer;
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
                    let conn = Conn {
                        stream,
                        parser: Parser::new(http::Limits::default()),
                        inbuf: Vec::new(),
                        inpos: 0,
                        pumping: false,
                        out: Vec::new(),
                        written: 0,
                        busy: None,
                        close_after_write: false,
                        request_started: None,
                        last_active: Instant::now(),
                        writable_interest: false,
                        peer_closed: false,
                        head_request: false,
                        peer,
                        held: 0,
                        reserved: 0,
                        refusing: false,
                        linger: None,
                        dropped: 0,
                    };
                    if let Some(front) = self.http.as_mut() {
                        front.conns.insert(token, conn);
                        *front.peers.entry(peer).or_insert(0) += 1;
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
                    eprintln!("morloc-mcp: accept failed: {e}");
                    return;
                }
            }
        }
    }

    pub(super) fn http_event(&mut self, token: Token, readable: bool, writable: bool) {
        if writable {
            self.flush_conn(token);
        }
        if readable || writable {
            // Drained output may unblock requests waiting in the buffer.
            self.pump(token);
        }
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
    pub(super) fn pump(&mut self, token: Token) {
        let Some(conn) = self.http.as_mut().and_then(|f| f.conns.get_mut(&token)) else {
            return;
        };
        if conn.pumping {
            return;
        }
        conn.pumping = true;
        let mut reads = 0;
        loop {
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
        let Some(conn) = front.conns.get_mut(&token) else {
            return;
        };
        conn.pumping = false;
        if conn.peer_closed && conn.busy.is_none() && conn.written >= conn.out.len() {
            // Every complete request has been answered; what is left (if
            // anything) can never be completed.
            self.close_conn(token);
        } else if conn.peer_closed && conn.busy.as_ref().is_some_and(|b| !b.sse || b.modern) {
            // The client gave up on its request: stop the call. For a modern
            // request closing its stream is the way to cancel it, events or not.
            self.cancel_conn(token);
            self.close_conn(token);
        }
    }

    /// Reads until the socket would block, the peer closes, or the buffer
    /// holds `MAX_BUFFERED` unparsed bytes; while no request head is
    /// complete, one read at most. Returns whether anything changed.
    fn read_conn(&mut self, token: Token) -> bool {
        let mut buf = self.take_scratch();
        let changed = self.read_conn_into(token, &mut buf);
        self.scratch = buf;
        changed
    }

    fn read_conn_into(&mut self, token: Token, buf: &mut [u8]) -> bool {
        let mut changed = false;
        loop {
            let Some(conn) = self.http.as_mut().and_then(|f| f.conns.get_mut(&token)) else {
                return changed;
            };
            let lingering = conn.linger.is_some();
            if conn.peer_closed || (!lingering && conn.inbuf.len() - conn.inpos >= MAX_BUFFERED) {
                return changed;
            }
            match conn.stream.read(buf) {
                Ok(0) => {
                    conn.peer_closed = true;
                    return true;
                }
                // After a refusal, what still comes is dropped unread, up
                // to a point; then the connection is treated as closed.
                Ok(n) if lingering => {
                    conn.dropped += n;
                    if conn.dropped >= LINGER_BYTES {
                        conn.peer_closed = true;
                        return true;
                    }
                }
                Ok(n) => {
                    conn.inbuf.extend_from_slice(&buf[..n]);
                    let now = Instant::now();
                    conn.last_active = now;
                    // The request deadline runs from the first byte of
                    // anything, blank lines included, so a client cannot
                    // hold the connection by dribbling line endings.
                    if conn.busy.is_none() {
                        conn.request_started.get_or_insert(now);
                    }
                    changed = true;
                    // Until a head is complete, one read at a time: the
                    // caller parses it, so at most one read's worth of a
                    // body arrives before its head is checked.
                    if conn.parser.head().is_none() {
                        return true;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return changed,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    conn.peer_closed = true;
                    conn.inbuf.clear();
                    conn.inpos = 0;
                    return true;
                }
            }
        }
    }

    /// Parses and handles buffered requests, one at a time, in order, while
    /// the connection is free (no call running, no output pending). Returns
    /// whether any input was consumed.
    fn process_conn(&mut self, token: Token) -> bool {
        let mut consumed = false;
        loop {
            let Some(conn) = self.http.as_mut().and_then(|f| f.conns.get_mut(&token)) else {
                return consumed;
            };
            if conn.busy.is_some()
                || conn.written < conn.out.len()
                || conn.close_after_write
                || conn.inpos >= conn.inbuf.len()
            {
                break;
            }
            let result = conn.parser.advance(&conn.inbuf[conn.inpos..]);
            match result {
                Ok((Progress::NeedMore, used)) => {
                    conn.inpos += used;
                    consumed |= used > 0;
                    if used > 0 {
                        conn.request_started.get_or_insert_with(Instant::now);
                    }
                    // A chunked body is counted as it grows: past the
                    // budget, it is refused (a declared length is admitted
                    // whole when the head is checked, and never refused).
                    let chunked = conn.parser.head().is_some() && conn.reserved == 0;
                    if chunked {
                        if let Some(early) = self.over_budget(token, 0) {
                            self.refuse_request(token, early);
                            return true;
                        }
                    }
                    break;
                }
                Ok((progress @ (Progress::Head | Progress::Continue), used)) => {
                    conn.inpos += used;
                    consumed = true;
                    conn.request_started.get_or_insert_with(Instant::now);
                    // Refuse before any of the body is taken, if the head
                    // alone decides or the body does not fit the budget.
                    match self.admit(token) {
                        // A small request refused with keep-alive whose body
                        // is already here: take it, and answer as usual
                        // (the checks run again on the whole request).
                        Some(early) if early.keep_alive && self.body_is_here(token) => {}
                        Some(early) => {
                            self.refuse_request(token, early);
                            return true;
                        }
                        None if progress == Progress::Continue => {
                            let Some(conn) =
                                self.http.as_mut().and_then(|f| f.conns.get_mut(&token))
                            else {
                                return true;
                            };
                            http::write_continue(&mut conn.out);
                            self.flush_conn(token);
                        }
                        None => {}
                    }
                }
                Ok((Progress::Done(mut request), used)) => {
                    if self.draining.is_some() {
                        // Draining: answer, then close, so the balancer's
                        // next request goes to another instance.
                        request.keep_alive = false;
                    }
                    conn.inpos += used;
                    consumed = true;
                    conn.request_started = None;
                    conn.reserved = 0;
                    conn.head_request = request.method == "HEAD";
                    self.handle_request(token, request);
                    self.flush_conn(token);
                }
                Err(e) => {
                    conn.head_request = false;
                    let early = Early {
                        status: e.status(),
                        headers: Vec::new(),
                        body: json_error(&e.to_string()),
                        keep_alive: false,
                    };
                    self.refuse_request(token, early);
                    return true;
                }
            }
        }
        if let Some(conn) = self.http.as_mut().and_then(|f| f.conns.get_mut(&token)) {
            if conn.inpos > 0 && conn.inpos * 2 >= conn.inbuf.len() {
                conn.inbuf.drain(..conn.inpos);
                conn.inpos = 0;
                if conn.inbuf.is_empty() && conn.inbuf.capacity() > KEEP_CAPACITY {
                    conn.inbuf = Vec::new();
                }
            }
        }
        consumed
    }

    pub(super) fn respond(
        &mut self,
        token: Token,
        status: u16,
        headers: &[(String, String)],
        body: &[u8],
        keep_alive: bool,
    ) {
        let Some(conn) = self.http.as_mut().and_then(|f| f.conns.get_mut(&token)) else {
            return;
        };
        let refs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let content_type = (!body.is_empty()).then_some("application/json");
        if conn.head_request {
            // RFC 9110 section 9.3.2: the same head as for GET, no content.
            http::write_head(
                &mut conn.out,
                status,
                content_type,
                Some(body.len()),
                &refs,
                keep_alive,
            );
        } else {
            http::write_response(&mut conn.out, status, content_type, &refs, body, keep_alive);
        }
        if !keep_alive {
            conn.close_after_write = true;
        }
        self.flush_conn(token);
    }

    fn flush_conn(&mut self, token: Token) {
        let Some(conn) = self.http.as_mut().and_then(|f| f.conns.get_mut(&token)) else {
            return;
        };
        while conn.written < conn.out.len() {
            match conn.stream.write(&conn.out[conn.written..]) {
                Ok(0) => break,
                Ok(n) => conn.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if !conn.writable_interest {
                        let _ = self.poll.registry().reregister(
                            &mut conn.stream,
                            token,
                            Interest::READABLE | Interest::WRITABLE,
                        );
                        conn.writable_interest = true;
                    }
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    self.cancel_conn(token);
                    return self.close_conn(token);
                }
            }
        }
        conn.out.clear();
        conn.written = 0;
        if conn.out.capacity() > KEEP_CAPACITY {
            conn.out = Vec::new();
        }
        if conn.writable_interest {
            let _ = self
                .poll
                .registry()
                .reregister(&mut conn.stream, token, Interest::READABLE);
            conn.writable_interest = false;
        }
        if conn.close_after_write && conn.refusing {
            // The client may still be sending the refused request: shut
            // our side, then drop its input for a moment before closing.
            conn.refusing = false;
            conn.close_after_write = false;
            let _ = conn.stream.shutdown(Shutdown::Write);
            conn.linger = Some(Instant::now() + LINGER);
            conn.inbuf = Vec::new();
            conn.inpos = 0;
            conn.reserved = 0;
            conn.parser = Parser::new(http::Limits::default());
            if let Some(front) = self.http.as_mut() {
                front.recount(token);
            }
            // Input may be waiting, with no edge to come.
            self.pump(token);
            return;
        }
        if conn.close_after_write {
            self.close_conn(token);
            return;
        }
        if let Some(front) = self.http.as_mut() {
            front.recount(token);
        }
    }

    fn close_conn(&mut self, token: Token) {
        let Some(front) = self.http.as_mut() else {
            return;
        };
        if let Some(mut conn) = front.conns.remove(&token) {
            let _ = self.poll.registry().deregister(&mut conn.stream);
            front.budget.update(conn.held, 0);
            if let Some(n) = front.peers.get_mut(&conn.peer) {
                *n -= 1;
                if *n == 0 {
                    front.peers.remove(&conn.peer);
                }
            }
        }
        self.sources.remove(&token);
        self.listeners
            .remove_where(|c| matches!(c, Client::Http { conn, .. } if *conn == token));
    }

    pub(super) fn http_timers(&mut self, now: Instant) {
        let Some(front) = self.http.as_ref() else {
            return;
        };
        let mut late = Vec::new();
        let mut idle = Vec::new();
        let mut quiet = Vec::new();
        for (token, conn) in &front.conns {
            if let Some(at) = conn.linger {
                if now >= at {
                    idle.push(*token);
                }
                continue;
            }
            if let Some((_, at)) = conn.busy.as_ref().and_then(|b| b.listen.as_ref()) {
                if now >= *at {
                    quiet.push(*token);
                }
                continue;
            }
            if conn.busy.is_some() {
                continue;
            }
            match conn.request_started {
                // Only line endings so far: no request to answer, just close.
                Some(start) if now >= start + front.request_timeout && conn.parser.is_idle() => {
                    idle.push(*token)
                }
                Some(start) if now >= start + front.request_timeout => late.push(*token),
                None if now >= conn.last_active + IDLE_TIMEOUT => idle.push(*token),
                _ => {}
            }
        }
        for token in late {
            if let Some(conn) = self.http.as_mut().and_then(|f| f.conns.get_mut(&token)) {
                conn.request_started = None;
                conn.head_request = false;
            }
            let early = Early {
                status: 408,
                headers: Vec::new(),
                body: json_error("request not received in time"),
                keep_alive: false,
            };
            self.refuse_request(token, early);
        }
        for token in idle {
            self.close_conn(token);
        }
        for token in quiet {
            let Some(conn) = self.http.as_mut().and_then(|f| f.conns.get_mut(&token)) else {
                continue;
            };
            if let Some((_, at)) = conn.busy.as_mut().and_then(|b| b.listen.as_mut()) {
                *at = now + KEEP_ALIVE;
            }
            http::write_sse_comment(&mut conn.out);
            self.flush_conn(token);
        }
    }

    /// Completes the request waiting on `conn` with a JSON-RPC response.
    pub(super) fn http_reply(&mut self, token: Token, msg: &Json) {
        let Some(conn) = self.http.as_mut().and_then(|f| f.conns.get_mut(&token)) else {
            return;
        };
        let Some(busy) = conn.busy.take() else { return };
        let status = if busy.modern {
            era::http_status(msg)
        } else {
            200
        };
        if busy.sse {
            let text = serde_json::to_string(msg).unwrap_or_default();
            http::write_sse_message(&mut conn.out, &text);
            http::write_last_chunk(&mut conn.out);
            if !busy.keep_alive {
                conn.close_after_write = true;
            }
            self.flush_conn(token);
        } else if status == 200 && !conn.head_request {
            // Serialized straight into the connection's buffer, its length
            // counted first: a large result is not held a third time as an
            // intermediate string.
            let length = json_length(msg);
            let refs: Vec<(&str, &str)> = busy
                .cors
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            http::write_head(
                &mut conn.out,
                200,
                Some("application/json"),
                Some(length),
                &refs,
                busy.keep_alive,
            );
            let _ = serde_json::to_writer(&mut conn.out, msg);
            if !busy.keep_alive {
                conn.close_after_write = true;
            }
            self.flush_conn(token);
        } else {
            let text = serde_json::to_string(msg).unwrap_or_default();
            self.respond(token, status, &busy.cors, text.as_bytes(), busy.keep_alive);
        }
        // Pipelined requests that waited behind this one.
        self.pump(token);
    }

    /// Completes the request waiting on `conn` without a JSON-RPC response.
    fn http_abandon(&mut self, token: Token) {
        let Some(conn) = self.http.as_mut().and_then(|f| f.conns.get_mut(&token)) else {
            return;
        };
        let Some(busy) = conn.busy.take() else { return };
        if busy.sse {
            http::write_last_chunk(&mut conn.out);
            if !busy.keep_alive {
                conn.close_after_write = true;
            }
            self.flush_conn(token);
        } else {
            self.respond(token, 202, &busy.cors, &[], busy.keep_alive);
        }
        self.pump(token);
    }

    /// A notification for the request waiting on `conn`, if it streams.
    pub(super) fn http_notify(&mut self, token: Token, msg: &Json) {
        let Some(conn) = self.http.as_mut().and_then(|f| f.conns.get_mut(&token)) else {
            return;
        };
        if !conn.busy.as_ref().is_some_and(|b| b.sse) {
            return;
        }
        let text = serde_json::to_string(msg).unwrap_or_default();
        http::write_sse_message(&mut conn.out, &text);
        self.flush_conn(token);
    }

    /// Whether the request waiting on `conn` is an event stream.
    pub(super) fn http_streaming(&self, token: Token) -> bool {
        self.http
            .as_ref()
            .and_then(|f| f.conns.get(&token))
            .is_some_and(|c| c.busy.as_ref().is_some_and(|b| b.sse))
    }

    /// Pool output for streaming requests of sessions that asked for logs.
    pub(super) fn http_forward_log(&mut self, level: usize, logger: &str, line: &str) {
        let Some(front) = self.http.as_mut() else {
            return;
        };
        let now = Instant::now();
        let mut targets = Vec::new();
        let streaming: Vec<(Token, String)> = front
            .conns
            .iter()
            .filter_map(|(t, c)| {
                c.busy
                    .as_ref()
                    .filter(|b| b.sse)
                    .map(|b| (*t, b.session.clone()))
            })
            .collect();
        for (token, session) in streaming {
            let Some(stored) = front.sessions.get(&session, now) else {
                continue;
            };
            let s = mcp::Session {
                log_level: stored.log_level,
                ..mcp::Session::default()
            };
            if let Some(note) = mcp::log_notification(&s, level, logger, line) {
                targets.push((token, note));
            }
        }
        for (token, note) in targets {
            self.http_notify(token, &note);
        }
    }
}

impl Reactor {
    /// Judges the request whose head just completed on `token`, before any
    /// of its body is taken: the head-only checks (none for `/health`), then
    /// the budget for its declared body. `Some` is the refusal.
    fn admit(&mut self, token: Token) -> Option<Early> {
        let front = self.http.as_mut()?;
        front.recount(token);
        let conn = front.conns.get(&token)?;
        let head = conn.parser.head()?;
        if head.path != health::PATH {
            if let Err(early) = vet(front, head) {
                return Some(early);
            }
        }
        let declared = conn.parser.declared_body();
        // What of the body already sits in the input buffer is counted.
        let unparsed = (conn.inbuf.len() - conn.inpos) as u64;
        let more = declared.map_or(0, |d| d.saturating_sub(unparsed).max(1));
        let early = self.over_budget(token, more);
        if early.is_none() {
            let conn = self.http.as_mut()?.conns.get_mut(&token)?;
            conn.reserved = declared.map_or(0, |d| usize::try_from(d).unwrap_or(usize::MAX));
            self.http.as_mut()?.recount(token);
        }
        early
    }

    /// Whether the whole declared body of the request on `token` is
    /// already in its input buffer.
    fn body_is_here(&self, token: Token) -> bool {
        let Some(conn) = self.http.as_ref().and_then(|f| f.conns.get(&token)) else {
            return false;
        };
        let unparsed = (conn.inbuf.len() - conn.inpos) as u64;
        conn.parser.declared_body().is_some_and(|n| n <= unparsed)
    }

    /// The 503 for a body of `length` more bytes on `token` when the budget
    /// has no room for it (for a chunked body, `length` 0: when the total is
    /// already past the limit).
    fn over_budget(&mut self, token: Token, length: u64) -> Option<Early> {
        let front = self.http.as_mut()?;
        front.recount(token);
        let fits = if length == 0 {
            !front.budget.exceeded()
        } else {
            front.budget.admits(length)
        };
        if fits {
            return None;
        }
        let (used, limit) = (front.budget.used(), front.budget.limit());
        front.notice(Notice::Budget, || {
            format!("the buffer budget is reached ({used} of {limit} bytes held, --max-buffered); a request body got 503")
        });
        Some(Early {
            status: 503,
            headers: vec![("Retry-After".into(), "1".into())],
            body: json_error("server busy: too much request data buffered; retry later"),
            keep_alive: false,
        })
    }

    /// Answers the request on `token` with `early` and `Connection: close`,
    /// dropping whatever of it was buffered; the connection then lingers
    /// (see `LINGER`) and closes.
    fn refuse_request(&mut self, token: Token, early: Early) {
        let Some(conn) = self.http.as_mut().and_then(|f| f.conns.get_mut(&token)) else {
            return;
        };
        conn.inbuf = Vec::new();
        conn.inpos = 0;
        conn.reserved = 0;
        conn.refusing = true;
        conn.request_started = None;
        let parser = Parser::new(http::Limits::default());
        let old = std::mem::replace(&mut conn.parser, parser);
        drop(old);
        self.respond(token, early.status, &early.headers, &early.body, false);
    }
}

/// The length of `msg`'s compact JSON text, without building it.
fn json_length(msg: &Json) -> usize {
    struct Count(usize);
    impl Write for Count {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, msg);
    count.0
}
