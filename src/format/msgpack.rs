//! MessagePack with a schema: the format of FILE+MSGPACK and MESG+MSGPACK
//! results.
//!
//! Pools fall back to msgpack when shared memory is disabled and a result is
//! too large to inline (a FILE packet naming a `.mpk` file), and Julia pools
//! answer in msgpack always. Like voidstar, the encoding is not
//! self-describing: records are positional arrays, a big integer that does
//! not fit `i64` is a `bin` of little-endian limbs, and the schema says which.
//!
//! [`decode`] accepts what the reference reader accepts (any integer marker
//! for numbers, `float32` or `float64` or integers for floats, records as
//! arrays whose count is ignored) and a little more where the reference
//! fails for no good reason: unsigned 64-bit values of 2^63 and above are
//! read exactly. [`encode`] writes exactly what the reference writer
//! writes; it exists for tests and fuzzing.
//!
//! Architecture Invariant: pure; no I/O.

use std::fmt;

use crate::format::schema::Schema;
use crate::format::value::{
    big_value, check_int, describe, int_range, BigInt, EncodeError, EncodeErrorKind, Layout,
    NodeId, NodeKind, Value, MAX_VALUE_DEPTH,
};

/// An error decoding a msgpack payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// Byte position in the payload.
    pub offset: usize,
    pub kind: DecodeErrorKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeErrorKind {
    /// The payload ends mid-value.
    Truncated,
    /// A marker that the schema does not allow here.
    BadMarker {
        marker: u8,
        expected: &'static str,
    },
    /// An integer outside the schema type's range.
    OutOfRange {
        value: String,
        expected: &'static str,
    },
    /// A list whose length differs from the schema's fixed length.
    Length {
        expected: u64,
        got: u64,
    },
    /// A `bin` big integer whose byte length is not a multiple of 8, or too long.
    BadLimbs(u64),
    /// Bytes left over after the value.
    Trailing,
    /// The decoded value would exceed `voidstar::MAX_DECODED_BYTES`.
    OverBudget,
    TooDeep,
    Table,
    /// The schema itself cannot be compiled.
    Schema(String),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let DecodeErrorKind::Schema(msg) = &self.kind {
            return write!(f, "invalid schema: {msg}");
        }
        write!(f, "msgpack error at byte {}: ", self.offset)?;
        match &self.kind {
            DecodeErrorKind::Truncated => f.write_str("payload ends mid-value"),
            DecodeErrorKind::BadMarker { marker, expected } => {
                write!(f, "invalid marker 0x{marker:02x} for {expected}")
            }
            DecodeErrorKind::OutOfRange { value, expected } => {
                write!(f, "{value} is out of range for {expected}")
            }
            DecodeErrorKind::Length { expected, got } => {
                write!(f, "list has {got} items, the schema requires {expected}")
            }
            DecodeErrorKind::BadLimbs(n) => write!(
                f,
                "big integer of {n} bytes is not a whole number of 64-bit limbs"
            ),
            DecodeErrorKind::Trailing => f.write_str("trailing bytes after the value"),
            DecodeErrorKind::OverBudget => f.write_str("value exceeds the decoding size limit"),
            DecodeErrorKind::TooDeep => write!(f, "nesting exceeds {MAX_VALUE_DEPTH} levels"),
            DecodeErrorKind::Table => f.write_str("tables are not supported"),
            DecodeErrorKind::Schema(_) => Ok(()),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Decodes one value of `schema` that must span all of `bytes`.
pub fn decode(schema: &Schema, bytes: &[u8]) -> Result<Value, DecodeError> {
    decode_limited(schema, bytes, crate::format::voidstar::MAX_DECODED_BYTES)
}

/// [`decode`] with an explicit decoded-size budget (see
/// `voidstar::MAX_DECODED_BYTES`).
pub fn decode_limited(schema: &Schema, bytes: &[u8], budget: usize) -> Result<Value, DecodeError> {
    let layout = Layout::new(schema).map_err(|e| DecodeError {
        offset: 0,
        kind: DecodeErrorKind::Schema(e.0),
    })?;
    decode_limited_with(&layout, bytes, budget)
}

/// [`decode`] with an already compiled layout.
pub fn decode_with(layout: &Layout, bytes: &[u8]) -> Result<Value, DecodeError> {
    decode_limited_with(layout, bytes, crate::format::voidstar::MAX_DECODED_BYTES)
}

fn decode_limited_with(layout: &Layout, bytes: &[u8], budget: usize) -> Result<Value, DecodeError> {
    let mut reader = Reader {
        bytes,
        pos: 0,
        budget,
    };
    let value = reader.value(layout, layout.root(), 0)?;
    if reader.pos != bytes.len() {
        return Err(reader.err(DecodeErrorKind::Trailing));
    }
    Ok(value)
}

/// Encodes `value` as the reference writer (`pack_with_schema`) would.
pub fn encode(schema: &Schema, value: &Value) -> Result<Vec<u8>, EncodeError> {
    let layout = Layout::new(schema)?;
    let mut out = Vec::new();
    write_value(&layout, layout.root(), value, &mut out, 0)?;
    Ok(out)
}

struct Reader<'a> {
    bytes: &'a [u8],
    /// INVARIANT: pos <= bytes.len().
    pos: usize,
    /// Bytes of decoded value still allowed (see `voidstar::MAX_DECODED_BYTES`).
    budget: usize,
}

/// Bytes charged per decoded value (the size of a [`Value`]).
const VALUE_COST: usize = 32;

/// An integer read from any msgpack integer marker.
fn int_marker(marker: u8) -> bool {
    matches!(marker, 0x00..=0x7f | 0xe0..=0xff | 0xcc..=0xd3)
}

impl<'a> Reader<'a> {
    fn err(&self, kind: DecodeErrorKind) -> DecodeError {
        DecodeError {
            offset: self.pos,
            kind,
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        match self
            .pos
            .checked_add(n)
            .and_then(|end| self.bytes.get(self.pos..end))
        {
            Some(b) => {
                self.pos += n;
                Ok(b)
            }
            None => Err(self.err(DecodeErrorKind::Truncated)),
        }
    }

    fn peek(&self) -> Result<u8, DecodeError> {
        self.bytes
            .get(self.pos)
            .copied()
            .ok_or_else(|| self.err(DecodeErrorKind::Truncated))
    }

    fn be(&mut self, n: usize) -> Result<u64, DecodeError> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    }

    fn bad_marker<T>(&self, marker: u8, expected: &'static str) -> Result<T, DecodeError> {
        Err(self.err(DecodeErrorKind::BadMarker { marker, expected }))
    }

    /// Reads an integer of any marker as i128 (covers i64 and u64).
    fn int(&mut self, expected: &'static str) -> Result<i128, DecodeError> {
        let marker = self.peek()?;
        if !int_marker(marker) {
            return self.bad_marker(marker, expected);
        }
        self.pos += 1;
        Ok(match marker {
            0x00..=0x7f => i128::from(marker),
            0xe0..=0xff => i128::from(marker as i8),
            0xcc => i128::from(self.be(1)?),
            0xcd => i128::from(self.be(2)?),
            0xce => i128::from(self.be(4)?),
            0xcf => i128::from(self.be(8)?),
            0xd0 => i128::from(self.be(1)? as u8 as i8),
            0xd1 => i128::from(self.be(2)? as u16 as i16),
            0xd2 => i128::from(self.be(4)? as u32 as i32),
            _ => i128::from(self.be(8)? as i64),
        })
    }

    /// Reads a str header (fixstr, str8/16/32) and returns the bytes.
    fn str(&mut self, expected: &'static str) -> Result<&'a [u8], DecodeError> {
        let marker = self.peek()?;
        let len = match marker {
            0xa0..=0xbf => {
                self.pos += 1;
                u64::from(marker & 0x1f)
            }
            0xd9..=0xdb => {
                self.pos += 1;
                self.be(1 << (marker - 0xd9))?
            }
            _ => return self.bad_marker(marker, expected),
        };
        let len = usize::try_from(len).map_err(|_| self.err(DecodeErrorKind::Truncated))?;
        let bytes = self.take(len)?;
        match self.budget.checked_sub(len) {
            Some(rest) => self.budget = rest,
            None => return Err(self.err(DecodeErrorKind::OverBudget)),
        }
        Ok(bytes)
    }

    /// Reads an array header (fixarray, array16/32) and returns the count.
    fn array(&mut self, expected: &'static str) -> Result<u64, DecodeError> {
        let marker = self.peek()?;
        match marker {
            0x90..=0x9f => {
                self.pos += 1;
                Ok(u64::from(marker & 0x0f))
            }
            0xdc | 0xdd => {
                self.pos += 1;
                self.be(if marker == 0xdc { 2 } else { 4 })
            }
            _ => self.bad_marker(marker, expected),
        }
    }

    fn value(&mut self, layout: &Layout, id: NodeId, depth: usize) -> Result<Value, DecodeError> {
        if depth > MAX_VALUE_DEPTH {
            return Err(self.err(DecodeErrorKind::TooDeep));
        }
        // Every value costs its in-memory size, strings their bytes too: a
        // file of one-byte integers would otherwise grow 32-fold in memory.
        match self.budget.checked_sub(VALUE_COST) {
            Some(rest) => self.budget = rest,
            None => return Err(self.err(DecodeErrorKind::OverBudget)),
        }
        let kind = &layout.node(id).kind;
        let expected = describe(kind);
        let value = match kind {
            NodeKind::Nil => match self.peek()? {
                0xc0 => {
                    self.pos += 1;
                    Value::Nil
                }
                m => return self.bad_marker(m, expected),
            },
            NodeKind::Bool => match self.peek()? {
                m @ (0xc2 | 0xc3) => {
                    self.pos += 1;
                    Value::Bool(m == 0xc3)
                }
                m => return self.bad_marker(m, expected),
            },
            NodeKind::Int { signed, bytes } => {
                let start = self.pos;
                let v = self.int(expected)?;
                let (lo, hi) = int_range(*signed, *bytes);
                if v < lo || v > hi {
                    return Err(DecodeError {
                        offset: start,
                        kind: DecodeErrorKind::OutOfRange {
                            value: v.to_string(),
                            expected,
                        },
                    });
                }
                if *signed {
                    Value::Int(v as i64)
                } else {
                    Value::UInt(v as u64)
                }
            }
            NodeKind::Float { bytes } => {
                let marker = self.peek()?;
                let x = match marker {
                    0xca => {
                        self.pos += 1;
                        f64::from(f32::from_bits(self.be(4)? as u32))
                    }
                    0xcb => {
                        self.pos += 1;
                        f64::from_bits(self.be(8)?)
                    }
                    m if int_marker(m) => self.int(expected)? as f64,
                    m => return self.bad_marker(m, expected),
                };
                Value::Float(if *bytes == 4 { f64::from(x as f32) } else { x })
            }
            NodeKind::BigInt => {
                let marker = self.peek()?;
                if let 0xc4..=0xc6 = marker {
                    self.pos += 1;
                    let start = self.pos;
                    let len = self.be(1 << (marker - 0xc4))?;
                    if len % 8 != 0 || len / 8 > BigInt::MAX_LIMBS as u64 {
                        return Err(DecodeError {
                            offset: start,
                            kind: DecodeErrorKind::BadLimbs(len),
                        });
                    }
                    let data = self.take(len as usize)?;
                    let limbs = data
                        .chunks_exact(8)
                        .map(|c| {
                            u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])
                        })
                        .collect();
                    Value::BigInt(BigInt::from_limbs(limbs))
                } else {
                    let v = self.int(expected)?;
                    Value::BigInt(match i64::try_from(v) {
                        Ok(small) => BigInt::from_i64(small),
                        Err(_) => BigInt::from_u64(v as u64),
                    })
                }
            }
            NodeKind::Str => Value::Str(self.str(expected)?.to_vec()),
            NodeKind::Handle(_) => Value::Handle(self.str(expected)?.to_vec()),
            NodeKind::List { len, elem } => {
                let start = self.pos;
                let n = self.array(expected)?;
                if let Some(fixed) = len {
                    if n != *fixed {
                        return Err(DecodeError {
                            offset: start,
                            kind: DecodeErrorKind::Length {
                                expected: *fixed,
                                got: n,
                            },
                        });
                    }
                }
                // Every element takes at least one byte, so the remaining
                // input bounds the allocation.
                let remaining = (self.bytes.len() - self.pos) as u64;
                let mut items = Vec::with_capacity(n.min(remaining) as usize);
                for _ in 0..n {
                    items.push(self.value(layout, *elem, depth + 1)?);
                }
                Value::List(items)
            }
            NodeKind::Tuple(members) | NodeKind::Record(members) => {
                // The reference ignores the count and reads one value per
                // member; so do we.
                self.array(expected)?;
                let mut items = Vec::with_capacity(members.len());
                for m in members {
                    items.push(self.value(layout, m.node, depth + 1)?);
                }
                if matches!(kind, NodeKind::Tuple(_)) {
                    Value::Tuple(items)
                } else {
                    Value::Record(items)
                }
            }
            NodeKind::Optional(inner) => {
                if self.peek()? == 0xc0 {
                    self.pos += 1;
                    Value::Optional(None)
                } else {
                    Value::Optional(Some(Box::new(self.value(layout, *inner, depth + 1)?)))
                }
            }
            NodeKind::Table => return Err(self.err(DecodeErrorKind::Table)),
        };
        Ok(value)
    }
}

fn write_uint(out: &mut Vec<u8>, v: u64) {
    if v < 128 {
        out.push(v as u8);
    } else if v < 256 {
        out.extend_from_slice(&[0xcc, v as u8]);
    } else if v < 65536 {
        out.push(0xcd);
        out.extend_from_slice(&(v as u16).to_be_bytes());
    } else if v < 1 << 32 {
        out.push(0xce);
        out.extend_from_slice(&(v as u32).to_be_bytes());
    } else {
        out.push(0xcf);
        out.extend_from_slice(&v.to_be_bytes());
    }
}

/// The smallest encoding, as `rmp::encode::write_sint` picks it.
fn write_sint(out: &mut Vec<u8>, v: i64) {
    if v >= 0 {
        write_uint(out, v as u64);
    } else if v >= -32 {
        out.push(v as i8 as u8);
    } else if v >= -128 {
        out.extend_from_slice(&[0xd0, v as i8 as u8]);
    } else if v >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(v as i16).to_be_bytes());
    } else if v >= -(1 << 31) {
        out.push(0xd2);
        out.extend_from_slice(&(v as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&v.to_be_bytes());
    }
}

fn write_len(out: &mut Vec<u8>, len: usize, fix: (u8, usize), markers: [u8; 3]) {
    let (fix_marker, fix_max) = fix;
    if len <= fix_max {
        out.push(fix_marker | len as u8);
    } else if markers[0] != 0 && len < 256 {
        out.extend_from_slice(&[markers[0], len as u8]);
    } else if len < 65536 {
        out.push(markers[1]);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(markers[2]);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
}

fn write_str(out: &mut Vec<u8>, bytes: &[u8]) {
    write_len(out, bytes.len(), (0xa0, 31), [0xd9, 0xda, 0xdb]);
    out.extend_from_slice(bytes);
}

fn write_array_len(out: &mut Vec<u8>, len: usize) {
    write_len(out, len, (0x90, 15), [0, 0xdc, 0xdd]);
}

fn write_value(
    layout: &Layout,
    id: NodeId,
    value: &Value,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), EncodeError> {
    if depth > MAX_VALUE_DEPTH {
        return Err(EncodeError::new(EncodeErrorKind::TooDeep));
    }
    let kind = &layout.node(id).kind;
    let mismatch = || {
        EncodeError::new(EncodeErrorKind::Mismatch {
            expected: describe(kind),
            got: value.kind_name(),
        })
    };
    match (kind, value) {
        (NodeKind::Nil, Value::Nil) => out.push(0xc0),
        (NodeKind::Bool, Value::Bool(b)) => out.push(if *b { 0xc3 } else { 0xc2 }),
        (NodeKind::Int { signed, bytes }, v) => {
            let n = check_int(v, *signed, *bytes, kind)?;
            match i64::try_from(n) {
                Ok(small) => write_sint(out, small),
                Err(_) => write_uint(out, n as u64),
            }
        }
        // Floats are always written as float64, an f4 widened.
        (NodeKind::Float { bytes }, Value::Float(x)) => {
            let x = if *bytes == 4 {
                f64::from(*x as f32)
            } else {
                *x
            };
            out.push(0xcb);
            out.extend_from_slice(&x.to_bits().to_be_bytes());
        }
        (NodeKind::BigInt, v) => {
            let big = big_value(v).ok_or_else(mismatch)?;
            match big.to_i64() {
                Some(small) => write_sint(out, small),
                None => {
                    let len = big.limbs.len() * 8;
                    write_len(out, len, (0, 0), [0xc4, 0xc5, 0xc6]);
                    for limb in &big.limbs {
                        out.extend_from_slice(&limb.to_le_bytes());
                    }
                }
            }
        }
        (NodeKind::Str, Value::Str(bytes)) | (NodeKind::Handle(_), Value::Handle(bytes)) => {
            write_str(out, bytes)
        }
        (NodeKind::List { len, elem }, Value::List(items)) => {
            if let Some(n) = len {
                if items.len() as u64 != *n {
                    return Err(EncodeError::new(EncodeErrorKind::Length {
                        expected: *n,
                        got: items.len(),
                    }));
                }
            }
            write_array_len(out, items.len());
            for item in items {
                write_value(layout, *elem, item, out, depth + 1)?;
            }
        }
        (NodeKind::Tuple(members), Value::Tuple(items))
        | (NodeKind::Record(members), Value::Record(items)) => {
            if members.len() != items.len() {
                return Err(EncodeError::new(EncodeErrorKind::Members {
                    expected: members.len(),
                    got: items.len(),
                }));
            }
            write_array_len(out, members.len());
            for (m, item) in members.iter().zip(items) {
                write_value(layout, m.node, item, out, depth + 1)?;
            }
        }
        (NodeKind::Optional(_), Value::Optional(None)) => out.push(0xc0),
        (NodeKind::Optional(inner), Value::Optional(Some(v))) => {
            write_value(layout, *inner, v, out, depth + 1)?
        }
        (NodeKind::Table, _) => return Err(EncodeError::new(EncodeErrorKind::Table)),
        _ => return Err(mismatch()),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::schema::parse;
    use crate::format::value::{from_json, to_json};

    fn hex(text: &str) -> Vec<u8> {
        let clean: String = text.chars().filter(|c| c.is_ascii_hexdigit()).collect();
        (0..clean.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&clean[i..i + 2], 16).unwrap())
            .collect()
    }

    fn json_of(schema: &Schema, v: &Value) -> String {
        let mut out = String::new();
        to_json(schema, v, &mut out).unwrap();
        out
    }

    /// Encodes `json` as `schema`, compares with the expected bytes, and
    /// decodes them back to the same JSON.
    #[track_caller]
    fn check(schema: &str, json: &str, expected: &str) {
        let schema = parse(schema).unwrap();
        let v = from_json(&schema, &serde_json::from_str(json).unwrap(), "x").unwrap();
        let bytes = encode(&schema, &v).unwrap();
        assert_eq!(bytes, hex(expected), "{json}");
        let back = decode(&schema, &bytes).unwrap();
        assert_eq!(json_of(&schema, &back), json_of(&schema, &v), "{json}");
    }

    #[test]
    fn spec_examples_are_byte_identical() {
        check(
            "m36tmpDirsanumThreadsjcremoveCachesb",
            r#"{"tmpDir":"/t","numThreads":4,"removeCaches":true}"#,
            "93 a2 2f 74 04 c3",
        );
        check("t2i4s", r#"[1,"x"]"#, "92 01 a1 78");
        check(
            "am21ai11bi1",
            r#"[{"a":1,"b":2},{"a":3,"b":4}]"#,
            "92 92 01 02 92 03 04",
        );
        check(
            "m21pt2i1i41q?m11xb",
            r#"{"p":[1,2],"q":null}"#,
            "92 92 01 02 c0",
        );
        check(
            "&4Treem25valuej8childrena^4Tree",
            r#"{"value":1,"children":[{"value":2,"children":[]}]}"#,
            "92 01 91 92 02 90",
        );
        check(
            "&4Trie<dict>m23val?j4subsat2s^4Trie",
            r#"{"val":null,"subs":[["L",{"val":0,"subs":[]}]]}"#,
            "92 c0 91 92 a1 4c 92 00 90",
        );
        check("u2", "300", "cd 01 2c");
        check("i1", "-3", "fd");
        check("f4", "1.5", "cb 3f f8 00 00 00 00 00 00");
        check("as", r#"["ab","c"]"#, "92 a2 61 62 a1 63");
        check(
            "j",
            "18446744073709551616",
            "c4 10 00 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00",
        );
        check("j", "-129", "d1 ff 7f");
        check(
            "j",
            "9223372036854775808",
            "c4 10 00 00 00 00 00 00 00 80 00 00 00 00 00 00 00 00",
        );
        check("u8", "18446744073709551615", "cf ff ff ff ff ff ff ff ff");
        check("i8", "-9223372036854775808", "d3 80 00 00 00 00 00 00 00");
        check("i4", "200", "cc c8");
        check("i4", "-40000", "d2 ff ff 63 c0");
        check("z", "null", "c0");
        check("b", "false", "c2");
        check("?j", "null", "c0");
        check("F", r#""/p""#, "a2 2f 70");
        check(
            "s",
            &format!("\"{}\"", "x".repeat(40)),
            &format!("d9 28 {}", "78 ".repeat(40)),
        );
        check(
            "ai1",
            &format!("[{}]", vec!["0"; 16].join(",")),
            &format!("dc 00 10 {}", "00 ".repeat(16)),
        );
    }

    #[test]
    fn seeds_round_trip() {
        for (schema_text, json) in crate::format::voidstar::tests::SEEDS {
            let schema = parse(schema_text).unwrap();
            let v = from_json(&schema, &serde_json::from_str(json).unwrap(), "x").unwrap();
            let bytes = encode(&schema, &v).unwrap();
            let back =
                decode(&schema, &bytes).unwrap_or_else(|e| panic!("{schema_text} {json}: {e}"));
            assert_eq!(
                json_of(&schema, &back),
                json_of(&schema, &v),
                "{schema_text}"
            );
            assert_eq!(encode(&schema, &back).unwrap(), bytes);
        }
    }

    #[test]
    fn lenient_reads() {
        let read = |schema: &str, bytes: &str| {
            let schema = parse(schema).unwrap();
            json_of(&schema, &decode(&schema, &hex(bytes)).unwrap())
        };
        // Floats from float32 and from integers.
        assert_eq!(read("f8", "ca 3f c0 00 00"), "1.5");
        assert_eq!(read("f8", "d0 fe"), "-2.0");
        assert_eq!(read("f4", "cf 00 00 00 00 01 00 00 01"), "16777216.0");
        // Any integer marker for any integer type, range-checked.
        assert_eq!(read("u1", "d3 00 00 00 00 00 00 00 07"), "7");
        assert_eq!(
            read("j", "cf ff ff ff ff ff ff ff ff"),
            "18446744073709551615"
        );
        // Records ignore the array count.
        assert_eq!(read("m11xj", "90 05"), "{\"x\":5}");
        // Non-minimal limbs and empty bin.
        assert_eq!(
            read("j", "c4 10 05 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"),
            "5"
        );
        assert_eq!(read("j", "c4 00"), "0");
        assert_eq!(read("s", "db 00 00 00 01 41"), "\"A\"");
        assert_eq!(read("ai1", "dd 00 00 00 01 05"), "[5]");
    }

    #[track_caller]
    fn check_err(schema: &str, bytes: &str, msg: &str) {
        match decode(&parse(schema).unwrap(), &hex(bytes)) {
            Ok(v) => panic!("decoded {v:?}"),
            Err(e) => assert_eq!(e.to_string(), msg),
        }
    }

    #[test]
    fn errors_name_the_byte() {
        check_err("j", "", "msgpack error at byte 0: payload ends mid-value");
        check_err(
            "s",
            "a5 61",
            "msgpack error at byte 1: payload ends mid-value",
        );
        check_err(
            "s",
            "c4 01 61",
            "msgpack error at byte 0: invalid marker 0xc4 for a string",
        );
        check_err(
            "b",
            "01",
            "msgpack error at byte 0: invalid marker 0x01 for a boolean",
        );
        check_err(
            "z",
            "c2",
            "msgpack error at byte 0: invalid marker 0xc2 for null",
        );
        check_err(
            "i1",
            "cc c8",
            "msgpack error at byte 0: 200 is out of range for an 8-bit signed integer",
        );
        check_err(
            "u8",
            "ff",
            "msgpack error at byte 0: -1 is out of range for a 64-bit unsigned integer",
        );
        check_err(
            "a:2i1",
            "91 01",
            "msgpack error at byte 0: list has 1 items, the schema requires 2",
        );
        check_err(
            "j",
            "c4 03 01 02 03",
            "msgpack error at byte 1: big integer of 3 bytes is not a whole number of 64-bit limbs",
        );
        check_err(
            "j",
            "01 02",
            "msgpack error at byte 1: trailing bytes after the value",
        );
        check_err(
            "T",
            "90",
            "msgpack error at byte 0: tables are not supported",
        );
        check_err(
            "ai1",
            "dd ff ff ff ff 01",
            "msgpack error at byte 6: payload ends mid-value",
        );
        check_err(
            "f8",
            "a1 78",
            "msgpack error at byte 0: invalid marker 0xa1 for a 64-bit float",
        );
        let deep = format!("{}90", "91 ".repeat(300));
        check_err(
            &format!("{}i1", "a".repeat(120)),
            &deep,
            "msgpack error at byte 120: invalid marker 0x91 for an 8-bit signed integer",
        );
        let err = decode_limited(&parse("ai1").unwrap(), &hex("93 01 02 03"), 100).unwrap_err();
        assert_eq!(
            err.to_string(),
            "msgpack error at byte 3: value exceeds the decoding size limit"
        );
        let err = decode_limited(&parse("s").unwrap(), &hex("a3 61 62 63"), 34).unwrap_err();
        assert_eq!(
            err.to_string(),
            "msgpack error at byte 4: value exceeds the decoding size limit"
        );
        let schema = parse("&4Treem25valuej8childrena^4Tree").unwrap();
        let deep = format!("{}90", "92 01 91 ".repeat(200));
        let err = decode(&schema, &hex(&deep)).unwrap_err();
        assert_eq!(err.kind, DecodeErrorKind::TooDeep);
    }
}
