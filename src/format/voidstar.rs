//! The voidstar binary format: flat blobs out, flat blobs and shared memory in.
//!
//! Voidstar is the C-struct-like layout every Morloc pool reads natively: each
//! value has a fixed-size head (see [`Layout`]) and variable-size parts live
//! behind relative pointers. We send every argument as a *flat blob* (a
//! MESG+VOIDSTAR payload whose relptrs are offsets from the blob start), and
//! read results either from a flat blob or straight out of a shared-memory
//! volume (RPTR+VOIDSTAR).
//!
//! [`encode_flat`] is byte-identical to the reference writer
//! (`flatten_to_buffer`): the same cursor walk, the same alignments (64 for
//! the data of lists of fixed-size numbers), and a buffer whose length is the
//! reference's upper-bound size function ([`flat_size`]) with zero padding.
//!
//! [`decode`] reads through the [`Memory`] trait, so the same code reads a blob
//! ([`Flat`]) and shared memory (implemented by the caller). Input is
//! untrusted: every access is bounds-checked, list capacities are bounded by
//! the bytes actually present, a budget caps the size of the decoded value
//! (pointers may alias, so a small input can otherwise describe a huge
//! value), and nesting is limited to [`MAX_VALUE_DEPTH`].
//!
//! Architecture Invariant: pure; no I/O. Shared memory is reached only
//! through a caller-supplied [`Memory`].

use std::fmt;

use crate::format::schema::Schema;
use crate::format::value::{
    big_value, check_int, describe, BigInt, EncodeError, EncodeErrorKind, Layout, NodeId, NodeKind,
    Value, MAX_VALUE_DEPTH,
};

mod json;
pub mod text;

pub use json::{flat_to_json, flat_to_json_with, to_json, to_json_limited, to_json_with};

/// The relptr that means "no value" (absent optional, empty path).
pub const RELNULL: i64 = -1;

/// Bits of a relptr that hold the byte offset; the bits above hold the
/// shared-memory volume index and are zero in flat blobs.
pub const OFFSET_MASK: u64 = 0x0000_FFFF_FFFF_FFFF;

/// The decoded-value budget of [`decode`]: roughly bytes of memory the
/// result may occupy (each value counts 32 bytes plus its string bytes and
/// limbs).
pub const MAX_DECODED_BYTES: usize = 1 << 30;

/// Bytes charged per decoded value (the size of a [`Value`]).
const VALUE_COST: usize = 32;

/// Where relptrs point: a flat blob, or shared-memory volumes.
pub trait Memory {
    /// The bytes from the address `relptr` denotes to the end of its region
    /// (blob or volume data region). Errors for pointers that do not resolve.
    fn resolve(&self, relptr: i64) -> Result<&[u8], DecodeError>;

    /// A hint that the `len` bytes at `relptr` have been read and will
    /// probably not be read again, so memory backing them may be given back
    /// (reading them again must still work). Does nothing by default.
    fn done_with(&self, _relptr: i64, _len: usize) {}
}

/// A flat blob: relptrs are byte offsets from its start (volume bits are
/// masked off, as the pools do).
#[derive(Clone, Copy, Debug)]
pub struct Flat<'a>(pub &'a [u8]);

impl Memory for Flat<'_> {
    fn resolve(&self, relptr: i64) -> Result<&[u8], DecodeError> {
        let offset = relptr as u64 & OFFSET_MASK;
        match usize::try_from(offset).ok().and_then(|o| self.0.get(o..)) {
            Some(bytes) => Ok(bytes),
            None => Err(DecodeError::new(
                relptr as u64,
                DecodeErrorKind::BadPointer(relptr),
            )),
        }
    }
}

/// Voidstar data that cannot be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// Where the problem is: a relptr-style location (volume bits above bit
    /// 48, byte offset below).
    pub offset: u64,
    pub kind: DecodeErrorKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeErrorKind {
    /// A read runs past the end of the region.
    Truncated {
        needed: u64,
    },
    /// A relptr that does not resolve.
    BadPointer(i64),
    /// A list whose length differs from the schema's fixed length.
    Length {
        expected: u64,
        got: u64,
    },
    /// A length or limb count too large for the data present or the limits.
    TooLarge(u64),
    /// The decoded value would exceed [`MAX_DECODED_BYTES`].
    OverBudget,
    TooDeep,
    /// A stream handle with a tag other than PATH (0) or HANDLE (1).
    BadHandleTag(u8),
    /// A stream handle in HANDLE form: a slot in a registry we do not have.
    HandleForm,
    Table,
    /// The schema itself cannot be compiled.
    Schema(String),
}

impl DecodeError {
    pub fn new(offset: u64, kind: DecodeErrorKind) -> DecodeError {
        DecodeError { offset, kind }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let DecodeErrorKind::Schema(msg) = &self.kind {
            return write!(f, "invalid schema: {msg}");
        }
        let volume = self.offset >> 48;
        let offset = self.offset & OFFSET_MASK;
        if volume == 0 {
            write!(f, "invalid voidstar data at byte {offset}: ")?;
        } else {
            write!(
                f,
                "invalid voidstar data at volume {} byte {offset}: ",
                volume & 0x7fff
            )?;
        }
        match &self.kind {
            DecodeErrorKind::Truncated { needed } => {
                write!(f, "needs {needed} bytes past the end of the region")
            }
            DecodeErrorKind::BadPointer(p) => {
                write!(f, "pointer 0x{:016x} does not resolve", *p as u64)
            }
            DecodeErrorKind::Length { expected, got } => {
                write!(f, "list has {got} items, the schema requires {expected}")
            }
            DecodeErrorKind::TooLarge(n) => write!(f, "length {n} is too large"),
            DecodeErrorKind::OverBudget => f.write_str("value exceeds the decoding size limit"),
            DecodeErrorKind::TooDeep => write!(f, "nesting exceeds {MAX_VALUE_DEPTH} levels"),
            DecodeErrorKind::BadHandleTag(t) => write!(f, "unknown stream handle tag {t}"),
            DecodeErrorKind::HandleForm => {
                f.write_str("stream handle is a registry slot, not a path")
            }
            DecodeErrorKind::Table => f.write_str("tables are not supported"),
            DecodeErrorKind::Schema(_) => Ok(()),
        }
    }
}

impl std::error::Error for DecodeError {}

// ---------------------------------------------------------------------------
// Encoding.

/// Encodes `value` as a flat blob, byte for byte as the reference writer
/// would flatten the same value parsed from JSON.
pub fn encode_flat(schema: &Schema, value: &Value) -> Result<Vec<u8>, EncodeError> {
    let layout = Layout::new(schema)?;
    encode_flat_with(&layout, value)
}

/// [`encode_flat`] with an already compiled layout.
pub fn encode_flat_with(layout: &Layout, value: &Value) -> Result<Vec<u8>, EncodeError> {
    let root = layout.root();
    // The size walk also checks that the value matches the schema, so the
    // writer below cannot fail half way through.
    let total = size_of(layout, root, value, 0)?;
    let width = layout.node(root).width;
    let mut writer = Writer {
        layout,
        buf: vec![0; total.max(width)],
        cursor: width,
    };
    writer.head(root, value, 0)?;
    writer.tail(root, value, 0, 0)?;
    // The reference sizes the buffer with `flat_size` and relies on it being
    // an upper bound. For a non-empty file path behind a misaligned cursor
    // it is not (the path's 8-byte alignment is not counted); the reference
    // would fail there, we grow the buffer instead.
    Ok(writer.buf)
}

/// The reference's upper-bound size of the flat blob of `value`
/// (`calc_voidstar_size`): the head plus out-of-line data plus worst-case
/// alignment padding. Blobs are exactly this long.
pub fn flat_size(schema: &Schema, value: &Value) -> Result<usize, EncodeError> {
    let layout = Layout::new(schema)?;
    size_of(&layout, layout.root(), value, 0)
}

fn mismatch(kind: &NodeKind, value: &Value) -> EncodeError {
    EncodeError::new(EncodeErrorKind::Mismatch {
        expected: describe(kind),
        got: value.kind_name(),
    })
}

fn size_of(layout: &Layout, id: NodeId, value: &Value, depth: usize) -> Result<usize, EncodeError> {
    if depth > MAX_VALUE_DEPTH {
        return Err(EncodeError::new(EncodeErrorKind::TooDeep));
    }
    let node = layout.node(id);
    let size = match (&node.kind, value) {
        (NodeKind::Nil, Value::Nil)
        | (NodeKind::Bool, Value::Bool(_))
        | (NodeKind::Float { .. }, Value::Float(_)) => node.width,
        (NodeKind::Int { signed, bytes }, v) => {
            check_int(v, *signed, *bytes, &node.kind)?;
            node.width
        }
        (NodeKind::BigInt, v) => {
            let n = big_value(v)
                .ok_or_else(|| mismatch(&node.kind, v))?
                .limbs
                .len();
            if n <= 1 {
                16
            } else {
                16 + 7 + 8 * n
            }
        }
        (NodeKind::Str, Value::Str(bytes)) => 16 + bytes.len(),
        (NodeKind::Handle(_), Value::Handle(path)) => {
            if path.is_empty() {
                16
            } else {
                16 + 8 + path.len()
            }
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
            if items.is_empty() {
                16
            } else {
                let elem_node = layout.node(*elem);
                let mut size = 16 + layout.list_data_align(*elem) - 1;
                if elem_node.fixed {
                    for item in items {
                        size_of(layout, *elem, item, depth + 1)?;
                    }
                    size += items.len() * elem_node.width;
                } else {
                    for item in items {
                        size += size_of(layout, *elem, item, depth + 1)?;
                    }
                }
                size
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
            let mut size = node.width;
            for (m, item) in members.iter().zip(items) {
                let member_size = size_of(layout, m.node, item, depth + 1)?;
                size += member_size.saturating_sub(layout.node(m.node).width);
            }
            size
        }
        (NodeKind::Optional(_), Value::Optional(None)) => 8,
        (NodeKind::Optional(inner), Value::Optional(Some(v))) => {
            8 + layout.node(*inner).align - 1 + size_of(layout, *inner, v, depth + 1)?
        }
        (NodeKind::Table, _) => return Err(EncodeError::new(EncodeErrorKind::Table)),
        (kind, v) => return Err(mismatch(kind, v)),
    };
    Ok(size)
}

struct Writer<'a> {
    layout: &'a Layout,
    buf: Vec<u8>,
    /// Where the next out-of-line data goes.
    cursor: usize,
}

fn align_up(n: usize, align: usize) -> usize {
    n.div_ceil(align) * align
}

impl Writer<'_> {
    fn put(&mut self, pos: usize, bytes: &[u8]) {
        let end = pos + bytes.len();
        if end > self.buf.len() {
            self.buf.resize(end, 0);
        }
        self.buf[pos..end].copy_from_slice(bytes);
    }

    fn put_u64(&mut self, pos: usize, v: u64) {
        self.put(pos, &v.to_le_bytes());
    }

    /// Writes the inline part of a value at `pos` (what the reference copies
    /// from its shared-memory head before fixing up pointers).
    fn head(&mut self, id: NodeId, value: &Value, pos: usize) -> Result<(), EncodeError> {
        let layout = self.layout;
        let node = layout.node(id);
        match (&node.kind, value) {
            (NodeKind::Nil, _) => {}
            (NodeKind::Bool, Value::Bool(b)) => self.put(pos, &[u8::from(*b)]),
            (NodeKind::Int { signed, bytes }, v) => {
                let n = check_int(v, *signed, *bytes, &node.kind)?;
                let le = (n as i64).to_le_bytes();
                self.put(pos, &le[..*bytes as usize]);
            }
            (NodeKind::Float { bytes: 4 }, Value::Float(x)) => {
                self.put(pos, &(*x as f32).to_le_bytes())
            }
            (NodeKind::Float { .. }, Value::Float(x)) => self.put(pos, &x.to_le_bytes()),
            (NodeKind::BigInt, v) => {
                let big = big_value(v).ok_or_else(|| mismatch(&node.kind, v))?;
                self.put_u64(pos, big.limbs.len() as u64);
                if let [single] = big.limbs.as_slice() {
                    self.put_u64(pos + 8, *single);
                }
            }
            (NodeKind::Str, Value::Str(bytes)) => self.put_u64(pos, bytes.len() as u64),
            (NodeKind::List { .. }, Value::List(items)) => self.put_u64(pos, items.len() as u64),
            (NodeKind::Tuple(members), Value::Tuple(items))
            | (NodeKind::Record(members), Value::Record(items)) => {
                for (m, item) in members.iter().zip(items) {
                    self.head(m.node, item, pos + m.offset)?;
                }
            }
            (NodeKind::Optional(_), Value::Optional(None)) => self.put(pos, &RELNULL.to_le_bytes()),
            (NodeKind::Optional(_), Value::Optional(Some(_))) => {}
            (NodeKind::Handle(_), Value::Handle(path)) => {
                // Tag 0 = PATH; an empty path has an all-ones payload.
                self.put(pos, &[0; 8]);
                if path.is_empty() {
                    self.put_u64(pos + 8, u64::MAX);
                }
            }
            (NodeKind::Table, _) => return Err(EncodeError::new(EncodeErrorKind::Table)),
            (kind, v) => return Err(mismatch(kind, v)),
        }
        Ok(())
    }

    /// Appends the out-of-line data of the value whose head is at `pos` and
    /// patches its pointers (the reference's `flatten_fixup`).
    fn tail(
        &mut self,
        id: NodeId,
        value: &Value,
        pos: usize,
        depth: usize,
    ) -> Result<(), EncodeError> {
        if depth > MAX_VALUE_DEPTH {
            return Err(EncodeError::new(EncodeErrorKind::TooDeep));
        }
        let layout = self.layout;
        let node = layout.node(id);
        match (&node.kind, value) {
            (NodeKind::BigInt, v) => {
                let big = big_value(v).ok_or_else(|| mismatch(&node.kind, v))?;
                if big.limbs.len() >= 2 {
                    self.cursor = align_up(self.cursor, 8);
                    let at = self.cursor;
                    self.put_u64(pos + 8, at as u64);
                    for (i, limb) in big.limbs.iter().enumerate() {
                        self.put_u64(at + 8 * i, *limb);
                    }
                    self.cursor += 8 * big.limbs.len();
                }
            }
            (NodeKind::Str, Value::Str(bytes)) => {
                if bytes.is_empty() {
                    self.put_u64(pos + 8, 0);
                } else {
                    let at = self.cursor;
                    self.put_u64(pos + 8, at as u64);
                    self.put(at, bytes);
                    self.cursor += bytes.len();
                }
            }
            (NodeKind::List { elem, .. }, Value::List(items)) => {
                if items.is_empty() {
                    self.put_u64(pos + 8, 0);
                    return Ok(());
                }
                let elem_node = layout.node(*elem);
                self.cursor = align_up(self.cursor, layout.list_data_align(*elem));
                let start = self.cursor;
                self.put_u64(pos + 8, start as u64);
                let width = elem_node.width;
                // All element heads first, then each element's data in order.
                self.cursor += items.len() * width;
                if start + items.len() * width > self.buf.len() {
                    self.buf.resize(start + items.len() * width, 0);
                }
                for (i, item) in items.iter().enumerate() {
                    self.head(*elem, item, start + i * width)?;
                }
                if !elem_node.fixed {
                    for (i, item) in items.iter().enumerate() {
                        self.tail(*elem, item, start + i * width, depth + 1)?;
                    }
                }
            }
            (NodeKind::Tuple(members), Value::Tuple(items))
            | (NodeKind::Record(members), Value::Record(items)) => {
                for (m, item) in members.iter().zip(items) {
                    self.tail(m.node, item, pos + m.offset, depth + 1)?;
                }
            }
            (NodeKind::Optional(inner), Value::Optional(Some(v))) => {
                let inner_node = layout.node(*inner);
                self.cursor = align_up(self.cursor, inner_node.align);
                let at = self.cursor;
                self.put_u64(pos, at as u64);
                self.cursor += inner_node.width;
                if at + inner_node.width > self.buf.len() {
                    self.buf.resize(at + inner_node.width, 0);
                }
                self.head(*inner, v, at)?;
                self.tail(*inner, v, at, depth + 1)?;
            }
            (NodeKind::Handle(_), Value::Handle(path)) if !path.is_empty() => {
                self.cursor = align_up(self.cursor, 8);
                let at = self.cursor;
                self.put_u64(at, path.len() as u64);
                self.put(at + 8, path);
                self.put_u64(pos + 8, at as u64);
                self.cursor += 8 + path.len();
            }
            _ => {}
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Decoding.

/// Decodes the value whose head `root` points at.
pub fn decode(schema: &Schema, mem: &dyn Memory, root: i64) -> Result<Value, DecodeError> {
    decode_limited(schema, mem, root, MAX_DECODED_BYTES)
}

/// [`decode`] with an explicit decoded-size budget (see [`MAX_DECODED_BYTES`]).
pub fn decode_limited(
    schema: &Schema,
    mem: &dyn Memory,
    root: i64,
    budget: usize,
) -> Result<Value, DecodeError> {
    let layout =
        Layout::new(schema).map_err(|e| DecodeError::new(0, DecodeErrorKind::Schema(e.0)))?;
    decode_limited_with(&layout, mem, root, budget)
}

/// [`decode`] with an already compiled layout.
pub fn decode_with(layout: &Layout, mem: &dyn Memory, root: i64) -> Result<Value, DecodeError> {
    decode_limited_with(layout, mem, root, MAX_DECODED_BYTES)
}

fn decode_limited_with(
    layout: &Layout,
    mem: &dyn Memory,
    root: i64,
    budget: usize,
) -> Result<Value, DecodeError> {
    let region = mem.resolve(root)?;
    let mut reader = Reader {
        layout,
        mem,
        budget,
    };
    reader.charge(root as u64, VALUE_COST)?;
    reader.read(layout.root(), region, root as u64, 0, 0)
}

/// Decodes a flat blob (a MESG+VOIDSTAR payload). The budget scales with
/// the blob: a well-formed blob never decodes to more than about 32 bytes of
/// value per input byte, but aliased pointers could.
pub fn decode_flat(schema: &Schema, blob: &[u8]) -> Result<Value, DecodeError> {
    decode_limited(schema, &Flat(blob), 0, flat_budget(blob))
}

/// [`decode_flat`] with an already compiled layout.
pub fn decode_flat_with(layout: &Layout, blob: &[u8]) -> Result<Value, DecodeError> {
    decode_limited_with(layout, &Flat(blob), 0, flat_budget(blob))
}

fn flat_budget(blob: &[u8]) -> usize {
    MAX_DECODED_BYTES.min(blob.len().saturating_mul(64).saturating_add(1 << 20))
}

struct Reader<'a> {
    layout: &'a Layout,
    mem: &'a dyn Memory,
    /// Bytes of decoded value still allowed.
    budget: usize,
}

impl<'a> Reader<'a> {
    fn charge(&mut self, at: u64, cost: usize) -> Result<(), DecodeError> {
        match self.budget.checked_sub(cost) {
            Some(rest) => {
                self.budget = rest;
                Ok(())
            }
            None => Err(DecodeError::new(at, DecodeErrorKind::OverBudget)),
        }
    }

    fn bytes(region: &[u8], base: u64, pos: usize, len: usize) -> Result<&[u8], DecodeError> {
        match pos.checked_add(len).and_then(|end| region.get(pos..end)) {
            Some(b) => Ok(b),
            None => Err(DecodeError::new(
                base.wrapping_add(pos as u64),
                DecodeErrorKind::Truncated {
                    needed: (pos as u64).saturating_add(len as u64) - region.len() as u64,
                },
            )),
        }
    }

    fn u64_at(region: &[u8], base: u64, pos: usize) -> Result<u64, DecodeError> {
        let b = Self::bytes(region, base, pos, 8)?;
        let mut le = [0u8; 8];
        le.copy_from_slice(b);
        Ok(u64::from_le_bytes(le))
    }

    /// Resolves a data pointer and checks that `len` bytes are there.
    fn data(&self, relptr: i64, len: u64) -> Result<&'a [u8], DecodeError> {
        let region = self.mem.resolve(relptr)?;
        match usize::try_from(len).ok().and_then(|n| region.get(..n)) {
            Some(b) => Ok(b),
            None => Err(DecodeError::new(
                relptr as u64,
                DecodeErrorKind::Truncated {
                    needed: len.saturating_sub(region.len() as u64),
                },
            )),
        }
    }

    /// Reads the value whose head is at `region[pos..]`; `base` is the
    /// location of `region[0]`, for error messages.
    fn read(
        &mut self,
        id: NodeId,
        region: &'a [u8],
        base: u64,
        pos: usize,
        depth: usize,
    ) -> Result<Value, DecodeError> {
        let at = base.wrapping_add(pos as u64);
        if depth > MAX_VALUE_DEPTH {
            return Err(DecodeError::new(at, DecodeErrorKind::TooDeep));
        }
        let layout = self.layout;
        let node = layout.node(id);
        let value = match &node.kind {
            NodeKind::Nil => Value::Nil,
            NodeKind::Bool => Value::Bool(Self::bytes(region, base, pos, 1)?[0] != 0),
            NodeKind::Int { signed, bytes } => {
                let b = Self::bytes(region, base, pos, *bytes as usize)?;
                let mut le = [0u8; 8];
                le[..b.len()].copy_from_slice(b);
                if *signed {
                    // Sign-extend from the value's width.
                    let shift = 64 - 8 * u32::from(*bytes);
                    Value::Int((i64::from_le_bytes(le) << shift) >> shift)
                } else {
                    Value::UInt(u64::from_le_bytes(le))
                }
            }
            NodeKind::Float { bytes: 4 } => {
                let b = Self::bytes(region, base, pos, 4)?;
                Value::Float(f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
            }
            NodeKind::Float { .. } => {
                Value::Float(f64::from_bits(Self::u64_at(region, base, pos)?))
            }
            NodeKind::BigInt => {
                let n = Self::u64_at(region, base, pos)?;
                let word = Self::u64_at(region, base, pos + 8)?;
                match n {
                    0 => Value::BigInt(BigInt::zero()),
                    1 => Value::BigInt(BigInt::from_i64(word as i64)),
                    n if n > BigInt::MAX_LIMBS as u64 => {
                        return Err(DecodeError::new(at, DecodeErrorKind::TooLarge(n)))
                    }
                    n => {
                        self.charge(at, 8 * n as usize)?;
                        let data = self.data(word as i64, 8 * n)?;
                        let limbs = data
                            .chunks_exact(8)
                            .map(|c| {
                                u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])
                            })
                            .collect();
                        Value::BigInt(BigInt::from_limbs(limbs))
                    }
                }
            }
            NodeKind::Str => {
                let size = Self::u64_at(region, base, pos)?;
                let ptr = Self::u64_at(region, base, pos + 8)?;
                if size == 0 {
                    // Never dereference the data pointer of an empty string.
                    Value::Str(Vec::new())
                } else {
                    self.charge(at, usize::try_from(size).unwrap_or(usize::MAX))?;
                    Value::Str(self.data(ptr as i64, size)?.to_vec())
                }
            }
            NodeKind::List { len, elem } => {
                let size = Self::u64_at(region, base, pos)?;
                let ptr = Self::u64_at(region, base, pos + 8)?;
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
                    return Ok(Value::List(Vec::new()));
                }
                let count = usize::try_from(size)
                    .map_err(|_| DecodeError::new(at, DecodeErrorKind::TooLarge(size)))?;
                // Charging before allocating bounds the capacity even for
                // zero-width elements, which occupy no bytes at all.
                self.charge(at, count.saturating_mul(VALUE_COST))?;
                let width = layout.node(*elem).width;
                let Some(data_len) = count.checked_mul(width) else {
                    return Err(DecodeError::new(at, DecodeErrorKind::TooLarge(size)));
                };
                let data = if width == 0 {
                    &[][..]
                } else {
                    self.data(ptr as i64, data_len as u64)?
                };
                let mut items = Vec::with_capacity(count);
                for i in 0..count {
                    items.push(self.read(*elem, data, ptr, i * width, depth + 1)?);
                }
                Value::List(items)
            }
            NodeKind::Tuple(members) | NodeKind::Record(members) => {
                self.charge(at, members.len().saturating_mul(VALUE_COST))?;
                let mut items = Vec::with_capacity(members.len());
                for m in members {
                    items.push(self.read(m.node, region, base, pos + m.offset, depth + 1)?);
                }
                if matches!(node.kind, NodeKind::Tuple(_)) {
                    Value::Tuple(items)
                } else {
                    Value::Record(items)
                }
            }
            NodeKind::Optional(inner) => {
                let ptr = Self::u64_at(region, base, pos)? as i64;
                if ptr == RELNULL {
                    Value::Optional(None)
                } else {
                    self.charge(at, VALUE_COST)?;
                    let inner_region = self.mem.resolve(ptr)?;
                    Value::Optional(Some(Box::new(self.read(
                        *inner,
                        inner_region,
                        ptr as u64,
                        0,
                        depth + 1,
                    )?)))
                }
            }
            NodeKind::Handle(_) => {
                let tag = Self::bytes(region, base, pos, 1)?[0];
                let payload = Self::u64_at(region, base, pos + 8)?;
                match tag {
                    0 if payload == u64::MAX => Value::Handle(Vec::new()),
                    0 => {
                        let len = u64::from_le_bytes(
                            self.data(payload as i64, 8)?.try_into().unwrap_or([0; 8]),
                        );
                        self.charge(at, usize::try_from(len).unwrap_or(usize::MAX))?;
                        let with_len = self.data(payload as i64, len.saturating_add(8))?;
                        Value::Handle(with_len[8..].to_vec())
                    }
                    1 => return Err(DecodeError::new(at, DecodeErrorKind::HandleForm)),
                    t => return Err(DecodeError::new(at, DecodeErrorKind::BadHandleTag(t))),
                }
            }
            NodeKind::Table => return Err(DecodeError::new(at, DecodeErrorKind::Table)),
        };
        Ok(value)
    }
}

#[cfg(test)]
pub(crate) mod tests;
