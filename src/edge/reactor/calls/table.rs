//! The calls in flight ([`Calls`]): the calls by id, the queue of those
//! waiting for a pool process, the calls' timers, the connections of finished calls still to close, and the rate limit of the
//! diagnostics about them.

use std::ops::Index;
use std::time::Instant;

use mio::net::UnixStream;

use mio::Token;

use super::{Call, CallId, CallTimer, Calls, Queue};
use crate::edge::reactor::idhash::IdMap;
use crate::edge::reactor::pools::PoolSet;
use crate::edge::reactor::queue::Throttle;
use crate::edge::reactor::timers::Timers;
use crate::edge::reactor::Client;
use crate::edge::reactor::Sources;
use crate::protocol::metrics::CallMetrics;

impl Calls {
    pub(in crate::edge::reactor) fn new(queue: Queue) -> Calls {
        Calls {
            map: IdMap::default(),
            by_client: IdMap::default(),
            queue,
            timers: Timers::default(),
            next: 0,
            closing: Vec::new(),
            throttle: Throttle::default(),
            metrics: CallMetrics::default(),
        }
    }

    /// A new call's id.
    pub(super) fn next_id(&mut self) -> CallId {
        let id = CallId(self.next);
        self.next += 1;
        id
    }

    /// Adds call `id`.
    pub(super) fn insert(&mut self, id: CallId, call: Call) {
        for key in ClientKey::of(&call.client) {
            self.by_client.entry(key).or_default().push(id);
        }
        self.map.insert(id, call);
    }

    /// Removes call `id`.
    pub(super) fn remove(&mut self, id: CallId) -> Option<Call> {
        let call = self.map.remove(&id)?;
        for key in ClientKey::of(&call.client) {
            if let Some(ids) = self.by_client.get_mut(&key) {
                ids.retain(|other| *other != id);
                if ids.is_empty() && key != ClientKey::Stdio {
                    self.by_client.remove(&key);
                }
            }
        }
        Some(call)
    }

    /// The calls of `key`'s client.
    pub(super) fn of_client(&self, key: &ClientKey) -> &[CallId] {
        self.by_client.get(key).map_or(&[], Vec::as_slice)
    }

    pub(in crate::edge::reactor) fn get(&self, id: &CallId) -> Option<&Call> {
        self.map.get(id)
    }

    pub(in crate::edge::reactor) fn get_mut(&mut self, id: &CallId) -> Option<&mut Call> {
        self.map.get_mut(id)
    }

    /// The counts of the calls that ended.
    pub(in crate::edge::reactor) fn metrics(&self) -> &CallMetrics {
        &self.metrics
    }

    /// How many calls wait for a pool process.
    pub(in crate::edge::reactor) fn queued(&self) -> usize {
        self.queue.len()
    }

    /// How many calls are in flight (waiting, being prepared or running).
    pub(in crate::edge::reactor) fn len(&self) -> usize {
        self.map.len()
    }

    /// How many calls someone still waits for (not abandoned).
    pub(in crate::edge::reactor) fn live(&self) -> usize {
        self.map.values().filter(|c| !c.abandoned).count()
    }

    /// Whether every call left was abandoned (none is waited for).
    pub(in crate::edge::reactor) fn idle(&self) -> bool {
        self.map.values().all(|c| c.abandoned)
    }

    /// Whether a call of program `program` is in flight.
    pub(in crate::edge::reactor) fn runs(&self, program: usize) -> bool {
        self.map.values().any(|c| c.program == program)
    }

    pub(in crate::edge::reactor) fn values(&self) -> impl Iterator<Item = &Call> {
        self.map.values()
    }

    pub(in crate::edge::reactor) fn iter(&self) -> impl Iterator<Item = (&CallId, &Call)> {
        self.map.iter()
    }

    pub(in crate::edge::reactor) fn keys(&self) -> impl Iterator<Item = &CallId> {
        self.map.keys()
    }

    /// The calls that may have a timer.
    /// Arms timer `kind` of call `id` at `at`; `None` disarms it.
    pub(in crate::edge::reactor) fn arm(
        &mut self,
        id: CallId,
        kind: CallTimer,
        at: Option<Instant>,
    ) {
        self.timers.set((id, kind), at);
    }

    /// Disarms every timer of call `id`.
    pub(super) fn disarm(&mut self, id: CallId) {
        for kind in CallTimer::ALL {
            self.timers.set((id, kind), None);
        }
    }

    /// The timers due at `now`, disarmed, in the order [`CallTimer::ALL`]
    /// lists their kinds.
    pub(super) fn due(&mut self, now: Instant) -> Vec<(CallId, CallTimer)> {
        let due: Vec<_> = std::iter::from_fn(|| self.timers.pop_due(now)).collect();
        crate::format::order::order_by(&due, |(_, kind)| *kind as u64)
            .into_iter()
            .map(|i| due[i])
            .collect()
    }

    /// Closes the connections of the calls finished this turn.
    pub(in crate::edge::reactor) fn close_finished(&mut self) {
        self.closing.clear();
    }

    /// Tells `consider` the calls' next deadlines: their timers, the
    /// queue's timeouts and the diagnostics' flush.
    pub(in crate::edge::reactor) fn deadlines(
        &mut self,
        consider: &mut impl FnMut(Option<Instant>),
    ) {
        consider(self.timers.next());
        consider(self.queue.next_deadline());
        consider(self.throttle.next_flush());
    }
}

/// Whose calls [`Calls::of_client`] looks up.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum ClientKey {
    Stdio,
    /// An HTTP session, by its `Mcp-Session-Id`.
    Session(String),
    /// An HTTP connection.
    Conn(Token),
}

impl ClientKey {
    /// The keys a call of `client` is found under.
    fn of(client: &Client) -> impl Iterator<Item = ClientKey> {
        let (first, second) = match client {
            Client::Stdio => (ClientKey::Stdio, None),
            Client::Http { conn, session } => (
                ClientKey::Conn(*conn),
                Some(ClientKey::Session(session.clone())),
            ),
        };
        std::iter::once(first).chain(second)
    }
}

impl Index<&CallId> for Calls {
    type Output = Call;

    fn index(&self, id: &CallId) -> &Call {
        &self.map[id]
    }
}

/// Closes `call`'s connection at the end of this turn (it joins `closing`;
/// its token in `sources` goes now) and gives back the lease it holds on
/// `pools`: whether it held one.
pub(super) fn hang_up(
    closing: &mut Vec<UnixStream>,
    call: &mut Call,
    pools: &mut PoolSet,
    sources: &mut Sources,
) -> bool {
    if let Some((token, stream)) = call.wire.stream.take() {
        // Closed at the end of this turn, once the answer is written
        // (`end_turn`). Closing removes it from epoll by itself (no other
        // descriptor refers to it), which saves a system call per call;
        // until then its events find no source and are ignored.
        closing.push(stream);
        sources.remove(&token);
    }
    let freed = call.sched.leased;
    if freed {
        call.sched.leased = false;
        pools.touch(call.program, call.sched.slot, Instant::now());
        let sched = &call.sched;
        pools.release(call.program, &sched.pools, sched.mode);
    }
    freed
}
