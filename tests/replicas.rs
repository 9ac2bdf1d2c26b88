//! End-to-end tests of pool replicas: extra processes of a single-threaded
//! pool that the server starts when calls wait (`--pool-replicas`).
//!
//! The test pool runs one call at a time by default, like a real Python
//! pool, and frees its last shared-memory result as soon as it is handed its
//! next connection, so these tests see what a real pool would: calls
//! overlap only across processes, and results stay exact with shared memory
//! in play. What ran where and when comes from the test pool's call trace
//! (`TESTPOOL_TRACE`): calls that overlap in it ran at once, on the processes
//! it names; no test compares a wall-clock time against a bound.

use serde_json::json;

use crate::pools::{
    all_pids, assert_no_leftovers, cmdline, error_text, stat_of, text_of, Program, Server,
};
use crate::util::{
    max_concurrency, pace, poll_until, processes, wait_until, CallTrace, Hold, TracedCall, TIMEOUT,
};

/// One test pool process of a server: pid, process group, socket path.
#[derive(Clone, Debug, PartialEq, Eq)]
struct PoolProc {
    pid: i32,
    pgid: i32,
    socket: String,
    /// Its shared-memory basename (argv after the tmpdir).
    basename: String,
}

impl PoolProc {
    fn is_replica(&self) -> bool {
        self.socket
            .rsplit_once(".r")
            .is_some_and(|(_, n)| n.parse::<u32>().is_ok())
    }
}

/// The live test pool processes that are children of `server`.
fn pool_procs(server: &Server) -> Vec<PoolProc> {
    let mut procs: Vec<PoolProc> = all_pids()
        .into_iter()
        .filter_map(|pid| {
            let (ppid, pgid) = stat_of(pid)?;
            if ppid != server.pid() {
                return None;
            }
            let args = cmdline(pid);
            let at = args.iter().position(|a| a.ends_with("testpool.py"))?;
            let socket = args.get(at + 1)?.clone();
            let basename = args.get(at + 3)?.clone();
            Some(PoolProc {
                pid,
                pgid,
                socket,
                basename,
            })
        })
        .collect();
    procs.sort_by_key(|p| p.pid);
    procs
}

/// The tmpdir of the server's run (the pools' second argument).
fn a_replica(procs: &[PoolProc]) -> PoolProc {
    procs
        .iter()
        .find(|p| p.is_replica())
        .cloned()
        .unwrap_or_else(|| panic!("no replica among {procs:?}"))
}

fn sigkill(pid: i32) {
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}

fn tmpdir_of(server: &Server) -> std::path::PathBuf {
    crate::pools::pool_of(server, None).tmpdir
}

/// A server's call trace, and the hold on its `slowEcho` calls.
struct Traced {
    trace: CallTrace,
    hold: Hold,
}

impl std::ops::Deref for Traced {
    type Target = CallTrace;

    fn deref(&self) -> &CallTrace {
        &self.trace
    }
}

/// A server of `program` whose pools trace their calls and hold `slowEcho`
/// calls while told to.
fn traced(program: Program, extra: &[&str]) -> (Server, Traced) {
    let trace = CallTrace::new();
    let hold = Hold::new();
    let server = Server::owning_env(program, extra, &[trace.env(), hold.env()]);
    (server, Traced { trace, hold })
}

/// Sends `n` `slowEcho` calls held in their pools, and waits until each
/// has started on a process of its own (a process runs one call at a time:
/// the server had to start `n` processes), then lets them return. Fails if
/// they never ran on `n` processes.
fn overlap(s: &mut Server, trace: &Traced, n: usize) -> Vec<TracedCall> {
    trace.hold.hold();
    let mark = trace.mark();
    let ids: Vec<u64> = (0..n)
        .map(|i| s.call("slowEcho", json!({"_1": i})))
        .collect();
    let started = poll_until(|| {
        let calls = trace.since(mark);
        (processes(&calls).len() >= n).then_some(calls)
    });
    trace.hold.release();
    let Some(mut calls) = started else {
        panic!(
            "{n} calls held in the pool never ran on {n} processes: {:?}",
            trace.calls()
        );
    };
    for (i, id) in ids.into_iter().enumerate() {
        let result = s.result_within(id, TIMEOUT);
        assert_eq!(text_of(&result), i.to_string(), "slowEcho {i}: {result}");
    }
    // Their ends, now that they returned.
    let ended = trace.since(mark);
    for call in &mut calls {
        call.end = ended
            .iter()
            .find(|c| c.pid == call.pid && c.start == call.start)
            .and_then(|c| c.end);
    }
    calls
}

/// Sends `n` concurrent `slowEcho ms` calls and waits for all of them;
/// returns the error texts of failed calls.
fn round(s: &mut Server, n: usize, ms: u64) -> Vec<String> {
    let ids: Vec<u64> = (0..n)
        .map(|_| s.call("slowEcho", json!({"_1": ms})))
        .collect();
    let mut errors = Vec::new();
    for id in ids {
        let result = s.result_within(id, TIMEOUT);
        if result["isError"] == json!(true) {
            errors.push(text_of(&result));
        } else {
            assert_eq!(text_of(&result), ms.to_string(), "slowEcho {ms}: {result}");
        }
    }
    errors
}

/// Makes the pool run `n` processes (see [`overlap`]).
fn warm(s: &mut Server, trace: &Traced, n: usize) {
    overlap(s, trace, n);
}

/// Waits until the server has exactly `n` pool processes and each accepts
/// connections on its socket (the pool takes the empty connection as a
/// client that went away), so that no call held next waits in one process
/// while another starts.
fn wait_listening(s: &Server, n: usize) {
    let tmpdir = tmpdir_of(s);
    wait_until(format!("{n} pool processes listening"), || {
        let procs = pool_procs(s);
        let up = procs.len() == n
            && procs
                .iter()
                .all(|p| std::os::unix::net::UnixStream::connect(tmpdir.join(&p.socket)).is_ok());
        up.then_some(())
    });
}

#[test]
fn sleeping_calls_overlap_on_replicas_and_queue_on_one_process() {
    let (mut s, trace) = traced(Program::shapes(), &[]);
    // Eight calls held in the pool all run at once, on processes of their
    // own: the server started replicas for the calls that waited.
    let calls = overlap(&mut s, &trace, 8);
    assert_eq!(max_concurrency(&calls), 8, "{calls:?}");
    let procs = pool_procs(&s);
    assert!((2..=8).contains(&procs.len()), "pool processes: {procs:?}");
    let primaries: Vec<&PoolProc> = procs.iter().filter(|p| !p.is_replica()).collect();
    assert_eq!(primaries.len(), 1, "{procs:?}");
    // Each replica allocates in volumes of its own, named under the run's.
    for replica in procs.iter().filter(|p| p.is_replica()) {
        let (_, number) = replica.socket.rsplit_once(".r").expect("a replica socket");
        assert_eq!(
            replica.basename,
            format!("{}_r{number}", primaries[0].basename),
            "{procs:?}"
        );
    }
    let tmpdir = tmpdir_of(&s);
    let (server_pid, groups) = (s.pid(), procs.iter().map(|p| p.pgid).collect::<Vec<_>>());
    assert_eq!(s.finish(), 0);
    assert_no_leftovers(server_pid, &groups, &tmpdir);

    let (mut one, trace) = traced(Program::shapes(), &["--pool-replicas", "py=1"]);
    let errors = round(&mut one, 8, 300);
    assert!(errors.is_empty(), "{errors:?}");
    // One single-threaded process: the calls ran one after another.
    let calls = trace.calls_of("slowEcho");
    assert_eq!(calls.len(), 8, "{calls:?}");
    assert_eq!(processes(&calls).len(), 1, "{calls:?}");
    assert_eq!(max_concurrency(&calls), 1, "calls overlapped: {calls:?}");
    assert_eq!(pool_procs(&one).len(), 1);
    assert_eq!(one.finish(), 0);
}

#[test]
fn a_replica_crash_fails_only_its_call_and_the_replica_comes_back() {
    let (mut s, trace) = traced(Program::shapes(), &["--pool-replicas", "py=2"]);
    warm(&mut s, &trace, 2);
    let before = pool_procs(&s);
    let replica = a_replica(&before);
    let mark = trace.mark();
    trace.hold.hold();
    let ids = [
        s.call("slowEcho", json!({"_1": 3000})),
        s.call("slowEcho", json!({"_1": 3000})),
    ];
    trace.wait_started_since(mark, "slowEcho", 2);
    sigkill(replica.pid);
    trace.hold.release();
    let results: Vec<_> = ids.iter().map(|&id| s.result_within(id, TIMEOUT)).collect();
    let failed: Vec<String> = results
        .iter()
        .filter(|r| r["isError"] == json!(true))
        .map(error_text)
        .collect();
    assert_eq!(
        failed.len(),
        1,
        "one call ran on the killed replica: {results:?}"
    );
    assert!(failed[0].contains("pool 'py#1'"), "{}", failed[0]);
    assert!(
        results
            .iter()
            .any(|r| r["isError"] == json!(false) && text_of(r) == "3000"),
        "the primary's call survived: {results:?}"
    );
    // The replica is restarted on its socket, and both processes serve.
    let restarted = wait_until("the replica restarted on its socket", || {
        pool_procs(&s)
            .into_iter()
            .find(|p| p.socket == replica.socket && p.pid != replica.pid)
    });
    warm(&mut s, &trace, 2);
    let tmpdir = tmpdir_of(&s);
    let mut groups: Vec<i32> = before.iter().map(|p| p.pgid).collect();
    groups.push(restarted.pgid);
    let server_pid = s.pid();
    assert_eq!(s.finish(), 0);
    assert_no_leftovers(server_pid, &groups, &tmpdir);
}

#[test]
fn a_call_waiting_when_a_replica_dies_never_goes_to_the_dead_process() {
    // Both processes busy, one call waiting: the replica's death frees its
    // lease while the dead process is being recovered. The waiting call
    // must wait for a live process, not be handed the dead one (a real
    // Python pool's workers still hold its socket for a moment, so the call
    // was sent and then failed with "Connection reset by peer").
    let (mut s, trace) = traced(Program::shapes(), &["--pool-replicas", "py=2"]);
    warm(&mut s, &trace, 2);
    let before = pool_procs(&s);
    let replica = a_replica(&before);
    let mark = trace.mark();
    trace.hold.hold();
    let slow = [
        s.call("slowEcho", json!({"_1": 2500})),
        s.call("slowEcho", json!({"_1": 2501})),
    ];
    trace.wait_started_since(mark, "slowEcho", 2);
    let waiting = s.call("addOne", json!({"_1": 41}));
    // Requests are read in order: once this ping is answered, the server
    // holds the addOne, waiting for a process.
    let ping = s.request("ping", json!({}));
    s.response(ping, TIMEOUT);
    s.assert_unanswered(waiting, "addOne with both processes busy");
    sigkill(replica.pid);
    trace.hold.release();
    let result = s.result_within(waiting, TIMEOUT);
    assert_eq!(result["isError"], json!(false), "addOne 41: {result}");
    assert_eq!(text_of(&result), "42");
    let results: Vec<_> = slow
        .iter()
        .map(|&id| s.result_within(id, TIMEOUT))
        .collect();
    let failed: Vec<String> = results
        .iter()
        .filter(|r| r["isError"] == json!(true))
        .map(error_text)
        .collect();
    assert_eq!(failed.len(), 1, "{results:?}");
    assert!(
        failed[0].contains("pool 'py#1' died (killed by signal 9 (SIGKILL))"),
        "{}",
        failed[0]
    );
    let stderr = s.stderr_now();
    assert!(
        !stderr.contains("refused a connection"),
        "a call went to the dead replica:\n{stderr}"
    );
    assert_eq!(s.finish(), 0);
}

#[test]
fn replicas_keep_serving_while_the_primary_restarts() {
    let (mut s, trace) = traced(Program::shapes(), &["--pool-replicas", "py=3"]);
    warm(&mut s, &trace, 3);
    let before = pool_procs(&s);
    let primary = before
        .iter()
        .find(|p| !p.is_replica())
        .cloned()
        .unwrap_or_else(|| panic!("no primary among {before:?}"));
    assert_eq!(before.len(), 3, "{before:?}");
    let mark = trace.mark();
    trace.hold.hold();
    let ids: Vec<u64> = (0..3)
        .map(|_| s.call("slowEcho", json!({"_1": 2000})))
        .collect();
    trace.wait_started_since(mark, "slowEcho", 3);
    sigkill(primary.pid);
    trace.hold.release();
    // Calls made while the primary is down still succeed.
    let during: Vec<u64> = (0..4).map(|i| s.call("addOne", json!({"_1": i}))).collect();
    let results: Vec<_> = ids.iter().map(|&id| s.result_within(id, TIMEOUT)).collect();
    let failed: Vec<String> = results
        .iter()
        .filter(|r| r["isError"] == json!(true))
        .map(error_text)
        .collect();
    assert_eq!(failed.len(), 1, "one call ran on the primary: {results:?}");
    assert!(failed[0].contains("pool 'py' "), "{}", failed[0]);
    for (i, id) in during.into_iter().enumerate() {
        let result = s.result_within(id, TIMEOUT);
        assert_eq!(result["isError"], json!(false), "addOne {i}: {result}");
        assert_eq!(text_of(&result), (i + 1).to_string());
    }
    let after = pool_procs(&s);
    let mut groups: Vec<i32> = before.iter().chain(&after).map(|p| p.pgid).collect();
    groups.dedup();
    let tmpdir = tmpdir_of(&s);
    let server_pid = s.pid();
    assert_eq!(s.finish(), 0);
    assert_no_leftovers(server_pid, &groups, &tmpdir);
}

/// `[0,1,...,n-1]` as the server renders it.
fn list_text(n: usize) -> String {
    let items: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    format!("[{}]", items.join(","))
}

#[test]
fn mixed_large_and_small_results_stay_exact_across_replicas() {
    // The worst interleaving: each large reply's last byte waits until the
    // next connection to that process has freed its block.
    let program = Program::wrapped("export TESTPOOL_RACE_MS=30");
    let mut s = Server::owning(program, &["--pool-replicas", "py=4"]);
    for round in 0..3 {
        let mut expected = Vec::new();
        for i in 0..12usize {
            let n = 5_000 + 7 * i + round;
            let id = s.call("bigList", json!({"_1": n}));
            expected.push((id, list_text(n), format!("bigList {n}")));
            let id = s.call("addOne", json!({"_1": i}));
            expected.push((id, (i + 1).to_string(), format!("addOne {i}")));
        }
        for (id, text, what) in expected {
            let result = s.result_within(id, TIMEOUT);
            assert_eq!(result["isError"], json!(false), "{what}: {result}");
            assert!(
                text_of(&result) == text,
                "{what} came back wrong (round {round})"
            );
        }
    }
    assert!(pool_procs(&s).len() > 1, "no replica ran");
    assert_eq!(s.finish(), 0);
}

#[test]
fn idle_replicas_stop_and_output_names_the_replica() {
    let (mut s, trace) = traced(
        Program::shapes(),
        &["--pool-replicas", "py=2", "--replica-idle", "0.3"],
    );
    let id = s.request("logging/setLevel", json!({"level": "info"}));
    s.response(id, TIMEOUT);
    // A noisy call while the only process is held in a slow one: it runs
    // on a replica, whose lines are labelled on stderr and in the log
    // notifications.
    trace.hold.hold();
    let mark = trace.mark();
    let slow = s.call("slowEcho", json!({"_1": 1}));
    trace.wait_started_since(mark, "slowEcho", 1);
    let noisy = s.call("noisyAdd", json!({"_1": 7}));
    let result = s.result_within(noisy, TIMEOUT);
    trace.hold.release();
    assert_eq!(text_of(&result), "8", "{result}");
    assert_eq!(text_of(&s.result_within(slow, TIMEOUT)), "1");
    s.wait_stderr("[py#1] noisyAdd: ");
    wait_until("the idle replica stopped", || {
        let procs = pool_procs(&s);
        (procs.len() == 1 && !procs[0].is_replica()).then_some(())
    });
    // The pool still serves, and scales up again when calls wait.
    warm(&mut s, &trace, 2);
    assert_eq!(s.finish(), 0);
}

#[test]
fn a_call_that_times_out_on_a_replica_restarts_only_that_process() {
    // Both processes start with the first call (`--pool-min`) and are
    // listening before any call is held, so no held call counts its
    // 3-s deadline while a process starts.
    let (mut s, trace) = traced(
        Program::shapes(),
        &[
            "--pool-replicas",
            "py=2",
            "--pool-min",
            "py=2",
            "--call-timeout",
            "3",
        ],
    );
    assert_eq!(s.call_ok("addOne", json!({"_1": 1})), "2");
    wait_listening(&s, 2);
    warm(&mut s, &trace, 2);
    let before = pool_procs(&s);
    assert_eq!(before.len(), 2, "{before:?}");
    // The slow call, held, takes the primary (least busy, first), the hung
    // one the replica; the slow one returns once the hung one has started.
    let mark = trace.mark();
    trace.hold.hold();
    let slow = s.call("slowEcho", json!({"_1": 0}));
    trace.wait_started_since(mark, "slowEcho", 1);
    let hung = s.call("hang", json!({"_1": 1}));
    trace.wait_started_since(mark, "faultHang", 1);
    trace.hold.release();
    let text = error_text(&s.result_within(hung, TIMEOUT));
    assert!(
        text.contains("timed out") && text.contains("py#1"),
        "{text}"
    );
    let result = s.result_within(slow, TIMEOUT);
    assert_eq!(text_of(&result), "0", "{result}");
    let after = pool_procs(&s);
    let primary = |procs: &[PoolProc]| procs.iter().find(|p| !p.is_replica()).map(|p| p.pid);
    assert_eq!(
        primary(&before),
        primary(&after),
        "the primary was restarted"
    );
    // The replica came back (as `--pool-min` wants), and serves.
    wait_listening(&s, 2);
    warm(&mut s, &trace, 2);
    assert_eq!(s.finish(), 0);
}

/// `notifications/cancelled` for request `id`.
fn cancel(s: &mut Server, id: u64) {
    s.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": id, "reason": "test"}}),
    );
}

#[test]
fn a_cancelled_call_keeps_its_process_busy_so_the_next_call_runs_elsewhere() {
    // A pool does not stop a job when its connection closes: the process
    // stays busy until the job ends. The next call must not be handed to
    // it (it would wait behind work nobody waits for) but to a replica.
    let (mut s, trace) = traced(Program::shapes(), &["--pool-replicas", "py=2"]);
    assert_eq!(s.call_ok("addOne", json!({"_1": 1})), "2");
    // The job is held in its pool until the next call has run.
    trace.hold.hold();
    let slow = s.call("slowEcho", json!({"_1": 0}));
    let cancelled = trace.wait_started("slowEcho", 1).remove(0);
    cancel(&mut s, slow);
    assert_eq!(s.call_ok("addOne", json!({"_1": 10})), "11");
    // The next call ran on another process while the cancelled job still
    // ran, instead of queueing behind it.
    let adds = trace.calls_of("addOne");
    let next = adds.last().expect("addOne traced");
    assert_ne!(
        next.pid,
        cancelled.pid,
        "ran behind the cancelled job: {:?}",
        trace.calls()
    );
    assert_eq!(trace.calls_of("slowEcho")[0].end, None, "the job was held");
    trace.hold.release();
    wait_until("the cancelled job ended", || {
        trace.calls_of("slowEcho")[0].end
    });
    assert!(
        s.stash.iter().all(|m| m["id"] != json!(slow)),
        "{:?}",
        s.stash
    );
    assert_eq!(s.finish(), 0);
}

#[test]
fn with_one_process_the_next_call_waits_for_the_cancelled_job_and_gets_its_own_answer() {
    let (mut s, trace) = traced(Program::shapes(), &["--pool-replicas", "py=1"]);
    assert_eq!(s.call_ok("addOne", json!({"_1": 1})), "2");
    // The job is held in its pool until the server has taken the
    // cancellation (requests are read in order: the ping's answer says so).
    trace.hold.hold();
    let slow = s.call("slowEcho", json!({"_1": 1500}));
    trace.wait_started("slowEcho", 1);
    cancel(&mut s, slow);
    let ping = s.request("ping", json!({}));
    s.response(ping, TIMEOUT);
    trace.hold.release();
    assert_eq!(s.call_ok("slowEcho", json!({"_1": 20})), "20");
    // It ran after the cancelled job had ended, on the same process.
    let calls = trace.calls_of("slowEcho");
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0].pid, calls[1].pid, "{calls:?}");
    let cancelled_end = calls[0].end.expect("the cancelled job ended");
    assert!(cancelled_end <= calls[1].start, "{calls:?}");
    assert_eq!(s.call_ok("addOne", json!({"_1": 41})), "42");
    assert!(
        s.stash.iter().all(|m| m["id"] != json!(slow)),
        "{:?}",
        s.stash
    );
    assert_eq!(s.finish(), 0);
}

#[test]
fn a_burst_for_a_starting_pool_starts_its_replicas_beside_it() {
    // Every process of the pool is held in its start (never ready) and each
    // call in its pool. The burst arrives while the primary starts: its
    // replicas start at once too, before any process is ready, and all 8
    // calls then run side by side. Had the replicas started only once the
    // primary was ready, fewer than 8 processes would exist while held.
    let trace = CallTrace::new();
    let calls = Hold::new();
    let start = Hold::new();
    start.hold();
    calls.hold();
    let mut s = Server::owning_env(
        Program::shapes(),
        &[],
        &[trace.env(), calls.env(), start.start_env()],
    );
    let ids: Vec<u64> = (0..8u64)
        .map(|i| s.call("slowEcho", json!({"_1": i})))
        .collect();
    wait_until("eight pool processes, none of them ready", || {
        (pool_procs(&s).len() == 8).then_some(())
    });
    assert!(trace.calls().is_empty(), "{:?}", trace.calls());
    start.release();
    trace.wait_started("slowEcho", 8);
    calls.release();
    for (i, id) in ids.into_iter().enumerate() {
        let result = s.result_within(id, TIMEOUT);
        assert_eq!(text_of(&result), i.to_string(), "slowEcho {i}: {result}");
    }
    let traced = trace.calls_of("slowEcho");
    assert_eq!(traced.len(), 8, "{traced:?}");
    assert_eq!(processes(&traced).len(), 8, "{traced:?}");
    assert_eq!(
        max_concurrency(&traced),
        8,
        "the burst did not run at once: {traced:?}"
    );
    assert_eq!(s.finish(), 0);
}

#[test]
fn pool_min_keeps_processes_ready_from_the_start_and_idle() {
    let (mut s, trace) = traced(
        Program::shapes(),
        &["--pool-min", "py=3", "--replica-idle", "0.2"],
    );
    // Three processes before any call.
    wait_until("three pool processes", || {
        (pool_procs(&s).len() == 3).then_some(())
    });
    warm(&mut s, &trace, 3);
    // A burst beyond the minimum still scales up, and the extra replica
    // stops once idle, back to the minimum and not below it.
    warm(&mut s, &trace, 4);
    wait_until("back to three processes", || {
        (pool_procs(&s).len() == 3).then_some(())
    });
    let kept = pool_procs(&s);
    // The client stays idle for several --replica-idle periods: the three
    // stay.
    pace(std::time::Duration::from_millis(1000));
    assert_eq!(pool_procs(&s), kept);
    assert_eq!(s.finish(), 0);
}
