//! Cancelling calls: `notifications/cancelled`, a closed HTTP connection,
//! `DELETE` of a session, `tasks/cancel`. A pool cannot be told to stop a
//! job, so a call already running on a pool process is abandoned (see
//! `Call::abandoned`) rather than forgotten. [`Calls::cancel`] decides
//! which calls a cancellation touches and gives back those that go at once
//! (they never reached a pool), which the reactor takes
//! (`Reactor::take_call`).

use mio::Token;

use super::table::ClientKey;
use super::{CallId, CallTimer, Calls};
use crate::edge::reactor::Client;
use crate::protocol::jsonrpc::RequestId;
use crate::protocol::mcp::Catalog;
use crate::protocol::metrics::Outcome;

/// What a cancellation names.
pub(in crate::edge::reactor) enum Cancel<'a> {
    /// The call of request `RequestId` from `Client`
    /// (`notifications/cancelled`): not a task, not already abandoned.
    Request(&'a Client, &'a RequestId),
    /// The call that became task `&str` (`tasks/cancel`, `job_cancel`).
    Task(&'a str),
    /// The calls of an HTTP session (ended by `DELETE`).
    Session(&'a str),
    /// The calls waiting on an HTTP connection that went away.
    Conn(Token),
}

impl Calls {
    /// The HTTP connections waiting for the calls of `session` (only the
    /// call of request `only`, if given), with their request ids.
    pub(in crate::edge::reactor) fn waiting_on(
        &self,
        session: &str,
        only: Option<&RequestId>,
    ) -> Vec<(Token, RequestId)> {
        let key = ClientKey::Session(session.to_string());
        self.of_client(&key)
            .iter()
            .filter_map(|id| self.get(id))
            .filter(|c| only.is_none_or(|id| &c.request.id == id))
            .filter_map(|c| match &c.client {
                Client::Http { conn, session: s } if s == session => {
                    Some((*conn, c.request.id.clone()))
                }
                _ => None,
            })
            .collect()
    }

    /// Cancels the calls `which` names ([`Calls::abandon`], in order): the
    /// calls that had not reached a pool, which go now
    /// (`Reactor::take_call`).
    #[must_use]
    pub(in crate::edge::reactor) fn cancel(
        &mut self,
        which: Cancel<'_>,
        catalog: &Catalog,
    ) -> Vec<CallId> {
        let named = match which {
            Cancel::Request(client, request_id) => {
                self.cancellable(client, request_id).into_iter().collect()
            }
            Cancel::Task(task_id) => self.with_task(task_id).into_iter().collect(),
            Cancel::Session(session) => self.live_of(&ClientKey::Session(session.to_string())),
            Cancel::Conn(conn) => self.live_of(&ClientKey::Conn(conn)),
        };
        named
            .into_iter()
            .filter(|id| self.abandon(*id, catalog))
            .collect()
    }

    /// Call `id`'s client cancelled it: it counts as cancelled, and one
    /// that runs on a pool process is abandoned (see `Call::abandoned`): a
    /// pool does not stop a job when its connection closes, so keeping the
    /// connection costs nothing and keeps the process's busy count true.
    /// True for one that has not reached a pool, or whose pool has answered
    /// and whose result file is being read (its file goes with it): it just
    /// goes (`Reactor::take_call`).
    fn abandon(&mut self, id: CallId, catalog: &Catalog) -> bool {
        let Some(call) = self.get_mut(&id) else {
            return false;
        };
        let connected = call.wire.stream.is_some();
        if connected {
            call.abandoned = true;
            call.task = None;
            self.arm(id, CallTimer::Task, None);
            self.arm(id, CallTimer::Progress, None);
        }
        if let Some(call) = self.map.get(&id) {
            let tool = call.request.tool_name(catalog);
            let seconds = call.started.elapsed().as_secs_f64();
            self.metrics.record(tool, Outcome::Cancelled, seconds);
        }
        !connected
    }

    /// The call `notifications/cancelled` from `client` names: its request
    /// `request_id`, not a task, not already abandoned.
    fn cancellable(&self, client: &Client, request_id: &RequestId) -> Option<CallId> {
        let key = match client {
            Client::Stdio => ClientKey::Stdio,
            Client::Http { session, .. } => ClientKey::Session(session.clone()),
        };
        self.of_client(&key).iter().copied().find(|id| {
            let c = &self[id];
            c.task.is_none() && !c.abandoned && &c.request.id == request_id
        })
    }

    /// The calls (not tasks, not abandoned) of client `key`.
    fn live_of(&self, key: &ClientKey) -> Vec<CallId> {
        self.of_client(key)
            .iter()
            .copied()
            .filter(|id| {
                let c = &self[id];
                c.task.is_none() && !c.abandoned
            })
            .collect()
    }

    /// The call that became task `task_id`, if it still runs.
    fn with_task(&self, task_id: &str) -> Option<CallId> {
        self.iter()
            .find(|(_, c)| c.task.as_deref() == Some(task_id))
            .map(|(id, _)| *id)
    }
}
