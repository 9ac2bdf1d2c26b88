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
//!
//! Output is byte-identical to `serde_json::to_writer` for any message
//! without a placeholder.
//!
//! Architecture Invariant: pure; no I/O beyond the `io::Write` it is given.

use std::io::{self, Write};

use serde_json::{Map, Value as Json};

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
/// from it, see `tasks::APART`), if given.
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

/// Writes `msg` as compact JSON, each placeholder replaced by the raw text
/// of its result's text block.
pub fn write<W: Write>(out: &mut W, msg: &Json) -> io::Result<()> {
    write_at(out, msg, 0)
}

fn write_at<W: Write>(out: &mut W, value: &Json, depth: usize) -> io::Result<()> {
    let Json::Object(map) = value else {
        return serde_json::to_writer(&mut *out, value).map_err(io::Error::from);
    };
    if depth > MAX_DEPTH {
        return serde_json::to_writer(&mut *out, value).map_err(io::Error::from);
    }
    let marked = marked(map);
    let raw = if marked { first_text(map) } else { None };
    out.write_all(b"{")?;
    let mut first = true;
    for (key, item) in map {
        // A placeholder without its text (never made so) is left out
        // rather than written as it is.
        if marked && raw.is_none() && key == KEY {
            continue;
        }
        if !first {
            out.write_all(b",")?;
        }
        first = false;
        serde_json::to_writer(&mut *out, key).map_err(io::Error::from)?;
        out.write_all(b":")?;
        match raw {
            Some(text) if key == KEY => out.write_all(text.as_bytes())?,
            _ => write_at(out, item, depth + 1)?,
        }
    }
    out.write_all(b"}")
}

/// [`write`] into a new buffer.
pub fn to_vec(msg: &Json) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = write(&mut out, msg);
    out
}

/// [`write`] into a string (the text is UTF-8: placeholders are replaced by
/// the text of a JSON string).
pub fn to_string(msg: &Json) -> String {
    String::from_utf8(to_vec(msg)).unwrap_or_default()
}

/// [`write`] and a line feed: one stdio frame.
pub fn write_line(out: &mut Vec<u8>, msg: &Json) {
    let _ = write(out, msg);
    out.push(b'\n');
}

/// The length [`write`] gives, counted without writing (an HTTP body's
/// `Content-Length`, before the body goes straight into its buffer).
pub fn length(msg: &Json) -> usize {
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
    let mut count = Count(0);
    let _ = write(&mut count, msg);
    count.0
}

#[cfg(test)]
mod tests;
