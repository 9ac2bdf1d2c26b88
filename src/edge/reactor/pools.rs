//! Pool lifecycle inside the reactor: spawning, readiness probes, output
//! forwarding, crash detection and restarts, and stopping.
//!
//! Each served program has a [`Runtime`]: its run directory (where the pools'
//! sockets live), its shared-memory basename with volume 0, and its pools. A
//! pool is *Starting* until it answers a ping on its socket, then *Ready*. A
//! pool that dies is restarted at once unless it crash-loops; calls that were
//! already running on it fail with a message saying how it died, and calls
//! still waiting for it go to the restarted pool.
//!
//! A pool (Python, R, C++) may have *replicas*: more processes of the same
//! pool, each on its own socket in the run directory, with the same
//! arguments and environment but a shared-memory basename of its own. `Runtime::pools` holds every process: the manifest's pools
//! first (the *primaries*, at their manifest index, on the socket the other
//! pools call), then the replicas, each naming its primary (`base`). The
//! server spreads its own calls over a pool's ready processes, least busy
//! first; calls that go through other pools stay on the primary. A replica
//! starts when every process of its pool is busy and calls are waiting (up
//! to the pool's cap, `--pool-replicas`), and stops after sitting idle.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::ops::ControlFlow;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mio::net::UnixStream;
use mio::unix::SourceFd;
use mio::{Interest, Token};

use super::byteio;
use super::leases::Leases;
use super::{Reactor, Source};
use crate::edge::proc;
use crate::edge::rundir;
use crate::edge::shm;
use crate::format::packet;
use crate::protocol::mcp::{self, Program};

/// First and largest delay between readiness probes. Python pools take tens
/// of milliseconds to start; probing every few milliseconds notices them
/// promptly without burning the CPU they need to start.
const PROBE_DELAY_MIN: Duration = Duration::from_millis(1);
const PROBE_DELAY_MAX: Duration = Duration::from_millis(8);
/// Grace between SIGTERM and SIGKILL when stopping a pool's process group.
const STOP_GRACE: Duration = Duration::from_millis(200);
/// Crash-loop guard: more starts than this within the window stop restarts.
const MAX_RESTARTS: usize = 5;
const RESTART_WINDOW: Duration = Duration::from_secs(60);
/// After giving up on a pool, a call may try to start it again after this.
const RETRY_FAILED_AFTER: Duration = Duration::from_secs(10);
/// Lines of pool output kept for error messages.
const OUTPUT_TAIL: usize = 20;
/// Pool output lines longer than this are split.
const MAX_LOG_LINE: usize = 64 * 1024;
/// MCP log level of forwarded pool output ("info").
const POOL_LOG_LEVEL: usize = 1;

#[derive(Debug)]
pub(super) enum PoolStatus {
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

struct Probe {
    stream: UnixStream,
    token: Token,
    written: usize,
    read: Vec<u8>,
}

pub(super) struct Pool {
    pub(super) lang: String,
    /// The manifest pool this process serves (its own index for a primary).
    pub(super) base: usize,
    /// 0 for the primary, else the replica's number (1, 2, ...).
    pub(super) replica: usize,
    /// When a call last started or ended on it (idle replicas stop).
    pub(super) last_used: Instant,
    /// A replica's own shared memory: its volume 0 and a reader of its
    /// volumes (a primary uses the run's, in `Runtime`).
    own_shm: Option<(Option<shm::Volume0>, shm::ShmReader)>,
    pub(super) socket_path: PathBuf,
    spawn: proc::PoolSpawn,
    pub(super) status: PoolStatus,
    pid: Option<i32>,
    started_at: Instant,
    output: Option<(Token, OwnedFd)>,
    output_buf: Vec<u8>,
    tail: VecDeque<String>,
    starts: VecDeque<Instant>,
    probe: Option<Probe>,
    next_probe: Option<Instant>,
    probe_delay: Duration,
    /// A socket made ahead of the next call to this process, not connected
    /// yet (see `Reactor::end_turn`).
    pub(super) spare: Option<OwnedFd>,
    /// The restart breaker is open: the process is `Failed` (it kept dying
    /// or could not start), and its calls fail at once until a call after
    /// [`RETRY_FAILED_AFTER`] starts it again; how many failed so.
    broken: Option<u64>,
}

/// The per-program run state.
pub(super) struct Runtime {
    pub(super) pools: Vec<Pool>,
    tmpdir: Option<PathBuf>,
    /// Holds the run directory's lock; dropped once the directory is gone.
    run_dir: Option<rundir::RunDir>,
    basename: String,
    volume0: Option<shm::Volume0>,
    pub(super) shm_reader: shm::ShmReader,
    /// How the pools route results: see [`Routing`].
    pub(super) routing: Routing,
    pub(super) leases: Leases,
    /// Its program was replaced by a reload and its pools have been stopped.
    pub(super) retired: bool,
}

mod routing;
pub(super) use routing::Routing;

impl Pool {
    /// A process of manifest pool `base` (`replica` 0 is the primary), not
    /// started yet.
    fn new(
        lang: &str,
        base: usize,
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
            started_at: Instant::now(),
            output: None,
            output_buf: Vec::new(),
            tail: VecDeque::new(),
            starts: VecDeque::new(),
            probe: None,
            next_probe: None,
            probe_delay: PROBE_DELAY_MIN,
            spare: None,
            broken: None,
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
    matches!(
        lang.to_ascii_lowercase().as_str(),
        "py" | "python" | "python3" | "r" | "cpp" | "c++" | "rust" | "rs"
    )
}

/// The fewest processes a pool may scale up to by default (sleeping or
/// waiting functions gain beyond the number of CPUs).
const MIN_DEFAULT_REPLICAS: usize = 8;

/// The default cap on the processes of a `lang` pool on a machine with
/// `cpus` CPUs: max(CPUs, 8) for the languages above, else 1.
fn default_replica_cap(lang: &str, cpus: usize) -> usize {
    if replicated_by_default(lang) {
        cpus.max(MIN_DEFAULT_REPLICAS)
    } else {
        1
    }
}

impl Runtime {
    pub(super) fn new(program: &Program) -> io::Result<Runtime> {
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
                eprintln!("morloc-mcp: warning: cannot create shared memory volume 0: {e}");
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
            let base = pools.len();
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

    pub(super) fn deadlines(
        &self,
        start_timeout: Duration,
        replica_idle: Duration,
        consider: &mut impl FnMut(Option<Instant>),
    ) {
        for (slot, pool) in self.pools.iter().enumerate() {
            consider(pool.next_probe);
            if matches!(pool.status, PoolStatus::Starting) {
                consider(Some(pool.started_at + start_timeout));
            }
            if pool.replica > 0
                && matches!(pool.status, PoolStatus::Ready)
                && self.leases.busy(slot) == 0
            {
                consider(Some(pool.last_used + replica_idle));
            }
        }
    }

    /// The processes (slots) serving manifest pool `base`, primary first.
    pub(super) fn instances(&self, base: usize) -> impl Iterator<Item = usize> + '_ {
        self.pools
            .iter()
            .enumerate()
            .filter(move |(_, p)| p.base == base)
            .map(|(slot, _)| slot)
    }

    /// Whether a process of `base` other than `except` is running or starting.
    pub(super) fn other_instance_alive(&self, base: usize, except: usize) -> bool {
        self.instances(base).any(|slot| {
            slot != except
                && matches!(
                    self.pools[slot].status,
                    PoolStatus::Starting | PoolStatus::Ready
                )
        })
    }

    /// Adds a slot for a new replica of manifest pool `base` (not started):
    /// the primary's command, arguments and environment, on its own socket.
    fn add_replica(&mut self, base: usize) -> usize {
        let number = self.instances(base).count();
        let primary = &self.pools[base];
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
                eprintln!(
                    "morloc-mcp: warning: cannot create shared memory volume 0 of a replica: {e}"
                );
                None
            }
        };
        let own_shm = Some((volume0, shm::ShmReader::new(&basename, &fallback)));
        let pool = Pool::new(&primary.lang, base, number, own_shm, socket_path, spawn);
        self.pools.push(pool);
        self.leases.grow(self.pools.len());
        self.pools.len() - 1
    }

    /// The reader of the volumes of process `slot`'s results.
    pub(super) fn reader(&mut self, slot: usize) -> &mut shm::ShmReader {
        match self.pools.get_mut(slot).and_then(|p| p.own_shm.as_mut()) {
            Some((_, reader)) => reader,
            None => &mut self.shm_reader,
        }
    }

    /// Removes the run directory and every shared-memory file of the run
    /// (the replicas' basenames extend the run's, so they go too).
    pub(super) fn remove_files(&mut self) {
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

    fn tail_note(&self, pool: usize) -> String {
        let tail = &self.pools[pool].tail;
        if tail.is_empty() {
            return String::new();
        }
        let lines: Vec<&str> = tail.iter().map(String::as_str).collect();
        format!("; its last output:\n{}", lines.join("\n"))
    }
}

impl Reactor {
    /// The most processes pool `lang` may run: `--pool-replicas`, else
    /// [`default_replica_cap`].
    pub(super) fn replica_cap(&self, lang: &str) -> usize {
        let canon = |l: &str| match l.to_ascii_lowercase().as_str() {
            "python" | "python3" => "py".to_string(),
            other => other.to_string(),
        };
        let want = canon(lang);
        if let Some((_, n)) = self
            .options
            .pool_replicas
            .iter()
            .rev()
            .find(|(l, _)| canon(l) == want)
        {
            return *n;
        }
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        default_replica_cap(lang, cpus)
    }

    /// `waiting` calls of `program` wait for a process of manifest pool
    /// `base` while every one is busy: start replicas for those that the
    /// starting ones will not take, up to the pool's cap.
    pub(super) fn scale_up(&mut self, program: usize, base: usize, waiting: usize) {
        let rt = &self.runtimes[program];
        if rt.retired || !matches!(rt.pools[base].status, PoolStatus::Ready) {
            return;
        }
        let cap = self.replica_cap(&rt.pools[base].lang);
        let alive = |p: &Pool| matches!(p.status, PoolStatus::Starting | PoolStatus::Ready);
        let live = rt.instances(base).filter(|&s| alive(&rt.pools[s])).count();
        let starting = rt
            .instances(base)
            .filter(|&s| matches!(rt.pools[s].status, PoolStatus::Starting))
            .count();
        let wanted = waiting
            .saturating_sub(starting)
            .min(cap.saturating_sub(live));
        for _ in 0..wanted {
            let rt = &self.runtimes[program];
            // A stopped replica's slot is used again; one that failed only
            // after a while.
            let reusable = rt.instances(base).find(|&s| match &rt.pools[s].status {
                PoolStatus::Idle => rt.pools[s].replica > 0,
                PoolStatus::Failed { at, .. } => {
                    rt.pools[s].replica > 0 && at.elapsed() >= RETRY_FAILED_AFTER
                }
                _ => false,
            });
            let slot = match reusable {
                Some(slot) => slot,
                None if rt.instances(base).count() < cap => {
                    self.runtimes[program].add_replica(base)
                }
                None => break,
            };
            self.runtimes[program].pools[slot].starts.clear();
            self.start_pool(program, slot);
        }
    }

    /// Stops replicas that have been idle for `--replica-idle`.
    fn stop_idle_replicas(&mut self, program: usize, now: Instant) {
        let idle = self.options.replica_idle;
        for slot in 0..self.runtimes[program].pools.len() {
            let rt = &self.runtimes[program];
            let pool = &rt.pools[slot];
            if pool.replica > 0
                && matches!(pool.status, PoolStatus::Ready)
                && rt.leases.busy(slot) == 0
                && !rt.leases.exclusive(slot)
                && now >= pool.last_used + idle
            {
                self.stop_pool(program, slot);
            }
        }
    }

    pub(super) fn start_all_pools(&mut self, program: usize) {
        if !self.swept {
            // Like the reference, remove shared memory left by dead runs.
            self.swept = true;
            rundir::sweep_dead();
            shm::sweep_stale();
        }
        for pool in 0..self.runtimes[program].pools.len() {
            let p = &self.runtimes[program].pools[pool];
            if p.replica == 0 && matches!(p.status, PoolStatus::Idle) {
                self.start_pool(program, pool);
            }
        }
    }

    /// Makes sure pool `pool` of `program` is running or starting; returns
    /// the error message if it cannot be used now.
    pub(super) fn ensure_pool(&mut self, program: usize, pool: usize) -> Result<bool, String> {
        if self.options.lazy_pools {
            // The command's other pools (cross-language calls) are needed too;
            // starting every pool of the program keeps that simple.
            self.start_all_pools(program);
        }
        match &self.runtimes[program].pools[pool].status {
            PoolStatus::Ready => Ok(true),
            PoolStatus::Starting => Ok(false),
            PoolStatus::Idle => {
                self.start_pool(program, pool);
                Ok(false)
            }
            PoolStatus::Failed { message, at } => {
                if at.elapsed() >= RETRY_FAILED_AFTER {
                    self.runtimes[program].pools[pool].starts.clear();
                    self.start_pool(program, pool);
                    match &self.runtimes[program].pools[pool].status {
                        PoolStatus::Failed { message, .. } => Err(message.clone()),
                        _ => Ok(false),
                    }
                } else {
                    let message = message.clone();
                    let pool = &mut self.runtimes[program].pools[pool];
                    if let Some(failed) = pool.broken.as_mut() {
                        *failed += 1;
                    }
                    Err(message)
                }
            }
        }
    }

    pub(super) fn start_pool(&mut self, program: usize, i: usize) {
        let now = Instant::now();
        let pool = &mut self.runtimes[program].pools[i];
        while pool
            .starts
            .front()
            .is_some_and(|t| now.duration_since(*t) > RESTART_WINDOW)
        {
            pool.starts.pop_front();
        }
        pool.starts.push_back(now);
        pool.started_at = now;
        pool.probe_delay = PROBE_DELAY_MIN;
        pool.output_buf.clear();
        // Error messages quote what this run of the pool printed.
        pool.tail.clear();
        match proc::spawn_pool(&pool.spawn) {
            Ok(spawned) => {
                pool.pid = Some(spawned.pid);
                pool.status = PoolStatus::Starting;
                // A pool crashing right away leaves its old socket file; the
                // new process unlinks it before binding, so probes simply
                // fail until then.
                pool.next_probe = Some(now + PROBE_DELAY_MIN);
                let fd = spawned.output;
                let raw = fd.as_raw_fd();
                let token = self.token(Source::PoolOutput { program, pool: i });
                if let Err(e) =
                    self.poll
                        .registry()
                        .register(&mut SourceFd(&raw), token, Interest::READABLE)
                {
                    eprintln!("morloc-mcp: cannot watch the output of a pool: {e}");
                }
                self.runtimes[program].pools[i].output = Some((token, fd));
            }
            Err(e) => {
                let message = format!("cannot start pool '{}': {e}", pool.label());
                eprintln!("morloc-mcp: {message}");
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
        for program in 0..self.runtimes.len() {
            self.stop_idle_replicas(program, now);
            for i in 0..self.runtimes[program].pools.len() {
                let pool = &mut self.runtimes[program].pools[i];
                if pool.next_probe.is_some_and(|t| t <= now) {
                    pool.next_probe = None;
                    self.start_probe(program, i);
                }
                let pool = &self.runtimes[program].pools[i];
                let limit = self.options.pool_start_timeout;
                if matches!(pool.status, PoolStatus::Starting) && now >= pool.started_at + limit {
                    let message = format!(
                        "pool '{}' did not become ready within {} s{}",
                        pool.label(),
                        limit.as_secs_f64(),
                        self.runtimes[program].tail_note(i)
                    );
                    eprintln!("morloc-mcp: {message}");
                    self.stop_pool(program, i);
                    self.runtimes[program].pools[i].status = PoolStatus::Failed {
                        message: message.clone(),
                        at: now,
                    };
                    self.open_breaker(program, i, "did not become ready");
                    self.fail_pool_calls(program, i, &message, true);
                }
            }
        }
    }

    fn start_probe(&mut self, program: usize, i: usize) {
        let pool = &self.runtimes[program].pools[i];
        if !matches!(pool.status, PoolStatus::Starting) || pool.probe.is_some() {
            return;
        }
        if self.runtimes[program].leases.exclusive(i) {
            // A ping would free the block of the result still being read.
            return self.schedule_probe(program, i);
        }
        match UnixStream::connect(&pool.socket_path) {
            Ok(mut stream) => {
                let token = self.token(Source::Probe { program, pool: i });
                if self
                    .poll
                    .registry()
                    .register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)
                    .is_err()
                {
                    self.sources.remove(&token);
                    return self.schedule_probe(program, i);
                }
                self.runtimes[program].pools[i].probe = Some(Probe {
                    stream,
                    token,
                    written: 0,
                    read: Vec::new(),
                });
                self.advance_probe(program, i);
            }
            // Not bound or not listening yet.
            Err(_) => self.schedule_probe(program, i),
        }
    }

    fn schedule_probe(&mut self, program: usize, i: usize) {
        let pool = &mut self.runtimes[program].pools[i];
        pool.next_probe = Some(Instant::now() + pool.probe_delay);
        pool.probe_delay = (pool.probe_delay * 3 / 2).min(PROBE_DELAY_MAX);
    }

    fn end_probe(&mut self, program: usize, i: usize) {
        if let Some(mut probe) = self.runtimes[program].pools[i].probe.take() {
            let _ = self.poll.registry().deregister(&mut probe.stream);
            self.sources.remove(&probe.token);
        }
    }

    pub(super) fn advance_probe(&mut self, program: usize, i: usize) {
        let ping = packet::ping();
        let Some(probe) = self.runtimes[program].pools[i].probe.as_mut() else {
            return;
        };
        let mut failed = false;
        while probe.written < ping.len() {
            match probe.stream.write(&ping[probe.written..]) {
                Ok(n) => probe.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    failed = true;
                    break;
                }
            }
        }
        let mut buf = [0u8; 32];
        while !failed && probe.read.len() < 32 {
            let want = 32 - probe.read.len();
            match probe.stream.read(&mut buf[..want]) {
                Ok(0) => failed = true,
                Ok(n) => probe.read.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => failed = true,
            }
        }
        let ok = !failed && packet::is_pong(&probe.read);
        self.end_probe(program, i);
        if !ok {
            return self.schedule_probe(program, i);
        }
        self.runtimes[program].pools[i].status = PoolStatus::Ready;
        if let Some(failed) = self.runtimes[program].pools[i].broken.take() {
            let lang = self.runtimes[program].pools[i].label();
            self.say(
                &format!("restart breaker closed: {lang}"),
                &format!(
                    "pool '{lang}' is ready again: restart breaker closed ({failed} call(s) failed at once while it was open)"
                ),
            );
        }
        // Calls waiting for this pool go once every pool they need is ready
        // (and their lease is free).
        self.dispatch_waiting(program);
    }

    pub(super) fn pool_ready(&self, program: usize, pool: usize) -> bool {
        self.runtimes[program]
            .pools
            .get(pool)
            .is_some_and(|p| matches!(p.status, PoolStatus::Ready))
    }

    pub(super) fn read_pool_output(&mut self, program: usize, i: usize) {
        let Some((_, fd)) = self.runtimes[program].pools[i].output.as_ref() else {
            return;
        };
        // The pipe stays open while it is read: the pool's `output` owns it.
        let mut pipe = byteio::RawReader(fd.as_raw_fd());
        let mut buf = [0u8; 16 * 1024];
        let end = byteio::read_until(&mut pipe, &mut buf, |chunk| {
            self.runtimes[program].pools[i]
                .output_buf
                .extend_from_slice(chunk);
            // Bound the buffer even if a pool writes without newlines.
            if self.runtimes[program].pools[i].output_buf.len() > 4 * MAX_LOG_LINE {
                self.emit_pool_lines(program, i, false);
            }
            ControlFlow::Continue(())
        });
        let closed = matches!(end, byteio::ReadEnd::Eof);
        self.emit_pool_lines(program, i, closed);
        if closed {
            self.close_pool_output(program, i);
        }
    }

    fn emit_pool_lines(&mut self, program: usize, i: usize, flush_partial: bool) {
        let mut lines = Vec::new();
        {
            let pool = &mut self.runtimes[program].pools[i];
            let buf = &pool.output_buf;
            let mut start = 0;
            while let Some(pos) = buf[start..].iter().position(|&b| b == b'\n') {
                lines.push(String::from_utf8_lossy(&buf[start..start + pos]).into_owned());
                start += pos + 1;
            }
            while buf.len() - start > MAX_LOG_LINE {
                lines.push(String::from_utf8_lossy(&buf[start..start + MAX_LOG_LINE]).into_owned());
                start += MAX_LOG_LINE;
            }
            if flush_partial && start < buf.len() {
                lines.push(String::from_utf8_lossy(&buf[start..]).into_owned());
                start = buf.len();
            }
            pool.output_buf.drain(..start);
        }
        if lines.is_empty() {
            return;
        }
        let label = self.runtimes[program].pools[i].label();
        let logger = format!("pool:{label}");
        {
            // A replica's lines say which process printed them.
            let prefix = if self.runtimes[program].pools[i].replica > 0 {
                format!("[{label}] ")
            } else {
                String::new()
            };
            let mut stderr = io::stderr().lock();
            for line in &lines {
                let _ = writeln!(stderr, "{prefix}{line}");
            }
        }
        for line in lines {
            self.forward_log(&logger, &line);
            self.forward_log_to_calls(program, i, POOL_LOG_LEVEL, &logger, &line);
            let tail = &mut self.runtimes[program].pools[i].tail;
            if tail.len() == OUTPUT_TAIL {
                tail.pop_front();
            }
            tail.push_back(line);
        }
    }

    /// Sends one pool output line as `notifications/message` to every client
    /// that asked for logs: the stdio client, and HTTP requests of sessions
    /// with a log level that are streaming events.
    fn forward_log(&mut self, logger: &str, line: &str) {
        if let Some(stdio) = &self.stdio {
            if let Some(note) = mcp::log_notification(stdio.session(), POOL_LOG_LEVEL, logger, line)
            {
                self.send_stdio(&note);
            }
        }
        if self.http.is_some() {
            self.http_forward_log(POOL_LOG_LEVEL, logger, line);
        }
    }

    fn close_pool_output(&mut self, program: usize, i: usize) {
        if let Some((token, fd)) = self.runtimes[program].pools[i].output.take() {
            let _ = self
                .poll
                .registry()
                .deregister(&mut SourceFd(&fd.as_raw_fd()));
            self.sources.remove(&token);
        }
    }

    /// Reaps exited children and recovers the pools among them.
    pub(super) fn check_children(&mut self) {
        for (pid, status) in proc::reap_any() {
            let found = self.runtimes.iter().enumerate().find_map(|(p, rt)| {
                rt.pools
                    .iter()
                    .position(|pool| pool.pid == Some(pid))
                    .map(|i| (p, i))
            });
            // Otherwise: an orphaned worker re-parented to us, now reaped.
            let Some((program, i)) = found else { continue };
            // Collect what the pool printed last, for the message.
            self.read_pool_output(program, i);
            self.runtimes[program].pools[i].pid = None;
            // Its workers may outlive it: end the whole group.
            let _ = proc::kill_group(pid, libc::SIGKILL);
            self.end_probe(program, i);
            self.close_pool_output(program, i);
            let lang = self.runtimes[program].pools[i].label();
            let starting = matches!(self.runtimes[program].pools[i].status, PoolStatus::Starting);
            eprintln!("morloc-mcp: pool '{lang}' (pid {pid}) {status}");
            let message = if starting {
                format!(
                    "pool '{lang}' {status} during start-up{}",
                    self.runtimes[program].tail_note(i)
                )
            } else {
                format!("pool '{lang}' died ({status}) while the call was running; it is being restarted")
            };
            let now = Instant::now();
            let pool = &self.runtimes[program].pools[i];
            let recent = pool
                .starts
                .iter()
                .filter(|t| now.duration_since(**t) <= RESTART_WINDOW)
                .count();
            if starting || recent >= MAX_RESTARTS {
                // A pool that cannot start, or keeps dying, is not restarted
                // in a loop; calls fail with the reason and a later call may
                // try again.
                let message = if starting {
                    message
                } else {
                    format!(
                        "pool '{lang}' keeps dying ({recent} starts within {} s; last: {status}); not restarting it for now{}",
                        RESTART_WINDOW.as_secs(),
                        self.runtimes[program].tail_note(i)
                    )
                };
                self.runtimes[program].pools[i].status = PoolStatus::Failed {
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
    fn open_breaker(&mut self, program: usize, i: usize, why: &str) {
        let pool = &mut self.runtimes[program].pools[i];
        if pool.broken.is_some() {
            return;
        }
        pool.broken = Some(0);
        let lang = pool.label();
        self.say(
            &format!("restart breaker open: {lang}"),
            &format!(
                "pool '{lang}' {why}: restart breaker open, not restarting it; its calls fail at once until one comes {} s from now or later and starts it again",
                RETRY_FAILED_AFTER.as_secs()
            ),
        );
    }

    /// Stops pool `i`'s process group (TERM, grace, KILL) and reaps it.
    pub(super) fn stop_pool(&mut self, program: usize, i: usize) {
        self.end_probe(program, i);
        self.close_pool_output(program, i);
        if let Some(pid) = self.runtimes[program].pools[i].pid.take() {
            stop_groups(&[pid]);
        }
        self.runtimes[program].pools[i].status = PoolStatus::Idle;
    }

    pub(super) fn stop_all_pools(&mut self) {
        let mut pids = Vec::new();
        for program in 0..self.runtimes.len() {
            for i in 0..self.runtimes[program].pools.len() {
                self.end_probe(program, i);
                self.close_pool_output(program, i);
                if let Some(pid) = self.runtimes[program].pools[i].pid.take() {
                    pids.push(pid);
                }
            }
        }
        stop_groups(&pids);
    }

    /// Treats a running pool as starting again: calls wait until it answers
    /// a ping (or the start-up deadline passes).
    pub(super) fn reprobe_pool(&mut self, program: usize, i: usize) {
        let pool = &mut self.runtimes[program].pools[i];
        pool.status = PoolStatus::Starting;
        pool.started_at = Instant::now();
        pool.probe_delay = PROBE_DELAY_MIN;
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
    pub(super) fn withdraw_pool(&mut self, program: usize, i: usize) {
        self.runtimes[program].pools[i].status = PoolStatus::Starting;
    }

    pub(super) fn restart_pool(&mut self, program: usize, i: usize, reason: &str) {
        let lang = self.runtimes[program].pools[i].label();
        eprintln!("morloc-mcp: restarting pool '{lang}': {reason}");
        self.stop_pool(program, i);
        // Not idle: a waiting call could start it a second time meanwhile.
        self.withdraw_pool(program, i);
        let message = format!("pool '{lang}' was restarted: {reason}");
        self.fail_pool_calls(program, i, &message, false);
        self.start_pool(program, i);
    }

    pub(super) fn pool_lang(&self, program: usize, pool: usize) -> &str {
        &self.runtimes[program].pools[pool].lang
    }
}

/// TERM every group, wait up to [`STOP_GRACE`] for them to go, KILL the rest,
/// and reap.
fn stop_groups(pids: &[i32]) {
    if pids.is_empty() {
        return;
    }
    for &pid in pids {
        let _ = proc::kill_group(pid, libc::SIGTERM);
    }
    let deadline = Instant::now() + STOP_GRACE;
    loop {
        // Zombies keep a group "alive": reap before asking.
        proc::reap_any();
        if pids.iter().all(|&p| !proc::group_alive(p)) || Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    for &pid in pids {
        if proc::group_alive(pid) {
            let _ = proc::kill_group(pid, libc::SIGKILL);
        }
    }
    let settle = Instant::now() + Duration::from_millis(100);
    loop {
        proc::reap_any();
        if pids.iter().all(|&p| !proc::group_alive(p)) || Instant::now() >= settle {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[cfg(test)]
mod tests {
    use super::default_replica_cap;

    #[test]
    fn threaded_and_single_threaded_pools_get_replicas_by_default() {
        for lang in ["py", "Python3", "r", "R", "cpp", "c++", "rust"] {
            assert_eq!(default_replica_cap(lang, 2), 8, "{lang}");
            assert_eq!(default_replica_cap(lang, 16), 16, "{lang}");
        }
        // Languages whose pools were not checked keep one process.
        assert_eq!(default_replica_cap("jl", 16), 1);
        assert_eq!(default_replica_cap("", 4), 1);
    }
}
