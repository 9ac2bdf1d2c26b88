//! The access records of HTTP requests (see `reactor::obs`): opened at a
//! routed request's head with the context of its `traceparent` and
//! `tracestate` headers, told its JSON-RPC message and reply, and closed
//! with the response's status. A request refused at its head (a failed
//! check) or before (unparseable) gets its line all the same.

use mio::Token;
use serde_json::Value as Json;

use super::HttpFront;
use crate::edge::log;
use crate::edge::reactor::obs::{self, Access};
use crate::protocol::http::Request;
use crate::protocol::jsonrpc::{CallLine, Incoming};
use crate::protocol::log::Level;
use crate::protocol::trace;

/// Replies longer than this are not parsed again for their outcome (see
/// [`HttpFront::access_end`]); a JSON-RPC error is always short.
const SNIFF_MAX: usize = 64 * 1024;

impl HttpFront {
    /// A request's head is complete: its record opens, with the context of
    /// its `traceparent` and `tracestate` headers. An `anonymous` request
    /// (refused, or on an open route such as `/health`) proved no token:
    /// its owner is its peer address.
    pub(in crate::edge::reactor) fn access_open(
        &mut self,
        token: Token,
        req: &Request,
        anonymous: bool,
    ) {
        let incoming =
            trace::Incoming::from_values(req.header("traceparent"), req.header("tracestate"));
        let owner = || match self.conns.get(&token) {
            Some(conn) if anonymous => super::peer_owner(conn.peer()),
            _ => self.owner_of(token),
        };
        let http = Some((req.method.as_str(), req.path.as_str()));
        match Access::open(owner, http, incoming) {
            Some(access) => self.access.insert(token, access),
            None => self.access.remove(&token),
        };
    }

    /// The JSON-RPC message of the request on `token`.
    pub(in crate::edge::reactor) fn access_message(&mut self, token: Token, msg: &Incoming) {
        let (method, params) = match msg {
            Incoming::Request { method, params, .. }
            | Incoming::Notification { method, params } => (method.as_str(), params.as_ref()),
            _ => return,
        };
        let tool = match method {
            "tools/call" => params.and_then(|p| p.get("name")).and_then(Json::as_str),
            _ => None,
        };
        let incoming = trace::Incoming::from_params(params);
        self.access_noted(token, method, tool, incoming);
    }

    /// [`HttpFront::access_message`] for a plain `tools/call` read in place.
    pub(in crate::edge::reactor) fn access_call(&mut self, token: Token, call: &CallLine<'_>) {
        let incoming = obs::call_context(call);
        self.access_noted(token, "tools/call", call.name, incoming);
    }

    /// Notes the method, tool and `_meta` context of the request on `token`.
    fn access_noted(
        &mut self,
        token: Token,
        method: &str,
        tool: Option<&str>,
        incoming: trace::Incoming,
    ) {
        if !self.access.contains_key(&token) {
            // Access lines are off; a context in `_meta` still opens one.
            let Some(access) = Access::open(|| self.owner_of(token), None, incoming.clone()) else {
                return;
            };
            self.access.insert(token, access);
        }
        if let Some(access) = self.access.get_mut(&token) {
            access.noted(method, tool, incoming);
        }
    }

    /// The JSON-RPC reply of the request on `token`.
    pub(in crate::edge::reactor) fn access_reply(
        &mut self,
        token: Token,
        outcome: (&'static str, Option<i64>),
    ) {
        if let Some(access) = self.access.get_mut(&token) {
            access.replied(outcome);
        }
    }

    /// The request on `token` was answered with `status` (`body`, when
    /// given, is read for a JSON-RPC outcome if none was noted).
    pub(in crate::edge::reactor) fn access_end(
        &mut self,
        token: Token,
        status: u16,
        body: Option<&[u8]>,
    ) {
        let Some(mut access) = self.access.remove(&token) else {
            if log::enabled(Level::Info) {
                // Refused before its head was read whole (unparseable, too
                // big, too slow).
                let owner = || self.owner_of(token);
                if let Some(access) = Access::open(owner, None, trace::Incoming::default()) {
                    access.finish(Some(status), "rejected");
                }
            }
            return;
        };
        if access.outcome.is_none() {
            let body = body.filter(|b| b.len() <= SNIFF_MAX && b.starts_with(b"{\"jsonrpc\""));
            if let Some(reply) = body.and_then(|b| crate::format::json::parse_bytes(b).ok()) {
                access.reply(&reply);
            }
        }
        let fallback = match status {
            202 => "accepted",
            200..=299 => "ok",
            _ => "rejected",
        };
        access.finish(Some(status), fallback);
    }

    /// The call of the request on `token` was cancelled: that is its
    /// outcome, whatever answer ends the exchange.
    pub(in crate::edge::reactor) fn access_cancelled(&mut self, token: Token) {
        if let Some(access) = self.access.get_mut(&token) {
            access.outcome = Some(("cancelled", None));
        }
    }

    /// The open access record of the request on `token` (for a call's trace).
    pub(in crate::edge::reactor) fn access_of(&self, token: Token) -> Option<&Access> {
        self.access.get(&token)
    }
}
