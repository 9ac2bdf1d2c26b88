//! Stopping pool process groups without ever waiting on the reactor thread.
//!
//! A stop is a small state machine per process group: SIGTERM is sent at
//! once; the group is then left alone until it is gone (noticed after a
//! SIGCHLD, when the reactor reaps) or its grace ends, when SIGKILL follows;
//! a group that still exists a moment after SIGKILL is given up on with a
//! warning. A process restarted because it was stuck (a call timed out on
//! it) is started again only once its old group is gone: the new process
//! binds the same socket and, for a primary, uses the same shared memory,
//! which the old one must not be writing to any more.

use std::time::{Duration, Instant};

use super::index::Proc;
use crate::edge::log;
use crate::edge::proc;

/// How long after SIGKILL a group may take to vanish before it is given
/// up on (a process in uninterruptible sleep dies when it wakes).
const KILL_SETTLE: Duration = Duration::from_millis(100);

/// The process groups being stopped.
#[derive(Default)]
pub(in crate::edge::reactor) struct Stops {
    groups: Vec<Stopping>,
}

/// One process group being stopped.
struct Stopping {
    pgid: i32,
    /// How messages name the process (`py`, `py#2`).
    label: String,
    phase: Phase,
    /// The slot (program, process) the group ran in.
    slot: (usize, Proc),
    /// Start the slot again once the group is gone.
    restart: bool,
}

#[derive(Clone, Copy)]
enum Phase {
    /// SIGTERM sent; SIGKILL follows at `kill_at`.
    Term { kill_at: Instant },
    /// SIGKILL sent; given up on at `give_up_at`.
    Kill { give_up_at: Instant },
}

impl Stops {
    /// Sends SIGTERM to group `pgid`, the process of `slot`, and starts
    /// watching it; with `restart`, the slot starts again once it is gone.
    pub(super) fn begin(
        &mut self,
        pgid: i32,
        label: String,
        grace: Duration,
        now: Instant,
        slot: (usize, Proc),
        restart: bool,
    ) {
        let _ = proc::kill_group(pgid, libc::SIGTERM);
        self.groups.push(Stopping {
            pgid,
            label,
            phase: Phase::Term {
                kill_at: now + grace,
            },
            slot,
            restart,
        });
    }

    /// Forgets the restart waiting on the stop of slot `slot`'s old process
    /// (the slot is being stopped or retired for good).
    pub(super) fn cancel_restart(&mut self, program: usize, slot: Proc) {
        for group in &mut self.groups {
            if group.slot == (program, slot) {
                group.restart = false;
            }
        }
    }

    /// Whether slot `slot`'s old process is still being stopped; if so, the
    /// slot starts once it is gone (a new process must not bind the socket
    /// the old one still removes on its way out).
    pub(super) fn defer_start(&mut self, program: usize, slot: Proc) -> bool {
        let mut deferred = false;
        for group in &mut self.groups {
            if group.slot == (program, slot) {
                group.restart = true;
                deferred = true;
            }
        }
        deferred
    }

    /// Whether slot `slot`'s old process is being stopped before it starts
    /// again.
    #[cfg(test)]
    fn restarting(&self, program: usize, slot: Proc) -> bool {
        self.groups
            .iter()
            .any(|g| g.restart && g.slot == (program, slot))
    }

    /// When [`Stops::advance`] has something to do without a SIGCHLD.
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.groups
            .iter()
            .map(|g| match g.phase {
                Phase::Term { kill_at } => kill_at,
                Phase::Kill { give_up_at } => give_up_at,
            })
            .min()
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Moves every stop along at `now` (call it after reaping): forgets the
    /// groups that are gone, kills those whose grace ended, gives up on
    /// those that outlived SIGKILL. Returns the slots to start again.
    pub(super) fn advance(&mut self, now: Instant) -> Vec<(usize, Proc)> {
        let mut restarts = Vec::new();
        self.groups.retain_mut(|group| {
            let gone = !proc::group_alive(group.pgid);
            match group.phase {
                _ if gone => {}
                Phase::Term { kill_at } if now >= kill_at => {
                    log::debug(&format!(
                        "pool '{}' (group {}) did not stop on SIGTERM: killing it",
                        group.label, group.pgid
                    ));
                    let _ = proc::kill_group(group.pgid, libc::SIGKILL);
                    group.phase = Phase::Kill {
                        give_up_at: now + KILL_SETTLE,
                    };
                    return true;
                }
                Phase::Kill { give_up_at } if now >= give_up_at => {
                    log::warn(&format!(
                        "pool '{}' (group {}) still exists after SIGKILL; no longer waiting for it",
                        group.label, group.pgid
                    ));
                }
                Phase::Term { .. } | Phase::Kill { .. } => return true,
            }
            if group.restart {
                restarts.push(group.slot);
            }
            false
        });
        restarts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stopped_group_that_is_gone_restarts_its_slot_once() {
        let mut stops = Stops::default();
        let now = Instant::now();
        // No process group 2^30 exists: the stop ends on the first advance.
        stops.begin(
            1 << 30,
            "py".into(),
            Duration::from_secs(60),
            now,
            (0, Proc(1)),
            true,
        );
        assert!(stops.restarting(0, Proc(1)));
        assert_eq!(stops.next_deadline(), Some(now + Duration::from_secs(60)));
        assert_eq!(stops.advance(now), vec![(0, Proc(1))]);
        assert!(stops.is_empty());
        assert_eq!(stops.advance(now), vec![]);
    }

    #[test]
    fn a_cancelled_restart_is_not_started() {
        let mut stops = Stops::default();
        let now = Instant::now();
        stops.begin(
            1 << 30,
            "py".into(),
            Duration::ZERO,
            now,
            (0, Proc(0)),
            true,
        );
        stops.cancel_restart(0, Proc(0));
        assert!(!stops.restarting(0, Proc(0)));
        assert_eq!(stops.advance(now), vec![]);
        assert!(stops.is_empty());
    }
}
