//! Where features meet the one-walk call path: a plain `tools/call` is read
//! in place (`jsonrpc::decode_call`, `mcp::handle_call`) while anything
//! unusual takes the full parse. Each request here is sent as it is and as
//! two twins that mean the same but force the full parse (an escaped key at
//! the top level, an extra member in `params`): the answers must be the
//! same bytes, with renamed, hidden and projected (`_render`) tools,
//! argument errors, both eras, log levels, progress tokens and tasks; and
//! the access lines, metrics and owners must not tell the paths apart.

use serde_json::{json, Value};

use crate::support::http::{post_request, write_manifest, Client, Server as HttpServer};
use crate::support::stdio::Lines;
use crate::util::{self, TempDir};

const MODERN: &str = "2026-07-28";

/// The tools file of these tests: `addOne` renamed (its argument too),
/// `slowEcho` hidden.
const TOOLS: &str = r#"{"tools": {
  "addOne": {"name": "add_one", "arguments": {"_1": {"name": "n"}}},
  "slowEcho": {"hidden": true}
}}"#;

/// `hello` gets a `_render` projection running `add_one`'s command.
fn with_projection(manifest: &mut Value) {
    let commands = manifest["commands"].as_array_mut().expect("commands");
    let hello = commands.iter_mut().find(|c| c["name"] == "hello");
    hello.expect("hello")["terminals"] = json!([{"long": "sum", "entry": "addOne"}]);
}

/// The twins of a `tools/call` line that mean the same but are not read in
/// place: an escaped key at the top level (the message is read the long
/// way), and a member of `params` the call does not use.
fn twins(line: &str) -> [String; 2] {
    assert!(
        line.starts_with('{') && line.contains(r#""params":{"#),
        "{line}"
    );
    [
        line.replacen('{', r#"{"\u0078":0,"#, 1),
        line.replacen(r#""params":{"#, r#""params":{"unused":0,"#, 1),
    ]
}

/// A `tools/call` line of `tool` with `arguments`, and `_meta` if given.
fn call_line(id: u64, tool: &str, arguments: Value, meta: Option<Value>) -> String {
    let mut params = json!({"name": tool, "arguments": arguments});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string()
}

/// The `_meta` of a modern request, with `extra` members.
fn modern_meta(extra: Value) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    if let (Value::Object(m), Value::Object(extra)) = (&mut meta, extra) {
        m.extend(extra);
    }
    meta
}

/// The calls every era is asked: each tool as served, as it was named, a
/// hidden one, an unknown one, argument errors, a pure command, a
/// projection, control characters in an argument.
fn calls() -> Vec<(&'static str, Value)> {
    vec![
        ("add_one", json!({"n": 41})),
        ("addOne", json!({"_1": 41})),
        ("add_one", json!({"_1": 41})),
        ("slowEcho", json!({"_1": 1})),
        ("nope", json!({})),
        ("add_one", json!({"n": "x"})),
        ("add_one", json!({})),
        ("add_one", json!({"n": 1, "zz": 2})),
        ("pureAnswer", json!({})),
        ("mustFail", json!({})),
        ("sumMany", json!({"_1": [1, 2, 3]})),
        ("hello", json!({"_1": "a\nb\u{7}\"c\u{2028}"})),
        ("hello", json!({"_1": "x", "_render": "sum"})),
        ("hello", json!({"_1": "x", "_render": "nope"})),
        ("hello", json!({"_1": "x", "_render": 3})),
    ]
}

/// The `_meta`s of the calls: none (legacy), a progress token, and modern
/// ones (plain, with a log level, with the Tasks extension declared).
fn metas() -> Vec<Option<Value>> {
    let tasks = json!({"io.modelcontextprotocol/clientCapabilities":
        {"extensions": {"io.modelcontextprotocol/tasks": {}}}});
    vec![
        None,
        Some(json!({"progressToken": "p"})),
        Some(modern_meta(json!({}))),
        Some(modern_meta(
            json!({"io.modelcontextprotocol/logLevel": "debug"}),
        )),
        Some(modern_meta(tasks)),
    ]
}

fn stdio_server(options: &[&str]) -> Lines {
    let dir = TempDir::new();
    let manifest = util::shapes_manifest_with(&dir, with_projection);
    dir.write("morloc-mcp-tools.json", TOOLS);
    let mut s = Lines::mcp(&manifest, options, &[], Some(dir));
    let init = s.ask_json(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}}));
    assert!(init.get("result").is_some(), "{init}");
    s.send_json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    s
}

/// Sends `line` and reads up to the response of `id`: the notifications
/// before it, then the response.
fn exchange(s: &mut Lines, line: &str, id: u64) -> (Vec<String>, String) {
    s.send(line);
    let mut notes = Vec::new();
    loop {
        let got = s.line();
        let message: Value = serde_json::from_str(&got).expect("a JSON line");
        if message["id"] == id {
            return (notes, got);
        }
        assert!(message.get("id").is_none(), "{got}");
        notes.push(got);
    }
}

#[test]
fn stdio_calls_read_in_place_answer_as_the_full_parse() {
    let mut s = stdio_server(&[]);
    let mut id = 0;
    for meta in metas() {
        for (tool, arguments) in calls() {
            id += 1;
            let line = call_line(id, tool, arguments, meta.clone());
            let answer = exchange(&mut s, &line, id);
            for twin in twins(&line) {
                assert_eq!(exchange(&mut s, &twin, id), answer, "{twin}");
            }
        }
    }
    s.quiet();
    s.finish();
}

/// The access line's fields that do not vary from run to run (text or
/// JSON): everything but the span, the times and the duration, and the
/// trace id of a request that brought no trace context.
fn steady_fields(line: &str, json_format: bool) -> Vec<String> {
    let mut fields = fields_but_times(line, json_format);
    if !fields.iter().any(|f| f.starts_with("parent_span_id=")) {
        fields.retain(|f| !f.starts_with("trace_id="));
    }
    fields
}

fn fields_but_times(line: &str, json_format: bool) -> Vec<String> {
    let varying = ["duration_ms", "span_id", "start", "ts"];
    if json_format {
        let value: Value = serde_json::from_str(line).expect("a JSON log line");
        let object = value.as_object().expect("an object");
        return (object.iter())
            .filter(|(k, _)| !varying.contains(&k.as_str()))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
    }
    let mut fields = Vec::new();
    let mut rest = line;
    // key=value, the value bare or quoted with `\"` and `\\` escaped.
    while let Some(at) = rest.find(' ') {
        rest = &rest[at + 1..];
        let Some(eq) = rest.find('=') else { break };
        let key = &rest[..eq];
        let value = &rest[eq + 1..];
        let end = if let Some(quoted) = value.strip_prefix('"') {
            let mut escaped = false;
            1 + quoted
                .char_indices()
                .find(|&(_, c)| {
                    let end = c == '"' && !escaped;
                    escaped = c == '\\' && !escaped;
                    end
                })
                .map_or(value.len() - 1, |(i, _)| i + 1)
        } else {
            value.find(' ').unwrap_or(value.len())
        };
        if !varying.contains(&key) {
            fields.push(format!("{key}={}", &value[..end]));
        }
        rest = &value[end..];
    }
    fields
}

#[test]
fn stdio_access_lines_do_not_tell_the_paths_apart_and_cannot_be_forged() {
    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    for json_format in [false, true] {
        let format = if json_format { "json" } else { "text" };
        let mut s = stdio_server(&["--log-level", "info", "--log-format", format]);
        let names = [
            "add_one",
            "add_one outcome=ok owner=root",
            "add\"one",
            "x\nmorloc-mcp: access method=forged",
            "\u{1b}[2Jx\u{85}",
        ];
        let mut id = 0;
        let mut sent = 0;
        for name in names {
            for meta in [
                None,
                Some(json!({"traceparent": PARENT, "tracestate": "a=b"})),
            ] {
                id += 1;
                let line = call_line(id, name, json!({"n": 1}), meta);
                let answer = exchange(&mut s, &line, id);
                for twin in twins(&line) {
                    assert_eq!(exchange(&mut s, &twin, id), answer, "{twin}");
                }
                sent += 3;
            }
        }
        let done = s.finish();
        let prefix = if json_format { "{" } else { "morloc-mcp: " };
        for line in done.stderr.lines() {
            assert!(line.starts_with(prefix), "a forged or split line: {line:?}");
            assert!(!line.chars().any(char::is_control), "{line:?}");
        }
        let access: Vec<&str> = (done.stderr.lines())
            .filter(|l| match json_format {
                true => l.contains(r#""msg":"access""#),
                false => l.starts_with("morloc-mcp: access "),
            })
            .filter(|l| l.contains("tools/call"))
            .collect();
        assert_eq!(access.len(), sent, "{}", done.stderr);
        for three in access.chunks(3) {
            let first = steady_fields(three[0], json_format);
            assert!(first.len() >= 4, "{first:?}");
            for other in &three[1..] {
                assert_eq!(steady_fields(other, json_format), first, "{format}");
            }
        }
        // The names as sent, escaped in one field each.
        let tools: Vec<String> = (access.iter().step_by(6))
            .map(|l| {
                let fields = steady_fields(l, json_format);
                let tool = fields.iter().find(|f| f.starts_with("tool="));
                tool.expect("a tool field").clone()
            })
            .collect();
        let expected: Vec<String> = match json_format {
            true => names.iter().map(|n| format!("tool={}", json!(n))).collect(),
            false => [
                r#"tool=add_one"#,
                r#"tool="add_one outcome=ok owner=root""#,
                r#"tool="add\"one""#,
                r#"tool="x\nmorloc-mcp: access method=forged""#,
                r#"tool="\u001b[2Jx\u0085""#,
            ]
            .map(str::to_string)
            .to_vec(),
        };
        assert_eq!(tools, expected, "{format}");
    }
}

/// A router of two programs over HTTP: `alpha` (the shapes, with this
/// file's tools file and projection) and `beta` (only `hello`, renamed
/// `greet`), with `extra` options.
fn http_router(extra: &[&str]) -> HttpServer {
    let dir = TempDir::new();
    let alpha = write_manifest(&dir, "alpha/manifest.json", "alpha", with_projection);
    dir.write("alpha/morloc-mcp-tools.json", TOOLS);
    let beta = write_manifest(&dir, "beta/manifest.json", "beta", |m| {
        let commands = m["commands"].as_array_mut().expect("commands");
        commands.retain(|c| c["name"] == "hello");
    });
    dir.write(
        "beta/morloc-mcp-tools.json",
        r#"{"tools": {"hello": {"name": "greet"}}}"#,
    );
    crate::support::http::router(dir, &[alpha.as_path(), beta.as_path()], extra)
}

/// The samples of `/metrics` whose name starts with `prefix`.
fn counters(server: &HttpServer, prefix: &str) -> std::collections::BTreeMap<String, f64> {
    let request = crate::support::http::simple_request("GET", "/metrics", server.addr, "");
    let text = server.connect().roundtrip(&request).expect(200).text();
    (text.lines())
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| l.rsplit_once(' '))
        .map(|(series, value)| (series.to_string(), value.parse().expect("a number")))
        .collect()
}

/// One HTTP exchange's outcome as a client sees it.
fn seen(reply: crate::support::http::Response) -> (u16, Option<String>, String) {
    let kind = reply.header("content-type").map(str::to_string);
    (reply.status, kind, reply.text())
}

/// Over HTTP, in a legacy session and in modern requests, through the
/// router with prefixed and with plain names: a call and its twins get the
/// same answer, and the call is counted once per request under the name of
/// the tool called (a projection counts as its tool, not as the command it
/// runs).
#[test]
fn http_calls_read_in_place_answer_as_the_full_parse_and_count_once() {
    for plain in [false, true] {
        let server = http_router(if plain { &["--plain-tool-names"] } else { &[] });
        let name = |tool: &str| match (plain, tool) {
            (true, _) | (_, "nope") => tool.to_string(),
            (false, "greet") => "beta__greet".to_string(),
            (false, _) => format!("alpha__{tool}"),
        };
        let mut client = Client::connect(server.addr);
        let sid = client.initialize();
        let mut calls = calls();
        calls.push(("greet", json!({"_1": "y"})));
        let mut id = 0;
        for meta in metas() {
            let modern = meta
                .as_ref()
                .is_some_and(|m| m.get("progressToken").is_none());
            for (tool, arguments) in &calls {
                id += 1;
                let tool = name(tool);
                let line = call_line(id, &tool, arguments.clone(), meta.clone());
                let headers = [
                    ("MCP-Protocol-Version", MODERN),
                    ("Mcp-Method", "tools/call"),
                    ("Mcp-Name", tool.as_str()),
                ];
                let (session, headers) = match modern {
                    true => (None, &headers[..]),
                    false => (Some(sid.as_str()), &[][..]),
                };
                let mut ask = |body: &str| {
                    let request = post_request(server.addr, session, body.as_bytes(), headers);
                    seen(client.roundtrip(&request))
                };
                let before = counters(&server, "mcp_server_tool_calls_total");
                let answer = ask(&line);
                for twin in twins(&line) {
                    assert_eq!(ask(&twin), answer, "{twin}");
                }
                let after = counters(&server, "mcp_server_tool_calls_total");
                let grown: Vec<(&String, f64)> = (after.iter())
                    .map(|(series, n)| (series, n - before.get(series).copied().unwrap_or(0.0)))
                    .filter(|(_, d)| *d != 0.0)
                    .collect();
                match grown.as_slice() {
                    [] => {}
                    [(series, delta)] => {
                        assert_eq!(*delta, 3.0, "{series} after {line}");
                        let label = format!("{{gen_ai_tool_name=\"{tool}\",");
                        assert!(series.contains(&label), "{series} after {line}");
                    }
                    more => panic!("{line} counted as {more:?}"),
                }
            }
        }
    }
}

/// A call's `_meta`, its session header and its other headers.
type HeaderCase<'a> = (Option<Value>, Option<&'a str>, Vec<(&'a str, &'a str)>);

/// The checks of a request's HTTP headers against its body (the modern
/// mirrored headers, the session, the version) answer a call read in place
/// as they answer it read the long way.
#[test]
fn http_header_checks_answer_alike_either_way() {
    let server = HttpServer::start(&[]);
    let mut client = Client::connect(server.addr);
    let sid = client.initialize();
    let legacy = "2025-06-18";
    let cases: Vec<HeaderCase> = vec![
        // Modern: right, then each mirrored header wrong or missing.
        (
            Some(modern_meta(json!({}))),
            None,
            vec![
                ("MCP-Protocol-Version", MODERN),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "main__addOne"),
            ],
        ),
        (
            Some(modern_meta(json!({}))),
            None,
            vec![
                ("MCP-Protocol-Version", MODERN),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "main__hello"),
            ],
        ),
        (
            Some(modern_meta(json!({}))),
            None,
            vec![
                ("MCP-Protocol-Version", MODERN),
                ("Mcp-Method", "tools/call"),
            ],
        ),
        (
            Some(modern_meta(json!({}))),
            None,
            vec![
                ("MCP-Protocol-Version", MODERN),
                ("Mcp-Method", "tools/list"),
                ("Mcp-Name", "main__addOne"),
            ],
        ),
        (
            Some(modern_meta(json!({}))),
            None,
            vec![
                ("MCP-Protocol-Version", legacy),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "main__addOne"),
            ],
        ),
        (Some(modern_meta(json!({}))), None, vec![]),
        // A modern version header without `_meta`; with a legacy one.
        (
            None,
            None,
            vec![
                ("MCP-Protocol-Version", MODERN),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "main__addOne"),
            ],
        ),
        (
            Some(
                json!({"io.modelcontextprotocol/protocolVersion": legacy, "io.modelcontextprotocol/clientCapabilities": {}}),
            ),
            None,
            vec![("MCP-Protocol-Version", MODERN)],
        ),
        // Modern `_meta` inside a session, with and without its headers.
        (Some(modern_meta(json!({}))), Some(sid.as_str()), vec![]),
        (
            Some(modern_meta(json!({}))),
            Some(sid.as_str()),
            vec![
                ("MCP-Protocol-Version", MODERN),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "main__addOne"),
            ],
        ),
        (Some(modern_meta(json!({}))), Some("main.unknown"), vec![]),
        // Legacy: in the session, with a wrong version header, an unknown
        // session, no session.
        (None, Some(sid.as_str()), vec![]),
        (
            None,
            Some(sid.as_str()),
            vec![("MCP-Protocol-Version", "2025-03-26")],
        ),
        (
            None,
            Some(sid.as_str()),
            vec![("MCP-Protocol-Version", MODERN)],
        ),
        (None, Some("main.unknown"), vec![]),
        (None, None, vec![]),
    ];
    for (n, (meta, session, headers)) in cases.into_iter().enumerate() {
        let id = n as u64 + 1;
        let line = call_line(id, "main__addOne", json!({"_1": 1}), meta);
        let mut ask = |body: &str| {
            let request = post_request(server.addr, session, body.as_bytes(), &headers);
            seen(client.roundtrip(&request))
        };
        let answer = ask(&line);
        for twin in twins(&line) {
            assert_eq!(ask(&twin), answer, "{twin} with {headers:?}");
        }
    }
}

/// Over HTTP too, a call read in place and its twins read the long way
/// leave the same access line, and a tool name cannot split or forge one.
#[test]
fn http_access_lines_do_not_tell_the_paths_apart_and_cannot_be_forged() {
    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    for json_format in [false, true] {
        let format = if json_format { "json" } else { "text" };
        let server = HttpServer::start(&["--log-format", format]);
        let mut client = Client::connect(server.addr);
        let sid = client.initialize();
        let names = [
            "main__addOne",
            "main__addOne outcome=ok owner=root",
            "x\nmorloc-mcp: access method=forged",
            "\u{1b}[2Jx\u{85}",
        ];
        let mut id = 0;
        let mut sent = 0;
        for name in names {
            for meta in [None, Some(json!({"traceparent": PARENT}))] {
                id += 1;
                let line = call_line(id, name, json!({"_1": 1}), meta);
                let mut ask = |body: &str| {
                    let request = post_request(server.addr, Some(&sid), body.as_bytes(), &[]);
                    seen(client.roundtrip(&request))
                };
                let answer = ask(&line);
                for twin in twins(&line) {
                    assert_eq!(ask(&twin), answer, "{twin}");
                }
                sent += 3;
            }
        }
        let access = crate::util::wait_until("every call's access line", || {
            let stderr = server.proc.stderr_now();
            let lines: Vec<String> = (stderr.lines())
                .filter(|l| l.contains("tools/call"))
                .map(str::to_string)
                .collect();
            (lines.len() >= sent).then_some(lines)
        });
        assert_eq!(access.len(), sent);
        let prefix = if json_format { "{" } else { "morloc-mcp: " };
        for line in server.proc.stderr_now().lines() {
            assert!(line.starts_with(prefix), "a forged or split line: {line:?}");
            assert!(!line.chars().any(char::is_control), "{line:?}");
        }
        for three in access.chunks(3) {
            let first = steady_fields(&three[0], json_format);
            assert!(first.iter().any(|f| f.starts_with("tool=")), "{first:?}");
            for other in &three[1..] {
                assert_eq!(steady_fields(other, json_format), first, "{format}");
            }
        }
    }
}
