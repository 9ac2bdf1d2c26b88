//! Unit tests of `jsonrpc`: classification, framing, and the lazy and
//! one-walk decodings against the parse.

use super::*;

#[track_caller]
fn check(line: &str, expected: &str) {
    let got = match decode(line.as_bytes()) {
        Incoming::Request { id, method, params } => {
            format!(
                "request {id} {method} {}",
                params.map_or("-".into(), |p| p.to_string())
            )
        }
        Incoming::Notification { method, .. } => format!("notification {method}"),
        Incoming::Response => "response".into(),
        Incoming::Empty => "empty".into(),
        Incoming::Invalid(v) => v.to_string(),
    };
    assert_eq!(got, expected, "{line}");
}

#[test]
fn classification() {
    check(
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
        "request 1 ping -",
    );
    check(
        r#"{"jsonrpc":"2.0","id":"a","method":"x","params":{}}"#,
        r#"request "a" x {}"#,
    );
    check(
        r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#,
        "request 0 ping -",
    );
    check(
        r#"{"id":123456789012345678901234567890,"method":"ping"}"#,
        "request 123456789012345678901234567890 ping -",
    );
    check(
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "notification notifications/initialized",
    );
    check(r#"{"jsonrpc":"2.0","id":5,"result":{}}"#, "response");
    check(
        r#"{"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"x"}}"#,
        "response",
    );
    check("   ", "empty");
    check("", "empty");
    check(
        "not json",
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"invalid JSON"}}"#,
    );
    check(
        r#"{"a":1} {"b":2}"#,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"invalid JSON"}}"#,
    );
    check(
        "\u{feff}{}",
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"invalid JSON"}}"#,
    );
    check(
        r#"[{"jsonrpc":"2.0","id":2,"method":"ping"}]"#,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"batch requests are not supported: send one JSON-RPC message per line"}}"#,
    );
    check(
        r#"{"jsonrpc":"2.0","id":3}"#,
        r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"missing 'method'"}}"#,
    );
    check(
        r#"{"id":3,"method":7}"#,
        r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"missing 'method'"}}"#,
    );
    check(
        r#"{"jsonrpc":"2.0","id":34.5,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request id 34.5: MCP request ids must be strings or integers"}}"#,
    );
    check(
        r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request id null: MCP request ids must be strings or integers"}}"#,
    );
    check(
        "5",
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: expected a JSON-RPC message object"}}"#,
    );
    assert!(matches!(
        decode(b"{\"id\":1,\"method\":\"\xff\"}"),
        Incoming::Invalid(_)
    ));
}

#[test]
fn ids_round_trip_exactly() {
    for text in [
        "1",
        "0",
        "-7",
        "123456789012345678901234567890",
        "\"abc\"",
        "\"\"",
    ] {
        let v: Value = serde_json::from_str(text).unwrap();
        let id = RequestId::from_json(&v).unwrap();
        assert_eq!(id.to_json().to_string(), text);
    }
    for text in ["1.5", "1e2", "null", "{}", "[]", "true"] {
        let v: Value = serde_json::from_str(text).unwrap();
        assert_eq!(RequestId::from_json(&v), None, "{text}");
    }
}

fn lines(framer: &mut LineFramer) -> Vec<String> {
    let mut out = Vec::new();
    while let Some(f) = framer.next_line() {
        out.push(match f {
            Frame::Line(l) => String::from_utf8_lossy(l).into_owned(),
            Frame::TooLong => "<too long>".into(),
        });
    }
    out
}

#[test]
fn framing_at_every_split_point() {
    let input = b"{\"a\":1}\n\n  \nxyz\nlast";
    for split in 0..=input.len() {
        let mut f = LineFramer::default();
        f.push(&input[..split]);
        let mut got = lines(&mut f);
        f.push(&input[split..]);
        got.extend(lines(&mut f));
        if let Some(Frame::Line(l)) = f.finish() {
            got.push(String::from_utf8_lossy(l).into_owned());
        }
        assert_eq!(
            got,
            vec!["{\"a\":1}", "", "  ", "xyz", "last"],
            "split {split}"
        );
    }
}

#[test]
fn over_long_lines_are_skipped_and_the_stream_continues() {
    let mut f = LineFramer::with_max_line(8);
    f.push(b"0123456789");
    assert_eq!(lines(&mut f), Vec::<String>::new());
    f.push(b"abcdef\nok\n");
    assert_eq!(lines(&mut f), vec!["<too long>", "ok"]);
    f.push(b"123456789\nfine\n");
    assert_eq!(lines(&mut f), vec!["<too long>", "fine"]);
    f.push(b"12345678");
    assert_eq!(lines(&mut f), Vec::<String>::new());
    f.push(b"\n");
    assert_eq!(lines(&mut f), vec!["12345678"]);
    f.push(b"0123456789abc");
    assert_eq!(lines(&mut f), Vec::<String>::new());
    assert_eq!(f.finish(), Some(Frame::TooLong));
}

/// [`decode_lazy`] against [`decode`]: the same message, with the
/// arguments given apart exactly when they are an object.
/// [`decode_checked`] after a [`Checker`] read `body` in stretches of
/// `bytes`.
fn checked_decode(body: &[u8], bytes: usize) -> (Incoming, Option<&str>) {
    let mut checker = crate::format::json::check::Checker::default();
    loop {
        if let Some(verdict) = checker.step(body, bytes) {
            let ends = checker.ends();
            return decode_checked(body, &verdict, checker.span(), &ends);
        }
    }
}

/// The lazy decoding as it was before the one walk: [`Parts`], then
/// [`scan::validate`], then [`split_arguments`].
fn by_parts(bytes: &[u8]) -> (Incoming, Option<&str>) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return (decode(bytes), None);
    };
    let text = text.trim_matches(|c: char| c.is_whitespace());
    let raw = text.as_bytes();
    let Some(parts) = Parts::find(raw, None) else {
        return (decode(bytes), None);
    };
    if let Err(e) = scan::validate(raw, 0) {
        return (Incoming::Invalid(invalid_json(e)), None);
    }
    split_arguments(bytes, text, &parts, None)
}

/// [`decode_call`] gives what the walks it replaces gave, and a
/// [`CallLine`] holds the members [`scan::members`] finds.
#[track_caller]
fn one_walk_agrees(line: &str) -> Option<CallLine<'_>> {
    let old = by_parts(line.as_bytes());
    assert_eq!(decode_lazy(line.as_bytes()), old, "{line}");
    match decode_call(line.as_bytes()) {
        Decoded::Message(msg, arguments) => {
            assert_eq!((msg, arguments), old, "{line}");
            None
        }
        Decoded::Call(call) => {
            let text = call.arguments.as_bytes();
            let members: Vec<(usize, std::ops::Range<usize>)> = scan::members(text, 0)
                .map(|(key, value)| (key, value..scan::value_end(text, value)))
                .collect();
            assert_eq!(call.members, members, "{line}");
            let (msg, arguments) = call.clone().into_message();
            assert_eq!((msg, Some(arguments)), old, "{line}");
            Some(call)
        }
    }
}

#[test]
fn plain_calls_are_read_in_one_walk() {
    let calls = [
        (r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"addOne","arguments":{"_1":41}}}"#, Some("addOne"), 1),
        (r#" {"method":"tools/call","params":{"arguments":{ "a" : [1,{"b":"}"}] ,"\u0062":2},"name":"f"},"id":"x\"y"} "#, Some("f"), 2),
        (r#"{"id":-5,"method":"tools/call","params":{"arguments":{}}}"#, None, 0),
        (r#"{"id":1,"method":"tools/call","params":{"name":"a","arguments":{},"_meta":{"progressToken":1,"k":{"\u0070":[]}}}}"#, Some("a"), 0),
        (r#"{"id":1,"method":"tools/call","params":{"_meta":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6},"arguments":{"x":1}}}"#, None, 1),
        ("{\"id\":7,\"jsonrpc\":\"2.0\",\"x\":{\"id\":1},\"method\":\"tools/call\",\"params\":{\"name\":\"n\u{e9}\",\"arguments\":{\"k\":null}}}", Some("n\u{e9}"), 1),
    ];
    for (line, name, n) in calls {
        let call = one_walk_agrees(line).unwrap_or_else(|| panic!("{line}: not a plain call"));
        assert_eq!((call.name, call.members.len()), (name, n), "{line}");
    }
    let line = r#"{"id":1,"method":"tools/call","params":{"_meta":{"p":1,"k":{"q":[]},"s":"\""},"arguments":{}}}"#;
    let call = one_walk_agrees(line).expect("a plain call");
    let meta: Vec<_> = call.meta().expect("its _meta").collect();
    assert_eq!(meta, [("p", "1"), ("k", r#"{"q":[]}"#), ("s", r#""\"""#)]);
    // Read another way, with the same outcome.
    let others = [
        r#"{"id":1,"method":"tools/call","params":{"name":"a\u0062","arguments":{}}}"#,
        r#"{"id":1,"method":"tools/call","params":{"name":1,"arguments":{}}}"#,
        r#"{"id":1,"method":"tools/call","params":{"name":"a","name":"b","arguments":{}}}"#,
        r#"{"id":1,"method":"tools/call","params":{"name":"a","arguments":{},"_meta":{"\u0070":1}}}"#,
        r#"{"id":1,"method":"tools/call","params":{"arguments":{},"_meta":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7}}}"#,
        r#"{"id":1,"method":"tools/call","params":{"arguments":{},"_meta":{},"_meta":{}}}"#,
        r#"{"id":1,"method":"tools/call","params":{"arguments":{},"_meta":[],"_meta":{}}}"#,
        r#"{"id":1,"method":"tools/call","params":{"arguments":{},"_meta":1}}"#,
        r#"{"id":1,"method":"tools/call","params":{"arguments":{},"arguments":{"a":1}}}"#,
        r#"{"id":1,"method":"tools/call","params":{"arguments":[],"arguments":{"a":1}}}"#,
        r#"{"id":1,"method":"tools/call","params":{"arguments":{"a":1},"arguments":[]}}"#,
        r#"{"id":1,"method":"tools/call","params":{"arguments":{}},"params":{"arguments":{}}}"#,
        r#"{"id":1,"method":"tools/call","params":{"arguments":{}},"id":2}"#,
        r#"{"id":1,"method":"tools/call","method":"tools/call","params":{"arguments":{}}}"#,
        r#"{"id":1,"method":"tools\/call","params":{"arguments":{}}}"#,
        r#"{"id":1,"method":"tools/list","params":{"arguments":{}}}"#,
        r#"{"id":1,"method":"tools/call","params":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"arguments":{}}}"#,
        r#"{"id":1,"method":"tools/call","params":{"a":1,"b":2,"c":3,"d":4,"e":5,"arguments":{}}}"#,
        r#"{"id":1.0,"method":"tools/call","params":{"arguments":{}}}"#,
        r#"{"id":null,"method":"tools/call","params":{"arguments":{}}}"#,
        r#"{"method":"tools/call","params":{"arguments":{}}}"#,
        r#"{"id":1,"params":{"arguments":{}}}"#,
        r#"{"id":1,"method":7,"params":{"arguments":{}}}"#,
        r#"{"id":1,"method":"tools/call","params":{"name":"a"}}"#,
        r#"{"id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":1,}}}"#,
        r#"{"id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":1}}} ]"#,
        r#"{"id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":1}}"#,
        r#"{"\u0069d":1,"method":"tools/call","params":{"arguments":{}}}"#,
        r#"{"id":1,"method":"tools/call","params":{"\u006eame":"a","arguments":{}}}"#,
        r#"{"id":1,"method":"tools/call","params":{"n":"\ud800","arguments":{}}}"#,
        "",
        "  ",
        "[1]",
        "7",
    ];
    for line in others {
        assert!(one_walk_agrees(line).is_none(), "{line}");
    }
}

#[track_caller]
fn lazy_agrees(line: &str) -> bool {
    one_walk_agrees(line);
    let full = decode(line.as_bytes());
    let (lazy, arguments) = decode_lazy(line.as_bytes());
    for bytes in [1, 7, usize::MAX] {
        let checked = checked_decode(line.as_bytes(), bytes);
        assert_eq!(checked, (lazy.clone(), arguments), "{line} by {bytes}");
    }
    let Some(arguments) = arguments else {
        assert_eq!(lazy, full, "{line}");
        return false;
    };
    let parsed: Value = serde_json::from_str(arguments).expect("valid arguments");
    let Incoming::Request {
        params: Some(mut params),
        id,
        method,
    } = full
    else {
        panic!("{line}: arguments split off a non-request");
    };
    assert_eq!(params["arguments"], parsed, "{line}");
    params["arguments"] = Value::Null;
    assert_eq!(
        lazy,
        Incoming::Request {
            id,
            method,
            params: Some(params)
        },
        "{line}"
    );
    true
}

#[test]
fn lazy_decoding_matches_full_decoding() {
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    let split = [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f","arguments":{"x":[1,2.5e3,"\u00e9"]}}}"#.to_string(),
        r#" {"id":1,"method":"tools/call","params":{"arguments":{"a":1},"arguments":{"b":2}}} "#.to_string(),
        r#"{"id":1,"method":"m","params":{"arguments":[1]},"params":{"\u0061rguments":{}}}"#.to_string(),
        format!(r#"{{"id":1,"method":"m","params":{{"arguments":{{"x":{}}}}}}}"#, deep(124)),
        // Read in place: ids, escapes, duplicate keys, other members.
        r#"{"id":"a\"b\u00e9","method":"tools/call","params":{"arguments":{}}}"#.to_string(),
        r#"{"id":-0,"method":"t","params":{"arguments":{}}}"#.to_string(),
        r#"{"id":-17,"method":"t","params":{"arguments":{}},"id":123456789012345678901234567890}"#.to_string(),
        r#"{"\u0069d":7,"m\u0065thod":"tools\/call","jsonrpc":5,"extra":[1,{"id":2}],"params":{"arguments":{}}}"#.to_string(),
        r#"{"id":1,"method":"a","method":"b","params":{"name":1,"arguments":{"x":1},"name":"n","_meta":{"progressToken":1e400,"k":[null,true,-0.0]},"\u0061rguments":{}}}"#.to_string(),
        r#"{"id":1,"method":"m","params":[1],"params":{"arguments":{},"name":"x"}}"#.to_string(),
        "{\"id\":1,\"method\":\"m\",\"params\":{\"na\u{e9}me\":\"\u{1f600}\",\"arguments\":{}}}".to_string(),
    ];
    for line in &split {
        assert!(lazy_agrees(line), "{line}");
    }
    let whole = [
        r#"{"id":1,"method":"m","params":{"arguments":[1]}}"#.to_string(),
        r#"{"id":1,"method":"m","params":{"arguments":{}},"params":{"name":"x"}}"#.to_string(),
        r#"{"id":1,"method":"m","params":{"arguments":{"x":1,}}}"#.to_string(),
        r#"{"id":1,"method":"m","params":{"arguments":{"x":"\ud800"}}}"#.to_string(),
        r#"{"id":1,"method":"m","params":{"arguments":{}}} x"#.to_string(),
        r#"{"id":1,"method":"m","params":{"arguments":{}},}"#.to_string(),
        r#"[{"params":{"arguments":{}}}]"#.to_string(),
        r#"{"method":"n","params":{"arguments":{"a":1}}}"#.to_string(),
        r#"{"params":{"arguments":{"a":1}}}"#.to_string(),
        r#"{"id":[],"method":"m","params":{"arguments":{"a":1}}}"#.to_string(),
        r#"{"id":1.5,"method":"m","params":{"arguments":{"a":1}}}"#.to_string(),
        r#"{"id":1e2,"method":"m","params":{"arguments":{"a":1}}}"#.to_string(),
        r#"{"id":null,"method":"m","params":{"arguments":{"a":1}}}"#.to_string(),
        r#"{"id":1,"method":"m","method":2,"params":{"arguments":{"a":1}}}"#.to_string(),
        r#"{"id":1,"params":{"arguments":{"a":1}}}"#.to_string(),
        format!(
            r#"{{"id":1,"method":"m","params":{{"arguments":{{"x":{}}}}}}}"#,
            deep(125)
        ),
        format!(
            r#"{{"id":1,"method":"m","params":{{"arguments":{{"x":{}}}}}}}"#,
            deep(200)
        ),
        "{\"id\":1,\"method\":\"m\",\"params\":{\"arguments\":{\"x\":\"\u{1}\"}}}".to_string(),
    ];
    for line in &whole {
        assert!(!lazy_agrees(line), "{line}");
    }
}
