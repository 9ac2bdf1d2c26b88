//! End-to-end tests of the queue of calls waiting for a pool process: calls
//! are served round-robin across owners (HTTP sessions here), a call that
//! waits past `--queue-timeout` fails naming the wait, an owner past
//! `--max-queued-per-owner` is refused at once while others are served, and
//! the restart breaker says on stderr when it opens and closes.
//!
//! One process of the test pool (`--pool-replicas py=1`) runs one call at a
//! time, so calls queue behind a `slowEcho`. Tests assert order and cause,
//! never how long anything took; they wait on responses, `/health` and
//! stderr lines.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::thread;

use serde_json::{json, Value};

use crate::util::{self, cmd, CallTrace, Hold, Proc, TempDir, TIMEOUT};

const PROTOCOL: &str = "2025-06-18";

/// The shapes program, with `poolExit` (the test pool's mid 92 kills the
/// pool mid-call) added.
fn program(dir: &TempDir) -> PathBuf {
    util::shapes_manifest_with(dir, |manifest| {
        if let Some(commands) = manifest["commands"].as_array_mut() {
            commands.push(json!({
                "name": "poolExit", "type": "remote", "mid": 92, "pool": 0, "needed_pools": [0],
                "args": [{"kind": "pos", "schema": "j"}], "return": {"schema": "j"}
            }));
        }
    })
}

/// Waits (up to `util::TIMEOUT`) until `ready` holds.
#[track_caller]
fn wait_until(what: &str, ready: impl FnMut() -> bool) {
    util::wait_for(what, ready);
}

// ---- HTTP ---------------------------------------------------------------

struct HttpServer {
    proc: Proc,
    at: Endpoint,
    _dir: TempDir,
}

/// Where the server listens: what the client threads share.
#[derive(Clone, Copy)]
struct Endpoint {
    addr: SocketAddr,
}

impl HttpServer {
    /// `mcp <program> --http-port 0 --plain-tool-names <extra>`, its test
    /// pool tracing its calls into `trace` (if given) and holding
    /// `slowEcho` calls while `hold` says so.
    #[track_caller]
    fn start_held(extra: &[&str], trace: Option<&CallTrace>, hold: &Hold) -> HttpServer {
        let dir = TempDir::new();
        let manifest = program(&dir);
        let mut args = vec![
            "mcp".to_string(),
            manifest.display().to_string(),
            "--http-port".into(),
            "0".into(),
            "--plain-tool-names".into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let mut command = cmd(&args);
        if let Some(trace) = trace {
            let (key, value) = trace.env();
            command.env(key, value);
        }
        let (key, value) = hold.env();
        command.env(key, value);
        let proc = Proc::spawn(&mut command);
        let mut addr = None;
        wait_until("the HTTP banner", || {
            addr = proc
                .stderr_now()
                .lines()
                .find_map(|l| l.split(" over HTTP at http://").nth(1).map(str::to_string))
                .and_then(|a| a.trim_end_matches("/mcp").parse().ok());
            addr.is_some()
        });
        HttpServer {
            proc,
            at: Endpoint {
                addr: addr.expect("an address"),
            },
            _dir: dir,
        }
    }
}

impl Endpoint {
    /// A new legacy session; returns its id.
    fn session(&self) -> String {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": PROTOCOL, "capabilities": {},
                       "clientInfo": {"name": "fairness", "version": "1"}}});
        let (status, head, _) = self.post(None, &init);
        assert_eq!(status, 200, "initialize");
        let sid = head
            .lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("mcp-session-id")
                    .then(|| value.trim().to_string())
            })
            .expect("a session id");
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(self.post(Some(&sid), &note).0, 202);
        sid
    }

    /// One POST on a new connection: status, head, body.
    fn post(&self, session: Option<&str>, body: &Value) -> (u16, String, Vec<u8>) {
        let body = body.to_string();
        let mut request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.addr,
            body.len()
        );
        if let Some(sid) = session {
            request.push_str(&format!(
                "Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: {PROTOCOL}\r\n"
            ));
        }
        request.push_str("\r\n");
        request.push_str(&body);
        exchange(self.addr, request.as_bytes())
    }

    /// A `tools/call` in `session`; returns its result.
    fn call(&self, session: &str, tool: &str, arg: i64) -> Value {
        let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": {"_1": arg}}});
        let (status, _, body) = self.post(Some(session), &msg);
        assert_eq!(status, 200, "{tool}: {}", String::from_utf8_lossy(&body));
        let reply: Value = serde_json::from_slice(&body).expect("a JSON reply");
        assert!(reply.get("result").is_some(), "{tool}: {reply}");
        reply["result"].clone()
    }

    /// `callsInFlight` of `GET /health`.
    fn in_flight(&self) -> u64 {
        let request = format!("GET /health HTTP/1.1\r\nHost: {}\r\n\r\n", self.addr);
        let (_, _, body) = exchange(self.addr, request.as_bytes());
        let health: Value = serde_json::from_slice(&body).expect("health is JSON");
        health["callsInFlight"].as_u64().expect("callsInFlight")
    }
}

/// Sends `request` on a new connection and reads one response (reads
/// retry on EINTR and EAGAIN): status, head, body.
fn exchange(addr: SocketAddr, request: &[u8]) -> (u16, String, Vec<u8>) {
    let response = crate::support::http::Client::connect(addr).roundtrip(request);
    let head = response
        .headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    (response.status, head, response.body)
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {result}"))
        .to_string()
}

#[test]
fn a_newcomers_call_goes_before_another_owners_queued_calls() {
    let trace = CallTrace::new();
    let hold = Hold::new();
    let http = HttpServer::start_held(&["--pool-replicas", "py=1"], Some(&trace), &hold);
    let server = http.at;
    let (busy, newcomer) = (server.session(), server.session());
    // The pool is up before anything is measured.
    assert_eq!(text(&server.call(&busy, "addOne", 1)), "2");
    let mark = trace.mark();
    // The first slow call stays in the pool until the newcomer's call is
    // queued too, however slow the machine.
    hold.hold();
    let mut threads = Vec::new();
    for n in 0..5 {
        let session = busy.clone();
        threads.push(thread::spawn(move || {
            let result = server.call(&session, "slowEcho", 10 + n);
            assert_eq!(text(&result), (10 + n).to_string());
        }));
        // One at a time, so the owner's own order is known.
        wait_until("the slow call is in", || server.in_flight() == n as u64 + 1);
    }
    trace.wait_started_since(mark, "slowEcho", 1);
    let newcomers = thread::spawn(move || server.call(&newcomer, "addOne", 41));
    wait_until("the newcomer's call is in", || server.in_flight() == 6);
    hold.release();
    assert_eq!(text(&newcomers.join().expect("the newcomer's call")), "42");
    for t in threads {
        t.join().expect("a slow call");
    }
    // The order in which the one pool process started them: slowEcho 10
    // was running when the newcomer came; the other four waited. In
    // arrival order the newcomer would be last.
    let started: Vec<String> = trace.since(mark).into_iter().map(|c| c.function).collect();
    assert_eq!(
        started,
        ["slowEcho", "addOne", "slowEcho", "slowEcho", "slowEcho", "slowEcho"],
        "the order the pool started the calls in"
    );
}

#[test]
fn past_the_per_owner_cap_a_call_is_refused_while_another_owner_is_served() {
    let hold = Hold::new();
    let http = HttpServer::start_held(
        &["--pool-replicas", "py=1", "--max-queued-per-owner", "2"],
        None,
        &hold,
    );
    let server = http.at;
    let (greedy, other) = (server.session(), server.session());
    assert_eq!(text(&server.call(&greedy, "addOne", 1)), "2");
    // The running call stays in the pool until the refusal has been seen.
    hold.hold();
    let mut threads = Vec::new();
    // One runs, two wait: the owner's cap is reached.
    for n in 0..3 {
        let session = greedy.clone();
        threads.push(thread::spawn(move || {
            text(&server.call(&session, "slowEcho", 200 + n))
        }));
        wait_until("the slow call is in", || server.in_flight() == n as u64 + 1);
    }
    let refused = server.call(&greedy, "addOne", 5);
    hold.release();
    assert_eq!(refused["isError"], json!(true), "{refused}");
    let why = text(&refused);
    assert!(
        why.contains("already has 2 calls waiting") && why.contains("--max-queued-per-owner"),
        "{why}"
    );
    // Another owner is still queued and served.
    assert_eq!(text(&server.call(&other, "addOne", 6)), "7");
    let answers: Vec<String> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(answers, ["200", "201", "202"]);
    // Said on stderr in the turn that refused the call; a pipe apart from the answer.
    wait_until("the cap's warning on stderr", || {
        http.proc
            .stderr_now()
            .contains("morloc-mcp: an HTTP session reached the cap of 2 calls waiting")
    });
}

// ---- stdio --------------------------------------------------------------

struct Stdio {
    proc: Proc,
    next_id: u64,
    stash: Vec<Value>,
    _dir: TempDir,
}

impl Stdio {
    fn start(extra: &[&str]) -> Stdio {
        Stdio::start_held(extra, None)
    }

    /// [`Stdio::start`] whose test pool holds `slowEcho` calls while `hold`
    /// says so.
    fn start_held(extra: &[&str], hold: Option<&Hold>) -> Stdio {
        let dir = TempDir::new();
        let manifest = program(&dir);
        let mut args = vec!["mcp".to_string(), manifest.display().to_string()];
        args.extend(extra.iter().map(|s| s.to_string()));
        let mut command = cmd(&args);
        if let Some(hold) = hold {
            let (key, value) = hold.env();
            command.env(key, value);
        }
        let mut server = Stdio {
            proc: Proc::spawn(&mut command),
            next_id: 1,
            stash: Vec::new(),
            _dir: dir,
        };
        let id = server.send(
            "initialize",
            json!({"protocolVersion": PROTOCOL, "capabilities": {},
                   "clientInfo": {"name": "fairness", "version": "1"}}),
        );
        server.response(id);
        server
            .proc
            .send_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        server
    }

    fn send(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.proc.send_line(&msg.to_string());
        id
    }

    fn call(&mut self, tool: &str, arg: i64) -> u64 {
        self.send(
            "tools/call",
            json!({"name": tool, "arguments": {"_1": arg}}),
        )
    }

    fn response(&mut self, id: u64) -> Value {
        if let Some(at) = self.stash.iter().position(|m| m["id"] == json!(id)) {
            return self.stash.remove(at);
        }
        loop {
            let line = self.proc.read_line(TIMEOUT).expect("a response");
            let msg: Value = serde_json::from_str(&line).expect("JSON-RPC");
            if msg["id"] == json!(id) {
                return msg;
            }
            self.stash.push(msg);
        }
    }

    fn result(&mut self, tool: &str, arg: i64) -> Value {
        let id = self.call(tool, arg);
        self.response(id)["result"].clone()
    }

    #[track_caller]
    fn wait_stderr(&self, needle: &str) {
        wait_until(needle, || self.proc.stderr_now().contains(needle));
    }
}

#[test]
fn a_call_that_waits_past_the_queue_timeout_fails_naming_the_wait() {
    let hold = Hold::new();
    let mut server = Stdio::start_held(
        &["--pool-replicas", "py=1", "--queue-timeout", "0.5"],
        Some(&hold),
    );
    // Waiting for the pool to start counts too: the first calls may fail.
    wait_until("the pool serves", || {
        server.result("addOne", 1)["isError"] == json!(false)
    });
    // The slow call is held in its pool until the waiting one has failed.
    hold.hold();
    let slow = server.call("slowEcho", 1);
    let waiting = server.call("addOne", 2);
    let failed = server.response(waiting)["result"].clone();
    hold.release();
    assert_eq!(failed["isError"], json!(true), "{failed}");
    let why = text(&failed);
    assert!(
        why.contains("waited 0.5 s for a process of pool 'py'") && why.contains("--queue-timeout"),
        "{why}"
    );
    // The running call is not affected.
    assert_eq!(text(&server.response(slow)["result"]), "1");
    server.wait_stderr("morloc-mcp: 1 call(s) waited 0.5 s for a process of pool 'py'");
}

#[test]
fn the_restart_breaker_says_when_it_opens_and_closes() {
    let mut server = Stdio::start(&[]);
    assert_eq!(text(&server.result("addOne", 1)), "2");
    // Each poolExit kills the pool; the sixth start in a minute is refused.
    let mut tries = 0;
    loop {
        let result = server.result("poolExit", 0);
        if text(&result).contains("keeps dying") {
            break;
        }
        tries += 1;
        assert!(tries < 20, "the breaker never opened: {result}");
    }
    server.wait_stderr(
        "morloc-mcp: pool 'py' keeps dying (5 starts within 60 s): restart breaker open",
    );
    // Calls fail at once while it is open; that is said once, not per call.
    for _ in 0..20 {
        let result = server.result("addOne", 1);
        assert!(text(&result).contains("keeps dying"), "{result}");
    }
    let stderr = server.proc.stderr_now();
    assert_eq!(
        stderr.matches("restart breaker open").count(),
        1,
        "{stderr}"
    );
    // After the retry delay a call starts the pool again, and it serves.
    wait_until("the pool serves again", || {
        server.result("addOne", 1)["isError"] == json!(false)
    });
    server.wait_stderr("morloc-mcp: pool 'py' is ready again: restart breaker closed (");
}

#[test]
fn past_the_total_cap_a_call_is_refused_at_once() {
    let hold = Hold::new();
    let mut server = Stdio::start_held(
        &[
            "--pool-replicas",
            "py=1",
            "--max-queued",
            "1",
            "--max-queued-per-owner",
            "0",
        ],
        Some(&hold),
    );
    wait_until("the pool serves", || {
        server.result("addOne", 1)["isError"] == json!(false)
    });
    // One runs (held in its pool until released), one waits: the queue is
    // full.
    hold.hold();
    let slow = server.call("slowEcho", 1);
    let waiting = server.call("addOne", 2);
    let refused = server.result("addOne", 3);
    assert_eq!(refused["isError"], json!(true), "{refused}");
    let why = text(&refused);
    assert!(
        why.contains("already has 1 calls waiting") && why.contains("--max-queued cap"),
        "{why}"
    );
    hold.release();
    assert_eq!(text(&server.response(slow)["result"]), "1");
    assert_eq!(text(&server.response(waiting)["result"]), "3");
    server.wait_stderr("morloc-mcp: 1 calls are waiting for pool processes (--max-queued)");
}
