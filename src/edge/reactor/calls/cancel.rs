//! Cancelling calls: `notifications/cancelled`, a closed HTTP connection,
//! `DELETE` of a session, `tasks/cancel`. A pool cannot be told to stop a
//! job, so a call already running on a pool process is abandoned (see
//! `Call::abandoned`) rather than forgotten.

use mio::Token;

use super::table::ClientKey;
use super::{CallId, CallTimer, Calls};
use crate::edge::reactor::{Client, Reactor};
use crate::protocol::jsonrpc::RequestId;
use crate::protocol::mcp::Catalog;
use crate::protocol::metrics::Outcome;

impl Reactor {
    /// A call its client cancelled ([`Calls::abandon`]); one that has not
    /// reached a pool goes now.
    pub(in crate::edge::reactor) fn abandon_call(&mut self, id: CallId) {
        if self.calls.abandon(id, &self.catalog) {
            self.take_call(id);
        }
    }

    /// Calls of one HTTP session (ended by DELETE); returns their clients.
    pub(in crate::edge::reactor) fn cancel_session(&mut self, session: &str) -> Vec<Client> {
        let found = self.calls.live_of(&ClientKey::Session(session.to_string()));
        for (id, _) in &found {
            self.abandon_call(*id);
        }
        found.into_iter().map(|(_, client)| client).collect()
    }

    /// Calls waiting on an HTTP connection that went away.
    pub(in crate::edge::reactor) fn cancel_conn(&mut self, conn: Token) {
        for (id, _) in self.calls.live_of(&ClientKey::Conn(conn)) {
            self.abandon_call(id);
        }
    }
}

impl Calls {
    /// Call `id`'s client cancelled it: it counts as cancelled, and one
    /// that runs on a pool process is abandoned (see `Call::abandoned`): a
    /// pool does not stop a job when its connection closes, so keeping the
    /// connection costs nothing and keeps the process's busy count true.
    /// True for one that has not reached a pool: it just goes
    /// (`Reactor::take_call`).
    pub(super) fn abandon(&mut self, id: CallId, catalog: &Catalog) -> bool {
        let Some(call) = self.get_mut(&id) else {
            return false;
        };
        let (what, started) = ((call.program, call.request.command), call.started);
        let connected = call.wire.stream.is_some();
        if connected {
            call.abandoned = true;
            call.task = None;
            self.arm(id, CallTimer::Task, None);
            self.arm(id, CallTimer::Progress, None);
        }
        self.count(catalog, what, Outcome::Cancelled, started);
        !connected
    }

    /// The call `notifications/cancelled` from `client` names: its request
    /// `request_id`, not a task, not already abandoned.
    pub(in crate::edge::reactor) fn cancellable(
        &self,
        client: &Client,
        request_id: &RequestId,
    ) -> Option<CallId> {
        let key = match client {
            Client::Stdio => ClientKey::Stdio,
            Client::Http { session, .. } => ClientKey::Session(session.clone()),
        };
        self.of_client(&key).iter().copied().find(|id| {
            let c = &self[id];
            c.task.is_none() && !c.abandoned && &c.request.id == request_id
        })
    }

    /// The calls (not tasks, not abandoned) of client `key`, with their
    /// clients.
    fn live_of(&self, key: &ClientKey) -> Vec<(CallId, Client)> {
        self.of_client(key)
            .iter()
            .map(|id| (*id, &self[id]))
            .filter(|(_, c)| c.task.is_none() && !c.abandoned)
            .map(|(id, c)| (id, c.client.clone()))
            .collect()
    }
}
