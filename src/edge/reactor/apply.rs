//! The one place a [`Step`] is carried out. A transport turns what it read
//! into an [`Origin`] and a step (stdio: `mcp::handle`; HTTP: the pure
//! `http::mcp_post`, which also gives the answer's [`Framing`]); `apply`
//! calls the owners: the calls for a tool call or a cancellation, the task
//! table for `tasks/*` and the job tools, the result store for
//! `resources/*`, the listeners for `subscriptions/listen`, and the
//! transport for the answer.

use mio::Token;
use serde_json::Value as Json;

use super::byteio::Streamed;
use super::calls::Cancel;
use super::http::{waiting_requests, Content, Head, HttpFront};
use super::tasks::ResourceBody;
use super::{Client, Reactor};
use crate::protocol::http::Framing;
use crate::protocol::jsonrpc::RequestId;
use crate::protocol::mcp::{self, tasks, Step};

/// Where a step came from, and how its answer is framed.
pub(super) enum Origin {
    Stdio,
    /// A request on HTTP connection `conn`.
    Http {
        conn: Token,
        framing: Framing,
    },
}

impl Origin {
    /// The owner of what the step leaves behind (calls, tasks, results):
    /// nobody's in particular on stdio, `HttpFront::call_owner` over HTTP.
    fn owner(&self, front: Option<&HttpFront>) -> String {
        match (self, front) {
            (Origin::Http { conn, framing }, Some(front)) => {
                front.call_owner(*conn, &framing.session)
            }
            _ => String::new(),
        }
    }

    /// The client waiting for the step's answer.
    fn client(&self) -> Client {
        match self {
            Origin::Stdio => Client::Stdio,
            Origin::Http { conn, framing } => Client::Http {
                conn: *conn,
                session: framing.session.clone(),
            },
        }
    }
}

impl Reactor {
    /// Carries out `step` from `origin`, and answers it.
    pub(super) fn apply(&mut self, origin: Origin, step: Step) {
        match step {
            Step::Nothing => self.accepted(&origin),
            Step::Reply(reply) => self.reply_to(&origin, &reply, Framing::reply_status),
            Step::Cancel(id) => {
                self.cancel_request(&origin, &id);
                self.accepted(&origin);
            }
            Step::Call(mut request) => {
                if let Origin::Http { conn, framing } = &origin {
                    let cors = &framing.headers;
                    let keep_alive = framing.keep_alive;
                    let refusal = self.http.as_ref().and_then(|f| {
                        f.oauth_tool_refusal(&self.catalog, *conn, &request, cors, keep_alive)
                    });
                    if let Some(a) = refusal {
                        let conn = *conn;
                        self.with_http(|f, cx| f.send(cx, conn, a, None));
                        return;
                    }
                    request.owner = origin.owner(self.http.as_ref());
                }
                let client = origin.client();
                if let Origin::Http { conn, framing } = origin {
                    // A connection that went away has no call to start.
                    let open = self.with_http(|f, cx| f.open_call(cx, conn, framing));
                    if open != Some(true) {
                        return;
                    }
                }
                self.start_call(client, request);
            }
            Step::Task(request) => {
                let owner = origin.owner(self.http.as_ref());
                // Over HTTP a long result is written from the task as the
                // client reads (`tasks::APART`), not copied into its queue.
                let http = matches!(origin, Origin::Http { .. });
                let (mut reply, apart) = self.answer_task(&owner, request.clone(), http);
                if let (Origin::Http { conn, framing }, Some(text)) = (&origin, apart) {
                    let body = mcp::structured::to_vec(&reply);
                    if let Some(streamed) = Streamed::spliced(&body, tasks::APART, &text) {
                        let head = Head {
                            status: framing.task_status(&reply),
                            content_type: Some("application/json"),
                            headers: &framing.headers,
                            keep_alive: framing.keep_alive,
                        };
                        let content = Content::Streamed(streamed);
                        self.with_http(|f, cx| f.answer(cx, *conn, head, content));
                        return;
                    }
                    // Not spliceable (a request id equal to the stand-in).
                    reply = self.answer_task(&owner, request, false).0;
                }
                self.reply_to(&origin, &reply, Framing::task_status);
            }
            Step::Resource(request) => {
                let owner = origin.owner(self.http.as_ref());
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
                                self.with_http(|f, cx| f.answer(cx, conn, head, content));
                            }
                            ResourceBody::Whole(body) => {
                                self.with_http(|f, cx| {
                                    f.respond(cx, conn, status, headers, &body, keep_alive)
                                });
                            }
                        }
                    }
                }
            }
            Step::Listen(mut listen) => {
                let owner = origin.owner(self.http.as_ref());
                self.tasks.agreed_ids(&mut listen, &owner);
                let ack = mcp::subscriptions::acknowledgement(&listen);
                let client = origin.client();
                match origin {
                    Origin::Stdio => {
                        self.listeners.add(client, &listen);
                        self.send_stdio(&ack);
                    }
                    Origin::Http { conn, framing } => {
                        let id = &listen.id;
                        let open = self.with_http(|f, _| f.open_listen(conn, framing, id, &ack));
                        if open != Some(true) {
                            return;
                        }
                        self.listeners.add(client, &listen);
                        self.with_http(|f, cx| f.flush(cx, conn));
                    }
                }
            }
        }
    }

    /// Answers with a JSON-RPC message; over HTTP with the status `status`
    /// gives it.
    fn reply_to(&mut self, origin: &Origin, reply: &Json, status: fn(&Framing, &Json) -> u16) {
        match origin {
            Origin::Stdio => self.send_stdio(reply),
            Origin::Http { conn, framing } => {
                let body = mcp::structured::to_vec(reply);
                let status = status(framing, reply);
                let (headers, keep_alive) = (&framing.headers, framing.keep_alive);
                self.with_http(|f, cx| f.respond(cx, *conn, status, headers, &body, keep_alive));
            }
        }
    }

    /// Answers a step that has no JSON-RPC answer: nothing on stdio, an
    /// empty `202` over HTTP (else that connection would wait forever).
    fn accepted(&mut self, origin: &Origin) {
        if let Origin::Http { conn, framing } = origin {
            let (headers, keep_alive) = (&framing.headers, framing.keep_alive);
            self.with_http(|f, cx| f.respond(cx, *conn, 202, headers, &[], keep_alive));
        }
    }

    /// `notifications/cancelled` for request `id`: a subscription simply
    /// ends (nothing more is sent for it, not even a response); a call is
    /// cancelled, and HTTP connections waiting for it are let go (no
    /// JSON-RPC response is due for a request its client gave up on: an
    /// event stream just ends).
    fn cancel_request(&mut self, origin: &Origin, id: &RequestId) {
        let client = origin.client();
        if let (Origin::Stdio, Some(stdio)) = (origin, self.stdio.as_mut()) {
            stdio.cancelled(id);
        }
        if self.listeners.remove(&client, id) {
            return;
        }
        let waiting = match &client {
            Client::Stdio => Vec::new(),
            Client::Http { session, .. } => waiting_requests(&self.calls, session, Some(id)),
        };
        // A pool cannot be told to stop a job: its worker finishes, and the
        // answer is dropped.
        for call in self
            .calls
            .cancel(Cancel::Request(&client, id), &self.catalog)
        {
            self.take_call(call);
        }
        for (conn, _) in waiting {
            self.with_http(|f, cx| f.abandon(cx, conn));
        }
    }
}
