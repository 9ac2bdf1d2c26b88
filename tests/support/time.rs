//! Time in tests, in one place. The integration tests never compare a
//! measured duration against an upper bound and never sleep to let
//! something happen: a busy machine (a CI runner, a laptop running a build)
//! stretches every duration, and such tests then fail for no fault of the
//! server. Instead they wait for a readiness signal and assert order, cause
//! and outcome. The few timing facts they still need go through this module
//! (`tests/tidy.rs` rejects `sleep(`, `Instant`, `.elapsed()` and
//! `SystemTime` in every test file outside `tests/support/`):
//!
//! - [`wait_until`] / [`wait_for`] / [`poll_until`]: poll a condition (a
//!   file, a process, a log line) until it holds, failing after [`TIMEOUT`];
//! - [`Stopwatch::assert_at_least`]: a lower bound (a call that must have
//!   waited for its pool's start-up or its timeout). A busy machine only
//!   makes durations longer, so lower bounds are safe;
//! - [`Stopwatch::assert_within_budget`]: the one upper bound allowed, ten
//!   times a baseline measured in the same test or a stated figure, for a
//!   property that has no observable order (e.g. "a drain stops at its
//!   deadline rather than waiting for the call");
//! - [`pace`]: a deliberate gap between a client's own actions (a slowloris
//!   drip, a client that idles), never a wait for the server.
//!
//! Speed figures belong in `bench/`, not here.

use std::fmt::Display;
use std::thread;
use std::time::{Duration, Instant};

/// How long any single wait may take before the test fails: far more than
/// any wait takes even with every CPU busy (8 tests at once beside other
/// work), since only a failing test ever waits this long.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// A `--task-after` (milliseconds) no load reaches: for a test of something
/// other than the task and job threshold, so no call becomes a task or a
/// job however slow the machine.
pub const NEVER: &str = "3600000";

/// How much slower than its baseline a budgeted step may be.
pub const BUDGET_FACTOR: u32 = 10;

/// How often [`wait_until`] polls.
const POLL: Duration = Duration::from_millis(5);

/// Polls `probe` until it returns `Some`, and returns that. Fails the test
/// after [`TIMEOUT`], naming `what` was awaited.
#[track_caller]
pub fn wait_until<T>(what: impl Display, probe: impl FnMut() -> Option<T>) -> T {
    match poll_until(probe) {
        Some(value) => value,
        None => panic!("{what}: not seen within {TIMEOUT:?}"),
    }
}

/// Polls `probe` until it returns `Some`; `None` after [`TIMEOUT`], for a
/// caller that explains the failure itself.
pub fn poll_until<T>(probe: impl FnMut() -> Option<T>) -> Option<T> {
    probe_until(probe, || thread::sleep(POLL))
}

/// [`poll_until`] without a pause between probes: for a state that lasts
/// only milliseconds, which the test then freezes (e.g. stops the server
/// inside it) before asserting on it. `None` after [`TIMEOUT`].
pub fn spin_until<T>(probe: impl FnMut() -> Option<T>) -> Option<T> {
    probe_until(probe, thread::yield_now)
}

/// Runs `probe` until it returns `Some`, `between` its tries, for at most
/// [`TIMEOUT`].
fn probe_until<T>(mut probe: impl FnMut() -> Option<T>, between: impl Fn()) -> Option<T> {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(value) = probe() {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        between();
    }
}

/// [`wait_until`] for a plain condition.
#[track_caller]
pub fn wait_for(what: impl Display, mut condition: impl FnMut() -> bool) {
    wait_until(what, || condition().then_some(()))
}

/// A deliberate gap between two actions of a test client, e.g. the bytes of
/// a slowloris request or the idle time of a client that holds a stream
/// open. Not for waiting on the server: use [`wait_until`] for that.
pub fn pace(gap: Duration) {
    thread::sleep(gap);
}

/// The time since a step began, for lower bounds and budgets.
#[derive(Clone, Copy, Debug)]
pub struct Stopwatch(Instant);

impl Stopwatch {
    pub fn start() -> Stopwatch {
        Stopwatch(Instant::now())
    }

    /// The time since [`Stopwatch::start`] (for messages and for the
    /// baseline of a later budget).
    pub fn read(&self) -> Duration {
        self.0.elapsed()
    }

    /// Fails unless at least `min` has passed: the step could not have
    /// finished earlier without skipping what it had to wait for.
    #[track_caller]
    pub fn assert_at_least(&self, min: Duration, what: &str) -> Duration {
        let took = self.read();
        assert!(took >= min, "{what} after {took:?}, before {min:?}");
        took
    }

    /// Fails if the step took more than [`BUDGET_FACTOR`] times `baseline`,
    /// a duration measured earlier in the same test or the figure the
    /// behaviour is specified by (a timeout, a drain deadline). Use only
    /// where no order or cause can be observed instead.
    #[track_caller]
    pub fn assert_within_budget(&self, baseline: Duration, what: &str) -> Duration {
        let took = self.read();
        let budget = baseline * BUDGET_FACTOR;
        assert!(
            took <= budget,
            "{what} took {took:?}, more than {BUDGET_FACTOR} x {baseline:?}"
        );
        took
    }
}
