//! The job tools on the reactor's side (`--job-tools`): the handle that
//! answers a long call of a client without the Tasks extension, and the
//! answers of `job_status`, `job_result` and `job_cancel`, read from the
//! task table under the caller's authorization. Their results and texts
//! live in `protocol::mcp::jobs`; the task's life (its timer, settling,
//! storage, expiry) is the one of every task (`tasks`). Over HTTP a modern
//! job tool's call must mirror its job id in `Mcp-Param-Job-Id`
//! (`http::endpoint::mcp_post` checks it).

use std::rc::Rc;

use serde_json::Value as Json;

use crate::protocol::mcp::call;
use crate::protocol::mcp::jobs::{self, JobMethod};
use crate::protocol::mcp::tasks::Task;
use crate::protocol::mcp::{Catalog, TaskRequest};

use super::{Held, TaskStore};
use crate::edge::reactor::calls::Call;
use crate::edge::reactor::timers::now_ms;

/// The response answering `call`, which became the job `task`.
pub(super) fn handle(catalog: &Catalog, call: &Call, task: &Task, ttl: u64, now: u64) -> Json {
    let tool = call.request().tool_name(catalog);
    let result = jobs::handle_result(task, tool, ttl, now);
    let modern = call.request().is_modern();
    call::call_response(catalog, &call.request().id, modern, result)
}

impl TaskStore {
    /// Answers a job tool's call from a caller with authorization `owner`
    /// (a cancel was done before): a job this caller may not see (another
    /// authorization's, expired, unknown) is an `isError` result, as is any
    /// refusal of a tool. With `apart`, a result's text held apart is left
    /// out of the answer and given beside it, with where it goes.
    pub(super) fn answer_job(
        &self,
        catalog: &Catalog,
        owner: &str,
        req: TaskRequest,
        (method, modern): (JobMethod, bool),
        apart: bool,
    ) -> (Json, Option<Held>) {
        let now = now_ms();
        let ttl = self.table.ttl_ms();
        let mut held = None;
        let result = match self.table.get(&req.task_id, owner, now) {
            Ok(task) if method == JobMethod::Result => {
                held = task.apart.as_ref().filter(|_| apart).map(Rc::clone);
                // A task's result is kept in the modern shape; a legacy
                // caller gets the reference's (`structured::for_era`).
                jobs::result_of(task, ttl, now, held.is_none())
            }
            Ok(task) => jobs::status_result(task, ttl, now),
            Err(_) => jobs::unknown_job(&req.task_id),
        };
        let text = held.as_ref().map(|h| h.text());
        let reply = call::call_response_of(catalog, &req.id, modern, result, text);
        let held = held.map(|text| Held {
            text,
            at: jobs::RESULT_IN_CALL,
        });
        (reply, held)
    }
}
