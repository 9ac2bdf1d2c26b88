//! The calls in flight ([`Calls`]): the calls by id, the queue of those
//! waiting for a pool process, the calls that may have a timer, the
//! connections of finished calls still to close, and the rate limit of the
//! diagnostics about them.

use std::ops::Index;
use std::time::Instant;

use mio::net::UnixStream;

use super::{Call, CallId, Queue};
use crate::edge::reactor::idhash::{IdMap, IdSet};
use crate::edge::reactor::queue::Throttle;
use crate::protocol::metrics::CallMetrics;

pub(in crate::edge::reactor) struct Calls {
    pub(super) map: IdMap<CallId, Call>,
    /// The calls waiting for a pool process, served round-robin across
    /// their owners (`queue`).
    pub(super) queue: Queue,
    /// The calls that may have a timer (a deadline, progress, a task
    /// deadline, a lost connection): those that left the queue, and those
    /// with progress or a task deadline from the start. Timers look only at
    /// these, so calls waiting in the queue cost nothing per turn.
    pub(super) timed: IdSet<CallId>,
    next: u64,
    /// Pool connections whose call is over, closed by `end_turn`.
    pub(super) closing: Vec<UnixStream>,
    /// Rate limit of the diagnostics about the queue and the pools.
    pub(super) throttle: Throttle,
    /// Calls that ended, by tool and outcome (`/metrics`).
    pub(super) metrics: CallMetrics,
}

impl Calls {
    pub(in crate::edge::reactor) fn new(queue: Queue) -> Calls {
        Calls {
            map: IdMap::default(),
            queue,
            timed: IdSet::default(),
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
    pub(in crate::edge::reactor) fn timed_ids(&self) -> impl Iterator<Item = &CallId> {
        self.timed.iter()
    }

    /// Closes the connections of the calls finished this turn.
    pub(in crate::edge::reactor) fn close_finished(&mut self) {
        self.closing.clear();
    }

    /// Tells `consider` the calls' next deadlines: their timers, the
    /// queue's timeouts and the diagnostics' flush.
    pub(in crate::edge::reactor) fn deadlines(&self, consider: &mut impl FnMut(Option<Instant>)) {
        for call in self.timed.iter().filter_map(|id| self.map.get(id)) {
            consider(call.deadline);
            consider(call.next_progress);
            consider(call.lost_until());
            consider(call.task_at);
        }
        consider(self.queue.next_deadline());
        consider(self.throttle.next_flush());
    }
}

impl Index<&CallId> for Calls {
    type Output = Call;

    fn index(&self, id: &CallId) -> &Call {
        &self.map[id]
    }
}
