//! Metrics in the Prometheus text exposition format (version 0.0.4): the
//! counters and the duration histogram of tool calls, kept as calls end, and
//! the gauges the server reads off its state when scraped.
//!
//! Names follow the OpenTelemetry MCP semantic conventions where they exist,
//! spelled the Prometheus way: the histogram
//! `mcp.server.operation.duration` (seconds) is
//! `mcp_server_operation_duration_seconds`, with the labels
//! `mcp_method_name`, `gen_ai_tool_name` and `error_type`.
//!
//! Pure: the caller measures durations and writes the text out.

use std::collections::BTreeMap;
use std::fmt::Write;

/// Upper bounds (seconds) of the duration histogram's buckets.
pub const BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];

/// How a tool call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// A result.
    Ok,
    /// An `isError` result: refused arguments, or the function failed.
    ToolError,
    /// The call failed: its pool died, it timed out, it waited too long.
    Failed,
    /// Its client cancelled it.
    Cancelled,
}

impl Outcome {
    /// The `error_type` label (empty for a result).
    pub fn error_type(self) -> &'static str {
        match self {
            Outcome::Ok => "",
            Outcome::ToolError => "tool_error",
            Outcome::Failed => "call_failed",
            Outcome::Cancelled => "cancelled",
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
struct Series {
    count: u64,
    sum: f64,
    /// Calls at or under each bound of [`BUCKETS`] (not cumulative here).
    buckets: [u64; BUCKETS.len()],
}

/// Tool calls by tool and outcome: counts and durations.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallMetrics {
    /// By tool, then outcome: a call that ends allocates nothing once its
    /// tool has been seen.
    series: BTreeMap<String, BTreeMap<Outcome, Series>>,
}

impl CallMetrics {
    /// Counts one call of `tool` that ended with `outcome` after `seconds`.
    pub fn record(&mut self, tool: &str, outcome: Outcome, seconds: f64) {
        if !self.series.contains_key(tool) {
            self.series.insert(tool.to_string(), BTreeMap::new());
        }
        let Some(by_outcome) = self.series.get_mut(tool) else {
            return;
        };
        let series = by_outcome.entry(outcome).or_default();
        series.count += 1;
        series.sum += seconds;
        if let Some(i) = BUCKETS.iter().position(|&bound| seconds <= bound) {
            series.buckets[i] += 1;
        }
    }

    /// Every series, by tool and then outcome.
    fn each(&self) -> impl Iterator<Item = (&String, &Outcome, &Series)> {
        self.series
            .iter()
            .flat_map(|(tool, by)| by.iter().map(move |(outcome, s)| (tool, outcome, s)))
    }

    /// How many calls of `tool` ended with `outcome`.
    pub fn count(&self, tool: &str, outcome: Outcome) -> u64 {
        self.series
            .get(tool)
            .and_then(|by_outcome| by_outcome.get(&outcome))
            .map_or(0, |s| s.count)
    }
}

/// One gauge read off the server's state (a counter when its name ends in
/// `_total`): its name, help text, and a value
/// per label set (label name and value pairs).
pub struct Gauge {
    pub name: &'static str,
    pub help: &'static str,
    pub values: Vec<(Vec<(&'static str, String)>, f64)>,
}

/// A label value escaped for the exposition format.
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn labels(out: &mut String, pairs: &[(&str, &str)]) {
    if pairs.is_empty() {
        return;
    }
    out.push('{');
    for (i, (name, value)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{name}=\"{}\"", escape(value));
    }
    out.push('}');
}

/// A float as the exposition format spells it.
fn number(value: f64) -> String {
    if value.is_infinite() {
        if value > 0.0 { "+Inf" } else { "-Inf" }.to_string()
    } else if value.is_nan() {
        "NaN".to_string()
    } else {
        crate::format::decimal::shortest(value)
    }
}

/// The whole exposition: the call counters and histogram, then `gauges`.
pub fn render(calls: &CallMetrics, gauges: &[Gauge]) -> String {
    let mut out = String::new();
    out.push_str(
        "# HELP mcp_server_tool_calls_total Tool calls that ended, by tool and outcome.\n",
    );
    out.push_str("# TYPE mcp_server_tool_calls_total counter\n");
    for (tool, outcome, series) in calls.each() {
        out.push_str("mcp_server_tool_calls_total");
        let outcome_label = match outcome {
            Outcome::Ok => "ok",
            other => other.error_type(),
        };
        labels(
            &mut out,
            &[("gen_ai_tool_name", tool), ("outcome", outcome_label)],
        );
        let _ = writeln!(out, " {}", series.count);
    }
    out.push_str("# HELP mcp_server_operation_duration_seconds Duration of tools/call operations, from the request to the response.\n");
    out.push_str("# TYPE mcp_server_operation_duration_seconds histogram\n");
    for (tool, outcome, series) in calls.each() {
        let base = [
            ("mcp_method_name", "tools/call"),
            ("gen_ai_tool_name", tool.as_str()),
            ("error_type", outcome.error_type()),
        ];
        let mut cumulative = 0;
        for (bound, n) in BUCKETS.iter().zip(series.buckets) {
            cumulative += n;
            out.push_str("mcp_server_operation_duration_seconds_bucket");
            let le = number(*bound);
            let mut with_le = base.to_vec();
            with_le.push(("le", &le));
            labels(&mut out, &with_le);
            let _ = writeln!(out, " {cumulative}");
        }
        out.push_str("mcp_server_operation_duration_seconds_bucket");
        let mut with_le = base.to_vec();
        with_le.push(("le", "+Inf"));
        labels(&mut out, &with_le);
        let _ = writeln!(out, " {}", series.count);
        out.push_str("mcp_server_operation_duration_seconds_sum");
        labels(&mut out, &base);
        let _ = writeln!(out, " {}", number(series.sum));
        out.push_str("mcp_server_operation_duration_seconds_count");
        labels(&mut out, &base);
        let _ = writeln!(out, " {}", series.count);
    }
    for gauge in gauges {
        let _ = writeln!(out, "# HELP {} {}", gauge.name, gauge.help);
        // A count that only grows is a counter, by its name.
        let kind = if gauge.name.ends_with("_total") {
            "counter"
        } else {
            "gauge"
        };
        let _ = writeln!(out, "# TYPE {} {kind}", gauge.name);
        for (pairs, value) in &gauge.values {
            out.push_str(gauge.name);
            let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
            labels(&mut out, &pairs);
            let _ = writeln!(out, " {}", number(*value));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_counted_and_bucketed_cumulatively() {
        let mut m = CallMetrics::default();
        m.record("addOne", Outcome::Ok, 0.004);
        m.record("addOne", Outcome::Ok, 0.2);
        m.record("pyFail", Outcome::ToolError, 0.01);
        assert_eq!(m.count("addOne", Outcome::Ok), 2);
        assert_eq!(m.count("addOne", Outcome::Failed), 0);
        let text = render(&m, &[]);
        assert!(
            text.contains(
                "mcp_server_tool_calls_total{gen_ai_tool_name=\"addOne\",outcome=\"ok\"} 2\n"
            ),
            "{text}"
        );
        assert!(text.contains("mcp_server_tool_calls_total{gen_ai_tool_name=\"pyFail\",outcome=\"tool_error\"} 1\n"), "{text}");
        let bucket = |le: &str| {
            format!("mcp_server_operation_duration_seconds_bucket{{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"addOne\",error_type=\"\",le=\"{le}\"}}")
        };
        assert!(text.contains(&format!("{} 1\n", bucket("0.005"))), "{text}");
        assert!(text.contains(&format!("{} 1\n", bucket("0.1"))), "{text}");
        assert!(text.contains(&format!("{} 2\n", bucket("0.25"))), "{text}");
        assert!(text.contains(&format!("{} 2\n", bucket("+Inf"))), "{text}");
        assert!(text.contains("mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"addOne\",error_type=\"\"} 2\n"), "{text}");
    }

    #[test]
    fn gauges_and_label_values_are_escaped() {
        let gauge = Gauge {
            name: "mcp_server_pool_processes",
            help: "Pool processes by state.",
            values: vec![(vec![("program", "a\"b\\c\nd".to_string())], 3.0)],
        };
        let text = render(&CallMetrics::default(), &[gauge]);
        assert!(
            text.contains("# TYPE mcp_server_pool_processes gauge\n"),
            "{text}"
        );
        assert!(
            text.contains("mcp_server_pool_processes{program=\"a\\\"b\\\\c\\nd\"} 3\n"),
            "{text}"
        );
    }
}
