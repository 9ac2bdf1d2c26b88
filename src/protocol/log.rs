//! Log records and their two line formats: `text` (what this server always
//! printed: `morloc-mcp: <message>`, then `key=value` fields) and `json`
//! (one object per line: `ts`, `level`, `msg`, then the fields, for a
//! collector that tails stderr). Also the access record of a request and
//! how a JSON-RPC reply reads as an outcome.
//!
//! Pure: the caller gives the time and writes the line.

use serde_json::Value as Json;

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

/// A string that came from outside the server (a peer, a token, a key
/// server, a manifest, a tools file, a file on disk), to be put in a
/// message: it displays quoted, with `"`, `\` and every control character
/// escaped (C0, DEL and C1), so it can neither split or forge a line nor
/// reach a terminal as an escape sequence. Messages name such strings
/// through this type; the renderer escapes control characters in any
/// message too, as a second guard.
#[derive(Clone, Copy, Debug)]
pub struct Untrusted<'a>(pub &'a str);

impl std::fmt::Display for Untrusted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = String::with_capacity(self.0.len() + 2);
        quote(&mut out, self.0);
        f.write_str(&out)
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
    render_into(&mut out, format, record, unix_micros);
    out
}

/// [`render`], appended to `out`.
pub fn render_into(out: &mut String, format: Format, record: &Record<'_>, unix_micros: u64) {
    match format {
        Format::Text => {
            if record.prefixed {
                out.push_str(PREFIX);
            }
            push_message(out, record.msg);
            for (key, value) in record.fields {
                out.push(' ');
                out.push_str(key);
                out.push('=');
                match value {
                    Value::Str(s) => text_value(out, s),
                    Value::Int(n) => push_int(out, *n),
                    Value::Ms(ms) if ms.is_finite() => push_ms(out, *ms),
                    Value::Ms(_) => out.push_str("NaN"),
                }
            }
        }
        Format::Json => {
            out.push_str("{\"ts\":\"");
            timestamp(out, unix_micros);
            out.push_str("\",\"level\":\"");
            out.push_str(record.level.name());
            out.push_str("\",\"msg\":");
            json_str(out, unlabelled(record));
            for (key, value) in record.fields {
                out.push(',');
                json_str(out, key);
                out.push(':');
                match value {
                    Value::Str(s) => json_str(out, s),
                    Value::Int(n) => push_int(out, *n),
                    Value::Ms(ms) if ms.is_finite() => push_ms(out, *ms),
                    Value::Ms(_) => out.push_str("null"),
                }
            }
            out.push('}');
        }
    }
    out.push('\n');
}

/// What a text line starts with (and what a json `msg` leaves out).
const PREFIX: &str = "morloc-mcp: ";

/// The labels a line may carry itself: ours, and the reference's spelling
/// (kept in the tool exclusion notes, which match its wording).
const LABELS: [&str; 2] = [PREFIX, "morloc mcp: "];

/// A record's message without the label it carries (json has the level and
/// needs no label; repeating it in `msg` is noise).
fn unlabelled<'a>(record: &Record<'a>) -> &'a str {
    if !record.prefixed {
        for label in LABELS {
            if let Some(rest) = record.msg.strip_prefix(label) {
                return rest;
            }
        }
    }
    record.msg
}

/// A JSON string literal: copied whole when nothing in it needs escaping
/// (the common case, and several times cheaper), else escaped.
fn json_str(out: &mut String, s: &str) {
    if !needs_escape(s.as_bytes()) {
        out.reserve(s.len() + 2);
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        quote(out, s);
    }
}

/// `s` as a JSON string literal in which every control character is
/// escaped: those JSON requires (C0), and DEL and C1 too (`\u009b` is a
/// terminal's CSI).
fn quote(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    escape_into(out, s, true);
    out.push('"');
}

/// Copies `s` with its control characters escaped (`\n`, `\u001b`), and
/// with `quoted`, `"` and `\\` too (inside a JSON string); a tab stays a
/// tab outside one.
fn escape_into(out: &mut String, s: &str, quoted: bool) {
    // Nothing to escape (the common case): copied whole.
    if quoted && !needs_escape(s.as_bytes()) {
        out.push_str(s);
        return;
    }
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let escape = match c {
            '"' | '\\' if quoted => true,
            '\t' => quoted,
            _ => c.is_control(),
        };
        if !escape {
            continue;
        }
        out.push_str(&s[start..i]);
        start = i + c.len_utf8();
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                let n = c as u32;
                out.push_str("\\u00");
                out.push(char::from(HEX[(n >> 4) as usize & 0xf]));
                out.push(char::from(HEX[n as usize & 0xf]));
            }
        }
    }
    out.push_str(&s[start..]);
}

/// A text line's message: as written, but for control characters, which
/// are escaped (a message that interpolated an outside string by mistake
/// still cannot split the line or drive the terminal).
fn push_message(out: &mut String, msg: &str) {
    if msg
        .bytes()
        .any(|b| b < 0x20 && b != b'\t' || b == 0x7f || b == 0xc2)
    {
        escape_into(out, msg, false);
    } else {
        out.push_str(msg);
    }
}

/// Whether any byte needs escaping, eight bytes at a time: a word has a
/// byte under 0x20, or equal to `"`, `\`, DEL or 0xc2 (the lead byte of
/// C1 controls), when the classic "has a zero byte" test fires on it (or
/// on it xor the byte repeated).
fn needs_escape(bytes: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let below = |v: u64, n: u64| v.wrapping_sub(ONES * n) & !v & HIGHS != 0;
    let has = |v: u64, b: u64| below(v ^ (ONES * b), 1);
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let v = u64::from_le_bytes(word);
        if below(v, 0x20) || has(v, 0x22) || has(v, 0x5c) || has(v, 0x7f) || has(v, 0xc2) {
            return true;
        }
    }
    chunks.remainder().iter().any(|&b| ESCAPED[b as usize])
}

/// The bytes that send a string to [`quote`]: controls, `"`, `\`, DEL,
/// and the lead byte of C1 controls (U+0080 to U+009F; also of other
/// characters up to U+00BF, which are then copied as they are).
const ESCAPED: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = true;
        b += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table[0x7f] = true;
    table[0xc2] = true;
    table
};

/// A decimal integer, without the formatting machinery.
fn push_int(out: &mut String, n: i64) {
    if n < 0 {
        out.push('-');
    }
    push_uint(out, n.unsigned_abs(), 1);
}

/// `n` in decimal, zero-padded to at least `width` digits.
fn push_uint(out: &mut String, mut n: u64, width: usize) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    while n > 0 || digits.len() - i < width {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
    }
    for &d in &digits[i..] {
        out.push(char::from(d));
    }
}

/// Milliseconds with three decimals (microseconds), rounded.
fn push_ms(out: &mut String, ms: f64) {
    if ms < 0.0 {
        out.push('-');
    }
    let micros = (ms.abs() * 1000.0).round() as u64;
    push_uint(out, micros / 1000, 1);
    out.push('.');
    push_uint(out, micros % 1000, 3);
}

/// A text field's value: bare when it is a plain word, else quoted with
/// `"` and `\` escaped and control characters spelled out, so a value
/// can never split or forge a line.
fn text_value(out: &mut String, s: &str) {
    // Byte by byte: any byte of a character past ASCII is not graphic.
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'=' && b != b'\\');
    if plain {
        out.push_str(s);
    } else {
        quote(out, s);
    }
}

/// `YYYY-MM-DDTHH:MM:SS.ffffffZ` for microseconds since the Unix epoch.
pub fn timestamp(out: &mut String, unix_micros: u64) {
    let secs = unix_micros / 1_000_000;
    let micros = unix_micros % 1_000_000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    let mut text = *b"0000-00-00T00:00:00.000000Z";
    let mut put = |at: usize, width: usize, mut n: u64| {
        for i in (at..at + width).rev() {
            text[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
    };
    put(0, 4, y.clamp(0, 9999) as u64);
    put(5, 2, u64::from(m));
    put(8, 2, u64::from(d));
    put(11, 2, rem / 3600);
    put(14, 2, rem / 60 % 60);
    put(17, 2, rem % 60);
    put(20, 6, micros);
    out.push_str(std::str::from_utf8(&text).unwrap_or(""));
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
/// result with `isError`), `task` (a call answered with a task handle,
/// `resultType: "task"`), or
/// `error` (a JSON-RPC error; its code is [`error_code`]).
pub fn outcome_of(reply: &Json) -> &'static str {
    outcome_and_code(reply).0
}

/// [`outcome_of`] and [`error_code`] in one look at the reply.
pub fn outcome_and_code(reply: &Json) -> (&'static str, Option<i64>) {
    if let Some(error) = reply.get("error") {
        return ("error", error.get("code").and_then(Json::as_i64));
    }
    let Some(result) = reply.get("result") else {
        return ("ok", None);
    };
    let outcome = if result.get("isError") == Some(&Json::Bool(true)) {
        "tool_error"
    } else if result.get("resultType").and_then(Json::as_str) == Some("task") {
        "task"
    } else {
        "ok"
    };
    (outcome, None)
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
