//! Calls meeting their pool processes: starting the pools a call needs,
//! connecting a call the scheduler placed (and putting it back in the queue
//! when the process refuses), giving leases back, failing the calls of a
//! process that died or restarts, and timing calls out.

use crate::edge::log;
use std::time::Instant;

use mio::Interest;

use super::{new_connection, Call, CallId, CallStage, CallTimer};
use crate::edge::reactor::pools::{BasePool, LeaseMode, PoolSet, Proc};
use crate::edge::reactor::{Reactor, Source};

impl Reactor {
    /// Starts what the call needs: its own pool and the pools it calls into
    /// (`needed_pools`); true when all of them answer pings.
    pub(in crate::edge::reactor) fn ensure_needed_pools(
        &mut self,
        id: CallId,
    ) -> Result<bool, String> {
        let Some(call) = self.calls.get(&id) else {
            return Ok(false);
        };
        let program = call.program;
        let own = call.sched.pool;
        let mut pools = vec![own];
        let command = self.catalog.programs[program].command(call.request.command);
        pools.extend(
            command
                .needed_pools
                .iter()
                .map(|&p| BasePool(p))
                .filter(|p| *p != own),
        );
        let replica_ready = pools.len() == 1
            && self
                .pools
                .instances(program, own)
                .any(|slot| slot != own.primary() && self.pools.ready(program, slot));
        let mut all_ready = true;
        for p in pools {
            match self.with_pools(|pools, cx| pools.ensure(cx, program, p)) {
                Ok(ready) => all_ready &= ready,
                // A ready replica serves while the primary cannot start.
                Err(_) if replica_ready => {}
                Err(message) => return Err(message),
            }
        }
        Ok(all_ready || replica_ready)
    }

    /// Gives back the lease of a call that holds one, and lets waiting calls
    /// have theirs.
    pub(in crate::edge::reactor) fn release_lease(
        &mut self,
        program: usize,
        pools: &[Proc],
        mode: LeaseMode,
    ) {
        self.pools.leases_mut(program).release(pools, mode);
        self.dispatch_waiting(program);
    }

    /// Connects a call that holds its lease.
    pub(in crate::edge::reactor) fn connect_call(&mut self, id: CallId) {
        let Some(call) = self.calls.get(&id) else {
            return;
        };
        let (program, pool, slot) = (call.program, call.sched.pool, call.sched.slot);
        let (spare, path) = self.pools.connect_to(program, slot);
        let connected = match new_connection(spare, path) {
            Ok(mut stream) => {
                let token = self.token(Source::Call(id));
                // Readable only: the packet is written at once below, and a
                // writable wake-up would cost a turn for nothing.
                if let Err(e) =
                    self.poll
                        .registry()
                        .register(&mut stream, token, Interest::READABLE)
                {
                    self.sources.remove(&token);
                    let message = format!(
                        "cannot watch the connection to pool '{}': {e}",
                        self.pools.label(program, slot)
                    );
                    return self.finish_call(id, Err(message));
                }
                Ok((token, stream))
            }
            Err(e) => Err(e),
        };
        match connected {
            Ok((token, stream)) => {
                let timeout = self.options.call_timeout;
                if let Some(call) = self.calls.get_mut(&id) {
                    call.wire.stream = Some((token, stream));
                    call.stage = CallStage::Sending;
                    if let Some(trace) = call.trace.as_mut() {
                        trace.sent();
                    }
                }
                let deadline = timeout.map(|t| Instant::now() + t);
                self.calls.arm(id, CallTimer::Deadline, deadline);

                // Unix sockets take the write at once; sending now saves a turn.
                self.advance_call(id);
            }
            Err(e) => {
                // The pool may have just died (its restart is then under way)
                // or stopped listening: wait for it to answer a ping again
                // instead of failing the call.
                self.with_pools(PoolSet::check_children);
                let Some(call) = self.calls.get_mut(&id) else {
                    return;
                };
                call.stage = CallStage::WaitingForPool;
                // Nothing was sent: the lease goes back (a readiness probe
                // must be able to connect), and the call takes its place in
                // the queue again, to go once the pool answers.
                let sched = &mut call.sched;
                if sched.leased {
                    sched.leased = false;
                    self.pools
                        .leases_mut(program)
                        .release(&sched.pools, sched.mode);
                    if let Some(place) = sched.place.take() {
                        self.calls.queue.restore(id, place);
                    }
                }
                let lang = self.pools.label(program, slot);
                if slot != pool.primary() {
                    // A replica: probe it again if it still looks ready; the
                    // call goes to whichever process is ready first.
                    if self.pools.ready(program, slot) {
                        log::warn(&format!(
                            "pool '{lang}' refused a connection ({e}); probing it again"
                        ));
                        self.pools.reprobe(program, slot);
                    }
                    return self.dispatch_waiting(program);
                }
                match self.with_pools(|p, cx| p.ensure(cx, program, pool)) {
                    Ok(false) => {}
                    Ok(true) => {
                        // Alive but refusing: probe it again like a new pool.
                        log::warn(&format!(
                            "pool '{lang}' refused a connection ({e}); probing it again"
                        ));
                        self.pools.reprobe(program, pool.primary());
                    }
                    Err(message) => return self.finish_call(id, Err(message)),
                }
                self.dispatch_waiting(program);
            }
        }
    }

    /// Fails calls on process `slot` of a pool: the calls running on it,
    /// and (`include_waiting`, the pool cannot be used now) the calls
    /// waiting for it, leaving waiting calls for the restarted pool
    /// otherwise. Waiting calls are not tied to a replica: they fail only
    /// when the primary fails and no replica of their pool can serve them.
    pub(in crate::edge::reactor) fn fail_pool_calls(
        &mut self,
        program: usize,
        slot: Proc,
        message: &str,
        include_waiting: bool,
    ) {
        let (base, primary) = self.pools.base_of(program, slot);
        let replica_alive = self.pools.other_alive(program, base, slot);
        // A waiting call also depends on the pools its command calls into.
        let needs = |c: &Call| {
            let s = &c.sched;
            s.bases.contains(&base) && (s.primary_only || s.pool != base || !replica_alive)
        };
        let ids: Vec<CallId> = self
            .calls
            .iter()
            .filter(|(_, c)| c.program == program)
            .filter(|(_, c)| match c.stage {
                CallStage::WaitingForPool => include_waiting && primary && needs(c),
                _ => c.sched.slot == slot,
            })
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.fail_call(id, message.to_string());
        }
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
        let was_running = call.stage != CallStage::WaitingForPool;
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
            self.with_pools(|p, cx| p.restart(cx, program, slot, &reason));
        }
    }
}
