//! The Tasks extension on the reactor's side: the [`TaskStore`] owns the
//! task table and the stored big results (`bigresults`), their files in
//! `--task-dir`, and the ids it mints. It turns a long remote call into a
//! task (`--task-after`), settles it when the call ends, answers
//! `tasks/get`, `tasks/update` and `tasks/cancel` (and the job tools,
//! `jobs`), and frees settled tasks after their TTL. The table and every
//! message live in `protocol::mcp::tasks`; this file adds the clock, the
//! random ids and the files. What spans owners (a call to abandon, the
//! subscribers to tell, the reply to deliver) the reactor does with what
//! these methods return.

use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::edge::log;

use serde_json::{Map, Value as Json};

use crate::edge::cli::Settings;
use crate::edge::proc;
use crate::format::json::page::Paged;
use crate::protocol::instance::InstanceId;
use crate::protocol::mcp::jobs::JobMethod;
use crate::protocol::mcp::tasks::{self, Outcome, Status, Tasks};
use crate::protocol::mcp::{Catalog, ListenRequest, TaskMethod, TaskRequest};

use super::calls::{Call, Cancel};
use super::timers::now_ms;
use super::Reactor;

mod bigresults;
pub(super) use bigresults::ResourceBody;
mod jobs;

/// A finished task's result text held apart from an answer (`Task::apart`),
/// and where in the answer it goes (`structured::Apart`).
pub(in crate::edge::reactor) struct Held {
    pub(in crate::edge::reactor) text: Rc<Paged>,
    pub(in crate::edge::reactor) at: &'static [&'static str],
}

/// The tasks and stored results, with their files (`--task-dir`).
pub(in crate::edge::reactor) struct TaskStore {
    table: Tasks,
    /// `--task-dir`, if set and usable.
    dir: Option<PathBuf>,
    /// `--task-after`.
    after: Duration,
    /// The prefix of every id minted here.
    instance: InstanceId,
}

impl TaskStore {
    /// The store of `settings`, with what `--task-dir` holds read back.
    pub(in crate::edge::reactor) fn new(settings: &Settings, instance: InstanceId) -> TaskStore {
        let table = Tasks::new(settings.task_ttl.as_millis() as u64, tasks::MAX_TASKS)
            .with_owner_bytes(settings.max_owner_bytes);
        let mut store = TaskStore {
            table,
            dir: settings.task_dir.clone(),
            after: settings.task_after,
            instance,
        };
        store.load_tasks();
        store.load_results();
        store
    }

    /// The table, for `/metrics`.
    pub(in crate::edge::reactor) fn table(&self) -> &Tasks {
        &self.table
    }

    /// A fresh unguessable id: `<instance id>.<128 random bits>`, so a
    /// balancer can route on its prefix.
    fn mint(&self) -> Option<String> {
        let mut bytes = [0u8; 16];
        proc::fill_random(&mut bytes).ok()?;
        Some(self.instance.mint(&bytes))
    }

    /// When a call just started should become a task: `None` for a client
    /// that did not declare the extension, unless it becomes a job
    /// (`--job-tools`).
    pub(super) fn deadline(&self, wants_tasks: bool, jobs: bool, now: Instant) -> Option<Instant> {
        (wants_tasks || jobs).then(|| now + self.after)
    }

    /// Makes `call` a task: its id and the handle that answers the call
    /// (`None` at the cap, when every slot holds a running task: the call
    /// then simply stays synchronous).
    pub(super) fn create(&mut self, catalog: &Catalog, call: &Call) -> Option<(String, Json)> {
        let task_id = self.mint()?;
        let now = now_ms();
        let ttl = self.table.ttl_ms();
        let owner = &call.request().owner;
        let started = now.saturating_sub(call.started().elapsed().as_millis() as u64);
        let (task, freed) = self
            .table
            .create(task_id.clone(), owner, now, started)
            .ok()?;
        let reply = match call.request().wants_tasks() {
            true => {
                let result = tasks::create_result(task, ttl, now, catalog);
                crate::protocol::jsonrpc::result_response(&call.request().id, result)
            }
            // A client without the extension gets a job handle (`--job-tools`).
            false => jobs::handle(catalog, call, task, ttl, now),
        };
        for gone in freed {
            self.unstore_task(&gone);
        }
        // Stored before the handle goes out: after a restart it reads as
        // failed rather than unknown.
        self.store_task(&task_id);
        Some((task_id, reply))
    }

    /// Settles a task; what its subscribers are shown, if it was running.
    pub(super) fn settle(&mut self, task_id: &str, outcome: Outcome) -> Option<Map<String, Json>> {
        let now = now_ms();
        let ttl = self.table.ttl_ms();
        let task = self.table.settle(task_id, outcome, now)?;
        let shown = tasks::task_json(task, ttl, now);
        self.store_task(task_id);
        self.unstore_freed();
        Some(shown)
    }

    /// Keeps, of a `subscriptions/listen` request's `taskIds`, those the
    /// caller may see (the acknowledgement lists only these).
    pub(super) fn agreed_ids(&self, listen: &mut ListenRequest, owner: &str) {
        let now = now_ms();
        listen
            .filter
            .task_ids
            .retain(|id| self.table.get(id, owner, now).is_ok());
    }

    /// The task a `tasks/cancel` or `job_cancel` from `owner` stops: one of
    /// theirs still working.
    fn to_cancel(&self, owner: &str, req: &TaskRequest) -> Option<String> {
        let cancel = match &req.method {
            TaskMethod::Cancel => true,
            TaskMethod::Job { method, .. } => *method == JobMethod::Cancel,
            _ => false,
        };
        let task = self.table.get(&req.task_id, owner, now_ms()).ok()?;
        (cancel && task.status == Status::Working).then(|| req.task_id.clone())
    }

    /// Answers a `tasks/*` request (or a job tool's call) from a caller
    /// with authorization `owner`, once a cancelled task is settled. With
    /// `apart`, a result's text held apart (`Task::apart`) is left out of
    /// the answer and given beside it, with where it goes, to be written
    /// from it.
    fn answer(
        &self,
        catalog: &Catalog,
        owner: &str,
        req: TaskRequest,
        apart: bool,
    ) -> (Json, Option<Held>) {
        if let TaskMethod::Job { method, modern } = req.method {
            return self.answer_job(catalog, owner, req, (method, modern), apart);
        }
        let now = now_ms();
        let ttl = self.table.ttl_ms();
        let mut held = None;
        let result = match self.table.get(&req.task_id, owner, now) {
            Err(_) => return (tasks::unknown_task(&req.id, &req.task_id), None),
            Ok(task) => match req.method {
                TaskMethod::Get if apart && task.apart.is_some() => {
                    held = task.apart.clone().map(|text| Held {
                        text,
                        at: tasks::RESULT_IN_GET,
                    });
                    tasks::get_result_apart(task, ttl, now, catalog)
                }
                TaskMethod::Get => tasks::get_result(task, ttl, now, catalog),
                // Nothing in a Morloc call asks for input: the keys are
                // ignored; a cancel was done before.
                TaskMethod::Update | TaskMethod::Cancel | TaskMethod::Job { .. } => {
                    tasks::ack(catalog)
                }
            },
        };
        (
            crate::protocol::jsonrpc::result_response(&req.id, result),
            held,
        )
    }

    /// Frees the settled tasks and stored results whose time is up.
    pub(super) fn expire(&mut self) {
        let now = now_ms();
        if self.table.next_expiry().is_some_and(|e| e <= now) {
            for id in self.table.expire(now) {
                self.unstore_task(&id);
            }
        }
        self.expire_results(now);
    }

    /// When the next settled task or stored result is freed.
    pub(super) fn next_expiry(&mut self) -> Option<Instant> {
        let at = match (self.table.next_expiry(), self.table.results.next_expiry()) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        let wait = at.saturating_sub(now_ms());
        Some(Instant::now() + Duration::from_millis(wait))
    }

    /// `--task-dir`: reads the stored tasks back. A task that was running
    /// when the server stopped is failed (its work is gone) and stored so;
    /// files of expired tasks are removed; unreadable ones are reported and
    /// left alone.
    fn load_tasks(&mut self) {
        let Some(dir) = self.dir.clone() else {
            return;
        };
        if let Err(e) = private_dir(&dir) {
            log::error(&format!(
                "cannot create the task directory {}: {e}; tasks live in memory",
                dir.display()
            ));
            self.dir = None;
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
                    if self.table.restore(task, now) {
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
        let (Some(dir), Some(task)) = (&self.dir, self.table.by_id(id)) else {
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
        if let Some(dir) = &self.dir {
            if tasks::storable_id(id) {
                let _ = std::fs::remove_file(dir.join(format!("{id}.json")));
            }
        }
    }

    /// Removes the files of the tasks and results the caps on bytes freed.
    fn unstore_freed(&mut self) {
        let freed = self.table.take_freed();
        for id in &freed.tasks {
            self.unstore_task(id);
        }
        self.unstore_results(&freed.results);
    }
}

impl Reactor {
    /// Settles the task a call became, and tells its subscribers.
    pub(super) fn settle_task(&mut self, task_id: &str, outcome: Outcome) {
        let Some(shown) = self.tasks.settle(task_id, outcome) else {
            return;
        };
        for (client, note) in self.listeners.task_changed(task_id, &shown) {
            self.deliver(&client, &note, false);
        }
    }

    /// Answers a `tasks/*` request (or a job tool's call) from a caller
    /// with authorization `owner`; a cancel abandons the task's call first
    /// (as for `notifications/cancelled`: the worker runs to its end, and
    /// its answer is dropped). With `apart`, see [`TaskStore::answer`].
    pub(super) fn answer_task(
        &mut self,
        owner: &str,
        req: TaskRequest,
        apart: bool,
    ) -> (Json, Option<Held>) {
        if let Some(task_id) = self.tasks.to_cancel(owner, &req) {
            for call in self.calls.cancel(Cancel::Task(&task_id), &self.catalog) {
                self.take_call(call);
            }
            self.settle_task(&task_id, Outcome::Cancelled);
        }
        self.tasks.answer(&self.catalog, owner, req, apart)
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
