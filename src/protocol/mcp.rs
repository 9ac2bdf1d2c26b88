//! The MCP session: one inbound JSON-RPC message in, what to do about it out.
//!
//! [`Program`] is everything computed once at start-up from the manifest (the
//! tool surface, compiled pure expressions). [`Session`] is the per-client
//! state (the handshake flag, the negotiated protocol version, the log level).
//! [`handle`] answers everything that needs no execution (handshake, ping,
//! `tools/list`, protocol and argument errors) and turns a valid `tools/call`
//! into a [`CallRequest`] that the reactor executes; [`prepare`] validates the
//! call's values against their schemas, and [`success_result`] /
//! [`error_result`] shape what comes back.
//!
//! The same code serves stdio and every HTTP session.
//!
//! Architecture Invariant: pure; no I/O. Execution happens in the reactor.

use std::collections::HashMap;

use serde_json::{Map, Value as Json};

use crate::format::eval;
use crate::format::manifest::{Arg, Command, CommandKind, Loaded};
use crate::format::schema::{self, Schema};
use crate::format::value::{self, Value};
use crate::protocol::args;
use crate::protocol::jsonrpc::{self, ErrorCode, Incoming, RequestId};
use crate::protocol::tools::Surface;

/// Protocol revisions we speak, oldest first.
pub const SUPPORTED_VERSIONS: [&str; 3] = ["2025-03-26", "2025-06-18", "2025-11-25"];
/// What we answer when the client asks for a revision we do not know.
pub const DEFAULT_VERSION: &str = "2025-06-18";

/// Everything derived once from the manifest.
#[derive(Debug)]
pub struct Program {
    pub loaded: Loaded,
    pub surface: Surface,
    /// Compiled expression per command (pure commands only).
    pub exprs: Vec<Option<eval::Expr>>,
}

/// A pure command whose expression tree does not compile.
#[derive(Debug)]
pub struct ProgramError {
    pub command: String,
    pub error: eval::EvalError,
}

impl std::fmt::Display for ProgramError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "pure command '{}' has an invalid expression: {}",
            self.command, self.error
        )
    }
}

impl Program {
    /// Builds the tool surface and compiles pure expressions. The exclusion
    /// notes are returned in `surface.notes` for the caller to print.
    pub fn new(loaded: Loaded, surface: Surface) -> Result<Program, ProgramError> {
        let mut exprs = Vec::with_capacity(loaded.manifest.commands.len());
        for cmd in &loaded.manifest.commands {
            exprs.push(match (&cmd.kind, &cmd.expr) {
                (CommandKind::Pure, Some(expr)) => {
                    Some(eval::compile(expr).map_err(|error| ProgramError {
                        command: cmd.name.clone(),
                        error,
                    })?)
                }
                _ => None,
            });
        }
        Ok(Program {
            loaded,
            surface,
            exprs,
        })
    }

    pub fn command(&self, index: usize) -> &Command {
        &self.loaded.manifest.commands[index]
    }
}

/// Everything one endpoint serves: one program (stdio, single-program HTTP)
/// or several (the router), with tool names already made unique.
#[derive(Debug)]
pub struct Catalog {
    pub programs: Vec<Program>,
    /// `serverInfo.name`.
    pub server_name: String,
    /// `serverInfo.version`.
    pub server_version: String,
    /// Tool name → program index.
    tool_index: HashMap<String, usize>,
    /// The `tools/list` result, computed once.
    list: Json,
}

/// Two programs that would publish the same tool name.
#[derive(Debug)]
pub struct CatalogError(pub String);

impl std::fmt::Display for CatalogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Catalog {
    /// One program under its plain tool names (stdio).
    pub fn single(program: Program) -> Catalog {
        let server_name = program.loaded.manifest.name.clone();
        let server_version = program.loaded.manifest.build.morloc_version.clone();
        Catalog::build(vec![program], server_name, server_version)
            .expect("one program has no cross-program collisions")
    }

    /// Several programs; with `namespaced`, every tool is renamed
    /// `<module>__<command>`. A duplicate module or tool name is an error.
    pub fn multi(
        mut programs: Vec<Program>,
        namespaced: bool,
        router: bool,
    ) -> Result<Catalog, CatalogError> {
        let mut modules: HashMap<String, usize> = HashMap::new();
        for (i, p) in programs.iter().enumerate() {
            if let Some(j) = modules.insert(p.loaded.manifest.name.clone(), i) {
                return Err(CatalogError(format!(
                    "two programs have the module name '{}' ({} and {}); tool names would collide",
                    p.loaded.manifest.name,
                    programs[j].loaded.path.display(),
                    p.loaded.path.display()
                )));
            }
        }
        if namespaced {
            for p in &mut programs {
                let module = p.loaded.manifest.name.clone();
                for tool in &mut p.surface.tools {
                    let name = format!("{module}__{}", tool.name);
                    tool.rename(name);
                }
            }
        }
        let (server_name, server_version) = match (router, programs.first()) {
            (false, Some(p)) => (
                p.loaded.manifest.name.clone(),
                p.loaded.manifest.build.morloc_version.clone(),
            ),
            (true, Some(p)) => (
                "morloc".to_string(),
                p.loaded.manifest.build.morloc_version.clone(),
            ),
            (_, None) => ("morloc".to_string(), "unknown".to_string()),
        };
        Catalog::build(programs, server_name, server_version)
    }

    fn build(
        programs: Vec<Program>,
        server_name: String,
        server_version: String,
    ) -> Result<Catalog, CatalogError> {
        let mut tool_index = HashMap::new();
        let mut tools = Vec::new();
        for (i, p) in programs.iter().enumerate() {
            for tool in &p.surface.tools {
                if let Some(j) = tool_index.insert(tool.name.clone(), i) {
                    if j != i {
                        return Err(CatalogError(format!(
                            "tool name collision on '{}' between modules '{}' and '{}'; rename a module or command",
                            tool.name, programs[j].loaded.manifest.name, p.loaded.manifest.name
                        )));
                    }
                }
                tools.push(tool.json.clone());
            }
        }
        let mut list = Map::new();
        list.insert("tools".into(), Json::Array(tools));
        Ok(Catalog {
            programs,
            server_name,
            server_version,
            tool_index,
            list: Json::Object(list),
        })
    }

    pub fn program_of(&self, tool_name: &str) -> Option<usize> {
        self.tool_index.get(tool_name).copied()
    }
}

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
    /// The command to execute (a `_render` projection's entry, or the tool's own).
    pub command: usize,
    /// One JSON value per manifest argument, in manifest order.
    pub args: Vec<Json>,
    pub progress_token: Option<Json>,
}

/// What the caller must do after [`handle`].
#[derive(Clone, Debug)]
pub enum Step {
    Nothing,
    Reply(Json),
    Call(CallRequest),
    /// `notifications/cancelled` for this request id.
    Cancel(RequestId),
}

/// Handles one inbound message.
pub fn handle(catalog: &Catalog, session: &mut Session, msg: Incoming) -> Step {
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
        Incoming::Request { id, method, params } => request(catalog, session, id, &method, params),
    }
}

fn request(
    catalog: &Catalog,
    session: &mut Session,
    id: RequestId,
    method: &str,
    params: Option<Json>,
) -> Step {
    let reply = |result: Json| Step::Reply(jsonrpc::result_response(&id, result));
    let fail = |code: ErrorCode, message: &str| {
        Step::Reply(jsonrpc::error_response(Some(&id), code, message))
    };
    match method {
        "initialize" => {
            let asked = params
                .as_ref()
                .and_then(|p| p.get("protocolVersion"))
                .and_then(Json::as_str);
            let version = match asked {
                Some(v) if SUPPORTED_VERSIONS.contains(&v) => v,
                _ => DEFAULT_VERSION,
            };
            session.protocol_version = Some(version.to_string());
            reply(initialize_result(catalog, version))
        }
        "ping" => reply(Json::Object(Map::new())),
        // Reference leniency kept: a client that sends the notification with
        // an id still unlocks tools, and gets no reply.
        "notifications/initialized" => {
            session.initialized = true;
            Step::Nothing
        }
        "logging/setLevel" => {
            let level = params.as_ref().and_then(|p| p.get("level"));
            let known = level
                .and_then(Json::as_str)
                .and_then(|l| LOG_LEVELS.iter().position(|x| *x == l));
            match known {
                Some(i) => {
                    session.log_level = Some(i);
                    reply(Json::Object(Map::new()))
                }
                None => fail(
                    ErrorCode::InvalidParams,
                    &format!(
                        "invalid log level {}: expected one of {}",
                        match level {
                            None => "(missing)".to_string(),
                            Some(Json::String(l)) => format!("'{l}'"),
                            Some(other) => other.to_string(),
                        },
                        LOG_LEVELS.join(", ")
                    ),
                ),
            }
        }
        "tools/list" | "tools/call" if !session.initialized => fail(
            ErrorCode::InvalidRequest,
            &format!("received {method} before initialization completed"),
        ),
        "tools/list" => reply(catalog.list.clone()),
        "tools/call" => {
            let name = params
                .as_ref()
                .and_then(|p| p.get("name"))
                .and_then(Json::as_str);
            // Unknown names fall through to the first program so that the
            // argument layer produces its usual error.
            let program = name.and_then(|n| catalog.program_of(n)).unwrap_or(0);
            let Some(prog) = catalog.programs.get(program) else {
                return fail(
                    ErrorCode::InvalidParams,
                    &format!("unknown tool '{}'", name.unwrap_or("")),
                );
            };
            tools_call(prog, program, id, params)
        }
        other => fail(
            ErrorCode::MethodNotFound,
            &format!("unknown method '{other}'"),
        ),
    }
}

fn tools_call(prog: &Program, program: usize, id: RequestId, params: Option<Json>) -> Step {
    let reply = |result: Json| Step::Reply(jsonrpc::result_response(&id, result));
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
                &format!("'_meta.progressToken' must be a string or a number, got {other}"),
            ))
        }
    };
    match args::resolve(&prog.surface, params.as_ref()) {
        Ok(call) => match call.command {
            Ok(command) => Step::Call(CallRequest {
                program,
                progress_token,
                id,
                command,
                args: call.args,
            }),
            // A `_render` projection whose entry command does not exist.
            Err(entry) => reply(error_result(&format!("Unknown command: {entry}"))),
        },
        Err(e) => Step::Reply(jsonrpc::error_response(
            Some(&id),
            ErrorCode::InvalidParams,
            &e.message,
        )),
    }
}

fn initialize_result(catalog: &Catalog, version: &str) -> Json {
    let mut caps = Map::new();
    let mut tools = Map::new();
    tools.insert("listChanged".into(), Json::Bool(false));
    caps.insert("tools".into(), Json::Object(tools));
    caps.insert("logging".into(), Json::Object(Map::new()));
    let mut info = Map::new();
    info.insert("name".into(), Json::String(catalog.server_name.clone()));
    info.insert(
        "version".into(),
        Json::String(catalog.server_version.clone()),
    );
    let mut result = Map::new();
    result.insert("protocolVersion".into(), Json::String(version.into()));
    result.insert("capabilities".into(), Json::Object(caps));
    result.insert("serverInfo".into(), Json::Object(info));
    Json::Object(result)
}

/// The name a client knows an argument slot by, for messages.
pub fn slot_name(command: &Command, slot: usize) -> String {
    let mut positional = 0;
    for (i, arg) in command.args.iter().enumerate() {
        if let Arg::Pos(_) = arg {
            positional += 1;
        }
        if i != slot {
            continue;
        }
        return match arg {
            Arg::Pos(p) => p
                .name
                .clone()
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| format!("_{positional}")),
            Arg::Opt(o) => o
                .long
                .clone()
                .or_else(|| o.short.clone())
                .unwrap_or_else(|| "option".into()),
            Arg::Flag(f) => f
                .long
                .clone()
                .or_else(|| f.short.clone())
                .unwrap_or_else(|| "option".into()),
            Arg::Grp(g) => match &g.group_opt {
                Some(_) => g
                    .type_name
                    .as_deref()
                    .map_or_else(|| "group".into(), str::to_lowercase),
                None => g.type_name.clone().unwrap_or_else(|| "group".into()),
            },
        };
    }
    format!("argument {}", slot + 1)
}

/// The schema each argument slot is encoded with (flags are `b`).
pub fn slot_schema(arg: &Arg) -> Result<Schema, String> {
    match arg {
        Arg::Flag(_) => Ok(Schema::Bool),
        other => match other.schema_text() {
            None => Err("it has no schema in the manifest".into()),
            Some(st) => st
                .parsed
                .clone()
                .map_err(|e| format!("its schema '{}' does not parse: {e}", st.text)),
        },
    }
}

/// Checks and converts a call's JSON arguments into typed values. The error
/// text names the argument and goes into an `isError` result.
pub fn prepare(program: &Program, call: &CallRequest) -> Result<Vec<Value>, String> {
    let command = program.command(call.command);
    if call.args.len() != command.args.len() {
        return Err(format!(
            "expected {} arguments, got {}",
            command.args.len(),
            call.args.len()
        ));
    }
    let mut values = Vec::with_capacity(call.args.len());
    for (slot, (arg, json)) in command.args.iter().zip(&call.args).enumerate() {
        let name = slot_name(command, slot);
        let schema =
            slot_schema(arg).map_err(|why| format!("argument '{name}' cannot be passed: {why}"))?;
        values.push(value::from_json(&schema, json, &name).map_err(|e| e.to_string())?);
    }
    Ok(values)
}

/// `{"content":[{"type":"text","text":msg}],"isError":true}`.
pub fn error_result(message: &str) -> Json {
    let mut block = Map::new();
    block.insert("type".into(), Json::String("text".into()));
    block.insert("text".into(), Json::String(message.into()));
    let mut result = Map::new();
    result.insert("content".into(), Json::Array(vec![Json::Object(block)]));
    result.insert("isError".into(), Json::Bool(true));
    Json::Object(result)
}

/// Shapes a successful value of `command` (mcp-surface §4.1, §4.3).
pub fn success_result(command: &Command, value: &Value) -> Json {
    let ret_schema = command.ret.schema.schema();
    if let (Some(mime), Some(schema)) = (&command.ret.mime, ret_schema) {
        if mime.eq_ignore_ascii_case(MULTIPART) {
            if let Some(result) = multipart_result(schema, value) {
                return result;
            }
        }
    }
    if let (Some(mime), Some(bytes)) = (
        &command.ret.mime,
        ret_schema.and_then(|s| media_bytes(s, value)),
    ) {
        return media_result(mime, &bytes);
    }
    let mut text = String::new();
    match ret_schema {
        Some(s) => {
            if let Err(e) = value::to_json(s, value, &mut text) {
                return error_result(&format!(
                    "cannot render the result of '{}': {e}",
                    command.name
                ));
            }
        }
        None => text.push_str("null"),
    }
    let mut result = Map::new();
    let structured = match (ret_schema.map(Schema::peel_named), value) {
        (Some(Schema::Record(_)), Value::Record(_)) => serde_json::from_str::<Json>(&text).ok(),
        _ => None,
    };
    let mut block = Map::new();
    block.insert("type".into(), Json::String("text".into()));
    block.insert("text".into(), Json::String(text));
    result.insert("content".into(), Json::Array(vec![Json::Object(block)]));
    if let Some(s) = structured {
        result.insert("structuredContent".into(), s);
    }
    result.insert("isError".into(), Json::Bool(false));
    Json::Object(result)
}

/// The raw bytes of a media-typed return: a Str, a list of bytes, or a list
/// of either (concatenated). `None` means "use the JSON path".
fn media_bytes(schema: &Schema, value: &Value) -> Option<Vec<u8>> {
    fn push(schema: &Schema, value: &Value, out: &mut Vec<u8>, depth: usize) -> bool {
        match (schema.peel_named(), value) {
            (Schema::Str, Value::Str(b)) => {
                out.extend_from_slice(b);
                true
            }
            (Schema::List { elem, .. }, Value::List(items)) => match elem.peel_named() {
                Schema::Int {
                    bytes: 1,
                    signed: false,
                } => items.iter().all(|v| match v {
                    Value::UInt(b) => {
                        out.push(*b as u8);
                        true
                    }
                    _ => false,
                }),
                Schema::Int {
                    bytes: 1,
                    signed: true,
                } => items.iter().all(|v| match v {
                    Value::Int(b) => {
                        out.push(*b as u8);
                        true
                    }
                    _ => false,
                }),
                _ if depth == 0 => items.iter().all(|v| push(elem, v, out, depth + 1)),
                _ => false,
            },
            _ => false,
        }
    }
    let mut out = Vec::new();
    (push(schema, value, &mut out, 0) && !out.is_empty()).then_some(out)
}

fn media_result(mime: &str, bytes: &[u8]) -> Json {
    content_result(vec![media_block(mime, bytes, "morloc://return")])
}

fn content_result(blocks: Vec<Json>) -> Json {
    let mut result = Map::new();
    result.insert("content".into(), Json::Array(blocks));
    result.insert("isError".into(), Json::Bool(false));
    Json::Object(result)
}

/// One content block for bytes of media type `mime` (mcp-surface §4.3; the
/// family is matched case-insensitively).
fn media_block(mime: &str, bytes: &[u8], uri: &str) -> Json {
    let family = mime.split('/').next().unwrap_or("").to_ascii_lowercase();
    let mut block = Map::new();
    match family.as_str() {
        "image" | "audio" => {
            block.insert("type".into(), Json::String(family));
            block.insert("data".into(), Json::String(base64(bytes)));
            block.insert("mimeType".into(), Json::String(mime.into()));
        }
        "text" => {
            block.insert("type".into(), Json::String("text".into()));
            block.insert(
                "text".into(),
                Json::String(String::from_utf8_lossy(bytes).into_owned()),
            );
        }
        _ => {
            let mut res = Map::new();
            res.insert("uri".into(), Json::String(uri.into()));
            res.insert("mimeType".into(), Json::String(mime.into()));
            res.insert("blob".into(), Json::String(base64(bytes)));
            block.insert("type".into(), Json::String("resource".into()));
            block.insert("resource".into(), Json::Object(res));
        }
    }
    Json::Object(block)
}

/// The media type under which a command returns several content blocks.
pub const MULTIPART: &str = "multipart/mixed";

/// A `multipart/mixed` return: a list of `(media type, body)` pairs, each
/// becoming its own content block (an extension: the reference has one block
/// per result). `None` if the value does not have that shape.
fn multipart_result(schema: &Schema, value: &Value) -> Option<Json> {
    let Schema::List { elem, .. } = schema.peel_named() else {
        return None;
    };
    let Schema::Tuple(members) = elem.peel_named() else {
        return None;
    };
    if members.len() != 2 || members.iter().any(|m| m.peel_named() != &Schema::Str) {
        return None;
    }
    let Value::List(parts) = value else {
        return None;
    };
    let mut blocks = Vec::with_capacity(parts.len());
    for (i, part) in parts.iter().enumerate() {
        let Value::Tuple(pair) = part else {
            return None;
        };
        let [Value::Str(mime), Value::Str(body)] = pair.as_slice() else {
            return None;
        };
        let mime = String::from_utf8_lossy(mime);
        blocks.push(media_block(&mime, body, &format!("morloc://return/{i}")));
    }
    Some(content_result(blocks))
}

/// Standard base64 with padding.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `notifications/progress` for a long call.
pub fn progress_notification(token: &Json, elapsed_secs: f64, message: &str) -> Json {
    let mut p = Map::new();
    p.insert("progressToken".into(), token.clone());
    p.insert(
        "progress".into(),
        serde_json::Number::from_f64(elapsed_secs).map_or(Json::from(0), Json::Number),
    );
    p.insert("message".into(), Json::String(message.into()));
    jsonrpc::notification("notifications/progress", Json::Object(p))
}

/// `notifications/message` carrying one line a pool wrote, if the session
/// asked for logs at this level.
pub fn log_notification(session: &Session, level: usize, logger: &str, line: &str) -> Option<Json> {
    let wanted = session.log_level?;
    if level < wanted {
        return None;
    }
    let mut p = Map::new();
    p.insert("level".into(), Json::String(LOG_LEVELS[level].into()));
    p.insert("logger".into(), Json::String(logger.into()));
    p.insert("data".into(), Json::String(line.into()));
    Some(jsonrpc::notification(
        "notifications/message",
        Json::Object(p),
    ))
}

/// Runs a pure command in-process.
pub fn run_pure(
    program: &Program,
    command: usize,
    values: Vec<Value>,
    host: &mut dyn eval::Host,
) -> Result<Value, String> {
    let cmd = program.command(command);
    let Some(expr) = program.exprs.get(command).and_then(Option::as_ref) else {
        return Err(format!(
            "command '{}' has no expression to evaluate",
            cmd.name
        ));
    };
    let Some(ret) = cmd.ret.schema.schema() else {
        return Err(format!(
            "command '{}' has an unusable return schema '{}'",
            cmd.name, cmd.ret.schema.text
        ));
    };
    let mut schemas = Vec::with_capacity(cmd.args.len());
    for arg in &cmd.args {
        schemas.push(slot_schema(arg).unwrap_or(Schema::Nil));
    }
    eval::run(expr, &schemas, values, ret, host).map_err(|e| e.to_string())
}

/// The return schema of a command, if it parses.
pub fn return_schema(command: &Command) -> Result<&Schema, String> {
    command
        .ret
        .schema
        .parsed
        .as_ref()
        .map_err(|e: &schema::SchemaError| {
            format!(
                "command '{}' has an unusable return schema '{}': {e}",
                command.name, command.ret.schema.text
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multipart_returns_become_one_block_per_part() {
        let schema = crate::format::schema::parse("at2ss").unwrap();
        let part =
            |m: &str, b: &[u8]| Value::Tuple(vec![Value::Str(m.into()), Value::Str(b.to_vec())]);
        let value = Value::List(vec![
            part("text/plain", b"hi"),
            part("IMAGE/png", b"\x89PNG"),
            part("application/json", b"{}"),
        ]);
        let got = multipart_result(&schema, &value).unwrap().to_string();
        assert_eq!(
            got,
            r#"{"content":[{"type":"text","text":"hi"},{"type":"image","data":"iVBORw==","mimeType":"IMAGE/png"},{"type":"resource","resource":{"uri":"morloc://return/2","mimeType":"application/json","blob":"e30="}}],"isError":false}"#
        );
        assert!(multipart_result(
            &crate::format::schema::parse("as").unwrap(),
            &Value::List(vec![])
        )
        .is_none());
    }

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (input, out) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
            ("<svg/>", "PHN2Zy8+"),
        ] {
            assert_eq!(base64(input.as_bytes()), out);
        }
    }
}
