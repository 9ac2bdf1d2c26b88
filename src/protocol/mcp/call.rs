//! A tool call's pure life: from a checked `tools/call` ([`CallRequest`]) to
//! the bytes its pool gets, and from the pool's reply (or the call's failure)
//! to the response its client gets, in either era.
//!
//! [`prepare`] checks the arguments and either answers at once (an argument
//! refused, a pure command evaluated in-process) or gives the CALL packet (a
//! call whose arguments arrived as text already carries it: `packing`,
//! through `handle_lazy`). [`reply_result`] turns a pool's reply packet into
//! the call's [`Ending`]: usually a text result, the JSON text rendered
//! straight from the reply bytes or shared memory and kept as text until
//! written. [`respond`] makes an ending the [`Response`] the transport frames
//! (a stdio line, an HTTP body, an event; a text result written without a
//! value tree), and [`Ending::into_task_outcome`] the outcome of the task it
//! became. Schemas and layouts come from the program's [`Compiled`] tables,
//! built once when the program is loaded, not per call.
//!
//! Architecture Invariant: pure; no I/O. Files and shared memory come through
//! the caller (`eval::Host`, `voidstar::Memory`, a file reader).

use std::path::Path;
use std::rc::Rc;

use serde_json::Value as Json;

use crate::format::eval;
use crate::format::manifest::{Arg, Command, CommandKind};
use crate::format::msgpack;
use crate::format::packet::{self, Reply};
use crate::format::schema::{self, Schema};
use crate::format::value::{self, Layout, LayoutError, Value};
use crate::format::voidstar::{self, Memory};
use crate::protocol::jsonrpc::{self, ErrorCode, RequestId};

use super::packing::{Form, PacketJob, Slot, SLICE_ABOVE};
use super::tasks::Outcome;
use super::{era, results, structured, CallRequest, Catalog, Program};
use crate::protocol::args;

#[cfg(test)]
mod tests;

/// What the calls of one command need, built once per program load.
#[derive(Debug)]
pub struct Compiled {
    /// One per argument slot, in manifest order (shared with the calls'
    /// packet jobs, which read them without copying).
    pub slots: Rc<[Slot]>,
    /// The return schema compiled (`None` when it does not parse).
    pub ret: Option<Result<Layout, LayoutError>>,
    /// The largest flat size a return value can have, if bounded
    /// (`schema::max_flat_size`).
    pub ret_max_flat: Option<u64>,
    /// The argument schemas a pure command is evaluated with (`Nil` for an
    /// unusable one); empty for remote commands.
    pub eval_schemas: Vec<Schema>,
}

impl Compiled {
    /// Compiles what the calls of `command` need.
    pub fn new(command: &Command) -> Compiled {
        let slots = command
            .args
            .iter()
            .enumerate()
            .map(|(slot, arg)| Slot {
                name: slot_name(command, slot),
                form: slot_schema(arg).map(|schema| Form {
                    wire: schema.to_wire_string(),
                    layout: Layout::new(&schema),
                    schema,
                }),
            })
            .collect::<Vec<Slot>>()
            .into();
        let eval_schemas = match command.kind {
            CommandKind::Pure => command
                .args
                .iter()
                .map(|arg| slot_schema(arg).unwrap_or(Schema::Nil))
                .collect(),
            _ => Vec::new(),
        };
        let ret = command.ret.schema.schema();
        Compiled {
            slots,
            ret: ret.map(Layout::new),
            ret_max_flat: ret.and_then(schema::max_flat_size),
            eval_schemas,
        }
    }

    /// Whether every result is certain to come back inline under the
    /// pool's `threshold` (a bounded return within it).
    pub fn always_inline(&self, threshold: u64) -> bool {
        self.ret_max_flat.is_some_and(|size| size <= threshold)
    }
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

/// A call's arguments on their way to its CALL packet.
#[derive(Clone, Debug)]
pub enum CallInput {
    /// One JSON value per manifest argument, in manifest order: checked,
    /// then evaluated (a pure command) or encoded (a remote one) by
    /// [`prepare`].
    Values(Vec<Json>),
    /// The CALL packet, checked and encoded straight from the arguments'
    /// text.
    Packet(Vec<u8>),
    /// For a long arguments text: the work that builds the packet, which
    /// the reactor does in slices between other events. The transport hands
    /// it the text (`Step::hand_over`).
    Building(Box<PacketJob>),
    /// The arguments' text was refused while it was encoded: the call is
    /// answered at once with this message as an `isError` result.
    Refused(String),
}

/// The input of a call of `command`: its arguments (`sources`) as values,
/// or, for a remote command whose arguments arrived as `text`
/// (`handle_lazy`), the packet encoded from the text at once when it is
/// short ([`SLICE_ABOVE`]), else the job that will encode it.
pub fn input(
    program: &Program,
    command: usize,
    sources: Vec<args::Source>,
    text: Option<&str>,
) -> CallInput {
    let remote = program.command(command).kind != CommandKind::Pure;
    let Some(text) = text.filter(|_| remote) else {
        return CallInput::Values(sources.into_iter().map(args::Source::into_value).collect());
    };
    let job = match PacketJob::new(program, command, &sources, text) {
        Ok(job) => job,
        Err(message) => return CallInput::Refused(message),
    };
    if text.len() > SLICE_ABOVE {
        return CallInput::Building(Box::new(job));
    }
    match job.run_on(text) {
        Ok(packet) => CallInput::Packet(packet),
        Err(message) => CallInput::Refused(message),
    }
}

/// What a call needs after [`prepare`].
#[derive(Debug)]
pub enum Prepared {
    /// Answered without a pool: an argument refused, or a pure command
    /// evaluated in-process.
    Answered(Ending),
    /// The CALL packet for the command's pool.
    Remote(Vec<u8>),
    /// The packet is still to be built from a long text, a slice at a time
    /// (`PacketJob::step`); the call waits for it.
    Building(Box<PacketJob>),
}

/// Two outcomes are equal when they answer or send the same; work still to
/// be done is never equal to anything.
impl PartialEq for Prepared {
    fn eq(&self, other: &Prepared) -> bool {
        match (self, other) {
            (Prepared::Answered(a), Prepared::Answered(b)) => a == b,
            (Prepared::Remote(a), Prepared::Remote(b)) => a == b,
            _ => false,
        }
    }
}

/// Prepares a call: its input refused, its packet as it came or its packet
/// job, else its arguments checked, then a pure command evaluated (through
/// `host` for its files) or a remote one's CALL packet encoded.
pub fn prepare(
    program: &Program,
    request: &mut CallRequest,
    host: &mut dyn eval::Host,
) -> Prepared {
    let input = std::mem::replace(&mut request.input, CallInput::Values(Vec::new()));
    let args = match input {
        CallInput::Refused(message) => return Prepared::Answered(Ending::Error(message)),
        CallInput::Packet(packet) => return Prepared::Remote(packet),
        CallInput::Building(job) => return Prepared::Building(job),
        CallInput::Values(args) => args,
    };
    let values = match check_args(program, request.command, &args) {
        Ok(values) => values,
        Err(message) => return Prepared::Answered(Ending::Error(message)),
    };
    let command = program.command(request.command);
    if command.kind == CommandKind::Pure {
        let ending = match run_pure(program, request.command, values, host) {
            Ok(v) => Ending::Result(success(program, request.command, &v)),
            Err(message) => Ending::Error(message),
        };
        return Prepared::Answered(ending);
    }
    match encode_call(program, request.command, &values) {
        Ok(packet) => Prepared::Remote(packet),
        Err(message) => Prepared::Answered(Ending::Error(message)),
    }
}

/// Checks and converts a call's JSON arguments into typed values. The error
/// text names the argument and goes into an `isError` result.
pub fn check_args(program: &Program, command: usize, args: &[Json]) -> Result<Vec<Value>, String> {
    let compiled = program.compiled(command);
    let command = program.command(command);
    if args.len() != command.args.len() {
        return Err(format!(
            "expected {} arguments, got {}",
            command.args.len(),
            args.len()
        ));
    }
    let mut values = Vec::with_capacity(args.len());
    for (slot, json) in compiled.slots.iter().zip(args) {
        let form = slot.form()?;
        let layout = form.layout(&slot.name).map_err(|e| e.to_string())?;
        values.push(value::from_json_with(layout, json, &slot.name).map_err(|e| e.to_string())?);
    }
    Ok(values)
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
    let schemas = &program.compiled(command).eval_schemas;
    eval::run(expr, schemas, values, ret, host).map_err(|e| e.to_string())
}

/// Builds the CALL packet of typed values: one inline voidstar DATA packet
/// per argument.
pub fn encode_call(program: &Program, command: usize, values: &[Value]) -> Result<Vec<u8>, String> {
    let cmd = program.command(command);
    let mut args = Vec::with_capacity(values.len());
    for (slot, value) in program.compiled(command).slots.iter().zip(values) {
        let form = slot.form()?;
        let blob = match &form.layout {
            Ok(layout) => voidstar::encode_flat_with(layout, value),
            Err(e) => Err(e.clone().into()),
        }
        .map_err(|e| format!("cannot encode argument '{}': {e}", slot.name))?;
        args.push(packet::data_packet_voidstar(&form.wire, &blob));
    }
    Ok(packet::call_packet(cmd.mid, &args))
}

/// The successful result of a value of `command`, rendered with its
/// compiled return layout.
fn success(program: &Program, command: usize, value: &Value) -> Json {
    let layout = program.compiled(command).ret.as_ref();
    results::success_result_with(program.command(command), layout, value)
}

/// Turns a pool's reply (`packet::parse_reply`) into how the call ended:
/// its result, or the error of a reply that cannot be decoded. `mem` is the
/// shared memory a relptr reply points into. A result file is read by the
/// edge first (a slice per turn); its bytes are then the reply's msgpack
/// value (`Reply::Msgpack`).
pub fn reply_result(
    program: &Program,
    command: usize,
    reply: Reply<'_>,
    mem: &dyn Memory,
) -> Ending {
    match reply_value(program, command, reply, mem) {
        Ok(Replied::Text(result)) => Ending::Text(result),
        Ok(Replied::Json(result)) => Ending::Result(result),
        Err(message) => Ending::Error(message),
    }
}

/// A reply's result: a text result (a call's usual answer, kept as text)
/// or any other.
enum Replied {
    Text(results::TextResult),
    Json(Json),
}

fn reply_value(
    program: &Program,
    command: usize,
    reply: Reply<'_>,
    mem: &dyn Memory,
) -> Result<Replied, String> {
    let cmd = program.command(command);
    let schema = return_schema(cmd)?;
    let decode_failed =
        |e: &dyn std::fmt::Display| format!("cannot decode the result of '{}': {e}", cmd.name);
    // The compiled layout; without one (a type that cannot be laid out),
    // the schema's own decoders give their errors.
    let layout = match program.compiled(command).ret.as_ref() {
        Some(Ok(layout)) => Some(layout),
        _ => None,
    };
    let from_msgpack = |data: &[u8]| {
        match layout {
            Some(layout) => msgpack::decode_with(layout, data),
            None => msgpack::decode(schema, data),
        }
        .map_err(|e| decode_failed(&e))
    };
    let msgpack_text = |value: &Value| {
        let mut text = String::new();
        let rendered = match layout {
            Some(layout) => value::to_json_with(layout, value, &mut text),
            None => value::to_json(schema, value, &mut text),
        };
        match rendered {
            Ok(()) => Replied::Text(results::TextResult::new(cmd, text)),
            Err(e) => Replied::Json(results::error_result(&format!(
                "cannot render the result of '{}': {e}",
                cmd.name
            ))),
        }
    };
    if results::result_is_json_text(cmd) {
        // Straight from the reply bytes (or shared memory) to the JSON
        // text: no decoded value in between.
        let mut text = String::new();
        let rendered = match reply {
            Reply::Fail(message) => return Ok(Replied::Json(results::error_result(&message))),
            Reply::Voidstar(blob) => match layout {
                Some(layout) => voidstar::flat_to_json_with(layout, blob, &mut text),
                None => voidstar::flat_to_json(schema, blob, &mut text),
            },
            Reply::Rptr(relptr) => match layout {
                Some(layout) => voidstar::to_json_with(layout, mem, relptr, &mut text),
                None => voidstar::to_json(schema, mem, relptr, &mut text),
            },
            // A msgpack value is decoded first, then rendered to the text
            // kept as the answer (as `success` renders it, without its JSON
            // tree and a second escaping of the text).
            Reply::Msgpack(data) => return Ok(msgpack_text(&from_msgpack(data)?)),
            Reply::File(path) => return Err(unread(&path)),
        };
        rendered.map_err(|e| decode_failed(&e))?;
        return Ok(Replied::Text(results::TextResult::new(cmd, text)));
    }
    let value: Value = match reply {
        Reply::Fail(message) => return Ok(Replied::Json(results::error_result(&message))),
        Reply::Voidstar(blob) => match layout {
            Some(layout) => voidstar::decode_flat_with(layout, blob),
            None => voidstar::decode_flat(schema, blob),
        }
        .map_err(|e| decode_failed(&e))?,
        Reply::Msgpack(data) => from_msgpack(data)?,
        Reply::Rptr(relptr) => match layout {
            Some(layout) => voidstar::decode_with(layout, mem, relptr),
            None => voidstar::decode(schema, mem, relptr),
        }
        .map_err(|e| decode_failed(&e))?,
        Reply::File(path) => return Err(unread(&path)),
    };
    Ok(Replied::Json(success(program, command, &value)))
}

/// A result file handed here unread: the edge reads it first.
fn unread(path: &Path) -> String {
    format!("the result file {} was not read", path.display())
}

/// How a call ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Ending {
    /// Its `CallToolResult` (`isError` when the tool failed).
    Result(Json),
    /// A successful text result, kept as its text until written (the
    /// usual reply of a pool).
    Text(results::TextResult),
    /// Its arguments or its reply were refused: an `isError` result with
    /// this message (a task it became completes with it).
    Error(String),
    /// The call itself failed (its pool died, it timed out): an `isError`
    /// result for its client, but a task it became fails.
    Failed(String),
}

impl From<Result<Json, String>> for Ending {
    fn from(outcome: Result<Json, String>) -> Ending {
        match outcome {
            Ok(result) => Ending::Result(result),
            Err(message) => Ending::Error(message),
        }
    }
}

impl Ending {
    /// The `CallToolResult` its client gets.
    pub fn into_result(self) -> Json {
        match self {
            Ending::Result(result) => result,
            Ending::Text(result) => result.into_json(),
            Ending::Error(message) | Ending::Failed(message) => results::error_result(&message),
        }
    }

    /// How the call ended, as the metrics count it.
    pub fn outcome(&self) -> crate::protocol::metrics::Outcome {
        use crate::protocol::metrics::Outcome;
        match self {
            Ending::Result(result) if result.get("isError") == Some(&Json::Bool(true)) => {
                Outcome::ToolError
            }
            Ending::Result(_) | Ending::Text(_) => Outcome::Ok,
            Ending::Error(_) => Outcome::ToolError,
            Ending::Failed(_) => Outcome::Failed,
        }
    }

    /// What the task the call became settles with.
    pub fn into_task_outcome(self) -> Outcome {
        match self {
            Ending::Failed(message) => Outcome::Failed(ErrorCode::InternalError as i64, message),
            other => {
                // Tasks are of the modern era only.
                let mut result = other.into_result();
                structured::for_era(&mut result, true);
                Outcome::Completed(result)
            }
        }
    }
}

/// The response to a `tools/call`, typed by era: the transport only frames
/// it (a stdio line, an HTTP body, an event of an event stream), writing it
/// with [`Response::write`] (or `structured::write` of its message), which
/// fills in a modern `structuredContent`.
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    id: RequestId,
    body: Body,
    modern: bool,
}

#[derive(Clone, Debug, PartialEq)]
enum Body {
    /// The JSON-RPC response.
    Message(Json),
    /// The response carrying a text result, written straight from the text
    /// (no map of the envelope or the result); `server_info` is the
    /// server's `serverInfo` text for a modern answer, else empty.
    Text {
        result: results::TextResult,
        server_info: String,
    },
}

impl Response {
    /// The JSON-RPC response (built, for a text result).
    pub fn into_message(self) -> Json {
        match self.body {
            Body::Message(message) => message,
            Body::Text {
                result,
                server_info,
            } => {
                let mut result = result.into_json();
                structured::for_era(&mut result, self.modern);
                if self.modern {
                    let info = serde_json::from_str(&server_info).unwrap_or(Json::Null);
                    result = results::complete_with(result, info);
                }
                jsonrpc::result_response(&self.id, result)
            }
        }
    }

    /// Writes the response as `structured::write` writes its message: the
    /// same bytes.
    pub fn write(&self, out: &mut Vec<u8>) {
        match &self.body {
            Body::Message(message) => structured::write(out, message),
            Body::Text {
                result,
                server_info,
            } => self.write_text(out, result, server_info),
        }
    }

    fn write_text(&self, out: &mut Vec<u8>, result: &results::TextResult, server_info: &str) {
        out.extend_from_slice(ENVELOPE_OPEN);
        match &self.id {
            RequestId::Int(literal) => out.extend_from_slice(literal.as_bytes()),
            RequestId::Str(text) => {
                out.push(b'"');
                crate::format::json::write_str_body_into(out, text);
                out.push(b'"');
            }
        }
        out.extend_from_slice(RESULT_KEY);
        result.write(out, self.modern, server_info);
        out.push(b'}');
    }

    /// The length [`Response::write`] gives, counted without writing (an
    /// HTTP body's `Content-Length`).
    pub fn length(&self) -> usize {
        match &self.body {
            Body::Message(message) => structured::length(message),
            Body::Text {
                result,
                server_info,
            } => {
                let id = match &self.id {
                    RequestId::Int(literal) => literal.len(),
                    RequestId::Str(text) => 2 + crate::format::json::str_body_len(text),
                };
                ENVELOPE_OPEN.len()
                    + id
                    + RESULT_KEY.len()
                    + result.length(self.modern, server_info)
                    + 1
            }
        }
    }

    /// The request it answers.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// Whether it answers a modern (2026-07-28) request.
    pub fn is_modern(&self) -> bool {
        self.modern
    }

    /// The HTTP status it goes out with.
    pub fn http_status(&self) -> u16 {
        match &self.body {
            Body::Message(message) if self.modern => era::http_status(message),
            _ => 200,
        }
    }

    /// Its outcome and error code as access lines name them
    /// (`log::outcome_and_code` of its message).
    pub fn outcome(&self) -> (&'static str, Option<i64>) {
        match &self.body {
            Body::Message(message) => crate::protocol::log::outcome_and_code(message),
            Body::Text { .. } => ("ok", None),
        }
    }
}

/// A message on its way to a client: a JSON-RPC message, or a call's
/// [`Response`] (written without its message as a tree). The transports
/// take either.
#[derive(Debug)]
pub enum Outgoing<'a> {
    Message(&'a Json),
    Response(Response),
}

impl<'a> From<&'a Json> for Outgoing<'a> {
    fn from(message: &'a Json) -> Outgoing<'a> {
        Outgoing::Message(message)
    }
}

impl From<Response> for Outgoing<'_> {
    fn from(response: Response) -> Outgoing<'static> {
        Outgoing::Response(response)
    }
}

impl<'a> Outgoing<'a> {
    /// Writes it as `structured::write` writes its message.
    pub fn write(&self, out: &mut Vec<u8>) {
        match self {
            Outgoing::Message(message) => structured::write(out, message),
            Outgoing::Response(response) => response.write(out),
        }
    }

    /// The length [`Outgoing::write`] gives, counted without writing.
    pub fn length(&self) -> usize {
        match self {
            Outgoing::Message(message) => structured::length(message),
            Outgoing::Response(response) => response.length(),
        }
    }

    /// The message as a tree (built, for a call's text result).
    pub fn into_message(self) -> std::borrow::Cow<'a, Json> {
        match self {
            Outgoing::Message(message) => std::borrow::Cow::Borrowed(message),
            Outgoing::Response(response) => std::borrow::Cow::Owned(response.into_message()),
        }
    }

    /// The id of the request it answers, if it is a response.
    pub fn id(&self) -> Option<RequestId> {
        match self {
            Outgoing::Message(message) => message.get("id").and_then(RequestId::from_json),
            Outgoing::Response(response) => Some(response.id.clone()),
        }
    }

    /// Its outcome and error code as access lines name them.
    pub fn outcome(&self) -> (&'static str, Option<i64>) {
        match self {
            Outgoing::Message(message) => crate::protocol::log::outcome_and_code(message),
            Outgoing::Response(response) => response.outcome(),
        }
    }

    /// The HTTP status of a modern answer carrying it (`era::http_status`).
    pub fn modern_status(&self) -> u16 {
        match self {
            Outgoing::Message(message) => era::http_status(message),
            Outgoing::Response(Response {
                body: Body::Message(message),
                ..
            }) => era::http_status(message),
            Outgoing::Response(_) => 200,
        }
    }
}

/// The fixed parts of a written response envelope.
const ENVELOPE_OPEN: &[u8] = br#"{"jsonrpc":"2.0","id":"#;
const RESULT_KEY: &[u8] = br#","result":"#;

/// The response of the call `id` that ended with `ending`: the result as is
/// for a legacy request, completed (`resultType`, server identity) for a
/// modern one.
pub fn respond(catalog: &Catalog, id: &RequestId, modern: bool, ending: Ending) -> Response {
    if let Ending::Text(result) = ending {
        let server_info = match modern {
            true => super::identity::server_info_text(catalog),
            false => String::new(),
        };
        let body = Body::Text {
            result,
            server_info,
        };
        let id = id.clone();
        return Response { id, body, modern };
    }
    let message = call_response_of(catalog, id, modern, ending.into_result(), None);
    Response {
        id: id.clone(),
        body: Body::Message(message),
        modern,
    }
}

/// [`respond`] for a result, as its JSON-RPC response.
pub fn call_response(catalog: &Catalog, id: &RequestId, modern: bool, result: Json) -> Json {
    call_response_of(catalog, id, modern, result, None)
}

/// [`call_response`] for a result whose text block's text is `held`, held
/// apart from it (`structured::Apart`), if given.
pub fn call_response_of(
    catalog: &Catalog,
    id: &RequestId,
    modern: bool,
    mut result: Json,
    held: Option<&str>,
) -> Json {
    structured::for_era_of(&mut result, modern, held);
    let result = if modern {
        results::complete(result, catalog)
    } else {
        result
    };
    jsonrpc::result_response(id, result)
}
