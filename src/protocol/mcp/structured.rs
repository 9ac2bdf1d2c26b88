//! `structuredContent` without a second copy or a value tree, and the writer
//! that puts it on the wire.
//!
//! A typed result's value exists once, as JSON text, in its text block. The
//! result's `structuredContent` key holds a placeholder ([`mark`]) saying
//! "the text block's value, raw". [`for_era`] settles it when the era is
//! known: a legacy answer keeps the reference's shape (a record's value
//! parsed into a tree, nothing for other types); a modern (2026-07-28) one
//! keeps the placeholder, and [`write`] replaces it, while serializing the
//! message, by the text itself: escaped once in the text block, raw once in
//! `structuredContent`. Every transport writes messages through [`write`]
//! ([`to_vec`], [`write_line`], [`length`]), so a task's result read with
//! `tasks/get` or pushed in `notifications/tasks` is written the same way.
//! A text held apart from its message (a finished task's long result, held
//! once by the task table) is written by [`parts`]: the message's bytes
//! with, where the text goes, typed spans of it that the transport writes
//! from the text itself ([`Apart`] says which result it belongs to).
//!
//! Output is byte-identical to `serde_json::to_writer` for any message
//! without a placeholder.
//!
//! Architecture Invariant: pure; no I/O.

use std::io::{self, Write};
use std::ops::Range;

use serde_json::{Map, Value as Json};

use crate::format::json::page::Form;
use crate::format::json::scan;

/// The key that carries the structured value.
pub const KEY: &str = "structuredContent";

/// Placeholder: the text block's value, which is a record (legacy answers
/// parse it, as the reference does).
const FROM_TEXT_RECORD: &str = "\u{0}morloc-mcp:structured:text:record";
/// Placeholder: the text block's value, of any other type (legacy answers
/// carry no `structuredContent` for it).
const FROM_TEXT: &str = "\u{0}morloc-mcp:structured:text";

/// Placeholders live in results at most this deep in a message (a call's
/// result at 1, a task's inlined result at 2); deeper objects are written
/// by serde_json directly.
const MAX_DEPTH: usize = 3;

/// Marks `result` (a `CallToolResult` whose first block's text is the JSON
/// text of the value) as carrying that value as `structuredContent`.
/// `record` keeps the legacy shape for records. The text is checked when
/// the era is known ([`for_era`]), so a legacy answer pays nothing for it.
pub fn mark(result: &mut Map<String, Json>, record: bool) {
    if first_text(result).is_some() {
        let mark = if record { FROM_TEXT_RECORD } else { FROM_TEXT };
        result.insert(KEY.into(), Json::String(mark.into()));
    }
}

/// Whether `result` carries a placeholder.
pub fn is_marked(result: &Json) -> bool {
    match result {
        Json::Object(map) => marked(map),
        _ => false,
    }
}

fn marked(map: &Map<String, Json>) -> bool {
    matches!(field(map, KEY), Some(Json::String(s)) if s == FROM_TEXT || s == FROM_TEXT_RECORD)
}

/// `map[key]`, found by comparing keys in order rather than by hashing:
/// the objects looked at here are a message's envelope, a few keys each,
/// and this runs for every object of every message written.
fn field<'a>(map: &'a Map<String, Json>, key: &str) -> Option<&'a Json> {
    map.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
}

/// Settles the placeholder of a `CallToolResult` for its era: kept for a
/// modern answer whose text is one JSON value ([`write`] fills it in, so
/// the text must be spliced safely), removed if it is not; for a legacy
/// answer, a record's value parsed into place (the reference's shape) and
/// any other removed.
pub fn for_era(result: &mut Json, modern: bool) {
    for_era_of(result, modern, None);
}

/// [`for_era`] for a result whose text block's text is `text` (held apart
/// from it: [`Apart`]), if given.
pub fn for_era_of(result: &mut Json, modern: bool, text: Option<&str>) {
    if modern {
        let spliceable = |text: &str| scan::validate(text.as_bytes(), 0).is_ok();
        if is_marked(result)
            && !text
                .or_else(|| first_text_of(result))
                .is_some_and(spliceable)
        {
            if let Json::Object(map) = result {
                map.shift_remove(KEY);
            }
        }
        return;
    }
    let Json::Object(map) = result else {
        return;
    };
    match field(map, KEY) {
        Some(Json::String(s)) if s == FROM_TEXT_RECORD => {
            let parsed = text
                .or_else(|| first_text(map))
                .and_then(|t| serde_json::from_str::<Json>(t).ok());
            match parsed {
                Some(value) => {
                    map.insert(KEY.into(), value);
                }
                None => {
                    map.shift_remove(KEY);
                }
            }
        }
        Some(Json::String(s)) if s == FROM_TEXT => {
            map.shift_remove(KEY);
        }
        _ => {}
    }
}

fn first_text_of(result: &Json) -> Option<&str> {
    match result {
        Json::Object(map) => first_text(map),
        _ => None,
    }
}

/// The text of the first content block, if it is a text block.
fn first_text(result: &Map<String, Json>) -> Option<&str> {
    let Json::Object(block) = field(result, "content")?.as_array()?.first()? else {
        return None;
    };
    if field(block, "type")?.as_str()? != "text" {
        return None;
    }
    field(block, "text")?.as_str()
}

/// A text held apart from a message (a finished task's long result text,
/// held once by its table) and where it goes: the `CallToolResult` reached
/// from the message by the keys `at` has its first block's `text` written
/// from it, escaped, and a `structuredContent` placeholder from it, raw.
/// What that block's `text` holds in the message is not written.
#[derive(Clone, Copy, Debug)]
pub struct Apart<'a> {
    /// Keys from the message to the result (at most [`MAX_DEPTH`]).
    pub at: &'a [&'a str],
    /// The text's length in bytes.
    pub len: usize,
}

/// A piece of a message written with a text held apart ([`parts`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// Bytes of the message.
    Bytes(Vec<u8>),
    /// Bytes `range` of the text held apart, written as `form` says.
    Text(Range<usize>, Form),
}

/// Where the writer puts bytes: it asks where it stands when a text held
/// apart goes in.
trait Out: Write {
    fn offset(&self) -> usize;
}

impl Out for Vec<u8> {
    fn offset(&self) -> usize {
        self.len()
    }
}

/// Counts the bytes written ([`length`]).
struct Count(usize);

impl Write for Count {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Out for Count {
    fn offset(&self) -> usize {
        self.0
    }
}

/// The text held apart, on the way down to its result: the keys left to
/// follow, and where its spans were left (offset, form).
struct Hole<'a> {
    at: &'a [&'a str],
    spans: &'a mut Vec<(usize, Form)>,
}

/// Writes `msg` as compact JSON, each placeholder replaced by the raw text
/// of its result's text block.
pub fn write(out: &mut Vec<u8>, msg: &Json) {
    // Writing into a Vec cannot fail.
    let _ = write_at(out, msg, 0, None);
}

fn write_at<W: Out>(
    out: &mut W,
    value: &Json,
    depth: usize,
    mut hole: Option<Hole<'_>>,
) -> io::Result<()> {
    let Json::Object(map) = value else {
        return serde_json::to_writer(&mut *out, value).map_err(io::Error::from);
    };
    if depth > MAX_DEPTH {
        return serde_json::to_writer(&mut *out, value).map_err(io::Error::from);
    }
    if let Some(Hole { at: [], spans }) = hole {
        return write_held(out, map, spans);
    }
    let marked = marked(map);
    let raw = if marked { first_text(map) } else { None };
    // A placeholder without its text (never made so) is left out rather
    // than written as it is.
    let skip = (marked && raw.is_none()).then_some(KEY);
    write_object(out, map, skip, |out, key, item| {
        let below = match &mut hole {
            Some(Hole {
                at: [next, rest @ ..],
                spans,
            }) if *next == key => Some(Hole { at: rest, spans }),
            _ => None,
        };
        match raw {
            Some(text) if key == KEY => out.write_all(text.as_bytes()),
            _ => write_at(out, item, depth + 1, below),
        }
    })
}

/// Writes `map` as a JSON object, its keys in order (but `skip`), each
/// value by `value`.
fn write_object<W: Out>(
    out: &mut W,
    map: &Map<String, Json>,
    skip: Option<&str>,
    mut value: impl FnMut(&mut W, &str, &Json) -> io::Result<()>,
) -> io::Result<()> {
    out.write_all(b"{")?;
    let mut first = true;
    for (key, item) in map {
        if skip == Some(key.as_str()) {
            continue;
        }
        if !first {
            out.write_all(b",")?;
        }
        first = false;
        serde_json::to_writer(&mut *out, key).map_err(io::Error::from)?;
        out.write_all(b":")?;
        value(out, key, item)?;
    }
    out.write_all(b"}")
}

/// Writes the result whose first block's text is held apart: that text
/// escaped in the block, raw in place of a placeholder.
fn write_held<W: Out>(
    out: &mut W,
    map: &Map<String, Json>,
    spans: &mut Vec<(usize, Form)>,
) -> io::Result<()> {
    let marked = marked(map);
    write_object(out, map, None, |out, key, item| match item {
        _ if marked && key == KEY => {
            spans.push((out.offset(), Form::Raw));
            Ok(())
        }
        Json::Array(blocks) if key == "content" && !blocks.is_empty() => {
            out.write_all(b"[")?;
            for (i, block) in blocks.iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                match block {
                    Json::Object(fields) if i == 0 => {
                        write_object(out, fields, None, |out, key, item| {
                            if key != "text" {
                                return serde_json::to_writer(out, item).map_err(io::Error::from);
                            }
                            out.write_all(b"\"")?;
                            spans.push((out.offset(), Form::Escaped));
                            out.write_all(b"\"")
                        })?
                    }
                    _ => serde_json::to_writer(&mut *out, block).map_err(io::Error::from)?,
                }
            }
            out.write_all(b"]")
        }
        _ => serde_json::to_writer(out, item).map_err(io::Error::from),
    })
}

/// `msg` as [`write`] writes it, with the text held apart as `apart` says
/// left out: the message's bytes, and between them the spans of the text,
/// typed (the caller writes them from the text, held once elsewhere).
pub fn parts(msg: &Json, apart: Apart<'_>) -> Vec<Part> {
    let mut bytes = Vec::new();
    let mut spans = Vec::new();
    let hole = Hole {
        at: apart.at,
        spans: &mut spans,
    };
    // Writing into a Vec cannot fail.
    let _ = write_at(&mut bytes, msg, 0, Some(hole));
    let mut parts = Vec::with_capacity(2 * spans.len() + 1);
    let mut from = 0;
    for (at, form) in spans {
        parts.push(Part::Bytes(bytes[from..at].to_vec()));
        parts.push(Part::Text(0..apart.len, form));
        from = at;
    }
    parts.push(Part::Bytes(bytes[from..].to_vec()));
    parts
}

/// [`write`] into a new buffer.
pub fn to_vec(msg: &Json) -> Vec<u8> {
    let mut out = Vec::new();
    write(&mut out, msg);
    out
}

/// [`write`] into a string (the text is UTF-8: placeholders are replaced by
/// the text of a JSON string).
pub fn to_string(msg: &Json) -> String {
    String::from_utf8(to_vec(msg)).unwrap_or_default()
}

/// [`write`] and a line feed: one stdio frame.
pub fn write_line(out: &mut Vec<u8>, msg: &Json) {
    write(out, msg);
    out.push(b'\n');
}

/// The length [`write`] gives, counted without writing (an HTTP body's
/// `Content-Length`, before the body goes straight into its buffer).
pub fn length(msg: &Json) -> usize {
    let mut count = Count(0);
    let _ = write_at(&mut count, msg, 0, None);
    count.0
}

/// The length of `value`'s compact JSON text as `serde_json` writes it
/// (placeholders as they are), counted without writing.
pub fn plain_length(value: &Json) -> usize {
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests;
