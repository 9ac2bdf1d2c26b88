//! Job tools (`--job-tools`): long calls for clients without the Tasks
//! extension.
//!
//! A remote call from a client that did not declare the extension, still
//! running after `--task-after`, is answered with a *job handle*: a
//! `CallToolResult` whose text tells an agent what to call next and whose
//! `structuredContent` is the job's status object. The call goes on as a
//! task in the task table (`tasks`: same ids, owner binding, caps and TTL).
//! Three tools read that table: `job_status`, `job_result` (the call's own
//! `CallToolResult` once it has finished, its status before) and
//! `job_cancel`. This module has their definitions, the checks of their
//! arguments, the results they give, and the widening of an `outputSchema`
//! so a handle also satisfies the schema of the tool it stands in for.
//!
//! Architecture Invariant: pure; no I/O.

use serde_json::{json, Map, Value as Json};

use crate::protocol::tools;

use super::results::error_result;
use super::tasks::{self, Status, Task, POLL_INTERVAL_MS};

/// The one argument of every job tool.
pub const ARG: &str = "job_id";
/// In the modern surface `job_id` is mirrored into the HTTP header
/// `Mcp-Param-Job-Id` (`x-mcp-header`, MCP 2026-07-28), so a load balancer
/// can route a job tool's call to the instance its id names.
pub const PARAM_HEADER: &str = "Job-Id";
/// The names of the job tools, in `tools/list` order.
pub const NAMES: [&str; 3] = ["job_status", "job_result", "job_cancel"];

/// Which job tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobMethod {
    Status,
    Result,
    Cancel,
}

impl JobMethod {
    /// The job tool of that name.
    pub fn from_name(name: &str) -> Option<JobMethod> {
        match name {
            "job_status" => Some(JobMethod::Status),
            "job_result" => Some(JobMethod::Result),
            "job_cancel" => Some(JobMethod::Cancel),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            JobMethod::Status => NAMES[0],
            JobMethod::Result => NAMES[1],
            JobMethod::Cancel => NAMES[2],
        }
    }
}

/// The status object of a job: its `structuredContent` in a handle and in
/// the answers of `job_status` and `job_cancel`.
fn status_schema() -> Json {
    json!({
        "type": "object",
        "properties": {
            "jobId": {"type": "string", "description": "The job's id: pass it as 'job_id' to job_status, job_result or job_cancel."},
            "status": {"type": "string", "enum": ["working", "completed", "failed", "cancelled"]},
            "statusMessage": {"type": "string"},
            "pollIntervalMs": {"type": "integer", "description": "How long to wait between two polls, in milliseconds."},
            "ttlMs": {"type": "integer", "description": "How long the job is kept, from its creation, in milliseconds."},
            "createdAt": {"type": "string"},
            "lastUpdatedAt": {"type": "string"}
        },
        "required": ["jobId", "status", "statusMessage", "pollIntervalMs"]
    })
}

fn input_schema() -> Json {
    json!({
        "type": "object",
        "properties": {
            ARG: {"type": "string", "description": "The job id a long call was answered with (its 'jobId')."}
        },
        "required": [ARG],
        "additionalProperties": false
    })
}

/// The job tools as `tools/list` shows them (the legacy form; the modern
/// one names the schema dialect as for every tool).
pub fn tools() -> Vec<Json> {
    let describe = |name: &str, title: &str, description: &str, output: bool, hints: Json| {
        let mut tool = Map::new();
        tool.insert("name".into(), Json::String(name.into()));
        tool.insert("title".into(), Json::String(title.into()));
        tool.insert("description".into(), Json::String(description.into()));
        tool.insert("inputSchema".into(), input_schema());
        if output {
            tool.insert("outputSchema".into(), status_schema());
        }
        let mut annotations = Map::new();
        annotations.insert("title".into(), Json::String(title.into()));
        if let Json::Object(h) = hints {
            annotations.extend(h);
        }
        tool.insert("annotations".into(), Json::Object(annotations));
        Json::Object(tool)
    };
    vec![
        describe(
            NAMES[0],
            "Job status",
            "Reports whether a long call that was answered with a job id is still working, completed, failed or was cancelled. Does not return the call's result: use job_result for that.",
            true,
            json!({"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}),
        ),
        describe(
            NAMES[1],
            "Job result",
            "Returns the result of a long call that was answered with a job id, exactly as the call would have returned it, once the job has finished. While the job still runs it returns the job's status instead (not an error): wait pollIntervalMs and call it again.",
            false,
            json!({"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}),
        ),
        describe(
            NAMES[2],
            "Cancel job",
            "Stops waiting for a long call that was answered with a job id: the job becomes cancelled and its result is never returned. A job that has already finished is left as it is.",
            true,
            json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false}),
        ),
    ]
}

/// The job id of a job tool's `arguments`, or the message of an `isError`
/// result naming what is wrong.
pub fn job_id(method: JobMethod, arguments: Option<&Json>) -> Result<String, String> {
    let tool = method.name();
    let missing = || format!("missing argument '{ARG}' (the arguments of '{tool}': {ARG})");
    let args = match arguments {
        None | Some(Json::Null) => return Err(missing()),
        Some(Json::Object(args)) => args,
        Some(other) => {
            return Err(format!(
                "the arguments of '{tool}' must be an object, got {}",
                crate::format::json::text(other)
            ))
        }
    };
    if let Some(unknown) = args.keys().find(|k| k.as_str() != ARG) {
        return Err(format!(
            "unknown argument '{unknown}' (the arguments of '{tool}': {ARG})"
        ));
    }
    match args.get(ARG) {
        None => Err(missing()),
        Some(Json::String(id)) if !id.is_empty() => Ok(id.clone()),
        Some(other) => Err(format!(
            "argument '{ARG}' must be a job id (a non-empty string), got {}",
            crate::format::json::text(other)
        )),
    }
}

/// A job's status object (see [`status_schema`]).
pub fn status_object(task: &Task, ttl_ms: u64, now: u64) -> Map<String, Json> {
    let shown = tasks::task_json(task, ttl_ms, now);
    let mut out = Map::new();
    out.insert("jobId".into(), Json::String(task.id.clone()));
    for key in [
        "status",
        "statusMessage",
        "pollIntervalMs",
        "ttlMs",
        "createdAt",
        "lastUpdatedAt",
    ] {
        if let Some(v) = shown.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    out
}

/// `{"content": [text], "structuredContent": status}`.
fn with_status(text: String, status: Map<String, Json>) -> Json {
    let mut block = Map::new();
    block.insert("type".into(), Json::String("text".into()));
    block.insert("text".into(), Json::String(text));
    let mut result = Map::new();
    result.insert("content".into(), Json::Array(vec![Json::Object(block)]));
    result.insert("structuredContent".into(), Json::Object(status));
    result.insert("isError".into(), Json::Bool(false));
    Json::Object(result)
}

/// How to get a job's result, in words an agent can follow.
fn next_steps(id: &str) -> String {
    let secs = crate::format::decimal::seconds(std::time::Duration::from_millis(POLL_INTERVAL_MS));
    format!(
        "call the tool job_result with {{\"{ARG}\": \"{id}\"}} to get its result (while the job runs, job_result answers with its status instead; wait about {secs} s between calls); job_status reports its status, job_cancel stops it"
    )
}

/// The `CallToolResult` answering a call to `tool` that became job `task`.
pub fn handle_result(task: &Task, tool: &str, ttl_ms: u64, now: u64) -> Json {
    let status = status_object(task, ttl_ms, now);
    let message = status
        .get("statusMessage")
        .and_then(Json::as_str)
        .unwrap_or("running");
    let kept = crate::format::decimal::seconds(std::time::Duration::from_millis(ttl_ms));
    let text = format!(
        "The call to '{tool}' takes longer than usual and goes on in the background as job {} ({message}). This is not its result: {}. A finished job's result is kept for {kept} s.",
        task.id,
        next_steps(&task.id),
    );
    with_status(text, status)
}

/// What `job_status` and `job_cancel` answer for a job.
pub fn status_result(task: &Task, ttl_ms: u64, now: u64) -> Json {
    let status = status_object(task, ttl_ms, now);
    let message = status
        .get("statusMessage")
        .and_then(Json::as_str)
        .unwrap_or_default();
    let id = &task.id;
    let text = match task.status {
        Status::Working => format!("Job {id} is working ({message}): {}.", next_steps(id)),
        Status::Completed => format!(
            "Job {id} has completed ({message}): call the tool job_result with {{\"{ARG}\": \"{id}\"}} to get its result."
        ),
        Status::Failed => format!(
            "Job {id} has failed ({message}): job_result returns the error; the call may be tried again."
        ),
        Status::Cancelled => format!("Job {id} was cancelled; it has no result."),
    };
    with_status(text, status)
}

/// Where a `job_result` response holds the job's result (whose text held
/// apart goes in there: `structured::Apart`).
pub const RESULT_IN_CALL: &[&str] = &["result"];

/// What `job_result` answers: the call's own result once the job has
/// completed (the same `CallToolResult` it would have had), its error as
/// an `isError` result if it failed, its status while it works. Unless
/// `whole`, a result's text held apart is left out (its block's `text`
/// empty; the caller writes it from `Task::apart`, at [`RESULT_IN_CALL`]).
pub fn result_of(task: &Task, ttl_ms: u64, now: u64, whole: bool) -> Json {
    match (task.status, &task.payload) {
        (Status::Completed, Some(result)) if !whole => result.clone(),
        (Status::Completed, Some(_)) => task
            .payload_whole()
            .map_or(Json::Null, std::borrow::Cow::into_owned),
        (Status::Failed, payload) => {
            let message = payload
                .as_ref()
                .and_then(|p| p.get("message"))
                .and_then(Json::as_str)
                .or(task.message.as_deref())
                .unwrap_or("the call failed");
            error_result(message)
        }
        (Status::Cancelled, _) => error_result(&format!(
            "job {} was cancelled; it has no result (call the tool again to run it anew)",
            task.id
        )),
        _ => status_result(task, ttl_ms, now),
    }
}

/// The `isError` result for a job id this caller does not hold.
pub fn unknown_job(id: &str) -> Json {
    error_result(&format!(
        "unknown job '{id}': no such job here (it expired, was never created by this server instance, or belongs to another owner)"
    ))
}

/// A tool's `outputSchema` widened to also accept a job handle: `anyOf`
/// the schema and the job's status object. `$defs` move to the root, so
/// the schema's `$ref`s still resolve; a schema of objects keeps `type:
/// object` at the root (legacy revisions require it).
pub fn widen_output_schema(schema: &Json) -> Json {
    tools::accept_also(schema.clone(), status_schema())
}

/// A tool object with its `outputSchema`, if any, widened.
pub fn widen_tool(tool: &Json) -> Json {
    let mut tool = tool.clone();
    if let Some(schema) = tool.get_mut("outputSchema") {
        *schema = widen_output_schema(schema);
    }
    tool
}

/// The modern `tools/list` entries: the served tools (their modern form)
/// widened, then the job tools.
pub(super) fn modern_tools<'a>(served: impl Iterator<Item = &'a Json>) -> Vec<Json> {
    let mut out: Vec<Json> = served
        .map(|t| super::modern::tool_json(&widen_tool(t)))
        .collect();
    for mut tool in tools() {
        let property = &mut tool["inputSchema"]["properties"][ARG];
        property["x-mcp-header"] = Json::String(PARAM_HEADER.into());
        out.push(super::modern::tool_json(&tool));
    }
    out
}

/// Checks a modern HTTP request's `Mcp-Param-Job-Id` header (`header`, as
/// sent) against the job id in its body: both there and equal. `Err` is the
/// message of the `-32020` header mismatch.
pub fn check_param_header(job_id: &str, header: Option<&str>) -> Result<(), String> {
    let name = format!("Mcp-Param-{PARAM_HEADER}");
    let Some(raw) = header else {
        return Err(format!(
            "header mismatch: missing {name} header (the body has arguments.{ARG})"
        ));
    };
    match super::headers::decode_value(raw) {
        Ok(value) if value == job_id => Ok(()),
        Ok(value) => Err(format!(
            "header mismatch: {name} header value '{value}' does not match body value '{job_id}'"
        )),
        Err(why) => Err(format!(
            "header mismatch: {name} header value '{raw}' {why}"
        )),
    }
}

/// The error of a served tool named as a job tool.
pub fn clash(tool: &str) -> Option<String> {
    NAMES.contains(&tool).then(|| {
        format!(
            "a tool is named '{tool}', as one of the job tools of --job-tools ({}): rename its command in the tools file (\"name\"), or leave --job-tools off",
            NAMES.join(", ")
        )
    })
}

#[cfg(test)]
mod tests;
