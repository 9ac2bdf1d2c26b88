//! Issue 34: limits that keep one client or one file from locking others
//! out. Clients that stop reading big answers hold no copy of stored ones,
//! and are paused past their bound of unread ones (their address too), so
//! another address still gets in; a tools file past its cap (4 MiB) is
//! refused by name, at start and on reload (the previous configuration
//! keeps serving).

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::http::{
    post_request, request, simple_request, tool_call, write_manifest, Client, Server,
};
use crate::support::procfs;
use crate::util::{assert_big_text, cmd, wait_for, Proc, TempDir, TIMEOUT};

/// A tools file just over the cap: valid JSON, so only its size refuses it.
fn oversized_tools_file() -> String {
    let description = "x".repeat(4 * 1024 * 1024);
    json!({"tools": {"addOne": {"description": description}}}).to_string()
}

fn titles(server: &Server) -> Vec<Value> {
    let (mut client, sid) = server.session();
    let reply = client
        .post(Some(&sid), &request(2, "tools/list"))
        .expect(200);
    let tools = reply.json()["result"]["tools"].clone();
    let tools = tools.as_array().cloned().unwrap_or_default();
    tools.iter().map(|t| t["title"].clone()).collect()
}

#[test]
fn a_tools_file_past_its_cap_is_refused_at_start_naming_it() {
    let dir = TempDir::new();
    let manifest = write_manifest(&dir, "m.json", "main", |_| {});
    let tools = dir.write("tools.json", oversized_tools_file());
    let mut proc = Proc::spawn(&mut cmd([
        "mcp".into(),
        manifest.into_os_string(),
        "--tools-file".into(),
        tools.clone().into_os_string(),
    ]));
    assert!(!proc.wait(Duration::from_secs(30)).success());
    let stderr = proc.stderr_text(TIMEOUT);
    let named = format!("cannot read tools file '{}'", tools.display());
    assert!(stderr.contains(&named), "{stderr}");
    assert!(
        stderr.contains("more than the cap of 4194304 bytes (4 MiB)"),
        "{stderr}"
    );
}

#[test]
fn a_tools_file_past_its_cap_on_reload_keeps_the_previous_one() {
    let dir = TempDir::new();
    let file = dir.write(
        "tools.json",
        r#"{"tools": {"addOne": {"title": "Add one"}}}"#,
    );
    let given = file.display().to_string();
    let server = Server::start(&["--tools-file", &given]);
    assert!(titles(&server).contains(&json!("Add one")));
    dir.write("tools.json.next", oversized_tools_file());
    std::fs::rename(dir.join("tools.json.next"), &file).unwrap();
    wait_for("the refused reload", || {
        server
            .proc
            .stderr_now()
            .contains("still serving the previous build")
    });
    let stderr = server.proc.stderr_now();
    assert!(stderr.contains(&given), "{stderr}");
    assert!(stderr.contains("(4 MiB)"), "{stderr}");
    assert!(titles(&server).contains(&json!("Add one")));
}

/// Row 10: 60 connections ask for the whole of an 8 MB stored result and
/// read nothing. Each answer is written from the store as its socket
/// drains, and counts as unread until sent: their address goes past its
/// bound and is paused, and another address initializes and calls a tool
/// meanwhile (queued whole and counted without a bound, 480 MB would fill
/// `--max-buffered` and lock it out). Every slow reader then gets the whole
/// value.
#[test]
fn sixty_unread_big_answers_leave_room_for_another_address() {
    const CHARS: u64 = 8_000_000;
    let server = Server::start(&["--max-result-chars", "1000", "--plain-tool-names"]);
    let (mut owner, sid) = server.session();
    let uri = stored_uri(&mut owner, &sid, CHARS);
    let read = json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read",
                      "params": {"uri": uri}});
    let bytes = post_request(server.addr, Some(&sid), read.to_string().as_bytes(), &[]);
    let (_, bodies) = sixty_unread_then_another_address(&server, &bytes);
    let first = one_answer(&bodies);
    let text = first["result"]["contents"][0]["text"].as_str();
    assert_big_text(text.expect("the value's text"), CHARS);
}

/// Calls `bigText` for `chars` in session `sid` (big results on) and gives
/// the stored result's URI.
fn stored_uri(owner: &mut Client, sid: &str, chars: u64) -> String {
    let made = owner
        .post(Some(sid), &tool_call(2, "bigText", json!({"_1": chars})))
        .expect(200)
        .json();
    let content = made["result"]["content"].as_array().cloned();
    content
        .unwrap_or_default()
        .iter()
        .find_map(|c| c["uri"].as_str())
        .unwrap_or_else(|| panic!("no link: {made}"))
        .to_string()
}

/// 60 connections from 127.0.0.1 send `request` (whose answer is far past
/// `--max-unread-per-conn`) and read nothing, until their address is past
/// its bound and paused; another address then initializes and calls a
/// tool. Then all 60 read at once (a paused one is answered once the
/// others have taken enough): their connections and answer bodies.
fn sixty_unread_then_another_address(
    server: &Server,
    request: &[u8],
) -> (Vec<Client>, Vec<Vec<u8>>) {
    const READERS: usize = 60;
    const BOUND: f64 = 64.0 * 1024.0 * 1024.0;
    let readers: Vec<Client> = (0..READERS)
        .map(|_| {
            let mut c = Client::connect_from(server.addr, 1);
            c.send(request);
            c
        })
        .collect();
    wait_for("the address past its bound", || {
        metric(server, 2, "mcp_server_http_unread_bytes_peer_max") > BOUND
            && metric(server, 2, "mcp_server_http_connections_paused") >= 1.0
    });
    assert!(metric(server, 2, "mcp_server_buffered_bytes") <= 2.0 * BOUND);
    let mut other = Client::connect_from(server.addr, 2);
    let other_sid = other.initialize();
    let reply = other
        .post(Some(&other_sid), &tool_call(3, "addOne", json!({"_1": 1})))
        .expect(200);
    assert_eq!(reply.json()["result"]["content"][0]["text"], "2");
    read_all(readers)
}

/// Every reader reads its answer, all at once.
fn read_all(readers: Vec<Client>) -> (Vec<Client>, Vec<Vec<u8>>) {
    let reading: Vec<_> = readers
        .into_iter()
        .map(|mut reader| {
            std::thread::spawn(move || {
                let body = reader.read_response().expect(200).body;
                (reader, body)
            })
        })
        .collect();
    reading
        .into_iter()
        .map(|thread| thread.join().expect("a reader"))
        .unzip()
}

/// Row 10, a stored result read by many at once: 60 clients, each from its
/// own address (so no address's bound holds any back), ask for the same
/// finished task's 8 MB result (`tasks/get`), or for a page as big of a
/// stored result, and read nothing until all 60 are answered. Each answer
/// is written from the one stored copy as its socket drains, so the
/// server's resident memory grows by far less than one answer per client
/// (copied into each queue, 60 answers of 16 MB would take 960 MB), and
/// every client then gets the exact bytes.
#[test]
fn sixty_readers_of_one_stored_result_share_its_copy() {
    const CHARS: u64 = 8_000_000;
    // Only what the queues hold counts in --max-buffered (256 MiB): 60
    // answers of 16 MB, copied, would not fit.
    let common = ["--plain-tool-names"];
    let tasks = ["--task-after", "0", "--auth-token", "tok"];
    let server = Server::start(&[&common[..], &tasks[..]].concat());
    let mut client = server.connect();
    let call = modern(
        1,
        "tools/call",
        json!({"name": "bigText", "arguments": {"_1": CHARS}}),
    );
    let created = client
        .roundtrip(&modern_post(&server, &call, "bigText"))
        .json();
    let task = created["result"]["taskId"].as_str();
    let task = task
        .unwrap_or_else(|| panic!("no task: {created}"))
        .to_string();
    let get = modern_post(
        &server,
        &modern(2, "tasks/get", json!({"taskId": task})),
        &task,
    );
    wait_for("the task completed", || {
        client.roundtrip(&get).json()["result"]["status"] == "completed"
    });
    let first = one_answer(&sixty_at_once(&server, &get, "tasks/get"));
    let result = &first["result"]["result"];
    assert_big_text(result["content"][0]["text"].as_str().unwrap_or(""), CHARS);
    assert_eq!(
        result["structuredContent"].as_str().map(str::len),
        Some(CHARS as usize)
    );
    drop(server);

    let server = Server::start(&[&common[..], &["--max-result-chars", "1000"]].concat());
    let (mut owner, sid) = server.session();
    let uri = stored_uri(&mut owner, &sid, CHARS);
    let page = format!("{uri}?offset=1&limit={CHARS}");
    let read = json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read",
                      "params": {"uri": page}});
    let read = post_request(server.addr, Some(&sid), read.to_string().as_bytes(), &[]);
    let first = one_answer(&sixty_at_once(&server, &read, "resources/read"));
    let text = first["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert_eq!(text.len() as u64, CHARS - 1);
    assert!(text.bytes().all(|b| b == b'x'));
    drop(server);

    // A finished job's result (`job_result`, a legacy session's).
    let jobs = ["--job-tools", "--task-after", "0"];
    let server = Server::start(&[&common[..], &jobs[..]].concat());
    let (mut owner, sid) = server.session();
    let handle = owner
        .post(Some(&sid), &tool_call(2, "bigText", json!({"_1": CHARS})))
        .expect(200)
        .json();
    let job = handle["result"]["structuredContent"]["jobId"].as_str();
    let job = job
        .unwrap_or_else(|| panic!("no job: {handle}"))
        .to_string();
    let result = tool_call(3, "job_result", json!({"job_id": job}));
    wait_for("the job finished", || {
        let reply = owner.post(Some(&sid), &result).expect(200).json();
        reply["result"]["structuredContent"]["status"] != "working"
    });
    let read = post_request(server.addr, Some(&sid), result.to_string().as_bytes(), &[]);
    let first = one_answer(&sixty_at_once(&server, &read, "tools/call"));
    assert_big_text(
        first["result"]["content"][0]["text"].as_str().unwrap_or(""),
        CHARS,
    );
}

/// The one answer every reader got (the same bytes each), parsed.
#[track_caller]
fn one_answer(bodies: &[Vec<u8>]) -> Value {
    assert!(
        bodies.iter().all(|b| *b == bodies[0]),
        "a reader got another answer"
    );
    serde_json::from_slice(&bodies[0]).expect("a JSON answer")
}

/// 60 clients from 127.0.0.10 on send `request` at once and read nothing
/// until every one is answered (its access line is written as its answer
/// is queued); the server's resident memory then has grown by less than
/// 160 MiB. Then they read, all at once: their answer bodies.
fn sixty_at_once(server: &Server, request: &[u8], method: &str) -> Vec<Vec<u8>> {
    const READERS: u8 = 60;
    let pid = server.proc.pid();
    let line = format!("method={method}");
    let before = server.proc.stderr_now().matches(&line).count();
    let rss = procfs::status(pid, "VmRSS");
    let readers: Vec<Client> = (0..READERS)
        .map(|i| {
            let mut c = Client::connect_from(server.addr, 10 + i);
            c.send(request);
            c
        })
        .collect();
    wait_for(format!("60 answered {method} requests"), || {
        server.proc.stderr_now().matches(&line).count() >= before + READERS as usize
    });
    let grown = procfs::status(pid, "VmRSS").saturating_sub(rss);
    assert!(grown < 160 << 20, "resident memory grew by {grown} bytes");
    read_all(readers).1
}

/// A 2026-07-28 request (no session; the server's token).
fn modern(id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":
            {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// `body` posted with the 2026-07-28 headers, `Mcp-Name` being `name`.
fn modern_post(server: &Server, body: &Value, name: &str) -> Vec<u8> {
    let method = body["method"].as_str().unwrap_or("");
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
        ("Mcp-Name", name),
        ("Authorization", "Bearer tok"),
    ];
    post_request(server.addr, None, body.to_string().as_bytes(), &headers)
}

/// A gauge's value in `/metrics`, scraped from address 127.0.0.`from`.
fn metric(server: &Server, from: u8, name: &str) -> f64 {
    let mut scraper = Client::connect_from(server.addr, from);
    let reply = scraper
        .roundtrip(&simple_request("GET", "/metrics", server.addr, ""))
        .expect(200);
    let text = reply.text();
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}

/// Row 10 for answers not in the result table: 60 connections call a tool
/// whose 8 MB result is answered inline (no `--max-result-chars`) and read
/// nothing (8 MB: more than the kernel's socket buffers take). Queued and
/// counted whole, 480 MB of answers would fill the default `--max-buffered`
/// (256 MiB) and any request body from anywhere would get 503 (it does
/// without backpressure). Once their address is past its bound
/// (`--max-unread-per-peer`, 64 MiB) none
/// of its connections is read (their calls wait unstarted in their
/// sockets), only its bound counts in the budget, and another address
/// initializes and calls a tool. The slow readers then read, and every one
/// gets its whole answer: the paused ones are read again as the address's
/// queue drains.
#[test]
fn sixty_unread_big_call_answers_pause_their_address_not_another() {
    const CHARS: u64 = 8_000_000;
    let server = Server::start(&["--plain-tool-names"]);
    let (_owner, sid) = server.session();
    let call = tool_call(2, "bigText", json!({"_1": CHARS}));
    let bytes = post_request(server.addr, Some(&sid), call.to_string().as_bytes(), &[]);
    let (mut readers, bodies) = sixty_unread_then_another_address(&server, &bytes);
    for body in bodies {
        let answer: Value = serde_json::from_slice(&body).expect("a JSON answer");
        assert_big_text(
            answer["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or(""),
            CHARS,
        );
    }
    // Every answer taken: nothing is paused, and a connection that was is
    // read again.
    wait_for("no paused connection", || {
        metric(&server, 2, "mcp_server_http_connections_paused") == 0.0
    });
    let again = post_request(
        server.addr,
        Some(&sid),
        tool_call(4, "addOne", json!({"_1": 41}))
            .to_string()
            .as_bytes(),
        &[],
    );
    let reply = readers[0].roundtrip(&again).expect(200);
    assert_eq!(reply.json()["result"]["content"][0]["text"], "42");
    assert!(metric(&server, 2, "mcp_server_http_pauses_total") >= 1.0);
}

/// One connection pipelines many calls with big answers and reads none:
/// it is paused past `--max-unread-per-conn` (its later requests wait in
/// its socket, no new work starts), another address is served meanwhile,
/// and once the client reads it gets every answer, in order.
#[test]
fn a_pipelining_client_that_does_not_read_is_paused_and_loses_nothing() {
    // More than the kernel's socket buffers take, and than the bound.
    const CHARS: u64 = 8_000_000;
    const CALLS: u64 = 8;
    let server = Server::start(&["--plain-tool-names"]);
    let (_owner, sid) = server.session();
    let mut piped = Client::connect_from(server.addr, 1);
    let mut bytes = Vec::new();
    for id in 0..CALLS {
        let call = tool_call(10 + id, "bigText", json!({"_1": CHARS + id}));
        bytes.extend(post_request(
            server.addr,
            Some(&sid),
            call.to_string().as_bytes(),
            &[],
        ));
    }
    piped.send(&bytes);
    wait_for("the pipelining connection paused", || {
        metric(&server, 2, "mcp_server_http_connections_paused") >= 1.0
    });
    let mut other = Client::connect_from(server.addr, 2);
    let other_sid = other.initialize();
    let reply = other
        .post(Some(&other_sid), &tool_call(3, "addOne", json!({"_1": 1})))
        .expect(200);
    assert_eq!(reply.json()["result"]["content"][0]["text"], "2");
    for id in 0..CALLS {
        let answer = piped.read_response().expect(200).json();
        assert_eq!(answer["id"], 10 + id, "answers in order");
        let text = answer["result"]["content"][0]["text"]
            .as_str()
            .map(str::len);
        assert_eq!(text, Some((CHARS + id + 2) as usize));
    }
    wait_for("no paused connection", || {
        metric(&server, 2, "mcp_server_http_connections_paused") == 0.0
    });
}
