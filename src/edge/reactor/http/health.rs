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
use std::time::Instant;

use mio::Token;

use super::Conn;
use crate::edge::reactor::pools::PoolStatus;
use crate::edge::reactor::Reactor;
use crate::protocol::http::{Headers, Request};
use crate::protocol::mcp;

/// The health check's path.
pub(super) const PATH: &str = "/health";

/// One pool's primary process as `/health` and `/metrics` report it.
pub(super) struct PoolRow<'a> {
    pub(super) program: &'a str,
    pub(super) lang: &'a str,
    pub(super) state: &'static str,
    pub(super) replicas: usize,
}

impl Reactor {
    /// The `/health` endpoint (`GET` or `HEAD`; no checks, no CORS).
    pub(super) fn http_health(&mut self, token: Token, req: Request, _: Headers) {
        let keep_alive = req.keep_alive;
        let (ready, body) = self.health();
        let headers = vec![("Cache-Control".to_string(), "no-store".to_string())];
        let status = if ready { 200 } else { 503 };
        self.respond(token, status, &headers, &body, keep_alive);
    }

    /// Each served pool's primary process: its program, language, state
    /// (`idle`, `starting`, `ready` or `down`) and ready replicas. Shared by
    /// `/health` and `/metrics`.
    pub(super) fn pool_rows(&self) -> Vec<PoolRow<'_>> {
        let mut rows = Vec::new();
        for program in 0..self.pools.len() {
            let Some(primaries) = self.pools.primaries(program) else {
                continue;
            };
            let name = self
                .catalog
                .programs
                .get(program)
                .map_or("", |p| p.loaded.manifest.name.as_str());
            for (lang, status, replicas) in primaries {
                let state = match status {
                    PoolStatus::Idle if self.pools.pending().is_some() => "starting",
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

    /// Whether the server is ready, and the body of `/health`.
    fn health(&self) -> (bool, Vec<u8>) {
        let Some(front) = self.http.as_ref() else {
            return (false, Vec::new());
        };
        let mut all_ready = self.pools.pending().is_none();
        let mut pools = Vec::new();
        for row in self.pool_rows() {
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
        let status = if front.draining() {
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
            "uptimeSeconds": front.started.elapsed().as_secs(),
            "callsInFlight": self.calls.values().filter(|c| !c.abandoned).count(),
            "pools": pools,
        });
        (
            status == "ready",
            serde_json::to_vec(&body).unwrap_or_default(),
        )
    }

    /// Starts the graceful drain; see the module docs.
    pub(in crate::edge::reactor) fn start_drain(&mut self) {
        let Some(front) = self.http.as_mut() else {
            return;
        };
        if let Some(mut listener) = front.listener.take() {
            let _ = self.poll.registry().deregister(&mut listener);
        }
        let deadline = Instant::now() + self.options.drain_timeout;
        front.draining = Some(deadline);
        log::info(&format!(
            "SIGTERM: draining (no new connections; {} call(s) in flight get up to {:.1} s)",
            self.calls.values().filter(|c| !c.abandoned).count(),
            self.options.drain_timeout.as_secs_f64()
        ));
        for listener in self.listeners.remove_where(|_| true) {
            let reply = mcp::subscriptions::closing_response(&self.catalog, &listener.id);
            self.deliver(&listener.client, &reply, true);
        }
    }

    /// During a drain: whether the server may exit now (nothing in flight,
    /// every response written, or the deadline passed).
    pub(in crate::edge::reactor) fn drained(&self, now: Instant) -> bool {
        let Some(front) = self.http.as_ref() else {
            return false;
        };
        let Some(deadline) = front.draining else {
            return false;
        };
        if now >= deadline {
            return true;
        }
        let written = front.conns.values().all(Conn::is_quiet);
        // Work whose client cancelled it holds nothing up.
        self.calls.values().all(|c| c.abandoned) && written
    }
}
