//! Routing a complete HTTP request through [`ROUTES`], and the `/mcp`
//! endpoint: `DELETE` of a legacy session, and `POST`s of JSON-RPC messages
//! in either era (decided once per request by the pure `http::mcp_post`),
//! whose steps go to the reactor's `apply`. A long body is checked in
//! slices first (`calls::prepare`), its connection held busy.

use std::time::Instant;

use mio::Token;

use super::news::{Cx, HttpNews};
use super::oauth::{Guard, Parked};
use super::reply::{Content, Head};
use super::{Handler, HttpFront, ROUTES};
use crate::edge::proc;
use crate::edge::reactor::apply::Origin;
use crate::edge::reactor::calls::Checked;
use crate::protocol::http::{self, Answer, Headers, Notice, Post, Request};
use crate::protocol::jsonrpc;
use crate::protocol::mcp;

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
        match http::mcp_delete(&mut self.sessions, req, owner.as_deref(), &cors, now) {
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
    /// pure `http::mcp_post`; its step goes to the reactor.
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
        match http::mcp_post(state, &req, body, cors) {
            Post::Answer(a) => self.send(cx, token, a, None),
            Post::Apply(mut step, mut framing) => {
                if let Some(notice) = framing.notice.take() {
                    self.notice(Notice::SessionCap, || notice);
                }
                // A call's long arguments take the body they were read from.
                step.hand_over(Some(&mut req.body), &[]);
                let origin = Origin::Http {
                    conn: token,
                    framing,
                };
                self.news.push(HttpNews::Apply(origin, step));
            }
        }
    }
}
