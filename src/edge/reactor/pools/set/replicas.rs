//! How many replicas a pool gets and which slots they take: for calls
//! that wait (a burst, all at once), for `--pool-min`, and which idle ones
//! stop. Decisions only; the reactor (`pools`) starts and stops them.

use std::time::{Duration, Instant};

use crate::edge::reactor::pools::PoolSet;

use super::{BasePool, PoolStatus, Proc, RETRY_FAILED_AFTER};

impl PoolSet {
    /// Whether manifest pool `base` may get more processes: its primary is
    /// starting or ready and the program is not retired (a pool that cannot
    /// start is not multiplied).
    fn may_grow(&self, program: usize, base: BasePool) -> bool {
        let rt = &self.programs[program];
        !rt.retired
            && matches!(
                rt.pools[base.0].status,
                PoolStatus::Ready | PoolStatus::Starting
            )
    }

    /// How many replicas of manifest pool `base` to start for `waiting` calls
    /// that wait while every process of it is busy or starting: those the
    /// starting processes will not take, up to `cap` processes in all, all
    /// at once (none while the primary is neither starting nor ready, or
    /// the program is retired: a pool that cannot start is not multiplied).
    pub(in crate::edge::reactor::pools) fn replicas_wanted(
        &self,
        program: usize,
        base: BasePool,
        waiting: usize,
        cap: usize,
    ) -> usize {
        if !self.may_grow(program, base) {
            return 0;
        }
        let rt = &self.programs[program];
        let live = rt.live(base);
        let starting = rt
            .instances(base)
            .filter(|&s| matches!(rt.pools[s.0].status, PoolStatus::Starting))
            .count();
        waiting
            .saturating_sub(starting)
            .min(cap.saturating_sub(live))
    }

    /// The process to start as a new replica of manifest pool `base`: a
    /// stopped replica's slot, or one that failed [`RETRY_FAILED_AFTER`]
    /// before `now` or longer, else a new slot while the pool has fewer than
    /// `cap` processes.
    pub(in crate::edge::reactor::pools) fn replica_slot(
        &mut self,
        program: usize,
        base: BasePool,
        cap: usize,
        now: Instant,
    ) -> Option<Proc> {
        let rt = &mut self.programs[program];
        let reusable = rt.instances(base).find(|&s| {
            let pool = &rt.pools[s.0];
            match &pool.status {
                PoolStatus::Idle => pool.replica > 0,
                PoolStatus::Failed { at, .. } => {
                    pool.replica > 0 && now.saturating_duration_since(*at) >= RETRY_FAILED_AFTER
                }
                _ => false,
            }
        });
        match reusable {
            Some(slot) => Some(slot),
            None if rt.instances(base).count() < cap => Some(rt.add_replica(base)),
            None => None,
        }
    }

    /// The replicas among `slots` of `program` that are ready, held by no
    /// call, and have been idle for `idle` at `now`, in the order given;
    /// a candidate not idle that long yet has its deadline armed again.
    pub(in crate::edge::reactor::pools) fn idle_among(
        &mut self,
        program: usize,
        slots: &[Proc],
        now: Instant,
        idle: Duration,
    ) -> Vec<Proc> {
        let mut found = Vec::new();
        for &slot in slots {
            let rt = &self.programs[program];
            let pool = &rt.pools[slot.0];
            let ready_and_free = pool.replica > 0
                && matches!(pool.status, PoolStatus::Ready)
                && rt.leases.busy(slot) == 0
                && !rt.leases.exclusive(slot);
            if ready_and_free && now >= pool.last_used + idle {
                found.push(slot);
            } else {
                self.rearm(program, slot);
            }
        }
        found
    }

    /// The starting or ready processes of manifest pool `base` of `program`.
    pub(in crate::edge::reactor::pools) fn live(&self, program: usize, base: BasePool) -> usize {
        self.programs[program].live(base)
    }

    /// How many replicas of manifest pool `base` to start so that it has
    /// `min` live (starting or ready) processes, up to `cap` (none while
    /// its primary is neither starting nor ready, or the program is
    /// retired).
    pub(in crate::edge::reactor::pools) fn replicas_to_keep(
        &self,
        program: usize,
        base: BasePool,
        min: usize,
        cap: usize,
    ) -> usize {
        if !self.may_grow(program, base) {
            return 0;
        }
        min.min(cap).saturating_sub(self.live(program, base))
    }
}
