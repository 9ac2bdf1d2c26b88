//! `GET /metrics`: after a known mix of calls, every counter equals what was
//! done; the endpoint is behind the bearer token like `/mcp`.

use std::collections::HashMap;

use serde_json::json;

use crate::support::http::{simple_request, tool_call, Server};

/// The samples of an exposition, by series (name and labels as written).
fn samples(text: &str) -> HashMap<String, f64> {
    let mut out = HashMap::new();
    for line in text.lines() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("a sample is `series value`");
        let value = match value {
            "+Inf" => f64::INFINITY,
            v => v
                .parse()
                .unwrap_or_else(|e| panic!("bad value in {line:?}: {e}")),
        };
        assert!(
            out.insert(series.to_string(), value).is_none(),
            "{series} twice"
        );
    }
    out
}

#[test]
fn counters_equal_the_calls_made() {
    let server = Server::start(&["--plain-tool-names"]);
    let (mut client, sid) = server.session();
    let mut id = 10;
    let mut call = |client: &mut crate::support::http::Client, tool: &str, args| {
        id += 1;
        client
            .post(Some(&sid), &tool_call(id, tool, args))
            .expect(200)
            .json()
    };
    for n in 0..3 {
        let reply = call(&mut client, "addOne", json!({"_1": n}));
        assert_eq!(reply["result"]["isError"], false, "{reply}");
    }
    let refused = call(&mut client, "addOne", json!({"_1": "x"}));
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let failed = call(&mut client, "pyFail", json!({"_1": 1}));
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    let pure = call(&mut client, "pureAnswer", json!({}));
    assert_eq!(pure["result"]["isError"], false, "{pure}");

    let mut scraper = server.connect();
    let reply = scraper.roundtrip(&simple_request("GET", "/metrics", server.addr, ""));
    let reply = reply.expect(200);
    assert_eq!(
        reply.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let text = reply.text();
    let s = samples(&text);
    let calls = |tool: &str, outcome: &str| {
        s.get(&format!(
            "mcp_server_tool_calls_total{{gen_ai_tool_name=\"{tool}\",outcome=\"{outcome}\"}}"
        ))
        .copied()
    };
    assert_eq!(calls("addOne", "ok"), Some(3.0), "{text}");
    assert_eq!(calls("addOne", "tool_error"), Some(1.0), "{text}");
    assert_eq!(calls("pyFail", "tool_error"), Some(1.0), "{text}");
    assert_eq!(calls("pureAnswer", "ok"), Some(1.0), "{text}");
    let total: f64 = s
        .iter()
        .filter(|(k, _)| k.starts_with("mcp_server_tool_calls_total"))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(total, 6.0, "{text}");
    let histogram = |suffix: &str, extra: &str| {
        s.get(&format!(
            "mcp_server_operation_duration_seconds_{suffix}{{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"addOne\",error_type=\"\"{extra}}}"
        ))
        .copied()
    };
    assert_eq!(histogram("count", ""), Some(3.0), "{text}");
    assert_eq!(histogram("bucket", ",le=\"+Inf\""), Some(3.0), "{text}");
    assert_eq!(s.get("mcp_server_calls_in_flight"), Some(&0.0), "{text}");
    assert_eq!(s.get("mcp_server_http_sessions"), Some(&1.0), "{text}");
    assert_eq!(
        s.get("mcp_server_pool_processes{program=\"main\",language=\"py\",state=\"ready\"}"),
        Some(&1.0),
        "{text}"
    );
}

#[test]
fn metrics_need_the_token_when_one_is_set() {
    let server = Server::start(&["--auth-token", "s3cret"]);
    let mut client = server.connect();
    let refused = client.roundtrip(&simple_request("GET", "/metrics", server.addr, ""));
    refused.expect(401);
    let mut client = server.connect();
    let allowed = client.roundtrip(&simple_request(
        "GET",
        "/metrics",
        server.addr,
        "Authorization: Bearer s3cret\r\n",
    ));
    assert!(allowed
        .expect(200)
        .text()
        .contains("# TYPE mcp_server_tool_calls_total counter"));
    let mut client = server.connect();
    let wrong = client.roundtrip(&simple_request(
        "POST",
        "/metrics",
        server.addr,
        "Authorization: Bearer s3cret\r\nContent-Length: 0\r\n",
    ));
    assert_eq!(wrong.expect(405).header("allow"), Some("GET, OPTIONS"));
}
