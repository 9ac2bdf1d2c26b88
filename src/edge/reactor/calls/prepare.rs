//! Calls whose CALL packet is still being built from a long arguments text
//! (`mcp::PacketJob`), a slice per reactor turn.
//!
//! Such a call sits in the reactor's call table from the start (so
//! cancelling it, its client going away, a DELETE of its session and
//! draining all find it), but not in the queue: it has no packet yet. Each
//! turn gives one slice of work to the call at the front of the line, which
//! then goes to the back, so calls being prepared share the thread in turn
//! and every other event is served between two slices (the reactor polls
//! without waiting while any is pending). Once built, the call starts as
//! one whose packet came ready; a refusal is answered as `isError`. A call
//! that is gone (cancelled, its client closed) is dropped at its turn with
//! its memory. Over HTTP what a job holds counts against `--max-buffered`.
//! The same line carries big packets being written to their pools,
//! connections with more to read than one turn's share, and result files
//! being read (`result_file`), so no single transfer holds the thread
//! either.

use std::collections::VecDeque;

use mio::Token;

use super::super::http::HttpFront;
use super::super::idhash::IdMap;
use super::super::Reactor;
use super::wire::FileSlice;
use super::CallId;
use crate::format::json::check::{self, Checker};
use crate::format::json::scan::Ends;
use crate::protocol::http::Request;
use crate::protocol::mcp::{self, PacketJob};

/// Work units per slice (about one JSON value, or 64 bytes of text read or
/// of packet zeroed, each): a slice takes well under a millisecond.
const SLICE: usize = 4 * 1024;
/// Bytes of a body checked per slice.
const CHECK_SLICE: usize = SLICE * 64;

/// A body checked in slices, ready to decode without reading it again.
pub(in crate::edge::reactor) struct Checked {
    pub(in crate::edge::reactor) verdict: check::Checked,
    /// Where the trimmed message is in the body.
    pub(in crate::edge::reactor) span: std::ops::Range<usize>,
    pub(in crate::edge::reactor) ends: Ends,
}

/// An HTTP request whose body is being checked.
struct BodyCheck {
    req: Request,
    cors: Vec<(String, String)>,
    checker: Checker,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Work {
    Call(CallId),
    Body(Token),
    /// A call's packet to write on.
    Send(CallId),
    /// A connection to read on.
    Pump(Token),
    /// A call's result file to read on.
    File(CallId),
}

/// The calls being prepared and the bodies being checked, in turn order.
#[derive(Default)]
pub(in crate::edge::reactor) struct Preparing {
    line: VecDeque<Work>,
    /// Each job, and the bytes it was last counted for in the budget.
    jobs: IdMap<CallId, (Box<PacketJob>, usize)>,
    bodies: IdMap<Token, BodyCheck>,
}

impl Preparing {
    /// Whether any work is waiting (the reactor then polls without waiting).
    pub(in crate::edge::reactor) fn pending(&self) -> bool {
        !self.line.is_empty()
    }

    pub(super) fn add(&mut self, id: CallId, job: Box<PacketJob>) {
        self.line.push_back(Work::Call(id));
        self.jobs.insert(id, (job, 0));
    }

    /// Call `id` has more of its packet to write, in a later turn.
    pub(super) fn send_later(&mut self, id: CallId) {
        self.line.push_back(Work::Send(id));
    }

    /// Call `id` has its result file to read, from a later turn on.
    pub(super) fn read_later(&mut self, id: CallId) {
        self.line.push_back(Work::File(id));
    }

    /// Connection `token` may have more to read, in a later turn.
    pub(in crate::edge::reactor) fn pump_later(&mut self, token: Token) {
        self.line.push_back(Work::Pump(token));
    }

    /// Checks the body of `req` (on connection `token`, held busy) in
    /// slices, what it holds counted against `front`'s budget; then it is
    /// handled (`HttpFront::post_checked`, see [`BodySlice::Checked`]).
    pub(in crate::edge::reactor) fn check_body(
        &mut self,
        front: Option<&mut HttpFront>,
        token: Token,
        req: Request,
        cors: Vec<(String, String)>,
    ) {
        if let Some(front) = front {
            front.count_prepared(0, req.body.len());
        }
        self.line.push_back(Work::Body(token));
        let checker = Checker::default();
        let check = BodyCheck { req, cors, checker };
        self.bodies.insert(token, check);
    }

    /// One slice of checking the body on `token`, unless its connection
    /// has left `front`; a body done no longer counts against the budget.
    fn check_slice(&mut self, front: Option<&mut HttpFront>, token: Token) -> BodySlice {
        let Some(mut check) = self.bodies.remove(&token) else {
            return BodySlice::Gone;
        };
        let open = front.as_ref().is_some_and(|f| f.has_conn(token));
        let verdict = if open {
            check.checker.step(&check.req.body, CHECK_SLICE)
        } else {
            None
        };
        if open && verdict.is_none() {
            self.line.push_back(Work::Body(token));
            self.bodies.insert(token, check);
            return BodySlice::Later;
        }
        if let Some(front) = front {
            front.count_prepared(check.req.body.len(), 0);
        }
        let Some(verdict) = verdict else {
            return BodySlice::Gone;
        };
        let checked = Checked {
            verdict,
            span: check.checker.span(),
            ends: check.checker.ends(),
        };
        BodySlice::Checked(Box::new((check, checked)))
    }
}

/// What [`Preparing::check_slice`] did.
enum BodySlice {
    /// Nothing: the connection is gone.
    Gone,
    /// A slice was checked; the rest waits for a later turn.
    Later,
    /// The body is checked: its request and headers, and the verdict, to
    /// handle.
    Checked(Box<(BodyCheck, Checked)>),
}

impl Reactor {
    /// Gives one slice of work to the next body being checked or call
    /// being prepared.
    pub(in crate::edge::reactor) fn prepare_slice(&mut self) {
        while let Some(work) = self.preparing.line.pop_front() {
            let id = match work {
                Work::Call(id) => id,
                Work::Send(id) => return self.advance_call(id),
                Work::File(id) => match self.calls.read_slice(id, &self.catalog, &mut self.pools) {
                    None => continue,
                    Some(FileSlice::Later) => return self.preparing.read_later(id),
                    Some(FileSlice::Ended(ending)) => return self.end_call(id, ending),
                },
                Work::Pump(token) => {
                    if let Some((front, cx)) = &mut self.lend_http() {
                        front.pump(cx, token);
                    }
                    return self.http_news();
                }
                Work::Body(token) => match self.preparing.check_slice(self.http.as_mut(), token) {
                    BodySlice::Gone => continue,
                    BodySlice::Later => return,
                    BodySlice::Checked(body) => {
                        let (BodyCheck { req, cors, .. }, checked) = *body;
                        if let Some((front, cx)) = &mut self.lend_http() {
                            front.post_checked(cx, token, req, cors, &checked);
                        }
                        return self.http_news();
                    }
                },
            };
            let Some((mut job, counted)) = self.preparing.jobs.remove(&id) else {
                continue;
            };
            let live = self.calls.get(&id).is_some_and(|c| !c.abandoned);
            let outcome = if live { job.step(SLICE) } else { None };
            let held = if live && outcome.is_none() {
                job.held()
            } else {
                0
            };
            if let Some(front) = self.http.as_mut() {
                front.count_prepared(counted, held);
            }
            if !live {
                // Cancelled or its client is gone: drop the work.
                continue;
            }
            match outcome {
                None => {
                    self.preparing.line.push_back(Work::Call(id));
                    self.preparing.jobs.insert(id, (job, held));
                }
                Some(outcome) => {
                    let Some(mut call) = self.take_call(id) else {
                        return;
                    };
                    drop(job);
                    match outcome {
                        Ok(packet) => {
                            call.request.input = mcp::call::CallInput::Packet(packet);
                            self.start_call(call.client, call.request);
                        }
                        Err(message) => {
                            let outcome = crate::protocol::metrics::Outcome::ToolError;
                            let started = call.started;
                            self.calls
                                .count(&self.catalog, &call.request, outcome, started);
                            let reply = mcp::call_response(
                                &self.catalog,
                                &call.request.id,
                                call.request.is_modern(),
                                mcp::error_result(&message),
                            );
                            self.deliver(&call.client, &reply, true);
                        }
                    }
                }
            }
            return;
        }
    }
}
