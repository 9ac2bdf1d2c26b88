//! Calls meeting their pool processes: connecting a call the scheduler
//! placed (and putting it back in the queue when the process refuses), the
//! calls that fail with a process that died or restarts
//! (`Calls::of_process`; not one reading its result file, which needs its
//! process no more), and timing calls out.

use crate::edge::log;
use std::io;
use std::time::{Duration, Instant};

use mio::Registry;

use super::socket::{new_connection, Failed};
use super::{Call, CallId, CallStage, CallTimer, Calls};
use crate::edge::reactor::pools::{BasePool, PoolSet, Proc};
use crate::edge::reactor::{Reactor, Source, Sources};
use crate::protocol::mcp::call::Ending;

impl Reactor {
    /// Connects a call that holds its lease ([`Calls::connect`]) and
    /// sends at once. A process that refuses the connection may have just
    /// died (its restart is then under way) or stopped listening: the call
    /// waits for it to answer a ping again instead of failing.
    pub(in crate::edge::reactor) fn connect_call(&mut self, id: CallId) {
        let timeout = self.options.call_timeout;
        let registry = self.poll.registry();
        let e = match self
            .calls
            .connect(id, &mut self.pools, registry, &mut self.sources, timeout)
        {
            Connect::Gone => return,
            // Unix sockets take the write at once; sending now saves a turn.
            Connect::Sending => return self.advance_call(id),
            Connect::Unwatched(message) => return self.end_call(id, Ending::Error(message)),
            Connect::Refused(e) => e,
        };
        self.with_pools(&mut PoolSet::check_children);
        let Some((program, pool, slot)) = self.calls.requeue(id, &mut self.pools) else {
            return;
        };
        let lang = self.pools.label(program, slot);
        if slot != pool.primary() {
            // A replica: probe it again if it still looks ready; the call
            // goes to whichever process is ready first.
            if self.pools.ready(program, slot) {
                log::warn(&format!(
                    "pool '{lang}' refused a connection ({e}); probing it again"
                ));
                self.pools.reprobe(program, slot);
            }
            return self.dispatch_waiting(program);
        }
        let mut ensured = Ok(false);
        self.with_pools(&mut |p, cx| ensured = p.ensure(cx, program, pool));
        match ensured {
            Ok(false) => {}
            Ok(true) => {
                // Alive but refusing: probe it again like a new pool.
                log::warn(&format!(
                    "pool '{lang}' refused a connection ({e}); probing it again"
                ));
                self.pools.reprobe(program, pool.primary());
            }
            Err(message) => return self.end_call(id, Ending::Error(message)),
        }
        self.dispatch_waiting(program);
    }

    /// A call ran past `--call-timeout`: it fails, and the process it ran
    /// on restarts.
    pub(in crate::edge::reactor) fn time_out(&mut self, id: CallId) {
        let Some(call) = self.calls.get(&id) else {
            return;
        };
        let (program, slot) = (call.program, call.sched.slot);
        let secs = crate::format::decimal::seconds(self.options.call_timeout.unwrap_or_default());
        let lang = self.pools.label(program, slot);
        // A call reading its result file has its answer: its process is
        // not stuck.
        let was_running = !matches!(
            call.stage,
            CallStage::WaitingForPool | CallStage::ReadingFile
        );
        if was_running {
            // Restarted below: no waiting call may take its place on it.
            self.pools.withdraw(program, slot);
        }
        self.fail_call(
            id,
            format!("timed out after {secs} s waiting for pool '{lang}'"),
        );
        if was_running {
            // A stuck worker would hold up every later call (a Python pool
            // serves one call at a time), so the pool is restarted.
            let reason = format!("a call timed out after {secs} s");
            self.with_pools(&mut |p, cx| p.restart(cx, program, slot, &reason));
        }
    }
}

/// What [`Calls::connect`] did.
pub(super) enum Connect {
    /// The call is gone.
    Gone,
    /// Connected: its packet can go.
    Sending,
    /// Connected, but the poller cannot watch it: the call fails so.
    Unwatched(String),
    /// The process refused the connection.
    Refused(io::Error),
}

impl Calls {
    /// Opens call `id`'s connection to the process the scheduler placed
    /// it on (that process's spare socket, if it has one), watches it
    /// (readable only: the packet is written at once, and a writable
    /// wake-up would cost a turn for nothing) and arms the call's deadline
    /// (`timeout`, `--call-timeout`).
    pub(super) fn connect(
        &mut self,
        id: CallId,
        pools: &mut PoolSet,
        registry: &Registry,
        sources: &mut Sources,
        timeout: Option<Duration>,
    ) -> Connect {
        let Some(call) = self.get(&id) else {
            return Connect::Gone;
        };
        let (program, slot) = (call.program, call.sched.slot);
        let (spare, path) = pools.connect_to(program, slot);
        let (token, stream) = match new_connection(spare, path, registry, sources) {
            Ok(connected) => connected,
            Err(Failed::Refused(e)) => return Connect::Refused(e),
            Err(Failed::Unwatched(e)) => {
                let message = format!(
                    "cannot watch the connection to pool '{}': {e}",
                    pools.label(program, slot)
                );
                return Connect::Unwatched(message);
            }
        };
        sources.bind(token, Source::Call(id));
        if let Some(call) = self.get_mut(&id) {
            call.wire.stream = Some((token, stream));
            call.stage = CallStage::Sending;
            if let Some(trace) = call.trace.as_mut() {
                trace.sent();
            }
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        self.arm(id, CallTimer::Deadline, deadline);
        Connect::Sending
    }

    /// Call `id`, whose process refused the connection, waits again:
    /// nothing was sent, so its lease on `pools` goes back (a readiness
    /// probe must be able to connect) and it takes its place in the queue
    /// again, to go once the pool answers. Its program, pool and process.
    pub(super) fn requeue(
        &mut self,
        id: CallId,
        pools: &mut PoolSet,
    ) -> Option<(usize, BasePool, Proc)> {
        let call = self.map.get_mut(&id)?;
        call.stage = CallStage::WaitingForPool;
        let sched = &mut call.sched;
        if sched.leased {
            sched.leased = false;
            pools.release(call.program, &sched.pools, sched.mode);
            if let Some(place) = sched.place.take() {
                self.queue.restore(id, place);
            }
        }
        Some((call.program, sched.pool, sched.slot))
    }

    /// The calls that fail with process `slot` of a pool: those running on it,
    /// and (`include_waiting`, the pool cannot be used now) the calls
    /// waiting for it, leaving waiting calls for the restarted pool
    /// otherwise. Waiting calls are not tied to a replica: they fail only
    /// when the primary fails and no replica of their pool can serve them.
    pub(in crate::edge::reactor) fn of_process(
        &self,
        pools: &PoolSet,
        program: usize,
        slot: Proc,
        include_waiting: bool,
    ) -> Vec<CallId> {
        let (base, primary) = pools.base_of(program, slot);
        let replica_alive = pools.other_alive(program, base, slot);
        // A waiting call also depends on the pools its command calls into.
        let needs = |c: &Call| {
            let s = &c.sched;
            s.bases.contains(&base) && (s.primary_only || s.pool != base || !replica_alive)
        };
        self.iter()
            .filter(|(_, c)| c.program == program)
            .filter(|(_, c)| match c.stage {
                CallStage::WaitingForPool => include_waiting && primary && needs(c),
                // Its result is in its file, whatever becomes of the process.
                CallStage::ReadingFile => false,
                _ => c.sched.slot == slot,
            })
            .map(|(id, _)| *id)
            .collect()
    }
}
