//! Voidstar straight to JSON text, without building a [`Value`] first.
//!
//! A large result is read once, from a flat blob or from shared memory, and
//! written once, as the JSON text the client gets. Going through [`Value`]
//! costs tens of bytes per element (a list of 4 million `Int`s is some 200
//! MB of values for 31 MB of JSON); this writer needs nothing but the text.
//! The output is byte-identical to [`super::decode`] followed by
//! [`crate::format::value::to_json`], with the same checks on the input.

use std::fmt::Write as _;

use super::{DecodeError, DecodeErrorKind, Memory, Reader, MAX_DECODED_BYTES, RELNULL};
use crate::format::json;
use crate::format::schema::Schema;
#[cfg(doc)]
use crate::format::value::Value;
use crate::format::value::{BigInt, Layout, NodeId, NodeKind, MAX_VALUE_DEPTH};

/// Appends the compact JSON text of the value whose head `root` points at.
///
/// The text may not exceed [`MAX_DECODED_BYTES`] (pointers may alias, so a
/// small input could otherwise describe a huge text); on any error `out`
/// holds a partial text, to be discarded.
pub fn to_json(
    schema: &Schema,
    mem: &dyn Memory,
    root: i64,
    out: &mut String,
) -> Result<(), DecodeError> {
    to_json_limited(schema, mem, root, out, MAX_DECODED_BYTES)
}

/// [`to_json`] with an explicit limit on the length of `out`.
pub fn to_json_limited(
    schema: &Schema,
    mem: &dyn Memory,
    root: i64,
    out: &mut String,
    limit: usize,
) -> Result<(), DecodeError> {
    let layout =
        Layout::new(schema).map_err(|e| DecodeError::new(0, DecodeErrorKind::Schema(e.0)))?;
    to_json_limited_with(&layout, mem, root, out, limit)
}

/// [`to_json`] with an already compiled layout.
pub fn to_json_with(
    layout: &Layout,
    mem: &dyn Memory,
    root: i64,
    out: &mut String,
) -> Result<(), DecodeError> {
    to_json_limited_with(layout, mem, root, out, MAX_DECODED_BYTES)
}

fn to_json_limited_with(
    layout: &Layout,
    mem: &dyn Memory,
    root: i64,
    out: &mut String,
    limit: usize,
) -> Result<(), DecodeError> {
    let region = mem.resolve(root)?;
    let mut writer = JsonWriter {
        reader: Reader {
            layout,
            mem,
            budget: usize::MAX,
        },
        out,
        limit,
    };
    writer.write(layout.root(), region, root as u64, 0, 0)
}

/// [`to_json`] of a flat blob (a MESG+VOIDSTAR payload).
pub fn flat_to_json(schema: &Schema, blob: &[u8], out: &mut String) -> Result<(), DecodeError> {
    to_json(schema, &super::Flat(blob), 0, out)
}

/// [`flat_to_json`] with an already compiled layout.
pub fn flat_to_json_with(
    layout: &Layout,
    blob: &[u8],
    out: &mut String,
) -> Result<(), DecodeError> {
    to_json_with(layout, &super::Flat(blob), 0, out)
}

/// How many bytes of list element heads are read before they are handed to
/// [`Memory::done_with`].
const RELEASE_CHUNK: usize = 1 << 20;

struct JsonWriter<'a, 'o> {
    reader: Reader<'a>,
    out: &'o mut String,
    limit: usize,
}

impl<'a> JsonWriter<'a, '_> {
    fn check_limit(&self, at: u64) -> Result<(), DecodeError> {
        if self.out.len() > self.limit {
            return Err(DecodeError::new(at, DecodeErrorKind::OverBudget));
        }
        Ok(())
    }

    fn write(
        &mut self,
        id: NodeId,
        region: &'a [u8],
        base: u64,
        pos: usize,
        depth: usize,
    ) -> Result<(), DecodeError> {
        let at = base.wrapping_add(pos as u64);
        if depth > MAX_VALUE_DEPTH {
            return Err(DecodeError::new(at, DecodeErrorKind::TooDeep));
        }
        let layout = self.reader.layout;
        let node = layout.node(id);
        match &node.kind {
            NodeKind::Nil => self.out.push_str("null"),
            NodeKind::Bool => {
                let b = Reader::bytes(region, base, pos, 1)?[0] != 0;
                self.out.push_str(if b { "true" } else { "false" });
            }
            NodeKind::Int { signed, bytes } => {
                let b = Reader::bytes(region, base, pos, *bytes as usize)?;
                let mut le = [0u8; 8];
                le[..b.len()].copy_from_slice(b);
                if *signed {
                    let shift = 64 - 8 * u32::from(*bytes);
                    let v = (i64::from_le_bytes(le) << shift) >> shift;
                    let _ = write!(self.out, "{v}");
                } else {
                    let _ = write!(self.out, "{}", u64::from_le_bytes(le));
                }
            }
            NodeKind::Float { bytes } => {
                let x = if *bytes == 4 {
                    let b = Reader::bytes(region, base, pos, 4)?;
                    f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                } else {
                    f64::from_bits(Reader::u64_at(region, base, pos)?)
                };
                if x.is_nan() {
                    self.out.push_str("\"nan\"");
                } else if x.is_infinite() {
                    self.out
                        .push_str(if x > 0.0 { "\"inf\"" } else { "\"-inf\"" });
                } else if *bytes == 4 {
                    json::write_f32(self.out, x as f32);
                } else {
                    json::write_f64(self.out, x);
                }
            }
            NodeKind::BigInt => {
                let n = Reader::u64_at(region, base, pos)?;
                let word = Reader::u64_at(region, base, pos + 8)?;
                match n {
                    0 => self.out.push('0'),
                    1 => {
                        let _ = write!(self.out, "{}", word as i64);
                    }
                    n if n > BigInt::MAX_LIMBS as u64 => {
                        return Err(DecodeError::new(at, DecodeErrorKind::TooLarge(n)))
                    }
                    n => {
                        let data = self.reader.data(word as i64, 8 * n)?;
                        let limbs = data
                            .chunks_exact(8)
                            .map(|c| {
                                u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])
                            })
                            .collect();
                        self.out.push_str(&BigInt::from_limbs(limbs).to_decimal());
                    }
                }
            }
            NodeKind::Str => {
                let size = Reader::u64_at(region, base, pos)?;
                let ptr = Reader::u64_at(region, base, pos + 8)?;
                if size == 0 {
                    // Never dereference the data pointer of an empty string.
                    self.out.push_str("\"\"");
                } else {
                    let bytes = self.reader.data(ptr as i64, size)?;
                    json::write_str(self.out, &String::from_utf8_lossy(bytes));
                }
            }
            NodeKind::List { len, elem } => {
                let size = Reader::u64_at(region, base, pos)?;
                let ptr = Reader::u64_at(region, base, pos + 8)?;
                if let Some(n) = len {
                    if size != *n {
                        return Err(DecodeError::new(
                            at,
                            DecodeErrorKind::Length {
                                expected: *n,
                                got: size,
                            },
                        ));
                    }
                }
                if size == 0 {
                    self.out.push_str("[]");
                    return Ok(());
                }
                let count = usize::try_from(size)
                    .map_err(|_| DecodeError::new(at, DecodeErrorKind::TooLarge(size)))?;
                // Every element takes at least one byte of text.
                if count > self.limit {
                    return Err(DecodeError::new(at, DecodeErrorKind::OverBudget));
                }
                let width = layout.node(*elem).width;
                let Some(data_len) = count.checked_mul(width) else {
                    return Err(DecodeError::new(at, DecodeErrorKind::TooLarge(size)));
                };
                let data = if width == 0 {
                    &[][..]
                } else {
                    self.reader.data(ptr as i64, data_len as u64)?
                };
                self.out.push('[');
                let mut released = 0;
                for i in 0..count {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.write(*elem, data, ptr, i * width, depth + 1)?;
                    // Zero-width elements still print: the limit bounds them.
                    self.check_limit(at)?;
                    // The element heads behind us are done with: a large
                    // list need not stay in memory beside its text.
                    let read = (i + 1) * width;
                    if read - released >= RELEASE_CHUNK {
                        self.reader
                            .mem
                            .done_with(ptr.wrapping_add(released as u64) as i64, read - released);
                        released = read;
                    }
                }
                self.out.push(']');
            }
            NodeKind::Tuple(members) => {
                self.out.push('[');
                for (i, m) in members.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.write(m.node, region, base, pos + m.offset, depth + 1)?;
                }
                self.out.push(']');
            }
            NodeKind::Record(members) => {
                self.out.push('{');
                for (i, m) in members.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    json::write_str(self.out, &m.key);
                    self.out.push(':');
                    self.write(m.node, region, base, pos + m.offset, depth + 1)?;
                }
                self.out.push('}');
            }
            NodeKind::Optional(inner) => {
                let ptr = Reader::u64_at(region, base, pos)? as i64;
                if ptr == RELNULL {
                    self.out.push_str("null");
                } else {
                    let inner_region = self.reader.mem.resolve(ptr)?;
                    self.write(*inner, inner_region, ptr as u64, 0, depth + 1)?;
                }
            }
            NodeKind::Handle(_) => {
                let tag = Reader::bytes(region, base, pos, 1)?[0];
                let payload = Reader::u64_at(region, base, pos + 8)?;
                match tag {
                    0 if payload == u64::MAX => self.out.push_str("\"\""),
                    0 => {
                        let len = u64::from_le_bytes(
                            self.reader
                                .data(payload as i64, 8)?
                                .try_into()
                                .unwrap_or([0; 8]),
                        );
                        let with_len = self.reader.data(payload as i64, len.saturating_add(8))?;
                        json::write_str(self.out, &String::from_utf8_lossy(&with_len[8..]));
                    }
                    1 => return Err(DecodeError::new(at, DecodeErrorKind::HandleForm)),
                    t => return Err(DecodeError::new(at, DecodeErrorKind::BadHandleTag(t))),
                }
            }
            NodeKind::Table => return Err(DecodeError::new(at, DecodeErrorKind::Table)),
        }
        self.check_limit(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::schema;
    use crate::format::value::{self, Value};
    use crate::format::voidstar::{decode_flat, encode_flat};

    /// Encodes `value`, then checks that rendering the blob directly gives
    /// the same text as decoding it and rendering the value.
    #[track_caller]
    fn check(schema_text: &str, value: Value) {
        let schema = schema::parse(schema_text).unwrap();
        let blob = encode_flat(&schema, &value).unwrap();
        let decoded = decode_flat(&schema, &blob).unwrap();
        let mut expected = String::new();
        value::to_json(&schema, &decoded, &mut expected).unwrap();
        let mut direct = String::new();
        flat_to_json(&schema, &blob, &mut direct).unwrap();
        assert_eq!(direct, expected, "{schema_text}");
    }

    #[test]
    fn direct_rendering_matches_decode_then_render() {
        check("z", Value::Nil);
        check("b", Value::Bool(true));
        check("i1", Value::Int(-5));
        check("u8", Value::UInt(u64::MAX));
        check("f4", Value::Float(0.1));
        check("f8", Value::Float(f64::NAN));
        check("f8", Value::Float(f64::NEG_INFINITY));
        check("f8", Value::Float(2.0));
        check("j", Value::BigInt(BigInt::from_i64(-7)));
        check("j", Value::BigInt(BigInt::zero()));
        check(
            "j",
            Value::BigInt(BigInt::from_limbs(vec![u64::MAX, u64::MAX, 5])),
        );
        check("s", Value::Str(b"a \"quoted\"\n\xff".to_vec()));
        check("s", Value::Str(Vec::new()));
        check(
            "aj",
            Value::List(
                (0..1000)
                    .map(|i| Value::BigInt(BigInt::from_i64(i)))
                    .collect(),
            ),
        );
        check(
            "as",
            Value::List(vec![Value::Str(b"x".to_vec()), Value::Str(Vec::new())]),
        );
        check("az", Value::List(vec![Value::Nil; 3]));
        check(
            "t2sj",
            Value::Tuple(vec![
                Value::Str(b"k".to_vec()),
                Value::BigInt(BigInt::from_i64(1)),
            ]),
        );
        check(
            "m21xj1ys",
            Value::Record(vec![
                Value::BigInt(BigInt::from_i64(3)),
                Value::Str(b"y".to_vec()),
            ]),
        );
        check("?s", Value::Optional(None));
        check(
            "?s",
            Value::Optional(Some(Box::new(Value::Str(b"v".to_vec())))),
        );
        check("F", Value::Handle(b"/tmp/x".to_vec()));
        check(
            "a:2f8",
            Value::List(vec![Value::Float(1.5), Value::Float(-0.0)]),
        );
        let leaf = |v: i64| {
            Value::Record(vec![
                Value::BigInt(BigInt::from_i64(v)),
                Value::List(Vec::new()),
            ])
        };
        check(
            "&4Treem25valuej8childrena^4Tree",
            Value::Record(vec![
                Value::BigInt(BigInt::from_i64(0)),
                Value::List(vec![leaf(1), leaf(2)]),
            ]),
        );
    }

    #[test]
    fn errors_match_the_decoder() {
        let schema = schema::parse("as").unwrap();
        let blob = encode_flat(&schema, &Value::List(vec![Value::Str(b"hello".to_vec())])).unwrap();
        for cut in 0..blob.len() {
            let mut out = String::new();
            let direct = flat_to_json(&schema, &blob[..cut], &mut out).err();
            let decoded = decode_flat(&schema, &blob[..cut]).err();
            assert_eq!(direct, decoded, "cut at {cut}");
        }
    }

    /// Two shared-memory volumes: relptrs carry the volume in bits 48..63.
    struct Volumes(Vec<(u16, Vec<u8>)>);

    impl Memory for Volumes {
        fn resolve(&self, relptr: i64) -> Result<&[u8], DecodeError> {
            let volume = (relptr >> 48) as u16;
            let offset = (relptr as u64 & crate::format::voidstar::OFFSET_MASK) as usize;
            self.0
                .iter()
                .find(|(v, _)| *v == volume)
                .and_then(|(_, bytes)| bytes.get(offset..))
                .ok_or(DecodeError::new(
                    relptr as u64,
                    DecodeErrorKind::BadPointer(relptr),
                ))
        }
    }

    #[test]
    fn relptrs_across_volumes_are_followed() {
        // A list of two strings: its head in volume 1, the element heads in
        // volume 5, the string bytes back in volume 1.
        let rel = |volume: u64, offset: u64| (volume << 48 | offset).to_le_bytes();
        let mut one = vec![0u8; 64];
        one[..8].copy_from_slice(&2u64.to_le_bytes());
        one[8..16].copy_from_slice(&rel(5, 0));
        one[32..37].copy_from_slice(b"hello");
        one[40..42].copy_from_slice(b"hi");
        let mut five = vec![0u8; 32];
        five[..8].copy_from_slice(&5u64.to_le_bytes());
        five[8..16].copy_from_slice(&rel(1, 32));
        five[16..24].copy_from_slice(&2u64.to_le_bytes());
        five[24..32].copy_from_slice(&rel(1, 40));
        let mem = Volumes(vec![(1, one), (5, five)]);
        let schema = schema::parse("as").unwrap();
        let mut out = String::new();
        to_json(&schema, &mem, 1 << 48, &mut out).unwrap();
        assert_eq!(out, r#"["hello","hi"]"#);
        let value = crate::format::voidstar::decode(&schema, &mem, 1 << 48).unwrap();
        let mut expected = String::new();
        value::to_json(&schema, &value, &mut expected).unwrap();
        assert_eq!(out, expected);
    }

    #[test]
    fn the_text_is_limited() {
        let schema = schema::parse("az").unwrap();
        // A header claiming 10^12 zero-width elements.
        let mut blob = vec![0u8; 16];
        blob[..8].copy_from_slice(&1_000_000_000_000u64.to_le_bytes());
        let mut out = String::new();
        let err = to_json_limited(
            &schema,
            &crate::format::voidstar::Flat(&blob),
            0,
            &mut out,
            1000,
        )
        .unwrap_err();
        assert_eq!(err.kind, DecodeErrorKind::OverBudget);
    }
}
