//! The Tasks extension on the reactor's side: turning a long remote call into
//! a task (`--task-after`), settling it when the call ends, answering
//! `tasks/get`, `tasks/update` and `tasks/cancel`, and freeing settled tasks
//! after their TTL. The table and every message live in
//! `protocol::mcp::tasks`; this file adds the clock and the random ids.

use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::edge::log;

use serde_json::Value as Json;

use crate::edge::proc;
use crate::protocol::mcp::tasks::{self, Outcome, Status};
use crate::protocol::mcp::{ListenRequest, TaskMethod, TaskRequest};

use super::calls::{CallId, CallTimer};
use super::timers::now_ms;
use super::Reactor;

impl Reactor {
    /// When a call just started should become a task: `None` for a client
    /// that did not declare the extension, unless it becomes a job
    /// (`--job-tools`).
    pub(super) fn task_deadline(&self, wants_tasks: bool, now: Instant) -> Option<Instant> {
        let job = self.catalog.job_tools();
        (wants_tasks || job).then(|| now + self.options.task_after)
    }

    /// Answers the call with a task handle and lets it run on. At the cap
    /// (every slot holds a running task) the call simply stays synchronous.
    pub(super) fn make_task(&mut self, id: CallId) {
        if self.calls.get(&id).is_none() {
            return;
        }
        self.calls.arm(id, CallTimer::Task, None);
        // Unguessable: `<instance id>.<128 random bits>`, so a balancer can
        // route `tasks/*` on the prefix of `Mcp-Name`.
        let mut bytes = [0u8; 16];
        if proc::fill_random(&mut bytes).is_err() {
            return;
        }
        let task_id = self.instance.mint(&bytes);
        let Some(call) = self.calls.get_mut(&id) else {
            return;
        };
        let now = now_ms();
        let ttl = self.tasks.ttl_ms();
        let owner = call.request.owner.clone();
        let started = now.saturating_sub(call.started.elapsed().as_millis() as u64);
        let Ok((task, freed)) = self.tasks.create(task_id.clone(), &owner, now, started) else {
            return;
        };
        let reply = match call.request.wants_tasks() {
            true => {
                let result = tasks::create_result(task, ttl, now, &self.catalog);
                crate::protocol::jsonrpc::result_response(&call.request.id, result)
            }
            // A client without the extension gets a job handle (`--job-tools`).
            false => super::jobs::handle(&self.catalog, call, task, ttl, now),
        };
        let client = call.client.clone();
        // From now on nothing of the call goes to its client: progress and
        // log messages are not part of a task.
        call.task = Some(task_id.clone());
        self.calls.arm(id, CallTimer::Progress, None);
        for gone in freed {
            self.unstore_task(&gone);
        }
        // Stored before the handle goes out: after a restart it reads as
        // failed rather than unknown.
        self.store_task(&task_id);
        self.deliver(&client, &reply, true);
    }

    /// Settles the task a call became, and tells its subscribers.
    pub(super) fn settle_task(&mut self, task_id: &str, outcome: Outcome) {
        let now = now_ms();
        let ttl = self.tasks.ttl_ms();
        let Some(task) = self.tasks.settle(task_id, outcome, now) else {
            return;
        };
        let shown = tasks::task_json(task, ttl, now);
        self.store_task(task_id);
        unstore_freed(self.options.task_dir.as_deref(), self.tasks.take_freed());
        for (client, note) in self.listeners.task_changed(task_id, &shown) {
            self.deliver(&client, &note, false);
        }
    }

    /// Keeps, of a `subscriptions/listen` request's `taskIds`, those the
    /// caller may see (the acknowledgement lists only these).
    pub(super) fn agreed_task_ids(&self, listen: &mut ListenRequest, owner: &str) {
        let now = now_ms();
        listen
            .filter
            .task_ids
            .retain(|id| self.tasks.get(id, owner, now).is_ok());
    }

    /// Answers a `tasks/*` request from a caller with authorization `owner`.
    pub(super) fn answer_task(&mut self, owner: &str, req: TaskRequest) -> Json {
        if let TaskMethod::Job { method, modern } = req.method {
            return self.answer_job(owner, req, method, modern);
        }
        let now = now_ms();
        let ttl = self.tasks.ttl_ms();
        let status = match self.tasks.get(&req.task_id, owner, now) {
            Ok(task) => task.status,
            Err(_) => return tasks::unknown_task(&req.id, &req.task_id),
        };
        let result = match req.method {
            TaskMethod::Get => match self.tasks.get(&req.task_id, owner, now) {
                Ok(task) => tasks::get_result(task, ttl, now, &self.catalog),
                Err(_) => return tasks::unknown_task(&req.id, &req.task_id),
            },
            // Nothing in a Morloc call asks for input: the keys are ignored.
            TaskMethod::Update => tasks::ack(&self.catalog),
            // Answered above.
            TaskMethod::Job { .. } => tasks::ack(&self.catalog),
            TaskMethod::Cancel => {
                if status == Status::Working {
                    let call = self
                        .calls
                        .iter()
                        .find(|(_, c)| c.task.as_deref() == Some(req.task_id.as_str()))
                        .map(|(id, _)| *id);
                    if let Some(call) = call {
                        // As for `notifications/cancelled`: the worker runs
                        // to its end, and its answer is dropped.
                        self.abandon_call(call);
                    }
                    self.settle_task(&req.task_id, Outcome::Cancelled);
                }
                tasks::ack(&self.catalog)
            }
        };
        crate::protocol::jsonrpc::result_response(&req.id, result)
    }

    /// Settled tasks due to be freed (calls due to become tasks are the
    /// calls' timers).
    pub(super) fn task_timers(&mut self) {
        if self.tasks.next_expiry().is_some_and(|e| e <= now_ms()) {
            for id in self.tasks.expire(now_ms()) {
                self.unstore_task(&id);
            }
        }
    }

    /// `--task-dir`: reads the stored tasks back. A task that was running
    /// when the server stopped is failed (its work is gone) and stored so;
    /// files of expired tasks are removed; unreadable ones are reported and
    /// left alone.
    pub(super) fn load_tasks(&mut self) {
        let Some(dir) = self.options.task_dir.clone() else {
            return;
        };
        if let Err(e) = private_dir(&dir) {
            log::error(&format!(
                "cannot create the task directory {}: {e}; tasks live in memory",
                dir.display()
            ));
            self.options.task_dir = None;
            return;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return;
        };
        let now = now_ms();
        let mut kept = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|x| x != "json") {
                continue;
            }
            let parsed = std::fs::read(&path)
                .map_err(|e| e.to_string())
                .and_then(|bytes| tasks::from_stored(&bytes));
            match parsed {
                Ok(task) => {
                    let id = task.id.clone();
                    if self.tasks.restore(task, now) {
                        kept.push(id);
                    } else {
                        let _ = std::fs::remove_file(&path);
                    }
                }
                Err(why) => log::warn(&format!("ignoring task file {}: {why}", path.display())),
            }
        }
        for id in kept {
            self.store_task(&id);
        }
    }

    /// Writes a task's file (a temporary file renamed over it).
    fn store_task(&self, id: &str) {
        let (Some(dir), Some(task)) = (&self.options.task_dir, self.tasks.by_id(id)) else {
            return;
        };
        if !tasks::storable_id(id) {
            return;
        }
        let path = dir.join(format!("{id}.json"));
        let tmp = dir.join(format!(".{id}.tmp"));
        let text = crate::format::json::text(&tasks::to_stored(task));
        if let Err(e) = write_private(&path, &tmp, &[text.as_bytes()]) {
            log::error(&format!("cannot store task {id} in {}: {e}", dir.display()));
        }
    }

    fn unstore_task(&self, id: &str) {
        if let Some(dir) = &self.options.task_dir {
            if tasks::storable_id(id) {
                let _ = std::fs::remove_file(dir.join(format!("{id}.json")));
            }
        }
    }

    /// When the next settled task is freed, as an `Instant`.
    pub(super) fn next_task_expiry(&self) -> Option<Instant> {
        let at = self.tasks.next_expiry()?;
        let wait = at.saturating_sub(now_ms());
        Some(Instant::now() + Duration::from_millis(wait))
    }
}

/// The extension of a stored result's file in `--task-dir`.
pub(super) const RESULT_EXT: &str = "result";

/// Removes the files (in `--task-dir`, if any) of the tasks and results
/// the caps on bytes freed.
pub(super) fn unstore_freed(dir: Option<&Path>, freed: tasks::Freed) {
    let Some(dir) = dir else { return };
    for id in freed.tasks.iter().filter(|id| tasks::storable_id(id)) {
        let _ = std::fs::remove_file(dir.join(format!("{id}.json")));
    }
    for id in &freed.results {
        let _ = std::fs::remove_file(dir.join(format!("{id}.{RESULT_EXT}")));
    }
}

/// Makes `--task-dir` (and its missing parents) readable by the server's
/// user only (0700, whatever the umask). A directory that already exists is
/// left as it is, with a warning when its group or others may enter it: the
/// files in it are private anyway (see [`write_private`]), but their names
/// and number are not.
fn private_dir(dir: &Path) -> io::Result<()> {
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                log::warn(&format!(
                    "the task directory {} is open to its group or others (mode {mode:03o}); its files are private (0600), but `chmod 700` it to hide their names too",
                    dir.display()
                ));
            }
            Ok(())
        }
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "not a directory",
        )),
        Err(_) => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir),
    }
}

/// Writes `parts` to `path` through `tmp` (renamed over it), both readable
/// and writable by the server's user only (0600, whatever the umask; a
/// `tmp` left by a crash is made so too). On failure `tmp` is removed.
pub(super) fn write_private(path: &Path, tmp: &Path, parts: &[&[u8]]) -> io::Result<()> {
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(tmp)?;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        for part in parts {
            file.write_all(part)?;
        }
        std::fs::rename(tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(tmp);
    }
    written
}
