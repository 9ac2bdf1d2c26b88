//! Big results as resources (`--max-result-chars`): a tool result whose
//! value text is longer than the limit is stored, and the call answers with
//! a preview, a `resource_link` to the whole value and a small
//! `structuredContent` link object. The value is then read with
//! `resources/read`, whole or in pages (`?offset=&limit=`, see
//! [`format::json::page`](crate::format::json::page)), at
//! `morloc://result/<instance>.<random>`, a URI naming the instance that
//! holds it so a load balancer can route on it.
//!
//! This module has the URI and its query, the result table (bound to the
//! owner that made each result, a TTL, caps per owner, in all and in bytes),
//! the shaped call result, the `outputSchema` a tool gets while the option
//! is on, and the `resources/*` answers.
//!
//! Architecture Invariant: pure; no I/O. Times and ids come from the caller.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::rc::Rc;

use serde_json::{Map, Value as Json};

use crate::format::json::page::{Kind, Paged, Span};
use crate::protocol::jsonrpc::{self, ErrorCode, RequestId};
use crate::protocol::tools;

#[cfg(test)]
mod tests;

/// Every stored result's URI starts so.
pub const URI_PREFIX: &str = "morloc://result/";
/// The URI template of a page (RFC 6570).
pub const TEMPLATE: &str = "morloc://result/{id}{?offset,limit}";
/// At most this many results are held at once.
pub const MAX_RESULTS: usize = 256;
/// At most this many of one owner.
pub const MAX_RESULTS_PER_OWNER: usize = 32;
/// At most this many bytes of result text in all (a single bigger result
/// is still kept, alone).
pub const MAX_RESULT_BYTES: usize = 4 << 30;
/// At most this many bytes of result text of one owner (`--max-owner-bytes`):
/// a few big results, and a 2-core, 24 GB machine still has room for the
/// others.
pub const MAX_OWNER_BYTES: usize = 512 << 20;
/// A page's size when the URI gives an offset but no limit: elements of a
/// list.
pub const DEFAULT_LIST_PAGE: usize = 1000;
/// The same in characters, for strings and other values.
pub const DEFAULT_CHAR_PAGE: usize = 100_000;
/// The longest preview, in bytes.
pub const MAX_PREVIEW: usize = 4000;
/// The key of the `structuredContent` link object.
pub const LINK_KEY: &str = "resultLink";

/// A parsed result URI: which result, and which page (`None`: the whole
/// value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResultUri {
    pub id: String,
    pub offset: Option<usize>,
    pub limit: Option<usize>,
}

impl ResultUri {
    /// Whether the URI asks for a page rather than the whole value.
    pub fn is_page(&self) -> bool {
        self.offset.is_some() || self.limit.is_some()
    }
}

/// Parses `morloc://result/<id>[?offset=N][&limit=M]` (either order, each
/// at most once; decimal). The error says what is wrong.
pub fn parse_uri(uri: &str) -> Result<ResultUri, String> {
    let rest = uri
        .strip_prefix(URI_PREFIX)
        .ok_or_else(|| format!("not a result URI (they start with '{URI_PREFIX}')"))?;
    let (id, query) = match rest.split_once('?') {
        Some((id, q)) => (id, Some(q)),
        None => (rest, None),
    };
    if !valid_id(id) {
        return Err(format!(
            "'{id}' is not a result id (letters, digits, '.', '-', '_'; at most 128)"
        ));
    }
    let mut parsed = ResultUri {
        id: id.to_string(),
        offset: None,
        limit: None,
    };
    for pair in query.into_iter().flat_map(|q| q.split('&')) {
        if pair.is_empty() {
            continue;
        }
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("query part '{pair}' has no '='"))?;
        let slot = match key {
            "offset" => &mut parsed.offset,
            "limit" => &mut parsed.limit,
            other => {
                return Err(format!(
                    "unknown query parameter '{other}' (only 'offset' and 'limit')"
                ))
            }
        };
        if slot.is_some() {
            return Err(format!("'{key}' is given twice"));
        }
        if value.is_empty() || value.len() > 19 || !value.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "'{key}' must be a non-negative decimal integer, got '{value}'"
            ));
        }
        *slot = Some(value.parse().map_err(|e| format!("'{key}': {e}"))?);
    }
    Ok(parsed)
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_')
}

/// The URI of stored result `id`.
pub fn uri_of(id: &str) -> String {
    format!("{URI_PREFIX}{id}")
}

/// One stored result.
#[derive(Debug)]
pub struct Stored {
    pub id: String,
    /// The owner it was made under, whole (as a task's).
    pub owner: String,
    /// The tool that returned it.
    pub tool: String,
    /// Shared with the answers streaming it to slow readers (the text is
    /// held once; see [`read_result`]).
    pub value: Rc<Paged>,
    pub created_ms: u64,
    pub expires_ms: u64,
    /// Its place in the order of insertion (ties in time are common).
    seq: u64,
}

/// The stored results.
#[derive(Debug)]
pub struct ResultStore {
    map: HashMap<String, Stored>,
    /// When each result expires.
    expiries: Expiries,
    ttl_ms: u64,
    cap: usize,
    per_owner: usize,
    max_bytes: usize,
    owner_bytes: usize,
    bytes: usize,
    seq: u64,
}

impl ResultStore {
    pub fn new(ttl_ms: u64) -> ResultStore {
        ResultStore {
            map: HashMap::new(),
            expiries: Expiries::default(),
            ttl_ms,
            cap: MAX_RESULTS,
            per_owner: MAX_RESULTS_PER_OWNER,
            max_bytes: MAX_RESULT_BYTES,
            owner_bytes: MAX_OWNER_BYTES,
            bytes: 0,
            seq: 0,
        }
    }

    /// Other caps (tests): results in all, of one owner, bytes.
    pub fn with_caps(mut self, cap: usize, per_owner: usize, max_bytes: usize) -> ResultStore {
        self.cap = cap.max(1);
        self.per_owner = per_owner.max(1);
        self.max_bytes = max_bytes;
        self
    }

    /// Another cap on the bytes of one owner (`--max-owner-bytes`).
    pub fn with_owner_bytes(mut self, owner_bytes: usize) -> ResultStore {
        self.owner_bytes = owner_bytes;
        self
    }

    /// The cap on the bytes of one owner.
    pub fn owner_bytes_cap(&self) -> usize {
        self.owner_bytes
    }

    /// Bytes of result text `owner` holds.
    pub fn bytes_of(&self, owner: &str) -> usize {
        self.map
            .values()
            .filter(|r| r.owner == owner)
            .map(|r| r.value.bytes())
            .sum()
    }

    /// The cap on the bytes of all owners.
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// Bytes of result text by owner.
    pub fn owners_bytes(&self) -> impl Iterator<Item = (&str, usize)> {
        self.map
            .values()
            .map(|r| (r.owner.as_str(), r.value.bytes()))
    }

    /// Frees the oldest result of `owner`; its id.
    pub fn free_oldest_of(&mut self, owner: &str) -> Option<String> {
        let old = self.oldest(|r| r.owner == owner)?;
        self.remove(&old);
        Some(old)
    }

    /// The most bytes of result text any one owner holds.
    pub fn most_owner_bytes(&self) -> usize {
        let mut held: HashMap<&str, usize> = HashMap::new();
        for r in self.map.values() {
            *held.entry(r.owner.as_str()).or_default() += r.value.bytes();
        }
        held.values().copied().max().unwrap_or(0)
    }

    /// Why a value of `bytes` cannot be stored for any owner: it alone is
    /// over the cap on one owner's bytes (nothing is freed for it).
    pub fn refuses(&self, bytes: usize) -> Option<String> {
        (bytes > self.owner_bytes).then(|| {
            format!(
                "the result is {bytes} bytes of JSON, more than one caller may hold in stored results ({} bytes, --max-owner-bytes); ask for less, or page through smaller results",
                self.owner_bytes
            )
        })
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Bytes of result text held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Stores `value` for `owner`, after freeing expired results and, at a
    /// cap, the oldest of this owner (its own caps, in results and bytes:
    /// another owner's results are never freed for them) or of the owner
    /// holding the most (the total caps). Returns the ids freed. A value
    /// over the cap on one owner's bytes alone is refused by the caller
    /// first ([`ResultStore::refuses`]); given anyway, it frees all of its
    /// owner's results and is kept alone.
    pub fn insert(
        &mut self,
        id: String,
        owner: &str,
        tool: &str,
        value: Paged,
        now: u64,
    ) -> Vec<String> {
        let mut freed = self.expire(now);
        let key = owner.to_string();
        loop {
            let own = self.map.values().filter(|r| r.owner == key).count();
            let own_bytes = self.bytes_of(&key);
            let victim = if own >= self.per_owner
                || (own > 0 && own_bytes + value.bytes() > self.owner_bytes)
            {
                self.oldest(|r| r.owner == key)
            } else if self.map.len() >= self.cap
                || (self.bytes + value.bytes() > self.max_bytes && !self.map.is_empty())
            {
                let mut held: HashMap<&str, usize> = HashMap::new();
                for r in self.map.values() {
                    *held.entry(r.owner.as_str()).or_default() += 1;
                }
                let most = held.values().copied().max().unwrap_or(0);
                let top: Vec<String> = held
                    .iter()
                    .filter(|(_, &n)| n == most)
                    .map(|(o, _)| o.to_string())
                    .collect();
                self.oldest(|r| top.contains(&r.owner))
            } else {
                None
            };
            let Some(old) = victim else { break };
            self.remove(&old);
            freed.push(old);
        }
        self.bytes += value.bytes();
        self.seq += 1;
        let stored = Stored {
            seq: self.seq,
            id: id.clone(),
            owner: key,
            tool: tool.to_string(),
            value: Rc::new(value),
            created_ms: now,
            expires_ms: now.saturating_add(self.ttl_ms),
        };
        self.note_expiry(&stored);
        self.map.insert(id, stored);
        freed
    }

    fn oldest(&self, pick: impl Fn(&Stored) -> bool) -> Option<String> {
        self.map
            .values()
            .filter(|r| pick(r))
            .min_by_key(|r| r.seq)
            .map(|r| r.id.clone())
    }

    fn remove(&mut self, id: &str) {
        if let Some(r) = self.map.remove(id) {
            self.bytes -= r.value.bytes();
        }
    }

    /// Puts back a result read from storage ([`from_stored`]) unless it
    /// expired or a cap is reached; returns whether it was kept.
    pub fn restore(&mut self, head: StoredHead, value: Paged, now: u64) -> bool {
        let full = self.map.len() >= self.cap || self.bytes + value.bytes() > self.max_bytes;
        let own = self.map.values().filter(|r| r.owner == head.owner).count();
        let over = self.bytes_of(&head.owner) + value.bytes() > self.owner_bytes;
        if head.expires_ms <= now || full || over || own >= self.per_owner || !valid_id(&head.id) {
            return false;
        }
        self.bytes += value.bytes();
        self.seq += 1;
        let stored = Stored {
            seq: self.seq,
            id: head.id.clone(),
            owner: head.owner,
            tool: head.tool,
            value: Rc::new(value),
            created_ms: head.created_ms,
            expires_ms: head.expires_ms,
        };
        self.note_expiry(&stored);
        self.map.insert(head.id, stored);
        true
    }

    /// A result by id, whoever owns it (for storage).
    pub fn by_id(&self, id: &str) -> Option<&Stored> {
        self.map.get(id)
    }

    /// The result, if `owner` made it and it has not expired.
    pub fn get(&self, id: &str, owner: &str, now: u64) -> Option<&Stored> {
        self.map
            .get(id)
            .filter(|r| r.owner == owner && r.expires_ms > now)
    }

    /// `owner`'s live results, oldest first.
    pub fn of_owner(&self, owner: &str, now: u64) -> Vec<&Stored> {
        let all: Vec<&Stored> = self
            .map
            .values()
            .filter(|r| r.owner == owner && r.expires_ms > now)
            .collect();
        crate::format::order::order_by(&all, |r| r.seq)
            .into_iter()
            .map(|i| all[i])
            .collect()
    }

    /// Frees the results whose time is up; returns their ids.
    pub fn expire(&mut self, now: u64) -> Vec<String> {
        let map = &self.map;
        let gone = self
            .expiries
            .due(now, |id| map.get(id).map(|r| r.expires_ms));
        for id in &gone {
            self.remove(id);
        }
        gone
    }

    /// The earliest expiry of any result.
    pub fn next_expiry(&mut self) -> Option<u64> {
        let map = &self.map;
        self.expiries.next(|id| map.get(id).map(|r| r.expires_ms))
    }

    /// Notes when `stored` (about to join the table) expires.
    fn note_expiry(&mut self, stored: &Stored) {
        let map = &self.map;
        let all = || {
            map.values()
                .map(|r| (r.expires_ms, r.id.as_str()))
                .collect()
        };
        let live = map.len() + 1;
        self.expiries.set(&stored.id, stored.expires_ms, live, all);
    }
}

/// Expiry times by id, earliest first (the stored results' and the
/// tasks'): the next expiry and the ids due are found without looking at
/// every entry, so the reactor's turns do not grow with the tables. An id
/// given a time again is pushed anew; an entry whose id is gone, or now
/// expires at another time, is dropped when it reaches the front, and the
/// heap is rebuilt from the table once such entries outnumber the live ones.
#[derive(Debug, Default)]
pub struct Expiries {
    heap: BinaryHeap<Reverse<(u64, String)>>,
}

impl Expiries {
    /// Notes that `id` expires at `at`; `live` is how many entries the
    /// table holds, and `all` its expiries, for a rebuild.
    pub fn set<'a>(
        &mut self,
        id: &str,
        at: u64,
        live: usize,
        all: impl FnOnce() -> Vec<(u64, &'a str)>,
    ) {
        if self.heap.len() > 2 * live + 64 {
            self.heap = all()
                .into_iter()
                .map(|(at, id)| Reverse((at, id.to_string())))
                .collect();
        }
        self.heap.push(Reverse((at, id.to_string())));
    }

    /// The earliest expiry of an id that `expires` (an id's current time,
    /// `None` once gone) still gives.
    pub fn next(&mut self, expires: impl Fn(&str) -> Option<u64>) -> Option<u64> {
        while let Some(Reverse((at, id))) = self.heap.peek() {
            if expires(id) == Some(*at) {
                return Some(*at);
            }
            self.heap.pop();
        }
        None
    }

    /// Takes out the ids due at `now` (each once), earliest first.
    pub fn due(&mut self, now: u64, expires: impl Fn(&str) -> Option<u64>) -> Vec<String> {
        let mut due: Vec<String> = Vec::new();
        while self.heap.peek().is_some_and(|Reverse((at, _))| *at <= now) {
            let Some(Reverse((at, id))) = self.heap.pop() else {
                break;
            };
            if expires(&id) == Some(at) && due.last() != Some(&id) {
                due.push(id);
            }
        }
        due
    }
}

/// What a stored result's file says before its value: everything but the
/// value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredHead {
    pub id: String,
    /// The owner, whole.
    pub owner: String,
    pub tool: String,
    pub created_ms: u64,
    pub expires_ms: u64,
}

/// The first line of a stored result's file (`--task-dir`): its head as
/// one JSON object and a newline; the value's JSON text follows as it is.
pub fn stored_head(stored: &Stored) -> String {
    let head = serde_json::json!({
        "resultId": stored.id,
        "owner": stored.owner,
        "tool": stored.tool,
        "createdMs": stored.created_ms,
        "expiresMs": stored.expires_ms,
    });
    let mut text = crate::format::json::text(&head);
    text.push('\n');
    text
}

/// Reads a stored result's file back (see [`stored_head`]), taking its
/// bytes (the value is not copied); the error names what is wrong.
pub fn from_stored(mut bytes: Vec<u8>) -> Result<(StoredHead, String), String> {
    let end = bytes
        .iter()
        .position(|&b| b == b'\n')
        .ok_or("no head line")?;
    let head: Json = crate::format::json::parse_bytes(&bytes[..end])
        .map_err(|e| format!("head is not JSON: {e}"))?;
    let text = |key: &str| match head.get(key) {
        Some(Json::String(s)) => Ok(s.clone()),
        _ => Err(format!("head needs '{key}' as a string")),
    };
    let ms = |key: &str| {
        head.get(key)
            .and_then(Json::as_u64)
            .ok_or_else(|| format!("head needs '{key}' as a non-negative integer"))
    };
    let parsed = StoredHead {
        id: text("resultId")?,
        owner: text("owner")?,
        tool: text("tool")?,
        created_ms: ms("createdMs")?,
        expires_ms: ms("expiresMs")?,
    };
    if !valid_id(&parsed.id) {
        return Err(format!("'{}' is not a result id", parsed.id));
    }
    bytes.drain(..=end);
    let value = String::from_utf8(bytes).map_err(|e| format!("the value is not UTF-8: {e}"))?;
    Ok((parsed, value))
}

/// The text of a successful result whose value is its only text block and
/// longer than `limit` characters: taken out of `result` (moved, not
/// copied). `None` leaves `result` as it was.
pub fn take_big_text(result: &mut Json, limit: usize) -> Option<String> {
    if result.get("isError") == Some(&Json::Bool(true)) {
        return None;
    }
    let blocks = result.get_mut("content")?.as_array_mut()?;
    let [block] = blocks.as_mut_slice() else {
        return None;
    };
    if block.get("type").and_then(Json::as_str) != Some("text") {
        return None;
    }
    let Some(Json::String(text)) = block.get_mut("text") else {
        return None;
    };
    // Bytes bound characters from above: count only when it may matter.
    if text.len() <= limit || text.chars().count() <= limit {
        return None;
    }
    Some(std::mem::take(text))
}

/// The link object of a stored result (`structuredContent`).
pub fn link_object(id: &str, value: &Paged) -> Json {
    let mut link = Map::new();
    link.insert("uri".into(), Json::String(uri_of(id)));
    link.insert("type".into(), Json::String(value.kind().name().into()));
    link.insert("count".into(), Json::from(value.count()));
    link.insert("units".into(), Json::String(value.kind().units().into()));
    link.insert("bytes".into(), Json::from(value.bytes()));
    link.insert(
        "pages".into(),
        Json::String(format!("{}{{?offset,limit}}", uri_of(id))),
    );
    let mut out = Map::new();
    out.insert(LINK_KEY.into(), Json::Object(link));
    Json::Object(out)
}

/// The JSON Schema of [`link_object`].
pub fn link_schema() -> Json {
    let string = || serde_json::json!({"type": "string"});
    let count = || serde_json::json!({"type": "integer", "minimum": 0});
    serde_json::json!({
        "type": "object",
        "properties": {
            LINK_KEY: {
                "type": "object",
                "properties": {
                    "uri": string(),
                    "type": {"enum": ["list", "string", "record", "value"]},
                    "count": count(),
                    "units": string(),
                    "bytes": count(),
                    "pages": string(),
                },
                "required": ["uri", "type", "count", "units", "bytes", "pages"],
            }
        },
        "required": [LINK_KEY],
        "additionalProperties": false,
    })
}

/// The call result standing for a stored value: a text block with the
/// preview and its shape, a `resource_link` to the value, and the link
/// object as `structuredContent`. `limit` is `--max-result-chars`.
pub fn link_result(id: &str, tool: &str, value: &Paged, limit: usize) -> Json {
    let uri = uri_of(id);
    let kind = value.kind();
    let budget = (limit / 2).clamp(2, MAX_PREVIEW);
    let (preview, shown) = value.preview(budget).unwrap_or_default();
    let mut text = String::new();
    if !preview.is_empty() {
        text.push_str(&preview);
        text.push('\n');
    }
    let (page, example) = match kind {
        Kind::List => (
            "pages are JSON arrays of elements",
            DEFAULT_LIST_PAGE.min(value.count().max(1)),
        ),
        Kind::Str => ("pages are the string's characters", DEFAULT_CHAR_PAGE),
        _ => ("pages are characters of its JSON text", DEFAULT_CHAR_PAGE),
    };
    let what = match kind {
        Kind::List if !preview.is_empty() => {
            format!(" Above: the beginning ({shown} elements in full), cut at an element.")
        }
        Kind::Str if !preview.is_empty() => {
            format!(" Above: the first {shown} characters.")
        }
        _ if !preview.is_empty() => " Above: the beginning, cut at a value.".to_string(),
        _ => String::new(),
    };
    text.push_str(&format!(
        "[result too long to show: a {} of {} {}, {} bytes of JSON.{what} The whole value is the resource {uri}; read it in pages with resources/read at {uri}?offset=0&limit={example} ({page}; offset and limit count {}).]",
        kind.name(),
        value.count(),
        kind.units(),
        value.bytes(),
        kind.units(),
    ));
    let mut block = Map::new();
    block.insert("type".into(), Json::String("text".into()));
    block.insert("text".into(), Json::String(text));
    let mut link = Map::new();
    link.insert("type".into(), Json::String("resource_link".into()));
    link.insert("uri".into(), Json::String(uri));
    link.insert("name".into(), Json::String(format!("{tool} result {id}")));
    link.insert(
        "description".into(),
        Json::String(format!(
            "the whole result of {tool} ({} {}); page with ?offset=&limit=",
            value.count(),
            kind.units()
        )),
    );
    link.insert("mimeType".into(), Json::String("application/json".into()));
    link.insert("size".into(), Json::from(value.bytes()));
    let mut result = Map::new();
    result.insert(
        "content".into(),
        Json::Array(vec![Json::Object(block), Json::Object(link)]),
    );
    result.insert("structuredContent".into(), link_object(id, value));
    result.insert("isError".into(), Json::Bool(false));
    Json::Object(result)
}

/// The `outputSchema` of a tool whose result may be a link: `anyOf` the
/// value's own schema and the link object's, with `$schema` and `$defs`
/// kept at the root (so `$ref`s still resolve) and `type: object` kept
/// when the value's schema has it. No schema stays none.
pub fn wrap_output_schema(base: Option<Json>) -> Option<Json> {
    match base? {
        schema @ Json::Object(_) => Some(tools::accept_also(schema, link_schema())),
        _ => None,
    }
}

/// A tool object with its `outputSchema` (if any) wrapped by
/// [`wrap_output_schema`], when big results are on (`limit`).
pub fn wrap_tool(tool: Json, limit: Option<usize>) -> Json {
    let (Some(_), Json::Object(mut map)) = (limit, tool.clone()) else {
        return tool;
    };
    let Some(schema) = map.get_mut("outputSchema") else {
        return tool;
    };
    let base = std::mem::take(schema);
    *schema = wrap_output_schema(Some(base)).unwrap_or(Json::Null);
    Json::Object(map)
}

/// Which `resources/*` method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceMethod {
    List,
    Templates,
    Read,
}

/// A `resources/*` request the reactor answers from its result table.
#[derive(Clone, Debug)]
pub struct ResourceRequest {
    pub id: RequestId,
    pub method: ResourceMethod,
    /// `params.uri` of a read.
    pub uri: String,
    /// A modern request (its answer is completed by the caller).
    pub modern: bool,
}

/// Reads a `resources/*` request; a read without a string `uri` is an
/// error reply.
pub fn resource_request(
    id: RequestId,
    method: &str,
    params: Option<&Json>,
    modern: bool,
) -> Result<ResourceRequest, Json> {
    let method = match method {
        "resources/list" => ResourceMethod::List,
        "resources/templates/list" => ResourceMethod::Templates,
        _ => ResourceMethod::Read,
    };
    let uri = match (method, params.and_then(|p| p.get("uri"))) {
        (ResourceMethod::Read, Some(Json::String(u))) => u.clone(),
        (ResourceMethod::Read, other) => {
            let got = other.map_or("nothing".to_string(), crate::format::json::text);
            return Err(jsonrpc::error_response(
                Some(&id),
                ErrorCode::InvalidParams,
                &format!("resources/read needs 'params.uri' as a string, got {got}"),
            ));
        }
        _ => String::new(),
    };
    Ok(ResourceRequest {
        id,
        method,
        uri,
        modern,
    })
}

/// `resources/templates/list`: the one template of result pages.
pub fn templates_result() -> Json {
    serde_json::json!({
        "resourceTemplates": [{
            "uriTemplate": TEMPLATE,
            "name": "result-page",
            "title": "A page of a stored tool result",
            "description": "A tool result too long to return whole, by the id in its link. Without a query: the whole value. A list pages by elements (offset, limit; a page is a JSON array), a string by characters (a page is those characters), anything else by characters of its JSON text.",
            "mimeType": "application/json",
        }]
    })
}

/// `resources/list`: the caller's stored results.
pub fn list_result(results: &[&Stored]) -> Json {
    let resources: Vec<Json> = results
        .iter()
        .map(|r| {
            serde_json::json!({
                "uri": uri_of(&r.id),
                "name": format!("{} result {}", r.tool, r.id),
                "mimeType": "application/json",
                "size": r.value.bytes(),
            })
        })
        .collect();
    serde_json::json!({ "resources": resources })
}

/// What stands for a value's text (or page) in a `resources/read` answer to be
/// streamed (see [`read_result`]); a URI cannot hold it (no control
/// characters), and a JSON string's quotes are escaped, so its serialized
/// form, key included ([`STREAMED_TEXT`]), occurs once in the message.
pub const TEXT_PLACEHOLDER: &str = "\u{0}value\u{0}";

/// The serialized `"text"` member holding [`TEXT_PLACEHOLDER`].
pub const STREAMED_TEXT: &[u8] = b"\"text\":\"\\u0000value\\u0000\"";

/// `resources/read` of a stored result: the whole value, or the page the
/// URI asks for, with where the next page starts in `_meta`. With
/// `stream`, the text is [`TEXT_PLACEHOLDER`], for the caller to write from
/// the store as the reader takes it ([`read_span`] says where it lies; its
/// escaped bytes are what [`crate::format::json::write_str_body`] gives),
/// not copied into the message.
pub fn read_result(uri: &str, asked: &ResultUri, value: &Paged, stream: bool) -> Json {
    let kind = value.kind();
    let mut content = Map::new();
    content.insert("uri".into(), Json::String(uri.into()));
    if !asked.is_page() {
        content.insert("mimeType".into(), Json::String("application/json".into()));
        let text = match stream {
            true => TEXT_PLACEHOLDER.to_string(),
            false => value.text().to_string(),
        };
        content.insert("text".into(), Json::String(text));
        return serde_json::json!({ "contents": [content] });
    }
    let (offset, limit) = page_of(asked, kind);
    let mime = match kind {
        Kind::List => "application/json",
        _ => "text/plain",
    };
    content.insert("mimeType".into(), Json::String(mime.into()));
    let text = match stream {
        true => TEXT_PLACEHOLDER.to_string(),
        false => value.page(offset, limit),
    };
    content.insert("text".into(), Json::String(text));
    let end = offset.saturating_add(limit).min(value.count());
    let mut meta = Map::new();
    meta.insert("offset".into(), Json::from(offset.min(end)));
    meta.insert("count".into(), Json::from(end - offset.min(end)));
    meta.insert("total".into(), Json::from(value.count()));
    meta.insert("units".into(), Json::String(kind.units().into()));
    if end < value.count() {
        let base = uri.split_once('?').map_or(uri, |(b, _)| b);
        meta.insert(
            "next".into(),
            Json::String(format!("{base}?offset={end}&limit={limit}")),
        );
    }
    content.insert("_meta".into(), Json::Object(meta));
    serde_json::json!({ "contents": [content] })
}

/// The page a URI asks for: its offset and limit, defaults filled in.
fn page_of(asked: &ResultUri, kind: Kind) -> (usize, usize) {
    let default = match kind {
        Kind::List => DEFAULT_LIST_PAGE,
        _ => DEFAULT_CHAR_PAGE,
    };
    (asked.offset.unwrap_or(0), asked.limit.unwrap_or(default))
}

/// Where the text [`read_result`] gives for `asked` lies in the value's
/// text: all of it, or the page's span.
pub fn read_span(asked: &ResultUri, value: &Paged) -> Span {
    if !asked.is_page() {
        return Span {
            open: "",
            range: 0..value.bytes(),
            close: "",
            decoded: false,
        };
    }
    let (offset, limit) = page_of(asked, value.kind());
    value.span(offset, limit)
}

/// The caching hints a modern (2026-07-28) `resources/*` result carries:
/// the template list is the same for everyone for a while; the list and
/// the pages are the caller's own, and not worth keeping (a page is read
/// once, and a walk through a big value should not pile up in a cache).
pub fn cache_hints(method: ResourceMethod, result: &mut Json) {
    let Json::Object(map) = result else {
        return;
    };
    match method {
        ResourceMethod::Templates => super::identity::cacheable(map, super::identity::CACHE_TTL_MS),
        ResourceMethod::List | ResourceMethod::Read => {
            map.insert("ttlMs".into(), Json::from(0));
            map.insert("cacheScope".into(), Json::String("private".into()));
        }
    }
}

/// The error for a URI that names no result this caller may read.
pub fn not_found(id: &RequestId, uri: &str, why: &str) -> Json {
    let mut data = Map::new();
    data.insert("uri".into(), Json::String(uri.into()));
    jsonrpc::error_response_data(
        Some(id),
        ErrorCode::InvalidParams,
        &format!("resource not found: '{uri}': {why}"),
        Json::Object(data),
    )
}

/// Why a well-formed result URI finds nothing here.
pub const NOT_HELD: &str = "no such result here (it expired, was freed at the cap, was made by another server instance, or belongs to another owner)";
