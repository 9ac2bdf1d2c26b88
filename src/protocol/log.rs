//! Log records and their two line formats: `text` (what this server always
//! printed: `morloc-mcp: <message>`, then `key=value` fields) and `json`
//! (one object per line: `ts`, `level`, `msg`, then the fields, for a
//! collector that tails stderr). Also the access record of a request and
//! how a JSON-RPC reply reads as an outcome.
//!
//! Pure: the caller gives the time and writes the line.

use std::fmt::Write;

use serde_json::Value as Json;

use crate::format::json;

/// A record's severity, most severe first; a threshold shows its level and
/// those before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error,
    Warn,
    Info,
    Debug,
}

impl Level {
    /// The names `--log-level` takes, in order.
    pub const NAMES: [&'static str; 4] = ["error", "warn", "info", "debug"];

    pub fn parse(text: &str) -> Option<Level> {
        match text {
            "error" => Some(Level::Error),
            "warn" => Some(Level::Warn),
            "info" => Some(Level::Info),
            "debug" => Some(Level::Debug),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        Level::NAMES[self as usize]
    }
}

/// The line format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

impl Format {
    pub fn parse(text: &str) -> Option<Format> {
        match text {
            "text" => Some(Format::Text),
            "json" => Some(Format::Json),
            _ => None,
        }
    }
}

/// A field's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    Str(&'a str),
    Int(i64),
    /// Milliseconds, printed with microsecond precision.
    Ms(f64),
}

/// One record. `prefixed`: the text line starts `morloc-mcp: ` (false for
/// lines that carry their own label, like a pool's output).
#[derive(Clone, Copy, Debug)]
pub struct Record<'a> {
    pub level: Level,
    pub msg: &'a str,
    pub fields: &'a [(&'a str, Value<'a>)],
    pub prefixed: bool,
}

/// The record as one line, newline included. `unix_micros` is the time of
/// the record (the json format's `ts`, RFC 3339 in UTC).
pub fn render(format: Format, record: &Record<'_>, unix_micros: u64) -> String {
    let mut out = String::with_capacity(96 + record.msg.len() + 24 * record.fields.len());
    match format {
        Format::Text => {
            if record.prefixed {
                out.push_str("morloc-mcp: ");
            }
            out.push_str(record.msg);
            for (key, value) in record.fields {
                out.push(' ');
                out.push_str(key);
                out.push('=');
                match value {
                    Value::Str(s) => text_value(&mut out, s),
                    Value::Int(n) => {
                        let _ = write!(out, "{n}");
                    }
                    Value::Ms(ms) => {
                        let _ = write!(out, "{ms:.3}");
                    }
                }
            }
        }
        Format::Json => {
            out.push_str("{\"ts\":\"");
            timestamp(&mut out, unix_micros);
            out.push_str("\",\"level\":\"");
            out.push_str(record.level.name());
            out.push_str("\",\"msg\":");
            json::write_str(&mut out, record.msg);
            for (key, value) in record.fields {
                out.push(',');
                json::write_str(&mut out, key);
                out.push(':');
                match value {
                    Value::Str(s) => json::write_str(&mut out, s),
                    Value::Int(n) => {
                        let _ = write!(out, "{n}");
                    }
                    Value::Ms(ms) if ms.is_finite() => {
                        let _ = write!(out, "{ms:.3}");
                    }
                    Value::Ms(_) => out.push_str("null"),
                }
            }
            out.push('}');
        }
    }
    out.push('\n');
    out
}

/// A text field's value: bare when it is a plain word, else quoted with
/// `"` and `\` escaped and control characters spelled out, so a value
/// can never split or forge a line.
fn text_value(out: &mut String, s: &str) {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_graphic() && c != '"' && c != '=' && c != '\\');
    if plain {
        out.push_str(s);
    } else {
        json::write_str(out, s);
    }
}

/// `YYYY-MM-DDTHH:MM:SS.ffffffZ` for microseconds since the Unix epoch.
pub fn timestamp(out: &mut String, unix_micros: u64) {
    let secs = unix_micros / 1_000_000;
    let micros = unix_micros % 1_000_000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    let _ = write!(
        out,
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{micros:06}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    );
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (the
/// well-known era-based conversion: 400-year eras of 146097 days).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// How a JSON-RPC reply reads in an access line: `ok`, `tool_error` (a
/// result with `isError`), `task` (a call answered with a task handle), or
/// `error` (a JSON-RPC error; its code is [`error_code`]).
pub fn outcome_of(reply: &Json) -> &'static str {
    if reply.get("error").is_some() {
        return "error";
    }
    let result = reply.get("result");
    if result.and_then(|r| r.get("isError")) == Some(&Json::Bool(true)) {
        "tool_error"
    } else if result.and_then(|r| r.get("task")).is_some() {
        "task"
    } else {
        "ok"
    }
}

/// A JSON-RPC error reply's code.
pub fn error_code(reply: &Json) -> Option<i64> {
    reply.get("error")?.get("code")?.as_i64()
}

/// What an access line says about one request, in its field order: the
/// HTTP exchange (when there is one), the JSON-RPC method and tool, the
/// outcome, the duration, the owner, then the span.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Access<'a> {
    pub http_method: Option<&'a str>,
    pub path: Option<&'a str>,
    pub status: Option<u16>,
    pub rpc_method: Option<&'a str>,
    pub tool: Option<&'a str>,
    pub outcome: &'a str,
    pub error_code: Option<i64>,
    pub duration_ms: f64,
    pub owner: &'a str,
    pub trace_id: &'a str,
    pub span_id: &'a str,
    pub parent_span_id: Option<&'a str>,
    pub tracestate: Option<&'a str>,
    /// The span's start, RFC 3339 (json only: a text reader has the
    /// duration).
    pub start: Option<&'a str>,
}

impl<'a> Access<'a> {
    /// The fields, in their fixed order; absent ones are left out.
    pub fn fields(&self) -> Vec<(&'static str, Value<'a>)> {
        let mut f = Vec::with_capacity(14);
        let mut opt = |key: &'static str, v: Option<Value<'a>>| {
            if let Some(v) = v {
                f.push((key, v));
            }
        };
        opt("http_method", self.http_method.map(Value::Str));
        opt("path", self.path.map(Value::Str));
        opt("status", self.status.map(|s| Value::Int(i64::from(s))));
        opt("method", self.rpc_method.map(Value::Str));
        opt("tool", self.tool.map(Value::Str));
        opt("outcome", Some(Value::Str(self.outcome)));
        opt("error_code", self.error_code.map(Value::Int));
        opt("duration_ms", Some(Value::Ms(self.duration_ms)));
        opt("owner", Some(Value::Str(self.owner)));
        opt("trace_id", Some(Value::Str(self.trace_id)));
        opt("span_id", Some(Value::Str(self.span_id)));
        opt("parent_span_id", self.parent_span_id.map(Value::Str));
        opt("tracestate", self.tracestate.map(Value::Str));
        opt("start", self.start.map(Value::Str));
        f
    }
}

#[cfg(test)]
mod tests;
