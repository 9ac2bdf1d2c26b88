//! Routing a complete HTTP request through [`ROUTES`], and the `/mcp`
//! endpoint: `DELETE` of a legacy session, and `POST`s of JSON-RPC messages
//! in either era (decided once per request), routed into `mcp`.
//! A long body is checked in slices first (`calls::prepare`), its
//! connection held busy.

use std::time::Instant;

use mio::Token;
use serde_json::Value as Json;

use super::conn::Busy;
use super::oauth::Guard;
use super::{KEEP_ALIVE, ROUTES};
use crate::edge::reactor::calls::Checked;
use crate::edge::reactor::{Client, Reactor};
use crate::protocol::http::{self, json_error, Headers, Notice, Request};
use crate::protocol::jsonrpc::{self, Incoming};
use crate::protocol::log::Untrusted;
use crate::protocol::mcp::{self, era, Step};

impl Reactor {
    /// Answers a complete request: the checks and the route table decide
    /// which handler gets it, or the refusal.
    pub(super) fn handle_request(&mut self, token: Token, req: Request) {
        self.serve_request(token, req, true);
    }

    /// [`Reactor::handle_request`]; `may_fetch`: under OAuth, a token whose
    /// key is not held may wait for the keys to be fetched.
    pub(super) fn serve_request(&mut self, token: Token, mut req: Request, may_fetch: bool) {
        let Some(front) = self.http.as_ref() else {
            return;
        };
        let admitted = http::admit(ROUTES, &front.gate_for(&req.path), &req);
        match admitted {
            // A path with a token of its own is not OAuth's to judge.
            Ok((route, cors)) if route.guarded && !front.own_gate(&req.path) => {
                let handler = route.handler;
                let Some(front) = self.http.as_mut() else {
                    return;
                };
                match front.oauth_guard(token, &mut req, &cors, may_fetch) {
                    Guard::Pass => {
                        if let Some(front) = self.http.as_mut() {
                            front.access_open(token, &req, false);
                        }
                        self.serve_endpoint(handler, token, req, cors)
                    }
                    Guard::Refuse(a) => {
                        if let Some(front) = self.http.as_mut() {
                            front.access_open(token, &req, true);
                        }
                        self.respond(token, a.status, &a.headers, &a.body, a.keep_alive)
                    }
                    Guard::Parked { fetch: false } => {}
                    Guard::Parked { fetch: true } => {
                        let parked = front.start_fetch(self.poll.registry(), &mut self.sources);
                        self.serve_parked(parked);
                    }
                }
            }
            Err(answer) => {
                if let Some(front) = self.http.as_mut() {
                    front.access_open(token, &req, true);
                }
                self.respond(
                    token,
                    answer.status,
                    &answer.headers,
                    &answer.body,
                    answer.keep_alive,
                )
            }
            // Only a guarded route's request proved the token.
            Ok((route, cors)) => {
                if let Some(front) = self.http.as_mut() {
                    front.access_open(token, &req, !route.guarded);
                }
                self.serve_endpoint(route.handler, token, req, cors)
            }
        }
    }

    /// The `/mcp` endpoint (`POST` or `DELETE`, checks passed).
    pub(super) fn http_mcp(&mut self, token: Token, req: Request, cors: Headers) {
        match req.method.as_str() {
            "DELETE" => self.http_delete(token, &req, cors),
            // A long body is checked in slices first (`calls::prepare`).
            _ if req.body.len() > mcp::SLICE_ABOVE => {
                self.hold_conn(token, req.keep_alive);
                self.check_body(token, req, cors);
            }
            _ => self.http_post(token, req, cors, None),
        }
    }

    fn http_delete(&mut self, token: Token, req: &Request, cors: Vec<(String, String)>) {
        let keep_alive = req.keep_alive;
        let Some(front) = self.http.as_mut() else {
            return;
        };
        let Some(id) = req.header("mcp-session-id").map(str::to_string) else {
            return self.respond(
                token,
                400,
                &cors,
                &json_error("missing Mcp-Session-Id header"),
                keep_alive,
            );
        };
        let owner = front.oauth_owner(token);
        let stored = front.sessions.get(&id, Instant::now());
        let foreign = owner.is_some_and(|o| stored.is_some_and(|s| s.owner() != o));
        if foreign || !front.sessions.remove(&id) {
            return self.respond(
                token,
                404,
                &cors,
                &json_error("unknown or expired session"),
                keep_alive,
            );
        }
        // The session's running calls are cancelled; their requests are
        // answered with an error (naming the request, so the client can match
        // it) so no client waits forever.
        let waiting = self.waiting_requests(&id, None);
        self.cancel_session(&id);
        for (conn, request_id) in waiting {
            let msg = jsonrpc::error_response(
                Some(&request_id),
                jsonrpc::ErrorCode::InvalidRequest,
                "session terminated by DELETE",
            );
            self.http_reply(conn, &msg);
        }
        self.respond(token, 200, &cors, br#"{"ok":true}"#, keep_alive);
    }

    /// Marks connection `token` busy while its request's body is checked
    /// in slices, so no later request of it is read meanwhile.
    pub(in crate::edge::reactor) fn hold_conn(&mut self, token: Token, keep_alive: bool) {
        if let Some(front) = self.http.as_mut() {
            front.hold(token, keep_alive);
        }
    }

    /// Handles a request whose body was checked in slices, on the
    /// connection [`Reactor::hold_conn`] held.
    pub(in crate::edge::reactor) fn post_checked(
        &mut self,
        token: Token,
        req: Request,
        cors: Vec<(String, String)>,
        checked: &Checked,
    ) {
        if let Some(conn) = self.http.as_mut().and_then(|f| f.conns.get_mut(&token)) {
            conn.take_busy();
        }
        self.http_post(token, req, cors, Some(checked));
        self.flush_conn(token);
        // Pipelined requests that waited behind this one.
        self.pump(token);
    }

    fn http_post(
        &mut self,
        token: Token,
        mut req: Request,
        cors: Vec<(String, String)>,
        checked: Option<&Checked>,
    ) {
        let keep_alive = req.keep_alive;
        let accepts_sse = req
            .header("accept")
            .is_some_and(|a| a.contains("text/event-stream"));
        // A `tools/call`'s arguments stay text (`decode_lazy`): a remote
        // call's packet is encoded from them directly, never from a tree.
        let (msg, arguments) = match checked {
            Some(c) => jsonrpc::decode_checked(&req.body, &c.verdict, c.span.clone(), &c.ends),
            None => jsonrpc::decode_lazy(&req.body),
        };
        if let Some(front) = self.http.as_mut() {
            front.access_message(token, &msg);
        }
        // The era is decided here, once; `mcp` is told, not asked again.
        let version = req.header("mcp-protocol-version");
        let in_session = req.header("mcp-session-id").is_some();
        if mcp::headers::is_modern_post(&msg, version, in_session) {
            return self.http_modern(token, &req, msg, arguments, cors);
        }
        let now = Instant::now();
        let Some(front) = self.http.as_mut() else {
            return;
        };
        let body = |v: &Json| mcp::structured::to_vec(v);
        match &msg {
            Incoming::Invalid(reply) => {
                // Unparseable bodies and batches are HTTP errors; a well-formed
                // request with a bad shape still gets its JSON-RPC error.
                let status = if reply.get("id").is_none_or(Json::is_null) {
                    400
                } else {
                    200
                };
                return self.respond(token, status, &cors, &body(reply), keep_alive);
            }
            Incoming::Empty => {
                let reply = jsonrpc::error_response(
                    None,
                    jsonrpc::ErrorCode::ParseError,
                    "invalid JSON: empty body",
                );
                return self.respond(token, 400, &cors, &body(&reply), keep_alive);
            }
            Incoming::Request { method, .. } if method == "initialize" => {
                let mut session = mcp::Session::default();
                let step =
                    mcp::handle_in_era(&self.catalog, &mut session, msg, arguments, Some(false));
                let version = session
                    .protocol_version
                    .clone()
                    .unwrap_or_else(|| mcp::DEFAULT_VERSION.to_string());
                let owner = front.owner_of(token);
                let created = loop {
                    let random = match front.random_id() {
                        Ok(r) => r,
                        Err(e) => {
                            let m = format!("cannot create a session: {e}");
                            return self.respond(token, 500, &cors, &json_error(&m), keep_alive);
                        }
                    };
                    if let Some(created) = front.sessions.create(random, &version, &owner, now) {
                        break created;
                    }
                };
                if created.evicted_own > 0 {
                    let who = match owner.as_str() {
                        "token" => "the token's holders".to_string(),
                        other => Untrusted(other).to_string(),
                    };
                    front.notice(Notice::SessionCap, || {
                        format!("{who} holds its cap of sessions (--max-sessions-per-owner); its least recently used one was dropped")
                    });
                }
                let id = created.id;
                let mut headers = cors;
                headers.push(("Mcp-Session-Id".into(), id));
                let Step::Reply(reply) = step else {
                    return self.respond(
                        token,
                        500,
                        &headers,
                        &json_error("initialize produced no reply"),
                        keep_alive,
                    );
                };
                return self.respond(token, 200, &headers, &body(&reply), keep_alive);
            }
            _ => {}
        }
        let Some(session_id) = req.header("mcp-session-id").map(str::to_string) else {
            return self.respond(
                token,
                400,
                &cors,
                &json_error("missing Mcp-Session-Id header"),
                keep_alive,
            );
        };
        let owner = front.oauth_owner(token);
        let stored = front.sessions.get(&session_id, now);
        let Some(stored) = stored.filter(|s| owner.is_none_or(|o| o == s.owner())) else {
            return self.respond(
                token,
                404,
                &cors,
                &json_error("unknown or expired session; re-initialize"),
                keep_alive,
            );
        };
        if let Some(v) = req.header("mcp-protocol-version") {
            // Any revision we speak is accepted (clients may send another
            // supported one than the session's); anything else is refused.
            if !mcp::SUPPORTED_VERSIONS.contains(&v) {
                let m = format!(
                    "unsupported MCP-Protocol-Version '{v}' (supported: {}; this session uses {})",
                    mcp::SUPPORTED_VERSIONS.join(", "),
                    stored.protocol_version
                );
                return self.respond(token, 400, &cors, &json_error(&m), keep_alive);
            }
        }
        let mut session = mcp::Session {
            initialized: stored.initialized,
            protocol_version: Some(stored.protocol_version.clone()),
            log_level: stored.log_level,
        };
        let mut step = mcp::handle_in_era(&self.catalog, &mut session, msg, arguments, Some(false));
        step.hand_over(Some(&mut req.body), &[]);
        stored.initialized = session.initialized;
        stored.log_level = session.log_level;
        front.sessions.touch(&session_id, now);
        if let Step::Call(call) = &step {
            if let Some(a) = front.oauth_tool_refusal(&self.catalog, token, call, &cors, keep_alive)
            {
                return self.respond(token, a.status, &a.headers, &a.body, a.keep_alive);
            }
        }
        match step {
            // `subscriptions/listen` is always a modern request.
            Step::Nothing | Step::Listen(_) => self.respond(token, 202, &cors, &[], keep_alive),
            Step::Task(request) => {
                let owner = self.call_owner(token, &session_id);
                self.http_task(token, &req, request, &owner, &cors, keep_alive)
            }
            Step::Resource(request) => {
                let owner = self.call_owner(token, &session_id);
                self.http_resource(token, request, &owner, &cors, keep_alive)
            }
            Step::Reply(reply) => self.respond(token, 200, &cors, &body(&reply), keep_alive),
            Step::Cancel(id) => {
                // No JSON-RPC response is due for a cancelled request (clients
                // reject one for an id they gave up on), but its POST still
                // needs an HTTP answer or that connection hangs for good: an
                // event stream just ends, a plain request gets an empty 202.
                let waiting = self.waiting_requests(&session_id, Some(&id));
                self.cancel(
                    &Client::Http {
                        conn: token,
                        session: session_id,
                    },
                    &id,
                );
                for (conn, _) in waiting {
                    self.http_abandon(conn);
                }
                self.respond(token, 202, &cors, &[], keep_alive)
            }
            Step::Call(mut request) => {
                request.owner = self.call_owner(token, &session_id);
                let sse = accepts_sse
                    && req.minor_version >= 1
                    && (request.progress_token.is_some() || session.log_level.is_some());
                self.start_http_call(token, request, session_id, sse, keep_alive, cors, false);
            }
        }
    }

    /// A modern (2026-07-28) request: no session, its headers checked against
    /// its body, its answer's status chosen by the revision (`404` for an
    /// unknown method, `400` for the request errors).
    fn http_modern(
        &mut self,
        token: Token,
        req: &Request,
        msg: Incoming,
        arguments: Option<&str>,
        cors: Vec<(String, String)>,
    ) {
        let keep_alive = req.keep_alive;
        let accepts_sse = req
            .header("accept")
            .is_some_and(|a| a.contains("text/event-stream"));
        let body = |v: &Json| mcp::structured::to_vec(v);
        match &msg {
            Incoming::Request { id, method, params } => {
                // A missing or malformed `_meta` is reported first; then the
                // headers must agree with the body; only then is the version
                // judged (a version we do not serve in both is -32022).
                let meta = era::request_meta(id, params.as_ref());
                let malformed = meta.as_ref().err().filter(|r| {
                    jsonrpc::error_code(r) == Some(jsonrpc::ErrorCode::InvalidParams as i64)
                });
                if let Some(reply) = malformed {
                    return self.respond(token, 400, &cors, &body(reply), keep_alive);
                }
                let lookup = |name: &str| req.header(name).map(str::to_string);
                if let Err(reply) = mcp::headers::check(id, method, params.as_ref(), &lookup) {
                    return self.respond(token, 400, &cors, &body(&reply), keep_alive);
                }
            }
            Incoming::Invalid(reply) => {
                // A modern client gets a JSON-RPC error without the `null`
                // id this revision's schema forbids.
                let mut reply = reply.clone();
                if let Json::Object(m) = &mut reply {
                    if m.get("id").is_some_and(Json::is_null) {
                        m.remove("id");
                    }
                }
                let status =
                    if jsonrpc::error_code(&reply) == Some(jsonrpc::ErrorCode::ParseError as i64) {
                        400
                    } else {
                        era::http_status(&reply).max(400)
                    };
                return self.respond(token, status, &cors, &body(&reply), keep_alive);
            }
            Incoming::Empty => {
                let mut reply = jsonrpc::error_response(
                    None,
                    jsonrpc::ErrorCode::ParseError,
                    "invalid JSON: empty body",
                );
                if let Json::Object(m) = &mut reply {
                    m.remove("id");
                }
                return self.respond(token, 400, &cors, &body(&reply), keep_alive);
            }
            Incoming::Notification { .. } | Incoming::Response => {}
        }
        let mut stateless = mcp::Session::default();
        let mut step =
            mcp::handle_in_era(&self.catalog, &mut stateless, msg, arguments, Some(true));
        step.hand_over(None, &req.body);
        if let Step::Call(call) = &step {
            let front = self.http.as_ref();
            let refusal = front
                .and_then(|f| f.oauth_tool_refusal(&self.catalog, token, call, &cors, keep_alive));
            if let Some(a) = refusal {
                return self.respond(token, a.status, &a.headers, &a.body, a.keep_alive);
            }
        }
        match step {
            // Notifications are accepted and ignored: on HTTP a modern
            // request is cancelled by closing its stream, not by a message.
            Step::Nothing | Step::Cancel(_) => self.respond(token, 202, &cors, &[], keep_alive),
            Step::Reply(reply) => {
                let status = era::http_status(&reply);
                self.respond(token, status, &cors, &body(&reply), keep_alive)
            }
            Step::Task(request) => {
                let owner = self.call_owner(token, "");
                self.http_task(token, req, request, &owner, &cors, keep_alive)
            }
            Step::Resource(request) => {
                let owner = self.call_owner(token, "");
                self.http_resource(token, request, &owner, &cors, keep_alive)
            }
            Step::Call(mut request) => {
                request.owner = self.call_owner(token, "");
                let wants_logs = request
                    .modern
                    .as_ref()
                    .is_some_and(|m| m.log_level.is_some());
                let sse = accepts_sse
                    && req.minor_version >= 1
                    && (request.progress_token.is_some() || wants_logs);
                self.start_http_call(token, request, String::new(), sse, keep_alive, cors, true);
            }
            Step::Listen(mut listen) => {
                if req.minor_version < 1 {
                    let reply = jsonrpc::error_response(
                        Some(&listen.id),
                        jsonrpc::ErrorCode::InvalidRequest,
                        "subscriptions/listen needs HTTP/1.1 (its answer is an open event stream)",
                    );
                    return self.respond(token, 400, &cors, &body(&reply), keep_alive);
                }
                let Some(conn) = self.conn_mut(token) else {
                    return;
                };
                let refs: Vec<(&str, &str)> =
                    cors.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                http::write_sse_head(conn.out(), &refs, keep_alive);
                let owner = self.call_owner(token, "");
                self.agreed_task_ids(&mut listen, &owner);
                let Some(conn) = self.conn_mut(token) else {
                    return;
                };
                let ack = mcp::subscriptions::acknowledgement(&listen);
                http::write_sse_message(conn.out(), &ack.to_string());
                conn.set_busy(Busy {
                    session: String::new(),
                    sse: true,
                    keep_alive,
                    cors,
                    modern: true,
                    listen: Some((listen.id.clone(), Instant::now() + KEEP_ALIVE)),
                });
                let client = Client::Http {
                    conn: token,
                    session: String::new(),
                };
                self.listeners.add(client, &listen);
                self.flush_conn(token);
            }
        }
    }

    /// [`HttpFront::call_owner`](super::HttpFront::call_owner) of a request
    /// on `token` in legacy session `session` (empty: a modern request).
    fn call_owner(&self, token: Token, session: &str) -> String {
        self.http
            .as_ref()
            .map_or_else(String::new, |f| f.call_owner(token, session))
    }

    /// The connections waiting for running calls of `session` (only the call
    /// with request id `only`, if given), with the request ids.
    fn waiting_requests(
        &self,
        session: &str,
        only: Option<&jsonrpc::RequestId>,
    ) -> Vec<(Token, jsonrpc::RequestId)> {
        self.calls
            .values()
            .filter(|c| only.is_none_or(|id| &c.request.id == id))
            .filter_map(|c| match &c.client {
                Client::Http { conn, session: s } if s == session => {
                    Some((*conn, c.request.id.clone()))
                }
                _ => None,
            })
            .collect()
    }
}

impl Reactor {
    /// Starts a tool call answered on connection `token` (`session` empty
    /// for a modern request): the connection is marked busy with it, and an
    /// event stream's head goes out first when `sse`.
    #[allow(clippy::too_many_arguments)]
    fn start_http_call(
        &mut self,
        token: Token,
        request: crate::protocol::mcp::CallRequest,
        session: String,
        sse: bool,
        keep_alive: bool,
        cors: Vec<(String, String)>,
        modern: bool,
    ) {
        let Some(conn) = self.conn_mut(token) else {
            return;
        };
        if sse {
            let refs: Vec<(&str, &str)> =
                cors.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            http::write_sse_head(conn.out(), &refs, keep_alive);
        }
        conn.set_busy(Busy {
            session: session.clone(),
            sse,
            keep_alive,
            cors,
            modern,
            listen: None,
        });
        self.flush_conn(token);
        self.start_call(
            Client::Http {
                conn: token,
                session,
            },
            request,
        );
    }
}
