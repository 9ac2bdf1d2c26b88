//! The test pool's call trace: with `TESTPOOL_TRACE=<file>` in its
//! environment (the server passes its own to the pools), the test pool
//! appends `start <function> <pid> <ns>` when a call begins and
//! `end <function> <pid> <ns>` when it returns, the times from the
//! system-wide monotonic clock. Tests read it to see that a call reached its
//! pool and that calls overlapped, from the pool's side, instead of timing
//! them from the client.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::proc::TempDir;
use super::time::wait_until;

/// One traced call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TracedCall {
    pub function: String,
    pub pid: i32,
    pub start: u64,
    /// `None` while the call runs (or when its pool died in it).
    pub end: Option<u64>,
}

/// A trace file in a temporary directory.
pub struct CallTrace {
    path: PathBuf,
    _dir: TempDir,
}

impl Default for CallTrace {
    fn default() -> CallTrace {
        CallTrace::new()
    }
}

impl CallTrace {
    pub fn new() -> CallTrace {
        let dir = TempDir::new();
        let path = dir.join("calls.trace");
        CallTrace { path, _dir: dir }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The environment variable that turns the trace on, for
    /// `Command::env`.
    pub fn env(&self) -> (&'static str, OsString) {
        ("TESTPOOL_TRACE", self.path.clone().into_os_string())
    }

    /// Every call traced so far, in the order they started.
    pub fn calls(&self) -> Vec<TracedCall> {
        let text = std::fs::read_to_string(&self.path).unwrap_or_default();
        let mut calls: Vec<TracedCall> = Vec::new();
        // Only whole lines: the pool may be writing the last one.
        for line in text
            .split_inclusive('\n')
            .filter_map(|l| l.strip_suffix('\n'))
        {
            let fields: Vec<&str> = line.split(' ').collect();
            let [kind, function, pid, ns] = fields[..] else {
                panic!("bad trace line {line:?} in {}", self.path.display())
            };
            let pid: i32 = pid.parse().expect("a pid in the trace");
            let ns: u64 = ns.parse().expect("a time in the trace");
            match kind {
                "start" => calls.push(TracedCall {
                    function: function.to_string(),
                    pid,
                    start: ns,
                    end: None,
                }),
                "end" => {
                    // A pool process runs its calls one after another or on
                    // threads; the oldest open call of that function and
                    // process is the one ending when several are open only if
                    // they started together, which is all the tests compare.
                    if let Some(call) = calls
                        .iter_mut()
                        .find(|c| c.pid == pid && c.function == function && c.end.is_none())
                    {
                        call.end = Some(ns);
                    }
                }
                _ => panic!("bad trace line {line:?}"),
            }
        }
        calls
    }

    /// The calls of `function`.
    pub fn calls_of(&self, function: &str) -> Vec<TracedCall> {
        self.calls()
            .into_iter()
            .filter(|c| c.function == function)
            .collect()
    }

    /// How many calls have started so far: a mark for [`CallTrace::since`].
    pub fn mark(&self) -> usize {
        self.calls().len()
    }

    /// The calls that started after `mark`, in the order they started.
    pub fn since(&self, mark: usize) -> Vec<TracedCall> {
        self.calls().into_iter().skip(mark).collect()
    }

    /// Waits until `n` calls of `function` have started in a pool, and
    /// returns them.
    #[track_caller]
    pub fn wait_started(&self, function: &str, n: usize) -> Vec<TracedCall> {
        self.wait_started_since(0, function, n)
    }

    /// Waits until `n` calls of `function` have started after `mark`, and
    /// returns them.
    #[track_caller]
    pub fn wait_started_since(&self, mark: usize, function: &str, n: usize) -> Vec<TracedCall> {
        wait_until(
            format!("{n} call(s) of {function} started in a pool"),
            || {
                let calls: Vec<TracedCall> = self
                    .since(mark)
                    .into_iter()
                    .filter(|c| c.function == function)
                    .collect();
                (calls.len() >= n).then_some(calls)
            },
        )
    }

    /// Fails unless exactly two calls ran, on one pool process, the second
    /// only once the first had ended there (a call cancelled while held in
    /// its pool, then the next call, which had to wait for that process).
    #[track_caller]
    pub fn assert_second_waited_for_first(&self) {
        let calls = self.calls();
        assert_eq!(calls.len(), 2, "{calls:?}");
        assert_eq!(calls[0].pid, calls[1].pid, "{calls:?}");
        assert!(
            calls[0].end.expect("the first call ended") <= calls[1].start,
            "{calls:?}"
        );
    }

    /// Fails unless every finished call of `function` ran at the same time as
    /// every other: the last one started before the first one ended. Returns
    /// how many there were.
    #[track_caller]
    pub fn assert_all_overlap(&self, function: &str) -> usize {
        let calls = self.calls_of(function);
        let last_start = calls.iter().map(|c| c.start).max().unwrap_or(0);
        let first_end = calls
            .iter()
            .map(|c| c.end.unwrap_or_else(|| panic!("unfinished call {c:?}")))
            .min()
            .unwrap_or(0);
        assert!(
            last_start < first_end,
            "the {function} calls did not all run at once: {calls:?}"
        );
        calls.len()
    }
}

/// The most calls that ran at the same moment (an unfinished call counts
/// as running to the end).
pub fn max_concurrency(calls: &[TracedCall]) -> usize {
    let mut events: Vec<(u64, i32)> = Vec::new();
    for call in calls {
        events.push((call.start, 1));
        events.push((call.end.unwrap_or(u64::MAX), -1));
    }
    // Ends sort before starts at the same instant: touching is not overlap.
    events.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, step) in events {
        now += step;
        most = most.max(now);
    }
    most as usize
}

/// The distinct processes that ran these calls.
pub fn processes(calls: &[TracedCall]) -> Vec<i32> {
    let mut pids: Vec<i32> = calls.iter().map(|c| c.pid).collect();
    pids.sort();
    pids.dedup();
    pids
}

/// Holds `slowEcho` calls in their pools (`TESTPOOL_HOLD`): while held, a
/// call that started stays running after its sleep until released, so a
/// test of overlap makes the overlap happen (hold the first call until the
/// next has started elsewhere) instead of hoping a sleep is long enough.
/// Starts released.
pub struct Hold {
    path: PathBuf,
    _dir: TempDir,
}

impl Default for Hold {
    fn default() -> Hold {
        Hold::new()
    }
}

impl Hold {
    pub fn new() -> Hold {
        let dir = TempDir::new();
        let hold = Hold {
            path: dir.join("release"),
            _dir: dir,
        };
        hold.release();
        hold
    }

    /// The environment variable that gives the pools the hold, for
    /// `Command::env`.
    pub fn env(&self) -> (&'static str, OsString) {
        ("TESTPOOL_HOLD", self.path.clone().into_os_string())
    }

    /// The environment variable that makes it hold the start of every
    /// pool process instead (`TESTPOOL_START_HOLD`): while held, a process
    /// that started does not bind its socket, so it is never ready.
    pub fn start_env(&self) -> (&'static str, OsString) {
        ("TESTPOOL_START_HOLD", self.path.clone().into_os_string())
    }

    /// From now on, `slowEcho` calls stay in their pools until
    /// [`Hold::release`].
    pub fn hold(&self) {
        match std::fs::remove_file(&self.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("cannot hold: {e}"),
        }
    }

    /// Lets every held call (and every later one) return.
    pub fn release(&self) {
        std::fs::write(&self.path, b"").expect("release the held calls");
    }
}
