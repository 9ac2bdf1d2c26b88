//! W3C Trace Context (`traceparent`, `tracestate`): the strict parser a
//! request's context goes through, from its `_meta` (MCP 2026-07-28, where
//! these two keys are reserved for it) or its HTTP headers, and the ids of
//! the spans this server starts.
//!
//! An invalid value is ignored, never an error: the request then starts a
//! new trace. Pure; the caller supplies random ids.

use serde_json::Value as Json;

/// A trace id: 16 bytes, never all zero.
pub type TraceId = [u8; 16];
/// A span id: 8 bytes, never all zero.
pub type SpanId = [u8; 8];

/// The parts of a valid `traceparent`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceParent {
    pub trace_id: TraceId,
    /// The caller's span: the parent of the spans started here.
    pub parent_id: SpanId,
    pub flags: u8,
}

/// The length of a version-00 `traceparent`: `00-` + 32 + `-` + 16 + `-` + 2.
const TRACEPARENT_LEN: usize = 55;
/// Most members of a `tracestate` list.
const MAX_STATE_MEMBERS: usize = 32;
/// Most bytes of a `tracestate` kept (the W3C limit a vendor must propagate).
const MAX_STATE_LEN: usize = 512;

/// Parses a `traceparent` value, strictly: version `00` is exactly
/// `00-<32 hex>-<16 hex>-<2 hex>` in lowercase, with neither id all zero.
/// A later version (`01`..`fe`) is read by its version-00 prefix when that
/// is followed by the end or a `-`; version `ff` is invalid.
pub fn parse_traceparent(text: &str) -> Option<TraceParent> {
    let b = text.as_bytes();
    if b.len() < TRACEPARENT_LEN {
        return None;
    }
    let version = hex_byte(&b[0..2])?;
    if version == 0xff || (version == 0 && b.len() != TRACEPARENT_LEN) {
        return None;
    }
    if b.len() > TRACEPARENT_LEN && b[TRACEPARENT_LEN] != b'-' {
        return None;
    }
    if b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
        return None;
    }
    let mut trace_id = [0u8; 16];
    for (i, slot) in trace_id.iter_mut().enumerate() {
        *slot = hex_byte(&b[3 + 2 * i..5 + 2 * i])?;
    }
    let mut parent_id = [0u8; 8];
    for (i, slot) in parent_id.iter_mut().enumerate() {
        *slot = hex_byte(&b[36 + 2 * i..38 + 2 * i])?;
    }
    let flags = hex_byte(&b[53..55])?;
    if trace_id == [0; 16] || parent_id == [0; 8] {
        return None;
    }
    Some(TraceParent {
        trace_id,
        parent_id,
        flags,
    })
}

/// Two lowercase hex digits.
fn hex_byte(pair: &[u8]) -> Option<u8> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    Some(digit(pair[0])? << 4 | digit(pair[1])?)
}

/// Whether a `tracestate` value is a well-formed list: at most 32 members
/// `key=value` separated by commas (optional spaces and tabs around them;
/// empty members allowed), keys of lowercase letters, digits and `_-*/`
/// (with one `@` for a multi-tenant key), values of printable ASCII but
/// `,` and `=`, not ending in a space; 512 bytes at most.
pub fn valid_tracestate(text: &str) -> bool {
    if text.len() > MAX_STATE_LEN {
        return false;
    }
    let mut members = 0;
    for member in text.split(',') {
        let member = member.trim_matches([' ', '\t']);
        if member.is_empty() {
            continue;
        }
        members += 1;
        let Some((key, value)) = member.split_once('=') else {
            return false;
        };
        if members > MAX_STATE_MEMBERS || !valid_state_key(key) || !valid_state_value(value) {
            return false;
        }
    }
    true
}

fn valid_state_key(key: &str) -> bool {
    let part = |s: &str, max: usize, first_digit: bool| {
        let b = s.as_bytes();
        !b.is_empty()
            && b.len() <= max
            && (b[0].is_ascii_lowercase() || (first_digit && b[0].is_ascii_digit()))
            && b.iter().all(|&c| {
                c.is_ascii_lowercase()
                    || c.is_ascii_digit()
                    || matches!(c, b'_' | b'-' | b'*' | b'/')
            })
    };
    match key.split_once('@') {
        None => part(key, 256, false),
        Some((tenant, system)) => part(tenant, 241, true) && part(system, 14, false),
    }
}

fn valid_state_value(value: &str) -> bool {
    let b = value.as_bytes();
    !b.is_empty()
        && b.len() <= 256
        && b.last() != Some(&b' ')
        && b.iter()
            .all(|&c| (0x20..=0x7e).contains(&c) && c != b',' && c != b'=')
}

/// A request's incoming context: a valid `traceparent`, and its
/// `tracestate` when that is valid too (it means nothing without one).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Incoming {
    pub parent: Option<TraceParent>,
    pub state: Option<String>,
}

impl Incoming {
    /// Judges the two values as found; an invalid one is dropped.
    pub fn from_values(traceparent: Option<&str>, tracestate: Option<&str>) -> Incoming {
        let parent = traceparent.and_then(parse_traceparent);
        let state = parent
            .and(tracestate)
            .filter(|s| valid_tracestate(s))
            .map(|s| s.trim_matches([' ', '\t']).to_string())
            .filter(|s| !s.is_empty());
        Incoming { parent, state }
    }

    /// The context in a request's `params._meta` (string values only).
    pub fn from_params(params: Option<&Json>) -> Incoming {
        let meta = params.and_then(|p| p.get("_meta"));
        let text = |key: &str| meta.and_then(|m| m.get(key)).and_then(Json::as_str);
        Incoming::from_values(text("traceparent"), text("tracestate"))
    }
}

/// The span a request or pool call makes: its trace, its own id and its
/// parent's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    pub parent_id: Option<SpanId>,
    /// The caller's `tracestate`, carried along unchanged.
    pub state: Option<String>,
}

impl Span {
    /// A request's span: a child of the incoming context, or the root of a
    /// new trace (`new_trace`) when it has none. A zero random id (odds
    /// 2^-64) is replaced so the ids stay valid.
    pub fn start(incoming: Incoming, new_trace: TraceId, span_id: SpanId) -> Span {
        let (trace_id, parent_id) = match incoming.parent {
            Some(p) => (p.trace_id, Some(p.parent_id)),
            None => (nonzero(new_trace), None),
        };
        Span {
            trace_id,
            span_id: nonzero(span_id),
            parent_id,
            state: incoming.state,
        }
    }

    /// A child of this span with id `span_id`.
    pub fn child(&self, span_id: SpanId) -> Span {
        Span {
            trace_id: self.trace_id,
            span_id: nonzero(span_id),
            parent_id: Some(self.span_id),
            state: None,
        }
    }
}

fn nonzero<const N: usize>(mut id: [u8; N]) -> [u8; N] {
    if id.iter().all(|&b| b == 0) {
        id[N - 1] = 1;
    }
    id
}

/// Lowercase hex of an id.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    hex_into(&mut out, bytes);
    out
}

/// [`hex`], appended to `out`.
pub fn hex_into(out: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(HEX[(b >> 4) as usize]));
        out.push(char::from(HEX[(b & 15) as usize]));
    }
}

#[cfg(test)]
mod tests;
