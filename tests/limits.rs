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
use crate::util::{cmd, wait_for, Proc, TempDir};

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
    let stderr = proc.stderr_text(Duration::from_secs(10));
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
/// read nothing. Queued whole, their answers would hold 480 MB, past the
/// default `--max-buffered` (256 MiB), and a new request body anywhere
/// would get 503; written from the store as each socket drains, they hold
/// a slice each. Another address initializes and calls a tool meanwhile,
/// and every slow reader then gets the whole value.
#[test]
fn sixty_unread_big_answers_leave_room_for_another_address() {
    const CHARS: u64 = 8_000_000;
    const READERS: usize = 60;
    let server = Server::start(&["--max-result-chars", "1000", "--plain-tool-names"]);
    let (mut owner, sid) = server.session();
    let made = owner
        .post(Some(&sid), &tool_call(2, "bigText", json!({"_1": CHARS})))
        .expect(200)
        .json();
    let content = made["result"]["content"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let uri = content
        .iter()
        .find_map(|c| c["uri"].as_str())
        .unwrap_or_else(|| panic!("no link: {made}"))
        .to_string();
    let read = json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read",
                      "params": {"uri": uri}});
    let bytes = post_request(server.addr, Some(&sid), read.to_string().as_bytes(), &[]);
    let mut readers: Vec<Client> = (0..READERS)
        .map(|_| {
            let mut c = Client::connect_from(server.addr, 1);
            c.send(&bytes);
            c
        })
        .collect();
    // Every read is answered (its access line is written when its answer
    // is queued), none of them read.
    wait_for("60 answered reads", || {
        let stderr = server.proc.stderr_now();
        stderr.matches("method=resources/read").count() >= READERS
    });
    let mut other = Client::connect_from(server.addr, 2);
    let other_sid = other.initialize();
    let reply = other
        .post(Some(&other_sid), &tool_call(4, "addOne", json!({"_1": 1})))
        .expect(200);
    assert_eq!(reply.json()["result"]["content"][0]["text"], "2");
    // Nothing is lost for the slow readers.
    let first = readers[0].read_response().expect(200);
    let value = first.json()["result"]["contents"][0]["text"].clone();
    let text = value.as_str().expect("the value's text");
    assert_eq!(text.len() as u64, CHARS + 2);
    assert!(text.starts_with("\"xxx") && text.ends_with("xxx\""));
    for reader in &mut readers[1..] {
        let response = reader.read_response().expect(200);
        assert!(response.body == first.body, "a reader got another answer");
    }
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
    const READERS: usize = 60;
    const BOUND: f64 = 64.0 * 1024.0 * 1024.0;
    let server = Server::start(&["--plain-tool-names"]);
    let (_owner, sid) = server.session();
    let call = tool_call(2, "bigText", json!({"_1": CHARS}));
    let bytes = post_request(server.addr, Some(&sid), call.to_string().as_bytes(), &[]);
    let readers: Vec<Client> = (0..READERS)
        .map(|_| {
            let mut c = Client::connect_from(server.addr, 1);
            c.send(&bytes);
            c
        })
        .collect();
    // The address goes past its bound of unread answers.
    wait_for("the address past its bound", || {
        metric(&server, 2, "mcp_server_http_unread_bytes_peer_max") > BOUND
            && metric(&server, 2, "mcp_server_http_connections_paused") >= 1.0
    });
    assert!(metric(&server, 2, "mcp_server_buffered_bytes") <= 2.0 * BOUND);
    let mut other = Client::connect_from(server.addr, 2);
    let other_sid = other.initialize();
    let reply = other
        .post(Some(&other_sid), &tool_call(3, "addOne", json!({"_1": 1})))
        .expect(200);
    assert_eq!(reply.json()["result"]["content"][0]["text"], "2");
    // Nothing is lost for the slow readers, all reading at once (a paused
    // one is answered only once the others have taken enough).
    let reading: Vec<_> = readers
        .into_iter()
        .map(|mut reader| {
            std::thread::spawn(move || {
                let body = reader.read_response().expect(200).body;
                (reader, body)
            })
        })
        .collect();
    let mut readers = Vec::new();
    for thread in reading {
        let (reader, body) = thread.join().expect("a reader");
        let answer: Value = serde_json::from_slice(&body).expect("a JSON answer");
        let text = answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("");
        assert_eq!(
            text.len() as u64,
            CHARS + 2,
            "{}",
            &text[..text.len().min(200)]
        );
        assert!(text.starts_with("\"xxx") && text.ends_with("xxx\""));
        readers.push(reader);
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
