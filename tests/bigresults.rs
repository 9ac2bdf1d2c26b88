//! End-to-end tests of big results as resources (`--max-result-chars`):
//! a long list or string comes back as a preview and a link, its pages read
//! through `resources/read` reassemble it exactly, only its owner reads it,
//! it expires and is freed at the cap, a task's result is linked the same
//! way, and without the option nothing changes.

use serde_json::{json, Value};

use crate::support::http::{post_request, simple_request, Client, Server as HttpServer};
use crate::support::stdio::Lines;
use crate::util::{self, wait_until, TempDir, NEVER};

const MODERN: &str = "2026-07-28";

/// A stdio server of the shapes program with `extra` options.
fn start(extra: &[&str]) -> Lines {
    let dir = TempDir::new();
    let manifest = util::shapes_manifest_with(&dir, |_| {});
    Lines::mcp(&manifest, extra, &[], Some(dir))
}

/// Opens a legacy session.
fn initialize(s: &mut Lines) -> Value {
    let init = s.ask_json(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}));
    s.send_json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    init
}

fn legacy(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn modern(id: u64, method: &str, mut params: Value, tasks: bool) -> Value {
    let caps = if tasks {
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
    } else {
        json!({})
    };
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": caps,
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn call(tool: &str, n: u64) -> Value {
    json!({"name": tool, "arguments": {"_1": n}})
}

/// The link's URI of a linked result, after checking its shape.
#[track_caller]
fn link_of(result: &Value, kind: &str, count: u64) -> String {
    assert_eq!(result["isError"], false, "{result}");
    let content = result["content"].as_array().expect("content");
    assert_eq!(content.len(), 2, "{result}");
    assert_eq!(content[0]["type"], "text");
    assert_eq!(content[1]["type"], "resource_link", "{result}");
    let uri = content[1]["uri"].as_str().expect("uri").to_string();
    assert!(uri.starts_with("morloc://result/"), "{uri}");
    let link = &result["structuredContent"]["resultLink"];
    assert_eq!(link["uri"], uri.as_str(), "{result}");
    assert_eq!(link["type"], kind);
    assert_eq!(link["count"], count, "{result}");
    let text = content[0]["text"].as_str().unwrap_or_default();
    assert!(text.contains(&uri), "{text}");
    uri
}

/// Reads every page of `uri` through `read` (a `resources/read` answer per
/// page URI) and returns the page texts.
fn pages(read: &mut dyn FnMut(&str) -> Value, uri: &str, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut next = Some(format!("{uri}?offset=0&limit={limit}"));
    while let Some(page) = next.take() {
        let reply = read(&page);
        let content = &reply["result"]["contents"][0];
        assert_eq!(content["uri"], page.as_str(), "{reply}");
        out.push(content["text"].as_str().expect("text").to_string());
        next = content["_meta"]["next"].as_str().map(str::to_string);
    }
    out
}

#[test]
fn stdio_big_lists_and_strings_become_links_read_in_pages() {
    let mut s = start(&["--max-result-chars", "1000"]);
    let init = initialize(&mut s);
    assert_eq!(init["result"]["capabilities"]["resources"], json!({}));
    // A small result is unchanged.
    let small = s.ask_json(&legacy(1, "tools/call", call("bigList", 3)));
    assert_eq!(
        small["result"],
        json!({"content": [{"type": "text", "text": "[0,1,2]"}], "isError": false})
    );
    // A list: preview cut at an element, then the link.
    let big = s.ask_json(&legacy(2, "tools/call", call("bigList", 5000)));
    let uri = link_of(&big["result"], "list", 5000);
    let preview = big["result"]["content"][0]["text"].as_str().unwrap();
    let first_line = preview.lines().next().unwrap();
    let shown: Vec<u64> = serde_json::from_str(first_line).expect("a JSON preview");
    assert!(!shown.is_empty() && shown.len() < 5000, "{first_line}");
    assert_eq!(shown, (0..shown.len() as u64).collect::<Vec<_>>());
    assert!(
        preview.contains("5000 elements"),
        "the shape is shown: {preview}"
    );
    let mut id = 10;
    let mut read = |u: &str| {
        id += 1;
        s.ask_json(&legacy(id, "resources/read", json!({"uri": u})))
    };
    let mut all = Vec::new();
    for page in pages(&mut read, &uri, 700) {
        let items: Vec<u64> = serde_json::from_str(&page).expect("a page is a JSON array");
        all.extend(items);
    }
    assert_eq!(all, (0..5000).collect::<Vec<u64>>());
    // The whole value without a query.
    let whole = read(&uri);
    let text = whole["result"]["contents"][0]["text"].as_str().unwrap();
    let expected: Vec<String> = (0..5000).map(|i| i.to_string()).collect();
    assert_eq!(text, format!("[{}]", expected.join(",")));
    // A string: pages of characters.
    let big = s.ask_json(&legacy(3, "tools/call", call("bigText", 12345)));
    let text_uri = link_of(&big["result"], "string", 12345);
    let mut id = 100;
    let mut read = |u: &str| {
        id += 1;
        s.ask_json(&legacy(id, "resources/read", json!({"uri": u})))
    };
    assert_eq!(
        pages(&mut read, &text_uri, 1000).concat(),
        "x".repeat(12345)
    );
    // Both are listed, and the template is advertised.
    let listed = s.ask_json(&legacy(4, "resources/list", json!({})));
    let uris: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert_eq!(uris, [uri.as_str(), text_uri.as_str()]);
    let templates = s.ask_json(&legacy(5, "resources/templates/list", json!({})));
    assert_eq!(
        templates["result"]["resourceTemplates"][0]["uriTemplate"],
        "morloc://result/{id}{?offset,limit}"
    );
    // Bad URIs are refused by name; the server keeps serving.
    for (bad, why) in [
        ("morloc://result/nope.00", "no such result"),
        ("morloc://result/x?page=2", "unknown query parameter 'page'"),
        ("https://example.com/", "not a result URI"),
    ] {
        let reply = s.ask_json(&legacy(6, "resources/read", json!({"uri": bad})));
        assert_eq!(reply["error"]["code"], -32602, "{reply}");
        let message = reply["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(why), "{bad}: {message}");
    }
    // A record tool's outputSchema admits the link object.
    let tools = s.ask_json(&legacy(7, "tools/list", json!({})));
    let mk = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mkResult")
        .unwrap()
        .clone();
    assert_eq!(mk["outputSchema"]["type"], "object", "{mk}");
    assert_eq!(
        mk["outputSchema"]["anyOf"].as_array().map(Vec::len),
        Some(2)
    );
    s.quiet();
}

#[test]
fn without_the_option_everything_is_as_before() {
    let mut with = start(&["--max-result-chars", "100000000"]);
    let mut without = start(&[]);
    let init = initialize(&mut without);
    assert!(init["result"]["capabilities"].get("resources").is_none());
    initialize(&mut with);
    let mut answers = Vec::new();
    for s in [&mut without, &mut with] {
        let list = s.ask(&legacy(1, "tools/list", json!({})).to_string());
        let result = s.ask(&legacy(2, "tools/call", call("bigList", 20000)).to_string());
        let record = s.ask(
            &legacy(
                3,
                "tools/call",
                json!({"name": "mkResult", "arguments": {"_1": 4}}),
            )
            .to_string(),
        );
        answers.push((list, result, record));
    }
    // The results are byte-identical, a value under the limit included.
    assert_eq!(answers[0].1, answers[1].1);
    assert_eq!(answers[0].2, answers[1].2);
    assert_ne!(
        answers[0].0, answers[1].0,
        "outputSchema is wrapped only when on"
    );
    // Without the option resources/* are unknown, as before.
    let reply = without.ask_json(&legacy(
        4,
        "resources/read",
        json!({"uri": "morloc://result/a.b"}),
    ));
    assert_eq!(reply["error"]["code"], -32601, "{reply}");
}

/// A modern POST with the mirrored headers and `Authorization: <auth>`
/// (none when empty).
fn post(client: &mut Client, body: &Value, auth: &str) -> (u16, Value) {
    let method = body["method"].as_str().unwrap_or("").to_string();
    let name = body["params"]["name"]
        .as_str()
        .or(body["params"]["uri"].as_str())
        .map(str::to_string);
    let mut headers: Vec<(&str, &str)> =
        vec![("MCP-Protocol-Version", MODERN), ("Mcp-Method", &method)];
    if !auth.is_empty() {
        headers.push(("Authorization", auth));
    }
    if let Some(n) = &name {
        headers.push(("Mcp-Name", n));
    }
    let request = post_request(client.addr, None, body.to_string().as_bytes(), &headers);
    let response = client.roundtrip(&request);
    (response.status, response.json())
}

/// `resources/read` of `uri` under `auth`.
fn read_as(c: &mut Client, auth: &str, uri: &str) -> Value {
    post(
        c,
        &modern(2, "resources/read", json!({"uri": uri}), false),
        auth,
    )
    .1
}

/// `resources/list` under `auth`: the URIs listed.
fn listed_as(c: &mut Client, auth: &str) -> Vec<String> {
    let (_, listed) = post(c, &modern(3, "resources/list", json!({}), false), auth);
    let resources = listed["result"]["resources"].as_array().expect("resources");
    resources
        .iter()
        .map(|r| r["uri"].as_str().expect("uri").to_string())
        .collect()
}

#[test]
fn http_results_belong_to_their_owner_expire_and_are_capped() {
    // Without authentication a stateless call's results belong to its
    // peer's address: alice at 127.0.0.1, bob at .2, carol at .3.
    let server = HttpServer::start(&["--max-result-chars", "100", "--task-ttl", "2"]);
    let mut c = server.connect();
    let mut bob = Client::connect_from(server.addr, 2);
    let mut carol = Client::connect_from(server.addr, 3);
    let (status, made) = post(
        &mut c,
        &modern(1, "tools/call", call("main__bigList", 1000), false),
        "",
    );
    assert_eq!(status, 200, "{made}");
    assert_eq!(made["result"]["resultType"], "complete");
    let uri = link_of(&made["result"], "list", 1000);
    let page = format!("{uri}?offset=990&limit=100");
    let (status, mine) = post(
        &mut c,
        &modern(2, "resources/read", json!({"uri": page}), false),
        "",
    );
    assert_eq!(status, 200, "{mine}");
    assert_eq!(mine["result"]["resultType"], "complete");
    assert_eq!(
        mine["result"]["contents"][0]["text"],
        "[990,991,992,993,994,995,996,997,998,999]"
    );
    // Another address finds nothing, whatever header it sends.
    for auth in ["", "Bearer alice", "Bearer bob"] {
        let theirs = read_as(&mut bob, auth, &page);
        assert_eq!(theirs["error"]["code"], -32602, "{theirs}");
        assert_eq!(listed_as(&mut bob, auth), Vec::<String>::new());
    }
    // Mcp-Name must carry the URI.
    let body = modern(4, "resources/read", json!({"uri": page}), false);
    let request = post_request(
        c.addr,
        None,
        body.to_string().as_bytes(),
        &[
            ("MCP-Protocol-Version", MODERN),
            ("Mcp-Method", "resources/read"),
            ("Mcp-Name", "morloc://result/other"),
        ],
    );
    let response = c.roundtrip(&request);
    assert_eq!(response.status, 400);
    assert_eq!(response.json()["error"]["code"], -32020);
    // The cap: an owner's 33rd result frees its first.
    let mut uris = vec![uri.clone()];
    for i in 0..33 {
        let (_, made) = post(
            &mut carol,
            &modern(10 + i, "tools/call", call("main__bigList", 100), false),
            "",
        );
        uris.push(link_of(&made["result"], "list", 100));
    }
    let first = read_as(&mut carol, "", &uris[1]);
    assert_eq!(first["error"]["code"], -32602, "{first}");
    let second = read_as(&mut carol, "", &uris[2]);
    assert!(second["result"]["contents"].is_array(), "{second}");
    // alice's result is untouched by carol's cap, then expires.
    let still = read_as(&mut c, "", &uri);
    assert!(still["result"]["contents"].is_array(), "{still}");
    wait_until("alice's result expired", || {
        let gone = read_as(&mut c, "", &uri);
        gone["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no such result"))
            .then_some(())
    });
}

/// Issue 34, row 9: without authentication, 300 results stored from a
/// second address under 300 made-up `Authorization` values evicted the
/// victim's 5 (each header acted as an owner of its own).
#[test]
fn made_up_authorization_headers_cannot_evict_anyones_results() {
    let server = HttpServer::start(&["--max-result-chars", "100"]);
    let mut victim = server.connect();
    let mut mine = Vec::new();
    for i in 0..5 {
        let body = modern(i, "tools/call", call("main__bigList", 200), false);
        let (_, made) = post(&mut victim, &body, "");
        mine.push(link_of(&made["result"], "list", 200));
    }
    let mut attacker = Client::connect_from(server.addr, 2);
    for i in 0..300 {
        let auth = format!("Bearer made-up-{i}");
        let body = modern(100 + i, "tools/call", call("main__bigList", 200), false);
        let (status, made) = post(&mut attacker, &body, &auth);
        assert_eq!(status, 200, "{made}");
        // The made-up header does not read the victim's results either.
        if i % 50 == 0 {
            let theirs = read_as(&mut attacker, &auth, &mine[0]);
            assert_eq!(theirs["error"]["code"], -32602, "{theirs}");
        }
    }
    // The attacker is one owner (its address), held to its own cap.
    assert_eq!(listed_as(&mut attacker, "Bearer whatever").len(), 32);
    for uri in &mine {
        let read = read_as(&mut victim, "", uri);
        assert!(read["result"]["contents"].is_array(), "{uri}: {read}");
    }
    assert_eq!(listed_as(&mut victim, "Bearer made-up-7"), mine);
}

/// The gauge `name` of a `/metrics` scrape.
fn gauge(c: &mut Client, name: &str) -> f64 {
    let reply = c.roundtrip(&simple_request("GET", "/metrics", c.addr, ""));
    assert_eq!(reply.status, 200);
    let text = String::from_utf8(reply.body.clone()).expect("UTF-8");
    let line = text
        .lines()
        .find(|l| l.split(' ').next() == Some(name))
        .unwrap_or_else(|| panic!("no {name} in {text}"));
    line.rsplit_once(' ').unwrap().1.parse().expect("a number")
}

/// Issue 34, bytes per owner: an owner past `--max-owner-bytes` frees its
/// own oldest results, never another's; a single result over the cap is
/// refused with an error naming it.
#[test]
fn an_owner_over_its_bytes_frees_only_its_own_results() {
    // A 100-element list is 291 bytes of JSON: three fit in 1000.
    let server = HttpServer::start(&["--max-result-chars", "100", "--max-owner-bytes", "1000"]);
    let mut other = Client::connect_from(server.addr, 2);
    let body = modern(1, "tools/call", call("main__bigList", 100), false);
    let (_, made) = post(&mut other, &body, "");
    let theirs = link_of(&made["result"], "list", 100);
    let mut filler = server.connect();
    let mut mine = Vec::new();
    for i in 0..5 {
        let body = modern(10 + i, "tools/call", call("main__bigList", 100), false);
        let (status, made) = post(&mut filler, &body, "");
        assert_eq!(status, 200, "{made}");
        mine.push(link_of(&made["result"], "list", 100));
    }
    assert_eq!(listed_as(&mut filler, ""), mine[2..].to_vec());
    let gone = read_as(&mut filler, "", &mine[0]);
    assert_eq!(gone["error"]["code"], -32602, "{gone}");
    assert_eq!(
        gauge(&mut filler, "mcp_server_owner_result_bytes_max"),
        873.0
    );
    assert_eq!(
        gauge(&mut filler, "mcp_server_owner_result_bytes_cap"),
        1000.0
    );
    assert_eq!(gauge(&mut filler, "mcp_server_result_bytes"), 873.0 + 291.0);
    // Too big alone: refused, and nothing of the filler's is freed for it.
    let body = modern(20, "tools/call", call("main__bigList", 1000), false);
    let (_, refused) = post(&mut filler, &body, "");
    let said = refused.to_string();
    assert!(
        said.contains("--max-owner-bytes") && said.contains("3891 bytes"),
        "{said}"
    );
    assert_eq!(listed_as(&mut filler, "").len(), 3);
    // The other address's result was never touched.
    let read = read_as(&mut other, "", &theirs);
    assert!(read["result"]["contents"].is_array(), "{read}");
    assert_eq!(listed_as(&mut other, ""), vec![theirs]);
}

/// Issue 34, row 8: under `--auth-token T`, results made under `Bearer T`,
/// `bearer T`, `BEARER T` and `bEARER T` were four owners, each with its
/// own cap. They are one.
#[test]
fn one_token_is_one_owner_whatever_the_case_of_its_scheme() {
    let server = HttpServer::start(&["--max-result-chars", "100", "--auth-token", "T"]);
    let spellings = ["Bearer T", "bearer T", "BEARER T", "bEARER T"];
    let mut c = server.connect();
    let mut uris = Vec::new();
    for (i, auth) in spellings.iter().enumerate() {
        let body = modern(i as u64, "tools/call", call("main__bigList", 200), false);
        let (status, made) = post(&mut c, &body, auth);
        assert_eq!(status, 200, "{auth}: {made}");
        uris.push(link_of(&made["result"], "list", 200));
    }
    // From another address too: the token is the owner, not the peer.
    let mut other = Client::connect_from(server.addr, 2);
    for auth in spellings {
        assert_eq!(listed_as(&mut other, auth), uris, "{auth}");
        for uri in &uris {
            let read = read_as(&mut other, auth, uri);
            assert!(
                read["result"]["contents"].is_array(),
                "{auth} {uri}: {read}"
            );
        }
    }
    // One cap for all four: 29 more (33 in all) free the first.
    for i in 0..29 {
        let auth = spellings[i % 4];
        let body = modern(
            10 + i as u64,
            "tools/call",
            call("main__bigList", 200),
            false,
        );
        post(&mut c, &body, auth);
    }
    let first = read_as(&mut c, "BEARER T", &uris[0]);
    assert_eq!(first["error"]["code"], -32602, "{first}");
    assert_eq!(listed_as(&mut c, "bearer T").len(), 32);
}

#[test]
fn a_task_with_a_big_result_completes_with_its_link() {
    let server = HttpServer::start(&["--max-result-chars", "100", "--task-after", "0"]);
    let mut c = server.connect();
    let (_, created) = post(
        &mut c,
        &modern(1, "tools/call", call("main__bigText", 5000), true),
        "",
    );
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task = created["result"]["taskId"].as_str().unwrap().to_string();
    let done = wait_until("the task settled", || {
        let body = modern(2, "tasks/get", json!({"taskId": task}), true);
        let method = "tasks/get";
        let request = post_request(
            c.addr,
            None,
            body.to_string().as_bytes(),
            &[
                ("MCP-Protocol-Version", MODERN),
                ("Mcp-Method", method),
                ("Mcp-Name", &task),
            ],
        );
        let reply = c.roundtrip(&request).json();
        (reply["result"]["status"] != "working").then_some(reply)
    });
    let uri = link_of(&done["result"]["result"], "string", 5000);
    let (_, page) = post(
        &mut c,
        &modern(
            3,
            "resources/read",
            json!({"uri": format!("{uri}?offset=4990&limit=50")}),
            false,
        ),
        "",
    );
    assert_eq!(
        page["result"]["contents"][0]["text"], "xxxxxxxxxx",
        "{page}"
    );
}

#[test]
fn with_a_task_dir_results_survive_a_restart() {
    let store = TempDir::new();
    let dir_arg = store.path().to_string_lossy().into_owned();
    let options = ["--max-result-chars", "100", "--task-dir", dir_arg.as_str()];
    let mut s = start(&options);
    initialize(&mut s);
    let made = s.ask_json(&legacy(1, "tools/call", call("bigList", 3000)));
    let uri = link_of(&made["result"], "list", 3000);
    let page = format!("{uri}?offset=2990&limit=5");
    let before = s.ask_json(&legacy(2, "resources/read", json!({"uri": page})));
    assert_eq!(
        before["result"]["contents"][0]["text"],
        "[2990,2991,2992,2993,2994]"
    );
    let id = uri.trim_start_matches("morloc://result/");
    assert!(store.join(&format!("{id}.result")).is_file());
    let done = s.finish();
    assert!(done.status.success(), "{}", done.stderr);
    let mut again = start(&options);
    initialize(&mut again);
    let after = again.ask_json(&legacy(3, "resources/read", json!({"uri": page})));
    assert_eq!(after["result"], before["result"], "{after}");
}

#[test]
fn with_job_tools_too_a_schema_accepts_the_value_a_link_and_a_handle() {
    // Not a test of the job threshold: no call becomes a job, at any load.
    let mut s = start(&[
        "--max-result-chars",
        "1000",
        "--job-tools",
        "--task-after",
        NEVER,
    ]);
    let list = s.ask_json(&modern(1, "tools/list", json!({}), false));
    let tools = list["result"]["tools"].as_array().expect("tools");
    let big = tools
        .iter()
        .find(|t| t["name"] == "bigList")
        .expect("bigList");
    let schema = big["outputSchema"].to_string();
    assert!(schema.contains("resultLink"), "no link object: {schema}");
    assert!(schema.contains("jobId"), "no job handle: {schema}");
    assert!(schema.contains(r#""type":"integer""#), "no value: {schema}");
    // The job tools themselves are not wrapped in a link.
    let status = tools
        .iter()
        .find(|t| t["name"] == "job_status")
        .expect("job_status");
    assert!(!status.to_string().contains("resultLink"), "{status}");
    // A long result still becomes a link.
    let reply = s.ask_json(&modern(2, "tools/call", call("bigList", 5000), false));
    let uri = link_of(&reply["result"], "list", 5000);
    let page = s.ask_json(&modern(
        3,
        "resources/read",
        json!({"uri": format!("{uri}?offset=4999&limit=5")}),
        false,
    ));
    assert_eq!(page["result"]["contents"][0]["text"], "[4999]", "{page}");
}
