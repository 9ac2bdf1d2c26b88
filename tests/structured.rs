//! Structured output in MCP 2026-07-28 (SEP-2106): every typed JSON return
//! has an `outputSchema` in the modern `tools/list`, and its calls carry the
//! raw value as `structuredContent`, equal to the parsed text block, over
//! stdio, an HTTP body and an event stream. Legacy answers keep the
//! reference's shape (records only).

use serde_json::{json, Value};

use crate::support::http::{post_request, Server as HttpServer};
use crate::support::stdio::Lines;
use crate::util::{self, TempDir};

const MODERN: &str = "2026-07-28";

fn modern(id: u64, method: &str, mut params: Value) -> Value {
    let meta = params["_meta"].take();
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    if let (Value::Object(m), Value::Object(extra)) = (&mut params["_meta"], meta) {
        m.extend(extra);
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn call(id: u64, tool: &str, arguments: Value) -> Value {
    modern(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

/// The shapes program's typed tools: arguments, and the value they return.
fn cases() -> Vec<(&'static str, Value, Value)> {
    vec![
        ("addOne", json!({"_1": 41}), json!(42)),
        ("bigList", json!({"_1": 3}), json!([0, 1, 2])),
        ("hello", json!({"_1": "Ann"}), json!("Hello, Ann!")),
        (
            "mkResult",
            json!({"_1": 7}),
            json!({"status": "ok", "value": 7}),
        ),
        ("maybeDouble", json!({}), Value::Null),
        ("scaleReal", json!({"_1": 1.5, "_2": 2.0}), json!(3.0)),
        ("swapPair", json!({"_1": [1, "a"]}), json!(["a", 1])),
        ("pureAnswer", json!({}), json!(42)),
    ]
}

/// Checks one modern call result: its raw value, equal to its parsed text.
#[track_caller]
fn assert_structured(tool: &str, result: &Value, want: &Value) {
    assert_eq!(result["isError"], false, "{tool}: {result}");
    let text = result["content"][0]["text"].as_str().expect("text block");
    let parsed: Value = serde_json::from_str(text).expect("the text is JSON");
    assert_eq!(result["structuredContent"], parsed, "{tool}: {result}");
    assert_eq!(&parsed, want, "{tool}");
    assert!(
        result.get("structuredContent").is_some(),
        "{tool}: {result}"
    );
}

#[test]
fn modern_calls_carry_every_typed_value_and_legacy_ones_do_not() {
    let dir = TempDir::new();
    let manifest = util::shapes_manifest(&dir);
    let mut s = Lines::mcp(&manifest, &[], &[], Some(dir));
    let list = s.ask_json(&modern(1, "tools/list", json!({})));
    let tools = list["result"]["tools"].as_array().expect("tools").clone();
    let schema = |name: &str| -> Value {
        let tool = tools.iter().find(|t| t["name"] == name).expect(name);
        tool["outputSchema"].clone()
    };
    assert_eq!(schema("addOne")["type"], "integer");
    assert_eq!(
        schema("bigList")["items"],
        json!({"type": "integer"}),
        "{}",
        schema("bigList")
    );
    assert_eq!(schema("hello")["type"], "string");
    assert_eq!(schema("maybeDouble")["type"], json!(["integer", "null"]));
    assert_eq!(schema("scaleReal")["type"], "number");
    assert_eq!(
        schema("swapPair")["prefixItems"].as_array().map(Vec::len),
        Some(2)
    );
    assert_eq!(schema("mkResult")["type"], "object");
    for tool in &tools {
        let out = &tool["outputSchema"];
        assert_eq!(
            out["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "{tool}"
        );
    }
    let init = s.ask_json(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "l", "version": "1"}}}));
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    s.send_json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let mut id = 10;
    for (tool, arguments, want) in cases() {
        id += 1;
        let reply = s.ask_json(&call(id, tool, arguments.clone()));
        assert_structured(tool, &reply["result"], &want);
        // The legacy answer of the same call: a record only.
        let legacy = s.ask_json(&json!({"jsonrpc": "2.0", "id": id + 100,
            "method": "tools/call", "params": {"name": tool, "arguments": arguments}}));
        let text = legacy["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("");
        assert_eq!(
            serde_json::from_str::<Value>(text).ok(),
            Some(want.clone()),
            "{legacy}"
        );
        let got = legacy["result"].get("structuredContent");
        if tool == "mkResult" {
            assert_eq!(got, Some(&want), "{legacy}");
        } else {
            assert_eq!(got, None, "{tool}: {legacy}");
        }
    }
    // Byte for byte, a legacy answer is the reference's.
    let line = {
        s.send_json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "bigList", "arguments": {"_1": 2}}}));
        s.line()
    };
    assert_eq!(
        line,
        r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"[0,1]"}],"isError":false}}"#
    );
    // And a modern one writes the value raw after its escaped text.
    s.send_json(&call(3, "hello", json!({"_1": "\"q\""})));
    let line = s.line();
    assert!(
        line.contains(
            r#""content":[{"type":"text","text":"\"Hello, \\\"q\\\"!\""}],"structuredContent":"Hello, \"q\"!","isError":false"#
        ),
        "{line}"
    );
    // A tool error has no structured value.
    let failed = s.ask_json(&call(4, "pyFail", json!({"_1": 1})));
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    assert!(failed["result"].get("structuredContent").is_none());
    s.finish();
}

#[test]
fn http_bodies_and_event_streams_carry_the_raw_value() {
    let server = HttpServer::start(&[]);
    let mut c = server.connect();
    let headers = |method: &'static str, name: &'static str| {
        vec![
            ("MCP-Protocol-Version", MODERN),
            ("Mcp-Method", method),
            ("Mcp-Name", name),
        ]
    };
    // A JSON body: its Content-Length counts the raw value too.
    let body = call(1, "main__bigList", json!({"_1": 1000}));
    let request = post_request(
        c.addr,
        None,
        body.to_string().as_bytes(),
        &headers("tools/call", "main__bigList"),
    );
    let response = c.roundtrip(&request).expect(200);
    let want: Vec<u64> = (0..1000).collect();
    assert_structured("bigList", &response.json()["result"], &json!(want));
    // An event stream (the call asked for progress): the same message.
    let mut body = call(2, "main__mkResult", json!({"_1": 5}));
    body["params"]["_meta"]["progressToken"] = json!("p");
    let request = post_request(
        c.addr,
        None,
        body.to_string().as_bytes(),
        &headers("tools/call", "main__mkResult"),
    );
    let response = c.roundtrip(&request).expect(200);
    let text = response.text();
    let data = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .find(|d| d.contains("\"id\":2"))
        .unwrap_or_else(|| panic!("no response event in {text:?}"));
    let message: Value = serde_json::from_str(data).expect("event data is JSON");
    assert_structured(
        "mkResult",
        &message["result"],
        &json!({"status": "ok", "value": 5}),
    );
}
