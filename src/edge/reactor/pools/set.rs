//! The pools of the served programs ([`PoolSet`]) and their state: for each
//! program a [`Runtime`] (run directory, shared memory, result routing,
//! leases) and its processes ([`Pool`]), named by typed indices
//! ([`BasePool`], [`Proc`]). The reactor and the calls see the set through
//! a small API (readiness, labels, instances, leases, spares); the pool
//! lifecycle (`pools`, `probe`, `output`) reaches inside.

use crate::edge::log;
use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::ops::{Index, IndexMut};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::index::{BasePool, Proc};
use super::leases::{LeaseMode, Leases};
use super::routing::Routing;
use super::stop::Stops;
use super::{Life, Limits, Output, Pool, PoolSet, PoolTimer, Probing, Runtime, Spare};
use crate::edge::proc;
use crate::edge::reactor::timers::Timers;
use crate::edge::rundir;
use crate::edge::shm;
use crate::protocol::mcp::Program;

/// First and largest delay between readiness probes. Python pools take tens
/// of milliseconds to start; probing every few milliseconds notices them
/// promptly without burning the CPU they need to start.
pub(super) const PROBE_DELAY_MIN: Duration = Duration::from_millis(1);
pub(super) const PROBE_DELAY_MAX: Duration = Duration::from_millis(8);
/// Crash-loop guard: more starts than this within the window stop restarts.
const MAX_RESTARTS: usize = 5;
pub(super) const RESTART_WINDOW: Duration = Duration::from_secs(60);
/// After giving up on a pool, a call may try to start it again after this.
pub(super) const RETRY_FAILED_AFTER: Duration = Duration::from_secs(10);

#[derive(Debug)]
pub(in crate::edge::reactor) enum PoolStatus {
    /// Not started yet (lazy pools).
    Idle,
    /// Spawned; probing until it answers a ping.
    Starting,
    Ready,
    /// Not running and not being restarted (crash loop or spawn failure).
    Failed {
        message: String,
        at: Instant,
    },
}

impl Life {
    /// Records a start at `now`, forgetting starts older than the window.
    pub(super) fn record_start(&mut self, now: Instant) {
        while self
            .starts
            .front()
            .is_some_and(|t| now.duration_since(*t) > RESTART_WINDOW)
        {
            self.starts.pop_front();
        }
        self.starts.push_back(now);
        self.started_at = now;
    }

    /// How many times the process started within the window before `now`,
    /// and whether that is a crash loop (it is then not restarted).
    pub(super) fn crash_loop(&self, now: Instant) -> (usize, bool) {
        let recent = self
            .starts
            .iter()
            .filter(|t| now.duration_since(**t) <= RESTART_WINDOW)
            .count();
        (recent, recent >= MAX_RESTARTS)
    }
}

impl Pool {
    /// A process of manifest pool `base` (`replica` 0 is the primary), not
    /// started yet.
    fn new(
        lang: &str,
        base: BasePool,
        replica: usize,
        own_shm: Option<(Option<shm::Volume0>, shm::ShmReader)>,
        socket_path: PathBuf,
        spawn: proc::PoolSpawn,
    ) -> Pool {
        Pool {
            lang: lang.to_owned(),
            base,
            replica,
            last_used: Instant::now(),
            own_shm,
            socket_path,
            spawn,
            status: PoolStatus::Idle,
            pid: None,
            spare: None,
            life: Life {
                started_at: Instant::now(),
                starts: VecDeque::new(),
                broken: None,
            },
            probing: Probing {
                probe: None,
                delay: PROBE_DELAY_MIN,
            },
            output: Output {
                pipe: None,
                buf: Vec::new(),
                tail: VecDeque::new(),
            },
        }
    }

    /// How messages name this process: `py`, or `py#2` for a replica.
    pub(super) fn label(&self) -> String {
        if self.replica == 0 {
            self.lang.clone()
        } else {
            format!("{}#{}", self.lang, self.replica)
        }
    }
}

/// Languages whose pools get replicas by default. Python and R pools run one
/// local call at a time. C++ (and Rust, built on the same runtime loop) pools
/// run calls on threads, but a thread frees its last shared-memory result
/// when it starts its next call, and which thread takes a connection is not
/// ours to choose: a call whose result may come back that way holds the
/// whole process (see `leases`), so such calls overlap only across
/// processes. Calls with a result certain to come back inline still share
/// one threaded process, and replicas start only when calls wait.
fn replicated_by_default(lang: &str) -> bool {
    crate::format::lang::find(lang).is_some_and(|l| l.replicated)
}

/// Languages whose pool processes run one call at a time (Python, R; see
/// `format::lang`): a second connection only waits inside the process, so
/// each call takes its process to itself (an exclusive lease), and the
/// calls beyond the ready processes count as demand for replicas.
pub(super) fn one_call_at_a_time(lang: &str) -> bool {
    crate::format::lang::find(lang).is_some_and(|l| l.one_at_a_time)
}

/// The fewest processes a pool may scale up to by default (sleeping or
/// waiting functions gain beyond the number of CPUs).
const MIN_DEFAULT_REPLICAS: usize = 8;

/// The default cap on the processes of a `lang` pool on a machine with
/// `cpus` CPUs: max(CPUs, 8) for the languages above, else 1.
pub(super) fn default_replica_cap(lang: &str, cpus: usize) -> usize {
    if replicated_by_default(lang) {
        cpus.max(MIN_DEFAULT_REPLICAS)
    } else {
        1
    }
}

/// The last `LANG=N` entry of a per-language option (`--pool-replicas`,
/// `--pool-min`) naming pool language `lang`, compared by canonical name
/// (`format::lang`: `c++=4` names a `cpp` pool).
pub(super) fn lang_setting(asked: &[(String, usize)], lang: &str) -> Option<usize> {
    let want = crate::format::lang::canonical(lang);
    asked
        .iter()
        .rev()
        .find(|(l, _)| crate::format::lang::canonical(l) == want)
        .map(|(_, n)| *n)
}

/// The most processes pool `lang` may run on `cpus` CPUs: the last
/// `--pool-replicas` entry (`asked`) naming its language, else the default.
pub(super) fn replica_cap(asked: &[(String, usize)], lang: &str, cpus: usize) -> usize {
    lang_setting(asked, lang).unwrap_or_else(|| default_replica_cap(lang, cpus))
}

impl Runtime {
    pub(in crate::edge::reactor) fn new(program: &Program) -> io::Result<Runtime> {
        let loaded = &program.loaded;
        if loaded.manifest.pools.is_empty() {
            return Ok(Runtime {
                pools: Vec::new(),
                tmpdir: None,
                run_dir: None,
                basename: String::new(),
                volume0: None,
                shm_reader: shm::ShmReader::new("", Path::new("")),
                routing: Routing::new(None, false),
                leases: Leases::new(0),
                retired: false,
            });
        }
        let basename = shm::new_basename();
        let run_dir = rundir::RunDir::create(&basename)?;
        let tmpdir = run_dir.path().to_path_buf();
        // Pools expect volume 0 to exist; without it the processes inside one
        // pool race to create it.
        let volume0 = match shm::Volume0::create(&basename, &tmpdir) {
            Ok(v) => Some(v),
            Err(e) => {
                log::warn(&format!(
                    "warning: cannot create shared memory volume 0: {e}"
                ));
                None
            }
        };
        let self_exe = std::env::current_exe().unwrap_or_default();
        let manifest = &loaded.manifest;
        let mut pools = Vec::new();
        for pool in &manifest.pools {
            let mut program: Vec<OsString> = pool.exec.iter().map(OsString::from).collect();
            // The pool script is relative to the manifest's directory; the
            // interpreter before it is looked up on PATH.
            if let Some(last) = program.last_mut() {
                let p = Path::new(last.as_os_str());
                if p.is_relative() {
                    *last = loaded.dir.join(p).into_os_string();
                }
            }
            let socket_path = tmpdir.join(&pool.socket);
            let mut spawn = proc::PoolSpawn::for_pool(program, &socket_path, &tmpdir, &basename);
            spawn.env = vec![
                ("MORLOC_POOL_HASH".into(), pool.pool_hash.clone().into()),
                (
                    "MORLOC_NEXUS_PATH".into(),
                    self_exe.clone().into_os_string(),
                ),
                (
                    "MORLOC_MANIFEST_PATH".into(),
                    loaded.path.clone().into_os_string(),
                ),
                ("MORLOC_QUIET".into(), "1".into()),
                // Whatever a pool leaves in its temporary directory (R makes
                // an `Rtmp*` per session) goes with the run directory, even
                // when the pool or the server is killed.
                ("TMPDIR".into(), run_dir.pool_tmp().into_os_string()),
            ];
            // The routing settings of the manifest, exported as the reference
            // does: results above the inline threshold come back through
            // shared memory (RPTR) or a file (FILE), never as one huge inline
            // packet, which a real pool's non-blocking send cannot deliver.
            if let Some(size) = manifest.inline_size {
                spawn
                    .env
                    .push(("MORLOC_INLINE_SIZE".into(), size.to_string().into()));
            }
            if manifest.no_shm {
                spawn.env.push(("MORLOC_NO_SHM".into(), "1".into()));
            }
            // Result files go inside the run directory so they are cleaned up.
            let file_dir = manifest
                .tmpdir
                .clone()
                .map(PathBuf::from)
                .unwrap_or_else(|| tmpdir.clone());
            spawn
                .env
                .push(("MORLOC_TMPDIR".into(), file_dir.into_os_string()));
            let base = BasePool(pools.len());
            pools.push(Pool::new(&pool.lang, base, 0, None, socket_path, spawn));
        }
        let shm_reader = shm::ShmReader::new(&basename, &tmpdir);
        let leases = Leases::new(pools.len());
        Ok(Runtime {
            pools,
            tmpdir: Some(tmpdir),
            run_dir: Some(run_dir),
            basename,
            volume0,
            shm_reader,
            routing: Routing::new(manifest.inline_size, manifest.no_shm),
            leases,
            retired: false,
        })
    }

    /// The deadlines that follow from process `slot`'s state: its start-up
    /// timeout while it starts (with a process: without one, its old one is
    /// being stopped), and when it is idle long enough to stop while it is
    /// a ready replica that no call holds.
    fn due_at(&self, slot: Proc, limits: &Limits) -> (Option<Instant>, Option<Instant>) {
        let pool = &self.pools[slot.0];
        let starting = matches!(pool.status, PoolStatus::Starting) && pool.pid.is_some();
        let start = starting.then(|| pool.life.started_at + limits.start_timeout);
        let idle = pool.replica > 0
            && matches!(pool.status, PoolStatus::Ready)
            && self.leases.busy(slot) == 0;
        (start, idle.then(|| pool.last_used + limits.replica_idle))
    }

    /// The starting or ready processes of manifest pool `base`.
    fn live(&self, base: BasePool) -> usize {
        self.instances(base)
            .filter(|&s| {
                matches!(
                    self.pools[s.0].status,
                    PoolStatus::Starting | PoolStatus::Ready
                )
            })
            .count()
    }

    /// The processes (slots) serving manifest pool `base`, primary first.
    pub(super) fn instances(&self, base: BasePool) -> impl Iterator<Item = Proc> + '_ {
        self.pools
            .iter()
            .enumerate()
            .filter(move |(_, p)| p.base == base)
            .map(|(slot, _)| Proc(slot))
    }

    /// Whether a process of `base` other than `except` is running or starting.
    fn other_instance_alive(&self, base: BasePool, except: Proc) -> bool {
        self.instances(base).any(|slot| {
            slot != except
                && matches!(
                    self.pools[slot.0].status,
                    PoolStatus::Starting | PoolStatus::Ready
                )
        })
    }

    /// Adds a slot for a new replica of manifest pool `base` (not started):
    /// the primary's command, arguments and environment, on its own socket.
    fn add_replica(&mut self, base: BasePool) -> Proc {
        let number = self.instances(base).count();
        let primary = &self.pools[base.0];
        let mut name = primary
            .socket_path
            .file_name()
            .unwrap_or_default()
            .to_owned();
        name.push(format!(".r{number}"));
        let socket_path = primary.socket_path.with_file_name(name);
        let mut spawn = proc::PoolSpawn {
            program: primary.spawn.program.clone(),
            args: primary.spawn.args.clone(),
            env: primary.spawn.env.clone(),
        };
        // Its own shared-memory basename, under the run's (so the run's
        // clean-up removes its volumes too): libmorloc's allocator is not
        // safe between processes that allocate at the same time (a free
        // block is found under the volume's lock, but claimed after it is
        // released), and replicas run calls at the same time (measured: a
        // replica read another's zeroed argument). Replicas run only calls
        // that stay in their own pool, so no other pool needs their memory.
        let basename = format!("{}_r{number}", self.basename);
        if let Some(slot) = spawn.args.get_mut(0) {
            *slot = socket_path.clone().into_os_string();
        }
        if let Some(slot) = spawn.args.get_mut(2) {
            *slot = basename.clone().into();
        }
        let fallback = self.tmpdir.clone().unwrap_or_default();
        let volume0 = match shm::Volume0::create(&basename, &fallback) {
            Ok(v) => Some(v),
            Err(e) => {
                log::warn(&format!(
                    "warning: cannot create shared memory volume 0 of a replica: {e}"
                ));
                None
            }
        };
        let own_shm = Some((volume0, shm::ShmReader::new(&basename, &fallback)));
        let pool = Pool::new(&primary.lang, base, number, own_shm, socket_path, spawn);
        self.pools.push(pool);
        self.leases.grow(self.pools.len());
        Proc(self.pools.len() - 1)
    }

    /// The reader of the volumes of process `slot`'s results.
    fn reader(&mut self, slot: Proc) -> &mut shm::ShmReader {
        match self.pools.get_mut(slot.0).and_then(|p| p.own_shm.as_mut()) {
            Some((_, reader)) => reader,
            None => &mut self.shm_reader,
        }
    }

    /// Removes the run directory and every shared-memory file of the run
    /// (the replicas' basenames extend the run's, so they go too).
    pub(in crate::edge::reactor) fn remove_files(&mut self) {
        self.volume0 = None;
        self.shm_reader.clear();
        for pool in &mut self.pools {
            if let Some((volume0, reader)) = pool.own_shm.as_mut() {
                *volume0 = None;
                reader.clear();
            }
        }
        if let Some(tmpdir) = self.tmpdir.take() {
            if !self.basename.is_empty() {
                let _ = shm::unlink_all(&self.basename, &tmpdir);
            }
            let _ = proc::remove_tmpdir(&tmpdir);
        }
        // The lock goes last, so no other server sweeps the directory while
        // it is being removed.
        self.run_dir = None;
    }

    pub(super) fn tail_note(&self, pool: Proc) -> String {
        let tail = &self.pools[pool.0].output.tail;
        if tail.is_empty() {
            return String::new();
        }
        let lines: Vec<&str> = tail.iter().map(String::as_str).collect();
        format!("; its last output:\n{}", lines.join("\n"))
    }
}

/// What the scheduler needs to know of one process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::edge::reactor) struct ProcState {
    pub(in crate::edge::reactor) base: BasePool,
    pub(in crate::edge::reactor) ready: bool,
}

impl PoolSet {
    pub(in crate::edge::reactor) fn new(programs: Vec<Runtime>, limits: Limits) -> PoolSet {
        PoolSet {
            programs,
            pending: None,
            swept: false,
            stops: Stops::default(),
            news: Vec::new(),
            timers: Timers::default(),
            limits,
            warm: Vec::new(),
            spareless: Vec::new(),
        }
    }

    /// Sets process `i`'s status, and re-arms the deadlines that follow
    /// from it (every status change goes through here, so no deadline is
    /// forgotten: `check_timers` compares them with a full scan in debug
    /// builds).
    pub(super) fn set_status(&mut self, program: usize, i: Proc, status: PoolStatus) {
        let ready = matches!(status, PoolStatus::Ready);
        self[(program, i)].status = status;
        self.rearm(program, i);
        if ready {
            self.spareless.push((program, i));
        }
        if self.limits.pool_min && !self.warm.contains(&program) {
            self.warm.push(program);
        }
    }

    /// Re-arms process `i`'s start-up timeout and idle deadline from its
    /// state ([`Runtime::due_at`]); call it when its status, process,
    /// start, last use or leases change.
    pub(super) fn rearm(&mut self, program: usize, i: Proc) {
        let (start, idle) = self.programs[program].due_at(i, &self.limits);
        self.timers.set(PoolTimer::StartTimeout(program, i), start);
        self.timers.set(PoolTimer::Idle(program, i), idle);
    }

    /// The pools' next deadline: a process's, a stop's, or the eager start.
    pub(in crate::edge::reactor) fn next_deadline(&mut self) -> Option<Instant> {
        [self.timers.next(), self.stops.next_deadline(), self.pending]
            .into_iter()
            .flatten()
            .min()
    }

    /// When a replica of manifest pool `base` of `program` that failed may
    /// first be started again.
    pub(super) fn first_retry(&self, program: usize, base: BasePool) -> Option<Instant> {
        let rt = &self.programs[program];
        rt.instances(base)
            .filter_map(|s| match &rt.pools[s.0].status {
                PoolStatus::Failed { at, .. } if rt.pools[s.0].replica > 0 => {
                    Some(*at + RETRY_FAILED_AFTER)
                }
                _ => None,
            })
            .min()
    }

    /// The deadlines a full scan of every process finds that are not
    /// armed (a state change that forgot to arm one would leave a pool
    /// stuck); debug builds check that there are none after each turn.
    #[cfg(any(test, debug_assertions))]
    pub(in crate::edge::reactor) fn unarmed(
        &self,
        settings: &crate::edge::cli::Settings,
    ) -> Vec<String> {
        let mut missing = Vec::new();
        for (program, rt) in self.programs.iter().enumerate() {
            for (slot, pool) in rt.pools.iter().enumerate() {
                let i = Proc(slot);
                let (start, idle) = rt.due_at(i, &self.limits);
                let armed = |key| self.timers.get(&key);
                let what = pool.label();
                if start.is_some() && armed(PoolTimer::StartTimeout(program, i)) != start {
                    missing.push(format!("start-up timeout of {what}"));
                }
                if idle.is_some() && armed(PoolTimer::Idle(program, i)) != idle {
                    missing.push(format!("idle deadline of {what}"));
                }
                let starting = matches!(pool.status, PoolStatus::Starting) && pool.pid.is_some();
                if starting
                    && pool.probing.probe.is_none()
                    && armed(PoolTimer::Probe(program, i)).is_none()
                {
                    missing.push(format!("probe of {what}"));
                }
            }
            if settings.pool_min.is_empty() || rt.retired {
                continue;
            }
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            for (slot, pool) in rt.pools.iter().enumerate() {
                if pool.replica != 0 {
                    continue;
                }
                let base = BasePool(slot);
                let min = lang_setting(&settings.pool_min, &pool.lang).unwrap_or(1);
                let cap = replica_cap(&settings.pool_replicas, &pool.lang, cpus);
                if self.replicas_to_keep(program, base, min, cap) == 0 {
                    continue;
                }
                let retry = self.first_retry(program, base);
                let armed = self.timers.get(&PoolTimer::Warm(program));
                if retry.is_none() || armed.is_none_or(|a| Some(a) > retry) {
                    missing.push(format!("--pool-min retry of {}", pool.lang));
                }
            }
        }
        missing
    }

    /// Adds the runtime of a program just added to the catalog.
    pub(in crate::edge::reactor) fn push(&mut self, runtime: Runtime) {
        self.programs.push(runtime);
    }

    /// How many programs have pools here (retired ones included).
    pub(in crate::edge::reactor) fn len(&self) -> usize {
        self.programs.len()
    }

    /// When eager pools start, if they have not yet.
    pub(in crate::edge::reactor) fn pending(&self) -> Option<Instant> {
        self.pending
    }

    pub(in crate::edge::reactor) fn set_pending(&mut self, at: Option<Instant>) {
        self.pending = at;
    }

    /// Eager pools not started yet start at `now` at the latest.
    pub(in crate::edge::reactor) fn hurry_pending(&mut self, now: Instant) {
        self.pending = self.pending.map(|at| at.min(now));
    }

    /// True the first time only: stale files of dead runs are to be swept.
    pub(super) fn first_sweep(&mut self) -> bool {
        !std::mem::replace(&mut self.swept, true)
    }

    pub(super) fn rt(&self, program: usize) -> &Runtime {
        &self.programs[program]
    }

    /// The processes of `program`, primaries first.
    pub(in crate::edge::reactor) fn procs(&self, program: usize) -> impl Iterator<Item = Proc> {
        (0..self.programs[program].pools.len()).map(Proc)
    }

    /// Whether process `proc` of `program` answers pings.
    pub(in crate::edge::reactor) fn ready(&self, program: usize, proc: Proc) -> bool {
        self.programs[program]
            .pools
            .get(proc.0)
            .is_some_and(|p| matches!(p.status, PoolStatus::Ready))
    }

    /// Whether process `proc` of `program` is on its way out (exiting or a
    /// zombie, not reaped yet): its SIGCHLD will come (`proc::is_exiting`).
    pub(in crate::edge::reactor) fn exiting(&self, program: usize, proc: Proc) -> bool {
        self.programs[program]
            .pools
            .get(proc.0)
            .and_then(|p| p.pid)
            .is_some_and(proc::is_exiting)
    }

    /// How messages name a process: `py`, or `py#2` for a replica.
    pub(in crate::edge::reactor) fn label(&self, program: usize, proc: Proc) -> String {
        self.programs[program].pools[proc.0].label()
    }

    /// The language of manifest pool `base`.
    pub(in crate::edge::reactor) fn lang(&self, program: usize, base: BasePool) -> &str {
        &self.programs[program].pools[base.0].lang
    }

    /// The manifest pool process `proc` serves, and whether it is its primary.
    /// Whether the processes of pool `base` run one call at a time.
    pub(in crate::edge::reactor) fn one_call_at_a_time(
        &self,
        program: usize,
        base: BasePool,
    ) -> bool {
        one_call_at_a_time(self.lang(program, base))
    }

    pub(in crate::edge::reactor) fn base_of(&self, program: usize, proc: Proc) -> (BasePool, bool) {
        let pool = &self.programs[program].pools[proc.0];
        (pool.base, pool.replica == 0)
    }

    /// The processes serving manifest pool `base`, primary first.
    pub(in crate::edge::reactor) fn instances(
        &self,
        program: usize,
        base: BasePool,
    ) -> impl Iterator<Item = Proc> + '_ {
        self.programs[program].instances(base)
    }

    /// Whether a process of `base` other than `except` is running or starting.
    pub(in crate::edge::reactor) fn other_alive(
        &self,
        program: usize,
        base: BasePool,
        except: Proc,
    ) -> bool {
        self.programs[program].other_instance_alive(base, except)
    }

    /// What the scheduler needs of `program`'s processes, by [`Proc`].
    pub(in crate::edge::reactor) fn states(&self, program: usize) -> Vec<ProcState> {
        self.programs[program]
            .pools
            .iter()
            .map(|p| ProcState {
                base: p.base,
                ready: matches!(p.status, PoolStatus::Ready),
            })
            .collect()
    }

    pub(in crate::edge::reactor) fn leases_mut(&mut self, program: usize) -> &mut Leases {
        &mut self.programs[program].leases
    }

    /// A call started or ended on process `proc` (idle replicas stop).
    pub(in crate::edge::reactor) fn touch(&mut self, program: usize, proc: Proc, now: Instant) {
        if let Some(pool) = self.programs[program].pools.get_mut(proc.0) {
            pool.last_used = now;
            if pool.replica > 0 {
                self.rearm(program, proc);
            }
        }
    }

    /// Gives back a lease on `procs` of `program` taken in `mode` (a
    /// replica left with no call is idle from then on).
    pub(in crate::edge::reactor) fn release(
        &mut self,
        program: usize,
        procs: &[Proc],
        mode: LeaseMode,
    ) {
        self.programs[program].leases.release(procs, mode);
        for &proc in procs {
            if self.programs[program]
                .pools
                .get(proc.0)
                .is_some_and(|p| p.replica > 0)
            {
                self.rearm(program, proc);
            }
        }
    }

    /// The socket path of process `proc` and its spare socket, if made.
    pub(in crate::edge::reactor) fn connect_to(
        &mut self,
        program: usize,
        proc: Proc,
    ) -> (Option<Spare>, &Path) {
        self.spareless.push((program, proc));
        let pool = &mut self.programs[program].pools[proc.0];
        (pool.spare.take(), &pool.socket_path)
    }

    /// The reader of the volumes of process `proc`'s results.
    pub(in crate::edge::reactor) fn reader(
        &mut self,
        program: usize,
        proc: Proc,
    ) -> &mut shm::ShmReader {
        self.programs[program].reader(proc)
    }

    pub(in crate::edge::reactor) fn retired(&self, program: usize) -> bool {
        self.programs[program].retired
    }

    /// Gives a spare socket for its next call (made by `make`) to each
    /// ready process of the live programs that became ready or gave its
    /// spare to a call since this last ran; one `make` failed for is tried
    /// again next time. Only those processes are visited, never all.
    pub(in crate::edge::reactor) fn make_spares(
        &mut self,
        mut make: impl FnMut() -> Option<Spare>,
    ) {
        let mut wanting = std::mem::take(&mut self.spareless);
        for &(program, proc) in &wanting {
            let rt = &mut self.programs[program];
            let Some(pool) = rt.pools.get_mut(proc.0).filter(|_| !rt.retired) else {
                continue;
            };
            if pool.spare.is_none() && matches!(pool.status, PoolStatus::Ready) {
                pool.spare = make();
                if pool.spare.is_none() {
                    self.spareless.push((program, proc));
                }
            }
        }
        // The list keeps its room for the next turn.
        wanting.clear();
        if self.spareless.is_empty() {
            self.spareless = wanting;
        }
    }

    /// The manifest pools of a live `program` for `/health`: language,
    /// primary's status and number of ready replicas (`None` when retired).
    pub(in crate::edge::reactor) fn primaries(
        &self,
        program: usize,
    ) -> Option<Vec<(&str, &PoolStatus, usize)>> {
        let rt = &self.programs[program];
        if rt.retired {
            return None;
        }
        let rows = rt.pools.iter().filter(|p| p.replica == 0).map(|pool| {
            let replicas = rt
                .pools
                .iter()
                .filter(|r| r.replica > 0 && r.base == pool.base)
                .filter(|r| matches!(r.status, PoolStatus::Ready))
                .count();
            (pool.lang.as_str(), &pool.status, replicas)
        });
        Some(rows.collect())
    }

    /// The process whose pid is `pid`.
    pub(super) fn find_pid(&self, pid: i32) -> Option<(usize, Proc)> {
        self.programs.iter().enumerate().find_map(|(p, rt)| {
            rt.pools
                .iter()
                .position(|pool| pool.pid == Some(pid))
                .map(|i| (p, Proc(i)))
        })
    }

    /// Removes the run directories and shared memory of every program.
    pub(in crate::edge::reactor) fn remove_all_files(&mut self) {
        for rt in &mut self.programs {
            rt.remove_files();
        }
    }

    /// Removes a program's files and marks it retired (its pools stopped).
    pub(in crate::edge::reactor) fn retire(&mut self, program: usize) {
        self.programs[program].remove_files();
        self.programs[program].retired = true;
    }
}

impl Index<(usize, Proc)> for PoolSet {
    type Output = Pool;

    fn index(&self, (program, proc): (usize, Proc)) -> &Pool {
        &self.programs[program].pools[proc.0]
    }
}

impl IndexMut<(usize, Proc)> for PoolSet {
    fn index_mut(&mut self, (program, proc): (usize, Proc)) -> &mut Pool {
        &mut self.programs[program].pools[proc.0]
    }
}

mod replicas;
#[cfg(test)]
mod tests;
