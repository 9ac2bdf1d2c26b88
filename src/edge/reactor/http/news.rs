//! What the HTTP front is handed, and what it hands back.
//!
//! `HttpFront`'s operations take a [`Cx`] (the registry, the token table,
//! the read buffer, the catalog), which [`Reactor::lend_http`] lends with
//! the front, and keep [`HttpNews`] for what only the reactor can do: apply
//! a step, count the calls for `/metrics` or `/health`, cancel a
//! connection's calls, forget its listeners. [`Reactor::http_news`] then
//! applies them, in order. A request handed to the reactor stops its
//! connection's pump; the news after it (`Resume`) carries the pump on, so
//! requests are served in order and the stack stays flat however many are
//! pipelined.

use std::collections::VecDeque;

use mio::{Registry, Token};

use super::health::pool_rows;
use super::{metrics, HttpFront};
use crate::edge::reactor::apply::Origin;
use crate::edge::reactor::calls::Cancel;
use crate::edge::reactor::{Client, Reactor, Sources};
use crate::protocol::http::{Headers, Request};
use crate::protocol::jsonrpc;
use crate::protocol::mcp::{Catalog, Step};

/// What an operation of the HTTP front is handed.
pub(in crate::edge::reactor) struct Cx<'a> {
    pub(super) registry: &'a Registry,
    pub(super) sources: &'a mut Sources,
    /// The read buffer (see `Reactor::take_scratch`).
    pub(super) scratch: &'a mut Vec<u8>,
    pub(super) catalog: &'a Catalog,
}

/// A pump of one connection, stopped at a request handed to the reactor:
/// `HttpFront::resume` carries it on from there.
pub(in crate::edge::reactor) struct Pumping {
    pub(super) token: Token,
    /// Reads so far.
    pub(super) reads: usize,
    /// Whether this round's read took anything.
    pub(super) read: bool,
    /// Stopped inside a round, after a request was taken.
    pub(super) serving: bool,
}

/// What the HTTP front leaves to the reactor, in order.
pub(in crate::edge::reactor) enum HttpNews {
    /// A `/mcp` request's step, to apply.
    Apply(Origin, Step),
    /// `GET /metrics`: the calls, tasks and pools are the reactor's.
    Metrics {
        token: Token,
        cors: Headers,
        keep_alive: bool,
    },
    /// `GET` or `HEAD /health`.
    Health { token: Token, keep_alive: bool },
    /// A legacy session ended by `DELETE`: its calls are cancelled, the
    /// requests waiting for them answered, then the `DELETE` (`200`).
    SessionEnded {
        token: Token,
        session: String,
        cors: Headers,
        keep_alive: bool,
    },
    /// A long `/mcp` body, to check in slices (`calls::prepare`), its
    /// connection held.
    CheckBody {
        token: Token,
        req: Request,
        cors: Headers,
    },
    /// The client of connection `token` gave up: its calls are cancelled.
    Cancel(Token),
    /// Connection `token` closed: its subscriptions end.
    Closed(Token),
    /// Connection `token` is read again on a later turn.
    PumpLater(Token),
    /// A pump stopped at a request handed to the reactor, to carry on.
    Resume(Pumping),
    /// Connection `token`'s answer is written, and its pump runs.
    Continue(Token),
    /// The listener stopped at a connection with news; it accepts on.
    Accept,
}

impl HttpFront {
    /// Puts the news kept so far at the front of `queue`, in order: what
    /// an operation leaves comes before the rest, as if it had run where
    /// it was queued.
    fn news_into(&mut self, queue: &mut VecDeque<HttpNews>) {
        if queue.is_empty() {
            // The usual case: the list becomes the queue, no copy.
            *queue = VecDeque::from(std::mem::take(&mut self.news));
        } else {
            for news in self.news.drain(..).rev() {
                queue.push_front(news);
            }
        }
    }
}

impl Reactor {
    /// The HTTP front (none: `None`) with what its operations are handed;
    /// what an operation leaves to the reactor waits in the front until
    /// [`Reactor::http_news`].
    pub(in crate::edge::reactor) fn lend_http(&mut self) -> Option<(&mut HttpFront, Cx<'_>)> {
        let front = self.http.as_mut()?;
        let cx = Cx {
            registry: self.poll.registry(),
            sources: &mut self.sources,
            scratch: &mut self.scratch,
            catalog: &self.catalog,
        };
        Some((front, cx))
    }

    /// Applies the news the HTTP front keeps, in order. An operation an
    /// arm runs leaves its news for the next round of the loop, at the
    /// front of the queue (so the stack stays flat).
    pub(in crate::edge::reactor) fn http_news(&mut self) {
        // The usual case (and always on stdio): nothing to do.
        if self.http.as_ref().is_none_or(|f| f.news.is_empty()) {
            return;
        }
        let mut queue = VecDeque::new();
        loop {
            if let Some(front) = self.http.as_mut() {
                front.news_into(&mut queue);
            }
            let Some(news) = queue.pop_front() else {
                return;
            };
            match news {
                HttpNews::Apply(origin, step) => self.apply(origin, step),
                HttpNews::Metrics {
                    token,
                    cors,
                    keep_alive,
                } => {
                    let Some(front) = self.http.as_ref() else {
                        continue;
                    };
                    let rows = pool_rows(&self.pools, &self.catalog);
                    let answer =
                        front.metrics(&self.calls, self.tasks.table(), rows, cors, keep_alive);
                    if let Some((front, cx)) = &mut self.lend_http() {
                        front.send(cx, token, answer, Some(metrics::CONTENT_TYPE));
                    }
                }
                HttpNews::Health { token, keep_alive } => {
                    let Some(front) = self.http.as_ref() else {
                        continue;
                    };
                    let rows = pool_rows(&self.pools, &self.catalog);
                    let in_flight = self.calls.live();
                    let starting = self.pools.pending().is_some();
                    let answer = front.health(rows, starting, in_flight, keep_alive);
                    if let Some((front, cx)) = &mut self.lend_http() {
                        front.send(cx, token, answer, None);
                    }
                }
                HttpNews::SessionEnded {
                    token,
                    session,
                    cors,
                    keep_alive,
                } => {
                    // Its running calls are cancelled; their requests are
                    // answered with an error (naming the request, so the
                    // client can match it): no client waits forever.
                    let waiting = self.calls.waiting_on(&session, None);
                    for id in self.calls.cancel(Cancel::Session(&session), &self.catalog) {
                        self.take_call(id);
                    }
                    for (conn, request_id) in waiting {
                        let msg = jsonrpc::error_response(
                            Some(&request_id),
                            jsonrpc::ErrorCode::InvalidRequest,
                            "session terminated by DELETE",
                        );
                        // Each in full before the next (and the `200`).
                        if let Some((front, cx)) = &mut self.lend_http() {
                            front.reply(cx, conn, &msg);
                        }
                        self.http_news();
                    }
                    let ok = br#"{"ok":true}"#;
                    if let Some((front, cx)) = &mut self.lend_http() {
                        front.respond(cx, token, 200, &cors, ok, keep_alive);
                    }
                }
                HttpNews::CheckBody { token, req, cors } => {
                    let front = self.http.as_mut();
                    self.preparing.check_body(front, token, req, cors);
                }
                HttpNews::Cancel(token) => {
                    for id in self.calls.cancel(Cancel::Conn(token), &self.catalog) {
                        self.take_call(id);
                    }
                }
                HttpNews::Closed(token) => {
                    self.listeners
                        .remove_where(|c| matches!(c, Client::Http { conn, .. } if *conn == token));
                }
                HttpNews::PumpLater(token) => self.preparing.pump_later(token),
                HttpNews::Resume(pumping) => {
                    if let Some((front, cx)) = &mut self.lend_http() {
                        front.resume(cx, pumping);
                    }
                }
                HttpNews::Continue(token) => {
                    if let Some((front, cx)) = &mut self.lend_http() {
                        front.flush(cx, token);
                        front.pump(cx, token);
                    }
                }
                HttpNews::Accept => {
                    if let Some((front, cx)) = &mut self.lend_http() {
                        front.accept(cx);
                    }
                }
            }
        }
    }
}
