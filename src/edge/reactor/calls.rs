//! Tool calls inside the reactor.
//!
//! A call is prepared (`mcp::call::prepare`: validated, then evaluated
//! in-process for a pure command or encoded as one CALL packet) and the
//! packet sent to its pool on a fresh non-blocking Unix-socket connection
//! registered with the poller. The reply packet is read until complete and
//! turned into the call's response (`mcp::call::reply_result`, `respond`)
//! in the same turn, before anything else can run. Deadlines and progress
//! heartbeats are handled here too; cancellation is in `cancel`, the
//! sockets in `socket`, the queue of calls waiting for a pool process and
//! their dispatch in `dispatch`.
//! A [`Call`] keeps its scheduling state (`Sched`) apart from its connection
//! (`Wire`); the calls in flight are owned by [`Calls`] (`table`); starting
//! the pools a call needs, connecting it and failing the calls of a process
//! are in `connect`.
//! Long argument texts and request bodies are worked on a slice per turn,
//! before the call can queue, in `prepare`.

use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

use mio::net::UnixStream;
use mio::{Interest, Token};
use serde_json::Value as Json;

use super::idhash::IdMap;
use super::obs::CallTrace;
use super::pools::{BasePool, LeaseMode, PoolSet, Proc};
use super::queue;
use super::queue::Throttle;
use super::schedule::Class;
use super::timers::Timers;
use super::{Client, Reactor};
use crate::format::packet;
use crate::protocol::mcp::call::{self, Ending, Prepared};
use crate::protocol::mcp::{self, CallRequest, Catalog};
use crate::protocol::metrics::CallMetrics;
use crate::protocol::metrics::Outcome;
use table::ClientKey;

/// Progress heartbeats for calls that carry a progress token: after 1 s and
/// 2 s (so short calls show life), then every 5 s.
const PROGRESS_FIRST: Duration = Duration::from_secs(1);
const PROGRESS_EVERY: Duration = Duration::from_secs(5);
/// The largest reply accepted from a pool (header + metadata + payload).
const MAX_REPLY: u64 = 4 << 30;
/// A connection that breaks before the reply may mean the pool died; wait
/// this long for its exit to be noticed, so the error can say how it died
/// and the next call already goes to the restarted pool.
const LOST_GRACE: Duration = Duration::from_millis(50);
/// When the pool's process is already on its way out (`proc::is_exiting`),
/// its SIGCHLD is awaited this long instead: on a loaded machine a dying
/// process may need far more than [`LOST_GRACE`] to finish exiting after
/// its descriptors closed, and only its exit says how it died.
const EXITING_GRACE: Duration = Duration::from_secs(10);

mod cancel;
mod connect;
mod dispatch;
mod prepare;
mod socket;
mod table;
use dispatch::Owner;
pub(super) use dispatch::Queue;
pub(super) use prepare::{Checked, Preparing};
use socket::new_connection;
pub(super) use socket::unix_socket;

/// The calls in flight (see `table`): its fields are the calls module's.
pub(in crate::edge::reactor) struct Calls {
    map: IdMap<CallId, Call>,
    /// The calls of each client (stdio, an HTTP session, an HTTP
    /// connection), so cancelling looks at a client's calls only.
    by_client: IdMap<ClientKey, Vec<CallId>>,
    /// The calls waiting for a pool process, served round-robin across
    /// their owners (`queue`).
    queue: Queue,
    /// The calls' timers (a deadline, progress, a task deadline, a lost
    /// connection): a turn touches only those due.
    timers: Timers<(CallId, CallTimer)>,
    next: u64,
    /// Pool connections whose call is over, closed by `end_turn`.
    closing: Vec<UnixStream>,
    /// Rate limit of the diagnostics about the queue and the pools.
    throttle: Throttle,
    /// Calls that ended, by tool and outcome (`/metrics`).
    metrics: CallMetrics,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct CallId(u64);

/// A call's timers (see `Calls::arm`), in the order due ones are handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(in crate::edge::reactor) enum CallTimer {
    /// `--call-timeout`, from when the call reached its pool process.
    Deadline,
    /// The next progress notification.
    Progress,
    /// The end of a lost connection's grace (`CallStage::Lost`).
    Lost,
    /// When the call is answered with a task handle if still running (its
    /// client declared the Tasks extension, or `--job-tools`).
    Task,
}

impl CallTimer {
    pub(super) const ALL: [CallTimer; 4] = [
        CallTimer::Deadline,
        CallTimer::Progress,
        CallTimer::Lost,
        CallTimer::Task,
    ];
}

#[derive(Debug, PartialEq, Eq)]
pub(super) enum CallStage {
    WaitingForPool,
    Sending,
    Receiving,
    /// The connection broke; the call fails with `message` at the `Lost`
    /// timer unless the pool's death is noticed first (`exiting`: its
    /// process was seen on its way out, and the longer grace runs).
    Lost {
        message: String,
        exiting: bool,
    },
}

pub(super) struct Call {
    pub(super) client: Client,
    pub(super) request: CallRequest,
    pub(super) program: usize,
    /// Where it may run and what it holds (the scheduler's side).
    sched: Sched,
    /// Its connection to the pool process (the socket's side).
    wire: Wire,
    pub(super) stage: CallStage,
    pub(super) started: Instant,
    /// The last progress value sent (they must increase).
    last_progress: Option<f64>,
    /// Cancelled by its client while its pool process runs it: nothing will
    /// be sent, but the call is kept until the pool answers (or dies, or it
    /// times out), so the process counts as busy and no other call queues
    /// behind work nobody waits for.
    pub(super) abandoned: bool,
    /// The task the call became: its outcome settles the task, and nothing
    /// more goes to its client.
    pub(super) task: Option<String>,
    /// Its span on a pool process, when its request is traced (`obs`).
    pub(super) trace: Option<Box<CallTrace>>,
}

/// A call as the scheduler sees it: where it may run, where it runs, and
/// the lease it needs and holds.
struct Sched {
    /// The manifest pool of the command.
    pool: BasePool,
    /// The process of that pool the call runs on: chosen when it connects,
    /// the primary until then.
    slot: Proc,
    /// The call's pool and the pools its command calls into, each once.
    bases: Vec<BasePool>,
    /// The command calls into other pools, which call back the primary:
    /// it runs on the primary only.
    primary_only: bool,
    /// The processes the call holds its lease on: its own process and the
    /// primaries of the other pools (set when it connects).
    pools: Vec<Proc>,
    /// The lease the call needs (see `pools::leases`), and whether it holds it.
    mode: LeaseMode,
    leased: bool,
    /// Its place in the queue while it connects, given back if the
    /// connection fails.
    place: Option<queue::Entry<Owner, Class>>,
}

/// A call's connection to its pool process: the CALL packet going out, the
/// reply coming in.
struct Wire {
    packet: Vec<u8>,
    written: usize,
    reply: Vec<u8>,
    /// The reply's length, once its header is in.
    expected: Option<usize>,
    stream: Option<(Token, UnixStream)>,
}

impl Reactor {
    pub(super) fn start_call(&mut self, client: Client, mut request: CallRequest) {
        let program = request.program;
        let prog = &self.catalog.programs[program];
        let (packet, job) = match call::prepare(prog, &mut request, &mut FsHost) {
            Prepared::Remote(packet) => (packet, None),
            // A packet still to be built from a long text: the call waits,
            // without a packet yet, until `prepare` has built it.
            Prepared::Building(job) => (Vec::new(), Some(job)),
            Prepared::Answered(ending) => {
                let ending = self.tasks.link_big(&self.catalog, &request, ending);
                let outcome = ending.outcome();
                let what = (request.program, request.command);
                self.calls
                    .count(&self.catalog, what, outcome, Instant::now());
                let reply = call::respond(&self.catalog, &request.id, request.is_modern(), ending);
                return self.deliver(&client, reply, true);
            }
        };
        let command = prog.command(request.command);
        let pool = BasePool(command.pool);
        let mut bases = vec![pool];
        for &p in &command.needed_pools {
            if !bases.contains(&BasePool(p)) {
                bases.push(BasePool(p));
            }
        }
        let primary_only = bases.len() > 1;
        let routing = self.pools.routing(program);
        // Inline replies (and files) belong to the connection that carries
        // them; only a shared-memory block can be freed under us. A pool
        // that runs one call at a time cannot share a process anyway: its
        // calls take one each, so a burst asks for replicas.
        let always_inline = prog
            .compiled(request.command)
            .always_inline(routing.inline_threshold);
        let one_at_a_time = self.pools.one_call_at_a_time(program, pool);
        let mode = if one_at_a_time || (routing.shm && !always_inline) {
            LeaseMode::Exclusive
        } else {
            LeaseMode::Shared
        };
        let id = self.calls.next_id();
        let now = Instant::now();
        let trace = self.call_trace(&client, &request.id);
        let progress = request
            .progress_token
            .as_ref()
            .map(|_| now + PROGRESS_FIRST);
        self.calls.insert(
            id,
            Call {
                client,
                request,
                program,
                sched: Sched {
                    pool,
                    slot: pool.primary(),
                    bases,
                    primary_only,
                    pools: Vec::new(),
                    mode,
                    leased: false,
                    place: None,
                },
                wire: Wire {
                    packet,
                    written: 0,
                    reply: Vec::new(),
                    expected: None,
                    stream: None,
                },
                stage: CallStage::WaitingForPool,
                started: now,
                last_progress: None,
                task: None,
                abandoned: false,
                trace,
            },
        );
        // The deadline is armed when the call reaches its pool: waiting for
        // a pool to start is bounded by the start-up timeout instead.
        self.calls.arm(id, CallTimer::Progress, progress);
        if let Some(job) = job {
            return self.preparing.add(id, job);
        }
        // Every remote call queues, even one that can run at once (it
        // leaves the queue in this turn): past a cap it is refused here,
        // before it can become a task.
        let class = (program, self.calls[&id].sched.bases.clone());
        let owner = Owner::of_call(&self.calls[&id]);
        let deadline = self.options.queue_timeout.map(|t| now + t);
        if let Err(refused) = self.calls.queue.push(id, owner.clone(), class, deadline) {
            return self.refuse_call(id, &owner, refused);
        }
        let wants = self.calls[&id].request.wants_tasks();
        let task_at = self.tasks.deadline(wants, self.catalog.job_tools(), now);
        self.calls.arm(id, CallTimer::Task, task_at);
        if task_at.is_some_and(|t| t <= now) {
            // `--task-after 0`: the task exists before its handle is sent.
            self.make_task(id);
        }
        match self.ensure_needed_pools(id) {
            Ok(ready) => {
                let pools = &self.pools;
                let message = || {
                    let lang = pools.lang(program, pool);
                    match ready {
                        true => format!("running in pool '{lang}'"),
                        false => format!("waiting for pool '{lang}' to start"),
                    }
                };
                if let Some((client, note)) = self.calls.progress(id, message) {
                    self.deliver(&client, &note, false);
                }
                // It goes now if it can; if not, a burst asks for its
                // replicas now.
                self.dispatch_waiting(program);
            }
            Err(message) => self.finish_call(id, Err(message)),
        }
    }

    pub(super) fn advance_call(&mut self, id: CallId) {
        let Some(call) = self.calls.get_mut(&id) else {
            return;
        };
        // Named only in messages: a label is a new string.
        let (program, slot) = (call.program, call.sched.slot);
        let lang = || self.pools.label(program, slot);
        let wire = &mut call.wire;
        let Some((_, stream)) = wire.stream.as_mut() else {
            return;
        };
        if call.stage == CallStage::Sending {
            // The pool parses the header from its first read, so the whole
            // packet goes out in as few writes as the socket allows; a big
            // one a slice per turn while the pool keeps up (`prepare`).
            let mut sent = 0;
            while wire.written < wire.packet.len() {
                if sent >= prepare::SEND_SLICE {
                    return self.preparing.send_later(id);
                }
                match stream.write(&wire.packet[wire.written..]) {
                    Ok(n) => {
                        wire.written += n;
                        sent += n;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        if let Some((token, stream)) = wire.stream.as_mut() {
                            let _ = self.poll.registry().reregister(
                                stream,
                                *token,
                                Interest::READABLE | Interest::WRITABLE,
                            );
                        }
                        return;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        let message = format!("cannot send the call to pool '{}': {e}", lang());
                        return self.lost_connection(id, message);
                    }
                }
            }
            call.stage = CallStage::Receiving;
            wire.packet = Vec::new();
            // The reply cannot be there yet; its readable event will come.
            return;
        }
        loop {
            let received = wire.reply.len();
            let read = match wire.expected {
                // Header unknown yet: a small buffer holds most replies whole.
                None => {
                    if self.scratch.len() != super::SCRATCH_LEN {
                        self.scratch = vec![0u8; super::SCRATCH_LEN];
                    }
                    let head = &mut self.scratch[..4096];
                    stream
                        .read(head)
                        .inspect(|&n| wire.reply.extend_from_slice(&head[..n]))
                }
                Some(total) if received >= total => break,
                // Read straight into the reply, growing it by at most 1 MiB
                // at a time (a bogus length must not allocate up front).
                Some(total) => {
                    let end = total.min(received + (1 << 20));
                    wire.reply.resize(end, 0);
                    let res = stream.read(&mut wire.reply[received..end]);
                    wire.reply.truncate(received + *res.as_ref().unwrap_or(&0));
                    res
                }
            };
            match read {
                Ok(0) => {
                    let message = match wire.expected {
                        None if wire.reply.is_empty() => {
                            format!("pool '{}' closed the connection without replying", lang())
                        }
                        _ => format!(
                            "pool '{}' closed the connection in the middle of its reply ({} of {} bytes received)",
                            lang(),
                            wire.reply.len(),
                            wire.expected
                                .map_or_else(|| "at least 32".to_string(), |t| t.to_string())
                        ),
                    };
                    return self.lost_connection(id, message);
                }
                Ok(_) => {
                    if wire.expected.is_none() && wire.reply.len() >= packet::HEADER_LEN {
                        let mut head = [0u8; packet::HEADER_LEN];
                        head.copy_from_slice(&wire.reply[..packet::HEADER_LEN]);
                        match packet::packet_len(&head) {
                            Ok(total) if total <= MAX_REPLY => {
                                let total = total as usize;
                                if wire.reply.len() > total {
                                    let message = format!(
                                        "pool '{}' sent bytes after its reply packet",
                                        lang()
                                    );
                                    return self.finish_call(id, Err(message));
                                }
                                wire.expected = Some(total);
                            }
                            Ok(total) => {
                                let message = format!(
                                    "pool '{}' announced a {total}-byte reply, over the {MAX_REPLY}-byte limit",
                                    lang()
                                );
                                return self.finish_call(id, Err(message));
                            }
                            Err(e) => {
                                let message = format!("{e} (pool '{}')", lang());
                                return self.finish_call(id, Err(message));
                            }
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let message = format!("cannot read the reply of pool '{}': {e}", lang());
                    return self.lost_connection(id, message);
                }
            }
        }
        // A complete reply: decode it now, before anything else runs.
        let reply = std::mem::take(&mut wire.reply);
        let (program, command, slot) = (call.program, call.request.command, call.sched.slot);
        let ending = self.decode_reply(program, slot, command, &reply);
        self.end_call(id, ending);
    }

    fn decode_reply(&mut self, program: usize, slot: Proc, command: usize, bytes: &[u8]) -> Ending {
        let prog = &self.catalog.programs[program];
        let lang = self
            .pools
            .lang(program, BasePool(prog.command(command).pool));
        let reply = match packet::parse_reply(bytes) {
            Ok(reply) => reply,
            Err(e) => return Ending::Error(format!("{e} (pool '{lang}')")),
        };
        let shared = matches!(reply, packet::Reply::Rptr(_));
        let reader = self.pools.reader(program, slot);
        let result = call::reply_result(prog, command, reply, &*reader, &mut take_file);
        if shared {
            // Volumes may be unlinked and recreated under the same index;
            // mappings are cheap to redo.
            reader.clear();
        }
        result
    }

    /// The connection failed mid-call. If the pool died, the child handler
    /// fails the call with how it died; otherwise `message` is used after a
    /// grace: [`EXITING_GRACE`] for a process on its way out, whose SIGCHLD
    /// will come, else the short [`LOST_GRACE`].
    fn lost_connection(&mut self, id: CallId, message: String) {
        self.with_pools(PoolSet::check_children);
        let Some(call) = self.calls.get_mut(&id) else {
            return;
        };
        if let Some((token, mut stream)) = call.wire.stream.take() {
            let _ = self.poll.registry().deregister(&mut stream);
            self.sources.remove(&token);
        }
        let exiting = self.pools.exiting(call.program, call.sched.slot);
        call.stage = CallStage::Lost { message, exiting };
        let grace = if exiting { EXITING_GRACE } else { LOST_GRACE };
        self.calls
            .arm(id, CallTimer::Lost, Some(Instant::now() + grace));
    }

    pub(super) fn finish_call(&mut self, id: CallId, outcome: Result<Json, String>) {
        self.end_call(id, Ending::from(outcome));
    }

    fn end_call(&mut self, id: CallId, ending: Ending) {
        let Some(call) = self.calls.get(&id) else {
            return;
        };
        if call.abandoned {
            // Its client is gone: the process is free again, nothing is sent.
            self.take_call(id);
            return;
        }
        let (program, slot) = (call.program, call.sched.slot);
        if self.call_wants_logs(&call.client, &call.request) {
            // Lines the pool printed before replying go out before the reply.
            self.with_pools(|p, cx| p.read_output(cx, program, slot));
        }
        // No progress notification goes right before the reply: some clients
        // handle notifications after the response of the same read and
        // would then report an unknown progress token.
        let Some(call) = self.take_call(id) else {
            return;
        };
        let what = (call.program, call.request.command);
        self.calls
            .count(&self.catalog, what, ending.outcome(), call.started);
        let ending = self.tasks.link_big(&self.catalog, &call.request, ending);
        if let Some(task) = &call.task {
            return self.settle_task(task, ending.into_task_outcome());
        }
        let reply = call::respond(
            &self.catalog,
            &call.request.id,
            call.request.is_modern(),
            ending,
        );
        self.deliver(&call.client, reply, true);
    }

    /// Ends a call with a protocol-level failure (its pool died, or it timed
    /// out): an `isError` result as always, but a task it became is
    /// `failed` with a JSON-RPC error.
    pub(super) fn fail_call(&mut self, id: CallId, message: String) {
        let task = self.calls.get(&id).and_then(|c| c.task.clone());
        match task {
            Some(task) => {
                if let Some(call) = self.take_call(id) {
                    let (program, command) = (call.program, call.request.command);
                    let what = (program, command);
                    self.calls
                        .count(&self.catalog, what, Outcome::Failed, call.started);
                }
                self.settle_task(&task, Ending::Failed(message).into_task_outcome());
            }
            None => self.end_call(id, Ending::Failed(message)),
        }
    }

    /// Removes a call and closes its connection, sending nothing.
    fn take_call(&mut self, id: CallId) -> Option<Call> {
        let mut call = self.calls.remove(id)?;
        if let Some(trace) = &call.trace {
            let command = &self.catalog.programs[call.program]
                .command(call.request.command)
                .name;
            let pool = self.pools.label(call.program, call.sched.slot);
            trace.end(&pool, command, call.abandoned);
        }
        self.calls.queue.remove(id);
        self.calls.disarm(id);
        if let Some((token, stream)) = call.wire.stream.take() {
            // Closed at the end of this turn, once the answer is written
            // (`end_turn`). Closing removes it from epoll by itself (no other
            // descriptor refers to it), which saves a system call per call;
            // until then its events find no source and are ignored.
            self.calls.closing.push(stream);
            self.sources.remove(&token);
        }
        if call.sched.leased {
            call.sched.leased = false;
            self.pools
                .touch(call.program, call.sched.slot, Instant::now());
            let sched = &call.sched;
            self.release_lease(call.program, &sched.pools, sched.mode);
        }
        Some(call)
    }

    /// Runs the calls' timers due at `now`.
    pub(super) fn call_timers(&mut self, now: Instant) {
        self.queue_timers(now);
        let due = self.calls.due(now);
        if due.iter().any(|(_, kind)| *kind == CallTimer::Lost) {
            // A pool that died is noticed first: its calls fail saying how.
            self.with_pools(PoolSet::check_children);
        }
        for (id, kind) in due {
            match kind {
                CallTimer::Deadline => self.time_out(id),
                CallTimer::Progress => {
                    if let Some((client, note)) = self.calls.progress_due(id, now) {
                        self.deliver(&client, &note, false);
                    }
                }
                CallTimer::Lost => {
                    if let Some(message) = self.calls.lost_grace_over(id, now, &self.pools) {
                        self.fail_call(id, message);
                    }
                }
                CallTimer::Task => self.make_task(id),
            }
        }
    }
}

impl Calls {
    /// The grace of call `id`'s broken connection is over and its process
    /// was not reaped: the message the call fails with, unless the process
    /// has since been seen on its way out (it began exiting after the short
    /// grace started), when its exit is awaited longer.
    fn lost_grace_over(&mut self, id: CallId, now: Instant, pools: &PoolSet) -> Option<String> {
        let call = self.get_mut(&id)?;
        let CallStage::Lost { message, exiting } = &mut call.stage else {
            return None;
        };
        if !*exiting && pools.exiting(call.program, call.sched.slot) {
            *exiting = true;
            self.arm(id, CallTimer::Lost, Some(now + EXITING_GRACE));
            return None;
        }
        Some(std::mem::take(message))
    }

    /// `notifications/progress` for call `id`, if it carries a progress
    /// token, and its client: elapsed seconds as the (strictly increasing)
    /// progress, no total.
    fn progress(&mut self, id: CallId, message: impl FnOnce() -> String) -> Option<(Client, Json)> {
        let call = self.get_mut(&id)?;
        let token = call.request.progress_token.as_ref()?;
        if call.task.is_some() {
            return None;
        }
        let elapsed = (call.started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
        let progress = match call.last_progress {
            Some(last) if elapsed <= last => last + 0.001,
            _ => elapsed,
        };
        call.last_progress = Some(progress);
        let note = mcp::progress_notification(token, progress, &message());
        Some((call.client.clone(), note))
    }

    /// Call `id`'s progress timer went off at `now`: arms the next one, and
    /// gives the notification to send.
    fn progress_due(&mut self, id: CallId, now: Instant) -> Option<(Client, Json)> {
        let call = self.get(&id)?;
        let since = now.duration_since(call.started);
        let next = if since < 2 * PROGRESS_FIRST {
            call.started + 2 * PROGRESS_FIRST
        } else {
            now + PROGRESS_EVERY
        };
        self.arm(id, CallTimer::Progress, Some(next));
        let elapsed = since.as_secs_f64();
        self.progress(id, || {
            let elapsed = crate::format::decimal::fixed(elapsed, 0);
            format!("still running after {elapsed} s")
        })
    }

    /// Counts a call of `catalog` that ended (`/metrics`), under the name
    /// its tool has.
    pub(super) fn count(
        &mut self,
        catalog: &Catalog,
        (program, command): (usize, usize),
        outcome: Outcome,
        started: Instant,
    ) {
        let prog = &catalog.programs[program];
        let tool = prog
            .surface
            .tools
            .iter()
            .find(|t| t.command == command)
            .map_or_else(|| prog.command(command).name.as_str(), |t| t.name.as_str());
        let seconds = started.elapsed().as_secs_f64();
        self.metrics.record(tool, outcome, seconds);
    }

    /// The call that became task `task_id`, if it still runs.
    pub(super) fn with_task(&self, task_id: &str) -> Option<CallId> {
        self.iter()
            .find(|(_, c)| c.task.as_deref() == Some(task_id))
            .map(|(id, _)| *id)
    }

    /// The trace of the one call running on process `proc` of `program`,
    /// if exactly one runs there and it is traced.
    pub(super) fn running_trace(&self, program: usize, proc: Proc) -> Option<String> {
        let mut running = self
            .values()
            .filter(|c| c.program == program && c.sched.slot == proc && c.wire.stream.is_some());
        match (running.next(), running.next()) {
            (Some(call), None) => call.trace.as_ref().map(|t| t.trace_id()),
            _ => None,
        }
    }

    /// Where pool output goes among the calls: the modern calls running on
    /// process `proc` of `program` whose request asked for messages at
    /// `level` or above (a modern log level belongs to its request, so only
    /// the calls the pool is serving hear what it prints), with the
    /// notification for each (sent by the pool log router, `pools::output`).
    pub(super) fn call_log_targets(
        &self,
        program: usize,
        proc: Proc,
        level: usize,
        logger: &str,
        line: &str,
    ) -> Vec<(Client, Json)> {
        self.values()
            .filter(|c| c.program == program && c.sched.slot == proc)
            .filter(|c| c.stage != CallStage::WaitingForPool && c.task.is_none())
            .filter_map(|c| {
                let wanted = c.request.modern.as_ref()?.log_level;
                let note = mcp::log_message(wanted, level, logger, line)?;
                Some((c.client.clone(), note))
            })
            .collect()
    }
}

/// Reads and removes a FILE result (pools never delete them; the server
/// owns the file once it has the reply).
fn take_file(path: &std::path::Path) -> Result<Vec<u8>, String> {
    let data = std::fs::read(path)
        .map_err(|e| format!("cannot read the result file {}: {e}", path.display()))?;
    let _ = std::fs::remove_file(path);
    Ok(data)
}

/// File access for the `@save` / `@load` intrinsics of pure commands.
struct FsHost;

impl crate::format::eval::Host for FsHost {
    fn read_file(&mut self, path: &str) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn write_file_atomic(&mut self, path: &str, bytes: &[u8]) -> io::Result<()> {
        let target = std::path::Path::new(path);
        let dir = target
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, target).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    }
}
