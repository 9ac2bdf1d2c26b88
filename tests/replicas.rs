//! End-to-end tests of pool replicas: extra processes of a single-threaded
//! pool that the server starts when calls wait (`--pool-replicas`).
//!
//! The test pool runs one call at a time by default, like a real Python
//! pool, and frees its last shared-memory result as soon as it is handed its
//! next connection, so these tests see what a real pool would: calls
//! overlap only across processes, and results stay exact with shared memory
//! in play. Timings are coarse bounds a loaded machine cannot break: a
//! serial run of N sleeping calls cannot finish in less than N sleeps, and a
//! parallel one is asserted only to beat half of that.

use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::pools::{
    all_pids, assert_no_leftovers, cmdline, error_text, stat_of, text_of, Program, Server,
};
use crate::util::TIMEOUT;

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

/// Sends `n` concurrent `slowEcho ms` calls and waits for all of them;
/// returns how long the round took and the error texts of failed calls.
fn round(s: &mut Server, n: usize, ms: u64) -> (Duration, Vec<String>) {
    let start = Instant::now();
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
    (start.elapsed(), errors)
}

/// Repeats rounds of `n` concurrent 300 ms calls until one overlaps (takes
/// under 550 ms), so that `n` processes are up and ready.
#[track_caller]
fn warm(s: &mut Server, n: usize) {
    for _ in 0..40 {
        let (took, errors) = round(s, n, 300);
        assert!(errors.is_empty(), "warm-up calls failed: {errors:?}");
        if took < Duration::from_millis(550) {
            return;
        }
    }
    panic!("{n} concurrent calls never overlapped");
}

#[test]
fn sleeping_calls_overlap_on_replicas_and_queue_on_one_process() {
    let mut s = Server::owning(Program::shapes(), &[]);
    warm(&mut s, 8);
    let (took, errors) = round(&mut s, 8, 400);
    assert!(errors.is_empty(), "{errors:?}");
    eprintln!("8 x slowEcho 400 with replicas: {took:?}");
    // One process would need at least 3.2 s.
    assert!(
        took < Duration::from_millis(1600),
        "8 sleeping calls took {took:?} with replicas"
    );
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

    let mut one = Server::owning(Program::shapes(), &["--pool-replicas", "py=1"]);
    let (took, errors) = round(&mut one, 8, 300);
    assert!(errors.is_empty(), "{errors:?}");
    eprintln!("8 x slowEcho 300 with --pool-replicas py=1: {took:?}");
    assert!(
        took >= Duration::from_millis(2400),
        "8 calls into one single-threaded process took only {took:?}"
    );
    assert_eq!(pool_procs(&one).len(), 1);
    assert_eq!(one.finish(), 0);
}

#[test]
fn a_replica_crash_fails_only_its_call_and_the_replica_comes_back() {
    let mut s = Server::owning(Program::shapes(), &["--pool-replicas", "py=2"]);
    warm(&mut s, 2);
    let before = pool_procs(&s);
    let replica = a_replica(&before);
    let ids = [
        s.call("slowEcho", json!({"_1": 3000})),
        s.call("slowEcho", json!({"_1": 3000})),
    ];
    thread::sleep(Duration::from_millis(500));
    sigkill(replica.pid);
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
    let deadline = Instant::now() + TIMEOUT;
    let restarted = loop {
        let now = pool_procs(&s);
        if let Some(p) = now
            .iter()
            .find(|p| p.socket == replica.socket && p.pid != replica.pid)
        {
            break p.clone();
        }
        assert!(Instant::now() < deadline, "replica not restarted: {now:?}");
        thread::sleep(Duration::from_millis(10));
    };
    warm(&mut s, 2);
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
    let mut s = Server::owning(Program::shapes(), &["--pool-replicas", "py=2"]);
    warm(&mut s, 2);
    let before = pool_procs(&s);
    let replica = a_replica(&before);
    let slow = [
        s.call("slowEcho", json!({"_1": 2500})),
        s.call("slowEcho", json!({"_1": 2501})),
    ];
    thread::sleep(Duration::from_millis(300));
    let waiting = s.call("addOne", json!({"_1": 41}));
    thread::sleep(Duration::from_millis(200));
    sigkill(replica.pid);
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
    let mut s = Server::owning(Program::shapes(), &["--pool-replicas", "py=3"]);
    warm(&mut s, 3);
    let before = pool_procs(&s);
    let primary = before
        .iter()
        .find(|p| !p.is_replica())
        .cloned()
        .unwrap_or_else(|| panic!("no primary among {before:?}"));
    assert_eq!(before.len(), 3, "{before:?}");
    let ids: Vec<u64> = (0..3)
        .map(|_| s.call("slowEcho", json!({"_1": 2000})))
        .collect();
    thread::sleep(Duration::from_millis(500));
    sigkill(primary.pid);
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
    let mut s = Server::owning(
        Program::shapes(),
        &["--pool-replicas", "py=2", "--replica-idle", "0.3"],
    );
    let id = s.request("logging/setLevel", json!({"level": "info"}));
    s.response(id, TIMEOUT);
    warm(&mut s, 2);
    // Two concurrent noisy calls: one lands on the replica, whose lines are
    // labelled on stderr and in the log notifications.
    let ids = [
        s.call("slowEcho", json!({"_1": 300})),
        s.call("noisyAdd", json!({"_1": 7})),
    ];
    for id in ids {
        s.result_within(id, TIMEOUT);
    }
    let ids = [
        s.call("noisyAdd", json!({"_1": 8})),
        s.call("slowEcho", json!({"_1": 300})),
    ];
    for id in ids {
        s.result_within(id, TIMEOUT);
    }
    s.wait_stderr("[py#1] noisyAdd: ");
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let procs = pool_procs(&s);
        if procs.len() == 1 && !procs[0].is_replica() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "idle replica never stopped: {procs:?}"
        );
        thread::sleep(Duration::from_millis(20));
    }
    // The pool still serves, and scales up again when calls wait.
    warm(&mut s, 2);
    assert_eq!(s.finish(), 0);
}

#[test]
fn a_call_that_times_out_on_a_replica_restarts_only_that_process() {
    let mut s = Server::owning(
        Program::shapes(),
        &["--pool-replicas", "py=2", "--call-timeout", "1"],
    );
    warm(&mut s, 2);
    let before = pool_procs(&s);
    assert_eq!(before.len(), 2, "{before:?}");
    // The slow call takes the primary (least busy, first), the hung one the
    // replica.
    let slow = s.call("slowEcho", json!({"_1": 800}));
    thread::sleep(Duration::from_millis(100));
    let hung = s.call("hang", json!({"_1": 1}));
    let text = error_text(&s.result_within(hung, TIMEOUT));
    assert!(
        text.contains("timed out") && text.contains("py#1"),
        "{text}"
    );
    let result = s.result_within(slow, TIMEOUT);
    assert_eq!(text_of(&result), "800", "{result}");
    let after = pool_procs(&s);
    let primary = |procs: &[PoolProc]| procs.iter().find(|p| !p.is_replica()).map(|p| p.pid);
    assert_eq!(
        primary(&before),
        primary(&after),
        "the primary was restarted"
    );
    warm(&mut s, 2);
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
    let mut s = Server::owning(Program::shapes(), &["--pool-replicas", "py=2"]);
    assert_eq!(s.call_ok("addOne", json!({"_1": 1})), "2");
    let slow = s.call("slowEcho", json!({"_1": 4000}));
    thread::sleep(Duration::from_millis(300));
    cancel(&mut s, slow);
    let started = Instant::now();
    assert_eq!(s.call_ok("slowEcho", json!({"_1": 10})), "10");
    let took = started.elapsed();
    assert!(
        took < Duration::from_millis(2500),
        "the next call waited {took:?} behind the cancelled one"
    );
    assert!(
        s.stash.iter().all(|m| m["id"] != json!(slow)),
        "{:?}",
        s.stash
    );
    assert_eq!(s.finish(), 0);
}

#[test]
fn with_one_process_the_next_call_waits_for_the_cancelled_job_and_gets_its_own_answer() {
    let mut s = Server::owning(Program::shapes(), &["--pool-replicas", "py=1"]);
    assert_eq!(s.call_ok("addOne", json!({"_1": 1})), "2");
    let slow = s.call("slowEcho", json!({"_1": 1500}));
    thread::sleep(Duration::from_millis(300));
    cancel(&mut s, slow);
    let started = Instant::now();
    assert_eq!(s.call_ok("slowEcho", json!({"_1": 20})), "20");
    let took = started.elapsed();
    // It ran after the cancelled job's remaining 1.2 s, on the same process.
    assert!(took >= Duration::from_millis(900), "{took:?}");
    assert_eq!(s.call_ok("addOne", json!({"_1": 41})), "42");
    assert!(
        s.stash.iter().all(|m| m["id"] != json!(slow)),
        "{:?}",
        s.stash
    );
    assert_eq!(s.finish(), 0);
}
