//! End-to-end tests of the stdio transport: the binary runs `mcp <manifest>`
//! with a real pool (the test pool script standing in for a compiled Python
//! pool) and is driven line by line through its stdin and stdout.
//!
//! Every read has a deadline, so a server that hangs fails the test instead
//! of stalling the run. Where a test asserts that nothing is sent, it sends
//! a `ping` afterwards and requires the ping's answer to be the next line:
//! deterministic, and faster than waiting for silence.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::stdio::Lines;
use crate::util::{self, procfs, wait_for, CallTrace, Hold, Stopwatch, TempDir, TIMEOUT};

/// The server's line cap (64 MiB, LF not counted).
const MAX_LINE: usize = 64 * 1024 * 1024;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const INITIALIZE_RESULT: &str = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true},"logging":{}},"serverInfo":{"name":"main","version":"0.98.2"}}}"#;

/// A running `morloc-mcp mcp <manifest>` driven line by line (the support
/// library's [`Lines`]), with this file's shorthands.
struct Server(Lines);

impl std::ops::Deref for Server {
    type Target = Lines;
    fn deref(&self) -> &Lines {
        &self.0
    }
}

impl std::ops::DerefMut for Server {
    fn deref_mut(&mut self) -> &mut Lines {
        &mut self.0
    }
}

impl Server {
    #[track_caller]
    fn spawn(manifest: &Path, options: &[&str], dir: TempDir) -> Server {
        Server(Lines::mcp(manifest, options, &[], Some(dir)))
    }

    /// The `shapes` program with the test pool, not yet initialized.
    #[track_caller]
    fn shapes() -> Server {
        Server::shapes_with(&[], |_| {})
    }

    #[track_caller]
    fn shapes_with(options: &[&str], edit: impl FnOnce(&mut Value)) -> Server {
        let dir = TempDir::new();
        let manifest = util::shapes_manifest_with(&dir, edit);
        Server::spawn(&manifest, options, dir)
    }

    /// The pool-less `kinds` program (flags, `_render`, bounded integers).
    #[track_caller]
    fn kinds() -> Server {
        Server::spawn(
            &util::data("tools/kinds/manifest.json"),
            &[],
            TempDir::new(),
        )
    }

    /// Performs the handshake.
    #[track_caller]
    fn ready(mut self) -> Server {
        let reply = self.ask(INITIALIZE);
        assert!(
            reply.starts_with(r#"{"jsonrpc":"2.0","id":0,"result":{"#),
            "{reply}"
        );
        self.send(INITIALIZED);
        self
    }

    /// The next stdout line, without its LF (which must be there).
    #[track_caller]
    fn next(&mut self) -> String {
        self.line()
    }

    /// Sends a `tools/call` (arguments as JSON text) and returns the raw reply.
    #[track_caller]
    fn call(&mut self, tool: &str, arguments: &str) -> String {
        self.sync_id += 1;
        let id = self.sync_id;
        let reply = self.ask(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments}}}}}"#
        ));
        let prefix = format!(r#"{{"jsonrpc":"2.0","id":{id},"#);
        assert!(
            reply.starts_with(&prefix),
            "reply to {tool} {arguments}: {reply}"
        );
        reply
    }

    /// Calls a tool and returns the raw `result` member of the reply.
    #[track_caller]
    fn result(&mut self, tool: &str, arguments: &str) -> String {
        let reply = self.call(tool, arguments);
        let prefix = format!(r#"{{"jsonrpc":"2.0","id":{},"result":"#, self.sync_id);
        match reply
            .strip_prefix(&prefix)
            .and_then(|r| r.strip_suffix('}'))
        {
            Some(result) => result.to_string(),
            None => panic!("not a result: {reply}"),
        }
    }

    /// Closes stdin and waits for the exit; nothing more may be written.
    #[track_caller]
    fn finish(mut self) -> (ExitStatus, String) {
        let done = self.0.finish();
        assert_eq!(done.rest, "", "output after EOF");
        (done.status, done.stderr)
    }
}

/// `{"content":[{"type":"text","text":<text>}],"isError":<is_error>}`.
fn text_result(text: &str, is_error: bool) -> String {
    json!({"content": [{"type": "text", "text": text}], "isError": is_error}).to_string()
}

fn parse(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
}

fn error_line(id: &str, code: i64, message: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{code},"message":{}}}}}"#,
        json!(message)
    )
}

// ---- handshake and JSON-RPC errors --------------------------------------

#[test]
fn handshake_then_tools_list() {
    let mut s = Server::shapes();
    assert_eq!(s.ask(INITIALIZE), INITIALIZE_RESULT);
    s.send(INITIALIZED);
    s.quiet();
    let reply = parse(&s.ask(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#));
    let expected = parse(&util::read(&util::data("shapes/expected-mcp-tools.json")));
    assert_eq!(reply["id"], json!(1));
    assert_eq!(reply["result"], expected);
    // A second initialize is answered the same way and changes nothing.
    assert_eq!(s.ask(INITIALIZE), INITIALIZE_RESULT);
    assert_eq!(s.result("addOne", r#"{"_1":1}"#), text_result("2", false));
    let (status, stderr) = s.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
}

#[test]
fn initialize_negotiates_the_protocol_version() {
    let mut s = Server::shapes();
    for (asked, answered) in [
        ("\"2025-03-26\"", "2025-03-26"),
        ("\"2025-06-18\"", "2025-06-18"),
        ("\"2025-11-25\"", "2025-11-25"),
        ("\"2024-11-05\"", "2024-11-05"),
        ("\"2024-10-07\"", "2025-06-18"),
        ("\"\"", "2025-06-18"),
        ("5", "2025-06-18"),
    ] {
        let reply = s.ask(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":{asked}}}}}"#
        ));
        assert_eq!(
            reply,
            INITIALIZE_RESULT
                .replace("\"id\":0", "\"id\":1")
                .replace("2025-06-18", answered),
            "asked {asked}"
        );
    }
    // No params at all.
    let reply = s.ask(r#"{"jsonrpc":"2.0","id":0,"method":"initialize"}"#);
    assert_eq!(reply, INITIALIZE_RESULT);
}

#[test]
fn tools_are_gated_until_the_initialized_notification() {
    let mut s = Server::shapes();
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"addOne","arguments":{"_1":1}}}"#;
    let gated_list = error_line(
        "1",
        -32600,
        "received tools/list before initialization completed",
    );
    let gated_call = error_line(
        "2",
        -32600,
        "received tools/call before initialization completed",
    );
    assert_eq!(s.ask(list), gated_list);
    assert_eq!(s.ask(call), gated_call);
    // ping and initialize work before; initialize alone does not unlock.
    s.quiet();
    assert_eq!(s.ask(INITIALIZE), INITIALIZE_RESULT);
    assert_eq!(s.ask(list), gated_list);
    assert_eq!(s.ask(call), gated_call);
    // The notification sent with an id still unlocks, and is not answered.
    s.send(r#"{"jsonrpc":"2.0","id":3,"method":"notifications/initialized"}"#);
    s.quiet();
    assert!(s
        .ask(list)
        .starts_with(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":["#));
    assert_eq!(
        s.ask(call),
        format!(
            r#"{{"jsonrpc":"2.0","id":2,"result":{}}}"#,
            text_result("2", false)
        )
    );
}

#[test]
fn parse_errors() {
    let mut s = Server::shapes().ready();
    let invalid = error_line("null", -32700, "invalid JSON");
    for line in [
        "not json",
        "{",
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"} {"jsonrpc":"2.0","id":2,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"} x"#,
        "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
        "'single'",
        "nul\0l",
    ] {
        assert_eq!(s.ask(line), invalid, "{line:?}");
    }
    // Invalid UTF-8, even inside an otherwise valid request.
    s.proc
        .send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"pi\xffng\"}\n");
    assert_eq!(
        s.next(),
        error_line("null", -32700, "invalid JSON: message is not valid UTF-8")
    );
    s.proc.send_bytes(b"\xc3\n");
    assert_eq!(
        s.next(),
        error_line("null", -32700, "invalid JSON: message is not valid UTF-8")
    );
    s.quiet();
}

/// Builds a ping request with id `id` padded to exactly `len` bytes, plus LF.
fn padded_ping(id: &str, len: usize) -> Vec<u8> {
    let head = format!(r#"{{"jsonrpc":"2.0","id":"{id}","method":"ping","params":{{"pad":""#);
    let tail = r#""}}"#;
    let mut line = Vec::with_capacity(len + 1);
    line.extend_from_slice(head.as_bytes());
    line.resize(len - tail.len(), b'x');
    line.extend_from_slice(tail.as_bytes());
    line.push(b'\n');
    assert_eq!(line.len(), len + 1);
    line
}

#[test]
fn line_length_cap() {
    let mut s = Server::shapes().ready();
    // Exactly at the cap: served.
    s.proc.send_bytes(&padded_ping("cap", MAX_LINE));
    assert_eq!(s.next(), r#"{"jsonrpc":"2.0","id":"cap","result":{}}"#);
    // One byte over: discarded up to its LF and answered with a parse error
    // (the reference uses -32600 here), then the next line is served.
    s.proc.send_bytes(&padded_ping("over", MAX_LINE + 1));
    assert_eq!(
        s.next(),
        error_line("null", -32700, "request line exceeds the maximum size")
    );
    s.quiet();
}

#[test]
fn invalid_requests() {
    let mut s = Server::shapes().ready();
    let batch = error_line(
        "null",
        -32600,
        "batch requests are not supported: send one JSON-RPC message per line",
    );
    assert_eq!(
        s.ask(r#"[{"jsonrpc":"2.0","id":2,"method":"ping"}]"#),
        batch
    );
    assert_eq!(s.ask("[]"), batch);
    let not_object = error_line(
        "null",
        -32600,
        "invalid request: expected a JSON-RPC message object",
    );
    for line in ["5", "\"ping\"", "null", "true", "-1.5"] {
        assert_eq!(s.ask(line), not_object, "{line}");
    }
    // No method: the id is echoed when it is a valid one.
    assert_eq!(
        s.ask(r#"{"jsonrpc":"2.0","id":3}"#),
        error_line("3", -32600, "missing 'method'")
    );
    assert_eq!(
        s.ask(r#"{"jsonrpc":"2.0","id":"x","params":{}}"#),
        error_line("\"x\"", -32600, "missing 'method'")
    );
    assert_eq!(
        s.ask(r#"{"jsonrpc":"2.0","id":4,"method":7}"#),
        error_line("4", -32600, "missing 'method'")
    );
    assert_eq!(
        s.ask(r#"{"jsonrpc":"2.0","id":null}"#),
        error_line("null", -32600, "missing 'method'")
    );
    assert_eq!(
        s.ask(r#"{"jsonrpc":"2.0","id":1.5}"#),
        error_line("null", -32600, "missing 'method'")
    );
    assert_eq!(
        s.ask(r#"{"jsonrpc":"2.0"}"#),
        error_line("null", -32600, "invalid request: missing 'method'")
    );
    assert_eq!(
        s.ask("{}"),
        error_line("null", -32600, "invalid request: missing 'method'")
    );
    // Ids MCP does not allow.
    // The message shows the id as serialized (`1e2` becomes `1e+2`).
    for (id, shown) in [
        ("null", "null"),
        ("1.5", "1.5"),
        ("1e2", "1e+2"),
        ("-0.0", "-0.0"),
        ("{\"a\":1}", "{\"a\":1}"),
        ("[1]", "[1]"),
        ("true", "true"),
    ] {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
        let message =
            format!("invalid request id {shown}: MCP request ids must be strings or integers");
        assert_eq!(s.ask(&line), error_line("null", -32600, &message), "{line}");
    }
    s.quiet();
}

#[test]
fn unknown_methods() {
    let mut s = Server::shapes().ready();
    for method in [
        "resources/list",
        "prompts/list",
        "completion/complete",
        "tools/other",
        "",
        "notifications/initialized/x",
    ] {
        let reply = s.ask(&format!(
            r#"{{"jsonrpc":"2.0","id":9,"method":"{method}"}}"#
        ));
        assert_eq!(
            reply,
            error_line("9", -32601, &format!("unknown method '{method}'"))
        );
    }
    // Unknown methods before initialization are just as unknown.
    let mut s = Server::shapes();
    let reply = s.ask(r#"{"jsonrpc":"2.0","id":1,"method":"resources/read"}"#);
    assert_eq!(
        reply,
        error_line("1", -32601, "unknown method 'resources/read'")
    );
}

#[test]
fn invalid_params() {
    let mut s = Server::shapes().ready();
    let cases: &[(&str, &str)] = &[
        (r#""method":"tools/call""#, "missing params"),
        (r#""method":"tools/call","params":null"#, "missing tool 'name'"),
        (r#""method":"tools/call","params":{}"#, "missing tool 'name'"),
        (r#""method":"tools/call","params":{"name":5}"#, "missing tool 'name'"),
        (r#""method":"tools/call","params":{"name":"nope"}"#, "unknown tool 'nope'"),
        (r#""method":"tools/call","params":{"name":"addOne","arguments":[41]}"#, "'arguments' must be an object"),
        (r#""method":"tools/call","params":{"name":"addOne","arguments":"x"}"#, "'arguments' must be an object"),
        (r#""method":"tools/call","params":{"name":"addOne"}"#, "missing required argument '_1'"),
        (r#""method":"tools/call","params":{"name":"addOne","arguments":null}"#, "missing required argument '_1'"),
        (r#""method":"tools/call","params":{"name":"addOne","arguments":{}}"#, "missing required argument '_1'"),
        (r#""method":"tools/call","params":{"name":"addOne","arguments":{"zz":1,"_1":1}}"#, "unknown argument 'zz' (the arguments of 'addOne': _1)"),
        (r#""method":"tools/call","params":{"name":"addOne","arguments":{"_1":41,"_render":"raw"}}"#, "unknown argument '_render' (the arguments of 'addOne': _1)"),
        (r#""method":"tools/call","params":{"name":"configWhole","arguments":{"tmpDir":"/x"}}"#, "unknown argument 'tmpDir' (the arguments of 'configWhole': configwhole)"),
        (r#""method":"tools/call","params":{"name":"scaleReal","arguments":{"_2":1}}"#, "missing required argument '_1'"),
        (
            r#""method":"logging/setLevel","params":{"level":"loud"}"#,
            "invalid log level 'loud': expected one of debug, info, notice, warning, error, critical, alert, emergency",
        ),
        (
            r#""method":"logging/setLevel""#,
            "invalid log level (missing): expected one of debug, info, notice, warning, error, critical, alert, emergency",
        ),
    ];
    for (body, message) in cases {
        let reply = s.ask(&format!(r#"{{"jsonrpc":"2.0","id":7,{body}}}"#));
        assert_eq!(reply, error_line("7", -32602, message), "{body}");
    }
    s.quiet();

    // Flags and projections (the pool-less `kinds` program).
    let mut s = Server::kinds().ready();
    let cases: &[(&str, &str)] = &[
        (
            r#"{"name":"options","arguments":{"verbose":1}}"#,
            "argument 'verbose' must be a boolean",
        ),
        (
            r#"{"name":"options","arguments":{"y":"true"}}"#,
            "argument 'y' must be a boolean",
        ),
        (
            r#"{"name":"options","arguments":{"verbose":null}}"#,
            "argument 'verbose' must be a boolean",
        ),
        (
            r#"{"name":"render","arguments":{"_1":[true,1.5,2],"_render":5}}"#,
            "argument '_render' must be a string",
        ),
        (
            r#"{"name":"render","arguments":{"_1":[true,1.5,2],"_render":null}}"#,
            "argument '_render' must be a string",
        ),
        (
            r#"{"name":"render","arguments":{"_1":[true,1.5,2],"_render":"gif"}}"#,
            "unknown render 'gif'",
        ),
    ];
    for (params, message) in cases {
        let reply = s.ask(&format!(
            r#"{{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{params}}}"#
        ));
        assert_eq!(reply, error_line("8", -32602, message), "{params}");
    }
    let (status, stderr) = s.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
}

#[test]
fn ids_are_echoed_exactly() {
    let mut s = Server::shapes().ready();
    for id in [
        "0",
        "1",
        "-1",
        "9223372036854775807",
        "18446744073709551615",
        "18446744073709551616",
        "-18446744073709551617",
        "123456789012345678901234567890",
        "\"\"",
        "\"abc\"",
        "\"0\"",
        "\"na\u{ef}ve \\\"q\\\" \\\\ \\n \u{1f600}\"",
    ] {
        let reply = s.ask(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#));
        assert_eq!(
            reply,
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)
        );
        let reply = s.ask(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"nope"}}"#));
        assert_eq!(reply, error_line(id, -32601, "unknown method 'nope'"));
        let reply = s.ask(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"addOne","arguments":{{"_1":1}}}}}}"#
        ));
        assert_eq!(
            reply,
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{}}}"#,
                text_result("2", false)
            )
        );
    }
}

#[test]
fn blank_lines_client_responses_and_notifications_are_not_answered() {
    let mut s = Server::shapes().ready();
    for line in [
        "",
        "   ",
        "\t",
        "\r",
        " \t \r",
        r#"{"jsonrpc":"2.0","id":5,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":"x","error":{"code":-1,"message":"no"}}"#,
        r#"{"jsonrpc":"2.0","result":{}}"#,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"invalid JSON"}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":12345}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#,
        r#"{"jsonrpc":"2.0","method":"ping"}"#,
        // A call sent as a notification is not executed.
        r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"addOne","arguments":{"_1":1}}}"#,
        r#"{"jsonrpc":"2.0","method":"initialize"}"#,
    ] {
        s.send(line);
        s.quiet();
    }
    // CRLF line endings and surrounding whitespace are tolerated.
    s.proc
        .send_bytes(b"  {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} \r\n");
    assert_eq!(s.next(), r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

// ---- end of input and signals --------------------------------------------

#[test]
fn final_line_without_lf_is_served_at_eof() {
    let mut s = Server::shapes().ready();
    s.proc
        .send_bytes(br#"{"jsonrpc":"2.0","id":"last","method":"ping"}"#);
    s.proc.close_stdin();
    assert_eq!(s.next(), r#"{"jsonrpc":"2.0","id":"last","result":{}}"#);
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));

    // A final tools/call without LF runs to completion before the exit.
    // The pool is up first: the calls running at the end of stdin get 5 s
    // (`EOF_GRACE`), which a pool's start on a busy machine can use up.
    let mut s = Server::shapes().ready();
    assert_eq!(s.result("addOne", r#"{"_1":1}"#), text_result("2", false));
    s.proc.send_bytes(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"addOne","arguments":{"_1":41}}}"#);
    s.proc.close_stdin();
    assert_eq!(
        s.next(),
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{}}}"#,
            text_result("42", false)
        )
    );
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

// The /proc helpers of the support library, for the u32 pids of `Proc`.

fn children_of(pid: u32) -> Vec<u32> {
    procfs::children_of(pid as i32)
        .into_iter()
        .map(|p| p as u32)
        .collect()
}

fn cmdline(pid: u32) -> Vec<String> {
    procfs::cmdline(pid as i32)
}

fn exited(pid: u32) -> bool {
    procfs::exited(pid as i32)
}

fn shm_files(pid: u32) -> Vec<String> {
    procfs::shm_files(pid as i32)
}

/// The server's pool process and the per-run directory it was given
/// (`/tmp/morloc.XXXXXX`, from the pool's command line).
#[track_caller]
fn pool_and_run_dir(server: u32) -> (u32, PathBuf) {
    let pool_script = util::test_pool().to_string_lossy().into_owned();
    for child in children_of(server) {
        let argv = cmdline(child);
        if !argv.contains(&pool_script) {
            continue;
        }
        let dir = argv.iter().find(|a| {
            let p = Path::new(a.as_str());
            p.parent() == Some(Path::new("/tmp"))
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("morloc."))
        });
        if let Some(dir) = dir {
            return (child, PathBuf::from(dir));
        }
    }
    panic!("no pool process with a /tmp/morloc.* argument under pid {server}");
}

/// Waits until `pid` has exited.
#[track_caller]
fn assert_exits(pid: u32, what: &str) {
    wait_for(format!("{what} (pid {pid}) exited"), || exited(pid));
}

/// Everything the run created is gone: the tmpdir, every shared-memory name
/// carrying the server's pid, and the pool process.
#[track_caller]
fn assert_cleaned_up(server: u32, pool: u32, run_dir: &Path) {
    assert!(!run_dir.exists(), "{} left behind", run_dir.display());
    assert_eq!(
        shm_files(server),
        Vec::<String>::new(),
        "shared memory left behind"
    );
    assert_exits(pool, "pool");
}

#[test]
fn eof_exits_promptly_and_cleans_up() {
    let mut s = Server::shapes().ready();
    // The pool is up once a call has been answered.
    assert_eq!(s.result("addOne", r#"{"_1":1}"#), text_result("2", false));
    let server = s.proc.pid();
    let (pool, run_dir) = pool_and_run_dir(server);
    assert!(
        run_dir.join("pipe-py").exists(),
        "no socket in {}",
        run_dir.display()
    );
    assert!(
        !shm_files(server).is_empty(),
        "no shared-memory volume for pid {server}"
    );
    // Nothing is in flight, so EOF ends it (`finish` fails the test if the
    // server outlives its deadline).
    let (status, stderr) = s.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_cleaned_up(server, pool, &run_dir);
}

#[test]
fn eof_waits_for_calls_in_flight() {
    // The pool is up first, as in `final_line_without_lf_is_served_at_eof`.
    let mut s = Server::shapes().ready();
    assert_eq!(s.result("addOne", r#"{"_1":1}"#), text_result("2", false));
    s.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slowEcho","arguments":{"_1":300}}}"#);
    s.proc.close_stdin();
    assert_eq!(
        s.next(),
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{}}}"#,
            text_result("300", false)
        )
    );
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn terminating_signals_exit_128_plus_signal_and_clean_up() {
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        let mut s = Server::shapes().ready();
        // A large result comes back through shared memory: besides the
        // server's volume 0 there is now a volume of the pool's.
        let big = s.result("bigList", r#"{"_1":20000}"#);
        let list: Vec<u64> = (0..20000).collect();
        assert_eq!(big, text_result(&json!(list).to_string(), false));
        let server = s.proc.pid();
        let (pool, run_dir) = pool_and_run_dir(server);
        let shm = shm_files(server);
        assert_eq!(shm.len(), 2, "{shm:?}");
        assert!(shm.iter().any(|f| f.ends_with("_0")), "{shm:?}");
        assert!(run_dir.join("pipe-py").exists());
        // A call still running does not delay the exit: it would run past
        // the deadline of `wait`.
        s.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slowEcho","arguments":{"_1":60000}}}"#);
        s.quiet();
        s.proc.signal(signal);
        let status = s.proc.wait(TIMEOUT);
        assert_eq!(
            status.code(),
            Some(128 + signal),
            "signal {signal}: {}",
            s.proc.stderr_now()
        );
        assert_eq!(
            s.proc.stdout_rest(TIMEOUT),
            "",
            "no reply to the interrupted call"
        );
        assert_cleaned_up(server, pool, &run_dir);
    }
}

/// Adds `faultLitter` (test pool mid 95): leaves a directory with a file in
/// the pool's temporary directory, as an R session leaves its `Rtmp*`, and
/// returns its path.
fn add_litter_command(manifest: &mut Value) {
    let litter = json!({
        "name": "faultLitter", "type": "remote", "mid": 95, "pool": 0, "needed_pools": [0],
        "desc": ["Leaves files in the pool's temporary directory"],
        "args": [{"kind": "pos", "schema": "j"}],
        "return": {"schema": "s"}
    });
    match manifest.get_mut("commands").and_then(Value::as_array_mut) {
        Some(list) => list.push(litter),
        None => panic!("manifest has no commands"),
    }
}

/// The string a successful tool result carries (its text is the string's JSON).
#[track_caller]
fn result_string(result: &str) -> String {
    let result = parse(result);
    assert_eq!(result["isError"], json!(false), "{result}");
    match result["content"][0]["text"].as_str().map(parse) {
        Some(Value::String(text)) => text,
        _ => panic!("no string in {result}"),
    }
}

/// Issue #16: a server killed with SIGKILL cannot clean up, so the next
/// server removes the run directory (with what the pools left in their
/// `TMPDIR` inside it) and the shared memory of the dead run at start-up.
#[test]
fn a_killed_servers_run_is_removed_by_the_next_start() {
    let mut s = Server::shapes_with(&[], add_litter_command).ready();
    let litter = PathBuf::from(result_string(&s.result("faultLitter", r#"{"_1":0}"#)));
    let server = s.proc.pid();
    let (pool, run_dir) = pool_and_run_dir(server);
    assert!(
        litter.starts_with(run_dir.join("tmp")),
        "the pool's temporary directory {} is not inside the run directory {}",
        litter.display(),
        run_dir.display()
    );
    assert!(litter.join("litter").is_file());
    assert!(!shm_files(server).is_empty());
    s.proc.signal(libc::SIGKILL);
    s.proc.wait_keeping_stdin(TIMEOUT);
    // The pool follows (parent-death signal) and leaves its litter behind.
    assert_exits(pool, "pool");
    // Any server that starts its pools now removes the dead run. (Another
    // test's server may get there first; either way it must go.)
    let mut next = Server::shapes_with(&[], add_litter_command).ready();
    assert_eq!(
        next.result("addOne", r#"{"_1":1}"#),
        text_result("2", false)
    );
    assert!(!run_dir.exists(), "{} left behind", run_dir.display());
    assert_eq!(shm_files(server), Vec::<String>::new());
    // A pool killed on its own leaves its litter in the live run, and the
    // run's ordinary exit removes it.
    let litter = PathBuf::from(result_string(&next.result("faultLitter", r#"{"_1":0}"#)));
    let (pool, run_dir) = pool_and_run_dir(next.proc.pid());
    // SAFETY: kill(2) on a pid we just read from /proc; no memory involved.
    unsafe {
        libc::kill(pool as libc::pid_t, libc::SIGKILL);
    }
    assert_exits(pool, "pool");
    assert!(litter.join("litter").is_file());
    let (status, stderr) = next.finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(!run_dir.exists(), "{} left behind", run_dir.display());
}

// ---- the protocol stream stays clean -------------------------------------

#[test]
fn pool_output_never_reaches_the_protocol_stream() {
    let mut s = Server::shapes().ready();
    s.quiet();
    let mut lines = Vec::new();
    for x in [1, 2] {
        s.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{x},"method":"tools/call","params":{{"name":"noisyAdd","arguments":{{"_1":{x}}}}}}}"#
        ));
        lines.push(s.next());
    }
    s.proc.close_stdin();
    let status = s.proc.wait(TIMEOUT);
    assert_eq!(status.code(), Some(0));
    let rest = s.proc.stdout_rest(TIMEOUT);
    assert_eq!(rest, "");
    for line in &lines {
        let v = parse(line);
        assert_eq!(v["jsonrpc"], "2.0", "{line}");
        assert!(v.get("result").is_some(), "{line}");
    }
    assert_eq!(
        lines[0],
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{}}}"#,
            text_result("2", false)
        )
    );
    assert_eq!(
        lines[1],
        format!(
            r#"{{"jsonrpc":"2.0","id":2,"result":{}}}"#,
            text_result("3", false)
        )
    );
    let stderr = s.proc.stderr_text(TIMEOUT);
    for x in [1, 2] {
        assert!(
            stderr.contains(&format!("noisyAdd: adding one to {x}\n")),
            "{stderr}"
        );
        assert!(
            stderr.contains(&format!("noisyAdd: this line goes to stderr ({x})\n")),
            "{stderr}"
        );
    }
}

// ---- tool results ----------------------------------------------------------

#[test]
fn pure_commands_run_in_process() {
    let mut s = Server::shapes().ready();
    assert_eq!(s.result("pureAnswer", "{}"), text_result("42", false));
    assert_eq!(s.result("pureAnswer", "null"), text_result("42", false));
    assert_eq!(
        s.result("mustFail", r#"{"_1":1}"#),
        text_result("intentional failure: boom", true)
    );
    // Arguments of pure commands are validated like any other.
    assert_eq!(
        s.result("mustFail", r#"{"_1":"one"}"#),
        text_result("argument '_1': expected an integer, got \"one\"", true)
    );
}

#[test]
fn record_results_carry_structured_content() {
    let mut s = Server::shapes().ready();
    assert_eq!(
        s.result("mkResult", r#"{"_1":5}"#),
        r#"{"content":[{"type":"text","text":"{\"status\":\"ok\",\"value\":5}"}],"structuredContent":{"status":"ok","value":5},"isError":false}"#
    );
    assert_eq!(
        s.result("sumPoints", r#"{"_1":[{"x":1,"y":2},{"x":3,"y":4}]}"#),
        r#"{"content":[{"type":"text","text":"{\"x\":4,\"y\":6}"}],"structuredContent":{"x":4,"y":6},"isError":false}"#
    );
    // Non-record results have none.
    assert_eq!(
        s.result("swapPair", r#"{"_1":[1,"a"]}"#),
        text_result(r#"["a",1]"#, false)
    );
}

/// The JSON text of the test pool's `trieBuild d`: a balanced trie whose
/// inner nodes have no value and two children keyed `L` and `R`.
fn trie_json(depth: u32) -> String {
    if depth == 0 {
        return r#"{"val":0,"subs":[]}"#.to_string();
    }
    let sub = trie_json(depth - 1);
    format!(r#"{{"val":null,"subs":[["L",{sub}],["R",{sub}]]}}"#)
}

/// Issue #11: recursive records whose recursion runs through a tuple inside
/// a list (`Trie a = {val: ?a, subs: [(Str, Trie a)]}`), as results and as
/// arguments. The manifest is the real compiled program's.
#[test]
fn recursive_records_through_tuples_in_lists() {
    let manifest = util::data("programs/recursive/manifest.json");
    let mut s = Server::spawn(&manifest, &[], TempDir::new()).ready();
    let structured = |text: &str| {
        json!({"content": [{"type": "text", "text": text}], "structuredContent": parse(text), "isError": false})
            .to_string()
    };
    // The reference's answer to `trieBuild 1`.
    let one = r#"{"val":null,"subs":[["L",{"val":0,"subs":[]}],["R",{"val":0,"subs":[]}]]}"#;
    assert_eq!(trie_json(1), one);
    for depth in [0, 1, 3, 10] {
        assert_eq!(
            s.result("trieBuild", &format!(r#"{{"_1":{depth}}}"#)),
            structured(&trie_json(depth)),
            "trieBuild {depth}"
        );
    }
    assert_eq!(
        s.result("treeKVBuild", r#"{"_1":1}"#),
        structured(
            r#"{"key":"inner","value":0,"children":[["L",{"key":"leaf","value":1,"children":[]}],["R",{"key":"leaf","value":1,"children":[]}]]}"#
        )
    );
    for depth in [0, 1, 6] {
        assert_eq!(
            s.result("trieFromJson", &format!(r#"{{"_1":{}}}"#, trie_json(depth))),
            text_result(&((1u32 << (depth + 1)) - 1).to_string(), false),
            "trieFromJson of depth {depth}"
        );
    }
    assert_eq!(
        s.result(
            "treeKVFromJson",
            r#"{"_1":{"key":"a","value":1,"children":[["L",{"key":"b","value":2,"children":[]}]]}}"#
        ),
        text_result("2", false)
    );
    // A bad value deep inside is named by its path.
    assert_eq!(
        s.result(
            "trieFromJson",
            r#"{"_1":{"val":null,"subs":[["L",{"val":"x","subs":[]}]]}}"#
        ),
        text_result(
            "argument '_1.subs[0][1].val': expected an integer, got \"x\"",
            true
        )
    );
}

#[test]
fn big_integers_are_exact() {
    let mut s = Server::shapes().ready();
    for (arg, out) in [
        (
            "123456789012345678901234567890",
            "123456789012345678901234567891",
        ),
        (
            "-123456789012345678901234567890",
            "-123456789012345678901234567889",
        ),
        ("18446744073709551615", "18446744073709551616"),
        ("9223372036854775807", "9223372036854775808"),
        ("-9223372036854775809", "-9223372036854775808"),
        // Digit strings are accepted for Int, as by the reference.
        ("\"41\"", "42"),
        (
            "\"99999999999999999999999999999999\"",
            "100000000000000000000000000000000",
        ),
    ] {
        assert_eq!(
            s.result("addOne", &format!(r#"{{"_1":{arg}}}"#)),
            text_result(out, false),
            "{arg}"
        );
    }
    assert_eq!(
        s.result("mkResult", r#"{"_1":1180591620717411303424}"#),
        r#"{"content":[{"type":"text","text":"{\"status\":\"ok\",\"value\":1180591620717411303424}"}],"structuredContent":{"status":"ok","value":1180591620717411303424},"isError":false}"#
    );
    assert_eq!(
        s.result(
            "sumMany",
            r#"{"_1":[18446744073709551615,18446744073709551615,1]}"#
        ),
        text_result("36893488147419103231", false)
    );
}

#[test]
fn strings_round_trip_intact() {
    let mut s = Server::shapes().ready();
    for input in [
        "plain",
        "",
        "na\u{ef}ve \u{1f600} \u{4e2d}\u{6587}",
        "\"quoted\" 'single'",
        "C:\\temp\\new \\\\ \\n",
        "line\nbreak\ttab\rcr\u{8}\u{c}",
        "nul\0byte \u{1} \u{1f} \u{7f}",
        "\u{2028}\u{2029} / </script>",
        "{\"looks\":[\"like\",\"json\"]}",
        "null",
        "42",
    ] {
        let arguments = json!({"_1": input}).to_string();
        let expected = serde_json::to_string(&format!("Hello, {input}!")).unwrap_or_default();
        assert_eq!(
            s.result("hello", &arguments),
            text_result(&expected, false),
            "{input:?}"
        );
    }
    // Inside containers too.
    let pairs = json!([["a\"b\\c\n", 1], ["\u{0}\u{1f600}", 2]]);
    let expected = json!([["a\"b\\c\n", 2], ["\u{0}\u{1f600}", 3]]).to_string();
    assert_eq!(
        s.result("mapInc", &json!({"_1": pairs}).to_string()),
        text_result(&expected, false)
    );
}

#[test]
fn floats_use_shortest_round_trip_text() {
    let mut s = Server::shapes().ready();
    for (a, b, out) in [
        ("0.1", "3", "0.30000000000000004"),
        ("2.0", "1", "2.0"),
        ("1e15", "1", "1000000000000000.0"),
        ("1e16", "1", "1e+16"),
        ("1e-5", "1", "0.00001"),
        ("1e-7", "1", "1e-7"),
        ("-0.0", "1", "-0.0"),
        ("0.1", "0.1", "0.010000000000000002"),
        ("12345678901234567.0", "1", "1.2345678901234568e+16"),
        ("1e308", "10", "\"inf\""),
        ("-1e308", "10", "\"-inf\""),
        ("\"nan\"", "1", "\"nan\""),
    ] {
        let arguments = format!(r#"{{"_1":{a},"_2":{b}}}"#);
        assert_eq!(
            s.result("scaleReal", &arguments),
            text_result(out, false),
            "{a} * {b}"
        );
    }
}

#[test]
fn invalid_values_are_tool_errors_naming_the_argument() {
    let mut s = Server::shapes().ready();
    let cases: &[(&str, &str, &str)] = &[
        // Wrong types.
        ("addOne", r#"{"_1":41.5}"#, "argument '_1': expected an integer, got 41.5"),
        ("addOne", r#"{"_1":null}"#, "argument '_1': expected an integer, got null"),
        ("addOne", r#"{"_1":"4x"}"#, "argument '_1': expected an integer, got \"4x\""),
        ("addOne", r#"{"_1":[1]}"#, "argument '_1': expected an integer, got an array"),
        ("hello", r#"{"_1":5}"#, "argument '_1': expected a string, got 5"),
        ("sumMany", r#"{"_1":5}"#, "argument '_1': expected an array, got 5"),
        ("sumMany", r#"{"_1":[1,2,"x"]}"#, "argument '_1[2]': expected an integer, got \"x\""),
        ("scaleReal", r#"{"_1":"x","_2":1}"#, "argument '_1': expected a number, got \"x\""),
        ("configFlat", r#"{"removeCaches":"yes"}"#, "argument 'ConfigFlat.removeCaches': expected true or false, got \"yes\""),
        ("configFlat", r#"{"numThreads":true}"#, "argument 'ConfigFlat.numThreads': expected an integer, got true"),
        ("configWhole", r#"{"configwhole":5}"#, "argument 'configwhole': expected an object, got 5"),
        ("configWhole", r#"{"configwhole":{"tmpDir":7}}"#, "argument 'configwhole.tmpDir': expected a string, got 7"),
        ("maybeDouble", r#"{"_1":"x"}"#, "argument '_1': expected an integer, got \"x\""),
        // Out of range.
        ("scaleReal", r#"{"_1":1e400,"_2":1}"#, "argument '_1': 1e+400 is out of range for a 64-bit float"),
        // Tuple length and members.
        ("swapPair", r#"{"_1":[1,"a","extra"]}"#, "argument '_1': expected an array of exactly 2 items, got 3"),
        ("swapPair", r#"{"_1":[1]}"#, "argument '_1': expected an array of exactly 2 items, got 1"),
        ("swapPair", r#"{"_1":[1,2]}"#, "argument '_1[1]': expected a string, got 2"),
        ("mapInc", r#"{"_1":[["a",1],["b"]]}"#, "argument '_1[1]': expected an array of exactly 2 items, got 1"),
        // Unknown and missing record fields.
        (
            "configWhole",
            r#"{"configwhole":{"tmpDir":"/z","bogus":1}}"#,
            "argument 'configwhole': unknown field 'bogus' (expected tmpDir, numThreads, removeCaches)",
        ),
        ("sumPoints", r#"{"_1":[{"x":1,"y":2},{"x":3}]}"#, "argument '_1[1]': missing field 'y'"),
        (
            "sumPoints",
            r#"{"_1":[{"x":1,"y":2,"z":3}]}"#,
            "argument '_1[0]': unknown field 'z' (expected x, y)",
        ),
        ("sumPoints", r#"{"_1":[{"x":1,"y":true}]}"#, "argument '_1[0].y': expected an integer, got true"),
    ];
    for (tool, arguments, message) in cases {
        assert_eq!(
            s.result(tool, arguments),
            text_result(message, true),
            "{tool} {arguments}"
        );
    }
    // Bounded integer widths (the pool-less `kinds` program).
    let mut s = Server::kinds().ready();
    for (value, message) in [
        (
            "300",
            "argument 'option': 300 is out of range for an 8-bit unsigned integer (0 to 255)",
        ),
        (
            "-1",
            "argument 'option': -1 is out of range for an 8-bit unsigned integer (0 to 255)",
        ),
        ("1.5", "argument 'option': expected an integer, got 1.5"),
    ] {
        let arguments = format!(r#"{{"option":{value}}}"#);
        assert_eq!(
            s.result("options", &arguments),
            text_result(message, true),
            "{value}"
        );
    }
}

/// Adds pure commands that return their arguments, to observe how omitted
/// arguments and record fields are filled.
fn add_echo_commands(manifest: &mut Value) {
    let bound = |schema: &str, var: &str| json!({"tag": "bound", "schema": schema, "var": var});
    let lambda = |vars: &[&str], body: Value| json!({"tag": "lambda", "vars": vars, "body": body});
    let rec = "m21aj1b?s";
    let commands = [
        json!({
            "name": "echoRec", "type": "pure", "desc": ["Whole-object record next to a same-named positional"],
            "args": [
                {"kind": "pos", "schema": "j", "name": "a"},
                {"kind": "grp", "schema": rec, "type": "Rec", "group_opt": {"long": "rec"}, "entries": [
                    {"key": "a", "arg": {"kind": "opt", "long": "a", "default": "5"}},
                    {"key": "b", "arg": {"kind": "opt", "long": "b"}}
                ]}
            ],
            "return": {"schema": rec},
            "expr": lambda(&["x", "r"], bound(rec, "r"))
        }),
        json!({
            "name": "optNull", "type": "pure", "desc": [],
            "args": [{"kind": "opt", "schema": "?j", "long": "q", "default": "null"}],
            "return": {"schema": "?j"},
            "expr": lambda(&["q"], bound("?j", "q"))
        }),
        json!({
            "name": "optList", "type": "pure", "desc": [],
            "args": [{"kind": "opt", "schema": "as", "long": "tags", "default": "", "many": true}],
            "return": {"schema": "as"},
            "expr": lambda(&["t"], bound("as", "t"))
        }),
        json!({
            "name": "optBig", "type": "pure", "desc": [],
            "args": [{"kind": "opt", "schema": "j", "long": "n", "default": "123456789012345678901234567890"}],
            "return": {"schema": "j"},
            "expr": lambda(&["n"], bound("j", "n"))
        }),
    ];
    match manifest.get_mut("commands").and_then(Value::as_array_mut) {
        Some(list) => list.extend(commands),
        None => panic!("manifest has no commands"),
    }
}

#[test]
fn omitted_arguments_and_record_fields_get_their_defaults() {
    let mut s = Server::shapes_with(&[], add_echo_commands).ready();
    let record = |a: &str, b: &str| {
        let text = format!(r#"{{"a":{a},"b":{b}}}"#);
        format!(
            r#"{{"content":[{{"type":"text","text":{}}}],"structuredContent":{text},"isError":false}}"#,
            json!(text)
        )
    };
    // The omitted field `a` takes its default, not the top-level `a`; the
    // omitted optional field `b` is null.
    assert_eq!(
        s.result("echoRec", r#"{"a":1,"rec":{}}"#),
        record("5", "null")
    );
    assert_eq!(s.result("echoRec", r#"{"a":1}"#), record("5", "null"));
    assert_eq!(
        s.result("echoRec", r#"{"a":1,"rec":{"a":2,"b":"x"}}"#),
        record("2", "\"x\"")
    );
    assert_eq!(
        s.result("echoRec", r#"{"a":1,"rec":{"b":null}}"#),
        record("5", "null")
    );
    assert_eq!(
        s.result("echoRec", r#"{"a":1,"rec":{"c":3}}"#),
        text_result("argument 'rec': unknown field 'c' (expected a, b)", true)
    );
    // Typed defaults: `null` for an optional, empty for a list, big integers.
    assert_eq!(s.result("optNull", "{}"), text_result("null", false));
    assert_eq!(s.result("optNull", r#"{"q":3}"#), text_result("3", false));
    assert_eq!(s.result("optList", "{}"), text_result("[]", false));
    assert_eq!(
        s.result("optList", r#"{"tags":["x"]}"#),
        text_result(r#"["x"]"#, false)
    );
    assert_eq!(
        s.result("optBig", "{}"),
        text_result("123456789012345678901234567890", false)
    );
}

#[test]
fn concurrent_calls_and_prompt_ping() {
    // The slow call stays in its pool until the fast one has been answered.
    let dir = TempDir::new();
    let manifest = util::shapes_manifest_with(&dir, util::serve_concurrently);
    let hold = Hold::new();
    let mut s = Server(Lines::mcp(&manifest, &[], &[hold.env()], Some(dir))).ready();
    s.quiet();
    hold.hold();
    s.send(r#"{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"slowEcho","arguments":{"_1":1500}}}"#);
    s.send(r#"{"jsonrpc":"2.0","id":"fast","method":"tools/call","params":{"name":"addOne","arguments":{"_1":1}}}"#);
    assert_eq!(
        s.ask(r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#),
        r#"{"jsonrpc":"2.0","id":"p","result":{}}"#
    );
    // The fast call is answered first: it did not wait for the slow one.
    assert_eq!(
        s.next(),
        format!(
            r#"{{"jsonrpc":"2.0","id":"fast","result":{}}}"#,
            text_result("2", false)
        )
    );
    hold.release();
    assert_eq!(
        s.next(),
        format!(
            r#"{{"jsonrpc":"2.0","id":"slow","result":{}}}"#,
            text_result("1500", false)
        )
    );
}

// ---- the reference's protocol edge cases ----------------------------------

/// Cases of `protocol_edge_cases.jsonl` where this server deliberately
/// answers differently: case index, our exact output lines, and why.
const REFERENCE_DIFFERENCES: &[(usize, &[&str], &str)] = &[
    (5, &[r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"batch requests are not supported: send one JSON-RPC message per line"}}"#],
        "a batch is an invalid message since 2025-06-18; the reference stays silent and the client waits forever"),
    (8, &[r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request id null: MCP request ids must be strings or integers"}}"#],
        "MCP ids must be strings or integers"),
    (9, &[r#"{"jsonrpc":"2.0","id":4,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true},"logging":{}},"serverInfo":{"name":"main","version":"0.98.2"}}}"#],
        "we declare the logging capability, and tools.listChanged (a rebuilt program is reloaded)"),
    (12, &[r#"{"jsonrpc":"2.0","id":6,"result":{"protocolVersion":"2024-11-05","capabilities":{"tools":{"listChanged":true},"logging":{}},"serverInfo":{"name":"main","version":"0.98.2"}}}"#],
        "we declare logging and tools.listChanged, and negotiate 2024-11-05, which current SDKs still offer"),
    (19, &[r#"{"jsonrpc":"2.0","id":13,"result":{"content":[{"type":"text","text":"argument '_1': expected an integer, got 41.5"}],"isError":true}}"#],
        "our own validation message, naming the argument"),
    (20, &[r#"{"jsonrpc":"2.0","id":14,"result":{"content":[{"type":"text","text":"argument '_1': expected an integer, got null"}],"isError":true}}"#],
        "our own validation message, naming the argument"),
    (21, &[r#"{"jsonrpc":"2.0","id":15,"result":{"content":[{"type":"text","text":"123456789012345678901234567891"}],"isError":false}}"#],
        "big integers stay exact; the reference turns them into floats and fails"),
    (22, &[r#"{"jsonrpc":"2.0","id":16,"error":{"code":-32602,"message":"unknown argument '_render' (the arguments of 'addOne': _1)"}}"#],
        "the reference's message with the tool's arguments added, so an agent can correct the call"),
    (23, &[r#"{"jsonrpc":"2.0","id":17,"result":{"content":[{"type":"text","text":"argument 'ConfigFlat.removeCaches': expected true or false, got \"yes\""}],"isError":true}}"#],
        "our own validation message, naming the argument"),
    (25, &[r#"{"jsonrpc":"2.0","id":19,"result":{"content":[{"type":"text","text":"argument 'configwhole': expected an object, got 5"}],"isError":true}}"#],
        "our own validation message, naming the argument"),
    (26, &[r#"{"jsonrpc":"2.0","id":20,"result":{"content":[{"type":"text","text":"0.30000000000000004"}],"isError":false}}"#],
        "floats are printed shortest round-trip, not through %.15g"),
    (28, &[r#"{"jsonrpc":"2.0","id":22,"result":{"content":[{"type":"text","text":"\"Hello, naïve 😀 \\\"q\\\" \\n!\""}],"isError":false}}"#],
        "string arguments arrive intact; the reference re-quotes them without escaping"),
    (29, &[r#"{"jsonrpc":"2.0","id":23,"result":{"content":[{"type":"text","text":"\"Hello, nul\\u0000byte!\""}],"isError":false}}"#],
        "string arguments arrive intact, NUL included"),
    (31, &[r#"{"jsonrpc":"2.0","id":25,"result":{"content":[{"type":"text","text":"argument '_1': expected an array, got 5"}],"isError":true}}"#],
        "our own validation message, naming the argument"),
    (34, &[r#"{"jsonrpc":"2.0","id":28,"result":{"content":[{"type":"text","text":"argument '_1': expected an array of exactly 2 items, got 3"}],"isError":true}}"#],
        "our own validation message, naming the argument"),
    (35, &[r#"{"jsonrpc":"2.0","id":29,"error":{"code":-32602,"message":"unknown argument 'x' ('pureAnswer' takes no arguments)"}}"#],
        "the reference's message with a hint added, so an agent can correct the call"),
    (40, &[r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request id 34.5: MCP request ids must be strings or integers"}}"#],
        "MCP ids must be strings or integers"),
    (43, &[r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request id {\"a\":1}: MCP request ids must be strings or integers"}}"#],
        "MCP ids must be strings or integers"),
];

/// Replays the reference's recorded session in order, in one server. Each
/// case waits for its expected number of lines; lines within a case are
/// compared as a set, because a ping sent behind a tool call is answered
/// first here (calls run concurrently). After each case a ping proves that
/// nothing more was sent.
#[test]
fn reference_protocol_edge_cases() {
    let text = util::read(&util::data("reference/protocol_edge_cases.jsonl"));
    let cases: Vec<Value> = text.lines().map(parse).collect();
    let mut s = Server::shapes();
    let mut used = Vec::new();
    for (index, case) in cases.iter().enumerate() {
        let Some(input) = case["in"].as_str() else {
            panic!("case {index}: no input")
        };
        if input == "<stdin EOF>" {
            assert_eq!(index, cases.len() - 1, "EOF must be the last case");
            s.proc.close_stdin();
            let status = s.proc.wait(TIMEOUT);
            assert_eq!(
                status.code(),
                case["exit_code"].as_i64().map(|c| c as i32),
                "case {index}"
            );
            assert_eq!(s.proc.stdout_rest(TIMEOUT), "", "case {index}");
            assert_eq!(
                s.proc.stderr_text(TIMEOUT),
                case["stderr"].as_str().unwrap_or("?"),
                "case {index}"
            );
            continue;
        }
        let reference: Vec<String> = case["out"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let mut expected = match REFERENCE_DIFFERENCES.iter().find(|(i, _, _)| *i == index) {
            Some((_, ours, _)) => {
                assert_ne!(
                    reference, *ours,
                    "case {index} is listed as a difference but matches the reference"
                );
                used.push(index);
                ours.iter().map(|l| l.to_string()).collect()
            }
            None => reference,
        };
        s.proc.send_bytes(input.as_bytes());
        let mut got: Vec<String> = (0..expected.len()).map(|_| s.next()).collect();
        got.sort();
        expected.sort();
        assert_eq!(got, expected, "case {index}: {input}");
        s.quiet();
    }
    assert_eq!(
        used.len(),
        REFERENCE_DIFFERENCES.len(),
        "unused difference entries"
    );
}

// ---- logging, cancellation, time limits, crashes ---------------------------

#[test]
fn logging_forwards_pool_output_as_notifications() {
    let mut s = Server::shapes().ready();
    assert_eq!(
        s.ask(r#"{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"info"}}"#),
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
    );
    s.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"noisyAdd","arguments":{"_1":5}}}"#);
    let mut got: Vec<String> = (0..3).map(|_| s.next()).collect();
    got.sort();
    let note = |data: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"info","logger":"pool:py","data":"{data}"}}}}"#
        )
    };
    let mut expected = vec![
        format!(
            r#"{{"jsonrpc":"2.0","id":2,"result":{}}}"#,
            text_result("6", false)
        ),
        note("noisyAdd: adding one to 5"),
        note("noisyAdd: this line goes to stderr (5)"),
    ];
    expected.sort();
    assert_eq!(got, expected);
    // Above the level of pool output: nothing is forwarded.
    assert_eq!(
        s.ask(
            r#"{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"warning"}}"#
        ),
        r#"{"jsonrpc":"2.0","id":3,"result":{}}"#
    );
    assert_eq!(s.result("noisyAdd", r#"{"_1":6}"#), text_result("7", false));
    // Its output has reached the server (and would have been forwarded by
    // now).
    wait_for("the pool's output on the server's stderr", || {
        s.proc.stderr_now().contains("noisyAdd: adding one to 6\n")
    });
    s.quiet();
    let (status, stderr) = s.finish();
    assert_eq!(status.code(), Some(0));
    assert!(stderr.contains("noisyAdd: adding one to 6\n"), "{stderr}");
}

#[test]
fn a_cancelled_call_is_never_answered() {
    // One pool process, and the call held in it until the server has taken
    // the cancellation: the next call can only run on that process once the
    // cancelled one has ended and the server has read its answer.
    let trace = CallTrace::new();
    let hold = Hold::new();
    let mut s = Server(Lines::shapes_held(
        &["--pool-replicas", "py=1"],
        &trace,
        &hold,
    ))
    .ready();
    s.quiet();
    hold.hold();
    s.send(r#"{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"slowEcho","arguments":{"_1":1}}}"#);
    trace.wait_started("slowEcho", 1);
    s.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow","reason":"test"}}"#);
    assert_eq!(
        s.ask(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
    );
    hold.release();
    // The pool still serves, and the next line is that call's answer.
    assert_eq!(s.result("addOne", r#"{"_1":1}"#), text_result("2", false));
    trace.assert_second_waited_for_first();
    s.quiet();
    let (status, _) = s.finish();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn a_call_over_the_time_limit_fails_and_the_pool_recovers() {
    let mut s = Server::shapes_with(&["--call-timeout", "1"], |_| {}).ready();
    let started = Stopwatch::start();
    assert_eq!(
        s.result("slowEcho", r#"{"_1":5000}"#),
        text_result("timed out after 1 s waiting for pool 'py'", true)
    );
    started.assert_at_least(Duration::from_millis(900), "timed out");
    started.assert_within_budget(Duration::from_secs(1), "the 1 s call timeout");
    assert_eq!(s.result("addOne", r#"{"_1":1}"#), text_result("2", false));
}

/// Adds `faultDie`, which makes the test pool exit (status 3) mid-call.
fn add_fault_command(manifest: &mut Value) {
    let fault = json!({
        "name": "faultDie", "type": "remote", "mid": 92, "pool": 0, "needed_pools": [0],
        "desc": ["Kills the pool mid-call"],
        "args": [{"kind": "pos", "schema": "j"}],
        "return": {"schema": "j"}
    });
    match manifest.get_mut("commands").and_then(Value::as_array_mut) {
        Some(list) => list.push(fault),
        None => panic!("manifest has no commands"),
    }
}

#[test]
fn a_crashed_pool_is_restarted() {
    let mut s = Server::shapes_with(&[], add_fault_command).ready();
    assert_eq!(s.result("addOne", r#"{"_1":1}"#), text_result("2", false));
    let (old_pool, _) = pool_and_run_dir(s.proc.pid());
    let reply = parse(&s.call("faultDie", r#"{"_1":1}"#));
    assert_eq!(reply["result"]["isError"], json!(true), "{reply}");
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.starts_with("pool 'py' "), "{text}");
    // Calls racing the restart may fail; within a short while they succeed.
    wait_for("the pool recovered", || {
        s.result("addOne", r#"{"_1":2}"#) == text_result("3", false)
    });
    assert_exits(old_pool, "crashed pool");
    let (new_pool, _) = pool_and_run_dir(s.proc.pid());
    assert_ne!(old_pool, new_pool);
}

#[test]
fn manifests_of_other_versions_are_served_with_a_warning() {
    let mut s = Server::shapes_with(&[], |m| m["build"]["morloc_version"] = json!("0.99.0"));
    let reply = s.ask(INITIALIZE);
    assert_eq!(reply, INITIALIZE_RESULT.replace("0.98.2", "0.99.0"));
    s.send(INITIALIZED);
    assert_eq!(s.result("addOne", r#"{"_1":1}"#), text_result("2", false));
    let (status, stderr) = s.finish();
    assert_eq!(status.code(), Some(0));
    assert!(
        stderr.contains(
            "manifest built with morloc 0.99.0, this server implements 0.98.2; serving it anyway"
        ),
        "{stderr}"
    );
}

#[test]
fn long_calls_with_a_progress_token_get_progress_notifications() {
    // The call is held in its pool until the second heartbeat has come, so
    // the heartbeats come before the result however slow the machine (or
    // the pool's start).
    let dir = TempDir::new();
    let manifest = util::shapes_manifest(&dir);
    let hold = Hold::new();
    let mut s = Server(Lines::mcp(&manifest, &[], &[hold.env()], Some(dir))).ready();
    hold.hold();
    s.send(
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slowEcho","arguments":{"_1":1},"_meta":{"progressToken":"tok"}}}"#,
    );
    let message = |n: &Value| n["params"]["message"].as_str().unwrap_or("").to_string();
    // One when the call starts, heartbeats after 1 s and 2 s, all before the
    // result, with strictly increasing progress.
    let mut notes = Vec::new();
    let result = loop {
        let line = parse(&s.next());
        if line.get("method").is_none() {
            break line;
        }
        if message(&line) == "still running after 2 s" {
            hold.release();
        }
        notes.push(line);
    };
    assert_eq!(
        result,
        parse(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{}}}"#,
            text_result("1", false)
        ))
    );
    let mut last = -1.0;
    for note in &notes {
        assert_eq!(note["method"], "notifications/progress", "{note}");
        assert_eq!(note["params"]["progressToken"], "tok", "{note}");
        let p = note["params"]["progress"].as_f64().unwrap_or(-1.0);
        assert!(p > last, "progress must increase: {notes:?}");
        last = p;
    }
    let messages: Vec<String> = notes.iter().map(message).collect();
    // The first says whether the pool was still starting.
    assert!(
        ["running in pool 'py'", "waiting for pool 'py' to start"].contains(&messages[0].as_str()),
        "{notes:?}"
    );
    assert_eq!(
        messages[1..3],
        ["still running after 1 s", "still running after 2 s"],
        "{notes:?}"
    );
    // Then one every 5 s (the result normally comes first).
    let mut after = 2;
    for later in &messages[3..] {
        let secs: u64 = later
            .strip_prefix("still running after ")
            .and_then(|m| m.strip_suffix(" s"))
            .and_then(|m| m.parse().ok())
            .unwrap_or_else(|| panic!("not a heartbeat: {later:?} in {notes:?}"));
        assert!(secs >= after + 5, "heartbeats 5 s apart: {notes:?}");
        after = secs;
    }
}

#[test]
fn the_call_after_a_pool_crash_succeeds() {
    for server in 0..4 {
        let mut s = Server::shapes_with(&[], add_fault_command).ready();
        // Three rounds stay below the five-starts crash-loop guard.
        for round in 0..3 {
            assert_eq!(s.result("addOne", r#"{"_1":1}"#), text_result("2", false));
            let reply = parse(&s.call("faultDie", r#"{"_1":1}"#));
            assert_eq!(reply["result"]["isError"], json!(true), "{reply}");
            assert_eq!(
                s.result("addOne", r#"{"_1":2}"#),
                text_result("3", false),
                "server {server}, round {round}, the crash was reported as: {}",
                reply["result"]["content"][0]["text"]
            );
        }
    }
}

#[test]
fn lazy_pools_start_on_first_use() {
    let mut s = Server::shapes_with(&["--lazy-pools"], |_| {}).ready();
    // The handshake and a ping are answered: a server that starts its pools
    // up front has forked them by now.
    s.quiet();
    let pool_script = util::test_pool().to_string_lossy().into_owned();
    let pools = children_of(s.proc.pid())
        .into_iter()
        .filter(|c| cmdline(*c).iter().any(|a| a.contains(&pool_script)))
        .count();
    assert_eq!(pools, 0, "a pool was started before any call");
    assert_eq!(s.result("addOne", r#"{"_1":1}"#), text_result("2", false));
}

/// The server's own fd 1 is its stderr, and the protocol goes out on a
/// private close-on-exec descriptor: a stray print from inside the process
/// (ours, a library's, an inherited one) can never reach the client.
#[test]
fn fd_1_of_the_server_is_its_stderr_and_the_protocol_fd_is_private() {
    let mut s = Server::shapes().ready();
    s.quiet();
    let pid = s.proc.pid();
    let link = |fd: &str| fs::read_link(format!("/proc/{pid}/fd/{fd}")).ok();
    assert!(link("2").is_some());
    assert_eq!(link("1"), link("2"), "fd 1 must point where fd 2 does");
    // The pipe the client reads: held by this test process too, and not
    // the server's stdin or stderr. Exactly one server fd holds it, and it
    // is close-on-exec (pools do not inherit it).
    let ours: Vec<_> = fs::read_dir("/proc/self/fd")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| fs::read_link(e.path()).ok())
        .collect();
    let (stdin_pipe, stderr_pipe) = (link("0"), link("2"));
    let stdout_pipe = fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| fs::read_link(e.path()).ok())
        .find(|l| {
            ours.contains(l) && Some(l) != stdin_pipe.as_ref() && Some(l) != stderr_pipe.as_ref()
        });
    assert!(stdout_pipe.is_some(), "no protocol pipe found");
    let mut holders = Vec::new();
    for entry in fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if fs::read_link(entry.path()).ok() == stdout_pipe {
            holders.push(name);
        }
    }
    assert_eq!(holders.len(), 1, "protocol fds: {holders:?}");
    let fdinfo =
        fs::read_to_string(format!("/proc/{pid}/fdinfo/{}", holders[0])).unwrap_or_default();
    let flags = fdinfo
        .lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .map(|f| u32::from_str_radix(f.trim(), 8).unwrap_or(0))
        .unwrap_or(0);
    assert_ne!(
        flags & 0o2000000,
        0,
        "protocol fd is not close-on-exec: {fdinfo}"
    );
}
