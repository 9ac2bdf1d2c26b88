//! Pool lifecycle inside the reactor: spawning, readiness probes
//! (`probe`), output and log lines (`output`), crash detection and
//! restarts, replicas, and stopping. The state lives in a [`PoolSet`]
//! (`set`), named by typed indices (`index`); leases are in `leases`.
//!
//! Each served program has a `Runtime`: its run directory (where the pools'
//! sockets live), its shared-memory basename with volume 0, and its pools. A
//! pool is *Starting* until it answers a ping on its socket, then *Ready*. A
//! pool that dies is restarted at once unless it crash-loops; calls that were
//! already running on it fail with a message saying how it died, and calls
//! still waiting for it go to the restarted pool.
//!
//! A pool (Python, R, C++) may have *replicas*: more processes of the same
//! pool, each on its own socket in the run directory, with the same
//! arguments and environment but a shared-memory basename of its own. A
//! runtime holds every process: the manifest's pools first (the
//! *primaries*, [`Proc`] equal to their [`BasePool`], on the socket the other
//! pools call), then the replicas, each naming its pool. The server spreads
//! its own calls over a pool's ready processes, least busy first; calls that
//! go through other pools stay on the primary. A replica starts when every
//! process of its pool is busy and calls are waiting (up to the pool's cap,
//! `--pool-replicas`), and stops after sitting idle.

use crate::edge::log;
use std::os::fd::AsRawFd;
use std::time::Instant;

use mio::unix::SourceFd;
use mio::{Events, Interest};

use super::{Reactor, Source};
use crate::edge::proc;
use crate::edge::rundir;
use crate::edge::shm;

mod index;
mod leases;
mod output;
mod probe;
mod routing;
mod set;
mod stop;
pub(super) use index::{BasePool, Proc};
pub(super) use leases::{LeaseMode, Leases};
use set::{lang_setting, replica_cap, PROBE_DELAY_MIN, RESTART_WINDOW, RETRY_FAILED_AFTER};
pub(super) use set::{PoolSet, PoolStatus, ProcState, Runtime};

impl Reactor {
    /// The most processes pool `lang` may run: `--pool-replicas`, else
    /// the default ([`replica_cap`]).
    pub(super) fn replica_cap(&self, lang: &str) -> usize {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        replica_cap(&self.options.pool_replicas, lang, cpus)
    }

    /// `waiting` calls of `program` wait for a process of manifest pool
    /// `base` while every one is busy: start replicas for those that the
    /// starting ones will not take, up to the pool's cap.
    pub(super) fn scale_up(&mut self, program: usize, base: BasePool, waiting: usize) {
        let cap = self.replica_cap(self.pools.lang(program, base));
        for _ in 0..self.pools.replicas_wanted(program, base, waiting, cap) {
            let Some(slot) = self.pools.replica_slot(program, base, cap, Instant::now()) else {
                break;
            };
            self.pools[(program, slot)].life.starts.clear();
            self.start_pool(program, slot);
        }
    }

    /// The processes pool `lang` keeps ready from the start:
    /// `--pool-min`, else 1 (the primary).
    fn pool_min(&self, lang: &str) -> usize {
        lang_setting(&self.options.pool_min, lang).unwrap_or(1)
    }

    /// Stops replicas that have been idle for `--replica-idle`, except
    /// those that keep their pool at its `--pool-min` (they count as used
    /// now, so they are looked at again one idle period later).
    fn stop_idle_replicas(&mut self, program: usize, now: Instant) {
        let idle = self.options.replica_idle;
        let idle_ones = self.pools.idle_replicas(program, now, idle);
        if idle_ones.is_empty() {
            return;
        }
        let mut spare: Vec<Option<usize>> = Vec::new();
        for slot in idle_ones {
            let (base, _) = self.pools.base_of(program, slot);
            if spare.len() <= base.0 {
                spare.resize(base.0 + 1, None);
            }
            let left = *spare[base.0].get_or_insert_with(|| {
                let min = self.pool_min(self.pools.lang(program, base));
                self.pools.live(program, base).saturating_sub(min)
            });
            if left > 0 {
                spare[base.0] = Some(left - 1);
                self.stop_pool(program, slot);
            } else {
                self.pools.touch(program, slot, now);
            }
        }
    }

    /// Starts, all at once, the replicas that bring each pool of `program`
    /// whose primary is starting or ready to its `--pool-min` processes.
    fn keep_warm(&mut self, program: usize) {
        if self.options.pool_min.is_empty() {
            return;
        }
        let bases: Vec<BasePool> = self
            .pools
            .procs(program)
            .filter_map(|p| match self.pools.base_of(program, p) {
                (base, true) => Some(base),
                _ => None,
            })
            .collect();
        for base in bases {
            let lang = self.pools.lang(program, base).to_string();
            let (min, cap) = (self.pool_min(&lang), self.replica_cap(&lang));
            for _ in 0..self.pools.replicas_to_keep(program, base, min, cap) {
                let Some(slot) = self.pools.replica_slot(program, base, cap, Instant::now()) else {
                    break;
                };
                self.pools[(program, slot)].life.starts.clear();
                self.start_pool(program, slot);
            }
        }
    }

    pub(super) fn start_all_pools(&mut self, program: usize) {
        if self.pools.first_sweep() {
            // Like the reference, remove shared memory left by dead runs.
            rundir::sweep_dead();
            shm::sweep_stale();
        }
        for pool in self.pools.procs(program).collect::<Vec<_>>() {
            let p = &self.pools[(program, pool)];
            if p.replica == 0 && matches!(p.status, PoolStatus::Idle) {
                self.start_pool(program, pool);
            }
        }
        self.keep_warm(program);
    }

    /// Makes sure the primary of pool `base` of `program` is running or
    /// starting; returns the error message if it cannot be used now.
    pub(super) fn ensure_pool(&mut self, program: usize, base: BasePool) -> Result<bool, String> {
        let pool = base.primary();
        if self.options.lazy_pools {
            // The command's other pools (cross-language calls) are needed too;
            // starting every pool of the program keeps that simple.
            self.start_all_pools(program);
        }
        match &self.pools[(program, pool)].status {
            PoolStatus::Ready => Ok(true),
            PoolStatus::Starting => Ok(false),
            PoolStatus::Idle => {
                self.start_pool(program, pool);
                Ok(false)
            }
            PoolStatus::Failed { message, at } => {
                if at.elapsed() >= RETRY_FAILED_AFTER {
                    self.pools[(program, pool)].life.starts.clear();
                    self.start_pool(program, pool);
                    match &self.pools[(program, pool)].status {
                        PoolStatus::Failed { message, .. } => Err(message.clone()),
                        _ => Ok(false),
                    }
                } else {
                    let message = message.clone();
                    let pool = &mut self.pools[(program, pool)];
                    if let Some(failed) = pool.life.broken.as_mut() {
                        *failed += 1;
                    }
                    Err(message)
                }
            }
        }
    }

    pub(super) fn start_pool(&mut self, program: usize, i: Proc) {
        if self.pools.stops().defer_start(program, i) {
            // Its old process is still going: it starts once that is gone.
            let pool = &mut self.pools[(program, i)];
            pool.pid = None;
            pool.status = PoolStatus::Starting;
            return;
        }
        let now = Instant::now();
        let pool = &mut self.pools[(program, i)];
        pool.life.record_start(now);
        pool.probing.delay = PROBE_DELAY_MIN;
        pool.output.buf.clear();
        // Error messages quote what this run of the pool printed.
        pool.output.tail.clear();
        match proc::spawn_pool(&pool.spawn) {
            Ok(spawned) => {
                pool.pid = Some(spawned.pid);
                pool.status = PoolStatus::Starting;
                // A pool crashing right away leaves its old socket file; the
                // new process unlinks it before binding, so probes simply
                // fail until then.
                pool.probing.next = Some(now + PROBE_DELAY_MIN);
                let fd = spawned.output;
                let raw = fd.as_raw_fd();
                let token = self.token(Source::PoolOutput { program, pool: i });
                if let Err(e) =
                    self.poll
                        .registry()
                        .register(&mut SourceFd(&raw), token, Interest::READABLE)
                {
                    log::error(&format!("cannot watch the output of a pool: {e}"));
                }
                self.pools[(program, i)].output.pipe = Some((token, fd));
            }
            Err(e) => {
                let message = format!("cannot start pool '{}': {e}", pool.label());
                log::error(&message);
                pool.status = PoolStatus::Failed {
                    message: message.clone(),
                    at: now,
                };
                self.open_breaker(program, i, "could not be started");
                self.fail_pool_calls(program, i, &message, true);
            }
        }
    }

    pub(super) fn pool_timers(&mut self, now: Instant) {
        self.advance_stops(now);
        for program in 0..self.pools.len() {
            self.stop_idle_replicas(program, now);
            self.keep_warm(program);
            for i in self.pools.procs(program).collect::<Vec<_>>() {
                let pool = &mut self.pools[(program, i)];
                if pool.probing.next.is_some_and(|t| t <= now) {
                    pool.probing.next = None;
                    self.start_probe(program, i);
                }
                let pool = &self.pools[(program, i)];
                let limit = self.options.pool_start_timeout;
                // Starting without a process: its old one is being stopped.
                if matches!(pool.status, PoolStatus::Starting)
                    && pool.pid.is_some()
                    && now >= pool.life.started_at + limit
                {
                    let message = format!(
                        "pool '{}' did not become ready within {} s{}",
                        pool.label(),
                        limit.as_secs_f64(),
                        self.pools.rt(program).tail_note(i)
                    );
                    log::error(&message);
                    self.stop_pool(program, i);
                    self.pools[(program, i)].status = PoolStatus::Failed {
                        message: message.clone(),
                        at: now,
                    };
                    self.open_breaker(program, i, "did not become ready");
                    self.fail_pool_calls(program, i, &message, true);
                }
            }
        }
    }

    /// Reaps exited children, recovers the pools among them and moves the
    /// stops along.
    pub(super) fn check_children(&mut self) {
        self.reap_pools();
        self.advance_stops(Instant::now());
    }

    /// Moves the stops of process groups along at `now`, starting again the
    /// processes whose old group is gone.
    pub(super) fn advance_stops(&mut self, now: Instant) {
        for (program, slot) in self.pools.stops().advance(now) {
            let pool = &self.pools[(program, slot)];
            if matches!(pool.status, PoolStatus::Starting) && pool.pid.is_none() {
                self.start_pool(program, slot);
            }
        }
    }

    fn reap_pools(&mut self) {
        for (pid, status) in proc::reap_any() {
            let found = self.pools.find_pid(pid);
            // Otherwise: an orphaned worker re-parented to us, now reaped.
            let Some((program, i)) = found else { continue };
            // Collect what the pool printed last, for the message.
            self.read_pool_output(program, i);
            self.pools[(program, i)].pid = None;
            // Its workers may outlive it: end the whole group.
            let _ = proc::kill_group(pid, libc::SIGKILL);
            self.end_probe(program, i);
            self.close_pool_output(program, i);
            let lang = self.pools[(program, i)].label();
            let starting = matches!(self.pools[(program, i)].status, PoolStatus::Starting);
            log::warn(&format!("pool '{lang}' (pid {pid}) {status}"));
            let message = if starting {
                format!(
                    "pool '{lang}' {status} during start-up{}",
                    self.pools.rt(program).tail_note(i)
                )
            } else {
                format!("pool '{lang}' died ({status}) while the call was running; it is being restarted")
            };
            let now = Instant::now();
            let (recent, looping) = self.pools[(program, i)].life.crash_loop(now);
            if starting || looping {
                // A pool that cannot start, or keeps dying, is not restarted
                // in a loop; calls fail with the reason and a later call may
                // try again.
                let message = if starting {
                    message
                } else {
                    format!(
                        "pool '{lang}' keeps dying ({recent} starts within {} s; last: {status}); not restarting it for now{}",
                        RESTART_WINDOW.as_secs(),
                        self.pools.rt(program).tail_note(i)
                    )
                };
                self.pools[(program, i)].status = PoolStatus::Failed {
                    message: message.clone(),
                    at: now,
                };
                let why = if starting {
                    "died during start-up".to_string()
                } else {
                    format!(
                        "keeps dying ({recent} starts within {} s)",
                        RESTART_WINDOW.as_secs()
                    )
                };
                self.open_breaker(program, i, &why);
                self.fail_pool_calls(program, i, &message, true);
            } else {
                self.withdraw_pool(program, i);
                self.fail_pool_calls(program, i, &message, false);
                self.start_pool(program, i);
            }
        }
    }

    /// Pool process `i` is `Failed` and not restarted for now: says so on
    /// stderr (rate-limited), once until it is ready again.
    fn open_breaker(&mut self, program: usize, i: Proc, why: &str) {
        let pool = &mut self.pools[(program, i)];
        if pool.life.broken.is_some() {
            return;
        }
        pool.life.broken = Some(0);
        let lang = pool.label();
        self.say(
            &format!("restart breaker open: {lang}"),
            &format!(
                "pool '{lang}' {why}: restart breaker open, not restarting it; its calls fail at once until one comes {} s from now or later and starts it again",
                RETRY_FAILED_AFTER.as_secs()
            ),
        );
    }

    /// Stops pool `i`: its probe and output end now, and its process group
    /// is stopped in the background (`stop`: TERM, grace, KILL, reaped on
    /// SIGCHLD); a restart waiting for it is forgotten.
    pub(super) fn stop_pool(&mut self, program: usize, i: Proc) {
        self.pools.stops().cancel_restart(program, i);
        let _ = self.begin_stop(program, i, false);
        self.pools[(program, i)].status = PoolStatus::Idle;
    }

    /// Ends pool `i`'s probe and output, and begins stopping its process
    /// group, if it has one (returns whether); with `restart`, the slot
    /// starts again once the group is gone.
    fn begin_stop(&mut self, program: usize, i: Proc, restart: bool) -> bool {
        self.end_probe(program, i);
        self.close_pool_output(program, i);
        let grace = self.options.pool_stop_grace;
        let label = self.pools[(program, i)].label();
        let Some(pid) = self.pools[(program, i)].pid.take() else {
            return false;
        };
        self.pools
            .stops()
            .begin(pid, label, grace, Instant::now(), (program, i), restart);
        true
    }

    /// At exit: stops every pool process and waits, on the signal pipe,
    /// until every group being stopped is gone (at most the stop grace and
    /// a moment after SIGKILL).
    pub(super) fn stop_all_pools(&mut self) {
        for program in 0..self.pools.len() {
            for i in self.pools.procs(program).collect::<Vec<_>>() {
                self.pools.stops().cancel_restart(program, i);
                let _ = self.begin_stop(program, i, false);
            }
        }
        let mut events = Events::with_capacity(8);
        loop {
            proc::reap_any();
            let _ = self.pools.stops().advance(Instant::now());
            let Some(at) = self.pools.stops().next_deadline() else {
                break;
            };
            let timeout = at.saturating_duration_since(Instant::now());
            // Woken by SIGCHLD (the signal pipe) or the next deadline.
            let _ = self.poll.poll(&mut events, Some(timeout));
            let _ = self.signals.drain();
        }
    }

    /// Treats a running pool as starting again: calls wait until it answers
    /// a ping (or the start-up deadline passes).
    pub(super) fn reprobe_pool(&mut self, program: usize, i: Proc) {
        let pool = &mut self.pools[(program, i)];
        pool.status = PoolStatus::Starting;
        pool.life.started_at = Instant::now();
        pool.probing.delay = PROBE_DELAY_MIN;
        self.schedule_probe(program, i);
    }

    /// Restarts a pool whose worker is stuck (a call timed out on it).
    /// Takes process `i` out of the ready set ahead of its restart, before
    /// its calls fail: failing them frees their leases, and a waiting call
    /// must not be handed a process that is dead or about to be stopped (a
    /// dead Python pool's workers may still hold its socket for a moment, so
    /// such a call would be sent and then lost). It counts as starting, so
    /// no replica is started in its place; `start_pool` probes the new
    /// process as usual.
    pub(super) fn withdraw_pool(&mut self, program: usize, i: Proc) {
        self.pools[(program, i)].status = PoolStatus::Starting;
    }

    /// Restarts pool `i`: its calls fail with `reason`, and the slot starts
    /// again once its old process group is gone (never two processes on
    /// one socket and shared memory).
    pub(super) fn restart_pool(&mut self, program: usize, i: Proc, reason: &str) {
        let lang = self.pools[(program, i)].label();
        log::warn(&format!("restarting pool '{lang}': {reason}"));
        let stopping = self.begin_stop(program, i, true);
        // Not idle: a waiting call could start it a second time meanwhile.
        self.withdraw_pool(program, i);
        let message = format!("pool '{lang}' was restarted: {reason}");
        self.fail_pool_calls(program, i, &message, false);
        if !stopping {
            self.start_pool(program, i);
        }
    }
}
