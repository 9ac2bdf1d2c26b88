//! Result shaping: tool values into `CallToolResult`s (text,
//! `structuredContent`, media blocks), the notifications a call produces
//! (progress, log lines), and the fields every modern (2026-07-28) result
//! carries (`resultType`, `_meta` server identity, caching hints).
//!
//! Legacy results are exactly what they always were; [`complete`] is applied
//! only to answers of modern requests.
//!
//! Architecture Invariant: pure; no I/O.

use serde_json::{Map, Value as Json};

use crate::format::manifest::Command;
use crate::format::schema::Schema;
use crate::format::value::{self, Layout, LayoutError, Value};
use crate::protocol::jsonrpc;

pub use super::identity::{cacheable, complete, complete_with, CACHE_TTL_MS};
use super::{structured, Session, LOG_LEVELS};

/// `{"content":[{"type":"text","text":msg}],"isError":true}`.
pub fn error_result(message: &str) -> Json {
    let mut block = Map::new();
    block.insert("type".into(), Json::String("text".into()));
    block.insert("text".into(), Json::String(message.into()));
    let mut result = Map::new();
    result.insert("content".into(), Json::Array(vec![Json::Object(block)]));
    result.insert("isError".into(), Json::Bool(true));
    Json::Object(result)
}

/// Shapes a successful value of `command` (mcp-surface §4.1, §4.3).
pub fn success_result(command: &Command, value: &Value) -> Json {
    success_result_with(command, None, value)
}

/// [`success_result`] with the return schema's compiled layout, if at hand.
pub fn success_result_with(
    command: &Command,
    layout: Option<&Result<Layout, LayoutError>>,
    value: &Value,
) -> Json {
    let ret_schema = command.ret.schema.schema();
    if let (Some(mime), Some(schema)) = (&command.ret.mime, ret_schema) {
        if mime.eq_ignore_ascii_case(MULTIPART) {
            if let Some(result) = multipart_result(schema, value) {
                return result;
            }
        }
    }
    if let (Some(mime), Some(bytes)) = (
        &command.ret.mime,
        ret_schema.and_then(|s| media_bytes(s, value)),
    ) {
        return media_result(mime, &bytes);
    }
    let mut text = String::new();
    match ret_schema {
        Some(s) => {
            let rendered = match layout {
                Some(Ok(layout)) => value::to_json_with(layout, value, &mut text),
                Some(Err(e)) => Err(e.clone().into()),
                None => value::to_json(s, value, &mut text),
            };
            if let Err(e) = rendered {
                return error_result(&format!(
                    "cannot render the result of '{}': {e}",
                    command.name
                ));
            }
        }
        None => text.push_str("null"),
    }
    text_result(command, text)
}

/// Whether a result of `command` is shaped from its JSON text alone, so the
/// text can be rendered straight from the reply ([`text_result`]) without
/// decoding a value first: true unless the return has a media type.
pub fn result_is_json_text(command: &Command) -> bool {
    command.ret.mime.is_none()
}

/// The successful result of a command whose value's JSON text is `text`
/// (see [`result_is_json_text`]): one text block, plus `structuredContent`
/// for a typed JSON return, as a placeholder the era settles
/// (`structured::for_era`: the reference's shape for legacy answers, the
/// raw value written from the text for modern ones).
pub fn text_result(command: &Command, text: String) -> Json {
    TextResult::new(command, text).into_json()
}

/// A successful result that is one text block, the JSON text of its value
/// ([`text_result`]), kept as that text until it is written: a call's
/// usual answer, written by [`TextResult::write`] without a value tree.
#[derive(Clone, Debug, PartialEq)]
pub struct TextResult {
    pub text: String,
    /// Whether it carries `structuredContent` (the value itself), and then
    /// whether the value is a record (a legacy answer carries only a
    /// record's).
    pub structured: Option<bool>,
}

impl TextResult {
    /// The result of a value of `command` whose JSON text is `text`.
    pub fn new(command: &Command, text: String) -> TextResult {
        // A record keeps its legacy `structuredContent` even under a media
        // type whose value was not bytes (the reference's shape).
        let structured = command.ret.schema.schema().and_then(|schema| {
            let record = matches!(schema.peel_named(), Schema::Record(_));
            (record || command.ret.mime.is_none()).then_some(record)
        });
        TextResult { text, structured }
    }

    /// The result as a `CallToolResult`, its `structuredContent` a
    /// placeholder (`structured::mark`).
    pub fn into_json(self) -> Json {
        let mut result = Map::with_capacity(3);
        let mut block = Map::with_capacity(2);
        block.insert("type".into(), Json::String("text".into()));
        block.insert("text".into(), Json::String(self.text));
        result.insert("content".into(), Json::Array(vec![Json::Object(block)]));
        if let Some(record) = self.structured {
            structured::mark(&mut result, record);
        }
        result.insert("isError".into(), Json::Bool(false));
        Json::Object(result)
    }

    /// Writes the result as `structured::write` writes
    /// [`TextResult::into_json`] settled for its era (`structured::for_era`)
    /// and, for a modern answer, completed (`complete`, with `server_info`
    /// the server's `serverInfo` as JSON text): the same bytes.
    pub fn write(&self, out: &mut Vec<u8>, modern: bool, server_info: &str) {
        out.extend_from_slice(CONTENT_OPEN);
        crate::format::json::write_str_body_into(out, &self.text);
        out.extend_from_slice(CONTENT_CLOSE);
        if let Some(structured) = self.structured_text(modern) {
            out.extend_from_slice(STRUCTURED);
            out.extend_from_slice(structured.as_bytes());
        }
        out.extend_from_slice(NOT_ERROR);
        if modern {
            out.extend_from_slice(COMPLETE);
            out.extend_from_slice(super::identity::SERVER_INFO_KEY.as_bytes());
            out.extend_from_slice(b"\":");
            out.extend_from_slice(server_info.as_bytes());
            out.push(b'}');
        }
        out.push(b'}');
    }

    /// The length [`TextResult::write`] gives, counted without writing.
    pub fn length(&self, modern: bool, server_info: &str) -> usize {
        let structured = self
            .structured_text(modern)
            .map_or(0, |s| STRUCTURED.len() + s.len());
        let identity = match modern {
            true => COMPLETE.len() + super::identity::SERVER_INFO_KEY.len() + 3 + server_info.len(),
            false => 0,
        };
        CONTENT_OPEN.len()
            + crate::format::json::str_body_len(&self.text)
            + CONTENT_CLOSE.len()
            + structured
            + NOT_ERROR.len()
            + identity
            + 1
    }

    /// The text of its `structuredContent` in an answer of its era, if it
    /// has one: a modern answer's is the text itself when it is one JSON
    /// value; a legacy answer has a record's, parsed and written again
    /// (the reference's shape), and no other.
    fn structured_text(&self, modern: bool) -> Option<std::borrow::Cow<'_, str>> {
        match self.structured {
            Some(_) if modern => crate::format::json::scan::validate(self.text.as_bytes(), 0)
                .is_ok()
                .then_some(std::borrow::Cow::Borrowed(self.text.as_str())),
            Some(true) => {
                let value = serde_json::from_str::<Json>(&self.text).ok()?;
                Some(std::borrow::Cow::Owned(crate::format::json::text(&value)))
            }
            _ => None,
        }
    }
}

/// The fixed parts of a written [`TextResult`].
const CONTENT_OPEN: &[u8] = br#"{"content":[{"type":"text","text":""#;
const CONTENT_CLOSE: &[u8] = br#""}]"#;
const STRUCTURED: &[u8] = br#","structuredContent":"#;
const NOT_ERROR: &[u8] = br#","isError":false"#;
const COMPLETE: &[u8] = br#","resultType":"complete","_meta":{""#;

/// The raw bytes of a media-typed return: a Str, a list of bytes, or a list
/// of either (concatenated). `None` means "use the JSON path".
fn media_bytes(schema: &Schema, value: &Value) -> Option<Vec<u8>> {
    fn push(schema: &Schema, value: &Value, out: &mut Vec<u8>, depth: usize) -> bool {
        match (schema.peel_named(), value) {
            (Schema::Str, Value::Str(b)) => {
                out.extend_from_slice(b);
                true
            }
            (Schema::List { elem, .. }, Value::List(items)) => match elem.peel_named() {
                Schema::Int {
                    bytes: 1,
                    signed: false,
                } => items.iter().all(|v| match v {
                    Value::UInt(b) => {
                        out.push(*b as u8);
                        true
                    }
                    _ => false,
                }),
                Schema::Int {
                    bytes: 1,
                    signed: true,
                } => items.iter().all(|v| match v {
                    Value::Int(b) => {
                        out.push(*b as u8);
                        true
                    }
                    _ => false,
                }),
                _ if depth == 0 => items.iter().all(|v| push(elem, v, out, depth + 1)),
                _ => false,
            },
            _ => false,
        }
    }
    let mut out = Vec::new();
    (push(schema, value, &mut out, 0) && !out.is_empty()).then_some(out)
}

fn media_result(mime: &str, bytes: &[u8]) -> Json {
    content_result(vec![media_block(mime, bytes, "morloc://return")])
}

fn content_result(blocks: Vec<Json>) -> Json {
    let mut result = Map::new();
    result.insert("content".into(), Json::Array(blocks));
    result.insert("isError".into(), Json::Bool(false));
    Json::Object(result)
}

/// One content block for bytes of media type `mime` (mcp-surface §4.3; the
/// family is matched case-insensitively).
fn media_block(mime: &str, bytes: &[u8], uri: &str) -> Json {
    let family = mime.split('/').next().unwrap_or("").to_ascii_lowercase();
    let mut block = Map::new();
    match family.as_str() {
        "image" | "audio" => {
            block.insert("type".into(), Json::String(family));
            block.insert("data".into(), Json::String(base64(bytes)));
            block.insert("mimeType".into(), Json::String(mime.into()));
        }
        "text" => {
            block.insert("type".into(), Json::String("text".into()));
            block.insert(
                "text".into(),
                Json::String(String::from_utf8_lossy(bytes).into_owned()),
            );
        }
        _ => {
            let mut res = Map::new();
            res.insert("uri".into(), Json::String(uri.into()));
            res.insert("mimeType".into(), Json::String(mime.into()));
            res.insert("blob".into(), Json::String(base64(bytes)));
            block.insert("type".into(), Json::String("resource".into()));
            block.insert("resource".into(), Json::Object(res));
        }
    }
    Json::Object(block)
}

/// The media type under which a command returns several content blocks.
pub const MULTIPART: &str = "multipart/mixed";

/// A `multipart/mixed` return: a list of `(media type, body)` pairs, each
/// becoming its own content block (an extension: the reference has one block
/// per result). `None` if the value does not have that shape.
fn multipart_result(schema: &Schema, value: &Value) -> Option<Json> {
    let Schema::List { elem, .. } = schema.peel_named() else {
        return None;
    };
    let Schema::Tuple(members) = elem.peel_named() else {
        return None;
    };
    if members.len() != 2 || members.iter().any(|m| m.peel_named() != &Schema::Str) {
        return None;
    }
    let Value::List(parts) = value else {
        return None;
    };
    let mut blocks = Vec::with_capacity(parts.len());
    for (i, part) in parts.iter().enumerate() {
        let Value::Tuple(pair) = part else {
            return None;
        };
        let [Value::Str(mime), Value::Str(body)] = pair.as_slice() else {
            return None;
        };
        let mime = String::from_utf8_lossy(mime);
        blocks.push(media_block(&mime, body, &format!("morloc://return/{i}")));
    }
    Some(content_result(blocks))
}

/// Standard base64 with padding.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `notifications/progress` for a long call.
pub fn progress_notification(token: &Json, elapsed_secs: f64, message: &str) -> Json {
    let mut p = Map::new();
    p.insert("progressToken".into(), token.clone());
    p.insert(
        "progress".into(),
        serde_json::Number::from_f64(elapsed_secs).map_or(Json::from(0), Json::Number),
    );
    p.insert("message".into(), Json::String(message.into()));
    jsonrpc::notification("notifications/progress", Json::Object(p))
}

/// `notifications/message` carrying one line a pool wrote, if the session
/// asked for logs at this level.
pub fn log_notification(session: &Session, level: usize, logger: &str, line: &str) -> Option<Json> {
    log_message(session.log_level, level, logger, line)
}

/// `notifications/message` for a line at `level`, if `wanted` (the lowest
/// level asked for, `None` for none) lets it through.
pub fn log_message(wanted: Option<usize>, level: usize, logger: &str, line: &str) -> Option<Json> {
    let wanted = wanted?;
    if level < wanted {
        return None;
    }
    let mut p = Map::new();
    p.insert("level".into(), Json::String(LOG_LEVELS[level].into()));
    p.insert("logger".into(), Json::String(logger.into()));
    p.insert("data".into(), Json::String(line.into()));
    Some(jsonrpc::notification(
        "notifications/message",
        Json::Object(p),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multipart_returns_become_one_block_per_part() {
        let schema = crate::format::schema::parse("at2ss").unwrap();
        let part =
            |m: &str, b: &[u8]| Value::Tuple(vec![Value::Str(m.into()), Value::Str(b.to_vec())]);
        let value = Value::List(vec![
            part("text/plain", b"hi"),
            part("IMAGE/png", b"\x89PNG"),
            part("application/json", b"{}"),
        ]);
        let got = multipart_result(&schema, &value).unwrap().to_string();
        assert_eq!(
            got,
            r#"{"content":[{"type":"text","text":"hi"},{"type":"image","data":"iVBORw==","mimeType":"IMAGE/png"},{"type":"resource","resource":{"uri":"morloc://return/2","mimeType":"application/json","blob":"e30="}}],"isError":false}"#
        );
        assert!(multipart_result(
            &crate::format::schema::parse("as").unwrap(),
            &Value::List(vec![])
        )
        .is_none());
    }

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (input, out) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
            ("<svg/>", "PHN2Zy8+"),
        ] {
            assert_eq!(base64(input.as_bytes()), out);
        }
    }
}
