//! Serving behind a load balancer: `GET /health` and the graceful drain.
//!
//! `/health` answers `200` with a small JSON body when every pool of every
//! served program is ready (or, with `--lazy-pools`, not started yet: it
//! starts on the first call), and `503` with the same body while the server
//! starts, while a pool starts or restarts, while one is down, and while the
//! server drains. It asks for no token and checks neither `Origin` nor
//! `Host`; the body holds the overall status, the uptime, the number of calls
//! in flight and each manifest pool's program, language, state and number of
//! ready replicas, nothing else. Replicas come and go with demand, so only
//! the primary process of each pool decides readiness.
//!
//! A drain (SIGTERM while serving HTTP) closes the listener, so new
//! connections are refused and the balancer sends them elsewhere; it ends the
//! open `subscriptions/listen` streams with their closing result (clients
//! reopen them at another instance). Requests still arriving on connections
//! already open are answered, each with `Connection: close` (so `/health`
//! tells a balancer holding a keep-alive connection that this instance is
//! going). The server exits with status 0 once no call is in
//! flight and every response has been written, or at the drain deadline.

use crate::edge::log;
use std::time::{Duration, Instant};

use mio::Registry;

use super::{Conn, HttpFront};
use crate::edge::reactor::pools::{PoolSet, PoolStatus};
use crate::edge::reactor::Reactor;
use crate::protocol::http::Answer;
use crate::protocol::mcp::{self, Catalog};

/// The health check's path.
pub(super) const PATH: &str = "/health";

/// One pool's primary process as `/health` and `/metrics` report it.
pub(super) struct PoolRow<'a> {
    pub(super) program: &'a str,
    pub(super) lang: &'a str,
    pub(super) state: &'static str,
    pub(super) replicas: usize,
}

/// Each served pool's primary process: its program, language, state
/// (`idle`, `starting`, `ready` or `down`) and ready replicas. Shared by
/// `/health` and `/metrics`.
pub(super) fn pool_rows<'a>(pools: &'a PoolSet, catalog: &'a Catalog) -> Vec<PoolRow<'a>> {
    let mut rows = Vec::new();
    for program in 0..pools.len() {
        let Some(primaries) = pools.primaries(program) else {
            continue;
        };
        let name = catalog
            .programs
            .get(program)
            .map_or("", |p| p.loaded.manifest.name.as_str());
        for (lang, status, replicas) in primaries {
            let state = match status {
                PoolStatus::Idle if pools.pending().is_some() => "starting",
                PoolStatus::Idle => "idle",
                PoolStatus::Starting => "starting",
                PoolStatus::Ready => "ready",
                PoolStatus::Failed { .. } => "down",
            };
            rows.push(PoolRow {
                program: name,
                lang,
                state,
                replicas,
            });
        }
    }
    rows
}

/// When serving began and when its drain must end.
pub(super) struct Life {
    /// The uptime `/health` reports counts from here.
    since: Instant,
    /// Set by SIGTERM: the latest time to exit.
    draining: Option<Instant>,
}

impl Life {
    pub(super) fn new() -> Life {
        Life {
            since: Instant::now(),
            draining: None,
        }
    }

    /// The drain's deadline, once one has begun.
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.draining
    }
}

impl HttpFront {
    /// The answer to `GET` or `HEAD /health` (no checks, no CORS): `rows`
    /// are the pools' primaries, `starting` whether a program is still
    /// starting, `in_flight` the calls running.
    pub(super) fn health(
        &self,
        rows: Vec<PoolRow<'_>>,
        starting: bool,
        in_flight: usize,
        keep_alive: bool,
    ) -> Answer {
        let mut all_ready = !starting;
        let mut pools = Vec::new();
        for row in rows {
            all_ready &= matches!(row.state, "idle" | "ready");
            // Replicas start and stop with demand; they are counted, but
            // only the primary decides readiness.
            pools.push(serde_json::json!({
                "program": row.program,
                "language": row.lang,
                "state": row.state,
                "replicas": row.replicas,
            }));
        }
        let status = if self.draining() {
            "draining"
        } else if all_ready {
            "ready"
        } else if pools.iter().any(|p| p["state"] == "down") {
            "down"
        } else {
            "starting"
        };
        let body = serde_json::json!({
            "status": status,
            "uptimeSeconds": self.life.since.elapsed().as_secs(),
            "callsInFlight": in_flight,
            "pools": pools,
        });
        Answer {
            status: if status == "ready" { 200 } else { 503 },
            headers: vec![("Cache-Control".to_string(), "no-store".to_string())],
            body: serde_json::to_vec(&body).unwrap_or_default(),
            keep_alive,
        }
    }

    /// Starts the drain on the front's side: the listener closes and the
    /// deadline is set (`in_flight` is for the log line).
    fn close_for_drain(&mut self, registry: &Registry, timeout: Duration, in_flight: usize) {
        if let Some(mut listener) = self.listener.take() {
            let _ = registry.deregister(&mut listener);
        }
        self.life.draining = Some(Instant::now() + timeout);
        log::info(&format!(
            "SIGTERM: draining (no new connections; {in_flight} call(s) in flight get up to {} s)",
            crate::format::decimal::fixed(timeout.as_secs_f64(), 1)
        ));
    }

    /// During a drain: whether the server may exit now (`idle`: no call in
    /// flight; and every response written), or the deadline passed.
    pub(in crate::edge::reactor) fn drained(&self, now: Instant, idle: bool) -> bool {
        let Some(deadline) = self.life.draining else {
            return false;
        };
        now >= deadline || (idle && self.conns.values().all(Conn::is_quiet))
    }
}

impl Reactor {
    /// Starts the graceful drain; see the module docs.
    pub(in crate::edge::reactor) fn start_drain(&mut self) {
        let in_flight = self.calls.live();
        let Some(front) = self.http.as_mut() else {
            return;
        };
        front.close_for_drain(self.poll.registry(), self.options.drain_timeout, in_flight);
        for listener in self.listeners.remove_where(|_| true) {
            let reply = mcp::subscriptions::closing_response(&self.catalog, &listener.id);
            self.deliver(&listener.client, &reply, true);
        }
    }
}
