//! Routing a complete HTTP request through [`ROUTES`], and the `/mcp`
//! endpoint: `DELETE` of a legacy session, and `POST`s of JSON-RPC messages
//! in either era (decided once per request), routed into `mcp`.
//! A long body is checked in slices first (`calls::prepare`), its
//! connection held busy.

use std::time::Instant;

use mio::Token;

use super::oauth::Guard;
use super::ROUTES;
use crate::edge::proc;
use crate::edge::reactor::apply::Origin;
use crate::edge::reactor::calls::Checked;
use crate::edge::reactor::{Client, Reactor};
use crate::protocol::http::{self, Headers, Notice, Post, Request};
use crate::protocol::jsonrpc;
use crate::protocol::mcp;

impl Reactor {
    /// Answers a complete request: the checks and the route table decide
    /// which handler gets it, or the refusal. `may_fetch`: under OAuth, a
    /// token whose key is not held may wait for the keys to be fetched.
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
                // No later request of the connection is read meanwhile.
                if let Some(front) = self.http.as_mut() {
                    front.hold(token, req.keep_alive);
                }
                self.check_body(token, req, cors);
            }
            _ => self.http_post(token, req, cors, None),
        }
    }

    fn http_delete(&mut self, token: Token, req: &Request, cors: Vec<(String, String)>) {
        let Some(front) = self.http.as_mut() else {
            return;
        };
        let owner = front.oauth_owner(token);
        let now = Instant::now();
        let id = match http::mcp_delete(&mut front.sessions, req, owner.as_deref(), &cors, now) {
            Ok(id) => id,
            Err(a) => return self.respond(token, a.status, &a.headers, &a.body, a.keep_alive),
        };
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
        self.respond(token, 200, &cors, br#"{"ok":true}"#, req.keep_alive);
    }

    /// Handles a request whose body was checked in slices, on the
    /// connection `HttpFront::hold` held.
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

    /// A `POST` to `/mcp`: its body decoded, its decisions taken by the
    /// pure `http::mcp_post`, its step applied.
    fn http_post(
        &mut self,
        token: Token,
        mut req: Request,
        cors: Vec<(String, String)>,
        checked: Option<&Checked>,
    ) {
        // A `tools/call`'s arguments stay text (`decode_lazy`): a remote
        // call's packet is encoded from them directly, never from a tree.
        let (msg, arguments) = match checked {
            Some(c) => jsonrpc::decode_checked(&req.body, &c.verdict, c.span.clone(), &c.ends),
            None => jsonrpc::decode_lazy(&req.body),
        };
        let Some(front) = self.http.as_mut() else {
            return;
        };
        front.access_message(token, &msg);
        let creator = front.owner_of(token);
        let oauth = front.oauth_owner(token).is_some();
        // Session ids must not be guessable: without a random source, no
        // session is made.
        let mut random = || {
            let mut bytes = [0u8; 16];
            proc::fill_random(&mut bytes).map_err(|e| e.to_string())?;
            Ok(bytes)
        };
        let state = http::PostState {
            catalog: &self.catalog,
            sessions: &mut front.sessions,
            creator,
            oauth,
            now: Instant::now(),
            random: &mut random,
        };
        match http::mcp_post(state, &req, msg, arguments, cors) {
            Post::Answer(a) => self.respond(token, a.status, &a.headers, &a.body, a.keep_alive),
            Post::Apply(mut step, mut framing) => {
                if let Some(notice) = framing.notice.take() {
                    front.notice(Notice::SessionCap, || notice);
                }
                // A call's long arguments take the body they were read from.
                step.hand_over(Some(&mut req.body), &[]);
                let origin = Origin::Http {
                    conn: token,
                    framing,
                };
                self.apply(origin, step);
            }
        }
    }

    /// The connections waiting for running calls of `session` (only the call
    /// with request id `only`, if given), with the request ids.
    pub(in crate::edge::reactor) fn waiting_requests(
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
