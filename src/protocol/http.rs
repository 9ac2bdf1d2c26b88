//! The HTTP/1.1 layer of the Streamable-HTTP transport, without any I/O.
//!
//! The reactor owns the sockets, the clock and the random source; it hands
//! this module bytes, instants and random bytes, and gets back parsed
//! requests, encoded responses and yes/no answers. Keeping the layer pure lets
//! the unit tests and the `http_parse` fuzz target drive it with plain slices.
//!
//! The pieces, one submodule each:
//!
//! * `parse`: a push parser for requests (one [`Parser`] per connection) that
//!   keeps its state between calls, so bytes are scanned once however they
//!   are split; `syntax` holds the line-level grammar it applies, and
//!   `error` the [`HttpError`] that names the status the caller answers with
//!   before closing the connection.
//! * `response`: the response encoder, the `100 Continue` interim, the
//!   chunked `text/event-stream` helpers and the CORS header sets.
//! * `session`: the `Mcp-Session-Id` table with idle expiry and bounds on
//!   live sessions in total and per owner (least recently used dropped
//!   first, always the owner's own or the largest owner's).
//! * `budget`: the byte budget shared by all connections and the rate
//!   limit of the diagnostics about limits.
//! * `routes`: the route table (path, methods, guarded or open, handler),
//!   the checks a request passes before its handler, and the answers that
//!   refuse it (403, 401, 404, 405 with `Allow`, the preflight's 204).
//! * `endpoint`: the `/mcp` endpoint's decisions (era, session, header
//!   checks, statuses), returning the message's step and its framing.
//! * `security`: the bearer-token check and the `Origin` / `Host` checks that
//!   keep browsers on other sites (and DNS rebinding) away from a local
//!   server.
//!
//! Deliberate differences from the Morloc reference server: chunked request
//! bodies, `100 Continue`, and HTTP/1.0 closing by default are supported;
//! malformed requests get a status instead of a silent close; the bearer
//! scheme is matched case-insensitively; sessions expire on lookup; and there
//! is no blanket `Access-Control-Allow-Origin: *`.

mod budget;
pub mod endpoint;
mod error;
mod parse;
mod response;
mod routes;
mod security;
mod session;
mod syntax;

pub use budget::{suppressed_suffix, Budget, Notice, Notices, DEFAULT_MAX_BUFFERED, NOTICE_PERIOD};
pub use endpoint::{Framing, Post, PostState};
pub use error::HttpError;
pub use parse::{
    Fields, Limits, Parser, Progress, Request, DEFAULT_MAX_BODY, DEFAULT_MAX_HEADERS,
    DEFAULT_MAX_LINE, MAX_BLANK_LINES,
};
pub use response::{
    cors_headers, cors_preflight_headers, reason, write_continue, write_head, write_last_chunk,
    write_response, write_sse_comment, write_sse_head, write_sse_message, CORS_ALLOW_HEADERS,
    CORS_ALLOW_METHODS, CORS_MAX_AGE,
};
pub use routes::{admit, find, json_error, Answer, Gate, Headers, Route};
pub use security::{bearer_ok, is_loopback_host, OriginPolicy};
pub use session::{
    Created, Session, SessionLimits, Sessions, DEFAULT_MAX_SESSIONS,
    DEFAULT_MAX_SESSIONS_PER_OWNER, DEFAULT_SESSION_TTL,
};
