//! The queue side of calls: whose call it is (`Owner`), the calls waiting
//! for a pool process (`Queue`, see `reactor::queue`), connecting those the
//! scheduler (`reactor::schedule`) places (`dispatch_waiting`), refusing calls
//! past the queue's caps, failing those past `--queue-timeout`, and the
//! rate-limited stderr lines about all this.

use crate::edge::log;
use std::time::{Duration, Instant};

use super::{CallId, Calls};
use crate::edge::reactor::pools::PoolSet;
use crate::edge::reactor::queue::{self, FairQueue, Refused};
use crate::edge::reactor::schedule::{self, Class, Need, Plan};
use crate::edge::reactor::{Client, Reactor};
use crate::protocol::log::{Level, Value};

/// Whose call it is, for the fairness of the queue and its per-owner cap:
/// the stdio client, a legacy HTTP session, or else (a modern request has
/// no session) the HTTP connection it came on; under OAuth, the token's
/// subject, whatever session or connection it uses.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(in crate::edge::reactor) enum Owner {
    Stdio,
    Session(String),
    Conn(usize),
    /// `oauth <issuer> <subject>`, which an accepted request carries in
    /// place of its token (`http::oauth`).
    Subject(String),
}

impl Owner {
    /// The owner of `call`: its OAuth subject if it has one, else by its
    /// client.
    pub(super) fn of_call(call: &super::Call) -> Owner {
        let who = &call.request.owner;
        if cfg!(feature = "oauth")
            && matches!(call.client, Client::Http { .. })
            && who.starts_with("oauth ")
        {
            return Owner::Subject(who.clone());
        }
        Owner::of(&call.client)
    }

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
            Owner::Subject(_) => "an OAuth subject",
        }
    }
}

/// The calls waiting for a pool process (see `queue`).
pub(in crate::edge::reactor) type Queue = FairQueue<CallId, Owner, Class>;

impl Reactor {
    /// Connects the waiting calls of `program` that can run now, where the
    /// scheduler places them (`reactor::schedule`: fair order, least busy
    /// ready process, leases), and starts replicas for the calls left
    /// waiting while every process of their pool is busy.
    pub(in crate::edge::reactor) fn dispatch_waiting(&mut self, program: usize) {
        if self.calls.queued() == 0 {
            // The common case when a call ends.
            return;
        }
        let n_bases = self.catalog.programs[program].loaded.manifest.pools.len();
        let plan = self.calls.place(&mut self.pools, program, n_bases);
        for grant in plan.grants {
            self.connect_call(grant.call);
        }
        for (base, waiting) in plan.demand {
            self.with_pools(&mut |p, cx| p.scale_up(cx, program, base, waiting));
        }
    }
}

impl Calls {
    /// Places the waiting calls of `program` (of `n_bases` pools) that can
    /// run now (`schedule`), taking their leases and touching their
    /// processes: the calls to connect, in order (their grants, emptied
    /// into the calls), and the replicas wanted
    /// (a pool, and how many calls wait for it).
    fn place(
        &mut self,
        pools: &mut PoolSet,
        program: usize,
        n_bases: usize,
    ) -> Plan<CallId, Owner> {
        let states = pools.states(program);
        let (queue, calls) = (&mut self.queue, &self.map);
        let need = |id: CallId| {
            let s = &calls.get(&id)?.sched;
            Some(Need {
                primary_only: s.primary_only,
                mode: s.mode,
            })
        };
        let leases = pools.leases_mut(program);
        let mut plan = schedule::schedule(queue, program, n_bases, &states, leases, need);
        let now = Instant::now();
        for grant in &mut plan.grants {
            pools.touch(program, grant.proc, now);
            if let Some(call) = self.get_mut(&grant.call) {
                call.sched.leased = true;
                call.sched.slot = grant.proc;
                call.sched.pools = std::mem::take(&mut grant.pools);
                call.sched.place = grant.place.take();
            }
        }
        plan
    }

    /// The calls that waited longer than `timeout` (`--queue-timeout`) for
    /// a pool process at `now`, out of the queue, with the message each
    /// fails with (one rate-limited line counts them); and the diagnostics
    /// the rate limit held back are told.
    pub(super) fn expire_queue(
        &mut self,
        now: Instant,
        pools: &PoolSet,
        timeout: Option<Duration>,
    ) -> Vec<(CallId, String)> {
        let mut failed = Vec::new();
        if self.queue.next_deadline().is_some_and(|d| d <= now) {
            let secs = crate::format::decimal::seconds(timeout.unwrap_or_default());
            let mut last = String::new();
            for (id, _) in self.queue.expire(now) {
                let Some(call) = self.get(&id) else {
                    continue;
                };
                let lang = pools.label(call.program, call.sched.pool.primary());
                let message = format!(
                    "waited {secs} s for a process of pool '{lang}' without getting one (the \
                     --queue-timeout); every process was busy or the pool was not ready; try again later"
                );
                failed.push((id, message));
                last = lang;
            }
            let count = failed.len();
            if count > 0 {
                self.say(
                    "queue timeout",
                    &format!(
                        "{count} call(s) waited {secs} s for a process of pool '{last}' (--queue-timeout) and failed"
                    ),
                    None,
                );
            }
        }
        if self.throttle.next_flush().is_some_and(|d| d <= now) {
            for (kind, held) in self.throttle.flush(now) {
                log::warn(&format!(
                    "{held} more '{kind}' event(s) in the last {} s",
                    queue::LOG_EVERY.as_secs()
                ));
            }
        }
        failed
    }

    /// A call the queue refused (a cap is reached): says so on stderr, and
    /// gives the `isError` message naming the cap that ends it.
    pub(super) fn refuse(&mut self, id: CallId, owner: &Owner, refused: Refused) -> String {
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
        let trace = self.get(&id).and_then(|c| c.trace.as_ref());
        let trace_id = trace.map(|t| t.trace_id());
        self.say(kind, &note, trace_id.as_deref());
        // The server refused it, not the tool: counted as a failed call.
        message
    }

    /// Prints one diagnostic line on stderr (naming a request's trace, if
    /// given), at most one of each `kind` every 10 s; it tells how many
    /// were held back since the last one.
    pub(in crate::edge::reactor) fn say(&mut self, kind: &str, line: &str, trace_id: Option<&str>) {
        if let Some(held) = self.throttle.allow(kind, Instant::now()) {
            let trace = trace_id.map(|t| ("trace_id", Value::Str(t)));
            let fields: Vec<_> = trace.into_iter().collect();
            if held > 0 {
                let line = format!("{line} ({held} more like this not shown)");
                log::with(Level::Warn, &line, &fields);
            } else {
                log::with(Level::Warn, line, &fields);
            }
        }
    }
}
