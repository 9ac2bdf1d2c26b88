//! Access lines and spans. A request opens an [`Access`] when it arrives
//! (an HTTP request: at its head; a stdio line: when decoded) and closes it
//! when it is answered: one `info` line (`access`) with its method, tool,
//! outcome, duration, owner and span. That line is the request's span too
//! (`trace_id`, `span_id`, `parent_span_id`, `start`): its parent comes
//! from the request's `_meta` (`traceparent`, `tracestate`), else from the
//! HTTP headers, else the request starts a new trace. A tool call's work on
//! a pool process is a child span ([`CallTrace`]), logged at `debug` when
//! the call ends.
//!
//! The open records live with their owners: `HttpFront::access` by
//! connection (kept by `http::access`), `Stdio` by request id, a call's [`CallTrace`] in its `Call`.
//! With access lines off (below `info`) nothing is opened, unless the
//! request brings a trace context: its diagnostics then carry the trace id.

use std::time::Instant;

use serde_json::Value as Json;

use crate::edge::log;
use crate::format::json::scan;
use crate::protocol::jsonrpc::{CallLine, Incoming, RequestId};
use crate::protocol::log::{self as rec, Level, Value};
use crate::protocol::mcp::call::Outgoing;
use crate::protocol::trace::{self, Span};

/// An open request: what its access line will say.
pub(in crate::edge::reactor) struct Access {
    started: Instant,
    start_micros: u64,
    /// The HTTP method and path.
    http: Option<(String, String)>,
    method: Option<String>,
    tool: Option<String>,
    owner: String,
    pub(in crate::edge::reactor) span: Span,
    /// The outcome, once the reply is known, with a JSON-RPC error's code.
    pub(in crate::edge::reactor) outcome: Option<(&'static str, Option<i64>)>,
}

impl Access {
    /// Opens a record if access lines are on or `incoming` carries a context;
    /// `owner` names who sent the request (asked only then).
    pub(in crate::edge::reactor) fn open(
        owner: impl FnOnce() -> String,
        http: Option<(&str, &str)>,
        incoming: trace::Incoming,
    ) -> Option<Access> {
        if !log::enabled(Level::Info) && incoming.parent.is_none() {
            return None;
        }
        Some(Access {
            started: Instant::now(),
            start_micros: log::now_micros(),
            http: http.map(|(m, p)| (m.to_string(), p.to_string())),
            method: None,
            tool: None,
            owner: owner(),
            span: Span::start(incoming, log::random_id(), log::random_id()),
            outcome: None,
        })
    }

    /// Notes a JSON-RPC message's method and tool; a valid context in its
    /// `_meta` wins over the HTTP headers'.
    pub(in crate::edge::reactor) fn message(&mut self, method: &str, params: Option<&Json>) {
        let tool = match method {
            "tools/call" => params.and_then(|p| p.get("name")).and_then(Json::as_str),
            _ => None,
        };
        self.noted(method, tool, trace::Incoming::from_params(params));
    }

    /// [`Access::message`] for a request's method, its tool (a
    /// `tools/call`'s) and the context in its `_meta`.
    pub(in crate::edge::reactor) fn noted(
        &mut self,
        method: &str,
        tool: Option<&str>,
        incoming: trace::Incoming,
    ) {
        self.method = Some(method.to_string());
        if method == "tools/call" {
            self.tool = tool.map(str::to_string);
        }
        if let Some(parent) = incoming.parent {
            self.span.trace_id = parent.trace_id;
            self.span.parent_id = Some(parent.parent_id);
            self.span.state = incoming.state;
        }
    }

    pub(in crate::edge::reactor) fn reply(&mut self, reply: &Json) {
        self.replied(rec::outcome_and_code(reply));
    }

    /// [`Access::reply`] with the reply's outcome and error code given.
    pub(in crate::edge::reactor) fn replied(&mut self, outcome: (&'static str, Option<i64>)) {
        self.outcome = Some(outcome);
    }

    /// Writes the access line: `status` for HTTP, `fallback` as the
    /// outcome when no reply said one.
    pub(in crate::edge::reactor) fn finish(self, status: Option<u16>, fallback: &'static str) {
        if !log::enabled(Level::Info) {
            return;
        }
        let (outcome, error_code) = self.outcome.unwrap_or((fallback, None));
        // The ids and the start in one buffer, sliced.
        let mut text = String::with_capacity(3 * 32 + 27);
        trace::hex_into(&mut text, &self.span.trace_id);
        let trace_end = text.len();
        trace::hex_into(&mut text, &self.span.span_id);
        let span_end = text.len();
        if let Some(parent) = &self.span.parent_id {
            trace::hex_into(&mut text, parent);
        }
        let parent_end = text.len();
        rec::timestamp(&mut text, self.start_micros);
        let (trace_id, span_id) = (&text[..trace_end], &text[trace_end..span_end]);
        let parent = self.span.parent_id.map(|_| &text[span_end..parent_end]);
        let start = &text[parent_end..];
        let line = rec::Access {
            http_method: self.http.as_ref().map(|h| h.0.as_str()),
            path: self.http.as_ref().map(|h| h.1.as_str()),
            status,
            rpc_method: self.method.as_deref(),
            tool: self.tool.as_deref(),
            outcome,
            error_code,
            duration_ms: self.started.elapsed().as_secs_f64() * 1000.0,
            owner: &self.owner,
            trace_id,
            span_id,
            parent_span_id: parent,
            tracestate: self.span.state.as_deref(),
            start: Some(start),
        };
        log::with(Level::Info, "access", &line.fields());
    }
}

/// The span of a call's work on a pool process: a child of its request's.
pub(in crate::edge::reactor) struct CallTrace {
    span: Span,
    /// When the call was handed to a pool process (monotonic, and wall
    /// clock in microseconds).
    sent: Option<(Instant, u64)>,
}

impl CallTrace {
    /// The trace of a call starting for the request `access` records: a
    /// child of its span.
    pub(in crate::edge::reactor) fn child_of(access: &Access) -> Box<CallTrace> {
        Box::new(CallTrace {
            span: access.span.child(log::random_id()),
            sent: None,
        })
    }

    /// The trace id, for diagnostics about the call.
    pub(in crate::edge::reactor) fn trace_id(&self) -> String {
        trace::hex(&self.span.trace_id)
    }

    /// The call was handed to a pool process: its span starts.
    pub(in crate::edge::reactor) fn sent(&mut self) {
        if self.sent.is_none() {
            self.sent = Some((Instant::now(), log::now_micros()));
        }
    }

    /// The call ended: its span, if it reached a pool, at `debug`.
    pub(in crate::edge::reactor) fn end(&self, pool: &str, command: &str, abandoned: bool) {
        let Some((at, micros)) = self.sent else {
            return;
        };
        if !log::enabled(Level::Debug) {
            return;
        }
        let (trace_id, span_id) = (
            trace::hex(&self.span.trace_id),
            trace::hex(&self.span.span_id),
        );
        let parent = self
            .span
            .parent_id
            .map(|p| trace::hex(&p))
            .unwrap_or_default();
        let mut start = String::new();
        rec::timestamp(&mut start, micros);
        let ms = at.elapsed().as_secs_f64() * 1000.0;
        let mut fields = vec![
            ("name", Value::Str("pool call")),
            ("pool", Value::Str(pool)),
            ("command", Value::Str(command)),
            ("duration_ms", Value::Ms(ms)),
            ("trace_id", Value::Str(&trace_id)),
            ("span_id", Value::Str(&span_id)),
            ("parent_span_id", Value::Str(&parent)),
            ("start", Value::Str(&start)),
        ];
        if abandoned {
            fields.push(("outcome", Value::Str("cancelled")));
        }
        log::with(Level::Debug, "span", &fields);
    }
}

/// The trace context in the `_meta` of a plain `tools/call` read in place
/// (`jsonrpc::CallLine`): what `trace::Incoming::from_params` finds in the
/// parsed `params` (string values, the last of a repeated key).
pub(in crate::edge::reactor) fn call_context(call: &CallLine<'_>) -> trace::Incoming {
    let (mut parent, mut state) = (None, None);
    for (key, value) in call.meta().into_iter().flatten() {
        match key {
            "traceparent" => parent = Some(value),
            "tracestate" => state = Some(value),
            _ => {}
        }
    }
    let text = |value: Option<&str>| {
        let value = value?.as_bytes();
        (value.first() == Some(&b'"')).then(|| scan::decode_string(value, 0))
    };
    match (parent, state) {
        (None, None) => trace::Incoming::default(),
        _ => trace::Incoming::from_values(text(parent).as_deref(), text(state).as_deref()),
    }
}

/// The owner of a stdio request.
fn stdio_owner() -> String {
    "stdio".to_string()
}

/// The method and params of a request (a notification has no access line).
fn request_parts(msg: &Incoming) -> Option<(&RequestId, &str, Option<&Json>)> {
    match msg {
        Incoming::Request { id, method, params } => Some((id, method, params.as_ref())),
        _ => None,
    }
}

/// The open records of stdio requests, by request id. The cheap hasher
/// though a client picks the ids: the stdio client is the one that
/// started this server.
#[derive(Default)]
pub(super) struct StdioAccess(super::idhash::IdMap<RequestId, Access>);

impl StdioAccess {
    /// A stdio message arrived: a request opens its record; a line that is
    /// not a request gets its line at once when answered with an error.
    pub(super) fn open(&mut self, msg: &Incoming) {
        if let Incoming::Invalid(reply) = msg {
            if let Some(mut access) = Access::open(stdio_owner, None, trace::Incoming::default()) {
                access.reply(reply);
                access.finish(None, "error");
            }
            return;
        }
        let Some((id, method, params)) = request_parts(msg) else {
            return;
        };
        let incoming = trace::Incoming::from_params(params);
        if let Some(mut access) = Access::open(stdio_owner, None, incoming) {
            access.message(method, params);
            self.0.insert(id.clone(), access);
        }
    }

    /// A plain `tools/call` read in place (`jsonrpc::CallLine`): its record
    /// opened as [`StdioAccess::open`] opens a request's, with the trace
    /// context of its `_meta` (string values, the last of a repeated key).
    pub(super) fn open_call(&mut self, call: &CallLine<'_>) {
        if let Some(mut access) = Access::open(stdio_owner, None, call_context(call)) {
            access.method = Some("tools/call".into());
            access.tool = call.name.map(str::to_string);
            self.0.insert(call.id.clone(), access);
        }
    }

    /// A message going to the stdio client: a response closes its
    /// request's record.
    pub(super) fn reply(&mut self, msg: &Outgoing<'_>) {
        // Only responses carry the id of an open request.
        if self.0.is_empty() {
            return;
        }
        let Some(id) = msg.id() else {
            return;
        };
        if let Some(mut access) = self.0.remove(&id) {
            access.replied(msg.outcome());
            access.finish(None, "ok");
        }
    }

    /// The stdio request `id` was cancelled by its client.
    pub(super) fn cancelled(&mut self, id: &RequestId) {
        if let Some(access) = self.0.remove(id) {
            access.finish(None, "cancelled");
        }
    }

    /// The open record of request `id`.
    pub(super) fn get(&self, id: &RequestId) -> Option<&Access> {
        self.0.get(id)
    }
}
