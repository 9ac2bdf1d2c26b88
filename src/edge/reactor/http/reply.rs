//! Answers on a connection: a plain response, the JSON-RPC reply that
//! completes a request waiting for its call (as JSON, or as the last event of
//! its stream), the notifications a streaming request carries, and pool log
//! lines for the sessions that asked for them.

use std::io::{self, Write};
use std::rc::Rc;
use std::time::Instant;

use mio::Token;
use serde_json::Value as Json;

use crate::edge::reactor::byteio::Streamed;
use crate::edge::reactor::Reactor;
use crate::format::json::{self, page::Paged};
use crate::protocol::http;
use crate::protocol::mcp::{self, era};

impl Reactor {
    /// Answers the request on `token` with a JSON body (or none).
    pub(in crate::edge::reactor) fn respond(
        &mut self,
        token: Token,
        status: u16,
        headers: &[(String, String)],
        body: &[u8],
        keep_alive: bool,
    ) {
        let content_type = (!body.is_empty()).then_some("application/json");
        self.respond_as(token, status, content_type, headers, body, keep_alive);
    }

    /// [`Reactor::respond`] with a body of another `content_type`.
    pub(in crate::edge::reactor) fn respond_as(
        &mut self,
        token: Token,
        status: u16,
        content_type: Option<&str>,
        headers: &[(String, String)],
        body: &[u8],
        keep_alive: bool,
    ) {
        let Some(conn) = self.conn_mut(token) else {
            return;
        };
        let refs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        if conn.is_head_request() {
            // RFC 9110 section 9.3.2: the same head as for GET, no content.
            http::write_head(
                conn.out(),
                status,
                content_type,
                Some(body.len()),
                &refs,
                keep_alive,
            );
        } else {
            http::write_response(conn.out(), status, content_type, &refs, body, keep_alive);
        }
        if !keep_alive {
            conn.close_after_write();
        }
        if let Some(front) = self.http.as_mut() {
            front.access_end(token, status, Some(body));
        }
        self.flush_conn(token);
    }

    /// [`Reactor::respond`] with a JSON body whose middle is the escaped
    /// text of a stored value (`parts`: before, the value, after): the
    /// head and the first part are queued, the value's text is escaped
    /// into the queue a slice at a time as the socket drains
    /// (`byteio::Streamed`), so the answer is never held whole.
    pub(in crate::edge::reactor) fn respond_streamed(
        &mut self,
        token: Token,
        status: u16,
        headers: &[(String, String)],
        parts: (&[u8], Rc<Paged>, &[u8]),
        keep_alive: bool,
    ) {
        let (before, value, after) = parts;
        let Some(conn) = self.conn_mut(token) else {
            return;
        };
        let refs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let length = before.len() + json::str_body_len(value.text()) + after.len();
        let content_type = Some("application/json");
        http::write_head(
            conn.out(),
            status,
            content_type,
            Some(length),
            &refs,
            keep_alive,
        );
        if !conn.is_head_request() {
            conn.out().extend_from_slice(before);
            conn.stream_out(Streamed::new(value, after.to_vec()));
        }
        if !keep_alive {
            conn.close_after_write();
        }
        // The access line reads the outcome from the message without the
        // value (a small one).
        let mut sniff = before.to_vec();
        sniff.extend_from_slice(after);
        if let Some(front) = self.http.as_mut() {
            front.access_end(token, status, Some(&sniff));
        }
        self.flush_conn(token);
    }

    /// Completes the request waiting on `conn` with a JSON-RPC response.
    pub(in crate::edge::reactor) fn http_reply(&mut self, token: Token, msg: &Json) {
        if let Some(front) = self.http.as_mut() {
            front.access_reply(token, msg);
        }
        let Some(conn) = self.conn_mut(token) else {
            return;
        };
        let Some(busy) = conn.take_busy() else { return };
        let status = if busy.modern {
            era::http_status(msg)
        } else {
            200
        };
        if busy.sse {
            let text = mcp::structured::to_string(msg);
            http::write_sse_message(conn.out(), &text);
            http::write_last_chunk(conn.out());
            if !busy.keep_alive {
                conn.close_after_write();
            }
            if let Some(front) = self.http.as_mut() {
                front.access_end(token, 200, None);
            }
            self.flush_conn(token);
        } else if status == 200 && !conn.is_head_request() {
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
                conn.out(),
                200,
                Some("application/json"),
                Some(length),
                &refs,
                busy.keep_alive,
            );
            let _ = mcp::structured::write(conn.out(), msg);
            if !busy.keep_alive {
                conn.close_after_write();
            }
            if let Some(front) = self.http.as_mut() {
                front.access_end(token, 200, None);
            }
            self.flush_conn(token);
        } else {
            let text = mcp::structured::to_string(msg);
            self.respond(token, status, &busy.cors, text.as_bytes(), busy.keep_alive);
        }
        // Pipelined requests that waited behind this one.
        self.pump(token);
    }

    /// Completes the request waiting on `conn` without a JSON-RPC response.
    pub(super) fn http_abandon(&mut self, token: Token) {
        let Some(conn) = self.conn_mut(token) else {
            return;
        };
        let Some(busy) = conn.take_busy() else { return };
        if let Some(front) = self.http.as_mut() {
            front.access_cancelled(token);
        }
        let Some(conn) = self.conn_mut(token) else {
            return;
        };
        if busy.sse {
            http::write_last_chunk(conn.out());
            if !busy.keep_alive {
                conn.close_after_write();
            }
            if let Some(front) = self.http.as_mut() {
                front.access_end(token, 200, None);
            }
            self.flush_conn(token);
        } else {
            self.respond(token, 202, &busy.cors, &[], busy.keep_alive);
        }
        self.pump(token);
    }

    /// A notification for the request waiting on `conn`, if it streams.
    pub(in crate::edge::reactor) fn http_notify(&mut self, token: Token, msg: &Json) {
        let Some(conn) = self.conn_mut(token) else {
            return;
        };
        if !conn.streaming() {
            return;
        }
        let text = mcp::structured::to_string(msg);
        http::write_sse_message(conn.out(), &text);
        self.flush_conn(token);
    }

    /// Whether the request waiting on `conn` is an event stream.
    pub(in crate::edge::reactor) fn http_streaming(&self, token: Token) -> bool {
        self.http
            .as_ref()
            .and_then(|f| f.conns.get(&token))
            .is_some_and(super::Conn::streaming)
    }

    /// Where pool output goes over HTTP: the streaming requests of sessions
    /// that asked for logs, with the notification for each (sent by the pool
    /// log router, `pools::output`).
    pub(in crate::edge::reactor) fn http_log_targets(
        &mut self,
        level: usize,
        logger: &str,
        line: &str,
    ) -> Vec<(Token, Json)> {
        let Some(front) = self.http.as_mut() else {
            return Vec::new();
        };
        let now = Instant::now();
        let mut targets = Vec::new();
        let streaming: Vec<(Token, String)> = front
            .conns
            .iter()
            .filter_map(|(t, c)| c.busy().filter(|b| b.sse).map(|b| (*t, b.session.clone())))
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
        targets
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
    let _ = mcp::structured::write(&mut count, msg);
    count.0
}
