//! JSON-RPC 2.0 messages and the newline-delimited framing of the MCP stdio
//! transport.
//!
//! MCP over stdio is one compact JSON value per line. [`LineFramer`] splits a
//! byte stream into lines with a size cap, [`decode`] classifies one line (or
//! one HTTP body) into a request, a notification, a client response, or a
//! protocol error that must be answered, and the `*_response` helpers build the
//! outgoing envelopes. Differences from the reference are deliberate and listed
//! in docs/differences.md: batches and invalid ids get `-32600` instead of silence or an
//! echo, invalid UTF-8 is rejected instead of replaced, client responses are
//! ignored instead of answered.
//!
//! Architecture Invariant: pure; no I/O.

use std::fmt;

use serde_json::{Map, Value};

use crate::format::json::check::Checked;
use crate::format::json::scan;

/// The longest line accepted, not counting its LF (the reference's cap).
pub const MAX_LINE: usize = 64 * 1024 * 1024;

/// JSON-RPC error codes used by the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCode {
    ParseError = -32700,
    InvalidRequest = -32600,
    MethodNotFound = -32601,
    InvalidParams = -32602,
    InternalError = -32603,
    /// MCP 2026-07-28: HTTP headers disagree with the body, or a required
    /// header is missing.
    HeaderMismatch = -32020,
    /// MCP 2026-07-28: the request needs a client capability it did not declare.
    MissingRequiredClientCapability = -32021,
    /// MCP 2026-07-28: the request's protocol version is not served.
    UnsupportedProtocolVersion = -32022,
}

/// A request id: MCP allows only strings and integers. The integer keeps its
/// literal text so ids beyond 64 bits are echoed exactly.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RequestId {
    Int(String),
    Str(String),
}

impl RequestId {
    pub fn from_json(v: &Value) -> Option<RequestId> {
        match v {
            Value::String(s) => Some(RequestId::Str(s.clone())),
            Value::Number(n) => {
                let text = n.to_string();
                let digits = text.strip_prefix('-').unwrap_or(&text);
                (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
                    .then_some(RequestId::Int(text))
            }
            _ => None,
        }
    }

    pub fn to_json(&self) -> Value {
        match self {
            RequestId::Str(s) => Value::String(s.clone()),
            // With `arbitrary_precision`, a number parses from its literal text.
            RequestId::Int(text) => serde_json::from_str(text).unwrap_or(Value::Null),
        }
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Int(n) => f.write_str(n),
            RequestId::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// One decoded inbound message.
#[derive(Clone, Debug, PartialEq)]
pub enum Incoming {
    Request {
        id: RequestId,
        method: String,
        params: Option<Value>,
    },
    Notification {
        method: String,
        params: Option<Value>,
    },
    /// A response sent by the client (to a server request); ignored.
    Response,
    /// Blank line: nothing to do.
    Empty,
    /// The line deserves an error reply (already fully formed).
    Invalid(Value),
}

/// Classifies one line or HTTP body.
pub fn decode(bytes: &[u8]) -> Incoming {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Incoming::Invalid(error_response(
            None,
            ErrorCode::ParseError,
            "invalid JSON: message is not valid UTF-8",
        ));
    };
    let text = text.trim_matches(|c: char| c.is_whitespace());
    if text.is_empty() {
        return Incoming::Empty;
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        // serde_json stops at 128 levels of nesting; say so rather than
        // call valid JSON invalid.
        Err(e) if e.to_string().starts_with("recursion limit exceeded") => {
            return Incoming::Invalid(error_response(
                None,
                ErrorCode::ParseError,
                "invalid JSON: nested more than 128 levels deep",
            ))
        }
        Err(_) => {
            return Incoming::Invalid(error_response(None, ErrorCode::ParseError, "invalid JSON"))
        }
    };
    classify(value)
}

/// [`decode`] that leaves a request's `params.arguments` object as text: the
/// message is parsed with that member set to `null`, and its JSON text (a
/// slice of `bytes`, already checked to be valid JSON) is returned beside it
/// for [`crate::protocol::args::resolve_text`]. The outcome is otherwise the
/// one [`decode`] gives (same replies for invalid input), but a large argument
/// never becomes a `Value` tree. Without an `arguments` object, or when the
/// message is not a request, it is [`decode`].
pub fn decode_lazy(bytes: &[u8]) -> (Incoming, Option<&str>) {
    decode_call(bytes).into_message()
}

/// What [`decode_call`] makes of a line.
// Made once per line and moved once to its handler: boxing the call would
// cost an allocation per call for no gain.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum Decoded<'a> {
    /// A plain `tools/call`, read in place ([`CallLine`]).
    Call(CallLine<'a>),
    /// Anything else: what [`decode_lazy`] gives.
    Message(Incoming, Option<&'a str>),
}

/// A plain `tools/call` request, read in the one walk that checks its
/// line: `method` is `"tools/call"`, the id one MCP allows, and `params`
/// holds an `arguments` object and at most a `name` string without escapes
/// and a `_meta` object of at most six members besides, each once; no
/// key of the message, of `params` or of `_meta` holds an escape. Nothing
/// of it is parsed into a tree.
#[derive(Clone, Debug, PartialEq)]
pub struct CallLine<'a> {
    pub id: RequestId,
    /// `params.name`, if given.
    pub name: Option<&'a str>,
    /// The text of `params.arguments` (an object).
    pub arguments: &'a str,
    /// Each member of `arguments`: its key's position and its value's span
    /// in `arguments`, in order.
    pub members: Vec<(usize, std::ops::Range<usize>)>,
    /// The message's text.
    text: &'a str,
    /// The members of `params`, in order.
    params: Spans,
    /// The members of `params._meta`, if given.
    meta: Option<Spans>,
}

impl<'a> Decoded<'a> {
    /// The message [`decode_lazy`] gives, and its arguments' text.
    pub fn into_message(self) -> (Incoming, Option<&'a str>) {
        match self {
            Decoded::Call(call) => {
                let (msg, arguments) = call.into_message();
                (msg, Some(arguments))
            }
            Decoded::Message(msg, arguments) => (msg, arguments),
        }
    }
}

impl<'a> CallLine<'a> {
    /// The message [`decode_lazy`] gives for the line, and its arguments'
    /// text.
    pub fn into_message(self) -> (Incoming, &'a str) {
        let params = params_in_place(self.text, self.params.as_slice());
        let msg = Incoming::Request {
            id: self.id,
            method: "tools/call".into(),
            params: params.map(Value::Object),
        };
        (msg, self.arguments)
    }

    /// The members of `params._meta` (when it is given): each key (without
    /// escapes) and its value's JSON text, in order.
    pub fn meta(&self) -> Option<impl Iterator<Item = (&'a str, &'a str)> + '_> {
        let text = self.text;
        let members = self.meta.as_ref()?.as_slice().iter();
        // A plain key's closing quote is the last quote before its value.
        Some(members.map(move |&(key, value, end)| {
            let bytes = text.as_bytes();
            let mut after = value;
            while after > key + 1 && bytes[after - 1] != b'"' {
                after -= 1;
            }
            (&text[key + 1..after - 1], &text[value..end])
        }))
    }
}

/// [`decode_lazy`], with a plain `tools/call` left as its parts
/// ([`Decoded::Call`]). The line is read once (checked and its parts
/// found in one walk); anything unusual (escaped or repeated keys where
/// the parts are) takes the longer way, with the same outcome.
pub fn decode_call(bytes: &[u8]) -> Decoded<'_> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Decoded::Message(decode(bytes), None);
    };
    let text = text.trim_matches(|c: char| c.is_whitespace());
    let raw = text.as_bytes();
    let walk = match Walk::read(raw) {
        Ok(walk) => walk,
        // The parse gives the reply serde_json's error would give, as the
        // walk's verdict agrees with it.
        Err(_) => return Decoded::Message(decode(bytes), None),
    };
    if walk.unusual {
        let Some(parts) = Parts::find(raw, None) else {
            return Decoded::Message(decode(bytes), None);
        };
        let (msg, arguments) = split_arguments(bytes, text, &parts, None);
        return Decoded::Message(msg, arguments);
    }
    let Some(span) = walk.arguments.clone() else {
        return Decoded::Message(decode(bytes), None);
    };
    let arguments = &text[span];
    if let Some(call) = walk.call(text, arguments) {
        return Decoded::Call(call);
    }
    match walk.request(text) {
        Some(msg) => Decoded::Message(msg, Some(arguments)),
        // Not a request MCP allows: the parse, for its exact reply.
        None => {
            let parts = Parts::find(raw, None);
            match parts {
                Some(parts) => {
                    let (msg, arguments) = split_arguments(bytes, text, &parts, None);
                    Decoded::Message(msg, arguments)
                }
                None => Decoded::Message(decode(bytes), None),
            }
        }
    }
}

/// The most members of `params` (more make a [`Walk`] unusual) and of
/// `params._meta` (more make a call not plain) the walk notes.
const WALK_MEMBERS: usize = 6;

/// Up to [`WALK_MEMBERS`] members of an object: each key's position, its
/// value's start and end.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Spans {
    at: [(usize, usize, usize); WALK_MEMBERS],
    n: usize,
}

impl Spans {
    /// Notes a member; false when there is no room (it is counted).
    fn push(&mut self, member: (usize, usize, usize)) -> bool {
        let room = self.n < WALK_MEMBERS;
        if room {
            self.at[self.n] = member;
        }
        self.n += 1;
        room
    }

    fn as_slice(&self) -> &[(usize, usize, usize)] {
        &self.at[..self.n.min(WALK_MEMBERS)]
    }

    fn full(&self) -> bool {
        self.n > WALK_MEMBERS
    }
}

/// Where a (valid) message's parts are, noted while it is checked
/// ([`scan::Walker`]): its `id`, `method` and `params` values, the
/// members of `params`, the `params.arguments` object and each of its
/// members, the members of `params._meta`. `unusual` when a key at the
/// top level or in `params` holds an escape, one of `id`, `method`,
/// `params` or `params.arguments` comes twice, or `params` has more than
/// [`WALK_MEMBERS`] members: [`Parts`] then reads the message.
#[derive(Default)]
struct Walk {
    id: Option<usize>,
    method: Option<usize>,
    params: Option<usize>,
    members: Spans,
    arguments: Option<std::ops::Range<usize>>,
    /// The members of `arguments`, positions in the message.
    argument_members: Vec<(usize, std::ops::Range<usize>)>,
    /// The members of the first `_meta` object in `params`, and whether
    /// all their keys are plain.
    meta: Option<Spans>,
    meta_plain: bool,
    unusual: bool,
}

impl Walk {
    /// Checks `text` as [`scan::validate`] does (the same verdict) and notes
    /// where its parts are.
    fn read(text: &[u8]) -> Result<Walk, scan::ScanError> {
        let mut walk = Walk::default();
        let mut w = scan::Walker::new(text);
        if w.peek() != Some(b'{') {
            w.value()?;
            w.finish()?;
            walk.unusual = true;
            return Ok(walk);
        }
        if w.enter_object()? {
            loop {
                let (key, key_end, plain) = w.key()?;
                w.peek();
                let value = w.pos();
                let name = &text[key + 1..key_end - 1];
                let slot = match name {
                    _ if !plain => {
                        walk.unusual = true;
                        None
                    }
                    b"id" => Some(&mut walk.id),
                    b"method" => Some(&mut walk.method),
                    b"params" => Some(&mut walk.params),
                    _ => None,
                };
                if let Some(slot) = slot {
                    walk.unusual |= slot.replace(value).is_some();
                }
                let params = plain && name == b"params";
                if params && !walk.unusual && text.get(value) == Some(&b'{') {
                    walk.read_params(&mut w, text)?;
                } else {
                    w.value()?;
                }
                if !w.next_member()? {
                    break;
                }
            }
        }
        w.finish()?;
        Ok(walk)
    }

    /// Walks the `params` object at the walker.
    fn read_params(&mut self, w: &mut scan::Walker, text: &[u8]) -> Result<(), scan::ScanError> {
        if !w.enter_object()? {
            return Ok(());
        }
        loop {
            let (key, key_end, plain) = w.key()?;
            w.peek();
            let value = w.pos();
            let name = &text[key + 1..key_end - 1];
            let arguments = plain && name == b"arguments";
            if arguments && self.arguments.is_some() {
                self.unusual = true;
            }
            let object = text.get(value) == Some(&b'{');
            if arguments && !self.unusual && object {
                self.read_arguments(w)?;
                self.arguments = Some(value..w.pos());
            } else if plain && name == b"_meta" && object && self.meta.is_none() {
                self.read_meta(w)?;
            } else {
                if arguments {
                    // Not an object: noted as seen (a second one is unusual).
                    self.arguments = Some(value..value);
                }
                w.value()?;
            }
            self.unusual |= !plain || !self.members.push((key, value, w.pos()));
            if !w.next_member()? {
                break;
            }
        }
        // An `arguments` that is not an object makes no span.
        if self.arguments.as_ref().is_some_and(|span| span.is_empty()) {
            self.arguments = None;
        }
        Ok(())
    }

    /// Walks the `arguments` object at the walker, noting its members.
    fn read_arguments(&mut self, w: &mut scan::Walker) -> Result<(), scan::ScanError> {
        if !w.enter_object()? {
            return Ok(());
        }
        loop {
            let (key, _, _) = w.key()?;
            w.peek();
            let value = w.pos();
            w.value()?;
            self.argument_members.push((key, value..w.pos()));
            if !w.next_member()? {
                return Ok(());
            }
        }
    }

    /// Walks the `_meta` object at the walker, noting its members.
    fn read_meta(&mut self, w: &mut scan::Walker) -> Result<(), scan::ScanError> {
        let mut meta = Spans::default();
        self.meta_plain = true;
        if w.enter_object()? {
            loop {
                let (key, _, plain) = w.key()?;
                w.peek();
                let value = w.pos();
                w.value()?;
                self.meta_plain &= plain;
                meta.push((key, value, w.pos()));
                if !w.next_member()? {
                    break;
                }
            }
        }
        self.meta = Some(meta);
        Ok(())
    }

    /// The plain `tools/call` of a usual walk with an `arguments` object,
    /// if it is one.
    fn call<'a>(&self, text: &'a str, arguments: &'a str) -> Option<CallLine<'a>> {
        let raw = text.as_bytes();
        let method = self.method.filter(|&at| raw.get(at) == Some(&b'"'))?;
        if scan::plain_str(raw, method)? != b"tools/call" {
            return None;
        }
        let (mut name, mut meta) = (None, None);
        for &(key, value, _) in self.members.as_slice() {
            match &raw[key + 1..] {
                k if k.starts_with(b"arguments\"") => {}
                k if k.starts_with(b"name\"") && name.is_none() => {
                    if raw.get(value) != Some(&b'"') {
                        return None;
                    }
                    let plain = scan::plain_str(raw, value)?;
                    name = Some(text.get(value + 1..value + 1 + plain.len())?);
                }
                k if k.starts_with(b"_meta\"") && meta.is_none() => {
                    // The first `_meta` is the one noted: it must be the
                    // only one, an object of plain keys, all noted.
                    let noted = self.meta.filter(|m| !m.full() && self.meta_plain)?;
                    if raw.get(value) != Some(&b'{') {
                        return None;
                    }
                    meta = Some(noted);
                }
                _ => return None,
            }
        }
        let id = id_in_place(text, self.id?)?;
        let start = self.arguments.as_ref()?.start;
        let members = self
            .argument_members
            .iter()
            .map(|(key, value)| (key - start, value.start - start..value.end - start))
            .collect();
        Some(CallLine {
            id,
            name,
            arguments,
            members,
            text,
            params: self.members,
            meta,
        })
    }

    /// The request a usual walk with an `arguments` object reads, as
    /// [`request_in_place`] reads it from [`Parts`].
    fn request(&self, text: &str) -> Option<Incoming> {
        let raw = text.as_bytes();
        let method = self.method.filter(|&at| raw.get(at) == Some(&b'"'))?;
        let id = id_in_place(text, self.id?)?;
        let params = params_in_place(text, self.members.as_slice())?;
        Some(Incoming::Request {
            id,
            method: scan::decode_string(raw, method),
            params: Some(Value::Object(params)),
        })
    }
}

/// The `params` of a (valid) message `text` with these members (key,
/// value, value's end), built member by member with every `arguments`
/// value `null`, as parsing gives them (the last of duplicate keys in the
/// first one's place).
fn params_in_place(text: &str, members: &[(usize, usize, usize)]) -> Option<Map<String, Value>> {
    let raw = text.as_bytes();
    let mut map = Map::with_capacity(members.len());
    for &(key, value, end) in members {
        let key = scan::decode_string(raw, key);
        let item = match raw.get(value) {
            _ if key == "arguments" => Value::Null,
            Some(b'"') => Value::String(scan::decode_string(raw, value)),
            _ => serde_json::from_str(text.get(value..end)?).ok()?,
        };
        map.insert(key, item);
    }
    Some(map)
}

/// The reply to a body that is not JSON, as serde_json's error would give.
fn invalid_json(e: scan::ScanError) -> Value {
    let message = match e {
        scan::ScanError::TooDeep => "invalid JSON: nested more than 128 levels deep",
        scan::ScanError::Syntax => "invalid JSON",
    };
    error_response(None, ErrorCode::ParseError, message)
}

/// [`decode_lazy`] for a body already checked in slices
/// ([`crate::format::json::check::Checker`]): `checked` is its verdict,
/// `span` where the trimmed text is, `ends` its container table. The
/// outcome is [`decode_lazy`]'s, without reading the body again.
pub fn decode_checked<'a>(
    body: &'a [u8],
    checked: &Checked,
    span: std::ops::Range<usize>,
    ends: &scan::Ends,
) -> (Incoming, Option<&'a str>) {
    match checked {
        Checked::Valid => {}
        Checked::Invalid(e) => return (Incoming::Invalid(invalid_json(*e)), None),
        Checked::NotUtf8 | Checked::Empty => return (decode(body), None),
    }
    let Ok(text) = std::str::from_utf8(&body[span]) else {
        return (decode(body), None);
    };
    let Some(parts) = Parts::find(text.as_bytes(), Some(ends)) else {
        return (decode(body), None);
    };
    split_arguments(body, text, &parts, Some(ends))
}

/// Parses the (valid) message `text` (the trimmed `bytes`) without its
/// `params.arguments` values, and gives back the counting one as text. A
/// request is read in place ([`request_in_place`]); anything else is
/// parsed.
fn split_arguments<'a>(
    bytes: &[u8],
    text: &'a str,
    parts: &Parts,
    ends: Option<&scan::Ends>,
) -> (Incoming, Option<&'a str>) {
    let arguments = Some(&text[parts.arguments.clone()]);
    if let Some(msg) = request_in_place(text, parts, ends) {
        return (msg, arguments);
    }
    let spans = &parts.spans;
    let mut stripped = String::with_capacity(
        text.len() - spans.iter().map(|s| s.len()).sum::<usize>() + 4 * spans.len(),
    );
    let mut at = 0;
    for span in spans {
        stripped.push_str(&text[at..span.start]);
        stripped.push_str("null");
        at = span.end;
    }
    stripped.push_str(&text[at..]);
    match serde_json::from_str::<Value>(&stripped).map(classify) {
        Ok(msg @ Incoming::Request { .. }) => (msg, arguments),
        // Only requests carry arguments anyone reads.
        _ => (decode(bytes), None),
    }
}

/// The request the (valid) message `text` with these `parts` makes, read
/// from its members' places instead of parsed: `id` and `method` taken as
/// they are, `params` built member by member with every `arguments` value
/// `null`. The outcome is exactly what parsing the text with those values
/// nulled and [`classify`] give (duplicate keys: the last value in the first
/// one's place, as serde_json keeps them). `None` when the message is not a
/// request with an id MCP allows: the caller then takes the parse, for its
/// exact reply. The hot path of every `tools/call`: no copy of the message
/// and no map of its top level.
fn request_in_place(text: &str, parts: &Parts, ends: Option<&scan::Ends>) -> Option<Incoming> {
    let raw = text.as_bytes();
    let method = parts.method.filter(|&at| raw.get(at) == Some(&b'"'))?;
    let id = id_in_place(text, parts.id?)?;
    let params = parts.params.filter(|&at| raw.get(at) == Some(&b'{'))?;
    let mut map = Map::new();
    for (key, value) in scan::members_in(raw, params, ends) {
        let key = scan::decode_string(raw, key);
        let item = match raw.get(value) {
            _ if key == "arguments" => Value::Null,
            Some(b'"') => Value::String(scan::decode_string(raw, value)),
            _ => {
                let end = scan::value_end_in(raw, value, ends);
                serde_json::from_str(text.get(value..end)?).ok()?
            }
        };
        map.insert(key, item);
    }
    Some(Incoming::Request {
        id,
        method: scan::decode_string(raw, method),
        params: Some(Value::Object(map)),
    })
}

/// The request id whose (valid) value starts at `at`, as
/// [`RequestId::from_json`] reads it parsed: a string, or an integer kept as
/// its literal text.
fn id_in_place(text: &str, at: usize) -> Option<RequestId> {
    let raw = text.as_bytes();
    match raw.get(at)? {
        b'"' => Some(RequestId::Str(scan::decode_string(raw, at))),
        b'-' | b'0'..=b'9' => {
            let literal = text.get(at..scan::number_end(raw, at)?)?;
            let digits = literal.strip_prefix('-').unwrap_or(literal);
            digits
                .bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| RequestId::Int(literal.to_string()))
        }
        _ => None,
    }
}

/// Where a message's parts are, found in one walk of its members: the
/// values of its (last) `id`, `method` and `params`, the span of the
/// `params.arguments` that counts (the last `arguments` object of the last
/// `params`, as serde_json keeps the last of duplicate keys) and of every
/// `params.arguments` value (all are left out of the parse).
struct Parts {
    id: Option<usize>,
    method: Option<usize>,
    params: Option<usize>,
    arguments: std::ops::Range<usize>,
    spans: Vec<std::ops::Range<usize>>,
}

impl Parts {
    /// The parts of `text`; `None` when the counting arguments are not an
    /// object, or the text does not look like an object at all.
    fn find(text: &[u8], ends: Option<&scan::Ends>) -> Option<Parts> {
        let top = scan::skip_ws(text, 0);
        if text.get(top) != Some(&b'{') {
            return None;
        }
        let (mut id, mut method, mut params) = (None, None, None);
        let mut spans = Vec::new();
        let mut current = None;
        for (key, value) in scan::members_in(text, top, ends) {
            let decoded;
            let name = match scan::plain_str(text, key) {
                Some(plain) => plain,
                // A key with escapes may still spell one of them.
                None => {
                    decoded = scan::decode_string(text, key);
                    decoded.as_bytes()
                }
            };
            match name {
                b"id" => id = Some(value),
                b"method" => method = Some(value),
                b"params" => params = Some(value),
                _ => continue,
            }
            if name != b"params" {
                continue;
            }
            current = None;
            if text.get(value) != Some(&b'{') {
                continue;
            }
            for (key, value) in scan::members_in(text, value, ends) {
                if scan::str_eq(text, key, "arguments") {
                    let span = value..scan::value_end_in(text, value, ends);
                    current = Some(span.clone());
                    spans.push(span);
                }
            }
        }
        let arguments = current?;
        (text.get(arguments.start) == Some(&b'{')).then_some(Parts {
            id,
            method,
            params,
            arguments,
            spans,
        })
    }
}

/// Classifies an already parsed message.
pub fn classify(value: Value) -> Incoming {
    let mut obj = match value {
        Value::Object(obj) => obj,
        Value::Array(_) => {
            return Incoming::Invalid(error_response(
                None,
                ErrorCode::InvalidRequest,
                "batch requests are not supported: send one JSON-RPC message per line",
            ))
        }
        _ => {
            return Incoming::Invalid(error_response(
                None,
                ErrorCode::InvalidRequest,
                "invalid request: expected a JSON-RPC message object",
            ))
        }
    };
    let method = match obj.remove("method") {
        Some(Value::String(m)) => Some(m),
        _ => None,
    };
    let id = obj.remove("id");
    let params = obj.remove("params");
    match (method, id) {
        (None, None) => {
            if obj.contains_key("result") || obj.contains_key("error") {
                Incoming::Response
            } else {
                Incoming::Invalid(error_response(
                    None,
                    ErrorCode::InvalidRequest,
                    "invalid request: missing 'method'",
                ))
            }
        }
        (None, Some(id)) => {
            if obj.contains_key("result") || obj.contains_key("error") {
                return Incoming::Response;
            }
            let echo = RequestId::from_json(&id);
            Incoming::Invalid(error_response(
                echo.as_ref(),
                ErrorCode::InvalidRequest,
                "missing 'method'",
            ))
        }
        (Some(method), None) => Incoming::Notification { method, params },
        (Some(method), Some(id)) => match RequestId::from_json(&id) {
            Some(id) => Incoming::Request { id, method, params },
            None => Incoming::Invalid(error_response(
                None,
                ErrorCode::InvalidRequest,
                &format!(
                    "invalid request id {}: MCP request ids must be strings or integers",
                    crate::format::json::text(&id)
                ),
            )),
        },
    }
}

fn envelope(id: Option<&RequestId>) -> Map<String, Value> {
    // Room for the result or error too: no growing on the way.
    let mut m = Map::with_capacity(3);
    m.insert("jsonrpc".into(), Value::String("2.0".into()));
    m.insert("id".into(), id.map_or(Value::Null, RequestId::to_json));
    m
}

/// `{"jsonrpc":"2.0","id":…,"result":…}`.
pub fn result_response(id: &RequestId, result: Value) -> Value {
    let mut m = envelope(Some(id));
    m.insert("result".into(), result);
    Value::Object(m)
}

/// `{"jsonrpc":"2.0","id":…,"error":{"code":…,"message":…}}`.
pub fn error_response(id: Option<&RequestId>, code: ErrorCode, message: &str) -> Value {
    let mut m = envelope(id);
    let mut e = Map::with_capacity(2);
    e.insert("code".into(), Value::from(code as i64));
    e.insert("message".into(), Value::String(message.into()));
    m.insert("error".into(), Value::Object(e));
    Value::Object(m)
}

/// An error response with a `data` member.
pub fn error_response_data(
    id: Option<&RequestId>,
    code: ErrorCode,
    message: &str,
    data: Value,
) -> Value {
    let mut reply = error_response(id, code, message);
    if let Some(Value::Object(e)) = reply.get_mut("error") {
        e.insert("data".into(), data);
    }
    reply
}

/// The error code of an error response, if it is one.
pub fn error_code(msg: &Value) -> Option<i64> {
    msg.get("error")?.get("code")?.as_i64()
}

/// `{"jsonrpc":"2.0","method":…,"params":…}`.
pub fn notification(method: &str, params: Value) -> Value {
    let mut m = Map::new();
    m.insert("jsonrpc".into(), Value::String("2.0".into()));
    m.insert("method".into(), Value::String(method.into()));
    m.insert("params".into(), params);
    Value::Object(m)
}

/// What [`LineFramer::next_line`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    Line(&'a [u8]),
    /// A line longer than [`MAX_LINE`] was discarded.
    TooLong,
}

/// Splits a byte stream on LF, with a cap on line length.
///
/// The caller appends bytes with [`LineFramer::push`] and then drains complete
/// lines with [`LineFramer::next_line`]. Consumed bytes are rolled out of the
/// buffer lazily, so a burst of small lines costs one copy, not one per line.
#[derive(Debug)]
pub struct LineFramer {
    buf: Vec<u8>,
    /// INVARIANT: start <= scanned <= buf.len(); bytes before `start` are consumed.
    start: usize,
    /// Bytes in `start..scanned` are known to contain no LF.
    scanned: usize,
    /// Discarding the rest of an over-long line until its LF.
    skipping: bool,
    max_line: usize,
}

impl Default for LineFramer {
    fn default() -> Self {
        LineFramer::with_max_line(MAX_LINE)
    }
}

impl LineFramer {
    pub fn with_max_line(max_line: usize) -> Self {
        LineFramer {
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            skipping: false,
            max_line,
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
            self.scanned = 0;
        } else if self.start > 64 * 1024 && self.start * 2 > self.buf.len() {
            self.buf.drain(..self.start);
            self.scanned -= self.start;
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete line (without its LF), or `None` if more bytes are
    /// needed. At end of input call [`LineFramer::finish`] for the last line.
    pub fn next_line(&mut self) -> Option<Frame<'_>> {
        let pending = &self.buf[self.scanned..];
        let Some(i) = memchr_lf(pending) else {
            self.scanned = self.buf.len();
            if !self.skipping && self.buf.len() - self.start > self.max_line {
                // Drop what we hold of the over-long line and skip the rest
                // as it arrives, so memory stays bounded.
                self.skipping = true;
            }
            if self.skipping {
                self.buf.clear();
                self.start = 0;
                self.scanned = 0;
            }
            return None;
        };
        let end = self.scanned + i;
        let line_start = self.start;
        self.start = end + 1;
        self.scanned = self.start;
        if std::mem::take(&mut self.skipping) || end - line_start > self.max_line {
            return Some(Frame::TooLong);
        }
        Some(Frame::Line(&self.buf[line_start..end]))
    }

    /// Gives a large buffer back once every line in it has been taken, so
    /// one big message does not keep its memory for the life of the stream.
    pub fn trim(&mut self) {
        if self.start == self.buf.len() && self.buf.capacity() > 1024 * 1024 {
            self.buf = Vec::new();
            self.start = 0;
            self.scanned = 0;
        }
    }

    /// At end of input: the final line if it had no LF.
    pub fn finish(&mut self) -> Option<Frame<'_>> {
        if self.skipping {
            self.skipping = false;
            self.buf.clear();
            self.start = 0;
            self.scanned = 0;
            return Some(Frame::TooLong);
        }
        if self.start >= self.buf.len() {
            return None;
        }
        let line_start = self.start;
        self.start = self.buf.len();
        self.scanned = self.start;
        if self.buf.len() - line_start > self.max_line {
            return Some(Frame::TooLong);
        }
        Some(Frame::Line(&self.buf[line_start..]))
    }
}

fn memchr_lf(bytes: &[u8]) -> Option<usize> {
    scan::find_byte(bytes, b'\n')
}

/// The reply to an over-long line.
pub fn too_long_response() -> Value {
    // The reference answers -32600 here; an unreadable line is a parse error.
    error_response(
        None,
        ErrorCode::ParseError,
        "request line exceeds the maximum size",
    )
}

#[cfg(test)]
mod tests;
