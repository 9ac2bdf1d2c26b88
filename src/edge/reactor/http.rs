//! The Streamable HTTP transport inside the reactor.
//!
//! A non-blocking listener and its connections live in the same poll loop as
//! the pools, so a slow or idle client never delays anyone else. Each
//! connection feeds its bytes to the pure `http::Parser`; a complete request
//! goes through the checks (Host, Origin, CORS preflight, bearer token, path,
//! method), then its JSON-RPC body through the pure `endpoint::mcp_post`.
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
//!
//! The endpoints are the entries of [`ROUTES`] (path, methods, guarded or
//! open, handler); `http::admit` matches a request against it and runs the
//! checks. The pieces: this file has the front (listener, sessions, budget,
//! caps, routes) and a complete request's way to its handler, the `/mcp`
//! endpoint here: `DELETE` of a legacy session, and a `POST`'s decisions
//! taken by the pure `endpoint::mcp_post`, its step handed to the reactor's
//! `apply` (a long body is checked in slices first, `calls::prepare`);
//! `conn` one connection's state and its small API; `pump` accepting,
//! reading, parsing and writing; `reply` the answers to requests and their
//! notifications; `health` the `/health` endpoint and the drain; `caps` the
//! connection caps; `news` what the front is handed and what it leaves to
//! the reactor.

use crate::edge::log;
use crate::edge::proc::syscall;
use crate::protocol::log::Untrusted;
use std::fs::File;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use mio::net::TcpListener;
use mio::{Interest, Poll, Registry, Token};

use super::apply::Origin;
use super::calls::Checked;
use super::idhash::IdMap;
use super::{StartError, LISTENER};
use crate::edge::cli::{HttpConfig, Settings};
use crate::edge::proc;
use crate::protocol::http::endpoint;
use crate::protocol::http::{
    self, Answer, Budget, Gate, Headers, Notice, Notices, OriginPolicy, Post, Request, Route,
    SessionLimits, Sessions,
};
use crate::protocol::instance::InstanceId;
use crate::protocol::jsonrpc;
use crate::protocol::mcp::{self, Catalog};

mod access;
mod admission;
mod caps;
mod conn;
mod conns;
mod health;
mod metrics;
mod news;
#[cfg(feature = "oauth")]
mod oauth;
#[cfg(not(feature = "oauth"))]
#[path = "http/oauth_off.rs"]
mod oauth;
mod peers;
mod pump;
mod reply;
use caps::connection_cap;
use conn::Conn;
pub(super) use conn::{Content, Head};
use conns::Conns;
use news::{Cx, HttpNews};
use oauth::{Guard, Parked};
use peers::Peers;

/// What serves an endpoint (see `HttpFront::serve_endpoint`).
#[derive(Clone, Copy, Debug)]
enum Handler {
    /// The MCP endpoint (`HttpFront::mcp`).
    Mcp,
    /// The Prometheus scrape (`metrics`).
    Metrics,
    /// The OAuth protected resource's metadata document (`oauth`).
    OAuthMetadata,
    /// The health check (`health`).
    Health,
}

/// The endpoints. A guarded one is behind the Host, Origin and token
/// checks; an open one is answered to anyone (load balancers probe
/// `/health` without credentials, and it tells nothing else).
const ROUTES: &[Route<Handler>] = &[
    Route {
        path: "/mcp",
        methods: &["POST", "DELETE"],
        guarded: true,
        handler: Handler::Mcp,
    },
    Route {
        path: metrics::PATH,
        methods: &["GET"],
        guarded: true,
        handler: Handler::Metrics,
    },
    Route {
        path: oauth::METADATA,
        methods: &["GET"],
        guarded: false,
        handler: Handler::OAuthMetadata,
    },
    Route {
        path: oauth::METADATA_MCP,
        methods: &["GET"],
        guarded: false,
        handler: Handler::OAuthMetadata,
    },
    Route {
        path: health::PATH,
        methods: &["GET", "HEAD"],
        guarded: false,
        handler: Handler::Health,
    },
];

/// Most open connections; one more gets 503 and is closed. Fewer when the
/// open-file limit cannot be raised far enough (see `connection_cap`).
const MAX_CONNECTIONS: usize = 1024;
/// The accept queue asked for (the system may cap it).
const LISTEN_BACKLOG: libc::c_int = 4096;
/// Descriptors kept free for pools, pipes and the like when sizing the
/// connection cap to the open-file limit.
const FD_RESERVE: libc::rlim_t = 64;
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

pub(super) struct HttpFront {
    /// `None` once a drain has closed it (see `reactor::drain`).
    listener: Option<TcpListener>,
    /// A request's head and body must arrive within this time of its first
    /// byte; an idle keep-alive connection is closed after the other.
    timeouts: conn::Timeouts,
    /// What the checks take: the Origin policy and the tokens.
    checks: Checks,
    sessions: Sessions,
    conns: Conns,
    /// The connection cap: `MAX_CONNECTIONS` or what the fd limit allows.
    max_conns: usize,
    /// An open descriptor given up when `accept` runs out of descriptors,
    /// so the waiting connection can be taken and refused with a 503
    /// instead of staying in the backlog (no event would come for it).
    spare_fd: Option<File>,
    /// Bytes held by all connections (`--max-buffered`).
    budget: Budget,
    /// Connections and unread answers per peer address (backpressure).
    peers: Peers,
    notices: Notices,
    /// Serving's start and its drain (`health`).
    life: health::Life,
    /// The OAuth resource server (`--oauth-issuer`).
    oauth: Option<oauth::OAuthFront>,
    /// The open access record of each connection's request (`obs`).
    access: IdMap<Token, super::obs::Access>,
    /// What its operations left to the reactor (`news`), in order.
    news: Vec<HttpNews>,
}

/// What the checks of guarded requests take.
struct Checks {
    /// `--auth-token`.
    token: Option<String>,
    policy: OriginPolicy,
    /// `--metrics-token`: what `GET /metrics` takes instead of `token`.
    metrics_token: Option<String>,
}

impl Checks {
    /// `--auth-token`, if set.
    fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }
}

impl HttpFront {
    pub(super) fn bind(
        poll: &Poll,
        config: HttpConfig,
        settings: &Settings,
        catalog: &Catalog,
        instance: &InstanceId,
    ) -> Result<HttpFront, StartError> {
        // IP literals and `localhost` only: no name service lookup, so a
        // static binary needs no NSS modules and start-up never waits on DNS.
        let ip = bind_ip(&settings.http_host).ok_or_else(|| {
            StartError(format!(
                "--http-host '{}' is not an IP address or 'localhost'",
                settings.http_host
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
        let no_auth = config.auth_token.is_none() && config.oauth.is_none();
        if !loopback && no_auth && !settings.allow_no_auth {
            return Err(StartError(format!(
                "refusing to serve on {addr} with no auth token (the address is not loopback); set --auth-token or MORLOC_MCP_TOKEN, or pass --allow-no-auth"
            )));
        }
        let max_conns = connection_cap();
        if max_conns < MAX_CONNECTIONS {
            log::warn(&format!("warning: the open-file limit allows only {max_conns} HTTP connections (of {MAX_CONNECTIONS})"));
        }
        let mut listener = TcpListener::bind(addr)
            .map_err(|e| StartError(format!("cannot listen on {addr}: {e}")))?;
        // A deeper accept queue than the 128 mio asks for: a client that
        // reconnects as fast as it is refused must not fill the queue and
        // make another client's SYN wait for a retransmission (1 s). Linux
        // caps it at net.core.somaxconn; on failure the 128 stays.
        let fd = std::os::fd::AsRawFd::as_raw_fd(&listener);
        // SAFETY: listen on a descriptor the listener owns.
        let _ = syscall!(listen(fd, LISTEN_BACKLOG));
        let addr = listener
            .local_addr()
            .map_err(|e| StartError(format!("cannot read the bound address: {e}")))?;
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)
            .map_err(|e| StartError(format!("cannot watch the listener: {e}")))?;
        log::info(&format!(
            "serving {} (instance {instance}) over HTTP at http://{addr}/mcp",
            Untrusted(&catalog.server_name)
        ));
        let oauth = match config.oauth {
            Some(oauth_config) => {
                let canonical = settings.public_url.clone().unwrap_or_else(|| {
                    let host = match addr.ip() {
                        IpAddr::V6(_) if !settings.http_host.starts_with('[') => {
                            format!("[{}]", settings.http_host)
                        }
                        _ => settings.http_host.clone(),
                    };
                    format!("http://{host}:{}/mcp", addr.port())
                });
                let front = oauth::OAuthFront::new(oauth_config, canonical, catalog)?;
                log::info(&format!(
                    "OAuth: tokens must name the audience {}",
                    Untrusted(front.audience())
                ));
                Some(front)
            }
            None => None,
        };
        let policy = OriginPolicy::new(&settings.http_host, settings.allow_origins.iter());
        let sessions = Sessions::new(
            SessionLimits {
                ttl: settings.session_ttl,
                max_per_owner: settings.max_sessions_per_owner,
                max_sessions: settings.max_sessions,
            },
            instance.clone(),
        );
        Ok(HttpFront {
            listener: Some(listener),
            timeouts: conn::Timeouts {
                request: settings.request_timeout,
                idle: settings.idle_timeout,
            },
            checks: Checks {
                token: config.auth_token,
                policy,
                metrics_token: None,
            },
            sessions,
            conns: Conns::default(),
            max_conns,
            spare_fd: File::open("/dev/null").ok(),
            budget: Budget::new(settings.max_buffered),
            peers: Peers::new(
                settings.max_conns_per_peer,
                settings.max_unread_per_conn,
                settings.max_unread_per_peer,
            ),
            notices: Notices::new(http::NOTICE_PERIOD),
            life: health::Life::new(),
            oauth,
            access: IdMap::default(),
            news: Vec::new(),
        })
    }

    /// Whether a drain has begun.
    pub(super) fn draining(&self) -> bool {
        self.life.deadline().is_some()
    }

    /// The checks' configuration, for `http::admit`.
    fn gate(&self) -> Gate<'_> {
        Gate {
            policy: &self.checks.policy,
            // Under OAuth the token is checked by `oauth_guard`.
            token: self.checks.token().filter(|_| self.oauth.is_none()),
        }
    }

    /// Removes connection `token`, releasing what it held; false if it
    /// was gone.
    fn remove_conn(&mut self, token: Token, registry: &Registry) -> bool {
        let Some(mut conn) = self.conns.remove(&token) else {
            return false;
        };
        conn.deregister(registry);
        if let Some(access) = self.access.remove(&token) {
            access.finish(None, "closed");
        }
        let held = conn.held();
        self.budget.update(held.input, 0);
        let (peer, paused) = (conn.peer(), conn.is_paused());
        self.peers
            .close(peer, held.output, paused, &mut self.budget);
        true
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

    /// Counts again what connection `token` holds against the budget: its
    /// input buffer and its request body (at least the length admitted for
    /// it), and its output, as part of its address's (see `peers`).
    fn recount(&mut self, token: Token) {
        if let Some(conn) = self.conns.get_mut(&token) {
            let (old, new) = conn.recount();
            self.budget.update(old.input, new.input);
            let peer = conn.peer();
            self.peers
                .unread(peer, old.output, new.output, &mut self.budget);
        }
    }

    /// The paused connections whose address dropped below its bound of
    /// unread answers: to pump again.
    pub(super) fn take_woken(&mut self) -> Vec<Token> {
        self.peers.take_woken()
    }

    /// Whether connection `token` is paused for backpressure now (its own
    /// unread answers or its address's past their bound); notes a change.
    fn paused(&mut self, token: Token) -> bool {
        let Some(conn) = self.conns.get_mut(&token) else {
            return false;
        };
        let over = self.peers.over(conn.peer(), conn.unread());
        let changed = conn.set_paused(over);
        if over {
            self.peers.paused(conn.peer(), token, changed);
        } else if changed {
            self.peers.resumed();
        }
        over
    }

    /// Prints `message()` as a diagnostic, unless a line of this kind was
    /// printed less than `NOTICE_PERIOD` ago (then it is only counted).
    fn notice(&mut self, kind: Notice, message: impl FnOnce() -> String) {
        if let Some(suppressed) = self.notices.note(kind, Instant::now()) {
            log::warn(&format!(
                "HTTP: {}{}",
                message(),
                http::suppressed_suffix(suppressed, http::NOTICE_PERIOD)
            ));
        }
    }

    /// The owner of what a request on `token` creates (sessions): the
    /// bearer token when the server has one (every accepted request carries
    /// the one token, so all its holders are one owner), else the peer
    /// address.
    pub(super) fn owner_of(&self, token: Token) -> String {
        let peer = self.conns.get(&token).map(Conn::peer);
        let principal = self.conns.get(&token).and_then(Conn::principal);
        if let Some(principal) = principal {
            return principal.owner();
        }
        match (&self.checks.token, peer) {
            (Some(_), _) => "token".to_string(),
            (None, Some(ip)) => peer_owner(ip),
            (None, None) => String::new(),
        }
    }

    /// The owner of what a request on `token` leaves behind (tasks, jobs,
    /// stored results): under OAuth, the token's issuer and subject; with
    /// `--auth-token`, `token` (every holder of the one token is one owner,
    /// however it spells the scheme); without authentication, the legacy
    /// session `session` (empty for a modern request), else the peer's
    /// address. A client-sent `Authorization` header is never read here:
    /// without authentication it proves nothing, so it owns nothing.
    pub(super) fn call_owner(&self, token: Token, session: &str) -> String {
        let conn = self.conns.get(&token);
        if let Some(principal) = conn.and_then(Conn::principal) {
            return principal.owner();
        }
        match (&self.checks.token, conn.map(Conn::peer)) {
            (Some(_), _) => "token".to_string(),
            (None, _) if !session.is_empty() => ["session ", session].concat(),
            (None, Some(ip)) => peer_owner(ip),
            (None, None) => String::new(),
        }
    }

    /// The earliest timer of the connections, and the drain's deadline.
    pub(super) fn next_deadline(&mut self) -> Option<Instant> {
        let conns = self.conns.next_deadline(self.timeouts);
        let fetch = self.oauth.as_ref().and_then(oauth::OAuthFront::deadline);
        conns
            .into_iter()
            .chain(self.life.deadline())
            .chain(fetch)
            .min()
    }

    /// Holds connection `token` busy while its request waits (its body
    /// checked in slices, or the keys fetched), so no later request of it
    /// is read meanwhile.
    pub(super) fn hold(&mut self, token: Token, keep_alive: bool) {
        if let Some(conn) = self.conns.get_mut(&token) {
            conn.set_busy(conn::Busy {
                session: String::new(),
                sse: false,
                keep_alive,
                cors: Vec::new(),
                modern: false,
                listen: None,
            });
        }
    }
}

impl HttpFront {
    /// Answers a complete request: the checks and the route table decide
    /// which handler gets it, or the refusal. `may_fetch`: under OAuth, a
    /// token whose key is not held may wait for the keys to be fetched.
    pub(super) fn serve_request(
        &mut self,
        cx: &mut Cx,
        token: Token,
        mut req: Request,
        may_fetch: bool,
    ) {
        let admitted = http::admit(ROUTES, &self.gate_for(&req.path), &req);
        match admitted {
            // A path with a token of its own is not OAuth's to judge.
            Ok((route, cors)) if route.guarded && !self.own_gate(&req.path) => {
                let handler = route.handler;
                match self.oauth_guard(token, &mut req, &cors, may_fetch) {
                    Guard::Pass => {
                        self.access_open(token, &req, false);
                        self.serve_endpoint(cx, handler, token, req, cors)
                    }
                    Guard::Refuse(a) => {
                        self.access_open(token, &req, true);
                        self.send(cx, token, a, None)
                    }
                    Guard::Parked { fetch: false } => {}
                    Guard::Parked { fetch: true } => {
                        let parked = self.start_fetch(cx.registry, cx.sources);
                        self.serve_parked(cx, parked);
                    }
                }
            }
            Err(answer) => {
                self.access_open(token, &req, true);
                self.send(cx, token, answer, None)
            }
            // Only a guarded route's request proved the token.
            Ok((route, cors)) => {
                self.access_open(token, &req, !route.guarded);
                self.serve_endpoint(cx, route.handler, token, req, cors)
            }
        }
    }

    /// Serves a request its route admitted, with the CORS headers `cors`:
    /// `/mcp` here; the counts of `/metrics` and `/health` are the
    /// reactor's (`HttpNews`).
    fn serve_endpoint(
        &mut self,
        cx: &mut Cx,
        handler: Handler,
        token: Token,
        req: Request,
        cors: Headers,
    ) {
        let keep_alive = req.keep_alive;
        match handler {
            Handler::Mcp => self.mcp(cx, token, req, cors),
            Handler::Metrics => self.news.push(HttpNews::Metrics {
                token,
                cors,
                keep_alive,
            }),
            Handler::Health => self.news.push(HttpNews::Health { token, keep_alive }),
            Handler::OAuthMetadata => {
                let answer = self.oauth_metadata(cx.catalog, keep_alive);
                self.send(cx, token, answer, None);
            }
        }
    }

    /// Answers the request on `token` with `answer` (a JSON body unless
    /// `content_type` says otherwise).
    pub(in crate::edge::reactor) fn send(
        &mut self,
        cx: &mut Cx,
        token: Token,
        answer: Answer,
        content_type: Option<&str>,
    ) {
        let Answer {
            status,
            headers,
            body,
            keep_alive,
        } = answer;
        let head = Head {
            status,
            content_type: content_type.or((!body.is_empty()).then_some("application/json")),
            headers: &headers,
            keep_alive,
        };
        self.answer(cx, token, head, Content::Body(&body));
    }

    /// Judges again the requests that waited for the keys, now that their
    /// fetch has ended (without another fetch).
    pub(super) fn serve_parked(&mut self, cx: &mut Cx, parked: Parked) {
        for (token, req) in parked {
            let Some(conn) = self.conns.get_mut(&token) else {
                continue;
            };
            conn.take_busy();
            let before = self.news.len();
            self.serve_request(cx, token, req, false);
            if self.news.len() > before {
                // The reactor has a part in it: the rest after.
                self.news.push(HttpNews::Continue(token));
                continue;
            }
            self.flush(cx, token);
            self.pump(cx, token);
        }
    }

    /// An event on the key fetch's socket (`oauth`).
    pub(in crate::edge::reactor) fn keys_event(&mut self, cx: &mut Cx) {
        let parked = self.jwks_event(cx.registry, cx.sources);
        self.serve_parked(cx, parked);
    }

    /// The `/mcp` endpoint (`POST` or `DELETE`, checks passed).
    fn mcp(&mut self, cx: &mut Cx, token: Token, req: Request, cors: Headers) {
        match req.method.as_str() {
            "DELETE" => self.mcp_delete(cx, token, &req, cors),
            // A long body is checked in slices first (`calls::prepare`).
            _ if req.body.len() > mcp::SLICE_ABOVE => {
                // No later request of the connection is read meanwhile.
                self.hold(token, req.keep_alive);
                self.news.push(HttpNews::CheckBody { token, req, cors });
            }
            _ => self.mcp_post(cx, token, req, cors, None),
        }
    }

    /// `DELETE` of a legacy session: the session goes here, its calls in
    /// the reactor (`HttpNews::SessionEnded`), which then answers.
    fn mcp_delete(&mut self, cx: &mut Cx, token: Token, req: &Request, cors: Headers) {
        let owner = self.oauth_owner(token);
        let now = Instant::now();
        match endpoint::mcp_delete(&mut self.sessions, req, owner.as_deref(), &cors, now) {
            Ok(session) => self.news.push(HttpNews::SessionEnded {
                token,
                session,
                cors,
                keep_alive: req.keep_alive,
            }),
            Err(a) => self.send(cx, token, a, None),
        }
    }

    /// Handles a request whose body was checked in slices, on the
    /// connection `hold` held; then the requests pipelined behind it.
    pub(in crate::edge::reactor) fn post_checked(
        &mut self,
        cx: &mut Cx,
        token: Token,
        req: Request,
        cors: Headers,
        checked: &Checked,
    ) {
        if let Some(conn) = self.conns.get_mut(&token) {
            conn.take_busy();
        }
        self.mcp_post(cx, token, req, cors, Some(checked));
        self.news.push(HttpNews::Continue(token));
    }

    /// A `POST` to `/mcp`: its body decoded, its decisions taken by the
    /// pure `endpoint::mcp_post`; its step goes to the reactor.
    fn mcp_post(
        &mut self,
        cx: &mut Cx,
        token: Token,
        mut req: Request,
        cors: Headers,
        checked: Option<&Checked>,
    ) {
        // A `tools/call`'s arguments stay text: a remote call's packet is
        // encoded from them directly, never from a tree; a plain one is
        // read in place, in one walk (`decode_call`).
        let body = match checked {
            Some(c) => {
                let (msg, arguments) =
                    jsonrpc::decode_checked(&req.body, &c.verdict, c.span.clone(), &c.ends);
                jsonrpc::Decoded::Message(msg, arguments)
            }
            None => jsonrpc::decode_call(&req.body),
        };
        match &body {
            jsonrpc::Decoded::Call(call) => self.access_call(token, call),
            jsonrpc::Decoded::Message(msg, _) => self.access_message(token, msg),
        }
        let creator = self.owner_of(token);
        let oauth = self.oauth_owner(token).is_some();
        // Session ids must not be guessable: without a random source, no
        // session is made.
        let mut random = || {
            let mut bytes = [0u8; 16];
            proc::fill_random(&mut bytes).map_err(|e| e.to_string())?;
            Ok(bytes)
        };
        let state = http::PostState {
            catalog: cx.catalog,
            sessions: &mut self.sessions,
            creator,
            oauth,
            now: Instant::now(),
            random: &mut random,
        };
        match endpoint::mcp_post(state, &req, body, cors) {
            Post::Answer(a) => self.send(cx, token, a, None),
            Post::Apply(mut step, mut framing) => {
                if let Some(notice) = framing.notice.take() {
                    self.notice(Notice::SessionCap, || notice);
                }
                // A call's long arguments take the body they were read from.
                step.hand_over(Some(&mut req.body), &[]);
                if let Some(call) = step.call_mut() {
                    // A tool call is admitted here: refused with a `403`
                    // when its tool needs scopes the request's token lacks,
                    // else it gets its owner (`call_owner`).
                    let (cors, keep_alive) = (&framing.headers, framing.keep_alive);
                    let catalog = cx.catalog;
                    if let Some(refusal) =
                        self.oauth_tool_refusal(catalog, token, call, cors, keep_alive)
                    {
                        return self.send(cx, token, refusal, None);
                    }
                    call.owner = self.call_owner(token, &framing.session);
                }
                let origin = Origin::Http {
                    conn: token,
                    framing,
                };
                self.news.push(HttpNews::Apply(origin, step));
            }
        }
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

/// `peer <address>`, the owner named by a peer's address: what
/// `format!("peer {ip}")` writes, an IPv4 address without the formatting
/// machinery (this runs for every request).
pub(super) fn peer_owner(ip: std::net::IpAddr) -> String {
    let std::net::IpAddr::V4(v4) = ip else {
        return format!("peer {ip}");
    };
    let mut out = String::with_capacity(20);
    out.push_str("peer ");
    for (i, octet) in v4.octets().into_iter().enumerate() {
        if i > 0 {
            out.push('.');
        }
        if octet >= 100 {
            out.push(char::from(b'0' + octet / 100));
        }
        if octet >= 10 {
            out.push(char::from(b'0' + octet / 10 % 10));
        }
        out.push(char::from(b'0' + octet % 10));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    #[test]
    fn peer_owner_writes_what_format_writes() {
        let addresses = [
            "0.0.0.0",
            "127.0.0.1",
            "10.20.100.255",
            "9.99.199.200",
            "::1",
            "fe80::2",
        ];
        for text in addresses {
            let ip: IpAddr = text.parse().unwrap();
            assert_eq!(super::peer_owner(ip), format!("peer {ip}"), "{text}");
        }
    }
}
