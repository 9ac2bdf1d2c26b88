//! The `/metrics` endpoint: the Prometheus text exposition of the calls that
//! ended (counted by `calls::Calls`) and of gauges read off the server's
//! state at the scrape. Behind the same checks as `/mcp` (Host, Origin, the
//! bearer token), except that with `--metrics-token` it takes that token
//! instead of the MCP one, so a scraper holds no right to call tools.

use super::health::PoolRow;
use super::HttpFront;
use crate::edge::reactor::calls::Calls;
use crate::protocol::http::{Answer, Gate, Headers};
use crate::protocol::mcp::tasks::Tasks;
use crate::protocol::metrics::{self, Gauge};

/// The endpoint's path.
pub(super) const PATH: &str = "/metrics";

/// The exposition format's content type.
pub(super) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

impl HttpFront {
    /// Sets `--metrics-token`.
    pub(in crate::edge::reactor) fn with_metrics_token(mut self, token: Option<String>) -> Self {
        self.checks.metrics_token = token;
        self
    }

    /// Whether `path` is guarded by a token of its own (`--metrics-token`
    /// for `/metrics`), so OAuth does not judge its requests.
    pub(super) fn own_gate(&self, path: &str) -> bool {
        self.checks.metrics_token.is_some() && path == PATH
    }

    /// The checks of a request for `path`: `/metrics` takes the metrics
    /// token when there is one, everything else the MCP one.
    pub(super) fn gate_for(&self, path: &str) -> Gate<'_> {
        match &self.checks.metrics_token {
            Some(token) if path == PATH => Gate {
                policy: &self.checks.policy,
                token: Some(token),
            },
            _ => self.gate(),
        }
    }
}

impl HttpFront {
    /// The answer to `GET /metrics` (checks passed; its body is of
    /// [`CONTENT_TYPE`]): the ended `calls` and the gauges read off `calls`,
    /// `tasks`, the pools' `rows` and this front.
    pub(super) fn metrics(
        &self,
        calls: &Calls,
        tasks: &Tasks,
        rows: Vec<PoolRow<'_>>,
        mut headers: Headers,
        keep_alive: bool,
    ) -> Answer {
        let body = metrics::render(calls.metrics(), &self.gauges(calls, tasks, rows));
        headers.push(("Cache-Control".to_string(), "no-store".to_string()));
        Answer {
            status: 200,
            headers,
            body: body.into_bytes(),
            keep_alive,
        }
    }

    fn gauges(&self, calls: &Calls, tasks: &Tasks, rows: Vec<PoolRow<'_>>) -> Vec<Gauge> {
        let one = |name: &'static str, help: &'static str, value: usize| Gauge {
            name,
            help,
            values: vec![(Vec::new(), value as f64)],
        };
        let mut gauges = vec![
            one(
                "mcp_server_calls_in_flight",
                "Tool calls in flight: waiting for a pool process, being prepared or running.",
                calls.len(),
            ),
            one(
                "mcp_server_calls_queued",
                "Tool calls waiting for a pool process.",
                calls.queued(),
            ),
            one(
                "mcp_server_tasks",
                "Tasks held (working or settled, not yet expired).",
                tasks.len(),
            ),
            one(
                "mcp_server_result_bytes",
                "Bytes of stored big results and finished tasks' results held (all owners).",
                tasks.bytes(),
            ),
            one(
                "mcp_server_owner_result_bytes_max",
                "The most bytes of stored big results and finished tasks' results any one owner holds.",
                tasks.most_owner_bytes(),
            ),
            one(
                "mcp_server_owner_result_bytes_cap",
                "The cap on the bytes of stored big results and finished tasks' results of one owner (--max-owner-bytes).",
                tasks.results.owner_bytes_cap(),
            ),
        ];
        gauges.push(one(
            "mcp_server_http_connections",
            "Open HTTP connections.",
            self.conns.len(),
        ));
        gauges.push(one(
            "mcp_server_http_sessions",
            "Legacy HTTP sessions held.",
            self.sessions.len(),
        ));
        gauges.push(one(
            "mcp_server_buffered_bytes",
            "Bytes buffered across HTTP connections and calls being prepared, counted against --max-buffered.",
            self.budget.used(),
        ));
        let pressure = self.peers.pressure();
        gauges.push(one(
            "mcp_server_http_unread_bytes",
            "Answer bytes queued on HTTP connections, not yet taken by their clients.",
            pressure.unread,
        ));
        gauges.push(one(
            "mcp_server_http_unread_bytes_peer_max",
            "The most answer bytes queued unread on the connections of one address (bound: --max-unread-per-peer).",
            pressure.unread_peer_max,
        ));
        gauges.push(one(
            "mcp_server_http_connections_paused",
            "HTTP connections not read because their client (or its address) is past its bound of unread answers.",
            pressure.paused,
        ));
        gauges.push(one(
            "mcp_server_http_pauses_total",
            "Times an HTTP connection was paused for backpressure.",
            pressure.pauses as usize,
        ));
        gauges.push(one(
            "mcp_server_http_notifications_dropped_total",
            "Notifications not queued on an event stream whose client was past its bound of unread answers.",
            pressure.dropped as usize,
        ));
        let mut pools = Gauge {
            name: "mcp_server_pool_processes",
            help: "Pool processes by program, language and state (a primary's state; its ready replicas as state=\"replica\").",
            values: Vec::new(),
        };
        for row in rows {
            let labels = |state: &str| {
                vec![
                    ("program", row.program.to_string()),
                    ("language", row.lang.to_string()),
                    ("state", state.to_string()),
                ]
            };
            pools.values.push((labels(row.state), 1.0));
            pools.values.push((labels("replica"), row.replicas as f64));
        }
        gauges.push(pools);
        gauges
    }
}
