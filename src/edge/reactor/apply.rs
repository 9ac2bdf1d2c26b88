//! Where a step came from, and how its answer goes back. A transport turns
//! what it read into an [`Origin`] and a `Step` (stdio: `mcp::handle`;
//! HTTP: the pure `http::endpoint::mcp_post`, which also gives the answer's
//! [`Framing`]); the reactor's one `apply` hands the step to its owner:
//! the calls for a tool call or a cancellation, the task table for
//! `tasks/*` and the job tools, the result store for `resources/*`, the
//! listeners for `subscriptions/listen`. The answers are framed here.

use mio::Token;
use serde_json::Value as Json;

use super::calls::Cancel;
use super::{Client, Reactor};
use crate::protocol::http::Framing;
use crate::protocol::jsonrpc::RequestId;
use crate::protocol::mcp;

/// Where a step came from, and how its answer is framed.
pub(super) enum Origin {
    Stdio,
    /// A request on HTTP connection `conn`.
    Http {
        conn: Token,
        framing: Framing,
    },
}

impl Origin {
    /// The client waiting for the step's answer.
    pub(super) fn client(&self) -> Client {
        match self {
            Origin::Stdio => Client::Stdio,
            Origin::Http { conn, framing } => Client::Http {
                conn: *conn,
                session: framing.session.clone(),
            },
        }
    }
}

impl Reactor {
    /// Answers with a JSON-RPC message; over HTTP with the status `status`
    /// gives it.
    pub(super) fn reply_to(
        &mut self,
        origin: &Origin,
        reply: &Json,
        status: fn(&Framing, &Json) -> u16,
    ) {
        match origin {
            Origin::Stdio => self.send_stdio(reply),
            Origin::Http { conn, framing } => {
                let body = mcp::structured::to_vec(reply);
                let status = status(framing, reply);
                let (headers, keep_alive) = (&framing.headers, framing.keep_alive);
                if let Some((front, cx)) = &mut self.lend_http() {
                    front.respond(cx, *conn, status, headers, &body, keep_alive);
                }
                self.http_news();
            }
        }
    }

    /// Answers a step that has no JSON-RPC answer: nothing on stdio, an
    /// empty `202` over HTTP (else that connection would wait forever).
    pub(super) fn accepted(&mut self, origin: &Origin) {
        if let Origin::Http { conn, framing } = origin {
            let (headers, keep_alive) = (&framing.headers, framing.keep_alive);
            if let Some((front, cx)) = &mut self.lend_http() {
                front.respond(cx, *conn, 202, headers, &[], keep_alive);
            }
            self.http_news();
        }
    }

    /// `notifications/cancelled` for request `id`: a subscription simply
    /// ends (nothing more is sent for it, not even a response); a call is
    /// cancelled, and HTTP connections waiting for it are let go (no
    /// JSON-RPC response is due for a request its client gave up on: an
    /// event stream just ends).
    pub(super) fn cancel_request(&mut self, origin: &Origin, id: &RequestId) {
        let client = origin.client();
        if let (Origin::Stdio, Some(stdio)) = (origin, self.stdio.as_mut()) {
            stdio.cancelled(id);
        }
        if self.listeners.remove(&client, id) {
            return;
        }
        let waiting = match &client {
            Client::Stdio => Vec::new(),
            Client::Http { session, .. } => self.calls.waiting_on(session, Some(id)),
        };
        // A pool cannot be told to stop a job: its worker finishes, and the
        // answer is dropped.
        for call in self
            .calls
            .cancel(Cancel::Request(&client, id), &self.catalog)
        {
            self.take_call(call);
        }
        for (conn, _) in waiting {
            if let Some((front, cx)) = &mut self.lend_http() {
                front.abandon(cx, conn);
            }
            self.http_news();
        }
    }
}
