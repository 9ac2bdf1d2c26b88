//! The queue side of calls: whose call it is (`Owner`), the calls waiting
//! for a pool process (`Queue`, see `reactor::queue`), connecting those the
//! scheduler (`reactor::schedule`) places (`dispatch_waiting`), refusing calls
//! past the queue's caps, failing those past `--queue-timeout`, and the
//! rate-limited stderr lines about all this.

use crate::edge::log;
use std::time::Instant;

use super::{CallId, Calls};
use crate::edge::reactor::queue::{self, FairQueue, Refused};
use crate::edge::reactor::schedule::{self, Class, Need};
use crate::edge::reactor::{Client, Reactor};
use crate::protocol::log::{Level, Value};
use crate::protocol::mcp::call::Ending;

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
        let trace = self.calls.get(&id).and_then(|c| c.trace.as_ref());
        let trace_id = trace.map(|t| t.trace_id());
        self.calls.say(kind, &note, trace_id.as_deref());
        // The server refused it, not the tool: counted as a failed call.
        self.end_call(id, Ending::Failed(message));
    }

    /// Connects the waiting calls of `program` that can run now, where the
    /// scheduler places them (`reactor::schedule`: fair order, least busy
    /// ready process, leases), and starts replicas for the calls left
    /// waiting while every process of their pool is busy.
    pub(in crate::edge::reactor) fn dispatch_waiting(&mut self, program: usize) {
        if self.calls.queue.len() == 0 {
            // The common case when a call ends.
            return;
        }
        let n_bases = self.catalog.programs[program].loaded.manifest.pools.len();
        let states = self.pools.states(program);
        let (queue, calls) = self.calls.queue_and_calls();
        let need = |id: CallId| {
            let s = &calls.get(&id)?.sched;
            Some(Need {
                primary_only: s.primary_only,
                mode: s.mode,
            })
        };
        let leases = self.pools.leases_mut(program);
        let plan = schedule::schedule(queue, program, n_bases, &states, leases, need);
        let now = Instant::now();
        for grant in &plan.grants {
            self.pools.touch(program, grant.proc, now);
        }
        let mut go = Vec::with_capacity(plan.grants.len());
        for grant in plan.grants {
            if let Some(call) = self.calls.get_mut(&grant.call) {
                call.sched.leased = true;
                call.sched.slot = grant.proc;
                call.sched.pools = grant.pools;
                call.sched.place = grant.place;
            }
            go.push(grant.call);
        }
        for id in go {
            self.connect_call(id);
        }
        for (base, waiting) in plan.demand {
            self.with_pools(|p, cx| p.scale_up(cx, program, base, waiting));
        }
    }

    /// Fails the calls that waited longer than `--queue-timeout` for a pool
    /// process, and tells of diagnostics held back by the rate limit.
    pub(super) fn queue_timers(&mut self, now: Instant) {
        if self.calls.queue.next_deadline().is_some_and(|d| d <= now) {
            let secs =
                crate::format::decimal::seconds(self.options.queue_timeout.unwrap_or_default());
            let expired = self.calls.queue.expire(now);
            let count = expired.len();
            let mut last = String::new();
            for (id, _) in expired {
                let Some(call) = self.calls.get(&id) else {
                    continue;
                };
                let lang = self.pools.label(call.program, call.sched.pool.primary());
                let message = format!(
                    "waited {secs} s for a process of pool '{lang}' without getting one (the \
                     --queue-timeout); every process was busy or the pool was not ready; try again later"
                );
                self.fail_call(id, message);
                last = lang;
            }
            if count > 0 {
                self.calls.say(
                    "queue timeout",
                    &format!(
                        "{count} call(s) waited {secs} s for a process of pool '{last}' (--queue-timeout) and failed"
                    ),
                    None,
                );
            }
        }
        if self.calls.throttle.next_flush().is_some_and(|d| d <= now) {
            for (kind, held) in self.calls.throttle.flush(now) {
                log::warn(&format!(
                    "{held} more '{kind}' event(s) in the last {} s",
                    queue::LOG_EVERY.as_secs()
                ));
            }
        }
    }
}

impl Calls {
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
