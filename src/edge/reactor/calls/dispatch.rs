//! The queue side of calls: whose call it is (`Owner`), the calls waiting
//! for a pool process (`Queue`, see `reactor::queue`), handing them to pool
//! processes in the queue's fair order (`dispatch_waiting`), refusing calls
//! past the queue's caps, failing those past `--queue-timeout`, and the
//! rate-limited stderr lines about all this.

use std::time::Instant;

use super::CallId;
use crate::edge::reactor::queue::{self, FairQueue, Refused};
use crate::edge::reactor::{Client, Reactor};

/// Whose call it is, for the fairness of the queue and its per-owner cap:
/// the stdio client, a legacy HTTP session, or else (a modern request has
/// no session) the HTTP connection it came on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(in crate::edge::reactor) enum Owner {
    Stdio,
    Session(String),
    Conn(usize),
}

impl Owner {
    pub(super) fn of(client: &Client) -> Owner {
        match client {
            Client::Stdio => Owner::Stdio,
            Client::Http { session, .. } if !session.is_empty() => Owner::Session(session.clone()),
            Client::Http { conn, .. } => Owner::Conn(conn.0),
        }
    }

    /// How diagnostics name an owner (never its session id).
    fn kind(&self) -> &'static str {
        match self {
            Owner::Stdio => "the stdio client",
            Owner::Session(_) => "an HTTP session",
            Owner::Conn(_) => "an HTTP connection",
        }
    }
}

/// Calls that need the same pools: the program and the call's pools
/// (`Call::bases`), which decide where it may run.
pub(in crate::edge::reactor) type Class = (usize, Vec<usize>);

/// The calls waiting for a pool process (see `queue`).
pub(in crate::edge::reactor) type Queue = FairQueue<CallId, Owner, Class>;

impl Reactor {
    /// Answers a call the queue refused (a cap is reached) with an
    /// `isError` result naming the cap, and says so on stderr.
    pub(super) fn refuse_call(&mut self, id: CallId, owner: &Owner, refused: Refused) {
        let (kind, message, note) = match refused {
            Refused::Owner { limit } => (
                "owner queue cap",
                format!(
                    "refused: this client already has {limit} calls waiting for a pool process \
                     (the --max-queued-per-owner cap); wait for some of them to finish and try again"
                ),
                format!(
                    "{} reached the cap of {limit} calls waiting for a pool process \
                     (--max-queued-per-owner): refusing its further calls",
                    owner.kind()
                ),
            ),
            Refused::Total { limit } => (
                "total queue cap",
                format!(
                    "refused: the server already has {limit} calls waiting for pool processes \
                     (the --max-queued cap); try again later"
                ),
                format!(
                    "{limit} calls are waiting for pool processes (--max-queued): refusing new calls"
                ),
            ),
        };
        self.say(kind, &note);
        self.finish_call(id, Err(message));
    }

    /// Prints one diagnostic line on stderr, at most one of each `kind`
    /// every 10 s; it tells how many were held back since the last one.
    pub(in crate::edge::reactor) fn say(&mut self, kind: &str, line: &str) {
        if let Some(held) = self.throttle.allow(kind, Instant::now()) {
            if held > 0 {
                eprintln!("morloc-mcp: {line} ({held} more like this not shown)");
            } else {
                eprintln!("morloc-mcp: {line}");
            }
        }
    }

    /// The ready processes call `id` may run on (empty while a pool it
    /// needs is not ready).
    pub(super) fn ready_slots(&self, id: CallId) -> Vec<usize> {
        let Some(call) = self.calls.get(&id) else {
            return Vec::new();
        };
        let program = call.program;
        if !call.bases[1..].iter().all(|&p| self.pool_ready(program, p)) {
            return Vec::new();
        }
        if call.primary_only {
            return if self.pool_ready(program, call.pool) {
                vec![call.pool]
            } else {
                Vec::new()
            };
        }
        self.runtimes[program]
            .instances(call.pool)
            .filter(|&slot| self.pool_ready(program, slot))
            .collect()
    }

    /// Connects the waiting calls of `program` that can run now, in the
    /// queue's fair order (round-robin across owners), each on the least
    /// busy ready process of its pool that it can lease. A call that must
    /// wait for its lease holds up the calls after it that need any of its
    /// pools. Calls left waiting while every process of their pool is busy
    /// start replicas.
    ///
    /// Only the head of each class (calls that need the same pools) is
    /// looked at: the calls behind it have the same readiness and would be
    /// held up by it, so the work is one step per call that goes plus one
    /// per class, however many calls wait.
    pub(in crate::edge::reactor) fn dispatch_waiting(&mut self, program: usize) {
        if self.queue.len() == 0 {
            // The common case when a call ends.
            return;
        }
        let n_bases = self.catalog.programs[program].loaded.manifest.pools.len();
        let mut blocked = vec![false; n_bases];
        let mut demand = vec![0usize; n_bases];
        let mut done: Vec<Vec<usize>> = Vec::new();
        let mut go = Vec::new();
        let now = Instant::now();
        while let Some((class, id)) = self
            .queue
            .next(|(p, bases)| *p == program && !done.contains(bases))
        {
            let Some(call) = self.calls.get(&id) else {
                // Cannot happen (`take_call` takes calls out); never loop on it.
                self.queue.remove(id);
                continue;
            };
            let bases = &class.1;
            let primary_only = call.primary_only;
            if bases.iter().any(|&p| blocked[p]) {
                if !primary_only {
                    demand[bases[0]] += self.queue.class_len(class);
                }
                done.push(bases.clone());
                continue;
            }
            let candidates = self.ready_slots(id);
            if candidates.is_empty() {
                // Waiting for a pool to start (so is the whole class): it is
                // dispatched again when the pool is ready (`advance_probe`).
                done.push(bases.clone());
                continue;
            }
            let leases = &self.runtimes[program].leases;
            let others = &bases[1..];
            let lease_on = |slot: usize| {
                let mut pools = vec![slot];
                pools.extend_from_slice(others);
                pools
            };
            let mode = call.mode;
            let chosen = candidates
                .iter()
                .copied()
                .filter(|&slot| leases.available(&[slot], mode) && leases.available(others, mode))
                .min_by_key(|&slot| (leases.busy(slot), slot));
            let Some(slot) = chosen else {
                for &p in bases {
                    blocked[p] = true;
                }
                if !primary_only {
                    demand[bases[0]] += self.queue.class_len(class);
                }
                done.push(bases.clone());
                continue;
            };
            let pools = lease_on(slot);
            let place = self.queue.serve(id);
            self.runtimes[program].leases.take(&pools, mode);
            self.runtimes[program].pools[slot].last_used = now;
            if let Some(call) = self.calls.get_mut(&id) {
                call.leased = true;
                call.slot = slot;
                call.pools = pools;
                call.place = place;
            }
            self.timed.insert(id);
            go.push(id);
        }
        for id in go {
            self.connect_call(id);
        }
        for (base, waiting) in demand.into_iter().enumerate() {
            if waiting > 0 {
                self.scale_up(program, base, waiting);
            }
        }
    }

    /// Fails the calls that waited longer than `--queue-timeout` for a pool
    /// process, and tells of diagnostics held back by the rate limit.
    pub(super) fn queue_timers(&mut self, now: Instant) {
        if self.queue.next_deadline().is_some_and(|d| d <= now) {
            let secs = self.options.queue_timeout.map_or(0.0, |t| t.as_secs_f64());
            let expired = self.queue.expire(now);
            let count = expired.len();
            let mut last = String::new();
            for (id, _) in expired {
                let Some(call) = self.calls.get(&id) else {
                    continue;
                };
                let lang = self.runtimes[call.program].pools[call.pool].label();
                let message = format!(
                    "waited {secs} s for a process of pool '{lang}' without getting one (the \
                     --queue-timeout); every process was busy or the pool was not ready; try again later"
                );
                self.fail_call(id, message);
                last = lang;
            }
            if count > 0 {
                self.say(
                    "queue timeout",
                    &format!(
                        "{count} call(s) waited {secs} s for a process of pool '{last}' (--queue-timeout) and failed"
                    ),
                );
            }
        }
        if self.throttle.next_flush().is_some_and(|d| d <= now) {
            for (kind, held) in self.throttle.flush(now) {
                eprintln!(
                    "morloc-mcp: {held} more '{kind}' event(s) in the last {} s",
                    queue::LOG_EVERY.as_secs()
                );
            }
        }
    }
}
