//! Calls on a multi-threaded (C++) pool (issue 21): they overlap, and every
//! result comes back exact.
//!
//! The test pool serves like a Morloc 0.98.2 C++ pool here
//! (`TESTPOOL_WORKERS=cpp`): worker threads take connections from a shared
//! stack, and each thread frees the shared-memory result it made last when
//! it starts its next call. Which thread takes a connection is the pool's
//! choice, so a call whose result may come back in shared memory (`Int` is
//! schema `j`, unbounded) holds its process until the result is copied out,
//! and such calls overlap across processes: the server starts replicas of
//! C++ pools too. What ran where and when comes from the pool's call trace;
//! no test compares a wall-clock time against a bound.

use serde_json::json;

use crate::results::{assert_exact, list_text};
use crate::util::stdio::{Program, Server};
use crate::util::{max_concurrency, poll_until, processes, CallTrace, Hold, TracedCall, TIMEOUT};

/// Shapes served by the test pool in cpp mode, its pool named `cpp` in the
/// manifest; `lines` (shell) set more of the pool's environment.
fn threaded(lines: &str) -> Program {
    Program::wrapped(&format!("export TESTPOOL_WORKERS=cpp\n{lines}"))
        .edited(|m| m["pools"][0]["lang"] = json!("cpp"))
}

/// A server of `program` whose pools trace their calls and hold `slowEcho`
/// calls while told to.
fn traced(program: Program, extra: &[&str]) -> (Server, CallTrace, Hold) {
    let trace = CallTrace::new();
    let hold = Hold::new();
    let server = Server::owning_env(program, extra, &[trace.env(), hold.env()]);
    (server, trace, hold)
}

/// What [`held`] waits for: its description, and the test on the calls
/// started so far.
type Ready<'a> = (&'a str, &'a dyn Fn(&[TracedCall]) -> bool);

/// Sends `calls` at once with `slowEcho` held in the pool, waits until the
/// calls started since then satisfy `ready` (which says what it waits for),
/// lets them return, and checks each answer byte for byte. Returns the
/// calls that ran, with their ends.
#[track_caller]
fn held(
    s: &mut Server,
    trace: &CallTrace,
    hold: &Hold,
    calls: &[(&str, usize, String)],
    ready: Ready<'_>,
) -> Vec<TracedCall> {
    hold.hold();
    let mark = trace.mark();
    let ids: Vec<u64> = calls
        .iter()
        .map(|(tool, n, _)| s.call(tool, json!({"_1": n})))
        .collect();
    let seen = poll_until(|| ready.1(&trace.since(mark)).then_some(()));
    hold.release();
    if seen.is_none() {
        panic!("{}: not seen in {:?}", ready.0, trace.since(mark));
    }
    for (id, (tool, n, text)) in ids.into_iter().zip(calls) {
        assert_exact(&s.result_within(id, TIMEOUT), text, &format!("{tool} {n}"));
    }
    trace.since(mark)
}

/// `n` held `slowEcho` calls running at once on `n` processes: the server
/// started them (each call may come back in shared memory, so holds its
/// process).
#[track_caller]
fn on_processes(s: &mut Server, trace: &CallTrace, hold: &Hold, n: usize) -> Vec<TracedCall> {
    let ready = |calls: &[TracedCall]| processes(calls).len() >= n;
    held(
        s,
        trace,
        hold,
        &sleepers(n, 0),
        ("calls on their own processes", &ready),
    )
}

/// Sends every call at once, then checks each answer byte for byte.
#[track_caller]
fn all_exact(s: &mut Server, calls: &[(&str, usize, String)]) {
    let ids: Vec<u64> = calls
        .iter()
        .map(|(tool, n, _)| s.call(tool, json!({"_1": n})))
        .collect();
    for (id, (tool, n, text)) in ids.into_iter().zip(calls) {
        assert_exact(&s.result_within(id, TIMEOUT), text, &format!("{tool} {n}"));
    }
}

/// `n` concurrent `slowEcho ms` calls, answered exactly.
fn sleepers(n: usize, ms: usize) -> Vec<(&'static str, usize, String)> {
    (0..n).map(|_| ("slowEcho", ms, ms.to_string())).collect()
}

/// The case: 8 concurrent sleeping calls with an `Int` result (held
/// in the pool until all have started, so a loaded machine cannot make one
/// end before the last starts). Each may come back in shared memory, so
/// each holds its process; with the replicas up (by default a C++ pool may
/// run max(CPUs, 8) processes) they all run at once, on 8 processes.
#[test]
fn eight_sleeping_int_calls_overlap_on_a_threaded_pool() {
    let (mut s, trace, hold) = traced(threaded(""), &[]);
    // Eight calls held in the pool are all running at once, each on a
    // process of its own.
    let calls = on_processes(&mut s, &trace, &hold, 8);
    assert_eq!(calls.len(), 8, "{calls:?}");
    assert_eq!(
        max_concurrency(&calls),
        8,
        "the calls did not all overlap: {calls:?}"
    );
    assert_eq!(processes(&calls).len(), 8, "{calls:?}");
    assert_eq!(s.finish(), 0);
}

/// With one process allowed, the same calls hold the process one after
/// another: the lease is what keeps their results safe.
#[test]
fn one_threaded_process_runs_calls_with_shared_memory_results_one_at_a_time() {
    let (mut s, trace, _hold) = traced(threaded(""), &["--pool-replicas", "cpp=1"]);
    all_exact(&mut s, &sleepers(4, 200));
    let calls = trace.calls_of("slowEcho");
    assert_eq!(calls.len(), 4, "{calls:?}");
    assert_eq!(processes(&calls).len(), 1, "{calls:?}");
    assert_eq!(max_concurrency(&calls), 1, "calls overlapped: {calls:?}");
    assert_eq!(s.finish(), 0);
}

/// Results that cannot come back in shared memory (`no_shm`: large ones go
/// to files) need no process to themselves: one threaded process runs them
/// all at once, and no replica starts.
#[test]
fn calls_without_shared_memory_results_share_one_threaded_process() {
    let program = threaded("").edited(|m| m["no_shm"] = json!(true));
    let (mut s, trace, hold) = traced(program, &[]);
    let ready = |calls: &[TracedCall]| calls.len() >= 6;
    held(
        &mut s,
        &trace,
        &hold,
        &sleepers(6, 0),
        ("6 calls running", &ready),
    );
    let calls = trace.calls_of("slowEcho");
    assert_eq!(calls.len(), 6, "{calls:?}");
    assert_eq!(processes(&calls), vec![calls[0].pid], "{calls:?}");
    assert_eq!(
        max_concurrency(&calls),
        6,
        "calls did not overlap: {calls:?}"
    );
    assert_eq!(s.finish(), 0);
}

/// Sleeping calls and other results (lists and text in shared memory, small
/// `Int`s and records inline) all at once, on the primary and its replicas: every
/// byte exact, and the sleeping calls overlap.
#[test]
fn concurrent_mixed_results_on_a_threaded_pool_are_exact() {
    let (mut s, trace, hold) = traced(threaded(""), &["--pool-replicas", "cpp=8"]);
    on_processes(&mut s, &trace, &hold, 8);
    let mut calls = sleepers(8, 0);
    for i in 0..24usize {
        calls.push(match i % 4 {
            0 => ("bigList", 5_000 + i * 997, list_text(5_000 + i * 997)),
            1 => (
                "bigText",
                70_000 + i * 4_001,
                format!("\"{}\"", "x".repeat(70_000 + i * 4_001)),
            ),
            2 => ("addOne", i, (i + 1).to_string()),
            _ => (
                "mkResult",
                i,
                format!("{{\"status\":\"ok\",\"value\":{i}}}"),
            ),
        });
    }
    // Sleepers spread among the large results.
    calls.sort_by_key(|(tool, n, _)| (*tool != "slowEcho", n % 5));
    // The sleepers are held until two of them run at once, on two
    // processes, while the others are answered.
    let ready = |calls: &[TracedCall]| {
        let sleeping: Vec<TracedCall> = calls
            .iter()
            .filter(|c| c.function == "slowEcho")
            .cloned()
            .collect();
        processes(&sleeping).len() >= 2
    };
    let ran = held(
        &mut s,
        &trace,
        &hold,
        &calls,
        ("2 sleepers on 2 processes", &ready),
    );
    let sleeping: Vec<_> = ran
        .iter()
        .filter(|c| c.function == "slowEcho")
        .cloned()
        .collect();
    assert_eq!(sleeping.len(), 8, "{ran:?}");
    assert!(
        max_concurrency(&sleeping) >= 2 && processes(&ran).len() >= 2,
        "the calls did not overlap: {ran:?}"
    );
    assert_eq!(s.finish(), 0);
}

/// The worst interleaving on a threaded pool (`TESTPOOL_RACE_MS`): a worker
/// sends each shared-memory reply but its last byte, takes the next
/// connection to its process if one comes within 100 ms and starts that
/// call, which frees the reply's block, and only then completes the reply.
/// A server that connected another call to the process before copying the
/// result out would read zeroed memory.
#[test]
fn the_worst_interleaving_on_a_threaded_pool_cannot_corrupt_a_result() {
    let (mut s, trace, _hold) = traced(
        threaded("export TESTPOOL_RACE_MS=100"),
        &["--pool-replicas", "cpp=4"],
    );
    let mut calls = Vec::new();
    for i in 0..8usize {
        calls.push(("bigList", 5_000 + i, list_text(5_000 + i)));
        calls.push(("addOne", i, (i + 1).to_string()));
        calls.push(("slowEcho", 50 + i, (50 + i).to_string()));
    }
    all_exact(&mut s, &calls);
    all_exact(&mut s, &calls);
    assert_eq!(trace.calls_of("bigList").len(), 16);
    assert_eq!(s.finish(), 0);
}
