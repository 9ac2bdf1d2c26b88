//! Access lines, log levels and formats, W3C trace context, and the
//! `/metrics` token: what an operator reads on stderr after known requests.

use serde_json::{json, Value};

use crate::support::http::{
    post_request, simple_request, tool_call, write_manifest, Client, Server,
};
use crate::support::proc::{cmd, Proc, TempDir};
use crate::support::procfs;
use crate::support::stdio::{Program, Server as Stdio};
use crate::support::time::wait_until;
use crate::support::TIMEOUT;

const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
const META_PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// The `access` lines on `proc`'s stderr (json format), waiting until
/// there are at least `n`.
#[track_caller]
fn access_lines(proc: &Proc, n: usize) -> Vec<Value> {
    wait_until(format!("{n} access lines on stderr"), || {
        let lines = json_lines(&proc.stderr_now());
        let access: Vec<Value> = lines.into_iter().filter(|l| l["msg"] == "access").collect();
        (access.len() >= n).then_some(access)
    })
}

/// Every whole stderr line, each of which must be one JSON object.
#[track_caller]
fn json_lines(stderr: &str) -> Vec<Value> {
    stderr
        .split_inclusive('\n')
        .filter_map(|l| l.strip_suffix('\n'))
        .map(|l| {
            let v: Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l:?}"));
            assert!(
                v.is_object() && v["ts"].is_string() && v["level"].is_string(),
                "{l}"
            );
            v
        })
        .collect()
}

/// A legacy `tools/call` whose `_meta` carries a trace context.
fn traced_call(id: u64, tool: &str, arguments: Value, traceparent: &str) -> Value {
    let mut call = tool_call(id, tool, arguments);
    call["params"]["_meta"] =
        json!({"traceparent": traceparent, "tracestate": "congo=t61rcWkgMzE"});
    call
}

fn post_with(client: &mut Client, sid: &str, body: &Value, headers: &[(&str, &str)]) -> Value {
    let request = post_request(client.addr, Some(sid), body.to_string().as_bytes(), headers);
    client.roundtrip(&request).expect(200).json()
}

#[test]
fn http_access_lines_name_the_exchange_and_its_trace() {
    let server = Server::start(&["--plain-tool-names", "--log-format", "json"]);
    let (mut client, sid) = server.session();
    // initialize and notifications/initialized: two lines already.
    let before = access_lines(&server.proc, 2).len();
    let ok = post_with(
        &mut client,
        &sid,
        &tool_call(11, "addOne", json!({"_1": 1})),
        &[("traceparent", PARENT)],
    );
    assert_eq!(ok["result"]["isError"], false, "{ok}");
    // `_meta` wins over the header.
    let call = traced_call(12, "addOne", json!({"_1": "x"}), META_PARENT);
    let refused = post_with(&mut client, &sid, &call, &[("traceparent", PARENT)]);
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    // An invalid traceparent (uppercase hex) is ignored, never an error.
    let bad = "00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01";
    let reply = post_with(
        &mut client,
        &sid,
        &tool_call(13, "addOne", json!({"_1": 2})),
        &[("traceparent", bad)],
    );
    assert_eq!(reply["result"]["content"][0]["text"], "3", "{reply}");
    let unknown = post_with(
        &mut client,
        &sid,
        &json!({"jsonrpc": "2.0", "id": 14, "method": "nope"}),
        &[],
    );
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");

    let lines = access_lines(&server.proc, before + 4);
    let [ok, refused, untraced, unknown] = &lines[before..before + 4] else {
        unreachable!()
    };
    let keys: Vec<&str> = ok.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "ts",
            "level",
            "msg",
            "http_method",
            "path",
            "status",
            "method",
            "tool",
            "outcome",
            "duration_ms",
            "owner",
            "trace_id",
            "span_id",
            "parent_span_id",
            "start"
        ],
        "{ok}"
    );
    assert_eq!(ok["level"], "info");
    assert_eq!(
        (&ok["http_method"], &ok["path"], &ok["status"]),
        (&json!("POST"), &json!("/mcp"), &json!(200))
    );
    assert_eq!(
        (&ok["method"], &ok["tool"], &ok["outcome"]),
        (&json!("tools/call"), &json!("addOne"), &json!("ok"))
    );
    assert_eq!(ok["owner"], "peer 127.0.0.1");
    assert!(ok["duration_ms"].as_f64().is_some_and(|d| d >= 0.0), "{ok}");
    assert_eq!(ok["trace_id"], "0af7651916cd43dd8448eb211c80319c");
    assert_eq!(ok["parent_span_id"], "b7ad6b7169203331");
    assert_eq!(ok["span_id"].as_str().map(str::len), Some(16));

    assert_eq!(refused["outcome"], "tool_error");
    assert_eq!(refused["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(refused["parent_span_id"], "00f067aa0ba902b7");
    assert_eq!(refused["tracestate"], "congo=t61rcWkgMzE");

    assert_eq!(untraced["outcome"], "ok");
    let fresh = untraced["trace_id"].as_str().unwrap();
    assert!(
        fresh.len() == 32 && fresh != "0af7651916cd43dd8448eb211c80319c",
        "{untraced}"
    );
    assert!(untraced.get("parent_span_id").is_none(), "{untraced}");

    assert_eq!(
        (
            &unknown["method"],
            &unknown["outcome"],
            &unknown["error_code"]
        ),
        (&json!("nope"), &json!("error"), &json!(-32601))
    );
    assert!(unknown.get("tool").is_none(), "{unknown}");
}

#[test]
fn text_access_lines_keep_their_field_order_and_a_refusal_gets_one_too() {
    let server = Server::start(&["--plain-tool-names", "--auth-token", "s3cret"]);
    let mut client = server.connect();
    let refused = client.roundtrip(&post_request(server.addr, None, b"{}", &[]));
    assert_eq!(refused.status, 401);
    let auth = [("Authorization", "Bearer s3cret")];
    let init = crate::support::http::initialize_message(1).to_string();
    let reply = client
        .roundtrip(&post_request(server.addr, None, init.as_bytes(), &auth))
        .expect(200);
    let sid = reply.header("mcp-session-id").unwrap().to_string();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let note = post_request(server.addr, Some(&sid), note.as_bytes(), &auth);
    client.roundtrip(&note).expect(202);
    let call = tool_call(2, "addOne", json!({"_1": 1})).to_string();
    let headers = [auth[0], ("traceparent", PARENT)];
    client
        .roundtrip(&post_request(
            server.addr,
            Some(&sid),
            call.as_bytes(),
            &headers,
        ))
        .expect(200);
    // An open route proves no token: its owner is the peer.
    let health = simple_request("GET", "/health", server.addr, "");
    client.roundtrip(&health).expect(200);
    let lines = wait_until("five access lines", || {
        let stderr = server.proc.stderr_now();
        let lines: Vec<String> = stderr
            .lines()
            .filter(|l| l.starts_with("morloc-mcp: access "))
            .map(str::to_string)
            .collect();
        (lines.len() >= 5).then_some(lines)
    });
    assert!(
        lines[0].starts_with("morloc-mcp: access http_method=POST path=/mcp status=401 outcome=rejected duration_ms="),
        "{}", lines[0]
    );
    // Refused before any token was proved: its owner is the peer.
    assert!(
        lines[0].contains(" owner=\"peer 127.0.0.1\" "),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains(" method=initialize outcome=ok "),
        "{}",
        lines[1]
    );
    let note = " method=notifications/initialized outcome=accepted ";
    assert!(lines[2].contains(note), "{}", lines[2]);
    let call = &lines[3];
    let order = [
        "http_method=POST",
        "path=/mcp",
        "status=200",
        "method=tools/call",
        "tool=addOne",
        "outcome=ok",
        "duration_ms=",
        "owner=token",
        "trace_id=0af7651916cd43dd8448eb211c80319c",
        "span_id=",
        "parent_span_id=b7ad6b7169203331",
        "start=",
    ];
    let mut at = 0;
    for field in order {
        let found = call[at..]
            .find(&format!(" {field}"))
            .unwrap_or_else(|| panic!("{field} after {at} in {call}"));
        at += found + 1;
    }
    let health = "morloc-mcp: access http_method=GET path=/health status=200 outcome=ok ";
    assert!(lines[4].starts_with(health), "{}", lines[4]);
    assert!(
        lines[4].contains(" owner=\"peer 127.0.0.1\" "),
        "{}",
        lines[4]
    );
    // The token itself is never logged.
    assert!(!server.proc.stderr_now().contains("s3cret"));
}

#[test]
fn levels_filter_what_is_written() {
    // Over HTTP, warn hides the access lines (info) and the banner: the
    // server is found by its listening socket.
    let dir = TempDir::new();
    let manifest = write_manifest(&dir, "manifest.json", "main", |_| {});
    let args = [
        manifest.to_str().unwrap(),
        "--http-port",
        "0",
        "--plain-tool-names",
    ];
    let warn = ["mcp"]
        .into_iter()
        .chain(args)
        .chain(["--log-level", "warn"]);
    let quiet = Proc::spawn(&mut cmd(warn));
    let addr = wait_until("the server to listen", || {
        procfs::tcp_listening(quiet.pid() as i32)
    });
    let mut client = Client::connect(addr);
    let sid = client.initialize();
    let reply = client
        .post(Some(&sid), &tool_call(5, "noisyAdd", json!({"_1": 1})))
        .expect(200)
        .json();
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    // The pool's output (warn) arrives; no access line came before it.
    wait_until("the pool's output", || {
        quiet
            .stderr_now()
            .contains("noisyAdd: adding one to 1")
            .then_some(())
    });
    let stderr = quiet.stderr_now();
    assert!(
        !stderr.contains("access") && !stderr.contains("over HTTP at"),
        "{stderr}"
    );

    // Over stdio the default is warn: no access lines, the pool's output shown.
    let program = Program::shapes();
    let mut stdio = Stdio::start(&program, &[]);
    assert_eq!(stdio.call_ok("noisyAdd", json!({"_1": 2})), "3");
    stdio.wait_stderr("noisyAdd: adding one to 2");
    stdio.finish();
    let stderr = stdio.proc.stderr_text(TIMEOUT);
    assert!(!stderr.contains("access"), "{stderr}");

    // error hides the pool's output too; debug adds the pool call's span.
    let mut silent = Stdio::start(&program, &["--log-level", "error"]);
    assert_eq!(silent.call_ok("noisyAdd", json!({"_1": 3})), "4");
    silent.finish();
    assert_eq!(silent.proc.stderr_text(TIMEOUT), "");
}

#[test]
fn stdio_spans_continue_the_trace_in_meta() {
    let program = Program::shapes();
    let mut server = Stdio::start(&program, &["--log-level", "debug", "--log-format", "json"]);
    let id = server.request(
        "tools/call",
        json!({"name": "noisyAdd", "arguments": {"_1": 4}, "_meta": {"traceparent": PARENT}}),
    );
    let reply = server.response(id, TIMEOUT);
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    // A malformed traceparent in `_meta` is ignored; the call is served.
    let id = server.request(
        "tools/call",
        json!({"name": "addOne", "arguments": {"_1": 1}, "_meta": {"traceparent": "00-xyz"}}),
    );
    assert_eq!(server.response(id, TIMEOUT)["result"]["isError"], false);
    server.finish();
    let lines = json_lines(&server.proc.stderr_text(TIMEOUT));
    let access: Vec<&Value> = lines.iter().filter(|l| l["msg"] == "access").collect();
    // initialize, the two calls (a notification has no access line).
    assert_eq!(access.len(), 3, "{lines:#?}");
    let call = access[1];
    assert_eq!(
        (&call["tool"], &call["owner"]),
        (&json!("noisyAdd"), &json!("stdio"))
    );
    assert_eq!(call["trace_id"], "0af7651916cd43dd8448eb211c80319c");
    assert_eq!(call["parent_span_id"], "b7ad6b7169203331");
    assert!(access[2]["trace_id"] != call["trace_id"] && access[2].get("parent_span_id").is_none());
    // The pool call's span is a child of the request's, and the pool's own
    // lines name the trace.
    let span = lines
        .iter()
        .find(|l| l["msg"] == "span" && l["command"] == "noisyAdd")
        .unwrap_or_else(|| panic!("no span line: {lines:#?}"));
    assert_eq!(
        (&span["level"], &span["pool"]),
        (&json!("debug"), &json!("py"))
    );
    assert_eq!(span["trace_id"], call["trace_id"]);
    assert_eq!(span["parent_span_id"], call["span_id"]);
    let printed = lines
        .iter()
        .find(|l| l["msg"] == "noisyAdd: adding one to 4")
        .unwrap_or_else(|| panic!("no pool line: {lines:#?}"));
    assert_eq!(
        (&printed["level"], &printed["pool"]),
        (&json!("warn"), &json!("py"))
    );
    assert_eq!(printed["trace_id"], call["trace_id"]);
}

#[test]
fn the_metrics_token_opens_metrics_and_nothing_else() {
    let server = Server::start(&["--auth-token", "mcp-token", "--metrics-token", "scrape"]);
    let scrape = |auth: &str| {
        let extra = if auth.is_empty() {
            String::new()
        } else {
            format!("Authorization: Bearer {auth}\r\n")
        };
        server
            .connect()
            .roundtrip(&simple_request("GET", "/metrics", server.addr, &extra))
            .status
    };
    assert_eq!(scrape("scrape"), 200);
    assert_eq!(scrape("mcp-token"), 401);
    assert_eq!(scrape(""), 401);
    // The metrics token opens no MCP session.
    let init = crate::support::http::initialize_message(1).to_string();
    let mut client = server.connect();
    let with = |token: &str| [("Authorization", format!("Bearer {token}"))];
    let h = with("scrape");
    let refused = client.roundtrip(&post_request(
        server.addr,
        None,
        init.as_bytes(),
        &[(h[0].0, h[0].1.as_str())],
    ));
    assert_eq!(refused.status, 401);
    let h = with("mcp-token");
    let ok = client.roundtrip(&post_request(
        server.addr,
        None,
        init.as_bytes(),
        &[(h[0].0, h[0].1.as_str())],
    ));
    assert_eq!(ok.status, 200);

    // From the environment, as the MCP token can be.
    let env = Server::start_env(
        &["--auth-token", "mcp-token"],
        &[("MORLOC_MCP_METRICS_TOKEN", "from-env")],
    );
    let reply = env.connect().roundtrip(&simple_request(
        "GET",
        "/metrics",
        env.addr,
        "Authorization: Bearer from-env\r\n",
    ));
    assert_eq!(reply.status, 200);
}
