//! The Tasks extension (`io.modelcontextprotocol/tasks`) of MCP 2026-07-28:
//! a long `tools/call` answered with a task handle, polled with `tasks/get`,
//! cancelled with `tasks/cancel`.
//!
//! This module holds the task table and its state machine (`working` to one
//! of `completed`, `failed`, `cancelled`, never back), expiry, the cap, and
//! the JSON of a task. Times are milliseconds since the Unix epoch, passed in
//! by the caller; ids are made by the caller too (`instance::InstanceId::mint`),
//! so the table is deterministic and testable.
//!
//! Lifetime: a settled task is kept for the table's TTL after it settled,
//! then freed; the `ttlMs` it reports counts from its creation (as the
//! extension defines it), so it grows by the time the task ran. A running
//! task is never freed. The table holds at most `MAX_TASKS` tasks, and one
//! owner at most `MAX_TASKS_PER_OWNER`: at its own cap, an owner's settled
//! task that settled first is freed early; at the total cap, that of the
//! owner holding the most tasks. So an owner only ever frees its own tasks,
//! or those of an owner holding at least as many. When no settled task can
//! go, no task is created (`Full`) and the caller answers the call
//! synchronously instead.
//!
//! Architecture Invariant: pure; no I/O.

use std::borrow::Cow;
use std::collections::HashMap;
use std::rc::Rc;

use serde_json::{Map, Value as Json};

use crate::format::json::page::Paged;

use crate::protocol::jsonrpc::{self, ErrorCode, RequestId};

use super::identity::{complete, CAPABILITIES_KEY};
use super::Catalog;

/// The extension's identifier, in capabilities.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// At most this many tasks are held at once.
pub const MAX_TASKS: usize = 1024;
/// At most this many tasks of one owner are held at once.
pub const MAX_TASKS_PER_OWNER: usize = 256;
/// The polling interval suggested to clients.
pub const POLL_INTERVAL_MS: u64 = 1000;
/// The message of a task whose server stopped while it ran.
pub const RESTARTED: &str = "the server restarted while the task was running";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Working,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    pub fn parse(text: &str) -> Option<Status> {
        [
            Status::Working,
            Status::Completed,
            Status::Failed,
            Status::Cancelled,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }
}

/// One task.
#[derive(Clone, Debug, PartialEq)]
pub struct Task {
    pub id: String,
    /// Who may see it: the owner it was created under, whole (compared
    /// exactly, never through a hash that could collide). An owner never
    /// holds a credential (see `HttpFront::call_owner`), so a task file
    /// (private to the server's user) may hold it as it is.
    pub owner: String,
    pub status: Status,
    /// Set when the task settles (a working task's message is computed).
    pub message: Option<String>,
    pub created_ms: u64,
    /// When its call started (it became a task `--task-after` later): a
    /// working task's message counts from here. Not stored: a task read
    /// back is settled.
    pub started_ms: u64,
    pub updated_ms: u64,
    /// When a settled task is freed.
    pub expires_ms: Option<u64>,
    /// The `CallToolResult` of a completed task, the JSON-RPC error object
    /// of a failed one.
    pub payload: Option<Json>,
    /// The length of the payload's JSON text: counted with the stored
    /// results, per owner (`--max-owner-bytes`) and in all.
    pub payload_bytes: usize,
    /// A completed result's long text (its first text block's, of
    /// [`APART_AT`] bytes or more), held apart so that answers are written
    /// from it rather than copied (`structured::parts`): the block's `text`
    /// in `payload` is then empty ([`Task::payload_whole`] puts it back).
    pub apart: Option<Rc<Paged>>,
}

/// A completed result's text this long or longer is held apart.
pub const APART_AT: usize = 64 * 1024;
/// Where a `tasks/get` response holds the task's result (whose text held
/// apart goes in there: `structured::Apart`).
pub const RESULT_IN_GET: &[&str] = &["result", "result"];

impl Task {
    /// The payload, with a text held apart put back (a copy then).
    pub fn payload_whole(&self) -> Option<Cow<'_, Json>> {
        let payload = self.payload.as_ref()?;
        let Some(apart) = &self.apart else {
            return Some(Cow::Borrowed(payload));
        };
        let mut whole = payload.clone();
        if let Some(text) = first_text_mut(&mut whole) {
            *text = apart.text().to_string();
        }
        Some(Cow::Owned(whole))
    }

    /// Moves a completed result's long text out of the payload.
    fn hold_apart(&mut self) {
        if self.status != Status::Completed || self.apart.is_some() {
            return;
        }
        let Some(text) = self.payload.as_mut().and_then(first_text_mut) else {
            return;
        };
        if text.len() >= APART_AT {
            let text = std::mem::take(text);
            self.apart = Some(Rc::new(Paged::new(text)));
        }
    }
}

/// The text of a result's first content block, if it is a text block.
fn first_text_mut(result: &mut Json) -> Option<&mut String> {
    let block = result.get_mut("content")?.get_mut(0)?;
    if block.get("type").and_then(Json::as_str) != Some("text") {
        return None;
    }
    match block.get_mut("text")? {
        Json::String(text) => Some(text),
        _ => None,
    }
}

/// The length of `value`'s compact JSON text, without building it.
pub fn json_bytes(value: &Json) -> usize {
    super::structured::plain_length(value)
}

/// How a running task ends.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The call's result (a tool error included: `isError`).
    Completed(Json),
    /// A protocol-level failure: code and message of the JSON-RPC error.
    Failed(i64, String),
    Cancelled,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskError {
    /// No such task for this owner (or it expired).
    Unknown,
    /// Every slot holds a running task.
    Full,
}

/// The task table.
#[derive(Debug)]
pub struct Tasks {
    map: HashMap<String, Task>,
    /// When each settled task expires.
    expiries: super::bigresults::Expiries,
    ttl_ms: u64,
    cap: usize,
    per_owner: usize,
    /// Big results stored as resources (`bigresults`), under the same TTL.
    pub results: super::bigresults::ResultStore,
    /// Bytes of the settled tasks' payloads, in all.
    payload_bytes: usize,
    /// Tasks and stored results freed to keep an owner's bytes within its
    /// cap, not yet taken (`take_freed`): their files go too.
    freed: Freed,
}

/// Ids freed by a cap on bytes: tasks, and stored results.
#[derive(Debug, Default, PartialEq)]
pub struct Freed {
    pub tasks: Vec<String>,
    pub results: Vec<String>,
}

impl Tasks {
    /// A table of at most `cap` tasks, at most `MAX_TASKS_PER_OWNER` (or
    /// `cap`, if lower) of one owner.
    pub fn new(ttl_ms: u64, cap: usize) -> Tasks {
        Tasks {
            map: HashMap::new(),
            expiries: Default::default(),
            ttl_ms,
            cap: cap.max(1),
            per_owner: MAX_TASKS_PER_OWNER.clamp(1, cap.max(1)),
            results: super::bigresults::ResultStore::new(ttl_ms),
            payload_bytes: 0,
            freed: Freed::default(),
        }
    }

    /// Changes the per-owner cap (at least 1).
    pub fn with_owner_cap(mut self, per_owner: usize) -> Tasks {
        self.per_owner = per_owner.max(1);
        self
    }

    /// Changes the cap on the bytes of stored results of one owner.
    pub fn with_owner_bytes(mut self, owner_bytes: usize) -> Tasks {
        self.results = self.results.with_owner_bytes(owner_bytes);
        self
    }

    pub fn ttl_ms(&self) -> u64 {
        self.ttl_ms
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Creates a working task for a call that started at `started`, after
    /// freeing expired ones and, at the cap, the settled task that settled
    /// first. Returns it with the ids of the tasks freed to make room (their
    /// stored files go too).
    pub fn create(
        &mut self,
        id: String,
        owner: &str,
        now: u64,
        started: u64,
    ) -> Result<(&Task, Vec<String>), TaskError> {
        let mut freed = self.expire(now);
        let key = owner.to_string();
        let mut held: HashMap<&str, usize> = HashMap::new();
        for task in self.map.values() {
            *held.entry(task.owner.as_str()).or_default() += 1;
        }
        let own = held.get(key.as_str()).copied().unwrap_or(0);
        let victim = if own >= self.per_owner {
            // At its own cap: its own settled task that settled first.
            self.map
                .values()
                .filter(|t| t.status != Status::Working && t.owner == key)
                .min_by_key(|t| (t.updated_ms, t.id.clone()))
                .map(|t| t.id.clone())
                .ok_or(TaskError::Full)
                .map(Some)?
        } else if self.map.len() >= self.cap {
            // The table full: a settled task of the owner holding the most.
            let count = |t: &Task| held.get(t.owner.as_str()).copied().unwrap_or(0);
            self.map
                .values()
                .filter(|t| t.status != Status::Working)
                .min_by_key(|t| (std::cmp::Reverse(count(t)), t.updated_ms, t.id.clone()))
                .map(|t| t.id.clone())
                .ok_or(TaskError::Full)
                .map(Some)?
        } else {
            None
        };
        if let Some(old) = victim {
            self.remove(&old);
            freed.push(old);
        }
        let task = Task {
            id: id.clone(),
            owner: key,
            status: Status::Working,
            message: None,
            created_ms: now,
            started_ms: started.min(now),
            updated_ms: now,
            expires_ms: None,
            payload: None,
            payload_bytes: 0,
            apart: None,
        };
        Ok((self.map.entry(id).or_insert(task), freed))
    }

    /// Puts back a task read from storage (see `tasks_file`): a task that
    /// was still running is failed, since its work is gone.
    pub fn restore(&mut self, mut task: Task, now: u64) -> bool {
        if task.status == Status::Working {
            task.status = Status::Failed;
            task.message = Some(RESTARTED.into());
            task.payload = Some(error_object(-32603, RESTARTED));
            task.updated_ms = now;
            task.expires_ms = Some(now + self.ttl_ms);
        }
        if task.expires_ms.is_some_and(|e| e <= now) || self.map.len() >= self.cap {
            return false;
        }
        task.payload_bytes = task.payload_whole().map_or(0, |p| json_bytes(&p));
        task.hold_apart();
        let owner_bytes = self.bytes_of(&task.owner) + task.payload_bytes;
        let total = self.payload_bytes + self.results.bytes() + task.payload_bytes;
        if owner_bytes > self.results.owner_bytes_cap() || total > self.results.max_bytes() {
            return false;
        }
        self.payload_bytes += task.payload_bytes;
        let id = task.id.clone();
        self.map.insert(id.clone(), task);
        self.note_expiry(&id);
        true
    }

    /// Bytes `owner` holds in settled tasks' payloads and stored results.
    pub fn bytes_of(&self, owner: &str) -> usize {
        let tasks: usize = self
            .map
            .values()
            .filter(|t| t.owner == owner)
            .map(|t| t.payload_bytes)
            .sum();
        tasks + self.results.bytes_of(owner)
    }

    /// Bytes of settled tasks' payloads and stored results, in all.
    pub fn bytes(&self) -> usize {
        self.payload_bytes + self.results.bytes()
    }

    /// The most bytes any one owner holds in payloads and stored results.
    pub fn most_owner_bytes(&self) -> usize {
        let mut held: HashMap<&str, usize> = HashMap::new();
        for t in self.map.values() {
            *held.entry(t.owner.as_str()).or_default() += t.payload_bytes;
        }
        for (owner, bytes) in self.results.owners_bytes() {
            *held.entry(owner).or_default() += bytes;
        }
        held.values().copied().max().unwrap_or(0)
    }

    fn remove(&mut self, id: &str) {
        if let Some(t) = self.map.remove(id) {
            self.payload_bytes -= t.payload_bytes;
        }
    }

    /// Stores a big result (see [`ResultStore::insert`]), after freeing
    /// the oldest settled tasks of `owner` while its tasks' payloads and
    /// results with the new one would pass its cap on bytes, and the
    /// oldest settled tasks of all while everything would pass the total.
    /// Returns the results freed; the tasks freed are in `take_freed`.
    pub fn insert_result(
        &mut self,
        id: String,
        owner: &str,
        tool: &str,
        value: crate::format::json::page::Paged,
        now: u64,
    ) -> Vec<String> {
        self.make_room(owner, value.bytes(), None);
        self.results.insert(id, owner, tool, value, now)
    }

    /// Frees settled tasks (never `keep`) so that `owner` holding `more`
    /// bytes stays within its cap and everything within the total: the
    /// owner's oldest first; for the total, the oldest of all. Noted in
    /// `freed`.
    fn make_room(&mut self, owner: &str, more: usize, keep: Option<&str>) {
        let cap = self.results.owner_bytes_cap();
        let max = self.results.max_bytes();
        loop {
            let own_over = self.bytes_of(owner) + more > cap;
            let all_over = self.bytes() + more > max;
            if !own_over && !all_over {
                return;
            }
            let victim = self
                .map
                .values()
                .filter(|t| t.payload_bytes > 0 && Some(t.id.as_str()) != keep)
                .filter(|t| !own_over || t.owner == owner)
                .min_by_key(|t| (t.updated_ms, t.id.clone()))
                .map(|t| t.id.clone());
            let Some(victim) = victim else { return };
            self.remove(&victim);
            self.freed.tasks.push(victim);
        }
    }

    /// The tasks and results freed by the caps on bytes since last time.
    pub fn take_freed(&mut self) -> Freed {
        std::mem::take(&mut self.freed)
    }

    /// A task by id, whoever owns it (for storage).
    pub fn by_id(&self, id: &str) -> Option<&Task> {
        self.map.get(id)
    }

    /// The task, if `owner` may see it and it has not expired.
    pub fn get(&self, id: &str, owner: &str, now: u64) -> Result<&Task, TaskError> {
        match self.map.get(id) {
            Some(t) if t.owner == owner && t.expires_ms.is_none_or(|e| e > now) => Ok(t),
            _ => Err(TaskError::Unknown),
        }
    }

    /// Settles a working task; `None` when it is unknown or already settled
    /// (a late result after a cancel is dropped).
    pub fn settle(&mut self, id: &str, outcome: Outcome, now: u64) -> Option<&Task> {
        let ttl = self.ttl_ms;
        let task = self.map.get_mut(id)?;
        if task.status != Status::Working {
            return None;
        }
        let (status, message, payload) = match outcome {
            Outcome::Completed(result) => {
                let result = within_cap(result, self.results.owner_bytes_cap());
                let failed = result.get("isError") == Some(&Json::Bool(true));
                let message = if failed {
                    "the tool reported an error"
                } else {
                    "the call completed"
                };
                (Status::Completed, message.to_string(), Some(result))
            }
            Outcome::Failed(code, message) => {
                let error = error_object(code, &message);
                (Status::Failed, message, Some(error))
            }
            Outcome::Cancelled => (Status::Cancelled, "cancelled by the client".into(), None),
        };
        task.status = status;
        task.message = Some(message);
        task.payload_bytes = payload.as_ref().map_or(0, json_bytes);
        task.payload = payload;
        task.hold_apart();
        task.updated_ms = now.max(task.created_ms);
        task.expires_ms = Some(task.updated_ms + ttl);
        let (owner, bytes) = (task.owner.clone(), task.payload_bytes);
        self.note_expiry(id);
        // Counted as held from now on; room is made around it.
        self.payload_bytes += bytes;
        self.make_room(&owner, 0, Some(id));
        if self.bytes_of(&owner) > self.results.owner_bytes_cap() {
            // The owner's stored results go next, oldest first.
            while self.bytes_of(&owner) > self.results.owner_bytes_cap() {
                let Some(old) = self.results.free_oldest_of(&owner) else {
                    break;
                };
                self.freed.results.push(old);
            }
        }
        self.map.get(id)
    }

    /// Frees the tasks whose time is up; returns their ids.
    pub fn expire(&mut self, now: u64) -> Vec<String> {
        let map = &self.map;
        let gone = self
            .expiries
            .due(now, |id| map.get(id).and_then(|t| t.expires_ms));
        for id in &gone {
            self.remove(id);
        }
        gone
    }

    /// The earliest expiry of any task.
    pub fn next_expiry(&mut self) -> Option<u64> {
        let map = &self.map;
        self.expiries
            .next(|id| map.get(id).and_then(|t| t.expires_ms))
    }

    /// Notes when task `id` (in the table) expires, if it does.
    fn note_expiry(&mut self, id: &str) {
        let map = &self.map;
        let Some(at) = map.get(id).and_then(|t| t.expires_ms) else {
            return;
        };
        let all = || {
            map.values()
                .filter_map(|t| Some((t.expires_ms?, t.id.as_str())))
                .collect()
        };
        self.expiries.set(id, at, map.len(), all);
    }

    /// Every task, in creation order (for storage).
    pub fn all(&self) -> Vec<&Task> {
        let mut all: Vec<&Task> = self.map.values().collect();
        all.sort_by(|a, b| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)));
        all
    }
}

/// Whether a task id is safe as a file name (`<instance>.<hex>`).
pub fn storable_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_')
}

/// A task as stored in a task file (`--task-dir`): one JSON object.
pub fn to_stored(task: &Task) -> Json {
    let mut out = Map::new();
    out.insert("taskId".into(), Json::String(task.id.clone()));
    out.insert("owner".into(), Json::String(task.owner.clone()));
    out.insert("status".into(), Json::String(task.status.as_str().into()));
    if let Some(m) = &task.message {
        out.insert("statusMessage".into(), Json::String(m.clone()));
    }
    out.insert("createdMs".into(), Json::from(task.created_ms));
    out.insert("updatedMs".into(), Json::from(task.updated_ms));
    if let Some(e) = task.expires_ms {
        out.insert("expiresMs".into(), Json::from(e));
    }
    if let Some(p) = task.payload_whole() {
        out.insert("payload".into(), p.into_owned());
    }
    Json::Object(out)
}

/// Reads a task file's bytes back (see [`to_stored`]); the error names the
/// field at fault.
pub fn from_stored(bytes: &[u8]) -> Result<Task, String> {
    let json: Json =
        crate::format::json::parse_bytes(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let Json::Object(o) = json else {
        return Err("not a JSON object".into());
    };
    let text = |key: &str| -> Result<String, String> {
        match o.get(key) {
            Some(Json::String(s)) => Ok(s.clone()),
            Some(other) => Err(format!(
                "'{key}' must be a string, got {}",
                crate::format::json::text(other)
            )),
            None => Err(format!("missing '{key}'")),
        }
    };
    let ms = |key: &str| -> Result<Option<u64>, String> {
        match o.get(key) {
            None => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| {
                format!(
                    "'{key}' must be a non-negative integer, got {}",
                    crate::format::json::text(v)
                )
            }),
        }
    };
    let id = text("taskId")?;
    if !storable_id(&id) {
        return Err(format!("'taskId' {id:?} is not a task id"));
    }
    let status_text = text("status")?;
    let status =
        Status::parse(&status_text).ok_or_else(|| format!("unknown 'status' {status_text:?}"))?;
    let message = match o.get("statusMessage") {
        None => None,
        Some(Json::String(m)) => Some(m.clone()),
        Some(other) => {
            return Err(format!(
                "'statusMessage' must be a string, got {}",
                crate::format::json::text(other)
            ))
        }
    };
    let created_ms = ms("createdMs")?.ok_or("missing 'createdMs'")?;
    let updated_ms = ms("updatedMs")?.ok_or("missing 'updatedMs'")?;
    let payload = o.get("payload").cloned();
    if payload.as_ref().is_some_and(|p| !p.is_object()) {
        return Err("'payload' must be an object".into());
    }
    Ok(Task {
        id,
        owner: text("owner")?,
        status,
        message,
        created_ms,
        started_ms: created_ms,
        updated_ms,
        expires_ms: ms("expiresMs")?,
        payload_bytes: payload.as_ref().map_or(0, json_bytes),
        payload,
        apart: None,
    })
}

/// A completed call's `result`, or, when its JSON text alone is over the
/// cap on one owner's bytes, a tool error saying so (nothing is freed for
/// it).
fn within_cap(result: Json, cap: usize) -> Json {
    let bytes = json_bytes(&result);
    if bytes <= cap {
        return result;
    }
    let text = format!(
        "the result is {bytes} bytes of JSON, more than one caller may hold in finished tasks and stored results ({cap} bytes, --max-owner-bytes); ask for less"
    );
    serde_json::json!({"content": [{"type": "text", "text": text}], "isError": true})
}

/// `{"code": …, "message": …}`.
pub fn error_object(code: i64, message: &str) -> Json {
    let mut error = Map::new();
    error.insert("code".into(), Json::from(code));
    error.insert("message".into(), Json::String(message.into()));
    Json::Object(error)
}

/// The task as the extension shows it (`CreateTaskResult`, `tasks/get`,
/// `notifications/tasks`): status, timestamps, TTL from creation, polling
/// interval, and the inlined result or error of a settled task. `now` gives
/// a working task's message its elapsed time.
pub fn task_json(task: &Task, ttl_ms: u64, now: u64) -> Map<String, Json> {
    shown(task, ttl_ms, now, true)
}

/// [`task_json`]; unless `whole`, a result's text held apart is left out
/// (its block's `text` empty).
fn shown(task: &Task, ttl_ms: u64, now: u64, whole: bool) -> Map<String, Json> {
    let mut out = Map::new();
    out.insert("taskId".into(), Json::String(task.id.clone()));
    out.insert("status".into(), Json::String(task.status.as_str().into()));
    let message = match (&task.message, task.status) {
        (Some(m), _) => m.clone(),
        (None, _) => {
            let secs = crate::format::decimal::fixed(
                now.saturating_sub(task.started_ms) as f64 / 1000.0,
                1,
            );
            format!("running for {secs} s")
        }
    };
    out.insert("statusMessage".into(), Json::String(message));
    out.insert("createdAt".into(), Json::String(iso8601(task.created_ms)));
    out.insert(
        "lastUpdatedAt".into(),
        Json::String(iso8601(task.updated_ms)),
    );
    let ttl = match task.expires_ms {
        Some(e) => e.saturating_sub(task.created_ms),
        None => ttl_ms,
    };
    out.insert("ttlMs".into(), Json::from(ttl));
    out.insert("pollIntervalMs".into(), Json::from(POLL_INTERVAL_MS));
    match (task.status, &task.payload) {
        (Status::Completed, Some(result)) if !whole => {
            out.insert("result".into(), result.clone());
        }
        (Status::Completed, Some(_)) => {
            let result = task.payload_whole().map(Cow::into_owned);
            out.insert("result".into(), result.unwrap_or(Json::Null));
        }
        (Status::Failed, Some(error)) => {
            out.insert("error".into(), error.clone());
        }
        _ => {}
    }
    out
}

/// Whether a request's `_meta` clientCapabilities declare the extension.
pub fn declared(params: Option<&Json>) -> bool {
    params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(CAPABILITIES_KEY))
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(EXTENSION))
        .is_some_and(Json::is_object)
}

/// The `CreateTaskResult` answering a call that became `task`.
pub fn create_result(task: &Task, ttl_ms: u64, now: u64, catalog: &Catalog) -> Json {
    let mut result = complete(Json::Object(task_json(task, ttl_ms, now)), catalog);
    if let Json::Object(m) = &mut result {
        m.insert("resultType".into(), Json::String("task".into()));
    }
    result
}

/// The `tasks/get` result.
pub fn get_result(task: &Task, ttl_ms: u64, now: u64, catalog: &Catalog) -> Json {
    complete(Json::Object(task_json(task, ttl_ms, now)), catalog)
}

/// [`get_result`] with a result's text held apart left out (the caller
/// writes it from [`Task::apart`], at [`RESULT_IN_GET`]).
pub fn get_result_apart(task: &Task, ttl_ms: u64, now: u64, catalog: &Catalog) -> Json {
    complete(Json::Object(shown(task, ttl_ms, now, false)), catalog)
}

/// The empty acknowledgement of `tasks/update` and `tasks/cancel`.
pub fn ack(catalog: &Catalog) -> Json {
    complete(Json::Object(Map::new()), catalog)
}

/// `-32602` for a task id this server does not hold for this caller.
pub fn unknown_task(id: &RequestId, task_id: &str) -> Json {
    jsonrpc::error_response(
        Some(id),
        ErrorCode::InvalidParams,
        &format!(
            "unknown task '{task_id}': no such task here (it expired, was never created by this server instance, or belongs to another owner)"
        ),
    )
}

/// `-32021`: the request needs the extension declared.
pub fn missing_capability(id: &RequestId) -> Json {
    let mut ext = Map::new();
    ext.insert(EXTENSION.into(), Json::Object(Map::new()));
    let mut caps = Map::new();
    caps.insert("extensions".into(), Json::Object(ext));
    let mut data = Map::new();
    data.insert("requiredCapabilities".into(), Json::Object(caps));
    jsonrpc::error_response_data(
        Some(id),
        ErrorCode::MissingRequiredClientCapability,
        &format!(
            "Missing required client capability: declare the '{EXTENSION}' extension in '_meta.{}'",
            CAPABILITIES_KEY
        ),
        Json::Object(data),
    )
}

/// `params.taskId` of a `tasks/*` request.
pub fn task_id_param(params: Option<&Json>) -> Result<String, String> {
    match params.and_then(|p| p.get("taskId")) {
        Some(Json::String(id)) => Ok(id.clone()),
        None => Err("missing 'params.taskId'".into()),
        Some(other) => Err(format!(
            "'params.taskId' must be a string, got {}",
            crate::format::json::text(other)
        )),
    }
}

/// Milliseconds since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC).
pub fn iso8601(ms: u64) -> String {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

#[cfg(test)]
mod tests;
