//! The reactor: the one thread that does I/O.
//!
//! One `mio::Poll` multiplexes everything the server waits on: stdin (client
//! messages), the protocol stdout, a self-pipe carrying signals, each pool's
//! output pipe, a readiness probe per starting pool, one Unix-socket
//! connection per in-flight tool call, and the HTTP listener with its
//! connections. Events are dispatched on their [`Token`]; the protocol logic
//! lives in the pure `mcp`, `jsonrpc` and `http` modules, so the reactor is
//! about bytes, processes, deadlines and clean-up. It is split by concern:
//! this file has the loop, the one `apply` of a transport's step (a tool
//! call goes on from there to `calls`), and shutdown; `serve` starts it;
//! `apply` has where a step came from and how it is answered; `stdio`
//! serves stdin and stdout;
//! `pools` owns the pools (`PoolSet`) and starts, probes and restarts them;
//! `calls` runs tool calls, placed on pool processes by the pure `schedule`;
//! `http` serves HTTP connections; `byteio` is the one write queue and the
//! one read loop they share.
//!
//! Architecture Invariant: only this module (and its submodules) calls
//! `Poll::poll`, and only it (with the OS helpers in `proc` and `shm`)
//! touches file descriptors.

mod apply;
mod byteio;
mod calls;
mod http;
mod idhash;
mod obs;
mod pools;
mod queue;
mod reload;
mod schedule;
mod serve;
mod stdio;
mod tasks;
mod timers;

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};

use crate::edge::cli::{HttpConfig, Settings};
use crate::edge::{log, proc};
use crate::protocol::http::Framing;
use crate::protocol::jsonrpc::RequestId;
use crate::protocol::mcp::call::{Ending, Outgoing};
use crate::protocol::mcp::{self, CallRequest, Catalog, Step};
use crate::protocol::metrics::Outcome;
use idhash::IdMap;

use self::apply::Origin;
use self::byteio::Streamed;
use self::calls::{CallId, Calls};
use self::http::{Content, Head, HttpFront};
use self::obs::CallTrace;
use self::pools::{Limits, PoolSet, Proc, Runtime};
use self::stdio::Stdio;
use self::tasks::{ResourceBody, TaskStore};
pub use serve::serve;
use serve::Serving;

const STDIN: Token = Token(0);
const STDOUT: Token = Token(1);
const SIGNALS: Token = Token(2);
const LISTENER: Token = Token(3);
/// Pool pipes, probes, call connections and HTTP connections get tokens
/// from here up.
const FIRST_DYNAMIC: usize = 16;

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
    PoolOutput {
        program: usize,
        pool: Proc,
    },
    Probe {
        program: usize,
        pool: Proc,
    },
    Call(CallId),
    Conn,
    /// The OAuth key set's fetch (`http::oauth`).
    #[cfg_attr(not(feature = "oauth"), allow(dead_code))]
    Jwks,
}

/// What each dynamic token stands for, and the next one to hand out.
struct Sources {
    next: usize,
    map: IdMap<Token, Source>,
}

impl Default for Sources {
    fn default() -> Sources {
        Sources {
            next: FIRST_DYNAMIC,
            map: IdMap::default(),
        }
    }
}

impl Sources {
    fn add(&mut self, source: Source) -> Token {
        let token = self.reserve();
        self.bind(token, source);
        token
    }

    /// A new token that names no source yet (see `pools::Spare`); events
    /// under it are ignored until it is bound.
    fn reserve(&mut self) -> Token {
        let token = Token(self.next);
        self.next += 1;
        token
    }

    fn bind(&mut self, token: Token, source: Source) {
        self.map.insert(token, source);
    }

    fn get(&self, token: &Token) -> Option<&Source> {
        self.map.get(token)
    }

    fn remove(&mut self, token: &Token) -> Option<Source> {
        self.map.remove(token)
    }
}

struct Reactor {
    poll: Poll,
    catalog: Catalog,
    /// Every serving option (`cli::settings`).
    options: Settings,
    /// `None` when serving HTTP.
    stdio: Option<Stdio>,
    http: Option<HttpFront>,
    signals: proc::SignalPipe,
    sources: Sources,
    /// The pools of every program of the catalog.
    pools: PoolSet,
    /// The calls in flight, their queue and their timers.
    calls: Calls,
    /// Calls whose packet is being built, and other long work done a
    /// slice per turn (`calls::prepare`).
    preparing: calls::Preparing,
    exit_code: Option<i32>,
    /// Open modern `subscriptions/listen` requests, told when the tool list
    /// changes.
    listeners: mcp::Listeners<Client>,
    /// The served manifests, watched for rebuilds.
    watches: reload::Watches,
    /// Calls that became tasks (Tasks extension), their outcomes, and the
    /// stored big results.
    tasks: TaskStore,
    /// The read buffer of stdin, HTTP connections and pool output,
    /// allocated and zeroed once, not per wake-up (`SCRATCH_LEN`).
    scratch: Vec<u8>,
}

/// The read buffer for stdin, HTTP connections and pool output.
const SCRATCH_LEN: usize = 16 * 1024;

impl Reactor {
    fn new(
        catalog: Catalog,
        options: Settings,
        serving: Serving,
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
            Some(config) => Some(
                HttpFront::bind(&poll, config, &options, &catalog, &serving.instance)?
                    .with_metrics_token(serving.metrics_token),
            ),
        };

        let mut runtimes = Vec::new();
        for program in &catalog.programs {
            runtimes.push(
                Runtime::new(program)
                    .map_err(|e| io_err("cannot prepare the pools' run directory", e))?,
            );
        }
        let queue = queue::FairQueue::new(options.max_queued_per_owner, options.max_queued);
        // `--task-dir`'s tasks and results are read back here.
        let tasks = TaskStore::new(&options, serving.instance);
        let watches = reload::Watches::new(&catalog);
        let limits = Limits::of(&options);
        let mut reactor = Reactor {
            poll,
            catalog,
            options,
            tasks,
            stdio,
            http,
            signals,
            sources: Sources::default(),
            pools: PoolSet::new(runtimes, limits),
            calls: Calls::new(queue),
            preparing: calls::Preparing::default(),
            exit_code: None,
            listeners: mcp::Listeners::default(),
            watches,
            scratch: Vec::new(),
        };
        // Pools are spawned once the client's first message has been
        // answered (or after a few milliseconds without one): a client's
        // `initialize` is not held up by forking interpreters.
        if !reactor.options.lazy_pools {
            let wait = if reactor.stdio.is_some() {
                SPAWN_WAIT
            } else {
                Duration::ZERO
            };
            reactor.pools.set_pending(Some(Instant::now() + wait));
        }
        Ok(reactor)
    }

    // ---- the loop -------------------------------------------------------

    fn run(&mut self) -> i32 {
        let mut events = Events::with_capacity(256);
        log::batch(true);
        let code = self.run_loop(&mut events);
        log::batch(false);
        code
    }

    fn run_loop(&mut self, events: &mut Events) -> i32 {
        loop {
            if let Some(code) = self.exit_code {
                return code;
            }
            let now = Instant::now();
            let idle = || self.calls.idle();
            if self.http.as_ref().is_some_and(|h| h.drained(now, idle())) {
                return 0;
            }
            if let Some(stdio) = &self.stdio {
                if stdio.finished(self.calls.idle(), now) {
                    return 0;
                }
            }
            let mut timeout = self
                .next_deadline()
                .map(|d| d.saturating_duration_since(now));
            let read_stdin_directly = self.stdio.as_ref().is_some_and(Stdio::reads_directly);
            // Connections paused for backpressure whose address drained.
            for token in self
                .http
                .as_mut()
                .map(HttpFront::take_woken)
                .unwrap_or_default()
            {
                self.preparing.pump_later(token);
            }
            if read_stdin_directly || self.preparing.pending() {
                timeout = Some(Duration::ZERO);
            }
            if let Err(e) = wait(&mut self.poll, &self.sources, events, (now, timeout)) {
                // A signal interrupts epoll_wait even with SA_RESTART.
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                log::error(&format!("poll failed: {e}"));
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
                    LISTENER => {
                        if let Some((front, cx)) = &mut self.lend_http() {
                            front.accept(cx);
                        }
                        self.http_news();
                    }
                    token => match self.sources.get(&token).copied() {
                        Some(Source::PoolOutput { program, pool }) => {
                            self.with_pools(&mut |p, cx| p.read_output(cx, program, pool))
                        }
                        Some(Source::Probe { program, pool }) => {
                            self.with_pools(&mut |p, cx| p.advance_probe(cx, program, pool))
                        }
                        Some(Source::Call(id)) => self.advance_call(id),
                        Some(Source::Conn) => {
                            if let Some((front, cx)) = &mut self.lend_http() {
                                front.event(cx, token, event.is_readable(), event.is_writable());
                            }
                            self.http_news();
                        }
                        Some(Source::Jwks) => {
                            if let Some((front, cx)) = &mut self.lend_http() {
                                front.keys_event(cx);
                            }
                            self.http_news();
                        }
                        None => {}
                    },
                }
            }
            if read_stdin_directly {
                self.read_stdin_until(true);
            }
            self.prepare_slice();
            self.run_timers();
            self.end_turn();
        }
    }

    /// Work kept off the path of a call: after the turn's answers are
    /// written, the finished calls' pool connections are closed, and every
    /// ready pool process gets a spare socket for its next call, already
    /// watched by the poller (so a call only connects and sends).
    fn end_turn(&mut self) {
        self.calls.close_finished();
        let (registry, sources) = (self.poll.registry(), &mut self.sources);
        self.pools
            .make_spares(|| calls::spare(registry, sources).ok());
        log::flush();
    }

    fn next_deadline(&mut self) -> Option<Instant> {
        let mut best: Option<Instant> = None;
        let mut consider = |t: Option<Instant>| {
            if let Some(t) = t {
                best = Some(best.map_or(t, |b| b.min(t)));
            }
        };
        consider(self.pools.next_deadline());
        self.calls.deadlines(&mut consider);
        consider(self.tasks.next_expiry());
        if let Some(http) = &mut self.http {
            consider(http.next_deadline());
        }
        if let Some(stdio) = &self.stdio {
            consider(stdio.eof_deadline());
        }
        consider(self.watches.next_check());
        best
    }

    fn run_timers(&mut self) {
        let now = Instant::now();
        // Eager pools start once the client's first message is answered,
        // or when their wait is over.
        if self.stdio.as_ref().is_some_and(Stdio::answered_any) {
            self.pools.hurry_pending(now);
        }
        self.with_pools(&mut |p, cx| p.timers(cx, now));
        #[cfg(debug_assertions)]
        {
            // The keyed deadlines are those a full scan finds.
            let missing = self.pools.unarmed(&self.options);
            assert!(missing.is_empty(), "pool deadlines not armed: {missing:?}");
        }
        self.call_timers(now);
        self.tasks.expire();
        if let Some((front, cx)) = &mut self.lend_http() {
            front.timers(cx, now);
        }
        self.http_news();
        self.reload_timers(now);
    }

    fn handle_signals(&mut self) {
        for sig in self.signals.drain() {
            match sig {
                libc::SIGCHLD => self.with_pools(&mut PoolSet::check_children),
                // Over HTTP the first SIGTERM drains: running calls may
                // finish while the balancer moves traffic elsewhere; a
                // second one (or SIGINT, SIGHUP) stops at once.
                libc::SIGTERM if self.http.as_ref().is_some_and(|h| !h.draining()) => {
                    self.start_drain();
                }
                libc::SIGTERM | libc::SIGINT | libc::SIGHUP => {
                    self.exit_code.get_or_insert(128 + sig);
                }
                _ => {}
            }
        }
    }

    // ---- the one apply ----------------------------------------------------

    /// Carries out `step` from `origin`, and answers it: the one place a
    /// transport's step meets the owners (`apply` has where a step came
    /// from and how its answer is framed).
    fn apply(&mut self, origin: Origin, step: Step) {
        match step {
            Step::Nothing => self.accepted(&origin),
            Step::Reply(reply) => self.reply_to(&origin, &reply, Framing::reply_status),
            Step::Cancel(id) => {
                self.cancel_request(&origin, &id);
                self.accepted(&origin);
            }
            // A tool call on its way to its pool (admitted by its transport):
            // over HTTP its connection is held for the answer, if still open.
            Step::Call(step) => {
                let client = match (origin, self.lend_http()) {
                    (Origin::Stdio, _) => Some(Client::Stdio),
                    (Origin::Http { conn, framing }, Some((front, mut cx))) => {
                        front.open_call(&mut cx, conn, framing)
                    }
                    (Origin::Http { .. }, None) => None,
                };
                self.http_news();
                if let Some(client) = client {
                    self.start_call(client, step);
                }
            }
            Step::Task(request) => {
                let owner = owner_of(&origin, self.http.as_ref());
                // Over HTTP a long result is written from the task as the
                // client reads (`Task::apart`), not copied into its queue.
                let http = matches!(origin, Origin::Http { .. });
                let (reply, held) = self.answer_task(&owner, request, http);
                if let (Origin::Http { conn, framing }, Some(held)) = (&origin, held) {
                    let head = Head {
                        status: framing.task_status(&reply),
                        content_type: Some("application/json"),
                        headers: &framing.headers,
                        keep_alive: framing.keep_alive,
                    };
                    let streamed = Streamed::apart(&reply, held.at, &held.text);
                    let content = Content::Streamed(streamed);
                    if let Some((front, cx)) = &mut self.lend_http() {
                        front.answer(cx, *conn, head, content);
                    }
                    return self.http_news();
                }
                self.reply_to(&origin, &reply, Framing::task_status);
            }
            Step::Resource(request) => {
                let owner = owner_of(&origin, self.http.as_ref());
                match origin {
                    Origin::Stdio => {
                        let reply = self
                            .tasks
                            .answer_resource(&self.catalog, &owner, request, false)
                            .0;
                        self.send_stdio(&reply);
                    }
                    Origin::Http { conn, framing } => {
                        let (status, body) =
                            self.tasks
                                .http_resource(&self.catalog, &owner, request, &framing);
                        let (headers, keep_alive) = (&framing.headers, framing.keep_alive);
                        match body {
                            ResourceBody::Streamed(answer) => {
                                let head = Head {
                                    status,
                                    content_type: Some("application/json"),
                                    headers,
                                    keep_alive,
                                };
                                let content = Content::Streamed(answer);
                                if let Some((front, cx)) = &mut self.lend_http() {
                                    front.answer(cx, conn, head, content);
                                }
                            }
                            ResourceBody::Whole(body) => {
                                if let Some((front, cx)) = &mut self.lend_http() {
                                    front.respond(cx, conn, status, headers, &body, keep_alive);
                                }
                            }
                        }
                        self.http_news();
                    }
                }
            }
            Step::Listen(mut listen) => {
                let owner = owner_of(&origin, self.http.as_ref());
                self.tasks.agreed_ids(&mut listen, &owner);
                let ack = mcp::subscriptions::acknowledgement(&listen);
                let client = origin.client();
                match origin {
                    Origin::Stdio => {
                        self.listeners.add(client, &listen);
                        self.send_stdio(&ack);
                    }
                    Origin::Http { conn, framing } => {
                        let Some((front, cx)) = &mut self.lend_http() else {
                            return;
                        };
                        if !front.open_listen(conn, framing, &listen.id, &ack) {
                            return;
                        }
                        front.flush(cx, conn);
                        self.listeners.add(client, &listen);
                        self.http_news();
                    }
                }
            }
        }
    }

    /// Starts tool call `request` of `client`: [`Calls::start`] gives its
    /// packet (`call::prepare`), or its answer, and queues it; `started`
    /// carries out what that leaves to the other owners.
    fn start_call(&mut self, client: Client, request: CallRequest) {
        // A child of the request's span, if the request has an open record.
        let (stdio, http) = (self.stdio.as_ref(), self.http.as_ref());
        let trace = |client: &Client, id: &RequestId| {
            let access = match client {
                Client::Stdio => stdio?.access_of(id)?,
                Client::Http { conn, .. } => http?.access_of(*conn)?,
            };
            Some(CallTrace::child_of(access))
        };
        let timeout = self.options.queue_timeout;
        let calls: &mut Calls = &mut self.calls;
        let start = calls.start(&self.catalog, &self.pools, client, request, &trace, timeout);
        self.started(start);
    }

    // ---- delivering messages --------------------------------------------

    /// Sends a message to a client: a reply completes an HTTP request; a
    /// notification rides on the request's event stream, if it has one.
    fn deliver<'a>(&mut self, client: &Client, msg: impl Into<Outgoing<'a>>, is_reply: bool) {
        match client {
            Client::Stdio => self.send_stdio(msg),
            Client::Http { conn, .. } => {
                let conn = *conn;
                let msg = msg.into();
                if let Some((front, cx)) = &mut self.lend_http() {
                    if is_reply {
                        front.reply(cx, conn, msg);
                    } else {
                        front.notify(cx, conn, &msg.into_message());
                    }
                }
                self.http_news();
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
                    .is_some_and(|c| c.client() == &Client::Stdio && c.task().is_none())
            {
                let message = "the server is shutting down; the call was abandoned";
                self.end_call(id, Ending::Error(message.into()));
            } else if let Some(call) = self.take_call(id) {
                let started = call.started();
                self.calls
                    .count(&self.catalog, call.request(), Outcome::Cancelled, started);
            }
        }
        // Every pool process is stopped, and the exit waits on the signal
        // pipe until every group is gone (at most the stop grace and a
        // moment after SIGKILL).
        self.with_pools(&mut PoolSet::stop_all);
        let mut events = Events::with_capacity(8);
        while let Some(at) = self.pools.settle_stops() {
            let timeout = at.saturating_duration_since(Instant::now());
            // Woken by SIGCHLD (the signal pipe) or the next deadline.
            let _ = self.poll.poll(&mut events, Some(timeout));
            let _ = self.signals.drain();
        }
        self.pools.remove_all_files();
        if let Some(http) = self.http.take() {
            drop(http);
        }
        // Deliver what is still queued, blocking if necessary.
        if self.stdio.as_mut().is_some_and(Stdio::block_for_exit) {
            self.flush_stdout();
        }
    }
}

/// Waits on `poll` for events, at most `timeout` from `now`. A wake-up
/// whose events all name no source in `sources` (a new spare socket's
/// hang-up, see `pools::Spare`) needs no turn: the wait goes on.
fn wait(
    poll: &mut Poll,
    sources: &Sources,
    events: &mut Events,
    (now, mut timeout): (Instant, Option<Duration>),
) -> io::Result<()> {
    let until = timeout.map(|t| now + t);
    let stray = |e: &mio::event::Event| {
        let token = e.token();
        token.0 >= FIRST_DYNAMIC && sources.get(&token).is_none()
    };
    loop {
        poll.poll(events, timeout)?;
        if events.is_empty() || timeout == Some(Duration::ZERO) || !events.iter().all(stray) {
            return Ok(());
        }
        timeout = until.map(|t| t.saturating_duration_since(Instant::now()));
    }
}

/// The owner of what a step from `origin` leaves behind (calls, tasks,
/// results): nobody's in particular on stdio, `HttpFront::call_owner` over
/// HTTP.
fn owner_of(origin: &Origin, front: Option<&HttpFront>) -> String {
    match (origin, front) {
        (Origin::Http { conn, framing }, Some(front)) => front.call_owner(*conn, &framing.session),
        _ => String::new(),
    }
}

/// Whether pool output should be forwarded to the client of a call of
/// `request` now: a modern call that asked for log messages, or a legacy
/// client whose session did (on `stdio`, or a streaming request of `http`).
fn wants_logs(
    stdio: Option<&Stdio>,
    http: Option<&HttpFront>,
    client: &Client,
    request: &mcp::CallRequest,
) -> bool {
    let streaming = |conn: Token| http.is_some_and(|f| f.streaming(conn));
    if let Some(meta) = &request.modern {
        return meta.log_level.is_some()
            && match client {
                Client::Stdio => true,
                Client::Http { conn, .. } => streaming(*conn),
            };
    }
    match client {
        Client::Stdio => stdio.is_some_and(|s| s.session().log_level.is_some()),
        Client::Http { conn, .. } => streaming(*conn),
    }
}

/// MCP log level of forwarded pool output ("info").
const POOL_LOG_LEVEL: usize = 1;

/// The one router of pool output: where one line that process `proc` of
/// `program` printed goes as `notifications/message`, to every audience
/// that asked for logs at its level: the stdio session, streaming HTTP
/// requests of sessions with a log level, and the modern calls running on
/// the process whose request asked for them.
fn pool_line_targets(
    stdio: Option<&Stdio>,
    http: Option<&mut HttpFront>,
    calls: &Calls,
    (program, proc): (usize, Proc),
    logger: &str,
    line: &str,
) -> Vec<(Client, serde_json::Value)> {
    let mut targets = Vec::new();
    if let Some(stdio) = stdio {
        if let Some(note) = mcp::log_notification(stdio.session(), POOL_LOG_LEVEL, logger, line) {
            targets.push((Client::Stdio, note));
        }
    }
    if let Some(front) = http {
        for (conn, note) in front.log_targets(POOL_LOG_LEVEL, logger, line) {
            let session = String::new();
            targets.push((Client::Http { conn, session }, note));
        }
    }
    targets.extend(calls.call_log_targets(program, proc, POOL_LOG_LEVEL, logger, line));
    targets
}
