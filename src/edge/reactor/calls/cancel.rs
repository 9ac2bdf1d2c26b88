//! Cancelling calls: `notifications/cancelled`, a closed HTTP connection,
//! `DELETE` of a session, `tasks/cancel`. A pool cannot be told to stop a
//! job, so a call already running on a pool process is abandoned (see
//! `Call::abandoned`) rather than forgotten.

use mio::Token;

use super::CallId;
use crate::edge::reactor::{Client, Reactor};
use crate::protocol::jsonrpc::RequestId;
use crate::protocol::metrics::Outcome;

impl Reactor {
    pub(in crate::edge::reactor) fn drop_call(&mut self, id: CallId) {
        if let Some(call) = self.take_call(id) {
            let (program, command) = (call.program, call.request.command);
            self.count_call(program, command, Outcome::Cancelled, call.started);
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
            return self.count_call(program, command, Outcome::Cancelled, started);
        }
        call.abandoned = true;
        call.task = None;
        call.task_at = None;
        call.next_progress = None;
        self.count_call(program, command, Outcome::Cancelled, started);
    }

    /// `notifications/cancelled`: close the connection and never answer.
    pub(in crate::edge::reactor) fn cancel(&mut self, client: &Client, request_id: &RequestId) {
        let found = self
            .calls
            .iter()
            .find(|(_, c)| {
                c.task.is_none()
                    && !c.abandoned
                    && &c.request.id == request_id
                    && same_session(&c.client, client)
            })
            .map(|(id, _)| *id);
        if let Some(id) = found {
            // A pool cannot be told to stop a job: its worker finishes, and
            // the answer is dropped.
            self.abandon_call(id);
        }
    }

    /// Calls of one HTTP session (ended by DELETE); returns their clients.
    pub(in crate::edge::reactor) fn cancel_session(&mut self, session: &str) -> Vec<Client> {
        self.abandon_where(|c| matches!(c, Client::Http { session: s, .. } if s == session))
    }

    /// Calls waiting on an HTTP connection that went away.
    pub(in crate::edge::reactor) fn cancel_conn(&mut self, conn: Token) {
        self.abandon_where(|c| matches!(c, Client::Http { conn: t, .. } if *t == conn));
    }

    /// Abandons every call (not a task) whose client `matches`; returns
    /// their clients.
    fn abandon_where(&mut self, matches: impl Fn(&Client) -> bool) -> Vec<Client> {
        let found: Vec<(CallId, Client)> = self
            .calls
            .iter()
            .filter(|(_, c)| c.task.is_none() && !c.abandoned && matches(&c.client))
            .map(|(id, c)| (*id, c.client.clone()))
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

fn same_session(a: &Client, b: &Client) -> bool {
    match (a, b) {
        (Client::Stdio, Client::Stdio) => true,
        (Client::Http { session: x, .. }, Client::Http { session: y, .. }) => x == y,
        _ => false,
    }
}
