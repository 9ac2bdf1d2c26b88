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

use crate::schema::Schema;
use crate::value::{
    big_value, check_int, describe, BigInt, EncodeError, EncodeErrorKind, Layout, NodeId, NodeKind,
    Value, MAX_VALUE_DEPTH,
};

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
    let region = mem.resolve(root)?;
    let mut reader = Reader {
        layout: &layout,
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
    let budget = MAX_DECODED_BYTES.min(blob.len().saturating_mul(64).saturating_add(1 << 20));
    decode_limited(schema, &Flat(blob), 0, budget)
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

    fn bytes(
        region: &[u8],
        base: u64,
        pos: usize,
        len: usize,
    ) -> Result<&[u8], DecodeError> {
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
            NodeKind::Pending => {
                return Err(DecodeError::new(
                    at,
                    DecodeErrorKind::Schema("recursive schema has no finite width".into()),
                ))
            }
        };
        Ok(value)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::schema::parse;
    use crate::value::{from_json, to_json};

    fn hex(text: &str) -> Vec<u8> {
        let clean: String = text.chars().filter(|c| c.is_ascii_hexdigit()).collect();
        (0..clean.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&clean[i..i + 2], 16).unwrap())
            .collect()
    }

    fn value(schema: &Schema, json: &str) -> Value {
        from_json(schema, &serde_json::from_str(json).unwrap(), "x").unwrap()
    }

    fn json_of(schema: &Schema, v: &Value) -> String {
        let mut out = String::new();
        to_json(schema, v, &mut out).unwrap();
        out
    }

    /// Encodes `json` as `schema` and compares the blob with `expected`
    /// (hex; `..` in the spec's notation is written out), then decodes it back.
    #[track_caller]
    fn check_bytes(schema: &str, json: &str, expected: &[u8]) {
        let schema = parse(schema).unwrap();
        let v = value(&schema, json);
        let blob = encode_flat(&schema, &v).unwrap();
        assert_eq!(blob, expected, "{json}");
        assert_eq!(flat_size(&schema, &v).unwrap(), blob.len());
        let back = decode_flat(&schema, &blob).unwrap();
        assert_eq!(json_of(&schema, &back), json_of(&schema, &v));
    }

    fn le(v: u64) -> Vec<u8> {
        v.to_le_bytes().to_vec()
    }

    fn cat(parts: &[&[u8]]) -> Vec<u8> {
        parts.concat()
    }

    #[test]
    fn spec_examples_are_byte_identical() {
        // schema-and-data §2.6
        check_bytes(
            "<dict>m36tmpDirsanumThreadsjcremoveCachesb",
            r#"{"tmpDir":"/t","numThreads":4,"removeCaches":true}"#,
            &hex("0200000000000000 2800000000000000 0100000000000000 0400000000000000 0100000000000000 2f74"),
        );
        check_bytes(
            "t2i4s",
            r#"[1,"x"]"#,
            &cat(&[&hex("01000000 00000000"), &le(1), &le(24), b"x"]),
        );
        check_bytes(
            "am21ai11bi1",
            r#"[{"a":1,"b":2},{"a":3,"b":4}]"#,
            &cat(&[&le(2), &le(16), &[1, 2, 3, 4], &[0; 7]]),
        );
        check_bytes(
            "m21pt2i1i41q?m11xb",
            r#"{"p":[1,2],"q":null}"#,
            &hex("01000000 02000000 ffffffffffffffff"),
        );
        check_bytes(
            "&4Treem25valuej8childrena^4Tree",
            r#"{"value":1,"children":[{"value":2,"children":[]}]}"#,
            &cat(&[
                &le(1),
                &le(1),
                &le(1),
                &le(32),
                &le(1),
                &le(2),
                &le(0),
                &le(0),
                &[0; 7],
            ]),
        );
        // schema-and-data §6.1
        check_bytes(
            "ai4",
            "[1,2,3]",
            &cat(&[
                &le(3),
                &le(64),
                &[0; 48],
                &hex("01000000 02000000 03000000"),
                &[0; 15],
            ]),
        );
        check_bytes(
            "as",
            r#"["ab","c"]"#,
            &cat(&[
                &le(2),
                &le(16),
                &le(2),
                &le(48),
                &le(1),
                &le(50),
                b"abc",
                &[0; 7],
            ]),
        );
        check_bytes(
            "as",
            r#"["a",""]"#,
            &cat(&[
                &le(2),
                &le(16),
                &le(1),
                &le(48),
                &le(0),
                &le(0),
                b"a",
                &[0; 7],
            ]),
        );
        check_bytes("?i4", "7", &cat(&[&le(8), &hex("07000000"), &[0; 3]]));
        check_bytes(
            "a?s",
            r#"[null,"q"]"#,
            &cat(&[
                &le(2),
                &le(16),
                &hex("ffffffffffffffff"),
                &le(32),
                &le(1),
                &le(48),
                b"q",
                &[0; 14],
            ]),
        );
        check_bytes(
            "j",
            "18446744073709551616",
            &cat(&[&le(2), &le(16), &le(0), &le(1), &[0; 7]]),
        );
        // The wire fixtures' argument payloads.
        check_bytes("j", "41", &cat(&[&le(1), &le(41)]));
        check_bytes("?j", "null", &le(u64::MAX));
        check_bytes("s", r#""World""#, &cat(&[&le(5), &le(16), b"World"]));
        check_bytes(
            "aj",
            "[1,2,3,4]",
            &cat(&[
                &le(4),
                &le(16),
                &le(1),
                &le(1),
                &le(1),
                &le(2),
                &le(1),
                &le(3),
                &le(1),
                &le(4),
                &[0; 7],
            ]),
        );
        check_bytes("f8", "1.5", &hex("000000000000f83f"));
        check_bytes("z", "null", &[]);
        check_bytes("b", "true", &[1]);
        check_bytes("as", "[]", &cat(&[&le(0), &le(0)]));
        check_bytes("j", "0", &cat(&[&le(1), &le(0)]));
        check_bytes("j", "-9223372036854775808", &cat(&[&le(1), &le(1 << 63)]));
        check_bytes(
            "j",
            "9223372036854775808",
            &cat(&[&le(2), &le(16), &le(1 << 63), &le(0), &[0; 7]]),
        );
        check_bytes("F", r#""""#, &cat(&[&[0; 8], &le(u64::MAX)]));
        check_bytes("F", r#""/a""#, &cat(&[&[0; 8], &le(16), &le(2), b"/a"]));
    }

    #[test]
    fn handle_after_misaligned_data_grows_the_buffer() {
        // The reference size function forgets the path's alignment padding.
        let schema = parse("t2sF").unwrap();
        let v = value(&schema, r#"["a","/p"]"#);
        let blob = encode_flat(&schema, &v).unwrap();
        assert_eq!(flat_size(&schema, &v).unwrap(), 32 + 1 + 8 + 2);
        assert_eq!(blob.len(), 40 + 8 + 2);
        assert_eq!(
            json_of(&schema, &decode_flat(&schema, &blob).unwrap()),
            r#"["a","/p"]"#
        );
    }

    /// Schemas and values for round trips, including alignment traps and
    /// recursion.
    pub(crate) const SEEDS: &[(&str, &str)] = &[
        ("z", "null"),
        ("b", "false"),
        ("i1", "-128"),
        ("i2", "-300"),
        ("i4", "2147483647"),
        ("i8", "-9223372036854775808"),
        ("u1", "255"),
        ("u2", "65535"),
        ("u4", "4294967295"),
        ("u8", "18446744073709551615"),
        ("f4", "1.5"),
        ("f8", "-0.1"),
        ("f8", "\"nan\""),
        ("f8", "\"-inf\""),
        ("j", "0"),
        ("j", "1"),
        ("j", "-1"),
        ("j", "9223372036854775808"),
        ("j", "-9223372036854775808"),
        ("j", "18446744073709551616"),
        ("j", "-18446744073709551616"),
        ("j", "-123456789012345678901234567890123456789012345678901234567890"),
        ("s", "\"\""),
        ("s", "\"héllo\\n\""),
        ("ai4", "[1,2,3]"),
        ("ai1", "[]"),
        ("aaf8", "[[1.5],[],[2.5,3.5]]"),
        ("a:2u2", "[1,2]"),
        ("as", "[\"ab\",\"\",\"c\"]"),
        ("t2i1m11xb", "[1,{\"x\":true}]"),
        ("at2i1m11xb", "[[1,{\"x\":true}],[2,{\"x\":false}]]"),
        ("t3i2saf4", "[7,\"s\",[0.5,1.5]]"),
        ("m21pt2i1i41q?m11xb", "{\"p\":[1,2],\"q\":{\"x\":true}}"),
        ("?m21aj1bs", "{\"a\":18446744073709551616,\"b\":\"q\"}"),
        ("a?j", "[null,5,null,-99999999999999999999]"),
        ("??j", "7"),
        ("at2sj", "[[\"a\",1],[\"b\",2]]"),
        ("m36tmpDirsanumThreadsjcremoveCachesb", "{\"tmpDir\":\"/x\",\"numThreads\":9,\"removeCaches\":false}"),
        (
            "&4Treem25valuej8childrena^4Tree",
            "{\"value\":1,\"children\":[{\"value\":2,\"children\":[]},{\"value\":3,\"children\":[{\"value\":4,\"children\":[]}]}]}",
        ),
        ("&4Listm24headj4tail?^4List", "{\"head\":1,\"tail\":{\"head\":2,\"tail\":null}}"),
        ("t0", "[]"),
        ("m0", "{}"),
        ("az", "[null,null]"),
        ("at0", "[[],[]]"),
        ("ab", "[true,false]"),
        ("F", "\"/tmp/in\""),
        ("t2sF", "[\"abc\",\"/p\"]"),
    ];

    #[test]
    fn seeds_round_trip() {
        for (schema_text, json) in SEEDS {
            let schema = parse(schema_text).unwrap();
            let v = value(&schema, json);
            let blob =
                encode_flat(&schema, &v).unwrap_or_else(|e| panic!("{schema_text} {json}: {e}"));
            let back =
                decode_flat(&schema, &blob).unwrap_or_else(|e| panic!("{schema_text} {json}: {e}"));
            assert_eq!(
                json_of(&schema, &back),
                json_of(&schema, &v),
                "{schema_text}"
            );
            // A second encoding is identical.
            assert_eq!(encode_flat(&schema, &back).unwrap(), blob, "{schema_text}");
        }
    }

    #[track_caller]
    fn check_decode_err(schema: &str, blob: &[u8], msg: &str) {
        let schema = parse(schema).unwrap();
        match decode_flat(&schema, blob) {
            Ok(v) => panic!("decoded {v:?}"),
            Err(e) => assert_eq!(e.to_string(), msg),
        }
    }

    #[test]
    fn hostile_blobs_fail_cleanly() {
        check_decode_err(
            "j",
            &[1, 0, 0],
            "invalid voidstar data at byte 0: needs 5 bytes past the end of the region",
        );
        check_decode_err(
            "s",
            &cat(&[&le(100), &le(16)]),
            "invalid voidstar data at byte 16: needs 100 bytes past the end of the region",
        );
        check_decode_err(
            "s",
            &cat(&[&le(1), &le(99)]),
            "invalid voidstar data at byte 99: pointer 0x0000000000000063 does not resolve",
        );
        check_decode_err(
            "ai8",
            &cat(&[&le(u64::MAX), &le(16)]),
            "invalid voidstar data at byte 0: value exceeds the decoding size limit",
        );
        check_decode_err(
            "az",
            &cat(&[&le(1 << 40), &le(0)]),
            "invalid voidstar data at byte 0: value exceeds the decoding size limit",
        );
        // Within the budget, a list longer than its data is truncated.
        let blob = cat(&[&le(1 << 20), &le(16)]);
        let err = decode(&parse("ai8").unwrap(), &Flat(&blob), 0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid voidstar data at byte 16: needs 8388608 bytes past the end of the region"
        );
        check_decode_err(
            "j",
            &cat(&[&le(1 << 40), &le(0)]),
            "invalid voidstar data at byte 0: length 1099511627776 is too large",
        );
        check_decode_err(
            "a:2i1",
            &cat(&[&le(3), &le(16), &[1, 2, 3]]),
            "invalid voidstar data at byte 0: list has 3 items, the schema requires 2",
        );
        check_decode_err(
            "F",
            &cat(&[&[1], &[0; 7], &le(5)]),
            "invalid voidstar data at byte 0: stream handle is a registry slot, not a path",
        );
        check_decode_err(
            "F",
            &cat(&[&[7], &[0; 7], &le(5)]),
            "invalid voidstar data at byte 0: unknown stream handle tag 7",
        );
        check_decode_err(
            "T",
            &[0; 16],
            "invalid voidstar data at byte 0: tables are not supported",
        );
        check_decode_err(
            "&1Am11x^1A",
            &[0; 16],
            "invalid schema: recursive schema has no finite width",
        );
        // Aliased pointers: every list element points at the same list.
        let mut blob = cat(&[&le(64), &le(0)]);
        blob.resize(16 * 64, 0);
        for i in 0..64 {
            blob[16 * i..16 * i + 8].copy_from_slice(&le(64));
            blob[16 * i + 8..16 * i + 16].copy_from_slice(&le(0));
        }
        let schema = parse(&format!("{}j", "a".repeat(8))).unwrap();
        let err = decode_flat(&schema, &blob).unwrap_err();
        assert_eq!(err.kind, DecodeErrorKind::OverBudget);
        // A self-referencing optional chain hits the depth limit.
        let schema = parse("&4Listm24headj4tail?^4List").unwrap();
        let blob = cat(&[&le(1), &le(5), &le(0)]);
        let err = decode_flat(&schema, &blob).unwrap_err();
        assert_eq!(err.kind, DecodeErrorKind::TooDeep);
    }

    #[test]
    fn reads_go_through_memory() {
        // A two-region memory: relptr volume 1 maps to a second buffer.
        struct Two(Vec<u8>, Vec<u8>);
        impl Memory for Two {
            fn resolve(&self, relptr: i64) -> Result<&[u8], DecodeError> {
                let bad = DecodeError::new(relptr as u64, DecodeErrorKind::BadPointer(relptr));
                let region = match relptr >> 48 {
                    0 => &self.0,
                    1 => &self.1,
                    _ => return Err(bad),
                };
                region
                    .get((relptr as u64 & OFFSET_MASK) as usize..)
                    .ok_or(bad)
            }
        }
        let mem = Two(
            cat(&[&[0; 8], &le(2), &le((1 << 48) | 4)]),
            b"....hi".to_vec(),
        );
        let schema = parse("s").unwrap();
        assert_eq!(
            decode(&schema, &mem, 8).unwrap(),
            Value::Str(b"hi".to_vec())
        );
        let err = decode(&schema, &mem, 1 << 49).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid voidstar data at volume 2 byte 0: pointer 0x0002000000000000 does not resolve"
        );
    }

    #[test]
    fn deep_values_do_not_overflow_the_stack() {
        // Each list cell is two levels (record, optional), and serde_json
        // itself stops parsing at 128 levels.
        let schema = parse("&4Listm24headj4tail?^4List").unwrap();
        let mut json = String::from("null");
        for i in 0..120 {
            json = format!("{{\"head\":{i},\"tail\":{json}}}");
        }
        let v = value(&schema, &json);
        let blob = encode_flat(&schema, &v).unwrap();
        let back = decode_flat(&schema, &blob).unwrap();
        assert_eq!(json_of(&schema, &back), json_of(&schema, &v));
    }
}
