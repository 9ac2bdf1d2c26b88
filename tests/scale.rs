//! Several instances behind a load balancer: instance ids in session ids,
//! `GET /health`, and the graceful drain on SIGTERM. (The balancer itself,
//! with the shipped nginx and HAProxy configurations, is driven by
//! `make test-scale`.)

use std::net::TcpStream;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::http::{post_request, Client, Server};
use crate::util::{wait_for, wait_until, CallTrace, Stopwatch, TIMEOUT};

fn ping(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
}

#[test]
fn a_session_id_names_its_instance_and_other_instances_do_not_know_it() {
    let a = Server::start(&["--instance-id", "a"]);
    let b = Server::start(&["--instance-id", "b"]);
    let (mut on_a, sid) = a.session();
    let random = sid
        .strip_prefix("a.")
        .expect("the id starts with the instance id");
    assert_eq!(random.len(), 32, "{sid}");
    on_a.post(Some(&sid), &ping(1)).expect(200);
    // The same id at another instance is an unknown session: 404, as the
    // transport says, so the client re-initializes.
    let mut on_b = b.connect();
    let reply = on_b.post(Some(&sid), &ping(2)).expect(404);
    assert_eq!(
        reply.json()["error"],
        json!("unknown or expired session; re-initialize")
    );
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "main__pureAnswer", "arguments": {}}});
    on_b.post(Some(&sid), &call).expect(404);
    // Its random part under the other instance's name is not a session either.
    let renamed = format!("b.{random}");
    on_b.post(Some(&renamed), &ping(4)).expect(404);
    let delete = format!(
        "DELETE /mcp HTTP/1.1\r\nHost: {}\r\nMcp-Session-Id: {sid}\r\n\r\n",
        b.addr
    );
    on_b.roundtrip(delete.as_bytes()).expect(404);
    // The session is untouched at its own instance.
    on_a.post(Some(&sid), &ping(5)).expect(200);
    let reply = on_a.post(Some(&sid), &call).expect(200);
    assert_eq!(
        reply.json()["result"]["isError"],
        json!(false),
        "{:?}",
        reply.text()
    );
}

fn get(
    client: &mut Client,
    method: &str,
    path: &str,
    extra: &str,
) -> crate::support::http::Response {
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\n{extra}\r\n",
        client.addr
    );
    client.roundtrip(request.as_bytes())
}

fn slow_call(id: u64, ms: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "main__slowEcho", "arguments": {"_1": ms}}})
}

#[test]
fn health_reports_the_pools_and_asks_for_no_token_origin_or_host() {
    let server = Server::start(&["--auth-token", "s3cret"]);
    let mut client = server.connect();
    // No token, a foreign Origin and a foreign Host: still answered.
    let reply = get(
        &mut client,
        "GET",
        "/health",
        "Origin: https://evil.example\r\nHost-Extra: x\r\n",
    )
    .expect(200);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert_eq!(reply.header("cache-control"), Some("no-store"));
    let body = reply.json();
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["status", "uptimeSeconds", "callsInFlight", "pools"],
        "{body}"
    );
    assert_eq!(body["status"], json!("ready"));
    assert_eq!(body["callsInFlight"], json!(0));
    assert!(body["uptimeSeconds"].is_u64(), "{body}");
    // Lazy pools not started yet count as ready: they start on first use.
    assert_eq!(
        body["pools"],
        json!([{"program": "main", "language": "py", "state": "idle", "replicas": 0}])
    );
    let foreign_host = "GET /health HTTP/1.1\r\nHost: evil.example\r\n\r\n";
    client.roundtrip(foreign_host.as_bytes()).expect(200);
    // HEAD: the same head, no body; other methods: 405.
    let head = format!("HEAD /health HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr);
    client.send(head.as_bytes());
    let head = client.read_head().expect(200);
    assert!(head.header("content-length").is_some_and(|n| n != "0"));
    let post = get(&mut client, "POST", "/health", "Content-Length: 0\r\n").expect(405);
    assert_eq!(post.header("allow"), Some("GET, HEAD"));
    // /mcp still wants the token.
    get(&mut client, "GET", "/mcp", "").expect(401);
}

#[test]
fn health_is_503_while_a_pool_starts_and_200_once_it_is_ready() {
    let server = Server::start_env(&[], &[("TESTPOOL_STARTUP_DELAY_MS", "3000")]);
    let (mut caller, sid) = server.session();
    // The first call starts the lazy pool, which takes 3 s.
    let body = slow_call(2, 10).to_string();
    caller.send(&post_request(server.addr, Some(&sid), body.as_bytes(), &[]));
    let mut probe = server.connect();
    let starting = wait_until("/health answering 503 while the pool starts", || {
        let reply = get(&mut probe, "GET", "/health", "");
        (reply.status == 503).then(|| reply.json())
    });
    assert_eq!(starting["status"], json!("starting"), "{starting}");
    assert_eq!(starting["pools"][0]["state"], json!("starting"));
    assert_eq!(starting["callsInFlight"], json!(1));
    caller.read_response().expect(200);
    let ready = get(&mut probe, "GET", "/health", "").expect(200).json();
    assert_eq!(ready["pools"][0]["state"], json!("ready"), "{ready}");
    assert_eq!(ready["callsInFlight"], json!(0));
}

#[test]
fn sigterm_drains_a_running_call_then_exits_0() {
    let trace = CallTrace::new();
    let mut server = Server::start_traced(&["--drain-timeout", "20"], &trace);
    let (mut caller, sid) = server.session();
    caller.post(Some(&sid), &slow_call(2, 10)).expect(200);
    let mut keep_alive = server.connect();
    get(&mut keep_alive, "GET", "/health", "").expect(200);
    let body = slow_call(3, 3000).to_string();
    caller.send(&post_request(server.addr, Some(&sid), body.as_bytes(), &[]));
    trace.wait_started("slowEcho", 2);
    server.proc.signal(libc::SIGTERM);
    // New connections are refused (while the call still runs).
    wait_for("the listener closed", || {
        TcpStream::connect(server.addr).is_err()
    });
    // An open keep-alive connection hears 503 and is closed after it.
    let reply = get(&mut keep_alive, "GET", "/health", "").expect(503);
    assert_eq!(reply.json()["status"], json!("draining"));
    assert_eq!(reply.json()["callsInFlight"], json!(1));
    assert_eq!(reply.header("connection"), Some("close"));
    // The running call completes.
    let done = caller.read_response().expect(200);
    assert_eq!(done.json()["result"]["content"][0]["text"], json!("3000"));
    let status = server.proc.wait(TIMEOUT);
    assert_eq!(status.code(), Some(0), "{}", server.proc.stderr_now());
    assert!(server.proc.stderr_now().contains("SIGTERM: draining"));
}

#[test]
fn a_drain_ends_at_its_deadline() {
    let trace = CallTrace::new();
    let mut server = Server::start_traced(&["--drain-timeout", "0.5"], &trace);
    let (mut caller, sid) = server.session();
    // Runs for a minute: a server that drained until the call ended would
    // outlive the deadline of `wait`.
    let body = slow_call(2, 60_000).to_string();
    caller.send(&post_request(server.addr, Some(&sid), body.as_bytes(), &[]));
    trace.wait_started("slowEcho", 1);
    let started = Stopwatch::start();
    server.proc.signal(libc::SIGTERM);
    let status = server.proc.wait(TIMEOUT);
    assert_eq!(status.code(), Some(0), "{}", server.proc.stderr_now());
    // It did drain, for its deadline.
    started.assert_at_least(Duration::from_millis(450), "the drain ended");
}

#[test]
fn a_second_sigterm_stops_a_drain_at_once() {
    let trace = CallTrace::new();
    let mut server = Server::start_traced(&["--drain-timeout", "30"], &trace);
    let (mut caller, sid) = server.session();
    let body = slow_call(2, 60_000).to_string();
    caller.send(&post_request(server.addr, Some(&sid), body.as_bytes(), &[]));
    trace.wait_started("slowEcho", 1);
    server.proc.signal(libc::SIGTERM);
    wait_for("the server draining", || {
        server.proc.stderr_now().contains("SIGTERM: draining")
    });
    server.proc.signal(libc::SIGTERM);
    // The drain (30 s) and the call (60 s) both outlast this deadline.
    let status = server.proc.wait(TIMEOUT);
    assert_eq!(status.code(), Some(128 + libc::SIGTERM));
}

#[test]
fn the_router_reports_every_program_s_pools() {
    let dir = crate::util::TempDir::new();
    let alpha = crate::support::http::write_manifest(&dir, "alpha/manifest.json", "alpha", |_| {});
    let beta = crate::support::http::write_manifest(&dir, "beta/manifest.json", "beta", |_| {});
    let server = crate::support::http::router(dir, &[&alpha, &beta], &[]);
    let (mut caller, sid) = server.session();
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "beta__addOne", "arguments": {"_1": 1}}});
    caller.post(Some(&sid), &call).expect(200);
    let mut probe = server.connect();
    let body = get(&mut probe, "GET", "/health", "").expect(200).json();
    assert_eq!(
        body["pools"],
        json!([
            {"program": "alpha", "language": "py", "state": "idle", "replicas": 0},
            {"program": "beta", "language": "py", "state": "ready", "replicas": 0},
        ])
    );
}
