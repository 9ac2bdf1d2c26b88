//! Fault injection: a corpus of bad inputs with their exact answers, and
//! checks that signals and long runs leave nothing behind.
//!
//! The corpus lives in `tests/data/faults` (its README describes the file
//! formats). Each transport runs every case, in name order, against ONE
//! long-lived server, and after each case asks that server for a `ping` and
//! a real `addOne` call: a bad input must get its exact answer and must not
//! disturb anything that follows. Mismatches are collected and reported
//! together; a server that stops answering ends the test at once.
//!
//! A case without an expected file is a failure, unless `UPDATE_GOLDEN` is
//! set: then what the server answered is written as the expectation, to be
//! reviewed by hand before it is committed.

use std::fs;
use std::io::Write;
use std::net::{Shutdown, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::http::{wait_for_banner, Client, Response};
use crate::support::stdio::Lines;
use crate::util::procfs::{self, all_pids, cmdline, fd_count, group_members, shm_files};
use crate::util::{self, poll_until, wait_until, Proc, TempDir, TIMEOUT};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"faults","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// The `tools/call addOne 41` result every health check expects.
const ADD_ONE_RESULT: &str = r#"{"content":[{"type":"text","text":"42"}],"isError":false}"#;

/// How long a recording waits for late lines after the sync ping's reply.
const RECORD_QUIET: Duration = Duration::from_millis(1500);

// ---- the corpus on disk ----------------------------------------------------

/// One case: its name (the file stem) and the file holding its input.
struct Case {
    name: String,
    input: PathBuf,
}

impl Case {
    /// Where its expectation lives: `<name>.out`, or `<name>.out.rep` for
    /// one too large to keep as bytes.
    fn expected_path(&self) -> PathBuf {
        let dir = self.input.parent().unwrap_or(Path::new("."));
        let rep = dir.join(format!("{}.out.rep", self.name));
        if rep.exists() {
            rep
        } else {
            dir.join(format!("{}.out", self.name))
        }
    }

    fn expected(&self) -> Option<Vec<u8>> {
        let path = self.expected_path();
        path.exists().then(|| load(&path))
    }

    /// Writes the expectation under `UPDATE_GOLDEN`; fails otherwise.
    #[track_caller]
    fn record(&self, actual: &[u8]) {
        let path = self.expected_path();
        if std::env::var_os("UPDATE_GOLDEN").is_none() {
            panic!(
                "{} is missing (rerun with UPDATE_GOLDEN=1 to record, then review it); the server answered:\n{}",
                path.display(),
                shorten(actual)
            );
        }
        fs::write(&path, actual).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    }
}

/// The cases of `tests/data/faults/<transport>`: files ending in `.<ext>` or
/// `.<ext>.rep`, sorted by name.
#[track_caller]
fn cases(transport: &str, ext: &str) -> Vec<Case> {
    let dir = util::data(&format!("faults/{transport}"));
    let entries =
        fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        let stem = file
            .strip_suffix(&format!(".{ext}"))
            .or_else(|| file.strip_suffix(&format!(".{ext}.rep")));
        if let Some(stem) = stem {
            out.push(Case {
                name: stem.to_string(),
                input: entry.path(),
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    for pair in out.windows(2) {
        assert_ne!(pair[0].name, pair[1].name, "two inputs for one case");
    }
    out
}

/// A file's bytes; a `.rep` file is expanded (see [`expand`]).
#[track_caller]
fn load(path: &Path) -> Vec<u8> {
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    if path.extension().is_some_and(|e| e == "rep") {
        expand(&String::from_utf8_lossy(&bytes), path)
    } else {
        bytes
    }
}

/// Expands a `.rep` file: each line is `= TEXT` (TEXT as is), `* N UNIT`
/// (UNIT repeated N times), or `LF` (one line feed); the pieces are joined
/// with nothing between them.
#[track_caller]
fn expand(text: &str, path: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(literal) = line.strip_prefix("= ") {
            out.extend_from_slice(literal.as_bytes());
        } else if let Some(rest) = line.strip_prefix("* ") {
            let (count, unit) = rest.split_once(' ').unwrap_or((rest, ""));
            let count: usize = count
                .parse()
                .unwrap_or_else(|_| panic!("{}: bad count in {line:?}", path.display()));
            out.extend_from_slice(unit.repeat(count).as_bytes());
        } else if line == "LF" {
            out.push(b'\n');
        } else {
            panic!("{}: unknown line {line:?}", path.display());
        }
    }
    out
}

/// The first 400 bytes of a text, for messages.
fn shorten(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    match text.char_indices().nth(400) {
        Some((at, _)) => format!("{}... ({} bytes)", &text[..at], bytes.len()),
        None => text.into_owned(),
    }
}

/// A mismatch report around the first differing byte.
fn difference(expected: &[u8], actual: &[u8]) -> String {
    let at = expected
        .iter()
        .zip(actual)
        .position(|(e, a)| e != a)
        .unwrap_or(expected.len().min(actual.len()));
    let from = at.saturating_sub(120);
    let window = |b: &[u8]| shorten(&b[from.min(b.len())..b.len().min(at + 200)]);
    format!(
        "first difference at byte {at} (expected {} bytes, got {})\n  expected: {}\n  actual:   {}",
        expected.len(),
        actual.len(),
        window(expected),
        window(actual)
    )
}

/// Mismatches collected over a corpus run.
#[derive(Default)]
struct Failures(Vec<String>);

impl Failures {
    fn add(&mut self, case: &str, what: String) {
        self.0.push(format!("{case}: {what}"));
    }

    #[track_caller]
    fn assert_none(&self, transport: &str, total: usize) {
        if !self.0.is_empty() {
            panic!(
                "{} of {total} {transport} cases failed:\n\n{}",
                self.0.len(),
                self.0.join("\n\n")
            );
        }
    }
}

// ---- programs ----------------------------------------------------------------

/// Adds pure commands with argument types `shapes` lacks (unsigned and
/// narrow integers, a 32-bit float); each returns its argument.
fn add_narrow_types(manifest: &mut Value) {
    let echo = |name: &str, schema: &str| {
        json!({
            "name": name, "type": "pure", "desc": [format!("Return the argument ({schema})")],
            "args": [{"kind": "pos", "schema": schema}],
            "return": {"schema": schema},
            "expr": {"tag": "lambda", "vars": ["x"], "body": {"tag": "bound", "schema": schema, "var": "x"}}
        })
    };
    let commands = [
        echo("echoU8", "u1"),
        echo("echoU64", "u8"),
        echo("echoI8", "i1"),
        echo("echoF32", "f4"),
    ];
    match manifest.get_mut("commands").and_then(Value::as_array_mut) {
        Some(list) => list.extend(commands),
        None => panic!("the shapes manifest has no commands"),
    }
}

fn manifest(dir: &TempDir) -> PathBuf {
    util::shapes_manifest_with(dir, add_narrow_types)
}

// ---- stdio -------------------------------------------------------------------

/// A stdio server after the handshake (the support library's [`Lines`]).
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
    #[track_caller]
    fn start() -> Stdio {
        let dir = TempDir::new();
        let manifest = manifest(&dir);
        let mut s = Stdio(Lines::mcp(&manifest, &[], &[], Some(dir)));
        let reply = s.ask(INITIALIZE);
        assert!(
            reply.starts_with(r#"{"jsonrpc":"2.0","id":0,"result":"#),
            "{reply}"
        );
        s.send(INITIALIZED);
        s
    }

    /// Sends `request` and reads lines until the one that starts with
    /// `{"jsonrpc":"2.0","id":<id>,`; returns it and the lines before it.
    #[track_caller]
    fn exchange(&mut self, request: &str, id: &str) -> (String, Vec<String>) {
        self.proc.send_line(request);
        let prefix = format!(r#"{{"jsonrpc":"2.0","id":{id},"#);
        let mut before = Vec::new();
        loop {
            let line = self.line();
            if line.starts_with(&prefix) {
                return (line, before);
            }
            before.push(line);
        }
    }

    /// A `ping` and an `addOne` must both be answered correctly, and nothing
    /// else may arrive meanwhile. Returns what was wrong.
    #[track_caller]
    fn health(&mut self, n: usize) -> Option<String> {
        let mut problems = Vec::new();
        let id = format!("\"ping-{n}\"");
        let (reply, stray) = self.exchange(
            &format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#),
            &id,
        );
        if !stray.is_empty() {
            problems.push(format!("unexpected lines before the ping reply: {stray:?}"));
        }
        let want = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#);
        if reply != want {
            problems.push(format!("ping answered {reply}"));
        }
        let id = format!("\"call-{n}\"");
        let (reply, stray) = self.exchange(
            &format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"addOne","arguments":{{"_1":41}}}}}}"#
            ),
            &id,
        );
        if !stray.is_empty() {
            problems.push(format!(
                "unexpected lines before the addOne reply: {stray:?}"
            ));
        }
        let want = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{ADD_ONE_RESULT}}}"#);
        if reply != want {
            problems.push(format!("addOne answered {}", shorten(reply.as_bytes())));
        }
        (!problems.is_empty()).then(|| problems.join("; "))
    }

    /// Records what a case produces: every line until a sync ping is
    /// answered, and then until the server is quiet for a while.
    #[track_caller]
    fn record(&mut self, n: usize) -> Vec<u8> {
        let id = format!("\"record-{n}\"");
        let (_, mut lines) = self.exchange(
            &format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#),
            &id,
        );
        while let Some(line) = self.proc.try_read_line(RECORD_QUIET) {
            lines.push(line.trim_end_matches('\n').to_string());
        }
        lines
            .iter()
            .flat_map(|l| format!("{l}\n").into_bytes())
            .collect()
    }
}

#[test]
fn stdio_corpus() {
    let corpus = cases("stdio", "in");
    assert!(corpus.len() >= 70, "only {} stdio cases", corpus.len());
    let mut s = Stdio::start();
    let mut failures = Failures::default();
    for (n, case) in corpus.iter().enumerate() {
        let mut input = load(&case.input);
        assert!(
            !input.contains(&b'\n'),
            "{}: a stdio case is one line without its LF",
            case.name
        );
        input.push(b'\n');
        s.proc.send_bytes(&input);
        match case.expected() {
            Some(expected) => {
                let mut actual = Vec::new();
                for _ in 0..expected.split(|&b| b == b'\n').count() - 1 {
                    actual.extend_from_slice(s.line().as_bytes());
                    actual.push(b'\n');
                }
                if actual != expected {
                    failures.add(&case.name, difference(&expected, &actual));
                }
            }
            None => {
                let actual = s.record(n);
                case.record(&actual);
            }
        }
        if let Some(problem) = s.health(n) {
            failures.add(&case.name, format!("afterwards: {problem}"));
        }
    }
    // Still the same process, and it exits cleanly at EOF.
    s.proc.close_stdin();
    let status = s.proc.wait(TIMEOUT);
    assert_eq!(status.code(), Some(0), "{}", s.proc.stderr_now());
    failures.assert_none("stdio", corpus.len());
}

// ---- HTTP --------------------------------------------------------------------

/// A server on `--http-port 0` with one initialized session.
struct Http {
    proc: Proc,
    addr: SocketAddr,
    session: String,
    _dir: TempDir,
}

/// The corpus form of a response: the status line, then the body if there
/// is one.
fn corpus_text(response: &Response) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {} {}\n", response.status, response.reason).into_bytes();
    if !response.body.is_empty() {
        out.extend_from_slice(&response.body);
        out.push(b'\n');
    }
    out
}

/// Whether the server closes the connection (within the client's read
/// timeout) without sending anything more.
fn closes(conn: &mut Client) -> Result<(), String> {
    if conn.buf.is_empty() && !conn.try_fill()? {
        return Ok(());
    }
    Err(format!(
        "more bytes after the response: {}",
        shorten(&conn.buf)
    ))
}

impl Http {
    #[track_caller]
    fn start(extra: &[&str]) -> Http {
        let dir = TempDir::new();
        let mut command = util::cmd(["mcp"]);
        command
            .arg(manifest(&dir))
            .args(["--http-port", "0"])
            .args(extra);
        let proc = Proc::spawn(&mut command);
        let addr = wait_for_banner(&proc);
        let mut http = Http {
            proc,
            addr,
            session: String::new(),
            _dir: dir,
        };
        http.session = http.new_session();
        http
    }

    #[track_caller]
    fn connect(&self) -> Client {
        Client::connect(self.addr)
    }

    /// `initialize` and `notifications/initialized`; returns the session id.
    #[track_caller]
    fn new_session(&self) -> String {
        let mut conn = self.connect();
        let reply = post(&mut conn, None, INITIALIZE);
        assert_eq!(reply.status, 200, "{}", shorten(&reply.body));
        let session = reply
            .header("mcp-session-id")
            .unwrap_or_else(|| panic!("no session id: {:?}", reply.headers))
            .to_string();
        let reply = post(&mut conn, Some(&session), INITIALIZED);
        assert_eq!(reply.status, 202, "{}", shorten(&reply.body));
        session
    }

    /// On a fresh connection of the corpus session: a `ping` and an `addOne`.
    fn health(&self, n: usize) -> Option<String> {
        let mut conn = self.connect();
        let mut problems = Vec::new();
        let ping = format!(r#"{{"jsonrpc":"2.0","id":"ping-{n}","method":"ping"}}"#);
        let reply = post(&mut conn, Some(&self.session), &ping);
        let want = format!(r#"{{"jsonrpc":"2.0","id":"ping-{n}","result":{{}}}}"#);
        if reply.status != 200 || reply.body != want.as_bytes() {
            problems.push(format!("ping: {}", shorten(&corpus_text(&reply))));
        }
        let call = format!(
            r#"{{"jsonrpc":"2.0","id":"call-{n}","method":"tools/call","params":{{"name":"main__addOne","arguments":{{"_1":41}}}}}}"#
        );
        let reply = post(&mut conn, Some(&self.session), &call);
        let want = format!(r#"{{"jsonrpc":"2.0","id":"call-{n}","result":{ADD_ONE_RESULT}}}"#);
        if reply.status != 200 || reply.body != want.as_bytes() {
            problems.push(format!("addOne: {}", shorten(&corpus_text(&reply))));
        }
        (!problems.is_empty()).then(|| problems.join("; "))
    }
}

/// POSTs one JSON-RPC message on a keep-alive connection.
#[track_caller]
fn post(conn: &mut Client, session: Option<&str>, body: &str) -> Response {
    let session = session.map_or(String::new(), |s| format!("Mcp-Session-Id: {s}\r\n"));
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{session}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    if let Err(e) = conn.stream.write_all(request.as_bytes()) {
        panic!("cannot send a request: {e}");
    }
    match conn.try_read_response() {
        Ok(Some(reply)) => reply,
        Ok(None) => panic!("connection closed instead of answering {body}"),
        Err(e) => panic!("no answer to {body}: {e}"),
    }
}

/// Replaces `{{SID}}` with the session id.
fn substitute(bytes: &[u8], session: &str) -> Vec<u8> {
    const MARK: &[u8] = b"{{SID}}";
    let mut out = Vec::with_capacity(bytes.len());
    let mut rest = bytes;
    while let Some(at) = rest.windows(MARK.len()).position(|w| w == MARK) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(session.as_bytes());
        rest = &rest[at + MARK.len()..];
    }
    out.extend_from_slice(rest);
    out
}

/// Sends one case on a fresh connection and returns its corpus text (empty
/// when the server closed without answering).
fn run_http_case(server: &Http, case: &Case) -> Result<Vec<u8>, String> {
    let request = substitute(&load(&case.input), &server.session);
    let mut conn = server.connect();
    // The server may answer and close before taking every byte; what it
    // says is what counts, so a failed write is not an error here.
    let _ = conn.stream.write_all(&request);
    if case.name.ends_with("_then_close") {
        let _ = conn.stream.shutdown(Shutdown::Write);
    }
    let Some(response) = conn.try_read_response()? else {
        return Ok(Vec::new());
    };
    let closing = response
        .header("connection")
        .is_some_and(|v| v.eq_ignore_ascii_case("close"));
    if closing {
        closes(&mut conn).map_err(|e| {
            format!(
                "answered {} {} with Connection: close, but {e}",
                response.status, response.reason
            )
        })?;
    }
    Ok(corpus_text(&response))
}

#[test]
fn http_corpus() {
    let corpus = cases("http", "req");
    assert!(corpus.len() >= 40, "only {} HTTP cases", corpus.len());
    let server = Http::start(&[]);
    let mut failures = Failures::default();
    for (n, case) in corpus.iter().enumerate() {
        match run_http_case(&server, case) {
            Err(e) => failures.add(&case.name, e),
            Ok(actual) => match case.expected() {
                Some(expected) if actual != expected => {
                    failures.add(&case.name, difference(&expected, &actual));
                }
                Some(_) => {}
                None => case.record(&actual),
            },
        }
        if let Some(problem) = server.health(n) {
            failures.add(&case.name, format!("afterwards: {problem}"));
        }
    }
    failures.assert_none("HTTP", corpus.len());
}

// ---- processes, descriptors and files ---------------------------------------

/// The test pool under `server`: its process group and the run directory
/// (`/tmp/morloc.*`) it was given. Waits for it to appear.
#[track_caller]
fn pool_of(server: i32) -> (i32, PathBuf) {
    wait_until(format!("a test pool under pid {server}"), || {
        all_pids().into_iter().find_map(|pid| {
            let procfs::Stat { ppid, pgrp, .. } = procfs::stat(pid)?;
            if ppid != server {
                return None;
            }
            let argv = cmdline(pid);
            if !argv.iter().any(|a| a.ends_with("testpool.py")) {
                return None;
            }
            let dir = argv.iter().find(|a| {
                let p = Path::new(a.as_str());
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("morloc."))
            })?;
            Some((pgrp, PathBuf::from(dir)))
        })
    })
}

/// Waits (up to [`TIMEOUT`]) for the server's descriptor count to come back
/// to at most `expected`: closing a connection is noticed a moment later.
/// (`expected` may include a connection whose close was not yet noticed
/// when it was counted; a leak grows by one per call or connection, far
/// more than that.)
#[track_caller]
fn assert_fds_settle(pid: i32, expected: usize, what: &str) {
    let listing = || -> String {
        fs::read_dir(format!("/proc/{pid}/fd"))
            .map(|d| {
                d.flatten()
                    .map(|e| {
                        let target = fs::read_link(e.path()).unwrap_or_default();
                        format!(
                            "{} -> {}",
                            e.file_name().to_string_lossy(),
                            target.display()
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    };
    let mut now = 0;
    if poll_until(|| {
        now = fd_count(pid);
        (now <= expected).then_some(())
    })
    .is_none()
    {
        panic!(
            "{what}: {now} open descriptors, {expected} before:\n{}",
            listing()
        );
    }
}

/// After the server exited: nothing left in the pool's process group, no
/// run directory, no shared memory of the server's pid.
#[track_caller]
fn assert_no_leftovers(server: i32, pgrp: i32, run_dir: &Path) {
    let mut members = Vec::new();
    poll_until(|| {
        members = group_members(&[pgrp]);
        members.is_empty().then_some(())
    });
    assert!(
        members.is_empty(),
        "pool processes left behind: {members:?}"
    );
    assert!(!run_dir.exists(), "{} left behind", run_dir.display());
    let shm = shm_files(server);
    assert!(shm.is_empty(), "shared memory left behind: {shm:?}");
}

#[test]
fn sighup_over_stdio_exits_129_and_leaves_nothing() {
    let mut s = Stdio::start();
    let (reply, _) = s.exchange(
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"addOne","arguments":{"_1":1}}}"#,
        "1",
    );
    assert!(reply.contains(r#""text":"2""#), "{reply}");
    let server = s.proc.pid() as i32;
    let (pgrp, run_dir) = pool_of(server);
    assert!(run_dir.exists());
    assert!(
        !shm_files(server).is_empty(),
        "no shared memory to clean up"
    );
    // A call in flight must not hold the exit up.
    s.proc.send_line(
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slowEcho","arguments":{"_1":20000}}}"#,
    );
    let (reply, _) = s.exchange(r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#, "3");
    assert_eq!(reply, r#"{"jsonrpc":"2.0","id":3,"result":{}}"#);
    s.proc.signal(libc::SIGHUP);
    let status = s.proc.wait_keeping_stdin(TIMEOUT);
    assert_eq!(
        status.code(),
        Some(128 + libc::SIGHUP),
        "{}",
        s.proc.stderr_now()
    );
    assert_eq!(s.proc.stdout_rest(TIMEOUT), "", "output after SIGHUP");
    assert_no_leftovers(server, pgrp, &run_dir);
}

#[test]
fn sighup_over_http_exits_129_and_leaves_nothing() {
    let mut server = Http::start(&[]);
    let pid = server.proc.pid() as i32;
    assert_eq!(server.health(0), None);
    let (pgrp, run_dir) = pool_of(pid);
    // A call in flight on one connection, an idle connection beside it. (No
    // health check while the call runs: the pool, like a real Python pool,
    // runs one call at a time, so it would wait for the slow call.)
    assert_eq!(server.health(1), None);
    let mut busy = server.connect();
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"main__slowEcho","arguments":{"_1":20000}}}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nMcp-Session-Id: {}\r\nContent-Length: {}\r\n\r\n{call}",
        server.session,
        call.len()
    );
    busy.stream
        .write_all(request.as_bytes())
        .unwrap_or_else(|e| panic!("cannot send the call: {e}"));
    let mut idle = server.connect();
    server.proc.signal(libc::SIGHUP);
    let status = server.proc.wait_keeping_stdin(TIMEOUT);
    assert_eq!(
        status.code(),
        Some(128 + libc::SIGHUP),
        "{}",
        server.proc.stderr_now()
    );
    assert_eq!(closes(&mut busy), Ok(()), "the busy connection");
    assert_eq!(closes(&mut idle), Ok(()), "the idle connection");
    assert_no_leftovers(pid, pgrp, &run_dir);
}

#[test]
fn descriptors_do_not_grow_over_1000_stdio_calls() {
    let mut s = Stdio::start();
    let pid = s.proc.pid() as i32;
    let call = |n: usize| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"name":"addOne","arguments":{{"_1":{n}}}}}}}"#
        )
    };
    for n in 1..=10 {
        s.exchange(&call(n), &n.to_string());
    }
    let before = fd_count(pid);
    for n in 11..=1010 {
        let (reply, stray) = s.exchange(&call(n), &n.to_string());
        assert!(stray.is_empty(), "{stray:?}");
        let want = format!(
            r#"{{"jsonrpc":"2.0","id":{n},"result":{{"content":[{{"type":"text","text":"{}"}}],"isError":false}}}}"#,
            n + 1
        );
        assert_eq!(reply, want);
    }
    assert_fds_settle(pid, before, "after 1000 stdio calls");
}

#[test]
fn descriptors_do_not_grow_over_1000_http_sessions_and_200_connections() {
    let server = Http::start(&[]);
    let pid = server.proc.pid() as i32;
    // Warm up: the pool is running and one connection has come and gone
    // (its close is noticed a moment later: wait for a steady count).
    assert_eq!(server.health(0), None);
    let before = fd_count(pid);

    let mut conn = server.connect();
    for n in 1..=1000 {
        let reply = post(&mut conn, None, INITIALIZE);
        assert_eq!(reply.status, 200);
        let session = reply
            .header("mcp-session-id")
            .unwrap_or_else(|| panic!("no session id"))
            .to_string();
        assert_eq!(post(&mut conn, Some(&session), INITIALIZED).status, 202);
        let call = format!(
            r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"name":"main__addOne","arguments":{{"_1":{n}}}}}}}"#
        );
        let reply = post(&mut conn, Some(&session), &call);
        let want = format!(
            r#"{{"jsonrpc":"2.0","id":{n},"result":{{"content":[{{"type":"text","text":"{}"}}],"isError":false}}}}"#,
            n + 1
        );
        assert_eq!(String::from_utf8_lossy(&reply.body), want);
        let delete =
            format!("DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nMcp-Session-Id: {session}\r\n\r\n");
        conn.stream
            .write_all(delete.as_bytes())
            .unwrap_or_else(|e| panic!("cannot send DELETE: {e}"));
        match conn.try_read_response() {
            Ok(Some(reply)) => assert_eq!(reply.status, 200, "{}", shorten(&reply.body)),
            other => panic!("DELETE: {:?}", other.map(|r| r.map(|r| r.status))),
        }
    }
    drop(conn);
    assert_fds_settle(pid, before, "after 1000 sessions on one connection");

    for n in 0..200 {
        let mut conn = server.connect();
        // Every other connection sends a request first; the rest say nothing.
        if n % 2 == 0 {
            let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
            assert_eq!(post(&mut conn, Some(&server.session), ping).status, 200);
        }
    }
    assert_fds_settle(pid, before, "after 200 connections");
}
