//! Both line formats, their escaping, the clock and the outcome of a reply.

use super::*;
use serde_json::json;

fn record<'a>(msg: &'a str, fields: &'a [(&'a str, Value<'a>)]) -> Record<'a> {
    Record {
        level: Level::Warn,
        msg,
        fields,
        prefixed: true,
    }
}

#[test]
fn levels_parse_and_order() {
    for name in Level::NAMES {
        assert_eq!(Level::parse(name).map(Level::name), Some(name));
    }
    assert_eq!(Level::parse("WARN"), None);
    assert_eq!(Level::parse("warning"), None);
    assert!(Level::Error < Level::Warn && Level::Warn < Level::Info && Level::Info < Level::Debug);
    assert_eq!(Format::parse("json"), Some(Format::Json));
    assert_eq!(Format::parse("yaml"), None);
}

#[test]
fn text_lines_keep_the_old_form_and_quote_what_is_not_a_word() {
    let line = render(Format::Text, &record("pool 'py' died", &[]), 0);
    assert_eq!(line, "morloc-mcp: pool 'py' died\n");
    let fields = [
        ("tool", Value::Str("add")),
        ("owner", Value::Str("peer 127.0.0.1")),
        ("odd", Value::Str("a\"b\nc=d")),
        ("empty", Value::Str("")),
        ("status", Value::Int(200)),
        ("duration_ms", Value::Ms(1.23456)),
    ];
    let line = render(Format::Text, &record("access", &fields), 0);
    assert_eq!(
        line,
        "morloc-mcp: access tool=add owner=\"peer 127.0.0.1\" odd=\"a\\\"b\\nc=d\" empty=\"\" status=200 duration_ms=1.235\n"
    );
    let bare = Record {
        prefixed: false,
        ..record("[py#1] hello", &[])
    };
    assert_eq!(render(Format::Text, &bare, 0), "[py#1] hello\n");
}

#[test]
fn json_lines_are_valid_json_with_every_field_escaped() {
    let nasty = "quote \" backslash \\ newline \n tab \t nul \u{0} bell \u{7} é ☃";
    let fields = [
        ("tool", Value::Str(nasty)),
        ("n", Value::Int(-3)),
        ("duration_ms", Value::Ms(0.5)),
        ("bad", Value::Ms(f64::NAN)),
        ("k\"ey", Value::Str("v")),
    ];
    let line = render(Format::Json, &record(nasty, &fields), 1_764_655_304_123_456);
    assert!(
        line.ends_with("}\n") && line.matches('\n').count() == 1,
        "{line}"
    );
    let v: Json = serde_json::from_str(&line).unwrap();
    assert_eq!(v["ts"], "2025-12-02T06:01:44.123456Z");
    assert_eq!(v["level"], "warn");
    assert_eq!(v["msg"], nasty);
    assert_eq!(v["tool"], nasty);
    assert_eq!(v["n"], -3);
    assert_eq!(v["duration_ms"].as_f64(), Some(0.5));
    assert_eq!(v["bad"], Json::Null);
    assert_eq!(v["k\"ey"], "v");
    // Key order is the record's.
    let keys: Vec<&str> = line
        .split("\":")
        .map(|s| s.rsplit('"').next().unwrap())
        .collect();
    assert_eq!(
        &keys[..6],
        ["ts", "level", "msg", "tool", "n", "duration_ms"]
    );
}

#[test]
fn numbers_are_written_without_the_formatting_machinery() {
    let line = |v: Value| render(Format::Text, &record("n", &[("v", v)]), 0);
    assert_eq!(line(Value::Ms(0.0)), "morloc-mcp: n v=0.000\n");
    assert_eq!(line(Value::Ms(0.0004)), "morloc-mcp: n v=0.000\n");
    assert_eq!(line(Value::Ms(0.0005)), "morloc-mcp: n v=0.001\n");
    assert_eq!(line(Value::Ms(12345.6789)), "morloc-mcp: n v=12345.679\n");
    assert_eq!(line(Value::Ms(-1.5)), "morloc-mcp: n v=-1.500\n");
    assert_eq!(line(Value::Int(0)), "morloc-mcp: n v=0\n");
    assert_eq!(
        line(Value::Int(i64::MIN)),
        "morloc-mcp: n v=-9223372036854775808\n"
    );
    assert_eq!(
        line(Value::Int(i64::MAX)),
        "morloc-mcp: n v=9223372036854775807\n"
    );
}

#[test]
fn escaping_is_found_anywhere_in_a_string() {
    for len in 0..40 {
        let plain = "a".repeat(len);
        let mut out = String::new();
        json_str(&mut out, &plain);
        assert_eq!(out, format!("\"{plain}\""));
        for at in 0..len {
            for bad in ['"', '\\', '\n', '\u{0}', '\u{1f}'] {
                let mut s: Vec<char> = plain.chars().collect();
                s[at] = bad;
                let s: String = s.into_iter().collect();
                let mut out = String::new();
                json_str(&mut out, &s);
                assert_eq!(serde_json::from_str::<String>(&out).unwrap(), s, "{out}");
            }
        }
    }
    // Bytes at and above 0x20 that need nothing, non-ASCII included (and
    // U+0080 to U+00BF but C1, which only take the slow path).
    let mut out = String::new();
    json_str(&mut out, " !#[]~é☃°£ !#[]~");
    assert_eq!(out, "\" !#[]~é☃°£ !#[]~\"");
    // DEL and C1 controls (a terminal's CSI is U+009B) are escaped too.
    for at in 0..12 {
        let s = format!("{}\u{7f}x\u{9b}31m", "a".repeat(at));
        let mut out = String::new();
        json_str(&mut out, &s);
        assert!(out.ends_with("\\u007fx\\u009b31m\""), "{out}");
        assert_eq!(serde_json::from_str::<String>(&out).unwrap(), s);
    }
}

/// Issue 34: strings from outside (a token's subject, a key server's status
/// line, a tools file's key) never reach stderr with a raw control
/// character, in either format, whether named through [`Untrusted`] or
/// pasted into a message by mistake.
#[test]
fn no_raw_control_character_reaches_a_line() {
    let nasty = "sub\r\nmorloc-mcp: forged\u{1b}[2J\u{7}\u{9b}1m\t\"=";
    let quoted = Untrusted(nasty).to_string();
    assert_eq!(
        quoted,
        "\"sub\\r\\nmorloc-mcp: forged\\u001b[2J\\u0007\\u009b1m\\t\\\"=\""
    );
    assert_eq!(serde_json::from_str::<String>(&quoted).unwrap(), nasty);
    let by_mistake = format!("owner {nasty} holds its cap");
    let named = format!("owner {} holds its cap", Untrusted(nasty));
    let fields = [("owner", Value::Str(nasty))];
    for format in [Format::Text, Format::Json] {
        for msg in [&by_mistake, &named] {
            for prefixed in [true, false] {
                let record = Record {
                    prefixed,
                    ..record(msg, &fields)
                };
                let line = render(format, &record, 0);
                let body = line.strip_suffix('\n').unwrap();
                let raw = |c: char| c.is_control() && c != '\t';
                assert!(!body.chars().any(raw), "{line:?}");
                if format == Format::Json {
                    let v: Json = serde_json::from_str(body).unwrap();
                    assert_eq!(v["owner"], nasty);
                }
            }
        }
    }
    // A tab in a text message is harmless and stays.
    let line = render(Format::Text, &record("a\tb", &[]), 0);
    assert_eq!(line, "morloc-mcp: a\tb\n");
}

/// Issue 33: a line that carries its own label does not repeat it in a
/// json `msg`; in text it is printed as it is.
#[test]
fn json_messages_leave_out_the_label() {
    for line in ["morloc mcp: excluding command 'f'", "morloc-mcp: x"] {
        let record = Record {
            prefixed: false,
            ..record(line, &[])
        };
        let v: Json = serde_json::from_str(&render(Format::Json, &record, 0)).unwrap();
        assert!(!v["msg"].as_str().unwrap().contains("mcp:"), "{v}");
        assert_eq!(render(Format::Text, &record, 0), format!("{line}\n"));
    }
}

#[test]
fn timestamps_are_rfc3339_in_utc() {
    let ts = |micros: u64| {
        let mut s = String::new();
        timestamp(&mut s, micros);
        s
    };
    assert_eq!(ts(0), "1970-01-01T00:00:00.000000Z");
    assert_eq!(ts(951_782_400_000_001), "2000-02-29T00:00:00.000001Z");
    assert_eq!(ts(4_107_542_399_999_999), "2100-02-28T23:59:59.999999Z");
    assert_eq!(ts(1_709_251_199_000_000), "2024-02-29T23:59:59.000000Z");
}

#[test]
fn replies_read_as_outcomes() {
    let ok = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": []}});
    let tool_error = json!({"jsonrpc": "2.0", "id": 1, "result": {"isError": true}});
    let task = json!({"jsonrpc": "2.0", "id": 1, "result": {"taskId": "t", "resultType": "task"}});
    let error = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "x"}});
    assert_eq!(outcome_of(&ok), "ok");
    assert_eq!(outcome_of(&tool_error), "tool_error");
    assert_eq!(outcome_of(&task), "task");
    assert_eq!(outcome_of(&error), "error");
    assert_eq!(error_code(&error), Some(-32601));
    assert_eq!(error_code(&ok), None);
}

#[test]
fn access_fields_come_in_a_fixed_order() {
    let access = Access {
        http_method: Some("POST"),
        path: Some("/mcp"),
        status: Some(200),
        rpc_method: Some("tools/call"),
        tool: Some("add"),
        outcome: "error",
        error_code: Some(-32602),
        duration_ms: 2.0,
        owner: "stdio",
        trace_id: "t",
        span_id: "s",
        parent_span_id: Some("p"),
        tracestate: None,
        start: Some("2026-01-01T00:00:00.000000Z"),
    };
    let keys: Vec<&str> = access.fields().iter().map(|(k, _)| *k).collect();
    assert_eq!(
        keys,
        [
            "http_method",
            "path",
            "status",
            "method",
            "tool",
            "outcome",
            "error_code",
            "duration_ms",
            "owner",
            "trace_id",
            "span_id",
            "parent_span_id",
            "start"
        ]
    );
    let stdio = Access {
        outcome: "ok",
        ..Access::default()
    };
    let keys: Vec<&str> = stdio.fields().iter().map(|(k, _)| *k).collect();
    assert_eq!(
        keys,
        ["outcome", "duration_ms", "owner", "trace_id", "span_id"]
    );
}
