//! Tool calls inside the reactor.
//!
//! A call is validated (`mcp::prepare`), then either evaluated in-process
//! (pure commands) or encoded as one CALL packet and sent to its pool on a
//! fresh non-blocking Unix-socket connection registered with the poller. The
//! reply packet is read until complete and decoded in the same turn, before
//! anything else can run. Deadlines and progress heartbeats are handled here
//! too; cancellation is in `cancel`, the sockets in `socket`, the queue of
//! calls waiting for a pool process and their dispatch in `dispatch`, and
//! long argument texts and request bodies, worked on a slice per turn before
//! the call can queue, in `prepare`.

use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

use mio::net::UnixStream;
use mio::{Interest, Token};
use serde_json::Value as Json;

use super::leases::LeaseMode;
use super::queue;
use super::{Client, Reactor, Source};
use crate::format::manifest::CommandKind;
use crate::format::msgpack;
use crate::format::packet::{self, Reply};
use crate::format::schema;
use crate::format::value::Value;
use crate::format::voidstar;
use crate::protocol::jsonrpc;
use crate::protocol::mcp::tasks::Outcome;
use crate::protocol::mcp::{self, CallRequest, Program};

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

mod cancel;
mod dispatch;
mod prepare;
mod socket;
pub(super) use dispatch::Queue;
use dispatch::{Class, Owner};
pub(super) use prepare::{Checked, Preparing};
use socket::new_connection;
pub(super) use socket::unix_socket;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct CallId(u64);

#[derive(Debug, PartialEq, Eq)]
pub(super) enum CallStage {
    WaitingForPool,
    Sending,
    Receiving,
    /// The connection broke; the call fails with `message` at `until`
    /// unless the pool's death is noticed first.
    Lost {
        message: String,
        until: Instant,
    },
}

pub(super) struct Call {
    pub(super) client: Client,
    pub(super) request: CallRequest,
    pub(super) program: usize,
    /// The manifest pool of the command.
    pub(super) pool: usize,
    /// The process of that pool the call runs on (`Runtime::pools` slot):
    /// chosen when it connects, the primary until then.
    pub(super) slot: usize,
    /// The call's pool and the pools its command calls into, each once
    /// (manifest indices).
    bases: Vec<usize>,
    /// The command calls into other pools, which call back the primary:
    /// it runs on the primary only.
    primary_only: bool,
    /// The processes the call holds its lease on: its own process and the
    /// primaries of the other pools (set when it connects).
    pools: Vec<usize>,
    /// The lease the call needs (see `leases`), and whether it holds it.
    mode: LeaseMode,
    leased: bool,
    packet: Vec<u8>,
    written: usize,
    reply: Vec<u8>,
    expected: Option<usize>,
    stream: Option<(Token, UnixStream)>,
    pub(super) stage: CallStage,
    pub(super) started: Instant,
    pub(super) deadline: Option<Instant>,
    pub(super) next_progress: Option<Instant>,
    /// The last progress value sent (they must increase).
    last_progress: Option<f64>,
    /// When the call is answered with a task handle if still running (its
    /// client declared the Tasks extension).
    pub(super) task_at: Option<Instant>,
    /// Cancelled by its client while its pool process runs it: nothing will
    /// be sent, but the call is kept until the pool answers (or dies, or it
    /// times out), so the process counts as busy and no other call queues
    /// behind work nobody waits for.
    pub(super) abandoned: bool,
    /// The task the call became: its outcome settles the task, and nothing
    /// more goes to its client.
    pub(super) task: Option<String>,
    /// Its place in the queue while it connects, given back if the
    /// connection fails.
    place: Option<queue::Entry<Owner, Class>>,
}

impl Call {
    pub(super) fn lost_until(&self) -> Option<Instant> {
        match &self.stage {
            CallStage::Lost { until, .. } => Some(*until),
            _ => None,
        }
    }
}

impl Reactor {
    pub(super) fn start_call(&mut self, client: Client, mut request: CallRequest) {
        let program = request.program;
        let prog = &self.catalog.programs[program];
        // A packet still to be built from a long text: the call waits,
        // without a packet yet, until `prepare` has built it.
        let job = request.job.take();
        if job.is_some() {
            request.packet = Some(Vec::new());
        }
        // Arguments already checked and encoded from their text.
        let encoded = request.packet.take();
        let values = match encoded {
            Some(_) => Ok(Vec::new()),
            None => mcp::prepare(prog, &request),
        };
        let values = match values {
            Ok(v) => v,
            Err(message) => {
                let reply = mcp::call_response(
                    &self.catalog,
                    &request.id,
                    request.is_modern(),
                    mcp::error_result(&message),
                );
                return self.deliver(&client, &reply, true);
            }
        };
        let command = prog.command(request.command);
        if command.kind == CommandKind::Pure {
            let result = match mcp::run_pure(prog, request.command, values, &mut FsHost) {
                Ok(v) => mcp::success_result(command, &v),
                Err(message) => mcp::error_result(&message),
            };
            let reply = mcp::call_response(&self.catalog, &request.id, request.is_modern(), result);
            return self.deliver(&client, &reply, true);
        }
        let packet = match encoded.map_or_else(|| encode_call(prog, request.command, &values), Ok) {
            Ok(p) => p,
            Err(message) => {
                let reply = mcp::call_response(
                    &self.catalog,
                    &request.id,
                    request.is_modern(),
                    mcp::error_result(&message),
                );
                return self.deliver(&client, &reply, true);
            }
        };
        let pool = command.pool;
        let mut bases = vec![pool];
        for &p in &command.needed_pools {
            if !bases.contains(&p) {
                bases.push(p);
            }
        }
        let primary_only = bases.len() > 1;
        let routing = self.runtimes[program].routing;
        // Inline replies (and files) belong to the connection that carries
        // them; only a shared-memory block can be freed under us.
        let always_inline = mcp::return_schema(command)
            .ok()
            .and_then(schema::max_flat_size)
            .is_some_and(|size| size <= routing.inline_threshold);
        let mode = if routing.shm && !always_inline {
            LeaseMode::Exclusive
        } else {
            LeaseMode::Shared
        };
        let id = CallId(self.next_call);
        self.next_call += 1;
        let now = Instant::now();
        self.calls.insert(
            id,
            Call {
                client,
                next_progress: request
                    .progress_token
                    .as_ref()
                    .map(|_| now + PROGRESS_FIRST),
                request,
                program,
                pool,
                slot: pool,
                bases,
                primary_only,
                pools: Vec::new(),
                mode,
                leased: false,
                packet,
                written: 0,
                reply: Vec::new(),
                expected: None,
                stream: None,
                stage: CallStage::WaitingForPool,
                started: now,
                // Set when the call reaches its pool: waiting for a pool to
                // start is bounded by the start-up timeout instead.
                deadline: None,
                last_progress: None,
                task_at: None,
                task: None,
                abandoned: false,
                place: None,
            },
        );
        if let Some(job) = job {
            return self.preparing.add(id, job);
        }
        // Every remote call queues, even one that can run at once (it
        // leaves the queue in this turn): past a cap it is refused here,
        // before it can become a task.
        let class = (program, self.calls[&id].bases.clone());
        let owner = Owner::of(&self.calls[&id].client);
        let deadline = self.options.queue_timeout.map(|t| now + t);
        if let Err(refused) = self.queue.push(id, owner.clone(), class, deadline) {
            return self.refuse_call(id, &owner, refused);
        }
        let task_at = self.task_deadline(self.calls[&id].request.wants_tasks(), now);
        if let Some(call) = self.calls.get_mut(&id) {
            call.task_at = task_at;
            if task_at.is_some() || call.next_progress.is_some() {
                self.timed.insert(id);
            }
        }
        if task_at.is_some_and(|t| t <= now) {
            // `--task-after 0`: the task exists before its handle is sent.
            self.make_task(id);
        }
        let lang = self.pool_lang(program, pool).to_string();
        match self.ensure_needed_pools(id) {
            Ok(true) => {
                self.send_progress(id, &format!("running in pool '{lang}'"));
                self.dispatch_waiting(program);
            }
            Ok(false) => {
                self.send_progress(id, &format!("waiting for pool '{lang}' to start"));
            }
            Err(message) => self.finish_call(id, Err(message)),
        }
    }

    /// Starts what the call needs: its own pool and the pools it calls into
    /// (`needed_pools`); true when all of them answer pings.
    pub(super) fn ensure_needed_pools(&mut self, id: CallId) -> Result<bool, String> {
        let Some(call) = self.calls.get(&id) else {
            return Ok(false);
        };
        let program = call.program;
        let mut pools = vec![call.pool];
        let command = self.catalog.programs[program].command(call.request.command);
        pools.extend(
            command
                .needed_pools
                .iter()
                .copied()
                .filter(|p| *p != call.pool),
        );
        let own = pools[0];
        let replica_ready = pools.len() == 1 && {
            let rt = &self.runtimes[program];
            rt.instances(own)
                .any(|slot| slot != own && self.pool_ready(program, slot))
        };
        let mut all_ready = true;
        for p in pools {
            match self.ensure_pool(program, p) {
                Ok(ready) => all_ready &= ready,
                // A ready replica serves while the primary cannot start.
                Err(_) if replica_ready => {}
                Err(message) => return Err(message),
            }
        }
        Ok(all_ready || replica_ready)
    }

    /// Gives back the lease of a call that holds one, and lets waiting calls
    /// have theirs.
    fn release_lease(&mut self, program: usize, pools: &[usize], mode: LeaseMode) {
        self.runtimes[program].leases.release(pools, mode);
        self.dispatch_waiting(program);
    }

    /// Connects a call that holds its lease.
    fn connect_call(&mut self, id: CallId) {
        let Some(call) = self.calls.get(&id) else {
            return;
        };
        let (program, pool, slot) = (call.program, call.pool, call.slot);
        let spare = self.runtimes[program].pools[slot].spare.take();
        let path = &self.runtimes[program].pools[slot].socket_path;
        let connected = match new_connection(spare, path) {
            Ok(mut stream) => {
                let token = self.token(Source::Call(id));
                // Readable only: the packet is written at once below, and a
                // writable wake-up would cost a turn for nothing.
                if let Err(e) =
                    self.poll
                        .registry()
                        .register(&mut stream, token, Interest::READABLE)
                {
                    self.sources.remove(&token);
                    let message = format!(
                        "cannot watch the connection to pool '{}': {e}",
                        self.runtimes[program].pools[slot].label()
                    );
                    return self.finish_call(id, Err(message));
                }
                Ok((token, stream))
            }
            Err(e) => Err(e),
        };
        match connected {
            Ok((token, stream)) => {
                let timeout = self.options.call_timeout;
                if let Some(call) = self.calls.get_mut(&id) {
                    call.stream = Some((token, stream));
                    call.stage = CallStage::Sending;
                    call.deadline = timeout.map(|t| Instant::now() + t);
                }

                // Unix sockets take the write at once; sending now saves a turn.
                self.advance_call(id);
            }
            Err(e) => {
                // The pool may have just died (its restart is then under way)
                // or stopped listening: wait for it to answer a ping again
                // instead of failing the call.
                self.check_children();
                let Some(call) = self.calls.get_mut(&id) else {
                    return;
                };
                call.stage = CallStage::WaitingForPool;
                // Nothing was sent: the lease goes back (a readiness probe
                // must be able to connect), and the call takes its place in
                // the queue again, to go once the pool answers.
                if call.leased {
                    call.leased = false;
                    let (pools, mode) = (call.pools.clone(), call.mode);
                    self.runtimes[program].leases.release(&pools, mode);
                    if let Some(place) = call.place.take() {
                        self.queue.restore(id, place);
                    }
                }
                let lang = self.runtimes[program].pools[slot].label();
                if slot != pool {
                    // A replica: probe it again if it still looks ready; the
                    // call goes to whichever process is ready first.
                    if self.pool_ready(program, slot) {
                        eprintln!("morloc-mcp: pool '{lang}' refused a connection ({e}); probing it again");
                        self.reprobe_pool(program, slot);
                    }
                    return self.dispatch_waiting(program);
                }
                match self.ensure_pool(program, pool) {
                    Ok(false) => {}
                    Ok(true) => {
                        // Alive but refusing: probe it again like a new pool.
                        eprintln!("morloc-mcp: pool '{lang}' refused a connection ({e}); probing it again");
                        self.reprobe_pool(program, pool);
                    }
                    Err(message) => return self.finish_call(id, Err(message)),
                }
                self.dispatch_waiting(program);
            }
        }
    }

    pub(super) fn advance_call(&mut self, id: CallId) {
        let Some(call) = self.calls.get_mut(&id) else {
            return;
        };
        let Some((_, stream)) = call.stream.as_mut() else {
            return;
        };
        let lang = self.runtimes[call.program].pools[call.slot].label();
        if call.stage == CallStage::Sending {
            // The pool parses the header from its first read, so the whole
            // packet goes out in as few writes as the socket allows; a big
            // one a slice per turn while the pool keeps up (`prepare`).
            let mut sent = 0;
            while call.written < call.packet.len() {
                if sent >= prepare::SEND_SLICE {
                    return self.preparing.send_later(id);
                }
                match stream.write(&call.packet[call.written..]) {
                    Ok(n) => {
                        call.written += n;
                        sent += n;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        if let Some((token, stream)) = call.stream.as_mut() {
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
                        let message = format!("cannot send the call to pool '{lang}': {e}");
                        return self.lost_connection(id, message);
                    }
                }
            }
            call.stage = CallStage::Receiving;
            call.packet = Vec::new();
            // The reply cannot be there yet; its readable event will come.
            return;
        }
        loop {
            let received = call.reply.len();
            let read = match call.expected {
                // Header unknown yet: a small buffer holds most replies whole.
                None => {
                    if self.scratch.len() != super::SCRATCH_LEN {
                        self.scratch = vec![0u8; super::SCRATCH_LEN];
                    }
                    let head = &mut self.scratch[..4096];
                    stream
                        .read(head)
                        .inspect(|&n| call.reply.extend_from_slice(&head[..n]))
                }
                Some(total) if received >= total => break,
                // Read straight into the reply, growing it by at most 1 MiB
                // at a time (a bogus length must not allocate up front).
                Some(total) => {
                    let end = total.min(received + (1 << 20));
                    call.reply.resize(end, 0);
                    let res = stream.read(&mut call.reply[received..end]);
                    call.reply.truncate(received + *res.as_ref().unwrap_or(&0));
                    res
                }
            };
            match read {
                Ok(0) => {
                    let message = match call.expected {
                        None if call.reply.is_empty() => {
                            format!("pool '{lang}' closed the connection without replying")
                        }
                        _ => format!(
                            "pool '{lang}' closed the connection in the middle of its reply ({} of {} bytes received)",
                            call.reply.len(),
                            call.expected
                                .map_or_else(|| "at least 32".to_string(), |t| t.to_string())
                        ),
                    };
                    return self.lost_connection(id, message);
                }
                Ok(_) => {
                    if call.expected.is_none() && call.reply.len() >= packet::HEADER_LEN {
                        let mut head = [0u8; packet::HEADER_LEN];
                        head.copy_from_slice(&call.reply[..packet::HEADER_LEN]);
                        match packet::packet_len(&head) {
                            Ok(total) if total <= MAX_REPLY => {
                                let total = total as usize;
                                if call.reply.len() > total {
                                    let message =
                                        format!("pool '{lang}' sent bytes after its reply packet");
                                    return self.finish_call(id, Err(message));
                                }
                                call.expected = Some(total);
                            }
                            Ok(total) => {
                                let message = format!(
                                    "pool '{lang}' announced a {total}-byte reply, over the {MAX_REPLY}-byte limit"
                                );
                                return self.finish_call(id, Err(message));
                            }
                            Err(e) => {
                                let message = format!("{e} (pool '{lang}')");
                                return self.finish_call(id, Err(message));
                            }
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let message = format!("cannot read the reply of pool '{lang}': {e}");
                    return self.lost_connection(id, message);
                }
            }
        }
        // A complete reply: decode it now, before anything else runs.
        let reply = std::mem::take(&mut call.reply);
        let (program, command, slot) = (call.program, call.request.command, call.slot);
        let outcome = self.decode_reply(program, slot, command, &reply);
        self.finish_call(id, outcome);
    }

    fn decode_reply(
        &mut self,
        program: usize,
        slot: usize,
        command: usize,
        bytes: &[u8],
    ) -> Result<Json, String> {
        let cmd = self.catalog.programs[program].command(command);
        let lang = &self.runtimes[program].pools[cmd.pool].lang;
        let reply = packet::parse_reply(bytes).map_err(|e| format!("{e} (pool '{lang}')"))?;
        let schema = mcp::return_schema(cmd)?;
        let decode_failed =
            |e: &dyn std::fmt::Display| format!("cannot decode the result of '{}': {e}", cmd.name);
        if mcp::result_is_json_text(cmd) {
            // Straight from the reply bytes (or shared memory) to the JSON
            // text: no decoded value in between (ARCHITECTURE.md, cross-cutting concerns, "Memory").
            let mut text = String::new();
            match reply {
                Reply::Fail(message) => return Ok(mcp::error_result(&message)),
                Reply::Voidstar(blob) => voidstar::flat_to_json(schema, blob, &mut text)
                    .map_err(|e| decode_failed(&e))?,
                Reply::Rptr(relptr) => {
                    let reader = self.runtimes[program].reader(slot);
                    let rendered = voidstar::to_json(schema, &*reader, relptr, &mut text);
                    reader.clear();
                    rendered.map_err(|e| decode_failed(&e))?
                }
                Reply::Msgpack(data) => {
                    let value = msgpack::decode(schema, data).map_err(|e| decode_failed(&e))?;
                    return Ok(mcp::success_result(cmd, &value));
                }
                Reply::File(path) => {
                    let value = read_result_file(&path, schema, &cmd.name)?;
                    return Ok(mcp::success_result(cmd, &value));
                }
            }
            return Ok(mcp::text_result(cmd, text));
        }
        let value: Value = match reply {
            Reply::Fail(message) => return Ok(mcp::error_result(&message)),
            Reply::Voidstar(blob) => {
                voidstar::decode_flat(schema, blob).map_err(|e| decode_failed(&e))?
            }
            Reply::Msgpack(data) => msgpack::decode(schema, data).map_err(|e| decode_failed(&e))?,
            Reply::Rptr(relptr) => {
                let reader = self.runtimes[program].reader(slot);
                let decoded = voidstar::decode(schema, &*reader, relptr);
                // Volumes may be unlinked and recreated under the same index;
                // mappings are cheap to redo.
                reader.clear();
                decoded.map_err(|e| decode_failed(&e))?
            }
            Reply::File(path) => read_result_file(&path, schema, &cmd.name)?,
        };
        Ok(mcp::success_result(cmd, &value))
    }

    /// The connection failed mid-call. If the pool died, the child handler
    /// fails the call with how it died; otherwise `message` is used after a
    /// short grace (see [`LOST_GRACE`]).
    fn lost_connection(&mut self, id: CallId, message: String) {
        self.check_children();
        let Some(call) = self.calls.get_mut(&id) else {
            return;
        };
        if let Some((token, mut stream)) = call.stream.take() {
            let _ = self.poll.registry().deregister(&mut stream);
            self.sources.remove(&token);
        }
        call.stage = CallStage::Lost {
            message,
            until: Instant::now() + LOST_GRACE,
        };
    }

    pub(super) fn finish_call(&mut self, id: CallId, outcome: Result<Json, String>) {
        let Some(call) = self.calls.get(&id) else {
            return;
        };
        if call.abandoned {
            // Its client is gone: the process is free again, nothing is sent.
            self.take_call(id);
            return;
        }
        let (program, slot) = (call.program, call.slot);
        if self.call_wants_logs(&call.client, &call.request) {
            // Lines the pool printed before replying go out before the reply.
            self.read_pool_output(program, slot);
        }
        // No progress notification goes right before the reply: some clients
        // handle notifications after the response of the same read and
        // would then report an unknown progress token.
        let Some(call) = self.take_call(id) else {
            return;
        };
        let result = outcome.unwrap_or_else(|message| mcp::error_result(&message));
        if let Some(task) = &call.task {
            return self.settle_task(task, Outcome::Completed(result));
        }
        let reply = mcp::call_response(
            &self.catalog,
            &call.request.id,
            call.request.is_modern(),
            result,
        );
        self.deliver(&call.client, &reply, true);
    }

    /// Ends a call with a protocol-level failure (its pool died, or it timed
    /// out): an `isError` result as always, but a task it became is
    /// `failed` with a JSON-RPC error.
    pub(super) fn fail_call(&mut self, id: CallId, message: String) {
        let task = self.calls.get(&id).and_then(|c| c.task.clone());
        match task {
            Some(task) => {
                self.take_call(id);
                self.settle_task(
                    &task,
                    Outcome::Failed(jsonrpc::ErrorCode::InternalError as i64, message),
                );
            }
            None => self.finish_call(id, Err(message)),
        }
    }

    /// Sends `notifications/progress` for a call that carries a progress
    /// token: elapsed seconds as the (strictly increasing) progress, no total.
    fn send_progress(&mut self, id: CallId, message: &str) {
        let Some(call) = self.calls.get_mut(&id) else {
            return;
        };
        let Some(token) = call.request.progress_token.clone() else {
            return;
        };
        if call.task.is_some() {
            return;
        }
        let elapsed = (call.started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
        let progress = match call.last_progress {
            Some(last) if elapsed <= last => last + 0.001,
            _ => elapsed,
        };
        call.last_progress = Some(progress);
        let client = call.client.clone();
        let note = mcp::progress_notification(&token, progress, message);
        self.deliver(&client, &note, false);
    }

    /// Removes a call and closes its connection, sending nothing.
    fn take_call(&mut self, id: CallId) -> Option<Call> {
        let mut call = self.calls.remove(&id)?;
        self.queue.remove(id);
        self.timed.remove(&id);
        if let Some((token, stream)) = call.stream.take() {
            // Closed at the end of this turn, once the answer is written
            // (`end_turn`). Closing removes it from epoll by itself (no other
            // descriptor refers to it), which saves a system call per call;
            // until then its events find no source and are ignored.
            self.closing.push(stream);
            self.sources.remove(&token);
        }
        if call.leased {
            call.leased = false;
            if let Some(pool) = self.runtimes[call.program].pools.get_mut(call.slot) {
                pool.last_used = Instant::now();
            }
            self.release_lease(call.program, &call.pools, call.mode);
        }
        Some(call)
    }

    /// Fails calls on process `slot` of a pool: the calls running on it,
    /// and (`include_waiting`, the pool cannot be used now) the calls
    /// waiting for it, leaving waiting calls for the restarted pool
    /// otherwise. Waiting calls are not tied to a replica: they fail only
    /// when the primary fails and no replica of their pool can serve them.
    pub(super) fn fail_pool_calls(
        &mut self,
        program: usize,
        slot: usize,
        message: &str,
        include_waiting: bool,
    ) {
        let rt = &self.runtimes[program];
        let base = rt.pools[slot].base;
        let primary = rt.pools[slot].replica == 0;
        let replica_alive = rt.other_instance_alive(base, slot);
        // A waiting call also depends on the pools its command calls into.
        let needs = |c: &Call| {
            c.bases.contains(&base) && (c.primary_only || c.pool != base || !replica_alive)
        };
        let ids: Vec<CallId> = self
            .calls
            .iter()
            .filter(|(_, c)| c.program == program)
            .filter(|(_, c)| match c.stage {
                CallStage::WaitingForPool => include_waiting && primary && needs(c),
                _ => c.slot == slot,
            })
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.fail_call(id, message.to_string());
        }
    }

    pub(super) fn call_timers(&mut self, now: Instant) {
        self.queue_timers(now);
        let timed = || {
            self.timed
                .iter()
                .filter_map(|id| Some((id, self.calls.get(id)?)))
        };
        let expired: Vec<CallId> = timed()
            .filter(|(_, c)| c.deadline.is_some_and(|d| d <= now))
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            self.time_out(id);
        }
        let timed = || {
            self.timed
                .iter()
                .filter_map(|id| Some((id, self.calls.get(id)?)))
        };
        let due: Vec<CallId> = timed()
            .filter(|(_, c)| c.next_progress.is_some_and(|t| t <= now))
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            let Some(call) = self.calls.get_mut(&id) else {
                continue;
            };
            let since = now.duration_since(call.started);
            call.next_progress = Some(if since < 2 * PROGRESS_FIRST {
                call.started + 2 * PROGRESS_FIRST
            } else {
                now + PROGRESS_EVERY
            });
            let elapsed = since.as_secs_f64();
            self.send_progress(id, &format!("still running after {elapsed:.0} s"));
        }
        let timed = || {
            self.timed
                .iter()
                .filter_map(|id| Some((id, self.calls.get(id)?)))
        };
        let lost: Vec<CallId> = timed()
            .filter(|(_, c)| c.lost_until().is_some_and(|t| t <= now))
            .map(|(id, _)| *id)
            .collect();
        if !lost.is_empty() {
            self.check_children();
        }
        for id in lost {
            let Some(call) = self.calls.get(&id) else {
                continue;
            };
            if let CallStage::Lost { message, .. } = &call.stage {
                let message = message.clone();
                self.fail_call(id, message);
            }
        }
    }

    fn time_out(&mut self, id: CallId) {
        let Some(call) = self.calls.get(&id) else {
            return;
        };
        let (program, slot) = (call.program, call.slot);
        let secs = self.options.call_timeout.map_or(0.0, |t| t.as_secs_f64());
        let lang = self.runtimes[program].pools[slot].label();
        let was_running = call.stage != CallStage::WaitingForPool;
        if was_running {
            // Restarted below: no waiting call may take its place on it.
            self.withdraw_pool(program, slot);
        }
        self.fail_call(
            id,
            format!("timed out after {secs} s waiting for pool '{lang}'"),
        );
        if was_running {
            // A stuck worker would hold up every later call (a Python pool
            // serves one call at a time), so the pool is restarted.
            self.restart_pool(program, slot, &format!("a call timed out after {secs} s"));
        }
    }
}

impl Reactor {
    /// Forwards one line that pool `pool` of `program` printed to the modern
    /// calls running on it whose request asked for messages at `level` or
    /// above (a modern log level belongs to its request, so only the calls
    /// the pool is serving hear what it prints).
    pub(super) fn forward_log_to_calls(
        &mut self,
        program: usize,
        pool: usize,
        level: usize,
        logger: &str,
        line: &str,
    ) {
        let targets: Vec<(Client, Json)> = self
            .calls
            .values()
            .filter(|c| c.program == program && c.slot == pool)
            .filter(|c| c.stage != CallStage::WaitingForPool && c.task.is_none())
            .filter_map(|c| {
                let wanted = c.request.modern.as_ref()?.log_level;
                let note = mcp::log_message(wanted, level, logger, line)?;
                Some((c.client.clone(), note))
            })
            .collect();
        for (client, note) in targets {
            self.deliver(&client, &note, false);
        }
    }
}

/// Reads and removes a FILE result (pools never delete them; the server
/// owns the file once it has the reply).
fn read_result_file(
    path: &std::path::Path,
    schema: &crate::format::schema::Schema,
    command: &str,
) -> Result<Value, String> {
    let data = std::fs::read(path)
        .map_err(|e| format!("cannot read the result file {}: {e}", path.display()))?;
    let _ = std::fs::remove_file(path);
    msgpack::decode(schema, &data)
        .map_err(|e| format!("cannot decode the result of '{command}': {e}"))
}

/// Builds the CALL packet: one inline voidstar DATA packet per argument.
fn encode_call(program: &Program, command: usize, values: &[Value]) -> Result<Vec<u8>, String> {
    let cmd = program.command(command);
    let mut args = Vec::with_capacity(values.len());
    for (slot, (arg, value)) in cmd.args.iter().zip(values).enumerate() {
        let name = || mcp::slot_name(cmd, slot);
        let schema = mcp::slot_schema(arg)
            .map_err(|why| format!("argument '{}' cannot be passed: {why}", name()))?;
        let blob = voidstar::encode_flat(&schema, value)
            .map_err(|e| format!("cannot encode argument '{}': {e}", name()))?;
        args.push(packet::data_packet_voidstar(
            &schema.to_wire_string(),
            &blob,
        ));
    }
    Ok(packet::call_packet(cmd.mid, &args))
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
