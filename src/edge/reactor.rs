//! The reactor: the one thread that does I/O.
//!
//! One `mio::Poll` multiplexes everything the server waits on: stdin (client
//! messages), the protocol stdout, a self-pipe carrying signals, each pool's
//! output pipe, a readiness probe per starting pool, one Unix-socket
//! connection per in-flight tool call, and the HTTP listener with its
//! connections. Events are dispatched on their [`Token`]; the protocol logic
//! lives in the pure `mcp`, `jsonrpc` and `http` modules, so the reactor is
//! about bytes, processes, deadlines and clean-up. It is split by concern:
//! this file has the loop, stdio and shutdown; `pools` starts, probes and
//! restarts pools; `calls` runs tool calls; `http` serves HTTP connections.
//!
//! Architecture Invariant: only this module (and its submodules) calls
//! `Poll::poll`, and only it (with the OS helpers in `proc` and `shm`)
//! touches file descriptors.

mod calls;
mod http;
mod idhash;
mod leases;
mod pools;
mod queue;
mod reload;
mod tasks;

use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use serde_json::Value as Json;

use crate::edge::cli::{HttpConfig, ServeConfig};
use crate::edge::proc;
use crate::protocol::instance::InstanceId;
use crate::protocol::jsonrpc::{self, Frame, LineFramer};
use crate::protocol::mcp::{self, Catalog, Program, Session, Step};
use crate::protocol::tools;
use idhash::{IdMap, IdSet};

use self::calls::{Call, CallId};
use self::http::HttpFront;
use self::pools::Runtime;

const STDIN: Token = Token(0);
const STDOUT: Token = Token(1);
const SIGNALS: Token = Token(2);
const LISTENER: Token = Token(3);
/// Pool pipes, probes, call connections and HTTP connections get tokens
/// from here up.
const FIRST_DYNAMIC: usize = 16;

/// Stop reading stdin while this much output is queued (client not reading).
const MAX_PENDING_OUTPUT: usize = 16 * 1024 * 1024;
/// After stdin closes, calls still running get this long to finish (so a
/// piped script gets its answers); then they are abandoned and we exit.
const EOF_GRACE: Duration = Duration::from_secs(5);
/// How long eager pools wait for the client's first message (see
/// `Reactor::new`).
const SPAWN_WAIT: Duration = Duration::from_millis(5);

/// A start-up failure, already phrased for the user.
#[derive(Debug)]
pub struct StartError(pub String);

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StartError {}

/// Knobs that apply to every transport.
#[derive(Clone, Debug)]
pub struct Options {
    /// Per-call deadline; `None` waits forever.
    pub call_timeout: Option<Duration>,
    /// Start pools on a program's first call instead of at start-up.
    pub lazy_pools: bool,
    /// How long a pool may take to answer its first ping.
    pub pool_start_timeout: Duration,
    /// The prefix of every session (and task) id this server mints.
    pub instance: InstanceId,
    /// Over HTTP, how long SIGTERM lets running calls finish.
    pub drain_timeout: Duration,
    /// `--pool-replicas`: the most processes per pool language.
    pub pool_replicas: Vec<(String, usize)>,
    /// How long a replica may sit idle before it is stopped.
    pub replica_idle: Duration,
    /// See `ServeConfig::task_after`.
    pub task_after: Duration,
    /// See `ServeConfig::task_ttl`.
    pub task_ttl: Duration,
    /// See `ServeConfig::task_dir`.
    pub task_dir: Option<std::path::PathBuf>,
    /// How long a call may wait for a pool process; `None` waits forever.
    pub queue_timeout: Option<Duration>,
    /// The most calls one owner may have waiting for a pool process (0: no cap).
    pub max_queued_per_owner: usize,
    /// The most calls waiting for a pool process in all (0: no cap).
    pub max_queued: usize,
}

/// Builds each program's tool surface (printing exclusion notes), then
/// serves over stdio or HTTP. Returns the process exit status.
pub fn serve(config: ServeConfig) -> Result<i32, StartError> {
    let mut programs = Vec::new();
    for p in config.programs {
        let surface = tools::build(&p.loaded.manifest);
        for note in &surface.notes {
            eprintln!("{note}");
        }
        programs.push(Program::new(p.loaded, surface).map_err(|e| StartError(e.to_string()))?);
    }
    let instance = match config.instance_id {
        Some(id) => id,
        None => {
            let mut random = [0u8; 6];
            proc::fill_random(&mut random)
                .map_err(|e| StartError(format!("cannot pick an instance id: {e}")))?;
            InstanceId::from_random(random)
        }
    };
    let options = Options {
        call_timeout: config.call_timeout,
        lazy_pools: config.lazy_pools,
        pool_start_timeout: config.pool_start_timeout,
        instance,
        drain_timeout: config.drain_timeout,
        pool_replicas: config.pool_replicas,
        replica_idle: config.replica_idle,
        task_after: config.task_after,
        task_ttl: config.task_ttl,
        task_dir: config.task_dir,
        queue_timeout: config.queue_timeout,
        max_queued_per_owner: config.max_queued_per_owner,
        max_queued: config.max_queued,
    };
    match config.http {
        None => {
            let Some(program) = programs.pop() else {
                return Err(StartError("nothing to serve".into()));
            };
            run_server(Catalog::single(program), options, None)
        }
        Some(http) => {
            // Over HTTP, tools are namespaced `<module>__<command>` unless the
            // user asked for the reference's plain single-program names.
            let namespaced = config.router || !config.plain_tool_names;
            let namespaced = namespaced && !(config.plain_tool_names && programs.len() == 1);
            let catalog = Catalog::multi(programs, namespaced, config.router)
                .map_err(|e| StartError(e.to_string()))?;
            run_server(catalog, options, Some(http))
        }
    }
}

fn run_server(
    mut catalog: Catalog,
    options: Options,
    http: Option<HttpConfig>,
) -> Result<i32, StartError> {
    // Before anything can print: the protocol stream gets a private fd and
    // fd 1 becomes stderr, so no stray write ever reaches the client.
    let protocol_out = proc::rehome_stdout()
        .map_err(|e| StartError(format!("cannot set up the protocol stream: {e}")))?;
    std::env::set_var("MORLOC_QUIET", "1");
    proc::ignore_sigpipe().map_err(|e| StartError(format!("cannot ignore SIGPIPE: {e}")))?;
    // Orphaned pool workers are re-parented to us so they can be reaped.
    let _ = proc::set_child_subreaper();
    // A rebuilt program is reloaded (`reactor::reload`), so the tool list
    // can change: both eras declare `tools.listChanged`.
    catalog.set_list_changes(true);
    let mut reactor = Reactor::new(catalog, options, protocol_out, http)?;
    let code = reactor.run();
    reactor.shutdown();
    Ok(code)
}

/// Who is waiting for a call's response.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Client {
    Stdio,
    /// An HTTP connection whose current request is the call; `session` is its
    /// `Mcp-Session-Id`.
    Http {
        conn: Token,
        session: String,
    },
}

#[derive(Clone, Copy, Debug)]
enum Source {
    PoolOutput { program: usize, pool: usize },
    Probe { program: usize, pool: usize },
    Call(CallId),
    Conn,
}

/// The stdio client: its session, its input framing and its output queue.
struct Stdio {
    session: Session,
    out: OwnedFd,
    queue: Vec<u8>,
    written: usize,
    /// The output fd is registered with the poller (epoll refuses regular files).
    out_pollable: bool,
    writable_interest: bool,
    stdin_pollable: bool,
    stdin_open: bool,
    /// Set when stdin reaches EOF: the latest time to exit.
    eof_deadline: Option<Instant>,
    /// A message has been handled (eager pools may start).
    answered_any: bool,
    /// Input was left unread while too much output was queued.
    stdin_paused: bool,
    framer: LineFramer,
}

struct Reactor {
    poll: Poll,
    catalog: Catalog,
    options: Options,
    /// `None` when serving HTTP.
    stdio: Option<Stdio>,
    http: Option<HttpFront>,
    signals: proc::SignalPipe,
    next_token: usize,
    sources: IdMap<Token, Source>,
    /// One per program of the catalog.
    runtimes: Vec<Runtime>,
    calls: IdMap<CallId, Call>,
    /// The calls waiting for a pool process, served round-robin across
    /// their owners (`queue`).
    queue: calls::Queue,
    /// Calls whose packet is being built, a slice per turn.
    preparing: calls::Preparing,
    /// The calls that may have a timer (a deadline, progress, a task
    /// deadline, a lost connection): those that left the queue, and those
    /// with progress or a task deadline from the start. Timers look only at
    /// these, so calls waiting in the queue cost nothing per turn.
    timed: IdSet<CallId>,
    /// Rate limit of the diagnostics about the queue and the pools.
    throttle: queue::Throttle,
    next_call: u64,
    exit_code: Option<i32>,
    /// Eager pools not yet spawned (see `Reactor::new`).
    pools_pending: Option<Instant>,
    /// Stale shared memory of dead runs has been removed.
    swept: bool,
    /// Open modern `subscriptions/listen` requests, told when the tool list
    /// changes.
    listeners: mcp::Listeners<Client>,
    /// The served manifests, watched for rebuilds.
    watches: Vec<reload::Watch>,
    /// When serving began (the uptime `/health` reports).
    started: Instant,
    /// Set by SIGTERM over HTTP: the latest time to exit (see
    /// `http::health`).
    draining: Option<Instant>,
    /// Calls that became tasks (Tasks extension), and their outcomes.
    tasks: mcp::tasks::Tasks,
    /// See `take_scratch`.
    scratch: Vec<u8>,
    /// Pool connections whose call is over, closed by `end_turn`.
    closing: Vec<mio::net::UnixStream>,
}

/// The read buffer for stdin, HTTP connections and pool output.
const SCRATCH_LEN: usize = 16 * 1024;

impl Reactor {
    fn new(
        catalog: Catalog,
        options: Options,
        protocol_out: OwnedFd,
        http: Option<HttpConfig>,
    ) -> Result<Reactor, StartError> {
        let io_err = |what: &str, e: io::Error| StartError(format!("{what}: {e}"));
        let poll = Poll::new().map_err(|e| io_err("cannot create the poller", e))?;
        let signals =
            proc::SignalPipe::new().map_err(|e| io_err("cannot install signal handlers", e))?;
        poll.registry()
            .register(
                &mut SourceFd(&signals.as_raw_fd()),
                SIGNALS,
                Interest::READABLE,
            )
            .map_err(|e| io_err("cannot watch signals", e))?;

        let stdio = if http.is_none() {
            Some(Stdio::new(&poll, protocol_out).map_err(|e| io_err("cannot set up stdio", e))?)
        } else {
            // Over HTTP nothing is ever written to stdout; the descriptor is
            // simply closed.
            drop(protocol_out);
            None
        };
        let http = match http {
            None => None,
            Some(config) => Some(HttpFront::bind(&poll, config, &catalog, &options.instance)?),
        };

        let mut runtimes = Vec::new();
        for program in &catalog.programs {
            runtimes.push(
                Runtime::new(program)
                    .map_err(|e| io_err("cannot prepare the pools' run directory", e))?,
            );
        }
        let task_ttl_ms = options.task_ttl.as_millis() as u64;
        let queue = queue::FairQueue::new(options.max_queued_per_owner, options.max_queued);
        let mut reactor = Reactor {
            poll,
            catalog,
            options,
            stdio,
            http,
            signals,
            next_token: FIRST_DYNAMIC,
            sources: IdMap::default(),
            runtimes,
            calls: IdMap::default(),
            queue,
            timed: IdSet::default(),
            throttle: queue::Throttle::default(),
            preparing: calls::Preparing::default(),
            next_call: 0,
            exit_code: None,
            pools_pending: None,
            swept: false,
            listeners: mcp::Listeners::default(),
            watches: Vec::new(),
            started: Instant::now(),
            draining: None,
            tasks: mcp::tasks::Tasks::new(task_ttl_ms, mcp::tasks::MAX_TASKS),
            scratch: Vec::new(),
            closing: Vec::new(),
        };
        reactor.watches = reload::watches(&reactor.catalog);
        reactor.load_tasks();
        // Pools are spawned once the client's first message has been
        // answered (or after a few milliseconds without one): a client's
        // `initialize` is not held up by forking interpreters.
        if !reactor.options.lazy_pools {
            let wait = if reactor.stdio.is_some() {
                SPAWN_WAIT
            } else {
                Duration::ZERO
            };
            reactor.pools_pending = Some(Instant::now() + wait);
        }
        Ok(reactor)
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
            let now = Instant::now();
            if self.drained(now) {
                return 0;
            }
            if let Some(stdio) = &self.stdio {
                if !stdio.stdin_open
                    && (self.calls.values().all(|c| c.abandoned)
                        || stdio.eof_deadline.is_some_and(|d| now >= d))
                {
                    return 0;
                }
            }
            let mut timeout = self
                .next_deadline()
                .map(|d| d.saturating_duration_since(now));
            let read_stdin_directly = self.stdio.as_ref().is_some_and(|s| {
                s.stdin_open && !s.stdin_pollable && s.queue.len() < MAX_PENDING_OUTPUT
            });
            if read_stdin_directly || self.preparing.pending() {
                timeout = Some(Duration::ZERO);
            }
            if let Some(at) = self.pools_pending {
                let left = at.saturating_duration_since(now);
                timeout = Some(timeout.map_or(left, |t| t.min(left)));
            }
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                // A signal interrupts epoll_wait even with SA_RESTART.
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                eprintln!("morloc-mcp: poll failed: {e}");
                return 1;
            }
            for event in events.iter() {
                match event.token() {
                    STDIN => {
                        let hup = event.is_read_closed();
                        self.read_stdin_until(hup)
                    }
                    STDOUT => self.flush_stdout(),
                    SIGNALS => self.handle_signals(),
                    LISTENER => self.accept_http(),
                    token => match self.sources.get(&token).copied() {
                        Some(Source::PoolOutput { program, pool }) => {
                            self.read_pool_output(program, pool)
                        }
                        Some(Source::Probe { program, pool }) => self.advance_probe(program, pool),
                        Some(Source::Call(id)) => self.advance_call(id),
                        Some(Source::Conn) => {
                            self.http_event(token, event.is_readable(), event.is_writable())
                        }
                        None => {}
                    },
                }
            }
            if read_stdin_directly {
                self.read_stdin();
            }
            self.prepare_slice();
            if let Some(at) = self.pools_pending {
                let answered = self.stdio.as_ref().is_some_and(|s| s.answered_any);
                if answered || Instant::now() >= at {
                    self.pools_pending = None;
                    for program in 0..self.runtimes.len() {
                        self.start_all_pools(program);
                    }
                }
            }
            self.run_timers();
            self.end_turn();
        }
    }

    /// Work kept off the path of a call: after the turn's answers are
    /// written, the finished calls' pool connections are closed, and every
    /// ready pool process gets a spare socket for its next call.
    fn end_turn(&mut self) {
        self.closing.clear();
        for program in 0..self.runtimes.len() {
            if self.runtimes[program].retired {
                continue;
            }
            for pool in &mut self.runtimes[program].pools {
                if pool.spare.is_none() && matches!(pool.status, pools::PoolStatus::Ready) {
                    pool.spare = calls::unix_socket().ok();
                }
            }
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        let mut best: Option<Instant> = None;
        let mut consider = |t: Option<Instant>| {
            if let Some(t) = t {
                best = Some(best.map_or(t, |b| b.min(t)));
            }
        };
        for rt in &self.runtimes {
            rt.deadlines(
                self.options.pool_start_timeout,
                self.options.replica_idle,
                &mut consider,
            );
        }
        for call in self.timed.iter().filter_map(|id| self.calls.get(id)) {
            consider(call.deadline);
            consider(call.next_progress);
            consider(call.lost_until());
            consider(call.task_at);
        }
        consider(self.queue.next_deadline());
        consider(self.throttle.next_flush());
        consider(self.next_task_expiry());
        if let Some(http) = &self.http {
            consider(http.next_deadline());
        }
        if let Some(stdio) = &self.stdio {
            consider(stdio.eof_deadline);
        }
        consider(self.next_reload_check());
        consider(self.draining);
        best
    }

    fn run_timers(&mut self) {
        let now = Instant::now();
        self.pool_timers(now);
        self.call_timers(now);
        self.task_timers(now);
        self.http_timers(now);
        self.reload_timers(now);
    }

    fn handle_signals(&mut self) {
        for sig in self.signals.drain() {
            match sig {
                libc::SIGCHLD => self.check_children(),
                // Over HTTP the first SIGTERM drains: running calls may
                // finish while the balancer moves traffic elsewhere; a
                // second one (or SIGINT, SIGHUP) stops at once.
                libc::SIGTERM if self.http.is_some() && self.draining.is_none() => {
                    self.start_drain();
                }
                libc::SIGTERM | libc::SIGINT | libc::SIGHUP => {
                    self.exit_code.get_or_insert(128 + sig);
                }
                _ => {}
            }
        }
    }

    // ---- delivering messages --------------------------------------------

    /// Sends a message to a client: a reply completes an HTTP request; a
    /// notification rides on the request's event stream, if it has one.
    fn deliver(&mut self, client: &Client, msg: &Json, is_reply: bool) {
        match client {
            Client::Stdio => self.send_stdio(msg),
            Client::Http { conn, .. } => {
                let conn = *conn;
                if is_reply {
                    self.http_reply(conn, msg);
                } else {
                    self.http_notify(conn, msg);
                }
            }
        }
    }

    /// Whether pool output should be forwarded to the client of this call
    /// now: a modern call that asked for log messages, or a legacy client
    /// whose session did.
    fn call_wants_logs(&self, client: &Client, request: &mcp::CallRequest) -> bool {
        if let Some(meta) = &request.modern {
            return meta.log_level.is_some()
                && match client {
                    Client::Stdio => true,
                    Client::Http { conn, .. } => self.http_streaming(*conn),
                };
        }
        match client {
            Client::Stdio => self
                .stdio
                .as_ref()
                .is_some_and(|s| s.session.log_level.is_some()),
            Client::Http { conn, .. } => self.http_streaming(*conn),
        }
    }

    // ---- stdio ----------------------------------------------------------

    fn read_stdin(&mut self) {
        self.read_stdin_until(true);
    }

    /// Reads stdin. `to_eagain` false allows stopping after a short read:
    /// the poller said no EOF came with this data, and further data brings
    /// a new event, so the read that would only say EAGAIN is skipped.
    fn read_stdin_until(&mut self, to_eagain: bool) {
        let mut buf = self.take_scratch();
        self.read_stdin_into(&mut buf, to_eagain);
        self.scratch = buf;
    }

    /// A read buffer allocated and zeroed once, not per wake-up (put it
    /// back in `scratch` when done; a nested reader gets a fresh one).
    pub(super) fn take_scratch(&mut self) -> Vec<u8> {
        let buf = std::mem::take(&mut self.scratch);
        if buf.len() == SCRATCH_LEN {
            buf
        } else {
            vec![0u8; SCRATCH_LEN]
        }
    }

    fn read_stdin_into(&mut self, buf: &mut [u8], to_eagain: bool) {
        // SAFETY: fd 0 stays open for the life of the process; ManuallyDrop
        // keeps the File from closing it.
        let mut stdin = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(0) });
        loop {
            let Some(stdio) = self.stdio.as_mut() else {
                return;
            };
            if stdio.queue.len() >= MAX_PENDING_OUTPUT {
                // Resumed by `flush_stdout` once the client reads again.
                stdio.stdin_paused = true;
                return;
            }
            if self.exit_code.is_some() || !stdio.stdin_open {
                return;
            }
            match stdin.read(buf) {
                Ok(0) => {
                    stdio.stdin_open = false;
                    stdio.eof_deadline = Some(Instant::now() + EOF_GRACE);
                    if stdio.stdin_pollable {
                        let _ = self.poll.registry().deregister(&mut SourceFd(&0));
                    }
                    if let Some(frame) = stdio.framer.finish() {
                        let msg = frame_message(frame);
                        self.dispatch_stdio(msg);
                    }
                    return;
                }
                Ok(n) => {
                    stdio.framer.push(&buf[..n]);
                    let pollable = stdio.stdin_pollable;
                    while let Some(step) = self.next_stdio_step() {
                        self.run_stdio_step(step);
                    }
                    if let Some(stdio) = self.stdio.as_mut() {
                        stdio.framer.trim();
                    }
                    // Regular file: one chunk per loop turn, so pool events
                    // interleave with a long input file. A pipe may stop at
                    // a short read unless the event also reported a closed
                    // writer: with edge-triggered polling that EOF would
                    // otherwise never be seen.
                    if !pollable || (!to_eagain && n < buf.len()) {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    eprintln!("morloc-mcp: input read error: {e}");
                    stdio.stdin_open = false;
                    stdio.eof_deadline = Some(Instant::now() + EOF_GRACE);
                    return;
                }
            }
        }
    }

    fn dispatch_stdio(&mut self, msg: jsonrpc::Incoming) {
        let Some(stdio) = self.stdio.as_mut() else {
            return;
        };
        stdio.answered_any = true;
        let step = mcp::handle(&self.catalog, &mut stdio.session, msg);
        self.run_stdio_step(step);
    }

    /// Handles the next complete stdin line, if any. A `tools/call`'s
    /// arguments are read from the line in place (`decode_lazy`), so a large
    /// one is encoded for its pool without a JSON tree.
    fn next_stdio_step(&mut self) -> Option<Step> {
        let stdio = self.stdio.as_mut()?;
        let frame = stdio.framer.next_line()?;
        stdio.answered_any = true;
        Some(match frame {
            Frame::Line(line) => {
                let (msg, arguments) = jsonrpc::decode_lazy(line);
                let mut step = mcp::handle_lazy(&self.catalog, &mut stdio.session, msg, arguments);
                step.hand_over(None, line);
                step
            }
            Frame::TooLong => {
                let msg = jsonrpc::Incoming::Invalid(jsonrpc::too_long_response());
                mcp::handle(&self.catalog, &mut stdio.session, msg)
            }
        })
    }

    fn run_stdio_step(&mut self, step: Step) {
        match step {
            Step::Nothing => {}
            Step::Reply(reply) => self.send_stdio(&reply),
            Step::Cancel(id) => {
                // A cancelled subscription simply ends: nothing more is sent
                // for it, not even a response.
                if !self.listeners.remove(&Client::Stdio, &id) {
                    self.cancel(&Client::Stdio, &id);
                }
            }
            Step::Call(request) => self.start_call(Client::Stdio, request),
            Step::Task(request) => {
                let reply = self.answer_task("", request);
                self.send_stdio(&reply);
            }
            Step::Listen(mut listen) => {
                self.agreed_task_ids(&mut listen, "");
                self.listeners.add(Client::Stdio, &listen);
                self.send_stdio(&mcp::subscriptions::acknowledgement(&listen));
            }
        }
    }

    /// Tells every subscriber that the tool list changed: modern
    /// `subscriptions/listen` requests that asked for it, on their stream.
    pub(crate) fn notify_tools_changed(&mut self) {
        for (client, note) in self.listeners.tools_changed() {
            self.deliver(&client, &note, false);
        }
    }

    fn send_stdio(&mut self, msg: &Json) {
        let Some(stdio) = self.stdio.as_mut() else {
            return;
        };
        jsonrpc::write_line(&mut stdio.queue, msg);
        self.flush_stdout();
    }

    fn flush_stdout(&mut self) {
        let Some(stdio) = self.stdio.as_mut() else {
            return;
        };
        let fd = stdio.out.as_raw_fd();
        while stdio.written < stdio.queue.len() {
            let pending = &stdio.queue[stdio.written..];
            // SAFETY: `pending` is a valid buffer of that length; `fd` is our
            // private protocol descriptor.
            let n = unsafe { libc::write(fd, pending.as_ptr().cast(), pending.len()) };
            if n > 0 {
                stdio.written += n as usize;
                continue;
            }
            let err = io::Error::last_os_error();
            match err.kind() {
                _ if n == 0 => {}
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => {
                    if stdio.out_pollable && !stdio.writable_interest {
                        let _ = self.poll.registry().register(
                            &mut SourceFd(&fd),
                            STDOUT,
                            Interest::WRITABLE,
                        );
                        stdio.writable_interest = true;
                    }
                    return;
                }
                _ => {}
            }
            // The client went away: nothing more can be delivered.
            if n == 0 || err.kind() == io::ErrorKind::BrokenPipe {
                eprintln!("morloc-mcp: protocol stream closed");
                self.exit_code.get_or_insert(0);
            } else {
                eprintln!("morloc-mcp: protocol write failed: {err}");
                self.exit_code.get_or_insert(1);
            }
            stdio.queue.clear();
            stdio.written = 0;
            return;
        }
        stdio.queue.clear();
        stdio.written = 0;
        if stdio.writable_interest {
            let _ = self.poll.registry().deregister(&mut SourceFd(&fd));
            stdio.writable_interest = false;
        }
        if std::mem::take(&mut stdio.stdin_paused) {
            self.read_stdin();
        }
    }

    // ---- shutdown -------------------------------------------------------

    fn shutdown(&mut self) {
        // A stdio client that closed its input may still read the output:
        // calls abandoned at EOF get an answer rather than silence. After a
        // terminating signal nothing more is said.
        let at_eof = self.exit_code.is_none_or(|c| c == 0);
        // Subscriptions on stdio end gracefully: a final result per listen
        // request tells the client they closed on purpose.
        for listener in self.listeners.remove_where(|_| true) {
            if listener.client == Client::Stdio && !at_eof {
                continue;
            }
            let reply = mcp::subscriptions::closing_response(&self.catalog, &listener.id);
            self.deliver(&listener.client, &reply, true);
            // On stdio there is no stream to close: the server ends a
            // subscription with `notifications/cancelled` naming it.
            if listener.client == Client::Stdio {
                let note = mcp::subscriptions::teardown_notification(&listener.id);
                self.send_stdio(&note);
            }
        }
        let ids: Vec<CallId> = self.calls.keys().copied().collect();
        for id in ids {
            // A task's call is just dropped: its task stays `working`, and
            // with `--task-dir` the next start reports it failed.
            if at_eof
                && self
                    .calls
                    .get(&id)
                    .is_some_and(|c| c.client == Client::Stdio && c.task.is_none())
            {
                self.finish_call(
                    id,
                    Err("the server is shutting down; the call was abandoned".into()),
                );
            } else {
                self.drop_call(id);
            }
        }
        self.stop_all_pools();
        for rt in &mut self.runtimes {
            rt.remove_files();
        }
        if let Some(http) = self.http.take() {
            drop(http);
        }
        // Deliver what is still queued, blocking if necessary.
        if let Some(stdio) = self.stdio.as_ref() {
            if !stdio.queue.is_empty() {
                let _ = set_blocking(stdio.out.as_raw_fd());
                self.flush_stdout();
            }
        }
    }
}

impl Stdio {
    fn new(poll: &Poll, out: OwnedFd) -> io::Result<Stdio> {
        // stdin: a pipe or tty is polled; epoll refuses regular files and
        // /dev/null (EPERM), which are then read directly: they never block.
        let stdin_pollable =
            match poll
                .registry()
                .register(&mut SourceFd(&0), STDIN, Interest::READABLE)
            {
                Ok(()) => {
                    proc::set_nonblocking(borrow_fd(0))?;
                    true
                }
                Err(e) if e.raw_os_error() == Some(libc::EPERM) => false,
                Err(e) => return Err(e),
            };
        let out_fd = out.as_raw_fd();
        let out_pollable =
            match poll
                .registry()
                .register(&mut SourceFd(&out_fd), STDOUT, Interest::WRITABLE)
            {
                Ok(()) => {
                    proc::set_nonblocking(out.as_fd())?;
                    // Registered again only while there is something to write.
                    poll.registry().deregister(&mut SourceFd(&out_fd))?;
                    true
                }
                Err(e) if e.raw_os_error() == Some(libc::EPERM) => false,
                Err(e) => return Err(e),
            };
        Ok(Stdio {
            session: Session::default(),
            out,
            queue: Vec::new(),
            written: 0,
            out_pollable,
            writable_interest: false,
            stdin_pollable,
            stdin_open: true,
            eof_deadline: None,
            answered_any: false,
            stdin_paused: false,
            framer: LineFramer::default(),
        })
    }
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
