//! A request's admission, judged as soon as its head is complete and
//! before any of its body is taken: the checks of its route, then the
//! buffer budget for its declared body.

use mio::Token;

use super::{Conn, HttpFront, ROUTES};
use crate::protocol::http::{self, Answer, Notice};

impl HttpFront {
    /// Judges the request whose head just completed on `token`, before any
    /// of its body is taken: the checks of its route (none for an open
    /// one), then the budget for its declared body. `Some` is the refusal.
    pub(super) fn admit(&mut self, token: Token) -> Option<Answer> {
        self.recount(token);
        let conn = self.conns.get(&token)?;
        let head = conn.head()?;
        let open = http::find(ROUTES, &head.path).is_some_and(|r| !r.guarded);
        if !open {
            let gate = self.gate_for(&head.path);
            match http::admit(ROUTES, &gate, head) {
                Err(answer) => {
                    let head = head.clone();
                    self.access_open(token, &head, true);
                    return Some(answer);
                }
                // A path with a token of its own is not OAuth's to judge.
                Ok((route, cors)) if route.guarded && !self.own_gate(&head.path) => {
                    if let Some(answer) = self.oauth_head(head, cors) {
                        let head = head.clone();
                        self.access_open(token, &head, true);
                        return Some(answer);
                    }
                }
                Ok(_) => {}
            }
        }
        // What of the body already sits in the input buffer is counted.
        let more = conn.body_due();
        let refused = self.over_budget(token, more);
        if refused.is_none() {
            self.conns.get_mut(&token)?.reserve_body();
            self.recount(token);
        }
        refused
    }

    /// Whether the whole declared body of the request on `token` is
    /// already in its input buffer.
    pub(super) fn body_is_here(&self, token: Token) -> bool {
        self.conns.get(&token).is_some_and(Conn::body_is_here)
    }

    /// The 503 for a body of `length` more bytes on `token` when the budget
    /// has no room for it (for a chunked body, `length` 0: when the total is
    /// already past the limit).
    pub(super) fn over_budget(&mut self, token: Token, length: u64) -> Option<Answer> {
        self.recount(token);
        let fits = if length == 0 {
            !self.budget.exceeded()
        } else {
            self.budget.admits(length)
        };
        if fits {
            return None;
        }
        let (used, limit) = (self.budget.used(), self.budget.limit());
        self.notice(Notice::Budget, || {
            format!("the buffer budget is reached ({used} of {limit} bytes held, --max-buffered); a request body got 503")
        });
        let headers = vec![("Retry-After".into(), "1".into())];
        let message = "server busy: too much request data buffered; retry later";
        Some(Answer::error(503, headers, message, false))
    }
}
