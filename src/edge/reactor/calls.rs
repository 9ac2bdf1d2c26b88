//! Tool calls inside the reactor.
//!
//! [`Calls`] owns the calls in flight and does their work: `Calls::start`
//! prepares a call (`mcp::call::prepare`: validated, then evaluated
//! in-process for a pure command or encoded as one CALL packet) and queues
//! it; `Calls::advance` (`wire`) sends the packet to its pool on a fresh
//! non-blocking Unix-socket connection registered with the poller and reads
//! the reply until complete, turned into the call's ending
//! (`mcp::call::reply_result`) in the same turn, before anything else can
//! run; `Calls::take` ends a call's hold on its pool process. Each returns
//! what spans other owners (an answer to deliver, a task to make, the pools
//! to start, the waiting calls to dispatch), which the reactor's methods
//! here carry out. Deadlines and progress heartbeats are handled here too;
//! cancellation is in `cancel`, the sockets in `socket`, the queue of calls
//! waiting for a pool process and their dispatch in `dispatch`.
//! A [`Call`] keeps its scheduling state (`Sched`) apart from its connection
//! (`Wire`); the table's bookkeeping is in `table`; connecting a call and
//! the calls of a process that failed are in `connect`.
//! Long argument texts and request bodies are worked on a slice per turn,
//! before the call can queue, in `prepare`; a result the pool wrote to a
//! file is read so too (`result_file`). Pure commands' files: `fs_host`.

use std::rc::Rc;
use std::time::{Duration, Instant};

use mio::net::UnixStream;
use mio::{Registry, Token};
use serde_json::Value as Json;

use super::idhash::IdMap;
use super::obs::CallTrace;
use super::pools::{BasePool, LeaseMode, PoolSet, Proc};
use super::queue;
use super::queue::Throttle;
use super::schedule::Class;
use super::timers::{TimerKey, Timers};
use super::{Client, Reactor, Sources};
use crate::protocol::jsonrpc::RequestId;
use crate::protocol::mcp::call::{self, Ending, Prepared};
use crate::protocol::mcp::{self, CallRequest, Catalog, PacketJob};
use crate::protocol::metrics::CallMetrics;
use crate::protocol::metrics::Outcome;
use table::ClientKey;

/// Progress heartbeats for calls that carry a progress token: after 1 s and
/// 2 s (so short calls show life), then every 5 s.
const PROGRESS_FIRST: Duration = Duration::from_secs(1);
const PROGRESS_EVERY: Duration = Duration::from_secs(5);
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
mod fs_host;
mod prepare;
mod result_file;
mod socket;
mod table;
mod wire;
pub(super) use cancel::Cancel;
use dispatch::Owner;
pub(super) use dispatch::Queue;
use fs_host::FsHost;
pub(super) use prepare::{Checked, Preparing};
use result_file::ResultFile;
pub(super) use socket::spare;
use table::hang_up;
use wire::Advance;

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

/// A call's timer in one word: the call's number above the timer's kind
/// (call numbers count up from 1 and never reach 2^62).
impl TimerKey for (CallId, CallTimer) {
    fn pack(self) -> u64 {
        (self.0 .0 << 2) | self.1 as u64
    }
    fn unpack(word: u64) -> (CallId, CallTimer) {
        (CallId(word >> 2), CallTimer::ALL[(word & 3) as usize])
    }
}

#[derive(Debug, PartialEq, Eq)]
pub(super) enum CallStage {
    WaitingForPool,
    Sending,
    Receiving,
    /// The reply was a result file, being read a slice per turn
    /// (`result_file`): the connection is closed and the process free.
    ReadingFile,
    /// The connection broke; the call fails with `message` at the `Lost`
    /// timer unless the pool's death is noticed first (`exiting`: its
    /// process was seen on its way out, and the longer grace runs).
    Lost {
        message: String,
        exiting: bool,
    },
}

pub(super) struct Call {
    client: Client,
    request: CallRequest,
    program: usize,
    /// Where it may run and what it holds (the scheduler's side).
    sched: Sched,
    /// Its connection to the pool process (the socket's side).
    wire: Wire,
    stage: CallStage,
    started: Instant,
    /// The last progress value sent (they must increase).
    last_progress: Option<f64>,
    /// Cancelled by its client while its pool process runs it: nothing will
    /// be sent, but the call is kept until the pool answers (or dies, or it
    /// times out), so the process counts as busy and no other call queues
    /// behind work nobody waits for.
    abandoned: bool,
    /// The task the call became: its outcome settles the task, and nothing
    /// more goes to its client.
    task: Option<String>,
    /// Its span on a pool process, when its request is traced (`obs`).
    trace: Option<Box<CallTrace>>,
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
    bases: Rc<[BasePool]>,
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
    /// The result file being read (`CallStage::ReadingFile`).
    file: Option<Box<ResultFile>>,
}

impl Call {
    /// Who waits for its answer.
    pub(super) fn client(&self) -> &Client {
        &self.client
    }

    /// Its request.
    pub(super) fn request(&self) -> &CallRequest {
        &self.request
    }

    /// When it started.
    pub(super) fn started(&self) -> Instant {
        self.started
    }

    /// The task it became, if any.
    pub(super) fn task(&self) -> Option<&str> {
        self.task.as_deref()
    }
}

impl Reactor {
    /// Carries out what [`Calls::start`] left to the other owners: an
    /// answer at once, the packet still to build, a refusal, or the pools
    /// to start and the dispatch.
    pub(super) fn started(&mut self, started: Start) {
        let id = match started {
            Start::Answered(client, request, ending) => {
                let ending = self.tasks.link_big(&self.catalog, &request, ending);
                let outcome = ending.outcome();
                self.calls
                    .count(&self.catalog, &request, outcome, Instant::now());
                let reply = call::respond(&self.catalog, &request.id, request.is_modern(), ending);
                return self.deliver(&client, reply, true);
            }
            Start::Building(id, job) => return self.preparing.add(id, job),
            Start::Refused(id, message) => return self.end_call(id, Ending::Failed(message)),
            Start::Queued(id) => id,
        };
        let now = Instant::now();
        let call = &self.calls[&id];
        let (program, pool) = (call.program, call.sched.pool);
        let wants = call.request.wants_tasks();
        let task_at = self.tasks.deadline(wants, self.catalog.job_tools(), now);
        self.calls.arm(id, CallTimer::Task, task_at);
        if task_at.is_some_and(|t| t <= now) {
            // `--task-after 0`: the task exists before its handle is sent.
            let (tasks, catalog) = (&mut self.tasks, &self.catalog);
            if let Some((client, handle)) = self.calls.become_task(id, |c| tasks.create(catalog, c))
            {
                self.deliver(&client, &handle, true);
            }
        }
        // Starts what the call needs: its own pool and the pools it calls
        // into; ready when all of them answer pings.
        let ensured = match self.calls.get(&id).map(|c| c.sched.bases.clone()) {
            Some(bases) => {
                let mut ensured = Ok(false);
                self.with_pools(&mut |p, cx| ensured = p.ensure_all(cx, program, &bases));
                ensured
            }
            None => Ok(false),
        };
        match ensured {
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
            Err(message) => self.end_call(id, Ending::Error(message)),
        }
    }

    /// Sends and receives for call `id` ([`Calls::advance`]), and carries
    /// out what that leaves.
    pub(super) fn advance_call(&mut self, id: CallId) {
        let registry = self.poll.registry();
        let scratch = &mut self.scratch;
        match self
            .calls
            .advance(id, &self.catalog, &mut self.pools, registry, scratch)
        {
            Advance::Wait => {}
            Advance::SendLater => self.preparing.send_later(id),
            Advance::ReadFile => {
                // The connection and the process are done with: the file
                // is read a slice per turn (`prepare`).
                let (calls, sources) = (&mut self.calls, &mut self.sources);
                let freed = calls.reading_file(id, &mut self.pools, sources);
                self.preparing.read_later(id);
                if let Some(program) = freed {
                    self.dispatch_waiting(program);
                }
            }
            Advance::Lost(message) => {
                // A pool that died is noticed first: the call fails saying
                // how (`fail_call`), else it waits for that (`Calls::lose`).
                self.with_pools(&mut PoolSet::check_children);
                let registry = self.poll.registry();
                self.calls
                    .lose(id, message, registry, &mut self.sources, &self.pools);
            }
            Advance::Ended(ending) => self.end_call(id, ending),
        }
    }

    pub(in crate::edge::reactor) fn end_call(&mut self, id: CallId, ending: Ending) {
        let Some(call) = self.calls.get(&id) else {
            return;
        };
        if call.abandoned {
            // Its client is gone: the process is free again, nothing is sent.
            self.take_call(id);
            return;
        }
        let (program, slot) = (call.program, call.sched.slot);
        let (stdio, http) = (self.stdio.as_ref(), self.http.as_ref());
        if super::wants_logs(stdio, http, &call.client, &call.request) {
            // Lines the pool printed before replying go out before the reply.
            self.with_pools(&mut |p, cx| p.read_output(cx, program, slot));
        }
        // No progress notification goes right before the reply: some clients
        // handle notifications after the response of the same read and
        // would then report an unknown progress token.
        let Some(call) = self.take_call(id) else {
            return;
        };
        let outcome = ending.outcome();
        let ending = self.tasks.link_big(&self.catalog, &call.request, ending);
        if let Some(task) = &call.task {
            self.calls
                .count(&self.catalog, &call.request, outcome, call.started);
            return self.settle_task(task, ending.into_task_outcome());
        }
        let reply = call::respond(
            &self.catalog,
            &call.request.id,
            call.request.is_modern(),
            ending,
        );
        self.deliver(&call.client, reply, true);
        // Counted (`/metrics`) once the answer is on its way.
        self.calls
            .count(&self.catalog, &call.request, outcome, call.started);
    }

    /// Ends a call with a protocol-level failure (its pool died, or it timed
    /// out): an `isError` result as always, but a task it became is
    /// `failed` with a JSON-RPC error.
    pub(super) fn fail_call(&mut self, id: CallId, message: String) {
        let task = self.calls.get(&id).and_then(|c| c.task.clone());
        match task {
            Some(task) => {
                if let Some(call) = self.take_call(id) {
                    self.calls
                        .count(&self.catalog, &call.request, Outcome::Failed, call.started);
                }
                self.settle_task(&task, Ending::Failed(message).into_task_outcome());
            }
            None => self.end_call(id, Ending::Failed(message)),
        }
    }

    /// Removes a call and closes its connection, sending nothing
    /// ([`Calls::take`]); a lease it gave back lets waiting calls go.
    pub(in crate::edge::reactor) fn take_call(&mut self, id: CallId) -> Option<Call> {
        let (call, freed) =
            self.calls
                .take(id, &self.catalog, &mut self.pools, &mut self.sources)?;
        if freed {
            self.dispatch_waiting(call.program);
        }
        Some(call)
    }

    /// Runs the calls' timers due at `now`.
    pub(super) fn call_timers(&mut self, now: Instant) {
        let timeout = self.options.queue_timeout;
        for (id, message) in self.calls.expire_queue(now, &self.pools, timeout) {
            self.fail_call(id, message);
        }
        let due = self.calls.due(now);
        if due.iter().any(|(_, kind)| *kind == CallTimer::Lost) {
            // A pool that died is noticed first: its calls fail saying how.
            self.with_pools(&mut PoolSet::check_children);
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
                CallTimer::Task => {
                    let (tasks, catalog) = (&mut self.tasks, &self.catalog);
                    if let Some((client, handle)) =
                        self.calls.become_task(id, |c| tasks.create(catalog, c))
                    {
                        self.deliver(&client, &handle, true);
                    }
                }
            }
        }
    }
}

/// What [`Calls::start`] made of a new call; the reactor carries out the
/// rest with the other owners.
pub(super) enum Start {
    /// Answered at once (a pure command, a refused argument): `Ending`
    /// goes to `Client`.
    Answered(Client, Box<CallRequest>, Ending),
    /// In the table, its packet still to be built from a long text
    /// (`prepare`), before it can queue.
    Building(CallId, Box<PacketJob>),
    /// A cap of the queue refused it (said on stderr): it ends with this
    /// message.
    Refused(CallId, String),
    /// In the table and the queue, waiting for a pool process.
    Queued(CallId),
}

impl Calls {
    /// Call `id` becomes a task: `create` (`TaskStore::create`) gives its
    /// id and the handle that answers the call, which then runs on, and
    /// nothing more of it goes to its client (progress and log messages are
    /// not part of a task). Its client and the handle; `None` when the call
    /// is gone or no task was made (at the cap it stays synchronous).
    pub(super) fn become_task(
        &mut self,
        id: CallId,
        create: impl FnOnce(&Call) -> Option<(String, Json)>,
    ) -> Option<(Client, Json)> {
        self.arm(id, CallTimer::Task, None);
        let call = self.get_mut(&id)?;
        let (task_id, handle) = create(call)?;
        call.task = Some(task_id);
        let client = call.client.clone();
        self.arm(id, CallTimer::Progress, None);
        Some((client, handle))
    }

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

    /// Call `id`'s connection failed mid-call (its pool's exit, if it died,
    /// was looked for first): its socket goes, and it fails with `message`
    /// after a grace unless the pool's death is noticed meanwhile:
    /// [`EXITING_GRACE`] for a process on its way out, whose SIGCHLD will
    /// come, else the short [`LOST_GRACE`].
    fn lose(
        &mut self,
        id: CallId,
        message: String,
        registry: &Registry,
        sources: &mut Sources,
        pools: &PoolSet,
    ) {
        let Some(call) = self.get_mut(&id) else {
            return;
        };
        if let Some((token, mut stream)) = call.wire.stream.take() {
            let _ = registry.deregister(&mut stream);
            sources.remove(&token);
        }
        let exiting = pools.exiting(call.program, call.sched.slot);
        call.stage = CallStage::Lost { message, exiting };
        let grace = if exiting { EXITING_GRACE } else { LOST_GRACE };
        self.arm(id, CallTimer::Lost, Some(Instant::now() + grace));
    }

    /// A tool call of `client`: `call::prepare` gives the packet (or the
    /// job that builds it, or the answer); the call joins the table with
    /// its route (`PoolSet::route`: where it may run, its lease) and its
    /// trace, and then the queue (`queue_timeout`).
    pub(super) fn start(
        &mut self,
        catalog: &Catalog,
        pools: &PoolSet,
        client: Client,
        mut request: CallRequest,
        trace: &dyn Fn(&Client, &RequestId) -> Option<Box<CallTrace>>,
        queue_timeout: Option<Duration>,
    ) -> Start {
        let program = request.program;
        let prog = &catalog.programs[program];
        let (packet, job) = match call::prepare(prog, &mut request, &mut FsHost) {
            Prepared::Remote(packet) => (packet, None),
            // A packet still to be built from a long text: the call waits,
            // without a packet yet, until `prepare` has built it.
            Prepared::Building(job) => (Vec::new(), Some(job)),
            Prepared::Answered(ending) => {
                return Start::Answered(client, Box::new(request), ending);
            }
        };
        let route = pools.route(program, prog, request.command);
        let id = self.next_id();
        let now = Instant::now();
        let trace = trace(&client, &request.id);
        let progress = request
            .progress_token
            .as_ref()
            .map(|_| now + PROGRESS_FIRST);
        self.insert(
            id,
            Call {
                client,
                request,
                program,
                sched: Sched {
                    pool: route.pool,
                    slot: route.pool.primary(),
                    bases: route.bases,
                    primary_only: route.primary_only,
                    pools: Vec::new(),
                    mode: route.mode,
                    leased: false,
                    place: None,
                },
                wire: Wire {
                    packet,
                    written: 0,
                    reply: Vec::new(),
                    expected: None,
                    stream: None,
                    file: None,
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
        self.arm(id, CallTimer::Progress, progress);
        if let Some(job) = job {
            return Start::Building(id, job);
        }
        // Every remote call queues, even one that can run at once (it
        // leaves the queue in this turn): past a cap it is refused here,
        // before it can become a task.
        let class = (program, self[&id].sched.bases.clone());
        let owner = Owner::of_call(&self[&id]);
        let deadline = queue_timeout.map(|t| now + t);
        match self.queue.push(id, owner.clone(), class, deadline) {
            Ok(()) => Start::Queued(id),
            Err(refused) => Start::Refused(id, self.refuse(id, &owner, refused)),
        }
    }

    /// Removes call `id`: its trace ends, its place in the queue and its
    /// timers go, its connection is closed at the end of the turn (its
    /// token in `sources` goes now), and the lease it holds on `pools` is
    /// given back. The call, and whether a lease was given back (the
    /// waiting calls of its program may then go).
    fn take(
        &mut self,
        id: CallId,
        catalog: &Catalog,
        pools: &mut PoolSet,
        sources: &mut Sources,
    ) -> Option<(Call, bool)> {
        let mut call = self.remove(id)?;
        if let Some(trace) = &call.trace {
            let command = &catalog.programs[call.program]
                .command(call.request.command)
                .name;
            let pool = pools.label(call.program, call.sched.slot);
            trace.end(&pool, command, call.abandoned);
        }
        self.queue.remove(id);
        self.disarm(id);
        let freed = hang_up(&mut self.closing, &mut call, pools, sources);
        Some((call, freed))
    }

    /// Call `id`'s reply named a result file, now open: the call no longer
    /// needs its connection nor its process (a file result is not in
    /// shared memory), which [`Calls::hang_up`] gives back. Its program,
    /// if a lease was given back (its waiting calls may then go).
    fn reading_file(
        &mut self,
        id: CallId,
        pools: &mut PoolSet,
        sources: &mut Sources,
    ) -> Option<usize> {
        let call = self.map.get_mut(&id)?;
        let freed = hang_up(&mut self.closing, call, pools, sources);
        freed.then_some(call.program)
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
    /// of the tool called.
    pub(super) fn count(
        &mut self,
        catalog: &Catalog,
        request: &CallRequest,
        outcome: Outcome,
        started: Instant,
    ) {
        let seconds = started.elapsed().as_secs_f64();
        self.metrics
            .record(request.tool_name(catalog), outcome, seconds);
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

#[cfg(test)]
mod timer_key_tests {
    use super::*;

    #[test]
    fn a_calls_timer_packs_into_one_word_and_back() {
        for id in [1, 2, 1 << 40, (1 << 62) - 1] {
            for kind in CallTimer::ALL {
                let key = (CallId(id), kind);
                assert_eq!(<(CallId, CallTimer)>::unpack(key.pack()), key);
            }
        }
    }
}
