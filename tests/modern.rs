//! End-to-end tests of MCP 2026-07-28 (the stateless revision) next to the
//! legacy revisions, on one stdio process and one HTTP endpoint: era
//! detection, `server/discover`, per-request `_meta` and its errors
//! (`-32602`, `-32022`), completed results, log levels per request,
//! cancellation, progress, `subscriptions/listen`, and on HTTP the mirrored
//! headers (`-32020`) and the statuses the revision prescribes.

use serde_json::{json, Value};

use crate::support::http::{
    post_request, router, write_manifest, Client, Response, Server as HttpServer,
};
use crate::support::stdio::Lines;
use crate::util::{self, procfs, wait_for, CallTrace, Hold, TempDir};

const MODERN: &str = "2026-07-28";
const SCHEMA: &str = "https://json-schema.org/draft/2020-12/schema";

/// The `_meta` of a well-formed modern request, with `extra` keys added.
fn meta(extra: Value) -> Value {
    let mut m = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    if let (Value::Object(m), Value::Object(extra)) = (&mut m, extra) {
        m.extend(extra);
    }
    m
}

fn modern_request(id: Value, method: &str, mut params: Value, extra_meta: Value) -> Value {
    params["_meta"] = meta(extra_meta);
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn parse(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
}

/// Asserts the fields every modern result carries.
#[track_caller]
fn assert_complete(result: &Value) {
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"],
        json!({"name": "main", "version": "0.98.2"}),
        "{result}"
    );
}

/// `morloc-mcp mcp <shapes>` over stdio.
/// A stdio server driven message by message (the support library's
/// [`Lines`]) with this file's shorthands.
struct Stdio(Lines);

impl std::ops::Deref for Stdio {
    type Target = Lines;
    fn deref(&self) -> &Lines {
        &self.0
    }
}

impl std::ops::DerefMut for Stdio {
    fn deref_mut(&mut self) -> &mut Lines {
        &mut self.0
    }
}

impl Stdio {
    fn start() -> Stdio {
        let dir = TempDir::new();
        let manifest = util::shapes_manifest(&dir);
        Stdio(Lines::mcp(&manifest, &[], &[], Some(dir)))
    }

    fn send(&mut self, msg: &Value) {
        self.0.send_json(msg);
    }

    #[track_caller]
    fn next(&mut self) -> Value {
        self.0.json()
    }

    #[track_caller]
    fn ask(&mut self, msg: &Value) -> Value {
        self.0.ask_json(msg)
    }

    /// A legacy `ping` (answered before and after `initialize`) must be the
    /// next line: nothing else was sent.
    #[track_caller]
    fn quiet(&mut self, tag: &str) {
        self.0.quiet_as(tag);
    }

    /// Ends the session (exit status 0); returns what stdout still held.
    fn finish(mut self) -> String {
        let done = self.0.finish();
        assert_eq!(done.status.code(), Some(0), "{}", done.stderr);
        done.rest
    }
}

#[test]
fn modern_and_legacy_clients_share_one_stdio_process() {
    let mut s = Stdio::start();
    // A modern client probes first, as the stdio binding says.
    let discover = s.ask(&modern_request(
        json!("d"),
        "server/discover",
        json!({}),
        json!({}),
    ));
    let result = &discover["result"];
    assert_complete(result);
    assert_eq!(
        result["supportedVersions"],
        json!([
            MODERN,
            "2025-11-25",
            "2025-06-18",
            "2025-03-26",
            "2024-11-05"
        ])
    );
    assert_eq!(
        result["capabilities"]["tools"],
        json!({"listChanged": true})
    );
    assert!(result["ttlMs"].as_u64().is_some(), "{result}");
    assert_eq!(result["cacheScope"], "public");
    // A legacy client opens its session on the same process.
    let init = s.ask(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "l", "version": "1"}}}));
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    // Interleaved calls: the modern one completed, the legacy one as before.
    let modern = s.ask(&modern_request(
        json!(1),
        "tools/call",
        json!({"name": "addOne", "arguments": {"_1": 41}}),
        json!({}),
    ));
    assert_complete(&modern["result"]);
    assert_eq!(modern["result"]["content"][0]["text"], "42");
    let legacy = s.ask(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "addOne", "arguments": {"_1": 1}}}));
    assert_eq!(
        legacy.to_string(),
        r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"2"}],"isError":false}}"#
    );
    // tools/list: the legacy bytes stay the reference's; the modern list
    // names the 2020-12 dialect and carries caching hints.
    let legacy_list = s.ask(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}));
    assert!(legacy_list["result"].get("ttlMs").is_none());
    assert!(legacy_list["result"]["tools"][0]["inputSchema"]
        .get("$schema")
        .is_none());
    let modern_list = s.ask(&modern_request(
        json!(4),
        "tools/list",
        json!({}),
        json!({}),
    ));
    let list = &modern_list["result"];
    assert_complete(list);
    assert_eq!(list["cacheScope"], "public");
    let tools = list["tools"].as_array().unwrap();
    assert_eq!(
        tools.len(),
        legacy_list["result"]["tools"].as_array().unwrap().len()
    );
    for (modern, legacy) in tools
        .iter()
        .zip(legacy_list["result"]["tools"].as_array().unwrap())
    {
        assert_eq!(modern["name"], legacy["name"]);
        assert_eq!(modern["inputSchema"]["$schema"], SCHEMA, "{modern}");
    }
    // The same request twice gives the same list (deterministic order).
    let again = s.ask(&modern_request(
        json!(5),
        "tools/list",
        json!({}),
        json!({}),
    ));
    assert_eq!(again["result"], modern_list["result"]);
    s.quiet("end");
    assert_eq!(s.finish(), "");
}

#[test]
fn modern_requests_with_bad_meta_get_the_revision_errors() {
    let mut s = Stdio::start();
    let err = |reply: &Value| reply["error"]["code"].as_i64().unwrap_or(0);
    // Unsupported versions: -32022, naming what is served and what was asked.
    for (id, version) in [(1, "1900-01-01"), (2, "2025-11-25"), (3, "v999.0.0")] {
        let mut req = modern_request(json!(id), "tools/list", json!({}), json!({}));
        req["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(version);
        let reply = s.ask(&req);
        assert_eq!(err(&reply), -32022, "{reply}");
        assert_eq!(reply["id"], json!(id));
        assert_eq!(reply["error"]["data"]["requested"], version);
        assert_eq!(reply["error"]["data"]["supported"][0], MODERN);
    }
    // Missing required fields: -32602.
    let reply =
        s.ask(&json!({"jsonrpc": "2.0", "id": 4, "method": "server/discover", "params": {}}));
    assert_eq!(err(&reply), -32602, "{reply}");
    let reply = s.ask(&json!({"jsonrpc": "2.0", "id": 5, "method": "subscriptions/listen"}));
    assert_eq!(err(&reply), -32602, "{reply}");
    let mut req = modern_request(json!(6), "tools/list", json!({}), json!({}));
    req["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    assert_eq!(err(&s.ask(&req)), -32602);
    let bad_level = modern_request(
        json!(7),
        "tools/list",
        json!({}),
        json!({"io.modelcontextprotocol/logLevel": "loud"}),
    );
    assert_eq!(err(&s.ask(&bad_level)), -32602);
    // Methods this revision removed are unknown to modern requests.
    for (id, method) in [
        (8, "initialize"),
        (9, "ping"),
        (10, "logging/setLevel"),
        (11, "unknown/method"),
    ] {
        let reply = s.ask(&modern_request(json!(id), method, json!({}), json!({})));
        assert_eq!(err(&reply), -32601, "{method}: {reply}");
    }
    // No handshake happened, yet modern calls work, and a legacy request
    // still gets the legacy answer.
    let reply = s.ask(&json!({"jsonrpc": "2.0", "id": 12, "method": "tools/list"}));
    assert_eq!(err(&reply), -32600, "{reply}");
    s.quiet("end");
    assert_eq!(s.finish(), "");
}

#[test]
fn modern_log_messages_follow_each_requests_log_level() {
    let mut s = Stdio::start();
    let call = |id: u64, level: Option<&str>| {
        let extra = match level {
            Some(l) => json!({"io.modelcontextprotocol/logLevel": l}),
            None => json!({}),
        };
        modern_request(
            json!(id),
            "tools/call",
            json!({"name": "noisyAdd", "arguments": {"_1": id}}),
            extra,
        )
    };
    s.send(&call(1, Some("debug")));
    let mut notes = Vec::new();
    let reply = loop {
        let msg = s.next();
        if msg.get("id").is_some() {
            break msg;
        }
        notes.push(msg);
    };
    assert_complete(&reply["result"]);
    assert_eq!(notes.len(), 2, "{notes:?}");
    for note in &notes {
        assert_eq!(note["method"], "notifications/message");
        assert_eq!(note["params"]["level"], "info");
        assert_eq!(note["params"]["logger"], "pool:py");
    }
    // Above the pool's level, or without a level: nothing but the result.
    for (id, level) in [(2, Some("warning")), (3, None)] {
        let reply = s.ask(&call(id, level));
        assert_eq!(reply["id"], json!(id), "{reply}");
        assert_complete(&reply["result"]);
    }
    // The pool's output of the last call has reached the server (it would
    // have been forwarded by now) before the check that nothing was.
    wait_for(
        "the pool's output of noisyAdd 3 on the server's stderr",
        || s.proc.stderr_now().contains("noisyAdd: adding one to 3\n"),
    );
    s.quiet("end");
    s.finish();
}

#[test]
fn a_cancelled_modern_call_gets_no_further_message() {
    // One pool process, and the call held in it: its progress flows for as
    // long as the test needs, and the next call can only run once the
    // cancelled one has ended there and the server has read its answer.
    let trace = CallTrace::new();
    let hold = Hold::new();
    let mut s = Stdio(Lines::shapes_held(
        &["--pool-replicas", "py=1"],
        &trace,
        &hold,
    ));
    hold.hold();
    s.send(&modern_request(
        json!("slow"),
        "tools/call",
        json!({"name": "slowEcho", "arguments": {"_1": 1}}),
        json!({"progressToken": "p", "io.modelcontextprotocol/logLevel": "debug"}),
    ));
    // Its progress flows until it is cancelled…
    let first = s.next();
    assert_eq!(first["method"], "notifications/progress", "{first}");
    assert_eq!(first["params"]["progressToken"], "p");
    trace.wait_started("slowEcho", 1);
    s.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": "slow", "reason": "test"}}),
    );
    // The cancellation is taken by the time the ping is answered (a
    // progress notification sent before it may still precede the answer)…
    s.send(&json!({"jsonrpc": "2.0", "id": "after-cancel", "method": "ping"}));
    loop {
        let line = s.next();
        if line["method"] == "notifications/progress" {
            continue;
        }
        assert_eq!(
            line,
            json!({"jsonrpc": "2.0", "id": "after-cancel", "result": {}})
        );
        break;
    }
    // …then nothing at all: the call ends in its pool, and the next call,
    // which waits for that process, is the next line.
    hold.release();
    let reply = s.ask(&modern_request(
        json!("next"),
        "tools/call",
        json!({"name": "addOne", "arguments": {"_1": 1}}),
        json!({}),
    ));
    assert_eq!(
        reply["id"], "next",
        "unexpected output after cancellation: {reply}"
    );
    assert_eq!(reply["result"]["content"][0]["text"], "2", "{reply}");
    trace.assert_second_waited_for_first();
    s.quiet("end");
    s.finish();
}

#[test]
fn subscriptions_listen_acknowledges_and_ends_with_a_result() {
    let mut s = Stdio::start();
    let ack = s.ask(&modern_request(
        json!(7),
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true}}),
        json!({}),
    ));
    assert_eq!(
        ack,
        json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
            "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": 7},
                       "notifications": {"toolsListChanged": true}}})
    );
    // A second one, cancelled: it ends silently.
    let ack = s.ask(&modern_request(
        json!("gone"),
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
        json!({}),
    ));
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "gone"
    );
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "gone"}}));
    s.quiet("q");
    // Other requests are served while subscriptions are open.
    let reply = s.ask(&modern_request(
        json!(8),
        "tools/call",
        json!({"name": "addOne", "arguments": {"_1": 1}}),
        json!({}),
    ));
    assert_eq!(reply["result"]["content"][0]["text"], "2");
    // At EOF the open subscription ends gracefully with its result, then
    // the stdio teardown notification.
    let rest = s.finish();
    let lines: Vec<&str> = rest.lines().collect();
    assert_eq!(lines.len(), 2, "{rest}");
    let teardown = parse(lines[1]);
    assert_eq!(teardown["method"], "notifications/cancelled");
    assert_eq!(teardown["params"]["requestId"], json!(7));
    let closing = parse(lines[0]);
    assert_eq!(closing["id"], json!(7));
    assert_complete(&closing["result"]);
    assert_eq!(
        closing["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        json!(7)
    );
}

// ---- HTTP -------------------------------------------------------------------

/// A modern POST with the standard headers (`headers` replace or add).
fn modern_post(client: &mut Client, body: &Value, headers: &[(&str, &str)]) -> Response {
    let method = body["method"].as_str().unwrap_or("").to_string();
    let name = body["params"]["name"].as_str().map(str::to_string);
    let mut all: Vec<(&str, &str)> =
        vec![("MCP-Protocol-Version", MODERN), ("Mcp-Method", &method)];
    if let Some(n) = &name {
        all.push(("Mcp-Name", n));
    }
    for (k, v) in headers {
        all.retain(|(name, _)| !name.eq_ignore_ascii_case(k));
        if !v.is_empty() {
            all.push((k, v));
        }
    }
    let request = post_request(client.addr, None, body.to_string().as_bytes(), &all);
    client.roundtrip(&request)
}

#[test]
fn http_serves_modern_requests_without_a_session() {
    let server = HttpServer::start(&[]);
    let mut client = server.connect();
    let discover = modern_request(json!(1), "server/discover", json!({}), json!({}));
    let reply = modern_post(&mut client, &discover, &[]).expect(200);
    assert!(reply.header("mcp-session-id").is_none());
    assert_complete(&reply.json()["result"]);
    let call = modern_request(
        json!(2),
        "tools/call",
        json!({"name": "main__addOne", "arguments": {"_1": 2}}),
        json!({}),
    );
    let reply = modern_post(&mut client, &call, &[]).expect(200).json();
    assert_eq!(reply["result"]["content"][0]["text"], "3");
    assert_complete(&reply["result"]);
    // The statuses of 2026-07-28.
    let ping = modern_request(json!(3), "ping", json!({}), json!({}));
    let reply = modern_post(&mut client, &ping, &[]).expect(404);
    assert_eq!(reply.json()["error"]["code"], -32601);
    let mut old = discover.clone();
    old["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let reply = modern_post(&mut client, &old, &[("MCP-Protocol-Version", "v999.0.0")]).expect(400);
    assert_eq!(reply.json()["error"]["code"], -32022);
    assert_eq!(reply.json()["error"]["data"]["requested"], "v999.0.0");
    // The header must say what the body says.
    let reply = modern_post(&mut client, &old, &[]).expect(400);
    assert_eq!(reply.json()["error"]["code"], -32020);
    let no_meta = json!({"jsonrpc": "2.0", "id": 4, "method": "server/discover", "params": {}});
    let reply = modern_post(&mut client, &no_meta, &[]).expect(400);
    assert_eq!(reply.json()["error"]["code"], -32602);
    let no_meta = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"});
    let reply = modern_post(&mut client, &no_meta, &[]).expect(400);
    assert_eq!(reply.json()["error"]["code"], -32602);
    assert_eq!(reply.json()["id"], 5);
    for headers in [
        vec![("Mcp-Method", "")],
        vec![("Mcp-Method", "TOOLS/CALL")],
        vec![("Mcp-Name", "")],
        vec![("Mcp-Name", "main__other")],
        vec![("MCP-Protocol-Version", "")],
    ] {
        let reply = modern_post(&mut client, &call, &headers).expect(400);
        assert_eq!(reply.json()["error"]["code"], -32020, "{headers:?}");
        assert_eq!(reply.json()["id"], 2);
    }
    // Base64-encoded Mcp-Name and blanks around header values are fine.
    let reply = modern_post(
        &mut client,
        &call,
        &[("Mcp-Name", "=?base64?bWFpbl9fYWRkT25l?=")],
    )
    .expect(200);
    assert_eq!(reply.json()["result"]["content"][0]["text"], "3");
    // A legacy session on the same endpoint works as before.
    let (mut legacy, sid) = server.session();
    let list = legacy
        .post(
            Some(&sid),
            &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}),
        )
        .expect(200)
        .json();
    assert!(list["result"].get("resultType").is_none());
}

#[test]
fn http_listen_streams_and_closing_the_stream_cancels() {
    let trace = CallTrace::new();
    let hold = Hold::new();
    let server = HttpServer::start_held(&[], &trace, &hold);
    let mut listener = server.connect();
    let listen = modern_request(
        json!(5),
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
        json!({}),
    );
    let request = post_request(
        listener.addr,
        None,
        listen.to_string().as_bytes(),
        &[
            ("MCP-Protocol-Version", MODERN),
            ("Mcp-Method", "subscriptions/listen"),
        ],
    );
    listener.send(&request);
    let head = listener.read_head();
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-type"), Some("text/event-stream"));
    assert_eq!(head.header("x-accel-buffering"), Some("no"));
    let chunk = String::from_utf8(listener.read_chunk().expect("an event")).unwrap();
    let data = chunk
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .expect("a data line");
    let ack = parse(data);
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        5
    );
    drop(listener);
    // A modern call whose client goes away is dropped; the server goes on
    // (the call is held in its pool until another call has been answered).
    hold.hold();
    let mut caller = server.connect();
    let slow = modern_request(
        json!(6),
        "tools/call",
        json!({"name": "main__slowEcho", "arguments": {"_1": 1}}),
        json!({}),
    );
    let request = post_request(
        caller.addr,
        None,
        slow.to_string().as_bytes(),
        &[
            ("MCP-Protocol-Version", MODERN),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "main__slowEcho"),
        ],
    );
    caller.send(&request);
    trace.wait_started("slowEcho", 1);
    drop(caller);
    let mut client = server.connect();
    let call = modern_request(
        json!(7),
        "tools/call",
        json!({"name": "main__addOne", "arguments": {"_1": 9}}),
        json!({}),
    );
    let reply = modern_post(&mut client, &call, &[]).expect(200).json();
    assert_eq!(reply["result"]["content"][0]["text"], "10");
    hold.release();
    let _ = &server.proc;
}

#[test]
fn the_router_serves_modern_requests_with_module_names() {
    let dir = TempDir::new();
    let alpha = write_manifest(&dir, "alpha/manifest.json", "alpha", |_| {});
    let beta = write_manifest(&dir, "beta/manifest.json", "beta", |_| {});
    let server = router(dir, &[&alpha, &beta], &[]);
    let mut client = server.connect();
    let list = modern_request(json!(1), "tools/list", json!({}), json!({}));
    let reply = modern_post(&mut client, &list, &[]).expect(200).json();
    let result = &reply["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "morloc"
    );
    let names: Vec<&str> = result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"alpha__addOne") && names.contains(&"beta__addOne"),
        "{names:?}"
    );
    for (id, tool, arg, text) in [(2, "alpha__addOne", 1, "2"), (3, "beta__addOne", 10, "11")] {
        let call = modern_request(
            json!(id),
            "tools/call",
            json!({"name": tool, "arguments": {"_1": arg}}),
            json!({}),
        );
        let reply = modern_post(&mut client, &call, &[]).expect(200).json();
        assert_eq!(reply["result"]["content"][0]["text"], text, "{reply}");
        assert_eq!(reply["result"]["resultType"], "complete");
    }
    let bare = modern_request(
        json!(4),
        "tools/call",
        json!({"name": "addOne", "arguments": {}}),
        json!({}),
    );
    let reply = modern_post(&mut client, &bare, &[]).expect(400).json();
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
}

// ---- reload -----------------------------------------------------------------

/// Rewrites the served manifest the way a rebuild does (new file, renamed
/// over the old one), dropping the command `drop`.
fn rebuild_without(dir: &TempDir, drop: &str) {
    let scratch = TempDir::new();
    let written = util::shapes_manifest_with(&scratch, |m| {
        let commands = m["commands"].as_array_mut().unwrap();
        commands.retain(|c| c["name"] != drop);
        m["build"]["time"] = json!(1);
    });
    let next = dir.join("manifest.json.next");
    std::fs::copy(&written, &next).unwrap();
    std::fs::rename(&next, dir.join("manifest.json")).unwrap();
}

fn tool_count(list: &Value) -> usize {
    list["result"]["tools"].as_array().map_or(0, Vec::len)
}

#[test]
fn a_rebuilt_program_is_reloaded_and_subscribers_are_told() {
    let dir = TempDir::new();
    let manifest = util::shapes_manifest(&dir);
    let trace = CallTrace::new();
    let hold = Hold::new();
    let mut s = Stdio(Lines::mcp(&manifest, &[], &[trace.env(), hold.env()], None));
    // A legacy session and a modern subscription on the same process.
    let init = s.ask(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "l", "version": "1"}}}));
    assert_eq!(init["result"]["capabilities"]["tools"]["listChanged"], true);
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let before = tool_count(&s.ask(&modern_request(
        json!(1),
        "tools/list",
        json!({}),
        json!({}),
    )));
    let ack = s.ask(&modern_request(
        json!("sub"),
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
        json!({}),
    ));
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    // A call running during the rebuild (held in its pool until both
    // notifications are out) finishes on the old pools.
    hold.hold();
    s.send(
        &json!({"jsonrpc": "2.0", "id": "running", "method": "tools/call",
        "params": {"name": "slowEcho", "arguments": {"_1": 1}}}),
    );
    trace.wait_started("slowEcho", 1);
    rebuild_without(&dir, "hello");
    let mut got = vec![s.next(), s.next()];
    hold.release();
    got.push(s.next());
    let find = |pred: &dyn Fn(&Value) -> bool| got.iter().find(|m| pred(m)).cloned();
    let modern_note = find(&|m| {
        m["method"] == "notifications/tools/list_changed"
            && m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "sub"
    });
    assert!(modern_note.is_some(), "{got:?}");
    let legacy_note = find(&|m| {
        m["method"] == "notifications/tools/list_changed" && m["params"].get("_meta").is_none()
    });
    assert!(legacy_note.is_some(), "{got:?}");
    // Both notifications came while the call was held; its answer after.
    let answer = &got[2];
    assert_eq!(answer["id"], "running", "{got:?}");
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "1", "{answer}");
    // The new surface is served, to both eras; new calls reach fresh pools.
    let after = s.ask(&modern_request(
        json!(2),
        "tools/list",
        json!({}),
        json!({}),
    ));
    assert_eq!(tool_count(&after), before - 1);
    let legacy = s.ask(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}));
    assert_eq!(tool_count(&legacy), before - 1);
    let reply = s.ask(&json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "addOne", "arguments": {"_1": 1}}}));
    assert_eq!(reply["result"]["content"][0]["text"], "2", "{reply}");
    // A manifest that does not load leaves the program serving.
    std::fs::write(dir.join("manifest.json.next"), "{ not json").unwrap();
    std::fs::rename(dir.join("manifest.json.next"), dir.join("manifest.json")).unwrap();
    wait_for("the server's report of the bad manifest", || {
        s.proc.stderr_now().contains("cannot be served")
    });
    s.quiet("still");
    let reply = s.ask(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "addOne", "arguments": {"_1": 2}}}));
    assert_eq!(reply["result"]["content"][0]["text"], "3", "{reply}");
    let stderr = s.proc.stderr_now();
    assert!(stderr.contains("was rebuilt; now serving"), "{stderr}");
    assert!(stderr.contains("cannot be served"), "{stderr}");
    let rest = s.finish();
    assert!(rest.contains(r#""id":"sub""#), "{rest}");
}

/// What the server holds for a program's pools goes with them when the
/// program is rebuilt: the old processes' pipes and spare sockets are
/// closed, so open descriptors do not grow with rebuilds.
#[test]
fn open_descriptors_do_not_grow_with_rebuilds() {
    let dir = TempDir::new();
    let manifest = util::shapes_manifest(&dir);
    let mut s = Stdio(Lines::mcp(&manifest, &[], &[], None));
    s.ask(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "l", "version": "1"}}}));
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let pid = s.proc.pid() as i32;
    let mut counts = Vec::new();
    for round in 0..4 {
        if round > 0 {
            let scratch = TempDir::new();
            let written = util::shapes_manifest_with(&scratch, |m| {
                m["build"]["time"] = json!(round);
            });
            let next = dir.join("manifest.json.next");
            std::fs::copy(&written, &next).unwrap();
            std::fs::rename(&next, dir.join("manifest.json")).unwrap();
            wait_for("the rebuild to be served", || {
                s.proc
                    .stderr_now()
                    .matches("was rebuilt; now serving")
                    .count()
                    == round
            });
        }
        // A call readies the program's pool (and its spare socket); the
        // ping after it ends the turn that made the spare.
        s.send(
            &json!({"jsonrpc": "2.0", "id": round + 1, "method": "tools/call",
            "params": {"name": "addOne", "arguments": {"_1": round}}}),
        );
        // The session hears of each rebuild before the answer.
        let mut reply = s.next();
        while reply["method"] == "notifications/tools/list_changed" {
            reply = s.next();
        }
        assert_eq!(
            reply["result"]["content"][0]["text"],
            (round + 1).to_string(),
            "{reply}"
        );
        s.quiet("settled");
        counts.push(procfs::fd_count(pid));
    }
    assert!(
        counts.windows(2).all(|w| w[0] == w[1]),
        "open descriptors after each rebuild: {counts:?}"
    );
    s.finish();
}

#[test]
fn an_http_listen_stream_hears_of_a_rebuild() {
    let dir = TempDir::new();
    let manifest = util::shapes_manifest(&dir);
    let mut command = util::cmd(["mcp"]);
    command
        .arg(&manifest)
        .args(["--http-port", "0", "--lazy-pools"]);
    let server = HttpServer::spawn(TempDir::new(), &mut command);
    let mut listener = server.connect();
    let listen = modern_request(
        json!("tools"),
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
        json!({}),
    );
    let request = post_request(
        listener.addr,
        None,
        listen.to_string().as_bytes(),
        &[
            ("MCP-Protocol-Version", MODERN),
            ("Mcp-Method", "subscriptions/listen"),
        ],
    );
    listener.send(&request);
    assert_eq!(listener.read_head().status, 200);
    let event = |chunk: Vec<u8>| -> Option<Value> {
        let text = String::from_utf8(chunk).unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix("data: "))
            .map(parse)
    };
    let ack = event(listener.read_chunk().unwrap()).expect("the acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    rebuild_without(&dir, "hello");
    // Keep-alive comments may come first; the change arrives within seconds.
    let note = loop {
        let chunk = listener.read_chunk().expect("the stream stays open");
        if let Some(msg) = event(chunk) {
            break msg;
        }
    };
    assert_eq!(note["method"], "notifications/tools/list_changed");
    assert_eq!(
        note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "tools"
    );
    let mut client = server.connect();
    let list = modern_request(json!(1), "tools/list", json!({}), json!({}));
    let reply = modern_post(&mut client, &list, &[]).expect(200).json();
    let names: Vec<&str> = reply["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        !names.contains(&"main__hello") && names.contains(&"main__addOne"),
        "{names:?}"
    );
}
