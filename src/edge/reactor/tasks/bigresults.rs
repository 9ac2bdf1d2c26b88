//! Big results as resources on the reactor's side (`--max-result-chars`):
//! a call's long result is stored in the result table (the [`TaskStore`]'s,
//! kept with the tasks) and replaced by its link, and `resources/*` are
//! answered from the table under the caller's authorization. With `--task-dir` each result is also
//! a file there, read back at start. The table and every message live in
//! `protocol::mcp::bigresults`; this file adds the clock, the ids and the
//! files.

use std::rc::Rc;

use serde_json::Value as Json;

use crate::edge::log;
use crate::format::json::page::{Paged, Span};
use crate::protocol::http::Framing;
use crate::protocol::jsonrpc;
use crate::protocol::log::Untrusted;
use crate::protocol::mcp::bigresults::{self, ResourceMethod, ResourceRequest};
use crate::protocol::mcp::call::Ending;
use crate::protocol::mcp::{self, CallRequest, Catalog};

use super::TaskStore;
use crate::edge::reactor::byteio::{Form, Streamed};
use crate::edge::reactor::timers::now_ms;

/// The extension of a stored result's file in `--task-dir`.
const RESULT_EXT: &str = "result";

impl TaskStore {
    /// With big results on, a long successful result of `request` is
    /// stored (its text moved, not copied) and the call ends with its link
    /// instead; anything else passes unchanged.
    pub(in crate::edge::reactor) fn link_big(
        &mut self,
        catalog: &Catalog,
        request: &CallRequest,
        ending: Ending,
    ) -> Ending {
        let Some(limit) = catalog.result_limit else {
            return ending;
        };
        let mut result = match ending {
            Ending::Result(result) => result,
            Ending::Text(result) => result.into_json(),
            other => return other,
        };
        let program = &catalog.programs[request.program];
        let command = program.command(request.command);
        if !mcp::result_is_json_text(command) {
            return Ending::Result(result);
        }
        let Some(text) = bigresults::take_big_text(&mut result, limit) else {
            return Ending::Result(result);
        };
        let tool = program
            .surface
            .tools
            .iter()
            .find(|t| t.command == request.command)
            .map_or_else(|| command.name.clone(), |t| t.name.clone());
        if let Some(why) = self.table.results.refuses(text.len()) {
            return Ending::Error(why);
        }
        let Some(id) = self.mint() else {
            return Ending::Error("cannot store the long result: no random source".into());
        };
        drop(result);
        let value = Paged::new(text);
        let linked = bigresults::link_result(&id, &tool, &value, limit);
        let now = now_ms();
        let freed = self
            .table
            .insert_result(id.clone(), &request.owner, &tool, value, now);
        self.unstore_results(&freed);
        self.unstore_freed();
        self.store_result(&id);
        Ending::Result(linked)
    }

    /// Answers a `resources/*` request from a caller with authorization
    /// `owner`; with `stream`, a read answers with its text left out
    /// ([`bigresults::TEXT_PLACEHOLDER`]), and the stored value with where
    /// the text lies in it, to be written from the store.
    pub(in crate::edge::reactor) fn answer_resource(
        &self,
        catalog: &Catalog,
        owner: &str,
        req: ResourceRequest,
        stream: bool,
    ) -> (Json, Option<(Rc<Paged>, Span)>) {
        let now = now_ms();
        let mut streamed = None;
        let result = match req.method {
            ResourceMethod::Templates => bigresults::templates_result(),
            ResourceMethod::List => {
                bigresults::list_result(&self.table.results.of_owner(owner, now))
            }
            ResourceMethod::Read => {
                let asked = match bigresults::parse_uri(&req.uri) {
                    Ok(asked) => asked,
                    Err(why) => return (bigresults::not_found(&req.id, &req.uri, &why), None),
                };
                match self.table.results.get(&asked.id, owner, now) {
                    Some(stored) => {
                        if stream {
                            let span = bigresults::read_span(&asked, &stored.value);
                            streamed = Some((Rc::clone(&stored.value), span));
                        }
                        bigresults::read_result(&req.uri, &asked, &stored.value, stream)
                    }
                    None => {
                        let missing =
                            bigresults::not_found(&req.id, &req.uri, bigresults::NOT_HELD);
                        return (missing, None);
                    }
                }
            }
        };
        let result = if req.modern {
            let mut result = result;
            bigresults::cache_hints(req.method, &mut result);
            mcp::complete(result, catalog)
        } else {
            result
        };
        (jsonrpc::result_response(&req.id, result), streamed)
    }

    /// Frees the stored results whose time is up at `now`.
    pub(super) fn expire_results(&mut self, now: u64) {
        if self.table.results.next_expiry().is_some_and(|e| e <= now) {
            let gone = self.table.results.expire(now);
            self.unstore_results(&gone);
        }
    }

    /// `--task-dir`: writes a stored result's file, `<id>.result` (its head
    /// line, then the value's text; a temporary file renamed over it).
    fn store_result(&self, id: &str) {
        let (Some(dir), Some(stored)) = (&self.dir, self.table.results.by_id(id)) else {
            return;
        };
        let path = dir.join(format!("{id}.{RESULT_EXT}"));
        let tmp = dir.join(format!(".{id}.{RESULT_EXT}.tmp"));
        let head = bigresults::stored_head(stored);
        let parts = [head.as_bytes(), stored.value.text().as_bytes()];
        if let Err(e) = super::write_private(&path, &tmp, &parts) {
            log::error(&format!(
                "cannot store result {id} in {}: {e}",
                Untrusted(&dir.to_string_lossy())
            ));
        }
    }

    pub(super) fn unstore_results(&self, ids: &[String]) {
        if let Some(dir) = &self.dir {
            for id in ids {
                let _ = std::fs::remove_file(dir.join(format!("{id}.{RESULT_EXT}")));
            }
        }
    }

    /// `--task-dir`: reads the stored results back (after the tasks, which
    /// made the directory); files of expired ones are removed, unreadable
    /// ones reported and left alone.
    pub(super) fn load_results(&mut self) {
        let Some(dir) = self.dir.clone() else {
            return;
        };
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return;
        };
        let now = now_ms();
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|x| x != RESULT_EXT) {
                continue;
            }
            let parsed = std::fs::read(&path)
                .map_err(|e| e.to_string())
                .and_then(bigresults::from_stored);
            match parsed {
                Ok((head, text)) => {
                    if !self.table.results.restore(head, Paged::new(text), now) {
                        let _ = std::fs::remove_file(&path);
                    }
                }
                Err(why) => log::warn(&format!(
                    "ignoring result file {}: {why}",
                    Untrusted(&path.to_string_lossy())
                )),
            }
        }
    }
}

/// The body of a `resources/*` answer over HTTP
/// ([`TaskStore::http_resource`]).
pub(in crate::edge::reactor) enum ResourceBody {
    /// Held whole.
    Whole(Vec<u8>),
    /// A read's value (or its page) written from the store as the client
    /// takes it, so a client that does not read holds no copy of it.
    Streamed(Streamed),
}

impl TaskStore {
    /// Answers a `resources/*` request over HTTP from a caller with
    /// authorization `owner` (`HttpFront::call_owner`): the status
    /// `framing` gives it, and its body.
    pub(in crate::edge::reactor) fn http_resource(
        &self,
        catalog: &Catalog,
        owner: &str,
        resource: ResourceRequest,
        framing: &Framing,
    ) -> (u16, ResourceBody) {
        let (reply, streamed) = self.answer_resource(catalog, owner, resource, true);
        let status = framing.reply_status(&reply);
        let body = serde_json::to_vec(&reply).unwrap_or_default();
        let at = streamed.as_ref().and_then(|_| {
            let text = bigresults::STREAMED_TEXT;
            body.windows(text.len()).position(|w| w == text)
        });
        let (Some((value, span)), Some(at)) = (streamed, at) else {
            return (status, ResourceBody::Whole(body));
        };
        let open = at + b"\"text\":\"".len();
        let close = at + bigresults::STREAMED_TEXT.len() - 1;
        let mut answer = Streamed::new();
        answer.bytes(&body[..open]);
        answer.bytes(span.open.as_bytes());
        let form = if span.decoded {
            Form::Decoded
        } else {
            Form::Escaped
        };
        answer.text(&value, span.range, form);
        answer.bytes(span.close.as_bytes());
        answer.bytes(&body[close..]);
        (status, ResourceBody::Streamed(answer))
    }
}
