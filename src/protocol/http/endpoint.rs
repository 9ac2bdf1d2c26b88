//! The `/mcp` endpoint's decisions, without I/O: which era a `POST` speaks,
//! the session it belongs to (created by a legacy `initialize`, looked up
//! by `Mcp-Session-Id` otherwise), the checks of its headers, and the HTTP
//! status of every answer.
//!
//! The transport decodes the body and hands [`mcp_post`] the request, the
//! message and a view of the state it needs ([`PostState`]: the catalog,
//! the session table, the caller's name, the clock and a random source).
//! [`mcp_post`] answers at once ([`Post::Answer`]) or returns the message's
//! [`Step`] with its [`Framing`] (the session, the era, the headers, an
//! event stream or not): the reactor's one `apply` carries the step out
//! and frames its answer with it. A `DELETE` is judged by [`mcp_delete`].
//!
//! Architecture Invariant: pure; no I/O, no reactor types.

use std::time::Instant;

use serde_json::Value as Json;

use super::parse::Request;
use super::routes::{Answer, Headers};
use super::session::Sessions;
use crate::protocol::jsonrpc::{self, CallLine, Decoded, ErrorCode, Incoming};
use crate::protocol::log::Untrusted;
use crate::protocol::mcp::{self, era, jobs, Catalog, Step, TaskMethod, TaskRequest};

/// What a `POST` to `/mcp` reads and changes besides its request.
pub struct PostState<'a> {
    pub catalog: &'a Catalog,
    pub sessions: &'a mut Sessions,
    /// Who owns a session this request creates: the OAuth principal, the
    /// bearer token's holders (`token`), else the peer.
    pub creator: String,
    /// Under OAuth a session serves only its creator's principal.
    pub oauth: bool,
    pub now: Instant,
    /// 16 random bytes for a new session id; drawn only by `initialize`.
    pub random: &'a mut dyn FnMut() -> Result<[u8; 16], String>,
}

/// How the answer of a step is framed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Framing {
    /// The legacy session the request belongs to; empty for a modern one.
    pub session: String,
    /// A modern (2026-07-28) request.
    pub modern: bool,
    /// The answer's header fields (CORS, a new session's id).
    pub headers: Headers,
    pub keep_alive: bool,
    /// A tool call is answered on an event stream (the client accepts one
    /// over HTTP/1.1, and asked for progress or log messages).
    pub sse: bool,
    /// A diagnostic for the operator (rate-limited by the caller): a new
    /// session pushed out its owner's least recently used one.
    pub notice: Option<String>,
}

impl Framing {
    /// The status of a JSON-RPC reply: a modern error names its own
    /// (`404` unknown method, `400` a bad request); legacy replies are `200`.
    pub fn reply_status(&self, reply: &Json) -> u16 {
        if self.modern {
            era::http_status(reply)
        } else {
            200
        }
    }

    /// The status of a `tasks/*` or job tool reply, judged by its error in
    /// either era.
    pub fn task_status(&self, reply: &Json) -> u16 {
        era::http_status(reply)
    }
}

/// What to do with a `POST`.
// One per request, moved once to the reactor: boxing the step would cost
// an allocation per call for no gain.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Post {
    /// Answer at once; nothing else happens.
    Answer(Answer),
    /// Carry the step out and frame its answer so (`202` with no body for
    /// [`Step::Nothing`] and [`Step::Cancel`]).
    Apply(Step, Framing),
}

/// Decides a `POST` of `body` (decoded from `req`'s body by
/// `jsonrpc::decode_call`: a plain `tools/call` read in place, or the
/// message with its `tools/call` arguments left as text), answered with
/// `cors`. A plain call whose era its headers and `_meta` settle at once
/// is served from its parts; any other takes the general way, with the
/// same outcome.
pub fn mcp_post(state: PostState<'_>, req: &Request, body: Decoded<'_>, cors: Headers) -> Post {
    // The era is decided here, once; `mcp` is told, not asked again.
    let version = req.header("mcp-protocol-version");
    let in_session = req.header("mcp-session-id").is_some();
    let plain = match &body {
        Decoded::Call(call) => plain_era(call, version, in_session),
        Decoded::Message(..) => Plain::General,
    };
    let (msg, arguments) = match (plain, body) {
        (Plain::Legacy, body) => return legacy(state, req, body, cors),
        (Plain::Modern(version), Decoded::Call(call)) => {
            return modern_call(state.catalog, req, call, &version, cors)
        }
        (_, body) => body.into_message(),
    };
    if mcp::headers::is_modern_post(&msg, version, in_session) {
        modern(state.catalog, req, msg, arguments, cors)
    } else {
        legacy(state, req, Decoded::Message(msg, arguments), cors)
    }
}

/// The era of a plain `tools/call`, when it is settled without a tree of
/// its `params`.
enum Plain {
    /// Legacy: no `_meta`, no modern version header outside a session.
    Legacy,
    /// Modern, with a `_meta` that `era::meta_in_place` reads whole (the
    /// version it declares).
    Modern(String),
    /// Anything else (an error to answer, a `_meta` with more in it).
    General,
}

/// What [`mcp::headers::is_modern_post`] decides for a plain call, when
/// its `_meta` (or the lack of one) settles it.
fn plain_era(call: &CallLine<'_>, version: Option<&str>, in_session: bool) -> Plain {
    let modern_header = version.is_some_and(|v| era::MODERN_VERSIONS.contains(&v));
    match call.meta() {
        // A modern request without its `_meta`: `-32602`.
        None if modern_header && !in_session => Plain::General,
        None => Plain::Legacy,
        Some(members) => match era::meta_in_place(members, in_session) {
            Some(meta) => Plain::Modern(meta.version),
            None => Plain::General,
        },
    }
}

/// Judges a `DELETE` of a legacy session: `Ok` with its id once it is
/// removed from the table, else the refusal. Under OAuth (`owner`) only
/// its creator may end it.
pub fn mcp_delete(
    sessions: &mut Sessions,
    req: &Request,
    owner: Option<&str>,
    cors: &Headers,
    now: Instant,
) -> Result<String, Answer> {
    let keep_alive = req.keep_alive;
    let Some(id) = req.header("mcp-session-id") else {
        let message = "missing Mcp-Session-Id header";
        return Err(Answer::error(400, cors.clone(), message, keep_alive));
    };
    let stored = sessions.get(id, now);
    let foreign = owner.is_some_and(|o| stored.is_some_and(|s| s.owner() != o));
    if foreign || !sessions.remove(id) {
        let message = "unknown or expired session";
        return Err(Answer::error(404, cors.clone(), message, keep_alive));
    }
    Ok(id.to_string())
}

/// An answer carrying a JSON-RPC message.
fn message(status: u16, headers: Headers, reply: &Json, keep_alive: bool) -> Post {
    Post::Answer(Answer {
        status,
        headers,
        body: mcp::structured::to_vec(reply),
        keep_alive,
    })
}

/// Whether the client takes an event stream for a call that asked for
/// progress or logs (`wants`): it accepts one, over HTTP/1.1.
fn streams(req: &Request, wants: bool) -> bool {
    let accepts = req
        .header("accept")
        .is_some_and(|a| a.contains("text/event-stream"));
    accepts && req.minor_version >= 1 && wants
}

/// The `-32020` error of a modern job tool's call whose
/// `Mcp-Param-Job-Id` header (what balancers route on) is missing or does
/// not match its body.
fn job_header_mismatch(req: &Request, task: &TaskRequest) -> Option<Json> {
    let TaskMethod::Job { modern: true, .. } = task.method else {
        return None;
    };
    let header = req.header("mcp-param-job-id");
    let message = jobs::check_param_header(&task.task_id, header).err()?;
    let refused = jsonrpc::error_response(Some(&task.id), ErrorCode::HeaderMismatch, &message);
    Some(refused)
}

/// A request of a legacy session (or `initialize`, which creates one).
fn legacy(state: PostState<'_>, req: &Request, body: Decoded<'_>, cors: Headers) -> Post {
    let keep_alive = req.keep_alive;
    let body = match body {
        Decoded::Message(msg, arguments) => match &msg {
            Incoming::Invalid(reply) => {
                // Unparseable bodies and batches are HTTP errors; a
                // well-formed request with a bad shape still gets its
                // JSON-RPC error.
                let status = if reply.get("id").is_none_or(Json::is_null) {
                    400
                } else {
                    200
                };
                return message(status, cors, reply, keep_alive);
            }
            Incoming::Empty => {
                let reply = jsonrpc::error_response(
                    None,
                    ErrorCode::ParseError,
                    "invalid JSON: empty body",
                );
                return message(400, cors, &reply, keep_alive);
            }
            Incoming::Request { method, .. } if method == "initialize" => {
                return initialize(state, keep_alive, msg, arguments, cors)
            }
            _ => Decoded::Message(msg, arguments),
        },
        call => call,
    };
    let PostState {
        catalog,
        sessions,
        creator,
        oauth,
        now,
        random: _,
    } = state;
    let Some(session_id) = req.header("mcp-session-id") else {
        let m = "missing Mcp-Session-Id header";
        return Post::Answer(Answer::error(400, cors, m, keep_alive));
    };
    let owner = oauth.then_some(creator.as_str());
    let stored = sessions.get(session_id, now);
    let Some(stored) = stored.filter(|s| owner.is_none_or(|o| o == s.owner())) else {
        let m = "unknown or expired session; re-initialize";
        return Post::Answer(Answer::error(404, cors, m, keep_alive));
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
            return Post::Answer(Answer::error(400, cors, &m, keep_alive));
        }
    }
    let mut session = mcp::Session {
        initialized: stored.initialized,
        protocol_version: Some(stored.protocol_version.clone()),
        log_level: stored.log_level,
    };
    let step = match body {
        Decoded::Call(call) => mcp::handle_call(catalog, &mut session, call),
        Decoded::Message(msg, arguments) => {
            mcp::handle_in_era(catalog, &mut session, msg, arguments, Some(false))
        }
    };
    stored.initialized = session.initialized;
    stored.log_level = session.log_level;
    sessions.touch(session_id, now);
    let logs = session.log_level.is_some();
    frame(step, req, session_id.to_string(), logs, cors)
}

/// A legacy `initialize`: the session it creates, and its reply.
fn initialize(
    state: PostState<'_>,
    keep_alive: bool,
    msg: Incoming,
    arguments: Option<&str>,
    cors: Headers,
) -> Post {
    let PostState {
        catalog,
        sessions,
        creator,
        now,
        random,
        ..
    } = state;
    let mut session = mcp::Session::default();
    let step = mcp::handle_in_era(catalog, &mut session, msg, arguments, Some(false));
    let version = session
        .protocol_version
        .unwrap_or_else(|| mcp::DEFAULT_VERSION.to_string());
    let created = loop {
        let bytes = match random() {
            Ok(bytes) => bytes,
            Err(e) => {
                let m = format!("cannot create a session: {e}");
                return Post::Answer(Answer::error(500, cors, &m, keep_alive));
            }
        };
        if let Some(created) = sessions.create(bytes, &version, &creator, now) {
            break created;
        }
    };
    let notice = (created.evicted_own > 0).then(|| {
        let who = match creator.as_str() {
            "token" => "the token's holders".to_string(),
            other => Untrusted(other).to_string(),
        };
        format!("{who} holds its cap of sessions (--max-sessions-per-owner); its least recently used one was dropped")
    });
    let mut headers = cors;
    headers.push(("Mcp-Session-Id".into(), created.id));
    if !matches!(step, Step::Reply(_)) {
        let m = "initialize produced no reply";
        return Post::Answer(Answer::error(500, headers, m, keep_alive));
    }
    let framing = Framing {
        session: String::new(),
        modern: false,
        headers,
        keep_alive,
        sse: false,
        notice,
    };
    Post::Apply(step, framing)
}

/// A plain modern `tools/call` (its `_meta` read in place, declaring
/// `version`): [`modern`]'s checks and step, from its parts.
fn modern_call(
    catalog: &Catalog,
    req: &Request,
    call: CallLine<'_>,
    version: &str,
    cors: Headers,
) -> Post {
    let lookup = |name: &str| req.header(name);
    if let Err(reply) = mcp::headers::check_call(&call.id, version, call.name, &lookup) {
        return message(400, cors, &reply, req.keep_alive);
    }
    let mut stateless = mcp::Session::default();
    let step = mcp::handle_call(catalog, &mut stateless, call);
    frame(step, req, String::new(), false, cors)
}

/// A modern (2026-07-28) request: no session, its headers checked against
/// its body, its answer's status chosen by the revision (`404` for an
/// unknown method, `400` for the request errors).
fn modern(
    catalog: &Catalog,
    req: &Request,
    msg: Incoming,
    arguments: Option<&str>,
    cors: Headers,
) -> Post {
    let keep_alive = req.keep_alive;
    match &msg {
        Incoming::Request { id, method, params } => {
            // A missing or malformed `_meta` is reported first; then the
            // headers must agree with the body; only then is the version
            // judged (a version we do not serve in both is -32022).
            let meta = era::request_meta(id, params.as_ref());
            let malformed = meta
                .as_ref()
                .err()
                .filter(|r| jsonrpc::error_code(r) == Some(ErrorCode::InvalidParams as i64));
            if let Some(reply) = malformed {
                return message(400, cors, reply, keep_alive);
            }
            let lookup = |name: &str| req.header(name);
            if let Err(reply) = mcp::headers::check(id, method, params.as_ref(), &lookup) {
                return message(400, cors, &reply, keep_alive);
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
            let status = if jsonrpc::error_code(&reply) == Some(ErrorCode::ParseError as i64) {
                400
            } else {
                era::http_status(&reply).max(400)
            };
            return message(status, cors, &reply, keep_alive);
        }
        Incoming::Empty => {
            let mut reply =
                jsonrpc::error_response(None, ErrorCode::ParseError, "invalid JSON: empty body");
            if let Json::Object(m) = &mut reply {
                m.remove("id");
            }
            return message(400, cors, &reply, keep_alive);
        }
        Incoming::Notification { .. } | Incoming::Response => {}
    }
    let mut stateless = mcp::Session::default();
    let step = mcp::handle_in_era(catalog, &mut stateless, msg, arguments, Some(true));
    frame(step, req, String::new(), false, cors)
}

/// Frames the step of a request in legacy session `session` (empty: a
/// modern request); `session_logs`: the session asked for log messages.
fn frame(step: Step, req: &Request, session: String, session_logs: bool, cors: Headers) -> Post {
    let keep_alive = req.keep_alive;
    let modern = session.is_empty();
    let mut framing = Framing {
        session,
        modern,
        headers: cors,
        keep_alive,
        sse: false,
        notice: None,
    };
    let step = match step {
        // `subscriptions/listen` is always a modern request.
        Step::Listen(_) if !modern => Step::Nothing,
        // Notifications are accepted and ignored: on HTTP a modern
        // request is cancelled by closing its stream, not by a message.
        Step::Cancel(_) if modern => Step::Nothing,
        Step::Listen(listen) if req.minor_version < 1 => {
            let reply = jsonrpc::error_response(
                Some(&listen.id),
                ErrorCode::InvalidRequest,
                "subscriptions/listen needs HTTP/1.1 (its answer is an open event stream)",
            );
            return message(400, framing.headers, &reply, keep_alive);
        }
        Step::Task(task) => match job_header_mismatch(req, &task) {
            Some(refused) => {
                let status = framing.task_status(&refused);
                return message(status, framing.headers, &refused, keep_alive);
            }
            None => Step::Task(task),
        },
        Step::Call(call) => {
            // A modern call asks in its own `_meta`; a legacy one through
            // its session.
            let logs = call
                .modern
                .as_ref()
                .map_or(session_logs, |m| m.log_level.is_some());
            framing.sse = streams(req, call.progress_token.is_some() || logs);
            Step::Call(call)
        }
        step => step,
    };
    Post::Apply(step, framing)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::http::SessionLimits;
    use crate::protocol::instance::InstanceId;
    use crate::protocol::mcp::shapes_program;
    use serde_json::json;

    const MODERN: &str = "2026-07-28";

    /// The table and catalog one test drives, and its clock.
    struct World {
        catalog: Catalog,
        sessions: Sessions,
        now: Instant,
        creator: String,
        oauth: bool,
        /// The next random bytes; `None`: the random source fails.
        next: Option<u8>,
    }

    impl World {
        fn new() -> World {
            let mut catalog = Catalog::single(shapes_program());
            catalog.set_job_tools(true).expect("job tools");
            World {
                catalog,
                sessions: Sessions::new(SessionLimits::default(), InstanceId::parse("n1").unwrap()),
                now: Instant::now(),
                creator: "peer 127.0.0.1".into(),
                oauth: false,
                next: Some(1),
            }
        }

        /// Decides a POST of `body` with `headers` (names lowercase).
        fn post(&mut self, headers: &[(&str, &str)], body: &Json) -> Post {
            self.post_request(&request(headers, body))
        }

        /// Decides a POST of `req`: read in place (`decode_call`) and,
        /// on a copy of the table, the general way, which must agree.
        fn post_request(&mut self, req: &Request) -> Post {
            let (msg, arguments) = jsonrpc::decode_lazy(&req.body);
            let mut copy = self.sessions.clone();
            let general = self.decide(&mut copy, req, Decoded::Message(msg, arguments));
            let mut sessions = std::mem::replace(&mut self.sessions, copy);
            let post = self.decide(&mut sessions, req, jsonrpc::decode_call(&req.body));
            self.sessions = sessions;
            assert_eq!(format!("{post:?}"), format!("{general:?}"));
            self.next = post.1;
            post.0
        }

        /// [`mcp_post`] of `body` with the table `sessions`; the random
        /// source's next bytes after it.
        fn decide(
            &self,
            sessions: &mut Sessions,
            req: &Request,
            body: Decoded<'_>,
        ) -> (Post, Option<u8>) {
            let mut next = self.next;
            let mut random = || match &mut next {
                Some(n) => {
                    *n += 1;
                    Ok([*n; 16])
                }
                None => Err("no random source".to_string()),
            };
            let state = PostState {
                catalog: &self.catalog,
                sessions,
                creator: self.creator.clone(),
                oauth: self.oauth,
                now: self.now,
                random: &mut random,
            };
            let post = mcp_post(state, req, body, cors());
            (post, next)
        }

        /// A legacy session, initialized; its id.
        fn session(&mut self) -> String {
            let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"}}});
            let (_, framing) = applied(self.post(&[], &init));
            let id = header(&framing.headers, "Mcp-Session-Id").expect("session id");
            let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            let (step, _) = applied(self.post(&[("mcp-session-id", &id)], &done));
            assert!(matches!(step, Step::Nothing));
            id
        }
    }

    fn cors() -> Headers {
        vec![("Vary".into(), "Origin".into())]
    }

    fn request(headers: &[(&str, &str)], body: &Json) -> Request {
        let body = match body {
            Json::String(raw) => raw.as_bytes().to_vec(),
            other => other.to_string().into_bytes(),
        };
        Request {
            method: "POST".into(),
            target: "/mcp".into(),
            path: "/mcp".into(),
            minor_version: 1,
            headers: headers.iter().copied().collect(),
            trailers: Default::default(),
            body,
            keep_alive: true,
        }
    }

    fn header(headers: &Headers, name: &str) -> Option<String> {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }

    #[track_caller]
    fn applied(post: Post) -> (Step, Framing) {
        match post {
            Post::Apply(step, framing) => (step, framing),
            Post::Answer(a) => panic!("answered {} {}", a.status, String::from_utf8_lossy(&a.body)),
        }
    }

    /// The answer's status and body (as JSON).
    #[track_caller]
    fn answered(post: Post) -> (u16, Json) {
        match post {
            Post::Answer(a) => {
                assert_eq!(a.headers[0], cors()[0], "CORS headers kept");
                (
                    a.status,
                    serde_json::from_slice(&a.body).expect("JSON body"),
                )
            }
            Post::Apply(step, _) => panic!("applied {step:?}"),
        }
    }

    fn modern_meta() -> Json {
        json!({
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
        })
    }

    /// The headers of a modern `tools/call` of tool `name`.
    fn call_headers(name: &str) -> Vec<(&str, &str)> {
        vec![
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "tools/call"),
            ("mcp-name", name),
        ]
    }

    /// The status and JSON-RPC error code of an answer.
    #[track_caller]
    fn refused(post: Post) -> (u16, Option<i64>) {
        let (status, body) = answered(post);
        (status, body["error"]["code"].as_i64())
    }

    fn modern_call(name: &str, arguments: Json) -> Json {
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": modern_meta()}})
    }

    #[test]
    fn initialize_creates_a_session_named_in_a_header() {
        let mut world = World::new();
        let id = world.session();
        assert!(id.starts_with("n1."), "{id}");
        assert_eq!(world.sessions.len(), 1);
        let stored = world.sessions.get(&id, world.now).expect("stored");
        assert!(stored.initialized);
        assert_eq!(stored.protocol_version, "2025-06-18");
        assert_eq!(stored.owner(), "peer 127.0.0.1");
    }

    #[test]
    fn initialize_without_a_random_source_is_a_500_and_makes_no_session() {
        let mut world = World::new();
        world.next = None;
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}}});
        let (status, body) = answered(world.post(&[], &init));
        assert_eq!(status, 500);
        assert_eq!(body["error"], "cannot create a session: no random source");
        assert!(world.sessions.is_empty());
    }

    #[test]
    fn a_new_session_over_its_owners_cap_comes_with_a_notice() {
        let mut world = World::new();
        world.sessions = Sessions::new(
            SessionLimits {
                max_per_owner: 1,
                ..SessionLimits::default()
            },
            InstanceId::parse("n1").unwrap(),
        );
        world.creator = "token".into();
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}}});
        let (_, first) = applied(world.post(&[], &init));
        assert_eq!(first.notice, None);
        let (_, second) = applied(world.post(&[], &init));
        let notice = second.notice.expect("notice");
        assert!(
            notice.starts_with("the token's holders holds its cap"),
            "{notice}"
        );
        assert_eq!(world.sessions.len(), 1);
    }

    #[test]
    fn a_legacy_request_needs_a_known_session() {
        let mut world = World::new();
        let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
        let (status, body) = answered(world.post(&[], &list));
        assert_eq!(
            (status, body["error"].as_str()),
            (400, Some("missing Mcp-Session-Id header"))
        );
        let unknown = [("mcp-session-id", "n1.00000000000000000000000000000000")];
        let (status, body) = answered(world.post(&unknown, &list));
        assert_eq!(
            (status, body["error"].as_str()),
            (404, Some("unknown or expired session; re-initialize"))
        );
        let id = world.session();
        let (step, framing) = applied(world.post(&[("mcp-session-id", &id)], &list));
        assert!(matches!(step, Step::Reply(_)));
        assert_eq!(
            (framing.session.as_str(), framing.modern),
            (id.as_str(), false)
        );
    }

    #[test]
    fn an_expired_session_is_unknown() {
        let mut world = World::new();
        let id = world.session();
        world.now += SessionLimits::default().ttl + std::time::Duration::from_secs(1);
        let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
        let (status, _) = answered(world.post(&[("mcp-session-id", &id)], &list));
        assert_eq!(status, 404);
    }

    #[test]
    fn under_oauth_a_session_serves_only_its_creator() {
        let mut world = World::new();
        world.oauth = true;
        world.creator = "oauth https://issuer alice".into();
        let id = world.session();
        world.creator = "oauth https://issuer mallory".into();
        let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
        let (status, _) = answered(world.post(&[("mcp-session-id", &id)], &list));
        assert_eq!(status, 404);
        world.oauth = false;
        let (step, _) = applied(world.post(&[("mcp-session-id", &id)], &list));
        assert!(matches!(step, Step::Reply(_)));
    }

    #[test]
    fn a_legacy_request_may_name_any_legacy_version_but_no_other() {
        let mut world = World::new();
        let id = world.session();
        let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
        let older = [
            ("mcp-session-id", id.as_str()),
            ("mcp-protocol-version", "2024-11-05"),
        ];
        assert!(matches!(
            applied(world.post(&older, &list)).0,
            Step::Reply(_)
        ));
        let wrong = [
            ("mcp-session-id", id.as_str()),
            ("mcp-protocol-version", "1999-01-01"),
        ];
        let (status, body) = answered(world.post(&wrong, &list));
        assert_eq!(status, 400);
        let message = body["error"].as_str().unwrap();
        assert!(
            message.starts_with("unsupported MCP-Protocol-Version '1999-01-01'"),
            "{message}"
        );
        assert!(
            message.ends_with("this session uses 2025-06-18)"),
            "{message}"
        );
    }

    #[test]
    fn legacy_errors_and_empty_bodies() {
        let mut world = World::new();
        let (status, body) = answered(world.post(&[], &json!("")));
        assert_eq!(
            (status, body["error"]["code"].as_i64()),
            (400, Some(-32700))
        );
        let (status, body) = answered(world.post(&[], &json!("{not json")));
        assert_eq!(
            (status, body["error"]["code"].as_i64()),
            (400, Some(-32700))
        );
        // A batch is refused as a whole.
        let batch = json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]);
        let (status, body) = answered(world.post(&[], &batch));
        assert_eq!((status, body["id"].is_null()), (400, true));
        // A request with an id but a bad shape gets its JSON-RPC error.
        let bad = json!({"jsonrpc": "2.0", "id": 3});
        let (status, body) = answered(world.post(&[], &bad));
        assert_eq!((status, body["id"].as_i64()), (200, Some(3)));
    }

    #[test]
    fn legacy_notifications_and_cancellations_are_steps_a_202_answers() {
        let mut world = World::new();
        let id = world.session();
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 5}});
        let (step, framing) = applied(world.post(&[("mcp-session-id", &id)], &cancel));
        assert!(matches!(step, Step::Cancel(_)), "{step:?}");
        assert_eq!(framing.session, id);
    }

    #[test]
    fn a_legacy_call_streams_only_when_asked_and_accepted() {
        let mut world = World::new();
        let id = world.session();
        let call = |progress: bool| {
            let mut call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                "params": {"name": "addOne", "arguments": {"_1": 1}}});
            if progress {
                call["params"]["_meta"] = json!({"progressToken": "p"});
            }
            call
        };
        let sse = [
            ("mcp-session-id", id.as_str()),
            ("accept", "application/json, text/event-stream"),
        ];
        let (step, framing) = applied(world.post(&sse, &call(true)));
        assert!(matches!(step, Step::Call(_)));
        assert!(framing.sse);
        assert!(!applied(world.post(&sse, &call(false))).1.sse);
        let plain = [
            ("mcp-session-id", id.as_str()),
            ("accept", "application/json"),
        ];
        assert!(!applied(world.post(&plain, &call(true))).1.sse);
    }

    #[test]
    fn a_modern_version_header_without_a_session_makes_the_request_modern() {
        let mut world = World::new();
        // No `_meta`: a modern request missing it is -32602, as a 400.
        let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
        let (status, body) = answered(world.post(&[("mcp-protocol-version", MODERN)], &ping));
        assert_eq!(
            (status, body["error"]["code"].as_i64()),
            (400, Some(-32602))
        );
        // The same request with a legacy header needs a session.
        let (status, _) = answered(world.post(&[("mcp-protocol-version", "2025-06-18")], &ping));
        assert_eq!(status, 400);
    }

    #[test]
    fn modern_headers_must_mirror_the_body() {
        let mut world = World::new();
        let call = modern_call("addOne", json!({"_1": 1}));
        let (status, body) = answered(world.post(&[], &call));
        assert_eq!(status, 400);
        assert_eq!(body["error"]["code"].as_i64(), Some(-32020));
        let msg = body["error"]["message"].as_str().unwrap();
        assert!(msg.contains("missing MCP-Protocol-Version header"), "{msg}");
        let wrong_name = call_headers("scale");
        assert_eq!(refused(world.post(&wrong_name, &call)), (400, Some(-32020)));
        let right = call_headers("addOne");
        let (step, framing) = applied(world.post(&right, &call));
        let Step::Call(request) = step else {
            panic!("a call")
        };
        assert_eq!(request.id, jsonrpc::RequestId::Int("7".into()));
        assert_eq!(
            (framing.modern, framing.session.as_str(), framing.sse),
            (true, "", false)
        );
    }

    #[test]
    fn a_modern_name_header_may_be_base64() {
        let mut world = World::new();
        let call = modern_call("addOne", json!({"_1": 1}));
        let headers = [
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?YWRkT25l?="),
        ];
        assert!(matches!(
            applied(world.post(&headers, &call)).0,
            Step::Call(_)
        ));
    }

    #[test]
    fn modern_errors_have_no_null_id_and_their_own_status() {
        let mut world = World::new();
        let h = [("mcp-protocol-version", MODERN)];
        let (status, body) = answered(world.post(&h, &json!("")));
        assert_eq!(status, 400);
        assert!(body.get("id").is_none(), "{body}");
        let batch = json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]);
        let (status, body) = answered(world.post(&h, &batch));
        assert!(status >= 400, "{status}");
        assert!(body.get("id").is_none(), "{body}");
        // An unknown method is the reply's 404, framed by `apply`.
        let nope = json!({"jsonrpc": "2.0", "id": 4, "method": "nope", "params": {"_meta": modern_meta()}});
        let headers = [("mcp-protocol-version", MODERN), ("mcp-method", "nope")];
        let (step, framing) = applied(world.post(&headers, &nope));
        let Step::Reply(reply) = step else {
            panic!("a reply")
        };
        assert_eq!(framing.reply_status(&reply), 404);
    }

    #[test]
    fn modern_notifications_and_cancellations_are_accepted_and_ignored() {
        let mut world = World::new();
        let h = [("mcp-protocol-version", MODERN)];
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 5}});
        let (step, framing) = applied(world.post(&h, &cancel));
        assert!(matches!(step, Step::Nothing), "{step:?}");
        assert!(framing.modern);
    }

    #[test]
    fn a_modern_listen_needs_http_1_1() {
        let mut world = World::new();
        let listen = json!({"jsonrpc": "2.0", "id": 3, "method": "subscriptions/listen",
            "params": {"_meta": modern_meta(), "notifications": {"toolsListChanged": true}}});
        let h = [
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "subscriptions/listen"),
        ];
        let mut req = request(&h, &listen);
        req.minor_version = 0;
        let (status, body) = answered(world.post_request(&req));
        assert_eq!(status, 400);
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("needs HTTP/1.1"), "{message}");
        let (step, _) = applied(world.post(&h, &listen));
        assert!(matches!(step, Step::Listen(_)), "{step:?}");
    }

    #[test]
    fn a_modern_job_call_must_mirror_its_job_id() {
        let mut world = World::new();
        let call = modern_call("job_status", json!({"job_id": "n1.abc"}));
        let mut headers = call_headers("job_status");
        assert_eq!(refused(world.post(&headers, &call)), (400, Some(-32020)));
        headers.push(("mcp-param-job-id", "n1.abc"));
        let (step, _) = applied(world.post(&headers, &call));
        assert!(matches!(step, Step::Task(_)), "{step:?}");
    }

    #[test]
    fn delete_ends_a_known_session_of_its_owner() {
        let mut world = World::new();
        let id = world.session();
        let req = |id: Option<&str>| {
            request(
                &id.map(|i| ("mcp-session-id", i))
                    .into_iter()
                    .collect::<Vec<_>>(),
                &json!(""),
            )
        };
        let missing = mcp_delete(&mut world.sessions, &req(None), None, &cors(), world.now);
        assert_eq!(missing.unwrap_err().status, 400);
        let foreign = mcp_delete(
            &mut world.sessions,
            &req(Some(&id)),
            Some("someone"),
            &cors(),
            world.now,
        );
        assert_eq!(foreign.unwrap_err().status, 404);
        let owner = Some("peer 127.0.0.1");
        let ended = mcp_delete(
            &mut world.sessions,
            &req(Some(&id)),
            owner,
            &cors(),
            world.now,
        );
        assert_eq!(ended, Ok(id.clone()));
        let again = mcp_delete(
            &mut world.sessions,
            &req(Some(&id)),
            None,
            &cors(),
            world.now,
        );
        assert_eq!(again.unwrap_err().status, 404);
    }
}
