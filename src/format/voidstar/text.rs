//! JSON text straight to a flat voidstar blob, guided by the schema: what
//! [`crate::format::value::from_json`] followed by [`super::encode_flat`]
//! produce, without a `serde_json::Value` or a [`Value`] in between.
//!
//! A tool argument of millions of numbers would otherwise cost a heap string
//! per number (serde_json with `arbitrary_precision`) and a typed value per
//! element before a single byte of the blob is written. Here the text is
//! read in place ([`crate::format::json::scan`]) in two passes over the same
//! walk the typed path takes:
//!
//! 1. [`plan`] checks the text against the layout with the validator's exact
//!    rules and messages (same checks, same order, same argument paths), and
//!    computes the blob's size (the reference's upper bound, as
//!    [`super::flat_size`]) and the length of every non-empty list;
//! 2. [`Plan::write`] appends the blob to the caller's buffer (the CALL packet
//!    being built), byte for byte what [`super::encode_flat`] writes.
//!
//! Nothing is allocated per element: integers that fit 128 bits are parsed in
//! place (wider `j` literals go through [`BigInt`]), strings are unescaped
//! straight into the blob, and a record's member positions sit in a fixed
//! array. The plan keeps one entry per non-empty list.
//!
//! [`Sliced`] (in `sliced`) does the same walks with explicit stacks, a
//! bounded amount of work per step, for callers that must not stall.
//!
//! Architecture Invariant: pure; no I/O.

use std::fmt;

use crate::format::json::scan::{self, ScanError};
use crate::format::value::{
    describe, int_range, is_integer_literal, show_json, BigInt, EncodeError, EncodeErrorKind,
    Layout, NodeId, NodeKind, ParseBigIntError, Path, ValueError, ValueErrorKind, MAX_VALUE_DEPTH,
};

use super::RELNULL;

/// Why JSON text could not be encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TextError {
    /// The text is not valid JSON.
    Json(ScanError),
    /// The value does not match the schema (the validator's error).
    Value(ValueError),
    /// The value passed the validator but cannot be encoded (the typed
    /// encoder's error; only a nesting limit reached by an omitted field).
    Encode(EncodeError),
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TextError::Json(e) => e.fmt(f),
            TextError::Value(e) => e.fmt(f),
            TextError::Encode(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for TextError {}

/// Encodes the JSON `text` (one value) with `layout` as a flat blob; `path`
/// names the argument in error messages.
pub fn encode_text(layout: &Layout, text: &str, path: &str) -> Result<Vec<u8>, TextError> {
    scan::validate(text.as_bytes(), 0).map_err(TextError::Json)?;
    let plan = plan(layout, text, path).map_err(TextError::Value)?;
    if let Some(e) = plan.encode_error() {
        return Err(TextError::Encode(e.clone()));
    }
    let mut out = Vec::with_capacity(plan.size());
    plan.write(&mut out);
    Ok(out)
}

/// A checked argument, ready to be written.
#[derive(Debug)]
pub struct Plan<'a> {
    layout: &'a Layout,
    text: &'a [u8],
    pos: usize,
    size: usize,
    /// `(position of '[', item count)` of every non-empty list, by position.
    lists: Vec<(usize, usize)>,
    /// Where each container ends, so no walk re-reads a nested value.
    ends: scan::Ends,
    deferred: Option<EncodeError>,
    /// Whether some `j` value needs more than one limb (out-of-line data).
    wide_ints: bool,
}

/// Checks the JSON `text` (which must have passed [`scan::validate`]) against
/// `layout` and sizes its blob. The error is the one
/// [`crate::format::value::from_json`] gives for the same JSON.
pub fn plan<'a>(layout: &'a Layout, text: &'a str, path: &str) -> Result<Plan<'a>, ValueError> {
    let bytes = text.as_bytes();
    let pos = scan::skip_ws(bytes, 0);
    let ends = scan::Ends::new(bytes);
    let mut planner = Planner {
        layout,
        text: bytes,
        ends: &ends,
        lists: Vec::new(),
        deferred: None,
        wide_ints: false,
    };
    let size = planner.size(layout.root(), pos, &Path::Root(path), 0)?;
    let Planner {
        mut lists,
        deferred,
        wide_ints,
        ..
    } = planner;
    lists.sort_unstable();
    Ok(Plan {
        layout,
        text: bytes,
        pos,
        size: size.max(layout.node(layout.root()).width),
        lists,
        ends,
        deferred,
        wide_ints,
    })
}

impl Plan<'_> {
    /// The typed encoder's error for a value the validator accepts. The
    /// typed path validates every argument before encoding any, so a caller
    /// with several arguments reports this only once all of them planned.
    pub fn encode_error(&self) -> Option<&EncodeError> {
        self.deferred.as_ref()
    }

    /// The blob's length (at least; see [`Plan::write`]).
    pub fn size(&self) -> usize {
        self.size
    }

    /// Appends the blob to `out`. It is [`Plan::size`] bytes long, except
    /// in the one case where the reference's size is not an upper bound (see
    /// [`super::encode_flat`]), where it grows as the typed encoder's does.
    pub fn write(&self, out: &mut Vec<u8>) {
        let base = out.len();
        out.resize(base + self.size, 0);
        let root = self.layout.root();
        let mut writer = Writer {
            plan: self,
            buf: out,
            base,
            cursor: self.layout.node(root).width,
        };
        writer.head(root, self.pos, 0);
        writer.tail(root, self.pos, 0, 0);
    }
}

/// Marks an omitted optional record field (read as `null`).
const ABSENT: usize = usize::MAX;

/// Member positions of one tuple or record, without a heap allocation for
/// up to 16 members.
#[derive(Clone, Debug)]
enum Sources {
    Small([usize; 16], usize),
    Big(Vec<usize>),
}

impl Sources {
    fn new(n: usize) -> Sources {
        if n <= 16 {
            Sources::Small([ABSENT; 16], n)
        } else {
            Sources::Big(vec![ABSENT; n])
        }
    }

    fn slots(&mut self) -> &mut [usize] {
        match self {
            Sources::Small(a, n) => &mut a[..*n],
            Sources::Big(v) => v,
        }
    }

    fn get(&self, i: usize) -> usize {
        match self {
            Sources::Small(a, _) => a[i],
            Sources::Big(v) => v[i],
        }
    }
}

/// The position of each member's value: the items of a positional array, or
/// the last occurrence of each key of an object (as serde_json keeps the last
/// of duplicate keys); [`ABSENT`] for keys not present.
fn member_sources(
    text: &[u8],
    pos: usize,
    keys: &[crate::format::value::Member],
    ends: &scan::Ends,
) -> Sources {
    let mut sources = Sources::new(keys.len());
    let slots = sources.slots();
    if text.get(pos) == Some(&b'[') {
        for (slot, item) in slots.iter_mut().zip(scan::items_in(text, pos, Some(ends))) {
            *slot = item;
        }
    } else {
        for (key, value) in scan::members_in(text, pos, Some(ends)) {
            if let Some(i) = keys.iter().position(|m| scan::str_eq(text, key, &m.key)) {
                slots[i] = value;
            }
        }
    }
    sources
}

/// A short rendering of the JSON value at `pos` for messages, as the
/// validator shows it (containers by kind, without parsing them).
fn shown(text: &[u8], pos: usize) -> String {
    match text.get(pos) {
        None => String::new(),
        Some(b'[') => "an array".into(),
        Some(b'{') => "an object".into(),
        _ => {
            let end = scan::value_end(text, pos);
            match crate::format::json::parse_bytes(&text[pos..end]) {
                Ok(v) => show_json(&v),
                Err(_) => String::from_utf8_lossy(&text[pos..end]).into_owned(),
            }
        }
    }
}

fn literal(text: &[u8], pos: usize) -> &str {
    let end = scan::number_end(text, pos).unwrap_or(pos);
    std::str::from_utf8(&text[pos..end]).unwrap_or("")
}

/// A number literal as serde_json keeps it (`arbitrary_precision`): the
/// exponent marker lower case and its sign always written.
fn serde_literal(lit: &str) -> String {
    let mut out = String::with_capacity(lit.len() + 1);
    let mut bytes = lit.bytes().peekable();
    while let Some(b) = bytes.next() {
        if b == b'e' || b == b'E' {
            out.push('e');
            if !matches!(bytes.peek(), Some(b'+' | b'-')) {
                out.push('+');
            }
        } else {
            out.push(b as char);
        }
    }
    out
}

fn is_number(text: &[u8], pos: usize) -> bool {
    matches!(text.get(pos), Some(b'-' | b'0'..=b'9'))
}

/// The limbs of a `j` value, without allocating below 129 bits.
enum Limbs {
    One(u64),
    Two(u64, u64),
    Many(BigInt),
}

impl Limbs {
    fn count(&self) -> usize {
        match self {
            Limbs::One(_) => 1,
            Limbs::Two(..) => 2,
            Limbs::Many(b) => b.limbs.len(),
        }
    }

    fn limb(&self, i: usize) -> u64 {
        match self {
            Limbs::One(v) => *v,
            Limbs::Two(lo, hi) => [*lo, *hi][i],
            Limbs::Many(b) => b.limbs[i],
        }
    }
}

/// `-?[0-9]{1,18}` as an `i64`, the common case, parsed without overflow
/// checks.
fn small_int(text: &str) -> Option<i64> {
    let (negative, digits) = match text.as_bytes() {
        [b'-', rest @ ..] => (true, rest),
        all => (false, all),
    };
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    let mut v: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i64::from(d - b'0');
    }
    Some(if negative { -v } else { v })
}

/// An integer literal as `i128` (for the fixed-width types).
fn int_literal(lit: &str) -> Option<i128> {
    match small_int(lit) {
        Some(v) => Some(i128::from(v)),
        None => lit.parse().ok(),
    }
}

/// Parses `-?[0-9]+` as [`BigInt::parse_decimal`] does.
fn parse_limbs(digits: &str) -> Result<Limbs, ParseBigIntError> {
    if let Some(v) = small_int(digits) {
        return Ok(Limbs::One(v as u64));
    }
    if digits.len() <= 38 {
        let bare = digits.strip_prefix('-').unwrap_or(digits);
        if bare.is_empty() || !bare.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ParseBigIntError::Invalid);
        }
        if let Ok(v) = digits.parse::<i128>() {
            return Ok(match i64::try_from(v) {
                Ok(small) => Limbs::One(small as u64),
                Err(_) => Limbs::Two(v as u64, (v >> 64) as u64),
            });
        }
    }
    BigInt::parse_decimal(digits).map(Limbs::Many)
}

/// The text a `j` value is read from: a number literal, or a string's
/// decoded text (allocated only when it has escapes).
fn big_text(text: &[u8], pos: usize) -> std::borrow::Cow<'_, str> {
    if text.get(pos) == Some(&b'"') {
        match scan::plain_str(text, pos) {
            Some(raw) => std::str::from_utf8(raw).unwrap_or("").into(),
            None => scan::decode_string(text, pos).into(),
        }
    } else {
        literal(text, pos).into()
    }
}

/// The float a (checked) JSON value stands for, before narrowing.
fn float_value(text: &[u8], pos: usize) -> Option<f64> {
    if is_number(text, pos) {
        return literal(text, pos).parse().ok();
    }
    if text.get(pos) != Some(&b'"') {
        return None;
    }
    let is = |name: &str| scan::str_eq(text, pos, name);
    if is("nan") || is("NaN") {
        Some(f64::NAN)
    } else if is("inf") || is("Infinity") {
        Some(f64::INFINITY)
    } else if is("-inf") || is("-Infinity") {
        Some(f64::NEG_INFINITY)
    } else {
        None
    }
}

struct Planner<'a> {
    layout: &'a Layout,
    text: &'a [u8],
    ends: &'a scan::Ends,
    lists: Vec<(usize, usize)>,
    deferred: Option<EncodeError>,
    wide_ints: bool,
}

impl Planner<'_> {
    fn expected<T>(
        &self,
        path: &Path<'_>,
        what: &'static str,
        pos: usize,
    ) -> Result<T, ValueError> {
        path.err(ValueErrorKind::Expected {
            what,
            got: shown(self.text, pos),
        })
    }

    /// Checks the value at `pos` as the validator's `convert` does and
    /// returns its size as `size_of` counts it.
    fn size(
        &mut self,
        id: NodeId,
        pos: usize,
        path: &Path<'_>,
        depth: usize,
    ) -> Result<usize, ValueError> {
        if depth > MAX_VALUE_DEPTH {
            return path.err(ValueErrorKind::TooDeep);
        }
        let layout = self.layout;
        let text = self.text;
        let node = layout.node(id);
        let first = if pos == ABSENT {
            None
        } else {
            text.get(pos).copied()
        };
        match &node.kind {
            NodeKind::Nil => match first {
                Some(b'n') => Ok(node.width),
                _ => self.expected(path, "null", pos),
            },
            NodeKind::Bool => match first {
                Some(b't' | b'f') => Ok(node.width),
                _ => self.expected(path, "true or false", pos),
            },
            NodeKind::Int { signed, bytes } => {
                if !is_number(text, pos) {
                    return self.expected(path, "an integer", pos);
                }
                let lit = literal(text, pos);
                if !is_integer_literal(lit) {
                    return self.expected(path, "an integer", pos);
                }
                let (lo, hi) = int_range(*signed, *bytes);
                match int_literal(lit) {
                    Some(v) if v >= lo && v <= hi => Ok(node.width),
                    _ => path.err(ValueErrorKind::OutOfRange {
                        literal: lit.to_string(),
                        ty: describe(&node.kind),
                        range: Some((lo.to_string(), hi.to_string())),
                    }),
                }
            }
            NodeKind::BigInt => {
                let string = first == Some(b'"');
                if !string && !is_number(text, pos) {
                    return self.expected(path, "an integer", pos);
                }
                if !string && !is_integer_literal(literal(text, pos)) {
                    return self.expected(path, "an integer", pos);
                }
                let digits = big_text(text, pos);
                match parse_limbs(&digits) {
                    Ok(limbs) if limbs.count() <= 1 => Ok(16),
                    Ok(limbs) => {
                        self.wide_ints = true;
                        Ok(16 + 7 + 8 * limbs.count())
                    }
                    Err(ParseBigIntError::TooLong) => {
                        path.err(ValueErrorKind::TooManyDigits(digits.len()))
                    }
                    Err(ParseBigIntError::Invalid) => self.expected(path, "an integer", pos),
                }
            }
            NodeKind::Float { bytes } => {
                let Some(x) = float_value(text, pos) else {
                    return self.expected(path, "a number", pos);
                };
                let narrowed = if *bytes == 4 { f64::from(x as f32) } else { x };
                if is_number(text, pos) && !narrowed.is_finite() {
                    return path.err(ValueErrorKind::OutOfRange {
                        literal: serde_literal(literal(text, pos)),
                        ty: describe(&node.kind),
                        range: None,
                    });
                }
                Ok(node.width)
            }
            NodeKind::Str => match first {
                Some(b'"') => Ok(16 + scan::decoded_len(text, pos)),
                _ => self.expected(path, "a string", pos),
            },
            NodeKind::Handle(_) => match first {
                Some(b'"') => match scan::decoded_len(text, pos) {
                    0 => Ok(16),
                    n => Ok(16 + 8 + n),
                },
                _ => self.expected(path, "a file path string", pos),
            },
            NodeKind::List { len, elem } => {
                if first != Some(b'[') {
                    return self.expected(path, "an array", pos);
                }
                if let Some(n) = len {
                    let got = scan::items_in(text, pos, Some(self.ends)).count();
                    if got as u64 != *n {
                        return path.err(ValueErrorKind::Length { expected: *n, got });
                    }
                }
                let elem_node = layout.node(*elem);
                let mut count = 0;
                let mut data = 0;
                for (i, item) in scan::items_in(text, pos, Some(self.ends)).enumerate() {
                    let item_size = self.size(*elem, item, &Path::Index(path, i), depth + 1)?;
                    data += if elem_node.fixed {
                        elem_node.width
                    } else {
                        item_size
                    };
                    count += 1;
                }
                if count == 0 {
                    return Ok(16);
                }
                self.lists.push((pos, count));
                Ok(16 + layout.list_data_align(*elem) - 1 + data)
            }
            NodeKind::Tuple(members) => {
                if first != Some(b'[') {
                    return self.expected(path, "an array", pos);
                }
                let got = scan::items_in(text, pos, Some(self.ends)).count();
                if got != members.len() {
                    return path.err(ValueErrorKind::Length {
                        expected: members.len() as u64,
                        got,
                    });
                }
                let mut size = node.width;
                for (i, (item, m)) in scan::items_in(text, pos, Some(self.ends))
                    .zip(members)
                    .enumerate()
                {
                    let member_size = self.size(m.node, item, &Path::Index(path, i), depth + 1)?;
                    size += member_size.saturating_sub(layout.node(m.node).width);
                }
                Ok(size)
            }
            NodeKind::Record(members) => {
                match first {
                    Some(b'{') => {
                        for (key, _) in scan::members_in(text, pos, Some(self.ends)) {
                            if !members.iter().any(|m| scan::str_eq(text, key, &m.key)) {
                                return path.err(ValueErrorKind::UnknownField {
                                    field: scan::decode_string(text, key),
                                    expected: members.iter().map(|m| m.key.clone()).collect(),
                                });
                            }
                        }
                    }
                    Some(b'[') => {
                        let got = scan::items_in(text, pos, Some(self.ends)).count();
                        if got != members.len() {
                            return path.err(ValueErrorKind::Length {
                                expected: members.len() as u64,
                                got,
                            });
                        }
                    }
                    _ => return self.expected(path, "an object", pos),
                }
                let sources = member_sources(text, pos, members, self.ends);
                let mut size = node.width;
                for (i, m) in members.iter().enumerate() {
                    let source = sources.get(i);
                    let optional = matches!(layout.node(m.node).kind, NodeKind::Optional(_));
                    if source == ABSENT && !optional {
                        return path.err(ValueErrorKind::MissingField(m.key.clone()));
                    }
                    if source == ABSENT {
                        // The validator does not descend into an omitted
                        // field, but the encoder's depth check does.
                        if depth + 1 > MAX_VALUE_DEPTH && self.deferred.is_none() {
                            self.deferred = Some(EncodeError::new(EncodeErrorKind::TooDeep));
                        }
                        size += 8usize.saturating_sub(layout.node(m.node).width);
                        continue;
                    }
                    let member_size =
                        self.size(m.node, source, &Path::Field(path, &m.key), depth + 1)?;
                    size += member_size.saturating_sub(layout.node(m.node).width);
                }
                Ok(size)
            }
            NodeKind::Optional(inner) => match first {
                None | Some(b'n') => Ok(8),
                Some(_) => {
                    let inner_size = self.size(*inner, pos, path, depth + 1)?;
                    Ok(8 + layout.node(*inner).align - 1 + inner_size)
                }
            },
            NodeKind::Table => path.err(ValueErrorKind::Table),
        }
    }
}

fn align_up(n: usize, align: usize) -> usize {
    n.div_ceil(align) * align
}

/// The second pass: the typed encoder's walk (heads, then out-of-line data
/// at the cursor), reading checked text instead of a value.
struct Writer<'p, 'b> {
    plan: &'p Plan<'p>,
    buf: &'b mut Vec<u8>,
    base: usize,
    cursor: usize,
}

impl Writer<'_, '_> {
    fn reserve(&mut self, end: usize) {
        if self.base + end > self.buf.len() {
            self.buf.resize(self.base + end, 0);
        }
    }

    fn put(&mut self, pos: usize, bytes: &[u8]) {
        self.reserve(pos + bytes.len());
        let at = self.base + pos;
        self.buf[at..at + bytes.len()].copy_from_slice(bytes);
    }

    fn put_u64(&mut self, pos: usize, v: u64) {
        self.put(pos, &v.to_le_bytes());
    }

    fn list_len(&self, pos: usize) -> usize {
        let lists = &self.plan.lists;
        match lists.binary_search_by_key(&pos, |(p, _)| *p) {
            Ok(i) => lists[i].1,
            Err(_) => 0,
        }
    }

    fn limbs(&self, pos: usize) -> Limbs {
        parse_limbs(&big_text(self.plan.text, pos)).unwrap_or(Limbs::One(0))
    }

    fn is_null(&self, pos: usize) -> bool {
        pos == ABSENT || self.plan.text.get(pos) == Some(&b'n')
    }

    fn head(&mut self, id: NodeId, pos: usize, at: usize) {
        let layout = self.plan.layout;
        let text = self.plan.text;
        let node = layout.node(id);
        match &node.kind {
            NodeKind::Nil | NodeKind::Table => {}
            NodeKind::Bool => self.put(at, &[u8::from(text.get(pos) == Some(&b't'))]),
            NodeKind::Int { bytes, .. } => {
                let n = int_literal(literal(text, pos)).unwrap_or(0);
                let le = (n as i64).to_le_bytes();
                self.put(at, &le[..*bytes as usize]);
            }
            NodeKind::Float { bytes } => {
                let x = float_value(text, pos).unwrap_or(0.0);
                if *bytes == 4 {
                    self.put(at, &(x as f32).to_le_bytes());
                } else {
                    self.put(at, &x.to_le_bytes());
                }
            }
            NodeKind::BigInt => {
                let limbs = self.limbs(pos);
                self.put_u64(at, limbs.count() as u64);
                if let Limbs::One(v) = limbs {
                    self.put_u64(at + 8, v);
                }
            }
            NodeKind::Str => self.put_u64(at, scan::decoded_len(text, pos) as u64),
            NodeKind::List { .. } => self.put_u64(at, self.list_len(pos) as u64),
            NodeKind::Tuple(members) | NodeKind::Record(members) => {
                let sources = member_sources(text, pos, members, &self.plan.ends);
                for (i, m) in members.iter().enumerate() {
                    self.head(m.node, sources.get(i), at + m.offset);
                }
            }
            NodeKind::Optional(_) => {
                if self.is_null(pos) {
                    self.put(at, &RELNULL.to_le_bytes());
                }
            }
            NodeKind::Handle(_) => {
                self.put(at, &[0; 8]);
                if scan::decoded_len(text, pos) == 0 {
                    self.put_u64(at + 8, u64::MAX);
                }
            }
        }
    }

    fn tail(&mut self, id: NodeId, pos: usize, at: usize, depth: usize) {
        if depth > MAX_VALUE_DEPTH {
            return;
        }
        let layout = self.plan.layout;
        let text = self.plan.text;
        let node = layout.node(id);
        match &node.kind {
            NodeKind::BigInt => {
                let limbs = self.limbs(pos);
                if limbs.count() >= 2 {
                    self.cursor = align_up(self.cursor, 8);
                    let start = self.cursor;
                    self.put_u64(at + 8, start as u64);
                    for i in 0..limbs.count() {
                        self.put_u64(start + 8 * i, limbs.limb(i));
                    }
                    self.cursor += 8 * limbs.count();
                }
            }
            NodeKind::Str => {
                let len = scan::decoded_len(text, pos);
                if len == 0 {
                    self.put_u64(at + 8, 0);
                } else {
                    let start = self.cursor;
                    self.put_u64(at + 8, start as u64);
                    self.reserve(start + len);
                    let mut w = self.base + start;
                    let buf = &mut *self.buf;
                    scan::decode_str(text, pos, |chunk| {
                        buf[w..w + chunk.len()].copy_from_slice(chunk);
                        w += chunk.len();
                    });
                    self.cursor += len;
                }
            }
            NodeKind::List { elem, .. } => {
                let n = self.list_len(pos);
                if n == 0 {
                    self.put_u64(at + 8, 0);
                    return;
                }
                let elem_node = layout.node(*elem);
                self.cursor = align_up(self.cursor, layout.list_data_align(*elem));
                let start = self.cursor;
                self.put_u64(at + 8, start as u64);
                let width = elem_node.width;
                self.cursor += n * width;
                self.reserve(start + n * width);
                let ends = Some(&self.plan.ends);
                for (i, item) in scan::items_in(text, pos, ends).enumerate() {
                    self.head(*elem, item, start + i * width);
                }
                // Integers of one limb have no out-of-line data.
                let inline_ints =
                    matches!(elem_node.kind, NodeKind::BigInt) && !self.plan.wide_ints;
                if !elem_node.fixed && !inline_ints {
                    for (i, item) in scan::items_in(text, pos, ends).enumerate() {
                        self.tail(*elem, item, start + i * width, depth + 1);
                    }
                }
            }
            NodeKind::Tuple(members) | NodeKind::Record(members) => {
                let sources = member_sources(text, pos, members, &self.plan.ends);
                for (i, m) in members.iter().enumerate() {
                    self.tail(m.node, sources.get(i), at + m.offset, depth + 1);
                }
            }
            NodeKind::Optional(inner) => {
                if self.is_null(pos) {
                    return;
                }
                let inner_node = layout.node(*inner);
                self.cursor = align_up(self.cursor, inner_node.align);
                let start = self.cursor;
                self.put_u64(at, start as u64);
                self.cursor += inner_node.width;
                self.reserve(start + inner_node.width);
                self.head(*inner, pos, start);
                self.tail(*inner, pos, start, depth + 1);
            }
            NodeKind::Handle(_) => {
                let len = scan::decoded_len(text, pos);
                if len > 0 {
                    self.cursor = align_up(self.cursor, 8);
                    let start = self.cursor;
                    self.put_u64(start, len as u64);
                    self.reserve(start + 8 + len);
                    let mut w = self.base + start + 8;
                    let buf = &mut *self.buf;
                    scan::decode_str(text, pos, |chunk| {
                        buf[w..w + chunk.len()].copy_from_slice(chunk);
                        w += chunk.len();
                    });
                    self.put_u64(at + 8, start as u64);
                    self.cursor += 8 + len;
                }
            }
            _ => {}
        }
    }
}

mod sliced;
pub use sliced::Sliced;

#[cfg(test)]
mod tests;
