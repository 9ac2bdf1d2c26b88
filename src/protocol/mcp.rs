//! The MCP front door: one inbound JSON-RPC message in, what to do about it
//! out, for both eras of the protocol.
//!
//! [`Program`] (in `catalog`) is everything computed once at start-up from the manifest (the
//! tool surface, compiled pure expressions); a [`Catalog`] is what one
//! endpoint serves. [`handle`] first decides the request's era (`era`): a
//! legacy request (2024-11-05 to 2025-11-25) goes through the per-client
//! [`Session`] and the `initialize` handshake (`legacy`); a modern one
//! (2026-07-28) is served statelessly from its own `_meta` (`modern`).
//! Everything that needs no execution is answered here; a valid `tools/call`
//! becomes a [`CallRequest`] that the reactor executes, and a valid
//! `subscriptions/listen` a [`Step::Listen`] (`subscriptions`). [`call`]
//! holds the rest of a call's pure life (arguments to packet, reply to
//! response), and `results` shapes its results; with `--max-result-chars`,
//! `bigresults` links long ones and answers `resources/*` ([`Step::Resource`],
//! from the table the reactor holds). `discover` holds what the
//! server says about itself in each era, `identity` the names and result
//! fields the others share.
//! `jobs` has the job tools (`--job-tools`).
//!
//! The same code serves stdio and every HTTP request.
//!
//! Architecture Invariant: pure; no I/O. Execution happens in the reactor.

pub mod bigresults;
pub mod call;
mod catalog;
pub use catalog::{Catalog, CatalogError, Program, ProgramError};
mod discover;
pub mod era;
pub mod headers;
mod identity;
pub mod jobs;
mod legacy;
mod modern;
mod packing;
pub use packing::{PacketJob, SLICE_ABOVE};
mod results;
pub mod structured;
pub mod subscriptions;
pub mod tasks;

pub use call::{call_response, return_schema, run_pure, slot_name, slot_schema};
pub use discover::{discover_result, initialize_result, server_info};
pub use results::*;
pub use subscriptions::{ListenRequest, Listeners};

use serde_json::Value as Json;

use crate::protocol::args;
use crate::protocol::jsonrpc::{self, ErrorCode, Incoming, RequestId};

/// Legacy revisions we negotiate in `initialize`, oldest first.
pub const SUPPORTED_VERSIONS: [&str; 4] = era::LEGACY_VERSIONS;
/// What `initialize` answers when the client asks for a revision we do not know.
pub const DEFAULT_VERSION: &str = "2025-06-18";

/// MCP log levels (RFC 5424 severities), least severe first.
pub const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// Per-client protocol state.
#[derive(Clone, Debug, Default)]
pub struct Session {
    /// Set by `notifications/initialized`; unlocks `tools/*`.
    pub initialized: bool,
    /// The revision agreed in `initialize`.
    pub protocol_version: Option<String>,
    /// Index into [`LOG_LEVELS`] after `logging/setLevel`; `None` sends no logs.
    pub log_level: Option<usize>,
}

/// A `tools/call` that passed the protocol checks.
#[derive(Clone, Debug)]
pub struct CallRequest {
    pub id: RequestId,
    /// Index into [`Catalog::programs`].
    pub program: usize,
    /// The tool called: an index into its program's `surface.tools`. What
    /// the call needs (OAuth scopes) and what it is counted as follow the
    /// tool, not the command that runs.
    pub tool: usize,
    /// The command to execute (a `_render` projection's entry, or the tool's own).
    pub command: usize,
    /// Its arguments, on their way to a CALL packet (`call::input`).
    pub input: call::CallInput,
    pub progress_token: Option<Json>,
    /// The request's `_meta` when it is a modern (2026-07-28) request: its
    /// result is then completed (`resultType`, server identity) and its log
    /// level decides which pool output it receives.
    pub modern: Option<era::RequestMeta>,
    /// The authorization the request came with (over HTTP, its
    /// `Authorization` header; empty otherwise): a task made of the call is
    /// visible only under the same one. Under OAuth, the token's issuer and
    /// subject (`oauth <issuer> <subject>`), never the token.
    pub owner: String,
}

impl Step {
    /// The tool call this step carries, if it is one.
    pub fn call_mut(&mut self) -> Option<&mut CallRequest> {
        match self {
            Step::Call(request) => Some(request),
            _ => None,
        }
    }

    /// Gives a call's [`PacketJob`] the text its arguments were borrowed
    /// from: `body` itself when the caller can give it up (no copy), else a
    /// copy of the arguments out of `borrowed`.
    pub fn hand_over(&mut self, body: Option<&mut Vec<u8>>, borrowed: &[u8]) {
        let Step::Call(request) = self else {
            return;
        };
        let call::CallInput::Building(job) = &mut request.input else {
            return;
        };
        match body {
            Some(body) => job.take_text(std::mem::take(body)),
            None => job.copy_text(borrowed),
        }
    }
}

impl CallRequest {
    /// The name of the tool called, as `catalog` serves it now (a retired
    /// program's released tools give the command's name).
    pub fn tool_name<'c>(&self, catalog: &'c Catalog) -> &'c str {
        let program = &catalog.programs[self.program];
        match program.surface.tools.get(self.tool) {
            Some(tool) => &tool.name,
            None => program
                .loaded
                .manifest
                .commands
                .get(self.command)
                .map_or("", |c| &c.name),
        }
    }

    /// Whether the call is a modern request.
    pub fn is_modern(&self) -> bool {
        self.modern.is_some()
    }

    /// Whether the request declared the Tasks extension.
    pub fn wants_tasks(&self) -> bool {
        self.modern
            .as_ref()
            .is_some_and(|m| m.declares(tasks::EXTENSION))
    }
}

/// What the caller must do after [`handle`].
// One per message, moved once to its handler: boxing the call would cost an
// allocation per call for no gain.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum Step {
    Nothing,
    Reply(Json),
    Call(CallRequest),
    /// `notifications/cancelled` for this request id.
    Cancel(RequestId),
    /// A modern `subscriptions/listen`: register it, then send its
    /// acknowledgement.
    Listen(ListenRequest),
    /// A modern `tasks/get`, `tasks/update` or `tasks/cancel` from a client
    /// that declared the extension, or a job tool's call (`--job-tools`):
    /// the reactor holds the task table.
    Task(TaskRequest),
    /// `resources/*` while big results are on: the reactor holds them.
    Resource(bigresults::ResourceRequest),
}

/// Which `tasks/*` method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskMethod {
    Get,
    Update,
    Cancel,
    /// A job tool's `tools/call` (`--job-tools`), answered as a tool
    /// result of the request's era.
    Job {
        method: jobs::JobMethod,
        modern: bool,
    },
}

/// A checked `tasks/*` request.
#[derive(Clone, Debug)]
pub struct TaskRequest {
    pub id: RequestId,
    pub method: TaskMethod,
    pub task_id: String,
}

/// Handles one inbound message.
pub fn handle(catalog: &Catalog, session: &mut Session, msg: Incoming) -> Step {
    handle_lazy(catalog, session, msg, None)
}

/// [`handle`] for a message decoded by [`jsonrpc::decode_lazy`]: `arguments`
/// is the text of its `params.arguments` object (then `null` in the message).
/// A `tools/call` of a remote command then carries its CALL packet, encoded
/// straight from that text ([`CallRequest::packet`]).
pub fn handle_lazy(
    catalog: &Catalog,
    session: &mut Session,
    msg: Incoming,
    arguments: Option<&str>,
) -> Step {
    handle_in_era(catalog, session, msg, arguments, None)
}

/// [`handle_lazy`] for a transport that has already decided which era the
/// message speaks (`Some(true)`: modern), so the era is decided once per
/// request; `None` decides it here from the message and the session.
pub fn handle_in_era(
    catalog: &Catalog,
    session: &mut Session,
    msg: Incoming,
    arguments: Option<&str>,
    modern: Option<bool>,
) -> Step {
    // Only `tools/call` reads its arguments as text; anything else gets them
    // back in place.
    let restore = |params: Option<Json>| match (params, arguments) {
        (Some(mut params), Some(text)) => {
            params["arguments"] = serde_json::from_str(text).unwrap_or(Json::Null);
            Some(params)
        }
        (params, _) => params,
    };
    let (msg, arguments) = match msg {
        Incoming::Request { id, method, params } if method != "tools/call" => {
            let params = restore(params);
            (Incoming::Request { id, method, params }, None)
        }
        Incoming::Notification { method, params } => {
            let params = restore(params);
            (Incoming::Notification { method, params }, None)
        }
        other => (other, arguments),
    };
    match msg {
        Incoming::Empty | Incoming::Response => Step::Nothing,
        Incoming::Invalid(reply) => Step::Reply(reply),
        Incoming::Notification { method, params } => {
            match method.as_str() {
                "notifications/initialized" => session.initialized = true,
                "notifications/cancelled" => {
                    if let Some(id) = params
                        .as_ref()
                        .and_then(|p| p.get("requestId"))
                        .and_then(RequestId::from_json)
                    {
                        return Step::Cancel(id);
                    }
                }
                // Everything else (progress, roots changes, unknown) is ignored:
                // notifications are never answered.
                _ => {}
            }
            Step::Nothing
        }
        Incoming::Request { id, method, params } => {
            let in_session = session.protocol_version.is_some();
            let modern =
                modern.unwrap_or_else(|| era::is_modern(&method, params.as_ref(), in_session));
            if modern {
                modern::request(catalog, id, &method, params, arguments)
            } else {
                legacy::request(catalog, session, id, &method, params, arguments)
            }
        }
    }
}

/// Resolves a `tools/call` into a [`CallRequest`] (or the error reply);
/// `modern` is the request's `_meta` when it is a modern request.
fn tools_call(
    catalog: &Catalog,
    id: RequestId,
    params: Option<Json>,
    arguments: Option<&str>,
    modern: Option<era::RequestMeta>,
) -> Step {
    let name = params
        .as_ref()
        .and_then(|p| p.get("name"))
        .and_then(Json::as_str);
    if let Some(method) = name.and_then(jobs::JobMethod::from_name) {
        if catalog.job_tools() {
            return jobs_call(catalog, id, method, params, arguments, modern.is_some());
        }
    }
    let program = program_for(catalog, name);
    let Some(prog) = catalog.programs.get(program) else {
        return Step::Reply(jsonrpc::error_response(
            Some(&id),
            ErrorCode::InvalidParams,
            &format!("unknown tool '{}'", name.unwrap_or("")),
        ));
    };
    // MCP progress tokens are strings or integers; `null` means none.
    let progress_token = match params
        .as_ref()
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get("progressToken"))
    {
        None | Some(Json::Null) => None,
        Some(t @ (Json::String(_) | Json::Number(_))) => Some(t.clone()),
        Some(other) => {
            return Step::Reply(jsonrpc::error_response(
                Some(&id),
                ErrorCode::InvalidParams,
                &format!(
                    "'_meta.progressToken' must be a string or a number, got {}",
                    crate::format::json::text(other)
                ),
            ))
        }
    };
    let resolved = match arguments {
        Some(text) => args::resolve_text(&prog.surface, params.as_ref(), text),
        None => args::resolve(&prog.surface, params.as_ref()).map(|call| args::TextCall {
            tool: call.tool,
            command: call.command,
            args: call.args.into_iter().map(args::Source::Json).collect(),
        }),
    };
    finish_call(
        catalog,
        id,
        program,
        progress_token,
        modern,
        resolved,
        arguments,
    )
}

/// The program that answers a call of tool `name`. Unknown names fall
/// through to the program with a tool of a similar name, else the first,
/// so that the argument layer produces its usual error with the right
/// hint.
fn program_for(catalog: &Catalog, name: Option<&str>) -> usize {
    let first = catalog.live().first().copied().unwrap_or(0);
    name.and_then(|n| {
        catalog.program_of(n).or_else(|| {
            catalog.live().iter().copied().find(|&p| {
                crate::protocol::args::suggest_tool(&catalog.programs[p].surface, n).is_some()
            })
        })
    })
    .unwrap_or(first)
}

/// [`handle_lazy`] for a plain `tools/call` read in place
/// ([`jsonrpc::decode_call`]): the same step, without a tree of its
/// `params`. Without `_meta` the call speaks the session's legacy era,
/// with one it is modern; a session not yet initialized, a `_meta` with
/// more than the era's fields or a refusal in it, a job tool or a catalog
/// without the program take the general way for their answers.
pub fn handle_call(catalog: &Catalog, session: &mut Session, call: jsonrpc::CallLine) -> Step {
    let in_session = session.protocol_version.is_some();
    // With a `_meta`, a modern call whose `_meta` holds only what
    // `era::request_meta` reads; without, a legacy one.
    let meta = call
        .meta()
        .map(|members| era::meta_in_place(members, in_session));
    let job = call.name.and_then(jobs::JobMethod::from_name).is_some() && catalog.job_tools();
    let program = program_for(catalog, call.name);
    let general = match &meta {
        None => !session.initialized || era::is_modern("tools/call", None, in_session),
        Some(modern) => modern.is_none(),
    };
    if general || job || catalog.programs.get(program).is_none() {
        let (msg, arguments) = call.into_message();
        return handle_lazy(catalog, session, msg, Some(arguments));
    }
    let surface = &catalog.programs[program].surface;
    let resolved = args::resolve_named(surface, call.name, call.arguments, call.members);
    let modern = meta.flatten();
    finish_call(
        catalog,
        call.id,
        program,
        None,
        modern,
        resolved,
        Some(call.arguments),
    )
}

/// A `tools/call` whose tool and arguments were resolved: the call, or the
/// reply refusing it.
fn finish_call(
    catalog: &Catalog,
    id: RequestId,
    program: usize,
    progress_token: Option<Json>,
    modern: Option<era::RequestMeta>,
    resolved: Result<args::TextCall, args::ArgError>,
    arguments: Option<&str>,
) -> Step {
    let is_modern = modern.is_some();
    match resolved {
        Ok(args::TextCall {
            tool,
            command: Ok(command),
            args: sources,
        }) => {
            let input = call::input(&catalog.programs[program], command, sources, arguments);
            Step::Call(CallRequest {
                program,
                tool,
                progress_token,
                id,
                command,
                input,
                modern,
                owner: String::new(),
            })
        }
        // A `_render` projection whose entry command does not exist.
        Ok(args::TextCall {
            command: Err(entry),
            ..
        }) => Step::Reply(call_response(
            catalog,
            &id,
            is_modern,
            error_result(&format!("Unknown command: {entry}")),
        )),
        Err(e) => Step::Reply(jsonrpc::error_response(
            Some(&id),
            ErrorCode::InvalidParams,
            &e.message,
        )),
    }
}

/// A `tools/call` of a job tool: its job id checked (an `isError` result
/// otherwise), then a [`Step::Task`] for the reactor, which holds the jobs.
fn jobs_call(
    catalog: &Catalog,
    id: RequestId,
    method: jobs::JobMethod,
    params: Option<Json>,
    arguments: Option<&str>,
    modern: bool,
) -> Step {
    let parsed = arguments.map(|text| serde_json::from_str::<Json>(text).unwrap_or(Json::Null));
    let given = parsed
        .as_ref()
        .or_else(|| params.as_ref().and_then(|p| p.get("arguments")));
    match jobs::job_id(method, given) {
        Ok(task_id) => Step::Task(TaskRequest {
            id,
            method: TaskMethod::Job { method, modern },
            task_id,
        }),
        Err(message) => Step::Reply(call_response(catalog, &id, modern, error_result(&message))),
    }
}

/// The shapes test program (`tests/data/shapes`), compiled, for unit tests.
#[cfg(test)]
pub(crate) fn shapes_program() -> Program {
    use crate::format::manifest::{Loaded, Manifest};
    const SHAPES: &str = include_str!("../../tests/data/shapes/manifest.json");
    let manifest = Manifest::from_json(SHAPES, &mut Vec::new()).expect("shapes loads");
    let surface = crate::protocol::tools::build(&manifest);
    let loaded = Loaded {
        manifest,
        path: "/m/manifest.json".into(),
        dir: "/m".into(),
        tools_file: "/m/morloc-mcp-tools.json".into(),
        tools_file_given: false,
    };
    Program::new(loaded, surface).expect("shapes compiles")
}

#[cfg(test)]
mod catalog_tests {
    use super::*;
    use crate::format::manifest::CommandKind;

    fn shapes() -> Program {
        shapes_program()
    }

    #[test]
    fn lazy_handling_answers_as_full_handling() {
        let catalog = Catalog::single(shapes());
        let lines = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"addOne","arguments":{"_1":41}}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"addOne","arguments":{"_1":"x"}}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"addOne","arguments":{"zz":1}}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"pureAnswer","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"p","arguments":{"a":"b"}}}"#,
            r#"{"jsonrpc":"2.0","id":6,"method":"nope","params":{"arguments":{"a":1}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"arguments":{}}}"#,
        ];
        for line in lines {
            let mut full_session = Session {
                initialized: true,
                protocol_version: Some(DEFAULT_VERSION.into()),
                log_level: None,
            };
            let mut lazy_session = full_session.clone();
            let full = handle(
                &catalog,
                &mut full_session,
                jsonrpc::decode(line.as_bytes()),
            );
            let (msg, arguments) = jsonrpc::decode_lazy(line.as_bytes());
            let lazy = handle_lazy(&catalog, &mut lazy_session, msg, arguments);
            match (full, lazy) {
                // A value error: both calls are answered with the same
                // message, the typed one when checked, the lazy one at once.
                (Step::Call(a), Step::Call(b))
                    if matches!(b.input, call::CallInput::Refused(_)) =>
                {
                    assert_eq!((&a.id, a.command), (&b.id, b.command), "{line}");
                    let call::CallInput::Values(values) = &a.input else {
                        panic!("{line}: a typed call has values")
                    };
                    let message =
                        call::check_args(&catalog.programs[0], a.command, values).expect_err(line);
                    let call::CallInput::Refused(refused) = &b.input else {
                        unreachable!()
                    };
                    assert_eq!(refused, &message, "{line}");
                }
                (Step::Call(a), Step::Call(b)) => {
                    assert_eq!((&a.id, a.command), (&b.id, b.command), "{line}");
                    let remote = catalog.programs[0].command(a.command).kind != CommandKind::Pure;
                    match (&a.input, &b.input) {
                        (_, call::CallInput::Packet(_)) => assert!(remote, "{line}"),
                        (call::CallInput::Values(x), call::CallInput::Values(y)) => {
                            assert!(!remote, "{line}");
                            assert_eq!(x, y, "{line}");
                        }
                        (x, y) => panic!("{line}: {x:?} and {y:?}"),
                    }
                }
                (a, b) => assert_eq!(format!("{a:?}"), format!("{b:?}"), "{line}"),
            }
        }
    }

    #[test]
    fn plain_calls_are_handled_as_parsed_ones() {
        let lines = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"addOne","arguments":{"_1":41}}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{"_1":"x"},"name":"addOne"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"addOne","arguments":{"zz":1}}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"pureAnswer","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"AddOne","arguments":{"_1":1}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"_1":1}}}"#,
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"job_status","arguments":{"job_id":"x"}}}"#,
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"addOne","arguments":{"_1":1,"_1":41}}}"#,
            r#"{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"addOne","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"addOne","arguments":{"\u005f1":41}}}"#,
        ];
        let meta = |meta: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{{"_meta":{{{meta}}},"name":"addOne","arguments":{{"_1":41}}}}}}"#
            )
        };
        let (v, caps, info) = (
            r#""io.modelcontextprotocol/protocolVersion":"2026-07-28""#,
            r#""io.modelcontextprotocol/clientCapabilities":{}"#,
            r#""io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}"#,
        );
        let level = |l: &str| format!(r#""io.modelcontextprotocol/logLevel":{l}"#);
        let modern = [
            meta(&format!("{v},{info},{caps}")),
            meta(&format!("{caps},{v}")),
            meta(&format!(
                r#"{v},"io.modelcontextprotocol/clientCapabilities":{{"extensions":{{"io.modelcontextprotocol/tasks":{{}},"x":1}}}}"#
            )),
            meta(&format!("{v},{caps},{}", level(r#""debug""#))),
            meta(&format!("{v},{caps},{}", level(r#""loud""#))),
            meta(&format!("{v},{caps},{}", level(r#""d\u0065bug""#))),
            meta(&format!("{v},{caps},{}", level("3"))),
            meta(&format!(
                r#""io.modelcontextprotocol/protocolVersion":"2025-06-18",{caps}"#
            )),
            meta(&format!(
                r#""io.modelcontextprotocol/protocolVersion":"2030-01-01",{caps}"#
            )),
            meta(r#""io.modelcontextprotocol/protocolVersion":"2026-07-\u0032\u0038""#),
            meta(v),
            meta(&format!("{v},{caps},{v}")),
            meta(&format!(
                r#"{v},"io.modelcontextprotocol/clientCapabilities":3"#
            )),
            meta(&format!(
                r#"{v},{caps},"io.modelcontextprotocol/clientInfo":"c""#
            )),
            meta(&format!(r#"{v},{caps},"progressToken":7"#)),
            meta(&format!(
                r#"{v},{caps},"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01""#
            )),
            meta(r#""progressToken":"p""#),
            meta(""),
        ];
        let lines = lines.iter().map(|l| l.to_string()).chain(modern);
        let sessions = [
            Session {
                initialized: true,
                protocol_version: Some(DEFAULT_VERSION.into()),
                log_level: None,
            },
            Session {
                initialized: false,
                protocol_version: Some(DEFAULT_VERSION.into()),
                log_level: None,
            },
            Session::default(),
        ];
        let mut with_jobs = Catalog::single(shapes());
        with_jobs.set_job_tools(true).expect("job tools");
        for catalog in [Catalog::single(shapes()), with_jobs] {
            for session in &sessions {
                for line in lines.clone() {
                    let line = line.as_str();
                    let jsonrpc::Decoded::Call(call) = jsonrpc::decode_call(line.as_bytes()) else {
                        panic!("{line}: not a plain call");
                    };
                    let mut read_in_place = session.clone();
                    let fast = handle_call(&catalog, &mut read_in_place, call);
                    let mut parsed = session.clone();
                    let (msg, arguments) = jsonrpc::decode_lazy(line.as_bytes());
                    let slow = handle_lazy(&catalog, &mut parsed, msg, arguments);
                    assert_eq!(format!("{fast:?}"), format!("{slow:?}"), "{line}");
                    assert_eq!(format!("{read_in_place:?}"), format!("{parsed:?}"));
                }
            }
        }
    }

    #[test]
    fn a_replaced_program_is_released_and_the_live_one_is_not() {
        let mut catalog = Catalog::single(shapes());
        let tools = catalog.programs[0].surface.tools.len();
        assert!(tools > 0);
        assert!(!catalog.release(0), "the live program must stay whole");
        assert_eq!(catalog.programs[0].surface.tools.len(), tools);

        let new = catalog
            .replace(0, shapes())
            .expect("same surface, no collision");
        assert_eq!(new, 1);
        assert!(catalog.release(0));
        let old = &catalog.programs[0];
        assert!(old.surface.tools.is_empty() && old.loaded.manifest.commands.is_empty());
        assert!(old.exprs.is_empty() && old.compiled.is_empty());
        // What remains names the run; the live program serves as before.
        assert_eq!(old.loaded.manifest.pools.len(), 1);
        assert_eq!(catalog.programs[1].surface.tools.len(), tools);
        assert_eq!(
            catalog.legacy_list()["tools"].as_array().map(Vec::len),
            Some(tools)
        );
        assert!(!catalog.release(7), "an unknown index is ignored");
    }
}
