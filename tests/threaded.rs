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
use crate::util::{max_concurrency, processes, CallTrace, TIMEOUT};

/// Shapes served by the test pool in cpp mode, its pool named `cpp` in the
/// manifest; `lines` (shell) set more of the pool's environment.
fn threaded(lines: &str) -> Program {
    Program::wrapped(&format!("export TESTPOOL_WORKERS=cpp\n{lines}"))
        .edited(|m| m["pools"][0]["lang"] = json!("cpp"))
}

/// A server of `program` whose pools trace their calls.
fn traced(program: Program, extra: &[&str]) -> (Server, CallTrace) {
    let trace = CallTrace::new();
    let server = Server::owning_env(program, extra, &[trace.env()]);
    (server, trace)
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

/// Rounds of `n` concurrent 200 ms calls until one ran on `n` processes, so
/// that `n` processes are up and ready.
#[track_caller]
fn warm(s: &mut Server, trace: &CallTrace, n: usize) {
    for _ in 0..20 {
        let mark = trace.mark();
        all_exact(s, &sleepers(n, 200));
        if processes(&trace.since(mark)).len() == n {
            return;
        }
    }
    let calls = trace.calls();
    panic!(
        "{n} concurrent calls never ran on {n} processes: {} calls on processes {:?}",
        calls.len(),
        processes(&calls)
    );
}

/// The case: 8 concurrent sleeping calls with an `Int` result (1 s
/// each, so that a loaded machine still starts them all in time). Each
/// may come back in shared memory, so each holds its process; with the
/// replicas up (by default a C++ pool may run max(CPUs, 8) processes) they
/// all run at once, on 8 processes.
#[test]
fn eight_sleeping_int_calls_overlap_on_a_threaded_pool() {
    let (mut s, trace) = traced(threaded(""), &[]);
    warm(&mut s, &trace, 8);
    let mark = trace.mark();
    all_exact(&mut s, &sleepers(8, 1000));
    let calls = trace.since(mark);
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
    let (mut s, trace) = traced(threaded(""), &["--pool-replicas", "cpp=1"]);
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
    let (mut s, trace) = traced(program, &[]);
    all_exact(&mut s, &sleepers(6, 1000));
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
    let (mut s, trace) = traced(threaded(""), &["--pool-replicas", "cpp=8"]);
    warm(&mut s, &trace, 8);
    let mark = trace.mark();
    let mut calls = sleepers(8, 400);
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
    all_exact(&mut s, &calls);
    let ran = trace.since(mark);
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
    let (mut s, trace) = traced(
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
