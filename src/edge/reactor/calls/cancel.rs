//! Cancelling calls: `notifications/cancelled`, a closed HTTP connection,
//! `DELETE` of a session, `tasks/cancel`. A pool cannot be told to stop a
//! job, so a call already running on a pool process is abandoned (see
//! `Call::abandoned`) rather than forgotten.

use mio::Token;

use super::table::ClientKey;
use super::{CallId, CallTimer};
use crate::edge::reactor::{Client, Reactor};
use crate::protocol::jsonrpc::RequestId;
use crate::protocol::metrics::Outcome;

impl Reactor {
    pub(in crate::edge::reactor) fn drop_call(&mut self, id: CallId) {
        if let Some(call) = self.take_call(id) {
            let (program, command) = (call.program, call.request.command);
            let (what, started) = ((program, command), call.started);
            self.calls
                .count(&self.catalog, what, Outcome::Cancelled, started);
        }
    }

    /// A call its client cancelled: one that has not reached a pool just
    /// goes; one that runs on a pool process is abandoned (see
    /// `Call::abandoned`). A pool does not stop a job when its connection
    /// closes, so keeping the connection costs nothing and keeps the
    /// process's busy count true.
    pub(in crate::edge::reactor) fn abandon_call(&mut self, id: CallId) {
        let Some(call) = self.calls.get_mut(&id) else {
            return;
        };
        let (program, command, started) = (call.program, call.request.command, call.started);
        if call.wire.stream.is_none() {
            self.take_call(id);
            let what = (program, command);
            return self
                .calls
                .count(&self.catalog, what, Outcome::Cancelled, started);
        }
        call.abandoned = true;
        call.task = None;
        self.calls.arm(id, CallTimer::Task, None);
        self.calls.arm(id, CallTimer::Progress, None);
        let what = (program, command);
        self.calls
            .count(&self.catalog, what, Outcome::Cancelled, started);
    }

    /// `notifications/cancelled`: close the connection and never answer.
    pub(in crate::edge::reactor) fn cancel(&mut self, client: &Client, request_id: &RequestId) {
        let key = match client {
            Client::Stdio => ClientKey::Stdio,
            Client::Http { session, .. } => ClientKey::Session(session.clone()),
        };
        let found = self.calls.of_client(&key).iter().copied().find(|id| {
            let c = &self.calls[id];
            c.task.is_none() && !c.abandoned && &c.request.id == request_id
        });
        if let Some(id) = found {
            // A pool cannot be told to stop a job: its worker finishes, and
            // the answer is dropped.
            self.abandon_call(id);
        }
    }

    /// Calls of one HTTP session (ended by DELETE); returns their clients.
    pub(in crate::edge::reactor) fn cancel_session(&mut self, session: &str) -> Vec<Client> {
        self.abandon_where(&ClientKey::Session(session.to_string()))
    }

    /// Calls waiting on an HTTP connection that went away.
    pub(in crate::edge::reactor) fn cancel_conn(&mut self, conn: Token) {
        self.abandon_where(&ClientKey::Conn(conn));
    }

    /// Abandons every call (not a task) of client `key`; returns their
    /// clients.
    fn abandon_where(&mut self, key: &ClientKey) -> Vec<Client> {
        let found: Vec<(CallId, Client)> = self
            .calls
            .of_client(key)
            .iter()
            .map(|id| (*id, &self.calls[id]))
            .filter(|(_, c)| c.task.is_none() && !c.abandoned)
            .map(|(id, c)| (id, c.client.clone()))
            .collect();
        found
            .into_iter()
            .map(|(id, client)| {
                self.abandon_call(id);
                client
            })
            .collect()
    }
}
