//! End-to-end tests of serving a program over stdio with real pool processes.
//!
//! The pool is the Python test pool (`tests/pool/testpool.py`), which speaks
//! the pool wire protocol and implements the shapes program plus fault
//! functions (mids 90..94). Each test builds its own manifest in a temporary
//! directory from `tests/data/shapes/manifest.json`, pointing the pool at the
//! test pool directly or through a small shell wrapper that sets the pool's
//! environment knobs (a manifest cannot set a pool's environment).
//!
//! The server is driven as a client would drive it: newline-delimited
//! JSON-RPC on its stdin and stdout. Every stdout line must parse as a
//! JSON-RPC message and every read has a deadline. Timing claims are checked
//! as order and cause (a ping is answered before the calls it overlaps, the
//! test pool's call trace shows calls running at once, a call that would run
//! past the test's deadline fails because its pool died), never against a
//! wall-clock bound. Process, socket and shared-memory clean-up is checked
//! through `/proc`, the run's tmpdir and `/dev/shm`.

use std::time::Duration;

use serde_json::{json, Value as Json};

use crate::util::{procfs, CallTrace, Hold, Stopwatch, TempDir, TIMEOUT};

pub(crate) use crate::support::stdio::*;

// ---- results of every remote tool ------------------------------------------

#[test]
fn every_remote_tool_gives_the_right_result() {
    let mut s = Server::owning(Program::shapes(), &[]);
    let cases: &[(&str, Json, &str)] = &[
        ("addOne", json!({"_1": 41}), "42"),
        ("sumMany", json!({"_1": [1, 2, 3, 4]}), "10"),
        ("scale", json!({"_1": 5}), "10"),
        ("scale", json!({"_1": 5, "factor": 3}), "15"),
        ("maybeDouble", json!({}), "null"),
        ("maybeDouble", json!({"_1": null}), "null"),
        ("maybeDouble", json!({"_1": 21}), "42"),
        ("hello", json!({"_1": "wörld"}), "\"Hello, wörld!\""),
        ("configFlat", json!({}), "\"/tmp:1:False\""),
        (
            "configFlat",
            json!({"numThreads": 4, "removeCaches": true}),
            "\"/tmp:4:True\"",
        ),
        ("configWhole", json!({}), "\"/tmp:1:False\""),
        (
            "configWhole",
            json!({"configwhole": {"tmpDir": "/x", "numThreads": 2, "removeCaches": true}}),
            "\"/x:2:True\"",
        ),
        (
            "mkResult",
            json!({"_1": 3}),
            "{\"status\":\"ok\",\"value\":3}",
        ),
        ("noisyAdd", json!({"_1": 1}), "2"),
        ("scaleReal", json!({"_1": 1.5, "_2": 2.5}), "3.75"),
        (
            "sumPoints",
            json!({"_1": [{"x": 1, "y": 2}, {"x": 3, "y": 4}, {"x": -10, "y": 0}]}),
            "{\"x\":-6,\"y\":6}",
        ),
        ("swapPair", json!({"_1": [7, "seven"]}), "[\"seven\",7]"),
        (
            "mapInc",
            json!({"_1": [["a", 1], ["b", 2]]}),
            "[[\"a\",2],[\"b\",3]]",
        ),
        ("bigText", json!({"_1": 3}), "\"xxx\""),
        ("slowEcho", json!({"_1": 5}), "5"),
    ];
    for (tool, args, expected) in cases {
        let text = s.call_ok(tool, args.clone());
        assert_eq!(text, *expected, "{tool} {args}");
    }

    // Record results also come back structured.
    let result = s.call_result("sumPoints", json!({"_1": [{"x": 1, "y": 2}]}));
    assert_eq!(result["structuredContent"], json!({"x": 1, "y": 2}));

    // Large results (well past the pools' default 64 KiB inline threshold).
    let text = s.call_ok("bigList", json!({"_1": 10000}));
    let list: Vec<i64> = serde_json::from_str(&text).expect("bigList returns a JSON list");
    assert_eq!(list.len(), 10000);
    assert_eq!(list.last(), Some(&9999));
    assert!(
        list.iter().enumerate().all(|(i, &v)| v == i as i64),
        "bigList content is wrong"
    );

    let text = s.call_ok("bigText", json!({"_1": 100000}));
    let string: String = serde_json::from_str(&text).expect("bigText returns a JSON string");
    assert_eq!(string.len(), 100000);
    assert!(string.bytes().all(|b| b == b'x'));

    // A pool-side exception: its message verbatim, as an isError result.
    let result = s.call_result("pyFail", json!({"_1": 3}));
    assert_eq!(
        error_text(&result),
        "python-side failure: boom 3\n  at pyFail [py] (mid=18, shapes.loc:261:12)"
    );

    // noisyAdd printed to its stdout and stderr: both end up on the server's
    // stderr, never on the protocol stream (every line above was parsed).
    s.wait_stderr("noisyAdd: adding one to 1");
    s.wait_stderr("noisyAdd: this line goes to stderr (1)");

    // The session keeps working afterwards.
    assert_eq!(s.call_ok("addOne", json!({"_1": -1})), "0");
    assert_eq!(s.finish(), 0);
    assert!(
        s.stash.iter().all(|m| m.get("method").is_some()),
        "unexpected responses: {:?}",
        s.stash
    );
}

// ---- concurrency -----------------------------------------------------------

#[test]
fn concurrent_slow_calls_overlap_and_ping_stays_fast() {
    let trace = CallTrace::new();
    let hold = Hold::new();
    let mut s = Server::owning_env(Program::concurrent(), &[], &[trace.env(), hold.env()]);
    // Warm the pool: it has started and answered once.
    assert_eq!(s.call_ok("addOne", json!({"_1": 1})), "2");

    // Held in the pool until released, so none can end before the last has
    // started, however busy the machine.
    hold.hold();
    let ids: Vec<u64> = (0..8)
        .map(|_| s.call("slowEcho", json!({"_1": 100})))
        .collect();
    trace.wait_started("slowEcho", 8);
    // While they run, a ping is answered at once: before any of them.
    let ping = s.request("ping", json!({}));
    assert_eq!(s.response(ping, TIMEOUT)["result"], json!({}));
    for id in &ids {
        s.assert_unanswered(*id, "the ping waited for the calls");
    }
    hold.release();
    for id in &ids {
        let result = s.result_within(*id, TIMEOUT);
        assert_eq!(text_of(&result), "100", "slowEcho {id}: {result}");
    }
    // The pool ran all eight at once: the last started before the first ended.
    assert_eq!(trace.assert_all_overlap("slowEcho"), 8);
    assert_eq!(s.finish(), 0);
}

#[test]
fn concurrent_big_lists_all_come_back_intact() {
    let mut s = Server::owning(Program::shapes(), &[]);
    let sizes: Vec<usize> = (5000..5016).collect();
    let ids: Vec<(u64, usize)> = sizes
        .iter()
        .map(|&n| (s.call("bigList", json!({"_1": n})), n))
        .collect();
    for (id, n) in ids {
        let result = s.result_within(id, TIMEOUT);
        assert_eq!(result["isError"], json!(false), "bigList {n}: {result}");
        let list: Vec<i64> = serde_json::from_str(&text_of(&result)).expect("a JSON list");
        assert_eq!(
            list.len(),
            n,
            "bigList {n} came back with {} elements",
            list.len()
        );
        assert!(
            list.iter().enumerate().all(|(i, &v)| v == i as i64),
            "bigList {n} came back with wrong elements"
        );
    }
    assert_eq!(s.finish(), 0);
}

// ---- pool crashes and faults -----------------------------------------------

#[test]
fn killed_pool_fails_its_call_fast_and_is_restarted() {
    let trace = CallTrace::new();
    let mut s = Server::owning_env(Program::shapes(), &[], &[trace.env()]);
    assert_eq!(s.call_ok("addOne", json!({"_1": 1})), "2");
    let first = pool_of(&s, None);

    // The call would run for a minute, far past the test's deadline: an
    // answer within the deadline can only come from noticing the kill.
    let id = s.call("slowEcho", json!({"_1": 60000}));
    trace.wait_started("slowEcho", 1);
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe {
        libc::kill(first.pid, libc::SIGKILL);
    }
    let result = s.result_within(id, TIMEOUT);
    let text = error_text(&result);
    assert!(
        text.contains("pool 'py'"),
        "error does not name the pool: {text}"
    );

    // The pool is restarted and serves the next call. (Waiting for the new
    // pool process first: a call sent in the instant between the connection
    // closing and the server reaping the pool can still fail today.)
    let second = pool_of(&s, Some(first.pid));
    assert_ne!(second.pid, first.pid);
    assert_eq!(s.call_ok("addOne", json!({"_1": 41})), "42");

    let server_pid = s.pid();
    assert_eq!(s.finish(), 0);
    assert_no_leftovers(server_pid, &[first.pgid, second.pgid], &first.tmpdir);
}

/// Runs one fault command on a fresh server and returns its error text; then
/// checks that the next call works (on a new pool process if `restarts`).
#[track_caller]
fn fault(tool: &str, restarts: bool) -> String {
    let mut s = Server::owning(Program::shapes(), &[]);
    assert_eq!(s.call_ok("addOne", json!({"_1": 1})), "2");
    let before = pool_of(&s, None);
    let result = s.call_result(tool, json!({"_1": 1}));
    let text = error_text(&result);
    let after = pool_of(&s, restarts.then_some(before.pid));
    assert_eq!(
        after.pid != before.pid,
        restarts,
        "pool process after {tool}"
    );
    assert_eq!(
        s.call_ok("addOne", json!({"_1": 2})),
        "3",
        "the call after {tool}"
    );
    let server_pid = s.pid();
    assert_eq!(s.finish(), 0);
    assert_no_leftovers(server_pid, &[before.pgid, after.pgid], &before.tmpdir);
    text
}

#[test]
fn bad_magic_reply_is_a_malformed_reply() {
    let text = fault("badMagic", false);
    assert!(text.contains("malformed reply"), "{text}");
    assert!(text.contains("pool 'py'"), "{text}");
}

#[test]
fn close_without_reply_is_an_error() {
    let text = fault("closeEarly", false);
    assert!(
        text.contains("pool 'py'") && text.contains("closed the connection"),
        "{text}"
    );
}

#[test]
fn truncated_reply_is_an_error() {
    let text = fault("truncated", false);
    assert!(
        text.contains("pool 'py'") && text.contains("closed the connection"),
        "{text}"
    );
}

#[test]
fn pool_exit_mid_call_is_reported_and_recovered() {
    let text = fault("poolExit", true);
    assert!(text.contains("pool 'py'"), "{text}");
}

#[test]
fn hung_call_times_out_and_the_server_keeps_serving() {
    let mut s = Server::owning(Program::shapes(), &["--call-timeout", "1"]);
    // The deadline also covers waiting for the pool to start, which can take
    // a second on a loaded machine: let it start first.
    let hung_pool = pool_of(&s, None);
    wait_listening(&hung_pool);
    assert_eq!(s.call_ok("addOne", json!({"_1": 1})), "2");
    let sent = Stopwatch::start();
    let id = s.call("hang", json!({"_1": 1}));
    let result = s.result_within(id, TIMEOUT);
    let text = error_text(&result);
    assert!(text.contains("timed out"), "{text}");
    // The call hangs for ever, so only the timeout ends it: not before it
    // is due, and not (far) after.
    sent.assert_at_least(Duration::from_millis(950), "timed out");
    sent.assert_within_budget(Duration::from_secs(1), "the 1 s call timeout");

    // The stuck pool was replaced; the next call works.
    let ping = s.request("ping", json!({}));
    assert_eq!(s.response(ping, TIMEOUT)["result"], json!({}));
    let fresh = pool_of(&s, Some(hung_pool.pid));
    assert_ne!(fresh.pid, hung_pool.pid);
    wait_listening(&fresh);
    assert_eq!(s.call_ok("addOne", json!({"_1": 2})), "3");

    let server_pid = s.pid();
    assert_eq!(s.finish(), 0);
    assert_no_leftovers(server_pid, &[hung_pool.pgid, fresh.pgid], &hung_pool.tmpdir);
}

#[test]
fn a_call_queued_behind_a_hung_one_runs_on_the_restarted_pool() {
    // One process, so the second call waits for the first. When the first
    // times out, the stuck process is restarted: the waiting call must go to
    // the new process, not be sent to the stuck one and fail with it.
    let trace = CallTrace::new();
    let mut s = Server::owning_env(
        Program::shapes(),
        &["--call-timeout", "1", "--pool-replicas", "py=1"],
        &[trace.env()],
    );
    let hung_pool = pool_of(&s, None);
    wait_listening(&hung_pool);
    assert_eq!(s.call_ok("addOne", json!({"_1": 1})), "2");
    let hung = s.call("hang", json!({"_1": 1}));
    trace.wait_started("faultHang", 1);
    let queued = s.call("addOne", json!({"_1": 41}));
    let text = error_text(&s.result_within(hung, TIMEOUT));
    assert!(text.contains("timed out"), "{text}");
    let result = s.result_within(queued, TIMEOUT);
    assert_eq!(result["isError"], json!(false), "addOne 41: {result}");
    assert_eq!(text_of(&result), "42");
    assert_eq!(s.finish(), 0);
}

// ---- start-up ---------------------------------------------------------------

#[test]
fn slow_starting_pool_serves_calls_made_before_it_is_ready() {
    let program = Program::wrapped("export TESTPOOL_STARTUP_DELAY_MS=1500");
    let mut s = Server::owning(program, &[]);
    let started = Stopwatch::start();
    let id = s.call("addOne", json!({"_1": 9}));
    // The session answers while the call waits for the pool: the ping's
    // answer comes first.
    let ping = s.request("ping", json!({}));
    assert_eq!(s.response(ping, TIMEOUT)["result"], json!({}));
    s.assert_unanswered(id, "the ping waited for the pool");
    let result = s.result_within(id, TIMEOUT);
    assert_eq!(text_of(&result), "10", "{result}");
    started.assert_at_least(
        Duration::from_millis(1300),
        "answered before the pool could be ready",
    );
    assert_eq!(s.finish(), 0);
}

#[test]
fn pool_that_never_listens_leaves_the_session_responsive() {
    // The start-up deadline (60 s) is not configurable, so this checks that
    // the session stays responsive while a call waits, and that cancelling
    // the waiting call lets the server finish at EOF without answering it.
    let program = Program::wrapped("export TESTPOOL_NEVER_LISTEN=1");
    let mut s = Server::owning(program, &[]);
    let waiting = s.call("addOne", json!({"_1": 1}));
    let pool = pool_of(&s, None);

    // Answered while the call waits (it never gets an answer).
    let ping = s.request("ping", json!({}));
    assert_eq!(s.response(ping, TIMEOUT)["result"], json!({}));
    let list = s.request("tools/list", json!({}));
    let tools = s.response(list, TIMEOUT);
    s.assert_unanswered(waiting, "the waiting call");
    assert!(
        tools["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "{tools}"
    );

    s.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": waiting, "reason": "test"}}),
    );
    assert!(s.stash.is_empty(), "unexpected messages: {:?}", s.stash);
    // With the call gone, EOF ends the server at once (it would otherwise
    // wait for the call), and the cancelled request is never answered.
    // (The pool never listens, so a server that still waited for it would
    // miss the deadline of `stdout_rest` and `finish`.)
    s.proc.close_stdin();
    let rest = s.proc.stdout_rest(TIMEOUT);
    let server_pid = s.pid();
    assert_eq!(s.finish(), 0);
    assert!(rest.is_empty(), "output after the cancellation: {rest}");
    assert_no_leftovers(server_pid, &[pool.pgid], &pool.tmpdir);
}

#[test]
fn pool_that_dies_at_startup_reports_its_stderr() {
    let line = "pool-wrapper: libfrobnicate.so.3: cannot open shared object file";
    let program = Program::wrapped(&format!("echo '{line}' >&2\nexit 1"));
    let mut s = Server::owning(program, &[]);
    let result = s.call_result("addOne", json!({"_1": 1}));
    let text = error_text(&result);
    eprintln!("start-up failure: {text}");
    assert!(text.contains("pool 'py'"), "{text}");
    assert!(
        text.contains(line),
        "the pool's stderr line is missing: {text}"
    );
    // The session itself is fine.
    let ping = s.request("ping", json!({}));
    assert_eq!(s.response(ping, TIMEOUT)["result"], json!({}));
    let server_pid = s.pid();
    assert_eq!(s.finish(), 0);
    let shm = procfs::shm_files(server_pid);
    assert!(shm.is_empty(), "shared memory left behind: {shm:?}");
}

// ---- shutdown and clean-up ---------------------------------------------------

/// Starts a server, runs calls (one with a large result), records its pool,
/// checks its tmpdir and shared memory exist, then ends it with `how` and
/// checks that nothing is left behind.
#[track_caller]
fn ends_clean(how: Option<i32>, expected_code: i32) {
    let mut s = Server::owning(Program::shapes(), &[]);
    assert_eq!(s.call_ok("addOne", json!({"_1": 1})), "2");
    let text = s.call_ok("bigList", json!({"_1": 20000}));
    assert!(text.ends_with(",19999]"));
    let pool = pool_of(&s, None);
    let server_pid = s.pid();
    assert!(
        pool.tmpdir.is_dir(),
        "tmpdir {} missing while running",
        pool.tmpdir.display()
    );
    assert!(
        pool.basename.starts_with(&format!("morloc-{server_pid}-")),
        "{pool:?}"
    );
    assert!(
        !procfs::shm_files(server_pid).is_empty(),
        "no shared memory while running"
    );
    let code = match how {
        None => s.finish(),
        Some(signal) => {
            s.proc.signal(signal);
            s.exit_code_after_signal()
        }
    };
    assert_eq!(
        code,
        expected_code,
        "exit status; stderr:\n{}",
        s.proc.stderr_now()
    );
    assert_no_leftovers(server_pid, &[pool.pgid], &pool.tmpdir);
}

#[test]
fn nothing_is_left_after_eof() {
    ends_clean(None, 0);
}

#[test]
fn nothing_is_left_after_sigterm() {
    ends_clean(Some(libc::SIGTERM), 143);
}

#[test]
fn nothing_is_left_after_sigint() {
    ends_clean(Some(libc::SIGINT), 130);
}

#[test]
fn nothing_is_left_after_sigterm_during_a_call() {
    let trace = CallTrace::new();
    let mut s = Server::owning_env(Program::shapes(), &[], &[trace.env()]);
    assert_eq!(s.call_ok("addOne", json!({"_1": 1})), "2");
    let pool = pool_of(&s, None);
    let server_pid = s.pid();
    // Longer than the exit deadline below: a server that waited for the
    // call would miss it.
    let _id = s.call("slowEcho", json!({"_1": 60000}));
    trace.wait_started("slowEcho", 1);
    s.proc.signal(libc::SIGTERM);
    assert_eq!(s.exit_code_after_signal(), 143);
    assert_no_leftovers(server_pid, &[pool.pgid], &pool.tmpdir);
}

// ---- progress and resources ---------------------------------------------------

#[test]
fn long_calls_with_a_progress_token_get_heartbeats() {
    let mut s = Server::owning(Program::shapes(), &[]);
    let id = s.request(
        "tools/call",
        json!({"name": "slowEcho", "arguments": {"_1": 2500},
               "_meta": {"progressToken": "beat-1"}}),
    );
    let result = s.result_within(id, TIMEOUT);
    assert_eq!(text_of(&result), "2500");
    // Everything that came before the result was stashed, in order.
    let beats: Vec<&Json> = s
        .stash
        .iter()
        .filter(|m| m["method"] == json!("notifications/progress"))
        .collect();
    assert!(
        !beats.is_empty(),
        "no progress notification before the result: {:?}",
        s.stash
    );
    for beat in beats {
        assert_eq!(beat["params"]["progressToken"], json!("beat-1"), "{beat}");
        assert!(beat["params"]["progress"].is_number(), "{beat}");
    }
    assert_eq!(s.finish(), 0);
}

/// Open descriptors of the server once the turn that answered the last call
/// is over: a `ping` answered afterwards means the connections of finished
/// calls are closed and the pools' spare sockets made.
fn settled_fd_count(s: &mut Server) -> usize {
    let id = s.request("ping", json!({}));
    s.response(id, TIMEOUT);
    procfs::fd_count(s.pid())
}

#[test]
fn open_descriptors_do_not_grow_with_calls() {
    let mut s = Server::owning(Program::shapes(), &[]);
    for i in 0..10 {
        assert_eq!(s.call_ok("addOne", json!({"_1": i})), (i + 1).to_string());
    }
    let after_10 = settled_fd_count(&mut s);
    for i in 10..300 {
        assert_eq!(s.call_ok("addOne", json!({"_1": i})), (i + 1).to_string());
    }
    let after_300 = settled_fd_count(&mut s);
    assert_eq!(after_10, after_300, "open fds after 10 calls vs after 300");
    assert_eq!(s.finish(), 0);
}

// ---- strict variants that fail today (kept out of the commit) ----------------

#[test]
fn strict_pool_exit_mid_call_names_how_it_died() {
    for round in 0..10 {
        let mut s = Server::owning(Program::shapes(), &[]);
        assert_eq!(s.call_ok("addOne", json!({"_1": 1})), "2");
        let text = error_text(&s.call_result("poolExit", json!({"_1": 1})));
        assert!(
            text.contains("exited with status 3"),
            "round {round}: {text}"
        );
        assert_eq!(s.finish(), 0);
    }
}

#[test]
fn strict_call_right_after_a_pool_crash_succeeds() {
    for round in 0..10 {
        let trace = CallTrace::new();
        let mut s = Server::owning_env(Program::shapes(), &[], &[trace.env()]);
        assert_eq!(s.call_ok("addOne", json!({"_1": 1})), "2");
        let pool = pool_of(&s, None);
        let id = s.call("slowEcho", json!({"_1": 2000}));
        trace.wait_started("slowEcho", 1);
        // SAFETY: kill(2) has no memory-safety preconditions.
        unsafe {
            libc::kill(pool.pid, libc::SIGKILL);
        }
        let _ = error_text(&s.result_within(id, TIMEOUT));
        let result = s.call_result("addOne", json!({"_1": 41}));
        assert_eq!(result["isError"], json!(false), "round {round}: {result}");
        assert_eq!(s.finish(), 0);
    }
}

/// A command that calls into a second pool (`needed_pools`) is sent only once
/// that pool answers pings too: pools call each other directly, so sending
/// early would fail inside the first pool.
#[test]
fn a_call_waits_for_every_pool_its_command_needs() {
    let dir = TempDir::new();
    let slow = dir.write_executable(
        "slow-pool.sh",
        format!(
            "#!/bin/sh\nexport TESTPOOL_STARTUP_DELAY_MS=1500\nexec python3 '{}' \"$@\"\n",
            testpool().display()
        ),
    );
    let base = crate::util::read(&crate::util::data("shapes/manifest.json"));
    let mut manifest: Json = serde_json::from_str(&base).expect("shapes manifest parses");
    manifest["pools"][0]["exec"] = json!(["python3", testpool().to_string_lossy()]);
    manifest["pools"]
        .as_array_mut()
        .expect("pools")
        .push(json!({"lang": "cpp", "exec": [slow.to_string_lossy()], "socket": "pipe-cpp"}));
    for command in manifest["commands"].as_array_mut().expect("commands") {
        if command["name"] == "addOne" {
            command["needed_pools"] = json!([0, 1]);
        }
    }
    let program = Program {
        manifest: dir.write("manifest.json", manifest.to_string()),
        _dir: dir,
    };
    let mut s = Server::start(&program, &[]);
    let started = Stopwatch::start();
    // Needs only the fast pool: answered at once.
    assert_eq!(text_of(&s.call_result("pureAnswer", json!({}))), "42");
    let result = s.call_result("addOne", json!({"_1": 1}));
    assert_eq!(text_of(&result), "2", "{result}");
    started.assert_at_least(
        Duration::from_millis(1300),
        "sent before the second pool could be ready",
    );
    assert_eq!(s.finish(), 0);
}

// ---- stopping -----------------------------------------------------------------

/// Issue 31: stopping a pool never holds up the reactor. The test pool
/// ignores SIGTERM (`TESTPOOL_IGNORE_TERM`) and the grace before SIGKILL is
/// longer than any test, so the pool stuck in a timed-out call stays in its
/// stop until the test kills it. Meanwhile another client is answered, and
/// the restarted pool starts only after the old one is gone: a call made
/// during the stop waits, and runs once the test has killed the old process.
#[test]
fn a_pool_being_stopped_holds_up_no_other_client() {
    use crate::support::http::{self as web, tool_call};

    let dir = TempDir::new();
    let terms = dir.join("terms");
    let program = Program::shapes();
    let mut command = crate::util::cmd([
        "mcp".as_ref(),
        program.manifest.as_os_str(),
        "--http-port".as_ref(),
        "0".as_ref(),
        "--plain-tool-names".as_ref(),
        "--call-timeout".as_ref(),
        "1".as_ref(),
        "--pool-stop-grace".as_ref(),
        "3600".as_ref(),
        "--pool-replicas".as_ref(),
        "py=1".as_ref(),
    ]);
    command.env("TESTPOOL_IGNORE_TERM", &terms);
    let server = web::Server::spawn(TempDir::new(), &mut command);
    let (mut first, sid) = server.session();
    // The pools start on the first call, and the call deadline covers the
    // start: on a loaded machine it may pass before the pool is ready.
    let warm = (0..10).any(|n| {
        let reply = first.post(Some(&sid), &tool_call(10 + n, "addOne", json!({"_1": 1})));
        reply.json()["result"]["content"][0]["text"] == "2"
    });
    assert!(
        warm,
        "addOne never succeeded:\n{}",
        server.proc.stderr_now()
    );

    let hung = first.post(Some(&sid), &tool_call(30, "hang", json!({"_1": 1})));
    assert!(hung.text().contains("timed out"), "{}", hung.text());
    // The stuck pool got SIGTERM, which it ignores: it is being stopped.
    let mut old_pool = 0;
    crate::util::wait_for("the stuck pool got SIGTERM", || {
        let noted = std::fs::read_to_string(&terms).unwrap_or_default();
        let pid = noted.lines().next().and_then(|l| l.strip_prefix("term "));
        old_pool = pid.and_then(|p| p.parse().ok()).unwrap_or(0);
        old_pool > 0
    });

    // A call made now waits for the restart, which waits for the stop.
    let (mut waiting, waiting_sid) = server.session();
    waiting.send(&web::post_request(
        server.addr,
        Some(&waiting_sid),
        &serde_json::to_vec(&tool_call(40, "addOne", json!({"_1": 41}))).unwrap(),
        &[],
    ));
    // Another client is answered while the stop goes on.
    let mut other = server.connect();
    let health = other.roundtrip(&web::simple_request("GET", "/health", server.addr, ""));
    // Not ready: the pool waits for its old process to go.
    assert_eq!(health.status, 503, "{}", health.text());
    assert_eq!(
        health.json()["pools"][0]["state"],
        "starting",
        "{}",
        health.text()
    );
    let (mut third, third_sid) = server.session();
    let list = third.post(Some(&third_sid), &web::request(50, "tools/list"));
    assert!(list.json()["result"]["tools"].is_array(), "{}", list.text());
    assert!(
        stat_of(old_pool).is_some(),
        "the stuck pool is still being stopped"
    );
    // The call waits for the pool's restart.
    waiting.expect_silent(Duration::from_millis(100));

    // Once the old process is gone, the slot starts again and the waiting
    // call runs on the new process.
    // SAFETY: a plain signal to a pid this test read from the pool.
    unsafe {
        libc::kill(old_pool, libc::SIGKILL);
    }
    let reply = waiting.read_response();
    assert_eq!(
        reply.json()["result"]["content"][0]["text"],
        "42",
        "{}",
        reply.text()
    );
    let noted = std::fs::read_to_string(&terms).unwrap_or_default();
    assert_eq!(
        noted.lines().count(),
        1,
        "only the stuck pool was stopped: {noted}"
    );
}
