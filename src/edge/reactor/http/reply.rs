//! Answers on a connection: a plain response, the JSON-RPC reply that
//! completes a request waiting for its call (as JSON, or as the last event of
//! its stream), the notifications a streaming request carries, and pool log
//! lines for the sessions that asked for them.

use std::time::Instant;

use mio::Token;
use serde_json::Value as Json;

use super::conn::{Content, Head};
use super::news::Cx;
use super::{Conn, HttpFront};
use crate::edge::reactor::Client;
use crate::protocol::http::{self, Framing};
use crate::protocol::jsonrpc::RequestId;
use crate::protocol::mcp;
use crate::protocol::mcp::call::Outgoing;

impl HttpFront {
    /// Queues an answer on connection `token` (`Conn::queue_answer`) and
    /// ends the request's access record. Whether the connection is open
    /// (then the caller flushes).
    fn queue_answer(&mut self, token: Token, head: Head<'_>, content: Content<'_>) -> bool {
        let Some(conn) = self.conns.get_mut(&token) else {
            return false;
        };
        let (status, sniff) = conn.queue_answer(head, content);
        self.access_end(token, status, sniff.as_deref());
        true
    }

    /// Whether the request waiting on `conn` is an event stream.
    pub(in crate::edge::reactor) fn streaming(&self, token: Token) -> bool {
        self.conns.get(&token).is_some_and(Conn::streaming)
    }

    /// Where pool output goes over HTTP: the streaming requests of sessions
    /// that asked for logs, with the notification for each (sent by the pool
    /// log router, `pools::output`).
    pub(in crate::edge::reactor) fn log_targets(
        &mut self,
        level: usize,
        logger: &str,
        line: &str,
    ) -> Vec<(Token, Json)> {
        let now = Instant::now();
        let mut targets = Vec::new();
        let streaming: Vec<(Token, String)> = self
            .conns
            .iter()
            .filter_map(|(t, c)| c.busy().filter(|b| b.sse).map(|b| (*t, b.session.clone())))
            .collect();
        for (token, session) in streaming {
            let Some(stored) = self.sessions.get(&session, now) else {
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
        targets
    }
}

impl HttpFront {
    /// Answers the request on `token` with a JSON body (or none).
    pub(in crate::edge::reactor) fn respond(
        &mut self,
        cx: &mut Cx,
        token: Token,
        status: u16,
        headers: &[(String, String)],
        body: &[u8],
        keep_alive: bool,
    ) {
        let head = Head {
            status,
            content_type: (!body.is_empty()).then_some("application/json"),
            headers,
            keep_alive,
        };
        self.answer(cx, token, head, Content::Body(body));
    }

    /// Answers the request on `token` with `head` and `content`, and
    /// writes what the socket takes.
    pub(in crate::edge::reactor) fn answer(
        &mut self,
        cx: &mut Cx,
        token: Token,
        head: Head<'_>,
        content: Content<'_>,
    ) {
        if self.queue_answer(token, head, content) {
            self.flush(cx, token);
        }
    }

    /// Completes the request waiting on `conn` with a JSON-RPC response (a
    /// call's response written without its message as a tree).
    pub(in crate::edge::reactor) fn reply<'a>(
        &mut self,
        cx: &mut Cx,
        token: Token,
        msg: impl Into<Outgoing<'a>>,
    ) {
        let msg = msg.into();
        self.access_reply(token, msg.outcome());
        let Some(busy) = self.conns.get_mut(&token).and_then(Conn::take_busy) else {
            return;
        };
        let status = if busy.modern {
            msg.modern_status()
        } else {
            200
        };
        let head = Head {
            status: if busy.sse { 200 } else { status },
            content_type: Some("application/json"),
            headers: &busy.cors,
            keep_alive: busy.keep_alive,
        };
        if busy.sse {
            let msg = msg.into_message();
            self.answer(cx, token, head, Content::StreamEnd(Some(&msg)));
        } else {
            self.answer(cx, token, head, Content::Json(&msg));
        }
        // Pipelined requests that waited behind this one.
        self.pump(cx, token);
    }

    /// Completes the request waiting on `conn` without a JSON-RPC response.
    pub(in crate::edge::reactor) fn abandon(&mut self, cx: &mut Cx, token: Token) {
        let Some(busy) = self.conns.get_mut(&token).and_then(Conn::take_busy) else {
            return;
        };
        self.access_cancelled(token);
        let head = Head {
            status: if busy.sse { 200 } else { 202 },
            content_type: None,
            headers: &busy.cors,
            keep_alive: busy.keep_alive,
        };
        let content = if busy.sse {
            Content::StreamEnd(None)
        } else {
            Content::Body(&[])
        };
        self.answer(cx, token, head, content);
        self.pump(cx, token);
    }

    /// A notification for the request waiting on `conn`, if it streams.
    /// A client past its bound of unread answers (see `peers`) misses it:
    /// its queue does not grow while it does not read.
    pub(in crate::edge::reactor) fn notify(&mut self, cx: &mut Cx, token: Token, msg: &Json) {
        let Some(conn) = self.conns.get_mut(&token) else {
            return;
        };
        if !conn.streaming() {
            return;
        }
        if self.peers.over(conn.peer(), conn.unread()) {
            self.peers.dropped();
            return;
        }
        let text = mcp::structured::to_string(msg);
        http::write_sse_message(conn.out(), &text);
        self.flush(cx, token);
    }

    /// Holds connection `token` for the answer of the tool call its
    /// request made (admitted by `HttpFront::mcp_post`), framed so, and
    /// writes what is queued. The client the answer goes to; `None` if the
    /// connection went away.
    pub(in crate::edge::reactor) fn open_call(
        &mut self,
        cx: &mut Cx,
        token: Token,
        framing: Framing,
    ) -> Option<Client> {
        let session = framing.session.clone();
        self.conns.get_mut(&token)?.open_call(framing);
        self.flush(cx, token);
        Some(Client::Http {
            conn: token,
            session,
        })
    }

    /// Holds connection `token` for the event stream of
    /// `subscriptions/listen` request `id`, its head and acknowledgement
    /// `ack` queued (the caller flushes); false if it went away.
    pub(in crate::edge::reactor) fn open_listen(
        &mut self,
        token: Token,
        framing: Framing,
        id: &RequestId,
        ack: &Json,
    ) -> bool {
        let Some(conn) = self.conns.get_mut(&token) else {
            return false;
        };
        conn.open_listen(framing, id, ack);
        true
    }
}
