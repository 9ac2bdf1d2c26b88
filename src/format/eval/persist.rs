//! `@save` and `@load`: values in files, through the caller's [`Host`].
//!
//! `@save` writes JSON text, raw msgpack, or a complete uncompressed data
//! packet (MESG + VOIDSTAR with SCHEMA_STRING metadata), atomically. A
//! compression level above 0 for a packet is refused with a catchable error:
//! zstd is outside this server's dependency budget.
//!
//! `@load` auto-detects the file format, in this order:
//!
//! 1. a packet (magic `6D F8 07 07`): an uncompressed, inline (MESG) data
//!    packet with a VOIDSTAR or MSGPACK payload; its stored schema must be
//!    compatible with the requested one. Stream files, compressed packets and
//!    FILE/RPTR packets are refused with a catchable error;
//! 2. for a Str or file-handle target (or an optional of one), UTF-8 text that
//!    does not start with `"` is the value itself, minus one trailing newline;
//! 3. for a float target, the bare words `inf`, `-inf`, `nan`;
//! 4. by extension: `.json` is JSON, `.mpk` / `.msgpack` is msgpack;
//! 5. by first byte: JSON if it looks like JSON (falling back to msgpack if it
//!    does not parse), else msgpack.
//!
//! The reference checks packets first as well (its fast paths for voidstar
//! packets run before the text rules). All failures are catchable.

use std::io;

use serde_json::Value as Json;

use super::{codec, Budget, EvalError, Host};
use crate::format::packet::{
    self, CMD_DATA, FORMAT_MSGPACK, FORMAT_VOIDSTAR, HEADER_LEN, METADATA_SCHEMA_STRING,
    SOURCE_MESG,
};
use crate::format::schema::{self, Schema};
use crate::format::value::Value;

/// The `format` of a `save` node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SaveFormat {
    Voidstar,
    Msgpack,
    Json,
}

impl SaveFormat {
    /// Like the reference, anything but "json" and "msgpack" saves a packet.
    pub(super) fn from_name(name: &str) -> SaveFormat {
        match name {
            "json" => SaveFormat::Json,
            "msgpack" => SaveFormat::Msgpack,
            _ => SaveFormat::Voidstar,
        }
    }

    fn name(self) -> &'static str {
        match self {
            SaveFormat::Voidstar => "voidstar",
            SaveFormat::Msgpack => "msgpack",
            SaveFormat::Json => "json",
        }
    }
}

/// Command types of stream files (`pool-protocol.md` §6.1); only these two
/// matter here, the rest of the packet layout comes from `crate::format::packet`.
const COMMAND_STREAM: u8 = 3;
const COMMAND_FOOTER: u8 = 4;
const PACKET_MAGIC: [u8; 4] = packet::MAGIC.to_le_bytes();

/// `@save`: the value is already checked against `schema`.
pub(super) fn save(
    host: &mut dyn Host,
    format: SaveFormat,
    level: u8,
    schema: &Schema,
    value: &Value,
    path: &str,
) -> Result<(), EvalError> {
    let fail = |e: String| EvalError::user(format!("@save({}): {e}", format.name()));
    let bytes = match format {
        SaveFormat::Json => codec::to_json(schema, value).map_err(fail)?.into_bytes(),
        SaveFormat::Msgpack => codec::msgpack_encode(schema, value).map_err(fail)?,
        SaveFormat::Voidstar => {
            if level > 0 {
                return Err(EvalError::user(format!(
                    "@save: compression is not supported (level {level})"
                )));
            }
            let blob = codec::voidstar_encode(schema, value).map_err(fail)?;
            data_packet(FORMAT_VOIDSTAR, &schema.to_wire_string(), &blob)
        }
    };
    host.write_file_atomic(path, &bytes)
        .map_err(|e| fail(format!("cannot write '{path}': {e}")))
}

/// A MESG data packet with one SCHEMA_STRING metadata entry
/// (`pool-protocol.md` §6).
fn data_packet(format: u8, schema_text: &str, payload: &[u8]) -> Vec<u8> {
    packet::data_packet(SOURCE_MESG, format, schema_text, payload)
}

/// `@load`: reads `path` and decodes it as a value of `schema`.
pub(super) fn load(
    host: &mut dyn Host,
    budget: &mut Budget,
    schema: &Schema,
    path: &str,
) -> Result<Value, EvalError> {
    let bytes = match host.read_file(path, budget.bytes_left()) {
        Ok(bytes) => bytes,
        // More than the budget would take: refused as charging it would be.
        Err(e) if e.kind() == io::ErrorKind::FileTooLarge => {
            return Err(EvalError::limit("evaluation step limit exceeded"));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(EvalError::user(format!("@load: failed to load '{path}'")));
        }
        Err(e) => {
            return Err(EvalError::user(format!(
                "@load: failed to load '{path}': {e}"
            )))
        }
    };
    budget.charge_bytes(bytes.len())?;
    decode(schema, path, &bytes)
}

fn decode(schema: &Schema, path: &str, bytes: &[u8]) -> Result<Value, EvalError> {
    if bytes.is_empty() {
        return Err(EvalError::user(format!("@load: '{path}' is empty")));
    }
    if bytes.len() >= HEADER_LEN && bytes[..4] == PACKET_MAGIC {
        return decode_packet(schema, path, bytes);
    }
    let text = std::str::from_utf8(bytes).ok();
    let target = match schema.peel_named() {
        Schema::Optional(inner) => inner.peel_named(),
        other => other,
    };
    if let (Some(text), Schema::Str | Schema::Handle(_)) = (text, target) {
        if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'"') {
            let text = text.strip_suffix('\n').unwrap_or(text);
            let text = text.strip_suffix('\r').unwrap_or(text);
            return from_json(schema, path, &Json::String(text.to_string()));
        }
    }
    if let (Some(text), Schema::Float { .. }) = (text, target) {
        let word = text.trim();
        // `\-inf` is the reference's shell-safe spelling of `-inf`.
        let word = word.strip_prefix('\\').unwrap_or(word);
        if matches!(word, "inf" | "-inf" | "nan") {
            return from_json(schema, path, &Json::String(word.to_string()));
        }
    }
    if path.ends_with(".json") {
        return from_json_text(schema, path, bytes);
    }
    if path.ends_with(".mpk") || path.ends_with(".msgpack") {
        return from_msgpack(schema, path, bytes);
    }
    let first = bytes[0];
    let looks_like_json = matches!(
        first,
        b'\'' | b'"' | b'[' | b'{' | b't' | b'f' | b'n' | b'\t' | b'\n' | b'\r' | b' ' | b'0'
            ..=b'9' | b'-'
    );
    if (bytes.len() > 1 && looks_like_json) || (bytes.len() == 1 && first.is_ascii_digit()) {
        if let Ok(value) = from_json_text(schema, path, bytes) {
            return Ok(value);
        }
    }
    from_msgpack(schema, path, bytes)
}

fn from_json(schema: &Schema, path: &str, json: &Json) -> Result<Value, EvalError> {
    codec::from_json(schema, json)
        .map_err(|e| EvalError::user(format!("@load: cannot read '{path}': {e}")))
}

fn from_json_text(schema: &Schema, path: &str, bytes: &[u8]) -> Result<Value, EvalError> {
    let json: Json = crate::format::json::parse_bytes(bytes)
        .map_err(|e| EvalError::user(format!("@load: cannot read '{path}' as JSON: {e}")))?;
    from_json(schema, path, &json)
}

fn from_msgpack(schema: &Schema, path: &str, bytes: &[u8]) -> Result<Value, EvalError> {
    codec::msgpack_decode(schema, bytes)
        .map_err(|e| EvalError::user(format!("@load: cannot read '{path}' as msgpack: {e}")))
}

fn decode_packet(schema: &Schema, path: &str, bytes: &[u8]) -> Result<Value, EvalError> {
    let command = bytes[12];
    if command == COMMAND_STREAM || command == COMMAND_FOOTER {
        return Err(EvalError::user(format!(
            "@load: '{path}' is a stream file; streams are not supported by this server"
        )));
    }
    if command != CMD_DATA {
        return Err(EvalError::user(format!("Expected data packet in '{path}'")));
    }
    let (source, format, compression) = (bytes[13], bytes[14], bytes[15]);
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[20..24]);
    let meta_len = u32::from_le_bytes(word) as usize;
    let mut long = [0u8; 8];
    long.copy_from_slice(&bytes[24..32]);
    let payload_len = u64::from_le_bytes(long);
    let meta_end = HEADER_LEN + meta_len;
    let payload = usize::try_from(payload_len)
        .ok()
        .and_then(|len| bytes.get(meta_end..meta_end.checked_add(len)?));
    let Some(payload) = payload else {
        return Err(EvalError::packet(format!(
            "packet error: data packet in '{path}' is truncated"
        )));
    };
    if compression != 0 {
        return Err(EvalError::user(format!(
            "@load: '{path}' is compressed; compressed packets are not supported by this server"
        )));
    }
    if source != SOURCE_MESG {
        return Err(EvalError::user(format!(
            "@load: '{path}' does not hold its data inline (source {source}); not supported by this server"
        )));
    }
    if let Some(stored) = stored_schema(&bytes[HEADER_LEN..meta_end]) {
        let compatible = match schema::parse(&stored) {
            Ok(stored_schema) => compatible(&stored_schema, schema),
            Err(_) => stored == schema.to_wire_string(),
        };
        if !compatible {
            return Err(EvalError::user(format!(
                "@load: schema mismatch reading '{path}': file has schema `{stored}`, requested `{}`",
                schema.to_wire_string()
            )));
        }
    }
    let decoded = match format {
        FORMAT_VOIDSTAR => codec::voidstar_decode(schema, payload),
        FORMAT_MSGPACK => codec::msgpack_decode(schema, payload),
        _ => {
            return Err(EvalError::user(format!(
                "Unsupported format 0x{format:02x} in '{path}'"
            )))
        }
    };
    decoded.map_err(|e| EvalError::packet(format!("packet error: cannot decode '{path}': {e}")))
}

/// The SCHEMA_STRING entry of a metadata block, if any.
fn stored_schema(meta: &[u8]) -> Option<String> {
    packet::metadata_entries(meta)
        .find(|(kind, _)| *kind == METADATA_SCHEMA_STRING)
        .map(|(_, body)| {
            let text = body.split(|b| *b == 0).next().unwrap_or(&[]);
            String::from_utf8_lossy(text).into_owned()
        })
}

/// The reference's packet schema check: structural equality, except that
/// a list without a fixed length matches any length.
fn compatible(a: &Schema, b: &Schema) -> bool {
    let fields = |x: &[(String, Schema)], y: &[(String, Schema)]| {
        x.len() == y.len()
            && x.iter()
                .zip(y)
                .all(|((k1, s1), (k2, s2))| k1 == k2 && compatible(s1, s2))
    };
    match (a, b) {
        (Schema::List { len: la, elem: ea }, Schema::List { len: lb, elem: eb }) => {
            (la.is_none() || lb.is_none() || la == lb) && compatible(ea, eb)
        }
        (Schema::Tuple(x), Schema::Tuple(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| compatible(p, q))
        }
        (Schema::Record(x), Schema::Record(y)) | (Schema::Table(x), Schema::Table(y)) => {
            fields(x, y)
        }
        (Schema::Optional(x), Schema::Optional(y)) => compatible(x, y),
        (Schema::Named { name: n1, body: b1 }, Schema::Named { name: n2, body: b2 }) => {
            n1 == n2 && compatible(b1, b2)
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_layout_matches_the_protocol_example() {
        // pool-protocol.md §6.3: msgpack 42 as i4, with SCHEMA_STRING "i4".
        let packet = data_packet(FORMAT_MSGPACK, "i4", &[0x2a]);
        let mut want = vec![
            0x6d, 0xf8, 0x07, 0x07, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0x20, 0, 0, 0,
        ];
        want.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]);
        let mut meta = vec![0x6d, 0x6d, 0x68, 0x01, 0x03, 0, 0, 0, 0x69, 0x34, 0x00];
        meta.resize(32, 0);
        want.extend_from_slice(&meta);
        want.push(0x2a);
        assert_eq!(packet, want);
        assert_eq!(stored_schema(&packet[32..64]).as_deref(), Some("i4"));
    }

    #[test]
    fn schema_compatibility() {
        let check =
            |a: &str, b: &str| compatible(&schema::parse(a).unwrap(), &schema::parse(b).unwrap());
        assert!(check("af8", "a:3f8"));
        assert!(check("a:3f8", "af8"));
        assert!(!check("a:2f8", "a:3f8"));
        assert!(check("m21xj1ys", "<dict>m21xj1ys"));
        assert!(!check("m21xj1ys", "m21yj1xs"));
        assert!(!check("i4", "i8"));
        assert!(check(
            "&4Treem25valuej8childrena^4Tree",
            "&4Treem25valuej8childrena^4Tree"
        ));
    }

    #[test]
    fn metadata_walk_stops_at_padding_and_bad_sizes() {
        assert_eq!(stored_schema(&[0; 32]), None);
        let mut meta = b"mmh\x03\x02\x00\x00\x00\x05\x00".to_vec();
        meta.extend_from_slice(b"mmh\x01\x02\x00\x00\x00j\x00");
        assert_eq!(stored_schema(&meta).as_deref(), Some("j"));
        assert_eq!(stored_schema(b"mmh\x01\xff\xff\xff\xffj"), None);
    }
}
