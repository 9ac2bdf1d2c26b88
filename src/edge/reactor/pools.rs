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
use std::collections::VecDeque;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use mio::net::UnixStream;
use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};

use super::timers::{TimerKey, Timers};
use super::{Reactor, Source, Sources};
use crate::edge::cli::Settings;
use crate::edge::proc;
use crate::edge::rundir;
use crate::edge::shm;
use crate::protocol::mcp::Program;

mod index;
mod leases;
mod output;
mod probe;
mod routing;
mod set;
mod stop;
pub(super) use index::{BasePool, PoolTimer, Proc};
pub(super) use leases::{LeaseMode, Leases};
use routing::{Route, Routing};
use set::{lang_setting, replica_cap, PROBE_DELAY_MIN, RESTART_WINDOW, RETRY_FAILED_AFTER};
pub(super) use set::{PoolStatus, ProcState};
use stop::Stops;

/// A ping in flight on a starting process's socket.
struct Probe {
    stream: UnixStream,
    token: Token,
    written: usize,
    read: Vec<u8>,
}

/// A process's readiness probing: the probe in flight and the delay
/// growing between them (when the next one goes is its
/// [`PoolTimer::Probe`]).
struct Probing {
    probe: Option<Probe>,
    delay: Duration,
}

/// A process's starts: when it last started, its recent starts (the
/// crash-loop guard) and its restart breaker.
struct Life {
    started_at: Instant,
    starts: VecDeque<Instant>,
    /// The restart breaker is open: the process is `Failed` (it kept dying
    /// or could not start), and its calls fail at once until a call after
    /// `RETRY_FAILED_AFTER` starts it again; how many failed so.
    broken: Option<u64>,
}

/// A process's output pipe, the partial line read from it, and its last
/// lines (for error messages).
struct Output {
    pipe: Option<(Token, OwnedFd)>,
    buf: Vec<u8>,
    tail: VecDeque<String>,
}

/// One process of a pool: the primary or a replica (its fields are the
/// pool lifecycle's).
pub(in crate::edge::reactor) struct Pool {
    lang: String,
    /// The manifest pool this process serves (its own index for a primary).
    base: BasePool,
    /// 0 for the primary, else the replica's number (1, 2, ...).
    replica: usize,
    /// When a call last started or ended on it (idle replicas stop).
    last_used: Instant,
    /// A replica's own shared memory: its volume 0 and a reader of its
    /// volumes (a primary uses the run's, in `Runtime`).
    own_shm: Option<(Option<shm::Volume0>, shm::ShmReader)>,
    socket_path: PathBuf,
    spawn: proc::PoolSpawn,
    status: PoolStatus,
    pid: Option<i32>,
    /// A socket made ahead of the next call to this process (see
    /// `Reactor::end_turn`).
    spare: Option<Spare>,
    life: Life,
    probing: Probing,
    output: Output,
}

/// A socket made ahead of the next call to a pool process, not connected
/// yet, and already watched by the poller under `token`, which no source
/// names until a call takes it: the call then only connects and sends.
/// Until it is connected the socket reports a hang-up, which finds no
/// source and is ignored; closing it (a process or program that goes,
/// the exit) also ends its watch.
pub(in crate::edge::reactor) struct Spare {
    pub(in crate::edge::reactor) token: Token,
    pub(in crate::edge::reactor) socket: UnixStream,
}

/// The per-program run state.
pub(in crate::edge::reactor) struct Runtime {
    pools: Vec<Pool>,
    tmpdir: Option<PathBuf>,
    /// Holds the run directory's lock; dropped once the directory is gone.
    run_dir: Option<rundir::RunDir>,
    basename: String,
    volume0: Option<shm::Volume0>,
    shm_reader: shm::ShmReader,
    /// How the pools route results: see [`Routing`].
    routing: Routing,
    leases: Leases,
    /// Its program was replaced by a reload and its pools have been stopped.
    retired: bool,
}

/// The pools of every program served (one [`Runtime`] per program of the
/// catalog, retired ones included), and when eager pools start.
pub(in crate::edge::reactor) struct PoolSet {
    programs: Vec<Runtime>,
    /// Eager pools not yet spawned (see `Reactor::new`).
    pending: Option<Instant>,
    /// Stale shared memory of dead runs has been removed.
    swept: bool,
    /// Process groups being stopped.
    stops: Stops,
    /// What the last operations mean for other owners, for the reactor to
    /// apply ([`PoolNews`]).
    news: Vec<PoolNews>,
    /// The processes' deadlines, armed where their state changes
    /// ([`PoolTimer`]); a turn pops only what is due.
    timers: Timers<PoolTimer>,
    /// The settings the deadlines are computed from.
    limits: Limits,
    /// Programs whose processes changed status since `--pool-min` was
    /// last looked at (none without `--pool-min`).
    warm: Vec<usize>,
    /// Processes that became ready or gave their spare socket to a call
    /// since the last end of turn: the ones that may need a new spare.
    spareless: Vec<(usize, Proc)>,
}

/// The serving settings the pools' deadlines depend on.
pub(in crate::edge::reactor) struct Limits {
    start_timeout: Duration,
    replica_idle: Duration,
    /// `--pool-min` names some language.
    pool_min: bool,
}

impl Limits {
    pub(in crate::edge::reactor) fn of(settings: &Settings) -> Limits {
        Limits {
            start_timeout: settings.pool_start_timeout,
            replica_idle: settings.replica_idle,
            pool_min: !settings.pool_min.is_empty(),
        }
    }
}

/// What a pool operation means for the other owners, in the order it
/// happened: the reactor applies it once the operation returns
/// ([`Reactor::with_pools`]).
pub(in crate::edge::reactor) enum PoolNews {
    /// The calls running on process `proc` fail with `message`, and with
    /// `waiting` (the pool cannot be used now) those waiting for it too.
    Fail {
        program: usize,
        proc: Proc,
        message: String,
        waiting: bool,
    },
    /// A process became ready: the calls of `program` waiting may go.
    Ready(usize),
    /// Lines a process printed (`logger` names it), for every client that
    /// asked for log messages.
    Printed {
        program: usize,
        proc: Proc,
        logger: String,
        lines: Vec<String>,
    },
    /// A rate-limited diagnostic (`kind`, then the line).
    Say(String, String),
}

/// What a pool operation is handed: the poller's registry and the token
/// table (to watch output pipes and probes), the serving settings, and the
/// trace of the one call running on a process, if any (its output lines
/// name it).
pub(in crate::edge::reactor) struct Cx<'a> {
    registry: &'a Registry,
    sources: &'a mut Sources,
    settings: &'a Settings,
    traces: &'a dyn Fn(usize, Proc) -> Option<String>,
}

/// The most processes pool `lang` may run: `--pool-replicas`, else the
/// default ([`replica_cap`]).
fn cap_of(settings: &Settings, lang: &str) -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    replica_cap(&settings.pool_replicas, lang, cpus)
}

/// The processes pool `lang` keeps ready from the start: `--pool-min`,
/// else 1 (the primary).
fn min_of(settings: &Settings, lang: &str) -> usize {
    lang_setting(&settings.pool_min, lang).unwrap_or(1)
}

impl Reactor {
    /// Runs pool operation `op` with what it is handed ([`Cx`]), then
    /// applies its news in order. Not generic, so that applying the news
    /// is one copy for every operation (a result comes out through what
    /// the operation captures).
    pub(super) fn with_pools(&mut self, op: &mut dyn FnMut(&mut PoolSet, &mut Cx)) {
        let calls = &self.calls;
        let traces = |program: usize, proc: Proc| calls.running_trace(program, proc);
        let mut cx = Cx {
            registry: self.poll.registry(),
            sources: &mut self.sources,
            settings: &self.options,
            traces: &traces,
        };
        op(&mut self.pools, &mut cx);
        if self.pools.news.is_empty() {
            return;
        }
        let news = self.pools.take_news();
        for item in news {
            match item {
                PoolNews::Fail {
                    program,
                    proc,
                    message,
                    waiting,
                } => {
                    for id in self.calls.of_process(&self.pools, program, proc, waiting) {
                        self.fail_call(id, message.clone());
                    }
                }
                PoolNews::Ready(program) => self.dispatch_waiting(program),
                PoolNews::Say(kind, line) => self.calls.say(&kind, &line, None),
                PoolNews::Printed {
                    program,
                    proc,
                    logger,
                    lines,
                } => {
                    for line in lines {
                        let (stdio, http) = (self.stdio.as_ref(), self.http.as_mut());
                        let at = (program, proc);
                        for (client, note) in
                            super::pool_line_targets(stdio, http, &self.calls, at, &logger, &line)
                        {
                            self.deliver(&client, &note, false);
                        }
                    }
                }
            }
        }
    }
}

impl PoolSet {
    /// The route of a call of `command` of program `index` (`program`):
    /// where it may run and the lease it needs, as the program's routing
    /// and its pool's language decide ([`Routing::route`]).
    pub(super) fn route(&self, index: usize, program: &Program, command: usize) -> Route {
        let routing: Routing = self.programs[index].routing;
        let pool = BasePool(program.command(command).pool);
        routing.route(program, command, self.one_call_at_a_time(index, pool))
    }

    /// Takes the news of the operations so far ([`PoolNews`]).
    fn take_news(&mut self) -> Vec<PoolNews> {
        std::mem::take(&mut self.news)
    }

    /// The calls of process `i` fail (see [`PoolNews::Fail`]).
    fn fail_calls(&mut self, program: usize, i: Proc, message: &str, waiting: bool) {
        self.news.push(PoolNews::Fail {
            program,
            proc: i,
            message: message.to_string(),
            waiting,
        });
    }

    /// `waiting` calls of `program` wait for a process of manifest pool
    /// `base` while every one is busy: start replicas for those that the
    /// starting ones will not take, up to the pool's cap.
    pub(super) fn scale_up(&mut self, cx: &mut Cx, program: usize, base: BasePool, waiting: usize) {
        let cap = cap_of(cx.settings, self.lang(program, base));
        for _ in 0..self.replicas_wanted(program, base, waiting, cap) {
            let Some(slot) = self.replica_slot(program, base, cap, Instant::now()) else {
                break;
            };
            self[(program, slot)].life.starts.clear();
            self.start(cx, program, slot);
        }
    }

    /// Of the replicas `due` (in order) whose idle deadline came, stops
    /// those that have been idle for `--replica-idle`, except those that
    /// keep their pool at its `--pool-min` (they count as used now, so they
    /// are looked at again one idle period later).
    fn stop_idle_replicas(&mut self, cx: &mut Cx, program: usize, due: &[Proc], now: Instant) {
        let idle_ones = self.idle_among(program, due, now, cx.settings.replica_idle);
        let mut spare: Vec<Option<usize>> = Vec::new();
        for slot in idle_ones {
            let (base, _) = self.base_of(program, slot);
            if spare.len() <= base.0 {
                spare.resize(base.0 + 1, None);
            }
            let left = *spare[base.0].get_or_insert_with(|| {
                let min = min_of(cx.settings, self.lang(program, base));
                self.live(program, base).saturating_sub(min)
            });
            if left > 0 {
                spare[base.0] = Some(left - 1);
                self.stop(cx, program, slot);
            } else {
                self.touch(program, slot, now);
            }
        }
    }

    /// Starts, all at once, the replicas that bring each pool of `program`
    /// whose primary is starting or ready to its `--pool-min` processes; a
    /// pool left short (its other replicas failed a moment ago) is looked
    /// at again when the first of them may be retried.
    fn keep_warm(&mut self, cx: &mut Cx, program: usize) {
        if cx.settings.pool_min.is_empty() {
            return;
        }
        let bases: Vec<BasePool> = self
            .procs(program)
            .filter_map(|p| match self.base_of(program, p) {
                (base, true) => Some(base),
                _ => None,
            })
            .collect();
        for base in bases {
            let lang = self.lang(program, base).to_string();
            let (min, cap) = (min_of(cx.settings, &lang), cap_of(cx.settings, &lang));
            for _ in 0..self.replicas_to_keep(program, base, min, cap) {
                let Some(slot) = self.replica_slot(program, base, cap, Instant::now()) else {
                    let retry = self.first_retry(program, base);
                    self.timers.set_no_later(PoolTimer::Warm(program), retry);
                    break;
                };
                self[(program, slot)].life.starts.clear();
                self.start(cx, program, slot);
            }
        }
    }

    /// Starts the primaries of `program` not started yet, and the replicas
    /// of `--pool-min`.
    pub(super) fn start_all(&mut self, cx: &mut Cx, program: usize) {
        if self.first_sweep() {
            // Like the reference, remove shared memory left by dead runs.
            rundir::sweep_dead();
            shm::sweep_stale();
        }
        for pool in self.procs(program).collect::<Vec<_>>() {
            let p = &self[(program, pool)];
            if p.replica == 0 && matches!(p.status, PoolStatus::Idle) {
                self.start(cx, program, pool);
            }
        }
        self.keep_warm(cx, program);
    }

    /// Makes sure the primary of pool `base` of `program` is running or
    /// starting; returns the error message if it cannot be used now.
    pub(super) fn ensure(
        &mut self,
        cx: &mut Cx,
        program: usize,
        base: BasePool,
    ) -> Result<bool, String> {
        let pool = base.primary();
        if cx.settings.lazy_pools {
            // The command's other pools (cross-language calls) are needed too;
            // starting every pool of the program keeps that simple.
            self.start_all(cx, program);
        }
        match &self[(program, pool)].status {
            PoolStatus::Ready => Ok(true),
            PoolStatus::Starting => Ok(false),
            PoolStatus::Idle => {
                self.start(cx, program, pool);
                Ok(false)
            }
            PoolStatus::Failed { message, at } => {
                if at.elapsed() >= RETRY_FAILED_AFTER {
                    self[(program, pool)].life.starts.clear();
                    self.start(cx, program, pool);
                    match &self[(program, pool)].status {
                        PoolStatus::Failed { message, .. } => Err(message.clone()),
                        _ => Ok(false),
                    }
                } else {
                    let message = message.clone();
                    let pool = &mut self[(program, pool)];
                    if let Some(failed) = pool.life.broken.as_mut() {
                        *failed += 1;
                    }
                    Err(message)
                }
            }
        }
    }

    /// Makes sure the primaries of `bases` (a call's own pool first, then
    /// the pools its command calls into) are running or starting; true
    /// when all of them are ready. A ready replica of the call's own pool
    /// serves while its primary cannot start.
    pub(super) fn ensure_all(
        &mut self,
        cx: &mut Cx,
        program: usize,
        bases: &[BasePool],
    ) -> Result<bool, String> {
        let own = bases[0];
        let replica_ready = bases.len() == 1
            && self
                .instances(program, own)
                .any(|slot| slot != own.primary() && self.ready(program, slot));
        let mut all_ready = true;
        for &base in bases {
            match self.ensure(cx, program, base) {
                Ok(ready) => all_ready &= ready,
                Err(_) if replica_ready => {}
                Err(message) => return Err(message),
            }
        }
        Ok(all_ready || replica_ready)
    }

    /// Spawns process `i` of `program` (once its old group is gone, if it
    /// is being stopped) and watches its output.
    fn start(&mut self, cx: &mut Cx, program: usize, i: Proc) {
        if self.stops.defer_start(program, i) {
            // Its old process is still going: it starts once that is gone.
            self[(program, i)].pid = None;
            self.set_status(program, i, PoolStatus::Starting);
            return;
        }
        let now = Instant::now();
        let pool = &mut self[(program, i)];
        pool.life.record_start(now);
        pool.probing.delay = PROBE_DELAY_MIN;
        pool.output.buf.clear();
        // Error messages quote what this run of the pool printed.
        pool.output.tail.clear();
        match proc::spawn_pool(&pool.spawn) {
            Ok(spawned) => {
                if log::enabled(crate::protocol::log::Level::Debug) {
                    log::debug(&format!(
                        "pool '{}' started (pid {})",
                        pool.label(),
                        spawned.pid
                    ));
                }
                pool.pid = Some(spawned.pid);
                let fd = spawned.output;
                let raw = fd.as_raw_fd();
                let token = cx.sources.add(Source::PoolOutput { program, pool: i });
                if let Err(e) = cx
                    .registry
                    .register(&mut SourceFd(&raw), token, Interest::READABLE)
                {
                    log::error(&format!("cannot watch the output of a pool: {e}"));
                }
                pool.output.pipe = Some((token, fd));
                self.set_status(program, i, PoolStatus::Starting);
                // A pool crashing right away leaves its old socket file; the
                // new process unlinks it before binding, so probes simply
                // fail until then.
                let probe = PoolTimer::Probe(program, i);
                self.timers.set(probe, Some(now + PROBE_DELAY_MIN));
            }
            Err(e) => {
                let message = format!("cannot start pool '{}': {e}", pool.label());
                log::error(&message);
                let status = PoolStatus::Failed {
                    message: message.clone(),
                    at: now,
                };
                self.set_status(program, i, status);
                self.open_breaker(program, i, "could not be started");
                self.fail_calls(program, i, &message, true);
            }
        }
    }

    /// The pools' deadlines due at `now` (stops, the eager start, idle
    /// replicas, `--pool-min`, probes and start-up timeouts), then
    /// `--pool-min` for the programs whose processes changed status. Only
    /// what is due is looked at, never every process.
    pub(super) fn timers(&mut self, cx: &mut Cx, now: Instant) {
        if self.stops.next_deadline().is_some_and(|at| at <= now) {
            self.advance_stops(cx, now);
        }
        if self.pending.is_some_and(|at| at <= now) {
            self.pending = None;
            for program in 0..self.len() {
                self.start_all(cx, program);
            }
        }
        let mut due = Vec::new();
        while let Some(key) = self.timers.pop_due(now) {
            due.push(key);
        }
        // In the order they are handled (their packed keys' order); few
        // are due at once, and an insertion sort adds far less to the
        // binary than the library's.
        for n in 1..due.len() {
            let mut j = n;
            while j > 0 && due[j - 1].pack() > due[j].pack() {
                due.swap(j - 1, j);
                j -= 1;
            }
        }
        let mut idle: Vec<Proc> = Vec::new();
        for (n, key) in due.iter().enumerate() {
            match *key {
                PoolTimer::Idle(program, i) => {
                    idle.push(i);
                    // The program's idle replicas are looked at together.
                    if !matches!(due.get(n + 1), Some(PoolTimer::Idle(p, _)) if *p == program) {
                        self.stop_idle_replicas(cx, program, &idle, now);
                        idle.clear();
                    }
                }
                PoolTimer::Warm(program) => self.keep_warm(cx, program),
                PoolTimer::Probe(program, i) => self.start_probe(cx, program, i),
                PoolTimer::StartTimeout(program, i) => self.start_timed_out(cx, program, i, now),
            }
        }
        while let Some(program) = self.warm.pop() {
            self.keep_warm(cx, program);
        }
    }

    /// Process `i`'s start-up deadline came at `now`: if it is still
    /// starting, it is stopped and failed.
    fn start_timed_out(&mut self, cx: &mut Cx, program: usize, i: Proc, now: Instant) {
        let pool = &self[(program, i)];
        let limit = cx.settings.pool_start_timeout;
        // Starting without a process: its old one is being stopped.
        if !matches!(pool.status, PoolStatus::Starting) || pool.pid.is_none() {
            return;
        }
        if now < pool.life.started_at + limit {
            return self.rearm(program, i);
        }
        let message = format!(
            "pool '{}' did not become ready within {} s{}",
            pool.label(),
            crate::format::decimal::seconds(limit),
            self.rt(program).tail_note(i)
        );
        log::error(&message);
        self.stop(cx, program, i);
        let status = PoolStatus::Failed {
            message: message.clone(),
            at: now,
        };
        self.set_status(program, i, status);
        self.open_breaker(program, i, "did not become ready");
        self.fail_calls(program, i, &message, true);
    }

    /// Reaps exited children, recovers the pools among them and moves the
    /// stops along.
    pub(super) fn check_children(&mut self, cx: &mut Cx) {
        self.reap(cx);
        self.advance_stops(cx, Instant::now());
    }

    /// Moves the stops of process groups along at `now`, starting again the
    /// processes whose old group is gone.
    fn advance_stops(&mut self, cx: &mut Cx, now: Instant) {
        for (program, slot) in self.stops.advance(now) {
            let pool = &self[(program, slot)];
            if matches!(pool.status, PoolStatus::Starting) && pool.pid.is_none() {
                self.start(cx, program, slot);
            }
        }
    }

    fn reap(&mut self, cx: &mut Cx) {
        for (pid, status) in proc::reap_any() {
            let found = self.find_pid(pid);
            // Otherwise: an orphaned worker re-parented to us, now reaped.
            let Some((program, i)) = found else { continue };
            // Collect what the pool printed last, for the message.
            self.read_output(cx, program, i);
            self[(program, i)].pid = None;
            self.rearm(program, i);
            // Its workers may outlive it: end the whole group.
            let _ = proc::kill_group(pid, libc::SIGKILL);
            self.end_probe(cx, program, i);
            self.close_output(cx, program, i);
            let lang = self[(program, i)].label();
            let starting = matches!(self[(program, i)].status, PoolStatus::Starting);
            log::warn(&format!("pool '{lang}' (pid {pid}) {status}"));
            let message = if starting {
                format!(
                    "pool '{lang}' {status} during start-up{}",
                    self.rt(program).tail_note(i)
                )
            } else {
                format!("pool '{lang}' died ({status}) while the call was running; it is being restarted")
            };
            let now = Instant::now();
            let (recent, looping) = self[(program, i)].life.crash_loop(now);
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
                        self.rt(program).tail_note(i)
                    )
                };
                let status = PoolStatus::Failed {
                    message: message.clone(),
                    at: now,
                };
                self.set_status(program, i, status);
                let why = if starting {
                    "died during start-up".to_string()
                } else {
                    format!(
                        "keeps dying ({recent} starts within {} s)",
                        RESTART_WINDOW.as_secs()
                    )
                };
                self.open_breaker(program, i, &why);
                self.fail_calls(program, i, &message, true);
            } else {
                self.withdraw(program, i);
                self.fail_calls(program, i, &message, false);
                self.start(cx, program, i);
            }
        }
    }

    /// Pool process `i` is `Failed` and not restarted for now: says so on
    /// stderr (rate-limited), once until it is ready again.
    fn open_breaker(&mut self, program: usize, i: Proc, why: &str) {
        let pool = &mut self[(program, i)];
        if pool.life.broken.is_some() {
            return;
        }
        pool.life.broken = Some(0);
        let lang = pool.label();
        self.news.push(PoolNews::Say(
            format!("restart breaker open: {lang}"),
            format!(
                "pool '{lang}' {why}: restart breaker open, not restarting it; its calls fail at once until one comes {} s from now or later and starts it again",
                RETRY_FAILED_AFTER.as_secs()
            ),
        ));
    }

    /// Stops pool `i`: its probe and output end now, and its process group
    /// is stopped in the background (`stop`: TERM, grace, KILL, reaped on
    /// SIGCHLD); a restart waiting for it is forgotten.
    pub(super) fn stop(&mut self, cx: &mut Cx, program: usize, i: Proc) {
        self.stops.cancel_restart(program, i);
        let _ = self.begin_stop(cx, program, i, false);
        self.set_status(program, i, PoolStatus::Idle);
    }

    /// Ends pool `i`'s probe and output, and begins stopping its process
    /// group, if it has one (returns whether); with `restart`, the slot
    /// starts again once the group is gone.
    fn begin_stop(&mut self, cx: &mut Cx, program: usize, i: Proc, restart: bool) -> bool {
        self.end_probe(cx, program, i);
        self.close_output(cx, program, i);
        // Its spare socket is closed (and so no longer watched); a process
        // that becomes ready again gets a new one.
        self[(program, i)].spare = None;
        let grace = cx.settings.pool_stop_grace;
        let label = self[(program, i)].label();
        let Some(pid) = self[(program, i)].pid.take() else {
            return false;
        };
        self.rearm(program, i);
        self.stops
            .begin(pid, label, grace, Instant::now(), (program, i), restart);
        true
    }

    /// At exit: begins stopping every pool process (see [`PoolSet::settle_stops`]).
    pub(super) fn stop_all(&mut self, cx: &mut Cx) {
        for program in 0..self.len() {
            for i in self.procs(program).collect::<Vec<_>>() {
                self.stops.cancel_restart(program, i);
                let _ = self.begin_stop(cx, program, i, false);
            }
        }
    }

    /// At exit: reaps what has exited, moves the stops along, and says when
    /// the next one is due (`None` once every group being stopped is gone).
    pub(super) fn settle_stops(&mut self) -> Option<Instant> {
        proc::reap_any();
        let _ = self.stops.advance(Instant::now());
        self.stops.next_deadline()
    }

    /// Treats a running pool as starting again: calls wait until it answers
    /// a ping (or the start-up deadline passes).
    pub(super) fn reprobe(&mut self, program: usize, i: Proc) {
        let pool = &mut self[(program, i)];
        pool.life.started_at = Instant::now();
        pool.probing.delay = PROBE_DELAY_MIN;
        self.set_status(program, i, PoolStatus::Starting);
        self.schedule_probe(program, i);
    }

    /// Restarts a pool whose worker is stuck (a call timed out on it).
    /// Takes process `i` out of the ready set ahead of its restart, before
    /// its calls fail: failing them frees their leases, and a waiting call
    /// must not be handed a process that is dead or about to be stopped (a
    /// dead Python pool's workers may still hold its socket for a moment, so
    /// such a call would be sent and then lost). It counts as starting, so
    /// no replica is started in its place; `start` probes the new process as
    /// usual.
    pub(super) fn withdraw(&mut self, program: usize, i: Proc) {
        self.set_status(program, i, PoolStatus::Starting);
    }

    /// Restarts pool `i`: its calls fail with `reason`, and the slot starts
    /// again once its old process group is gone (never two processes on
    /// one socket and shared memory).
    pub(super) fn restart(&mut self, cx: &mut Cx, program: usize, i: Proc, reason: &str) {
        let lang = self[(program, i)].label();
        log::warn(&format!("restarting pool '{lang}': {reason}"));
        let stopping = self.begin_stop(cx, program, i, true);
        // Not idle: a waiting call could start it a second time meanwhile.
        self.withdraw(program, i);
        let message = format!("pool '{lang}' was restarted: {reason}");
        self.fail_calls(program, i, &message, false);
        if !stopping {
            self.start(cx, program, i);
        }
    }
}
