//! The job tools on the reactor's side (`--job-tools`): the handle that
//! answers a long call of a client without the Tasks extension, and the
//! answers of `job_status`, `job_result` and `job_cancel`, read from the
//! task table under the caller's authorization. Their results and texts
//! live in `protocol::mcp::jobs`; the task's life (its timer, settling,
//! storage, expiry) is the one of every task (`tasks`). Over HTTP a modern
//! job tool's call must mirror its job id in `Mcp-Param-Job-Id`
//! (`http::mcp_post` checks it).

use serde_json::Value as Json;

use crate::protocol::mcp::call;
use crate::protocol::mcp::jobs::{self, JobMethod};
use crate::protocol::mcp::structured;
use crate::protocol::mcp::tasks::{Outcome, Status, Task};
use crate::protocol::mcp::{Catalog, TaskRequest};

use super::calls::Call;
use super::timers::now_ms;
use super::Reactor;

/// The response answering `call`, which became the job `task`.
pub(super) fn handle(catalog: &Catalog, call: &Call, task: &Task, ttl: u64, now: u64) -> Json {
    let program = &catalog.programs[call.program];
    let command = call.request.command;
    let tool = program
        .surface
        .tools
        .iter()
        .find(|t| t.command == command)
        .map_or_else(
            || program.command(command).name.as_str(),
            |t| t.name.as_str(),
        );
    let result = jobs::handle_result(task, tool, ttl, now);
    let modern = call.request.is_modern();
    call::call_response(catalog, &call.request.id, modern, result)
}

impl Reactor {
    /// Answers a job tool's call from a caller with authorization `owner`:
    /// a job this caller may not see (another authorization's, expired,
    /// unknown) is an `isError` result, as is any refusal of a tool.
    pub(super) fn answer_job(
        &mut self,
        owner: &str,
        req: TaskRequest,
        method: JobMethod,
        modern: bool,
    ) -> Json {
        let now = now_ms();
        let ttl = self.tasks.ttl_ms();
        let status = match self.tasks.get(&req.task_id, owner, now) {
            Ok(task) => task.status,
            Err(_) => {
                let result = jobs::unknown_job(&req.task_id);
                return call::call_response(&self.catalog, &req.id, modern, result);
            }
        };
        if method == JobMethod::Cancel && status == Status::Working {
            let running = self
                .calls
                .iter()
                .find(|(_, c)| c.task.as_deref() == Some(req.task_id.as_str()))
                .map(|(id, _)| *id);
            if let Some(id) = running {
                // As for `tasks/cancel`: the worker runs to its end, and
                // its answer is dropped.
                self.abandon_call(id);
            }
            self.settle_task(&req.task_id, Outcome::Cancelled);
        }
        let result = match self.tasks.get(&req.task_id, owner, now) {
            Ok(task) if method == JobMethod::Result => {
                // A task's result is kept in the modern shape; a legacy
                // caller gets the reference's (`structured::for_era`).
                let mut result = jobs::result_of(task, ttl, now);
                structured::for_era(&mut result, modern);
                result
            }
            Ok(task) => jobs::status_result(task, ttl, now),
            Err(_) => jobs::unknown_job(&req.task_id),
        };
        call::call_response(&self.catalog, &req.id, modern, result)
    }
}
