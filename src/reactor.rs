//! The reactor: the one thread that does I/O.
//!
//! One `mio::Poll` multiplexes everything the server waits on: stdin (client
//! messages), the protocol stdout, a self-pipe carrying signals, each pool's
//! output pipe, a readiness probe per starting pool, and one Unix-socket
//! connection per in-flight tool call. Events are dispatched on their
//! [`Token`]; the protocol logic itself lives in the pure `mcp` module, so this
//! file is about bytes, processes, deadlines and clean-up.
//!
//! Architecture Invariant: only this module calls `Poll::poll`, and only this
//! module (with the OS helpers in `proc` and `shm`) touches file descriptors.

use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mio::net::UnixStream;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use serde_json::Value as Json;

use crate::cli::ServeConfig;
use crate::eval;
use crate::jsonrpc::{self, Frame, LineFramer, RequestId};
use crate::manifest::CommandKind;
use crate::mcp::{self, CallRequest, Program, Session, Step};
use crate::msgpack;
use crate::packet::{self, Reply};
use crate::proc;
use crate::shm;
use crate::tools;
use crate::value::Value;
use crate::voidstar;

const STDIN: Token = Token(0);
const STDOUT: Token = Token(1);
const SIGNALS: Token = Token(2);
/// Pool pipes, probes and call connections get tokens from here up.
const FIRST_DYNAMIC: usize = 16;

/// How long a pool may take to answer its first ping before waiting calls fail.
const POOL_START_TIMEOUT: Duration = Duration::from_secs(60);
/// First and largest delay between readiness probes. Python pools take tens of
/// milliseconds to start; probing every few milliseconds notices them promptly.
const PROBE_DELAY_MIN: Duration = Duration::from_millis(1);
const PROBE_DELAY_MAX: Duration = Duration::from_millis(10);
/// Grace between SIGTERM and SIGKILL when stopping a pool's process group.
const STOP_GRACE: Duration = Duration::from_millis(200);
/// Progress heartbeat period for calls that carry a progress token.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);
/// Crash-loop guard: more restarts than this within the window stop restarts.
const MAX_RESTARTS: usize = 5;
const RESTART_WINDOW: Duration = Duration::from_secs(60);
/// After giving up on a crash-looping pool, try again on demand after this.
const RETRY_FAILED_AFTER: Duration = Duration::from_secs(10);
/// Stop reading stdin while this much output is queued (client not reading).
const MAX_PENDING_OUTPUT: usize = 16 * 1024 * 1024;
/// Lines of pool output kept for error messages.
const STDERR_TAIL: usize = 20;
/// Pool output lines longer than this are split.
const MAX_LOG_LINE: usize = 64 * 1024;

/// Options for serving one program over stdio.
pub struct Options {
    /// Per-call deadline; `None` waits forever.
    pub call_timeout: Option<Duration>,
}

/// A start-up failure, already phrased for the user.
#[derive(Debug)]
pub struct StartError(pub String);

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StartError {}

/// Builds each program's tool surface (printing exclusion notes) and serves.
/// Returns the process exit status.
pub fn serve(config: ServeConfig) -> Result<i32, StartError> {
    let mut programs = Vec::new();
    for p in config.programs {
        let surface = tools::build(&p.loaded.manifest);
        for note in &surface.notes {
            eprintln!("{note}");
        }
        programs.push(Program::new(p.loaded, surface).map_err(|e| StartError(e.to_string()))?);
    }
    if config.http.is_some() || config.router {
        return Err(StartError("the HTTP transport is not available in this build yet".into()));
    }
    let Some(program) = programs.pop() else {
        return Err(StartError("nothing to serve".into()));
    };
    serve_stdio(program, Options { call_timeout: config.call_timeout })
        .map_err(|e| StartError(format!("cannot serve: {e}")))
}

/// Serves `program` over stdin/stdout until EOF or a terminating signal.
/// Returns the process exit status.
pub fn serve_stdio(program: Program, options: Options) -> io::Result<i32> {
    // Before anything can print: the protocol stream gets a private fd and
    // fd 1 becomes stderr, so no stray write ever reaches the client.
    let protocol_out = proc::rehome_stdout()?;
    std::env::set_var("MORLOC_QUIET", "1");
    proc::ignore_sigpipe()?;
    // Orphaned pool workers are re-parented to us so they can be reaped.
    let _ = proc::set_child_subreaper();
    let mut reactor = Reactor::new(program, options, protocol_out)?;
    let code = reactor.run();
    reactor.shutdown();
    Ok(code)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct CallId(u64);

#[derive(Clone, Copy, Debug)]
enum Source {
    PoolOutput(usize),
    Probe(usize),
    Call(CallId),
}

#[derive(Debug)]
enum PoolStatus {
    /// Spawned; probing until it answers a ping.
    Starting,
    Ready,
    /// Not running and not being restarted (crash loop or spawn failure).
    Failed { message: String, at: Instant },
}

struct Probe {
    stream: UnixStream,
    token: Token,
    written: usize,
    read: Vec<u8>,
}

struct Pool {
    lang: String,
    socket_path: PathBuf,
    spawn: proc::PoolSpawn,
    status: PoolStatus,
    pid: Option<i32>,
    started_at: Instant,
    output: Option<(Token, OwnedFd)>,
    output_buf: Vec<u8>,
    tail: VecDeque<String>,
    restarts: VecDeque<Instant>,
    probe: Option<Probe>,
    next_probe: Option<Instant>,
    probe_delay: Duration,
}

#[derive(Debug, PartialEq, Eq)]
enum CallStage {
    WaitingForPool,
    Sending,
    Receiving,
}

struct Call {
    request: CallRequest,
    pool: usize,
    packet: Vec<u8>,
    written: usize,
    reply: Vec<u8>,
    expected: Option<usize>,
    stream: Option<(Token, UnixStream)>,
    stage: CallStage,
    started: Instant,
    deadline: Option<Instant>,
    next_progress: Option<Instant>,
}

struct Output {
    fd: OwnedFd,
    queue: Vec<u8>,
    written: usize,
    /// Registered with the poller (false for regular files, which epoll refuses).
    pollable: bool,
    writable_interest: bool,
}

struct Reactor {
    poll: Poll,
    program: Program,
    options: Options,
    session: Session,
    out: Output,
    stdin_pollable: bool,
    stdin_open: bool,
    framer: LineFramer,
    signals: proc::SignalPipe,
    next_token: usize,
    sources: HashMap<Token, Source>,
    pools: Vec<Pool>,
    calls: HashMap<CallId, Call>,
    next_call: u64,
    tmpdir: PathBuf,
    basename: String,
    _volume0: Option<shm::Volume0>,
    shm_reader: shm::ShmReader,
    exit_code: Option<i32>,
}

impl Reactor {
    fn new(program: Program, options: Options, protocol_out: OwnedFd) -> io::Result<Reactor> {
        let poll = Poll::new()?;
        let signals = proc::SignalPipe::new()?;
        poll.registry().register(&mut SourceFd(&signals.as_raw_fd()), SIGNALS, Interest::READABLE)?;

        // stdin: a pipe or tty is polled; epoll refuses regular files and
        // /dev/null (EPERM), which are then read directly: they never block.
        let stdin_pollable = match poll.registry().register(&mut SourceFd(&0), STDIN, Interest::READABLE) {
            Ok(()) => {
                proc::set_nonblocking(borrow_fd(0))?;
                true
            }
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => false,
            Err(e) => return Err(e),
        };
        let out_fd = protocol_out.as_raw_fd();
        let out_pollable = match poll.registry().register(&mut SourceFd(&out_fd), STDOUT, Interest::WRITABLE) {
            Ok(()) => {
                proc::set_nonblocking(protocol_out.as_fd())?;
                // Registered only while there is something to write.
                poll.registry().deregister(&mut SourceFd(&out_fd))?;
                true
            }
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => false,
            Err(e) => return Err(e),
        };

        let needs_pools = !program.loaded.manifest.pools.is_empty();
        let (tmpdir, basename, volume0) = if needs_pools {
            let tmpdir = proc::make_tmpdir()?;
            shm::sweep_stale();
            let basename = shm::new_basename();
            let volume0 = match shm::Volume0::create(&basename, &tmpdir) {
                Ok(v) => Some(v),
                Err(e) => {
                    eprintln!("morloc-mcp: warning: cannot create shared memory volume 0: {e}");
                    None
                }
            };
            (tmpdir, basename, volume0)
        } else {
            (PathBuf::new(), String::new(), None)
        };
        let shm_reader = shm::ShmReader::new(&basename, &tmpdir);

        let mut reactor = Reactor {
            poll,
            program,
            options,
            session: Session::default(),
            out: Output { fd: protocol_out, queue: Vec::new(), written: 0, pollable: out_pollable, writable_interest: false },
            stdin_pollable,
            stdin_open: true,
            framer: LineFramer::default(),
            signals,
            next_token: FIRST_DYNAMIC,
            sources: HashMap::new(),
            pools: Vec::new(),
            calls: HashMap::new(),
            next_call: 0,
            tmpdir,
            basename,
            _volume0: volume0,
            shm_reader,
            exit_code: None,
        };
        reactor.build_pools();
        for i in 0..reactor.pools.len() {
            reactor.start_pool(i);
        }
        Ok(reactor)
    }

    fn build_pools(&mut self) {
        let loaded = &self.program.loaded;
        let self_exe = std::env::current_exe().unwrap_or_default();
        for pool in &loaded.manifest.pools {
            let mut program: Vec<OsString> = pool.exec.iter().map(OsString::from).collect();
            if let Some(last) = program.last_mut() {
                let p = Path::new(last.as_os_str());
                if p.is_relative() {
                    *last = loaded.dir.join(p).into_os_string();
                }
            }
            let socket_path = self.tmpdir.join(&pool.socket);
            let mut spawn = proc::PoolSpawn::for_pool(program, &socket_path, &self.tmpdir, &self.basename);
            let manifest = &loaded.manifest;
            let mut env: Vec<(OsString, OsString)> = vec![
                ("MORLOC_POOL_HASH".into(), pool.pool_hash.clone().into()),
                // Results always come back inline: a shared-memory result block
                // is released when the same pool worker starts its next job, so
                // with concurrent calls it could be reused before we read it.
                // Inline replies make that race impossible (see ARCHITECTURE.md).
                ("MORLOC_INLINE_SIZE".into(), i64::MAX.to_string().into()),
                ("MORLOC_NEXUS_PATH".into(), self_exe.clone().into_os_string()),
                ("MORLOC_MANIFEST_PATH".into(), loaded.path.clone().into_os_string()),
                ("MORLOC_QUIET".into(), "1".into()),
            ];
            if manifest.no_shm {
                env.push(("MORLOC_NO_SHM".into(), "1".into()));
            }
            // File packets go inside the run's tmpdir so they are cleaned up.
            let file_dir = manifest.tmpdir.clone().map(PathBuf::from).unwrap_or_else(|| self.tmpdir.clone());
            env.push(("MORLOC_TMPDIR".into(), file_dir.into_os_string()));
            spawn.env = env;
            self.pools.push(Pool {
                lang: pool.lang.clone(),
                socket_path,
                spawn,
                status: PoolStatus::Starting,
                pid: None,
                started_at: Instant::now(),
                output: None,
                output_buf: Vec::new(),
                tail: VecDeque::new(),
                restarts: VecDeque::new(),
                probe: None,
                next_probe: None,
                probe_delay: PROBE_DELAY_MIN,
            });
        }
    }

    fn token(&mut self, source: Source) -> Token {
        let t = Token(self.next_token);
        self.next_token += 1;
        self.sources.insert(t, source);
        t
    }

    // ---- the loop -------------------------------------------------------

    fn run(&mut self) -> i32 {
        let mut events = Events::with_capacity(256);
        loop {
            if let Some(code) = self.exit_code {
                return code;
            }
            if !self.stdin_open && self.calls.is_empty() {
                return 0;
            }
            let now = Instant::now();
            let mut timeout = self.next_deadline().map(|d| d.saturating_duration_since(now));
            let read_stdin_directly = self.stdin_open && !self.stdin_pollable && self.out.queue.len() < MAX_PENDING_OUTPUT;
            if read_stdin_directly {
                timeout = Some(Duration::ZERO);
            }
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                eprintln!("morloc-mcp: poll failed: {e}");
                return 1;
            }
            for event in events.iter() {
                match event.token() {
                    STDIN => self.read_stdin(),
                    STDOUT => self.flush_output(),
                    SIGNALS => self.handle_signals(),
                    token => match self.sources.get(&token).copied() {
                        Some(Source::PoolOutput(i)) => self.read_pool_output(i),
                        Some(Source::Probe(i)) => self.advance_probe(i),
                        Some(Source::Call(id)) => self.advance_call(id),
                        None => {}
                    },
                }
            }
            if read_stdin_directly {
                self.read_stdin();
            }
            self.run_timers();
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        let mut best: Option<Instant> = None;
        let mut consider = |t: Option<Instant>| {
            if let Some(t) = t {
                best = Some(best.map_or(t, |b| b.min(t)));
            }
        };
        for pool in &self.pools {
            consider(pool.next_probe);
            if matches!(pool.status, PoolStatus::Starting) {
                consider(Some(pool.started_at + POOL_START_TIMEOUT));
            }
        }
        for call in self.calls.values() {
            consider(call.deadline);
            consider(call.next_progress);
        }
        best
    }

    fn run_timers(&mut self) {
        let now = Instant::now();
        for i in 0..self.pools.len() {
            if self.pools[i].next_probe.is_some_and(|t| t <= now) {
                self.pools[i].next_probe = None;
                self.start_probe(i);
            }
            if matches!(self.pools[i].status, PoolStatus::Starting) && now >= self.pools[i].started_at + POOL_START_TIMEOUT {
                let message = format!(
                    "pool '{}' did not become ready within {} s{}",
                    self.pools[i].lang,
                    POOL_START_TIMEOUT.as_secs(),
                    self.tail_note(i)
                );
                self.stop_pool(i);
                self.pools[i].status = PoolStatus::Failed { message: message.clone(), at: now };
                self.fail_pool_calls(i, &message);
            }
        }
        let expired: Vec<CallId> =
            self.calls.iter().filter(|(_, c)| c.deadline.is_some_and(|d| d <= now)).map(|(id, _)| *id).collect();
        for id in expired {
            self.time_out(id);
        }
        let heartbeats: Vec<CallId> =
            self.calls.iter().filter(|(_, c)| c.next_progress.is_some_and(|t| t <= now)).map(|(id, _)| *id).collect();
        for id in heartbeats {
            let Some(call) = self.calls.get_mut(&id) else { continue };
            call.next_progress = Some(now + PROGRESS_EVERY);
            let elapsed = now.duration_since(call.started).as_secs_f64();
            if let Some(token) = call.request.progress_token.clone() {
                let msg = mcp::progress_notification(&token, elapsed, &format!("running for {elapsed:.0} s"));
                self.send(&msg);
            }
        }
    }

    // ---- client side ----------------------------------------------------

    fn read_stdin(&mut self) {
        let mut buf = [0u8; 64 * 1024];
        // SAFETY: fd 0 stays open for the life of the process; the File is
        // forgotten below so it is never closed here.
        let mut stdin = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(0) });
        loop {
            if self.out.queue.len() >= MAX_PENDING_OUTPUT || self.exit_code.is_some() {
                return;
            }
            match stdin.read(&mut buf) {
                Ok(0) => {
                    self.stdin_open = false;
                    if self.stdin_pollable {
                        let _ = self.poll.registry().deregister(&mut SourceFd(&0));
                    }
                    if let Some(frame) = self.framer.finish() {
                        let msg = frame_message(frame);
                        self.dispatch(msg);
                    }
                    return;
                }
                Ok(n) => {
                    self.framer.push(&buf[..n]);
                    while let Some(frame) = self.framer.next_line() {
                        let msg = frame_message(frame);
                        self.dispatch(msg);
                    }
                    if !self.stdin_pollable {
                        // Regular file: one chunk per loop turn so pool events
                        // interleave with a long input file.
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    eprintln!("morloc-mcp: input read error: {e}");
                    self.stdin_open = false;
                    return;
                }
            }
        }
    }

    fn dispatch(&mut self, msg: jsonrpc::Incoming) {
        match mcp::handle(&self.program, &mut self.session, msg) {
            Step::Nothing => {}
            Step::Reply(reply) => self.send(&reply),
            Step::Cancel(id) => self.cancel(&id),
            Step::Call(request) => self.start_call(request),
        }
    }

    fn send(&mut self, msg: &Json) {
        jsonrpc::write_line(&mut self.out.queue, msg);
        self.flush_output();
    }

    fn flush_output(&mut self) {
        let fd = self.out.fd.as_raw_fd();
        while self.out.written < self.out.queue.len() {
            let pending = &self.out.queue[self.out.written..];
            // SAFETY: `pending` is a valid buffer of that length; fd is our
            // private protocol descriptor.
            let n = unsafe { libc::write(fd, pending.as_ptr().cast(), pending.len()) };
            if n > 0 {
                self.out.written += n as usize;
                continue;
            }
            let err = io::Error::last_os_error();
            match err.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => {
                    if self.out.pollable && !self.out.writable_interest {
                        let _ = self.poll.registry().register(&mut SourceFd(&fd), STDOUT, Interest::WRITABLE);
                        self.out.writable_interest = true;
                    }
                    return;
                }
                _ => {
                    // The client went away: nothing more can be delivered.
                    if n == 0 || err.kind() == io::ErrorKind::BrokenPipe {
                        eprintln!("morloc-mcp: protocol stream closed");
                        self.exit_code.get_or_insert(0);
                    } else {
                        eprintln!("morloc-mcp: protocol write failed: {err}");
                        self.exit_code.get_or_insert(1);
                    }
                    self.out.queue.clear();
                    self.out.written = 0;
                    return;
                }
            }
        }
        self.out.queue.clear();
        self.out.written = 0;
        if self.out.writable_interest {
            let _ = self.poll.registry().deregister(&mut SourceFd(&fd));
            self.out.writable_interest = false;
        }
    }

    fn handle_signals(&mut self) {
        for sig in self.signals.drain() {
            match sig {
                libc::SIGCHLD => self.check_children(),
                libc::SIGTERM | libc::SIGINT | libc::SIGHUP => {
                    self.exit_code.get_or_insert(128 + sig);
                }
                _ => {}
            }
        }
    }

    // ---- calls ----------------------------------------------------------

    fn start_call(&mut self, request: CallRequest) {
        let values = match mcp::prepare(&self.program, &request) {
            Ok(v) => v,
            Err(message) => return self.send(&jsonrpc::result_response(&request.id, mcp::error_result(&message))),
        };
        let command = self.program.command(request.command);
        if command.kind == CommandKind::Pure {
            let result = match mcp::run_pure(&self.program, request.command, values, &mut FsHost) {
                Ok(v) => mcp::success_result(command, &v),
                Err(message) => mcp::error_result(&message),
            };
            return self.send(&jsonrpc::result_response(&request.id, result));
        }
        let packet = match encode_call(&self.program, request.command, &values) {
            Ok(p) => p,
            Err(message) => return self.send(&jsonrpc::result_response(&request.id, mcp::error_result(&message))),
        };
        let pool = command.pool;
        let id = CallId(self.next_call);
        self.next_call += 1;
        let now = Instant::now();
        let call = Call {
            next_progress: request.progress_token.as_ref().map(|_| now + PROGRESS_EVERY),
            request,
            pool,
            packet,
            written: 0,
            reply: Vec::new(),
            expected: None,
            stream: None,
            stage: CallStage::WaitingForPool,
            started: now,
            deadline: self.options.call_timeout.map(|t| now + t),
        };
        self.calls.insert(id, call);
        match &self.pools[pool].status {
            PoolStatus::Ready => self.connect_call(id),
            PoolStatus::Starting => {}
            PoolStatus::Failed { message, at } => {
                if at.elapsed() >= RETRY_FAILED_AFTER {
                    self.pools[pool].restarts.clear();
                    self.start_pool(pool);
                } else {
                    let message = message.clone();
                    self.finish_call(id, Err(message));
                }
            }
        }
    }

    fn connect_call(&mut self, id: CallId) {
        let Some(call) = self.calls.get(&id) else { return };
        let path = self.pools[call.pool].socket_path.clone();
        let lang = self.pools[call.pool].lang.clone();
        match UnixStream::connect(&path) {
            Ok(mut stream) => {
                let token = self.token(Source::Call(id));
                if let Err(e) = self.poll.registry().register(&mut stream, token, Interest::READABLE | Interest::WRITABLE) {
                    self.sources.remove(&token);
                    return self.finish_call(id, Err(format!("cannot watch the connection to pool '{lang}': {e}")));
                }
                if let Some(call) = self.calls.get_mut(&id) {
                    call.stream = Some((token, stream));
                    call.stage = CallStage::Sending;
                }
                // Unix sockets accept writes at once; sending now saves a turn.
                self.advance_call(id);
            }
            Err(e) => {
                self.check_children();
                if self.calls.contains_key(&id) {
                    self.finish_call(id, Err(format!("cannot connect to pool '{lang}' at {}: {e}", path.display())));
                }
            }
        }
    }

    fn advance_call(&mut self, id: CallId) {
        let Some(call) = self.calls.get_mut(&id) else { return };
        let Some((_, stream)) = call.stream.as_mut() else { return };
        if call.stage == CallStage::Sending {
            while call.written < call.packet.len() {
                match stream.write(&call.packet[call.written..]) {
                    Ok(n) => call.written += n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        let message = format!("cannot send the call to pool '{}': {e}", self.pools[call.pool].lang);
                        return self.lost_connection(id, message);
                    }
                }
            }
            call.stage = CallStage::Receiving;
            call.packet = Vec::new();
        }
        let mut chunk = [0u8; 64 * 1024];
        loop {
            let want = match call.expected {
                Some(total) => total.saturating_sub(call.reply.len()).min(chunk.len()),
                None => 32 - call.reply.len(),
            };
            if want == 0 {
                break;
            }
            match stream.read(&mut chunk[..want]) {
                Ok(0) => {
                    let message = format!(
                        "pool '{}' closed the connection before replying ({} of {} bytes received)",
                        self.pools[call.pool].lang,
                        call.reply.len(),
                        call.expected.map_or("32+".to_string(), |t| t.to_string())
                    );
                    return self.lost_connection(id, message);
                }
                Ok(n) => {
                    call.reply.extend_from_slice(&chunk[..n]);
                    if call.expected.is_none() && call.reply.len() == 32 {
                        let mut head = [0u8; 32];
                        head.copy_from_slice(&call.reply);
                        match packet::packet_len(&head) {
                            Ok(total) => {
                                let total = usize::try_from(total).unwrap_or(usize::MAX);
                                call.reply.reserve(total.saturating_sub(32).min(1 << 30));
                                call.expected = Some(total);
                            }
                            Err(e) => {
                                let message = format!("malformed reply from pool '{}': {e}", self.pools[call.pool].lang);
                                return self.finish_call(id, Err(message));
                            }
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let message = format!("cannot read the reply of pool '{}': {e}", self.pools[call.pool].lang);
                    return self.lost_connection(id, message);
                }
            }
        }
        // Complete reply: decode it now, before anything else runs.
        let reply = std::mem::take(&mut call.reply);
        let command = call.request.command;
        let outcome = self.decode_reply(command, &reply);
        self.finish_call(id, outcome);
    }

    fn decode_reply(&mut self, command: usize, bytes: &[u8]) -> Result<Json, String> {
        let cmd = self.program.command(command);
        let lang = &self.pools[cmd.pool].lang;
        let reply = packet::parse_reply(bytes).map_err(|e| format!("malformed reply from pool '{lang}': {e}"))?;
        let schema = mcp::return_schema(cmd)?;
        let value: Value = match reply {
            Reply::Fail(message) => return Ok(mcp::error_result(&message)),
            Reply::Voidstar(blob) => voidstar::decode_flat(schema, blob).map_err(|e| format!("cannot decode the result of '{}': {e}", cmd.name))?,
            Reply::Msgpack(data) => msgpack::decode(schema, data).map_err(|e| format!("cannot decode the result of '{}': {e}", cmd.name))?,
            Reply::Rptr(relptr) => {
                let decoded = voidstar::decode(schema, &self.shm_reader, relptr);
                // Mappings are cheap to redo and volumes may be replaced.
                self.shm_reader.clear();
                decoded.map_err(|e| format!("cannot decode the shared-memory result of '{}': {e}", cmd.name))?
            }
            Reply::File(path) => {
                let data = std::fs::read(&path).map_err(|e| format!("cannot read the result file {}: {e}", path.display()))?;
                // Pools never delete their result files; we own them now.
                let _ = std::fs::remove_file(&path);
                msgpack::decode(schema, &data).map_err(|e| format!("cannot decode the result of '{}': {e}", cmd.name))?
            }
        };
        Ok(mcp::success_result(cmd, &value))
    }

    /// The connection failed mid-call: report how the pool died if it did.
    fn lost_connection(&mut self, id: CallId, message: String) {
        self.check_children();
        if self.calls.contains_key(&id) {
            self.finish_call(id, Err(message));
        }
    }

    fn finish_call(&mut self, id: CallId, outcome: Result<Json, String>) {
        let Some(mut call) = self.calls.remove(&id) else { return };
        if let Some((token, mut stream)) = call.stream.take() {
            let _ = self.poll.registry().deregister(&mut stream);
            self.sources.remove(&token);
        }
        let result = outcome.unwrap_or_else(|message| mcp::error_result(&message));
        self.send(&jsonrpc::result_response(&call.request.id, result));
    }

    fn drop_call(&mut self, id: CallId) {
        if let Some(mut call) = self.calls.remove(&id) {
            if let Some((token, mut stream)) = call.stream.take() {
                let _ = self.poll.registry().deregister(&mut stream);
                self.sources.remove(&token);
            }
        }
    }

    fn cancel(&mut self, request_id: &RequestId) {
        let found = self.calls.iter().find(|(_, c)| &c.request.id == request_id).map(|(id, _)| *id);
        if let Some(id) = found {
            // Closing the connection is all a pool understands; the worker
            // finishes and its write fails, which pools ignore.
            self.drop_call(id);
        }
    }

    fn time_out(&mut self, id: CallId) {
        let Some(call) = self.calls.get(&id) else { return };
        let pool = call.pool;
        let secs = self.options.call_timeout.map_or(0.0, |t| t.as_secs_f64());
        let lang = self.pools[pool].lang.clone();
        let was_running = call.stage != CallStage::WaitingForPool;
        self.finish_call(id, Err(format!("timed out after {secs} s waiting for pool '{lang}'")));
        if was_running {
            // A stuck worker would block every later call (Python pools serve
            // one call at a time), so the pool is restarted.
            eprintln!("morloc-mcp: restarting pool '{lang}' after a call timed out");
            let message = format!("pool '{lang}' was restarted because another call timed out");
            self.stop_pool(pool);
            self.fail_pool_calls(pool, &message);
            self.start_pool(pool);
        }
    }

    fn fail_pool_calls(&mut self, pool: usize, message: &str) {
        let ids: Vec<CallId> = self.calls.iter().filter(|(_, c)| c.pool == pool).map(|(id, _)| *id).collect();
        for id in ids {
            self.finish_call(id, Err(message.to_string()));
        }
    }

    // ---- pools ----------------------------------------------------------

    fn start_pool(&mut self, i: usize) {
        let now = Instant::now();
        let pool = &mut self.pools[i];
        while pool.restarts.front().is_some_and(|t| now.duration_since(*t) > RESTART_WINDOW) {
            pool.restarts.pop_front();
        }
        pool.restarts.push_back(now);
        pool.started_at = now;
        pool.probe_delay = PROBE_DELAY_MIN;
        pool.output_buf.clear();
        match proc::spawn_pool(&pool.spawn) {
            Ok(spawned) => {
                pool.pid = Some(spawned.pid);
                pool.status = PoolStatus::Starting;
                let fd = spawned.output;
                let token = self.token(Source::PoolOutput(i));
                let raw = fd.as_raw_fd();
                if let Err(e) = self.poll.registry().register(&mut SourceFd(&raw), token, Interest::READABLE) {
                    eprintln!("morloc-mcp: cannot watch the output of pool '{}': {e}", self.pools[i].lang);
                }
                self.pools[i].output = Some((token, fd));
                self.pools[i].next_probe = Some(now + PROBE_DELAY_MIN);
            }
            Err(e) => {
                let message = format!("cannot start pool '{}': {e}", pool.lang);
                eprintln!("morloc-mcp: {message}");
                pool.status = PoolStatus::Failed { message: message.clone(), at: now };
                self.fail_pool_calls(i, &message);
            }
        }
    }

    fn start_probe(&mut self, i: usize) {
        if !matches!(self.pools[i].status, PoolStatus::Starting) || self.pools[i].probe.is_some() {
            return;
        }
        match UnixStream::connect(&self.pools[i].socket_path) {
            Ok(mut stream) => {
                let token = self.token(Source::Probe(i));
                if self.poll.registry().register(&mut stream, token, Interest::READABLE | Interest::WRITABLE).is_err() {
                    self.sources.remove(&token);
                    return self.schedule_probe(i);
                }
                self.pools[i].probe = Some(Probe { stream, token, written: 0, read: Vec::new() });
                self.advance_probe(i);
            }
            // Not bound or not listening yet.
            Err(_) => self.schedule_probe(i),
        }
    }

    fn schedule_probe(&mut self, i: usize) {
        let pool = &mut self.pools[i];
        pool.next_probe = Some(Instant::now() + pool.probe_delay);
        pool.probe_delay = (pool.probe_delay * 3 / 2).min(PROBE_DELAY_MAX);
    }

    fn end_probe(&mut self, i: usize) {
        if let Some(mut probe) = self.pools[i].probe.take() {
            let _ = self.poll.registry().deregister(&mut probe.stream);
            self.sources.remove(&probe.token);
        }
    }

    fn advance_probe(&mut self, i: usize) {
        let ping = packet::ping();
        let Some(probe) = self.pools[i].probe.as_mut() else { return };
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
        self.end_probe(i);
        if !ok {
            return self.schedule_probe(i);
        }
        self.pools[i].status = PoolStatus::Ready;
        let waiting: Vec<CallId> = self
            .calls
            .iter()
            .filter(|(_, c)| c.pool == i && c.stage == CallStage::WaitingForPool)
            .map(|(id, _)| *id)
            .collect();
        for id in waiting {
            self.connect_call(id);
        }
    }

    fn read_pool_output(&mut self, i: usize) {
        let Some((_, fd)) = self.pools[i].output.as_ref() else { return };
        let raw = fd.as_raw_fd();
        let mut buf = [0u8; 16 * 1024];
        let mut closed = false;
        loop {
            // SAFETY: `buf` is a valid writable buffer; `raw` is the pool's
            // output pipe, owned by `self.pools[i].output`.
            let n = unsafe { libc::read(raw, buf.as_mut_ptr().cast(), buf.len()) };
            if n > 0 {
                self.pools[i].output_buf.extend_from_slice(&buf[..n as usize]);
                continue;
            }
            if n == 0 {
                closed = true;
                break;
            }
            let err = io::Error::last_os_error();
            match err.kind() {
                io::ErrorKind::Interrupted => continue,
                _ => break,
            }
        }
        self.emit_pool_lines(i, closed);
        if closed {
            self.close_pool_output(i);
        }
    }

    fn emit_pool_lines(&mut self, i: usize, flush_partial: bool) {
        let mut lines = Vec::new();
        {
            let pool = &mut self.pools[i];
            let mut start = 0;
            let buf = &pool.output_buf;
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
        let logger = format!("pool:{}", self.pools[i].lang);
        let mut stderr = io::stderr().lock();
        for line in lines {
            let _ = writeln!(stderr, "{line}");
            if let Some(note) = mcp::log_notification(&self.session, 1, &logger, &line) {
                self.send(&note);
            }
            let tail = &mut self.pools[i].tail;
            if tail.len() == STDERR_TAIL {
                tail.pop_front();
            }
            tail.push_back(line);
        }
    }

    fn close_pool_output(&mut self, i: usize) {
        if let Some((token, fd)) = self.pools[i].output.take() {
            let _ = self.poll.registry().deregister(&mut SourceFd(&fd.as_raw_fd()));
            self.sources.remove(&token);
        }
    }

    fn tail_note(&self, i: usize) -> String {
        let tail = &self.pools[i].tail;
        if tail.is_empty() {
            return String::new();
        }
        let lines: Vec<&str> = tail.iter().map(String::as_str).collect();
        format!("; its last output:\n{}", lines.join("\n"))
    }

    /// Reaps exited children and recovers the pools among them.
    fn check_children(&mut self) {
        for (pid, status) in proc::reap_any() {
            let Some(i) = self.pools.iter().position(|p| p.pid == Some(pid)) else {
                continue; // an orphaned worker re-parented to us
            };
            // Collect what the pool printed last, for the message.
            self.read_pool_output(i);
            self.pools[i].pid = None;
            // Its workers may outlive it: end the whole group.
            let _ = proc::kill_group(pid, libc::SIGKILL);
            self.end_probe(i);
            self.close_pool_output(i);
            let lang = self.pools[i].lang.clone();
            let starting = matches!(self.pools[i].status, PoolStatus::Starting);
            let message = if starting {
                format!("pool '{lang}' {status} during start-up{}", self.tail_note(i))
            } else {
                format!("pool '{lang}' died ({status}) while the call was running; it is being restarted")
            };
            eprintln!("morloc-mcp: pool '{lang}' (pid {pid}) {status}");
            self.fail_pool_calls_running(i, &message);
            let now = Instant::now();
            let recent = self.pools[i].restarts.iter().filter(|t| now.duration_since(**t) <= RESTART_WINDOW).count();
            if recent >= MAX_RESTARTS {
                let message = format!("pool '{lang}' keeps dying ({recent} starts within {} s; last: {status}); not restarting it for now{}", RESTART_WINDOW.as_secs(), self.tail_note(i));
                eprintln!("morloc-mcp: {message}");
                self.pools[i].status = PoolStatus::Failed { message: message.clone(), at: now };
                self.fail_pool_calls(i, &message);
            } else {
                self.start_pool(i);
            }
        }
    }

    /// Fails calls already sent to pool `i`; calls still waiting for it keep
    /// waiting for the restarted pool.
    fn fail_pool_calls_running(&mut self, i: usize, message: &str) {
        let ids: Vec<CallId> = self
            .calls
            .iter()
            .filter(|(_, c)| c.pool == i && c.stage != CallStage::WaitingForPool)
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.finish_call(id, Err(message.to_string()));
        }
        // Calls that were waiting will be connected once the new pool answers.
        for call in self.calls.values_mut() {
            if call.pool == i {
                call.stage = CallStage::WaitingForPool;
            }
        }
    }

    /// Stops pool `i`'s process group (TERM, grace, KILL) and reaps it.
    fn stop_pool(&mut self, i: usize) {
        self.end_probe(i);
        self.close_pool_output(i);
        if let Some(pid) = self.pools[i].pid.take() {
            stop_groups(&[pid]);
        }
    }

    fn shutdown(&mut self) {
        let ids: Vec<CallId> = self.calls.keys().copied().collect();
        for id in ids {
            self.drop_call(id);
        }
        let pids: Vec<i32> = self.pools.iter_mut().filter_map(|p| p.pid.take()).collect();
        stop_groups(&pids);
        for i in 0..self.pools.len() {
            self.end_probe(i);
            self.close_pool_output(i);
        }
        if !self.basename.is_empty() {
            self._volume0 = None;
            let _ = shm::unlink_all(&self.basename, &self.tmpdir);
        }
        if !self.tmpdir.as_os_str().is_empty() {
            let _ = proc::remove_tmpdir(&self.tmpdir);
        }
        // Deliver what is still queued, blocking if necessary.
        if !self.out.queue.is_empty() {
            let fd = self.out.fd.as_raw_fd();
            let _ = set_blocking(fd);
            self.flush_output();
        }
    }
}

/// TERM every group, wait up to [`STOP_GRACE`] for them to go, KILL the rest,
/// and reap.
fn stop_groups(pids: &[i32]) {
    for &pid in pids {
        let _ = proc::kill_group(pid, libc::SIGTERM);
    }
    let deadline = Instant::now() + STOP_GRACE;
    loop {
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
    let settle = Instant::now() + Duration::from_millis(50);
    while pids.iter().any(|&p| proc::group_alive(p)) && Instant::now() < settle {
        proc::reap_any();
        std::thread::sleep(Duration::from_millis(1));
    }
    proc::reap_any();
}

/// Borrows one of the standard descriptors, which stay open for the life of
/// the process.
fn borrow_fd(fd: RawFd) -> BorrowedFd<'static> {
    // SAFETY: only used for fds 0-2, which are never closed.
    unsafe { BorrowedFd::borrow_raw(fd) }
}

fn set_blocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: plain fcntl calls on a descriptor we own.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

fn frame_message(frame: Frame<'_>) -> jsonrpc::Incoming {
    match frame {
        Frame::Line(line) => jsonrpc::decode(line),
        Frame::TooLong => jsonrpc::Incoming::Invalid(jsonrpc::too_long_response()),
    }
}

/// Builds the CALL packet: one inline voidstar DATA packet per argument.
fn encode_call(program: &Program, command: usize, values: &[Value]) -> Result<Vec<u8>, String> {
    let cmd = program.command(command);
    let mut args = Vec::with_capacity(values.len());
    for (slot, (arg, value)) in cmd.args.iter().zip(values).enumerate() {
        let schema = mcp::slot_schema(arg).map_err(|why| format!("argument '{}' cannot be passed: {why}", mcp::slot_name(cmd, slot)))?;
        let blob = voidstar::encode_flat(&schema, value)
            .map_err(|e| format!("cannot encode argument '{}': {e}", mcp::slot_name(cmd, slot)))?;
        args.push(packet::data_packet_voidstar(&schema.to_wire_string(), &blob));
    }
    Ok(packet::call_packet(cmd.mid, &args))
}

/// File access for the `@save` / `@load` intrinsics of pure commands.
struct FsHost;

impl eval::Host for FsHost {
    fn read_file(&mut self, path: &str) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn write_file_atomic(&mut self, path: &str, bytes: &[u8]) -> io::Result<()> {
        let target = Path::new(path);
        let dir = target.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, target).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    }
}
