//! The logical value model shared by the codecs and the pure evaluator.
//!
//! A Morloc value is only meaningful together with its [`Schema`]: none of the
//! binary formats is self-describing. [`Value`] is the in-memory form every
//! codec converts to and from (JSON arguments, flat voidstar blobs, shared
//! memory, msgpack) and the form the pure evaluator computes on. Records keep
//! their field values in schema order; the keys live in the schema.
//!
//! Besides the types, this module holds the pieces every codec shares:
//!
//! * [`BigInt`]: Morloc's arbitrary-precision `Int`, as two's-complement limbs
//!   (the voidstar representation), with exact decimal conversion.
//! * [`Layout`]: a schema compiled once for walking values. Back-references
//!   (`^name`) become node indices, and the voidstar head layout (width,
//!   alignment, member offsets) is precomputed, so the codecs never juggle a
//!   scope stack or recompute a layout per element.
//! * [`from_json`]: the validating conversion of MCP tool arguments. It is
//!   deliberately stricter than the reference runtime (unknown record fields
//!   and out-of-range numbers are rejected with a message naming the argument
//!   path) and fixes two of its defects: big integers stay exact, and omitted
//!   optional record fields become absent instead of failing.
//! * [`to_json`]: the compact JSON text of a result, exact for big integers
//!   and with shortest round-trip floats (see [`crate::format::json`]).
//!
//! Architecture Invariant: pure; no I/O.

use std::fmt;

use crate::format::json;
use crate::format::schema::Schema;

mod bigint;
mod layout;
mod to_json;
pub use bigint::{BigInt, ParseBigIntError};
pub use layout::{Layout, LayoutError, Member, Node, NodeKind};
pub use to_json::{to_json, to_json_with};

/// A typed Morloc value. Which variant is legal is decided by the schema.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `z`.
    Nil,
    /// `b`.
    Bool(bool),
    /// A signed fixed-width integer (`i1`..`i8`), already range-checked.
    Int(i64),
    /// An unsigned fixed-width integer (`u1`..`u8`), already range-checked.
    UInt(u64),
    /// `f4` / `f8` (an `f4` is held widened).
    Float(f64),
    /// `j`: arbitrary precision.
    BigInt(BigInt),
    /// `s`: bytes, normally UTF-8.
    Str(Vec<u8>),
    /// `a...`.
    List(Vec<Value>),
    /// `t...`.
    Tuple(Vec<Value>),
    /// `m...`: field values in schema order.
    Record(Vec<Value>),
    /// `?...`: `None` is absent.
    Optional(Option<Box<Value>>),
    /// `F`/`O`/`I` in PATH form.
    Handle(Vec<u8>),
}

impl Value {
    /// A short noun phrase for error messages ("a string", "a list").
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Nil => "nil",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "a signed integer",
            Value::UInt(_) => "an unsigned integer",
            Value::Float(_) => "a float",
            Value::BigInt(_) => "a big integer",
            Value::Str(_) => "a string",
            Value::List(_) => "a list",
            Value::Tuple(_) => "a tuple",
            Value::Record(_) => "a record",
            Value::Optional(_) => "an optional",
            Value::Handle(_) => "a file handle",
        }
    }
}

// ---------------------------------------------------------------------------
// Layout: a schema compiled for walking values.

/// Index of a node in a [`Layout`].
pub type NodeId = usize;

/// The deepest value nesting any codec accepts. Recursive types (trees,
/// linked lists) nest as deep as their data, so this is a data limit, not a
/// schema limit; it keeps hostile input from exhausting the stack.
pub const MAX_VALUE_DEPTH: usize = 256;

// ---------------------------------------------------------------------------
// Errors shared by the encoders.

/// A value that cannot be encoded with its schema. Values built by
/// [`from_json`] or decoded by a codec always encode; these errors mean a
/// value was built for another schema, or the schema cannot carry values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncodeError {
    pub kind: EncodeErrorKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EncodeErrorKind {
    /// The value's variant does not fit the schema node.
    Mismatch {
        expected: &'static str,
        got: &'static str,
    },
    /// An integer that does not fit the schema's width.
    OutOfRange {
        value: String,
        expected: &'static str,
    },
    /// A list whose length differs from the schema's fixed length.
    Length {
        expected: u64,
        got: usize,
    },
    /// A tuple or record with the wrong number of members.
    Members {
        expected: usize,
        got: usize,
    },
    /// Tables travel as Arrow buffers, which this server does not handle.
    Table,
    /// The schema itself cannot be compiled.
    Layout(String),
    TooDeep,
}

impl EncodeError {
    pub(crate) fn new(kind: EncodeErrorKind) -> EncodeError {
        EncodeError { kind }
    }
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("cannot encode value: ")?;
        match &self.kind {
            EncodeErrorKind::Mismatch { expected, got } => {
                write!(f, "expected {expected}, got {got}")
            }
            EncodeErrorKind::OutOfRange { value, expected } => {
                write!(f, "{value} does not fit {expected}")
            }
            EncodeErrorKind::Length { expected, got } => {
                write!(
                    f,
                    "the schema requires exactly {expected} list items, got {got}"
                )
            }
            EncodeErrorKind::Members { expected, got } => {
                write!(f, "expected {expected} members, got {got}")
            }
            EncodeErrorKind::Table => f.write_str("tables are not supported"),
            EncodeErrorKind::Layout(msg) => write!(f, "invalid schema: {msg}"),
            EncodeErrorKind::TooDeep => write!(f, "nesting exceeds {MAX_VALUE_DEPTH} levels"),
        }
    }
}

impl std::error::Error for EncodeError {}

impl From<LayoutError> for EncodeError {
    fn from(e: LayoutError) -> EncodeError {
        EncodeError::new(EncodeErrorKind::Layout(e.0))
    }
}

/// A noun phrase for a schema node ("a string", "an 8-bit unsigned integer").
pub fn describe(kind: &NodeKind) -> &'static str {
    match kind {
        NodeKind::Nil => "null",
        NodeKind::Bool => "a boolean",
        NodeKind::Int {
            signed: true,
            bytes: 1,
        } => "an 8-bit signed integer",
        NodeKind::Int {
            signed: true,
            bytes: 2,
        } => "a 16-bit signed integer",
        NodeKind::Int {
            signed: true,
            bytes: 4,
        } => "a 32-bit signed integer",
        NodeKind::Int { signed: true, .. } => "a 64-bit signed integer",
        NodeKind::Int {
            signed: false,
            bytes: 1,
        } => "an 8-bit unsigned integer",
        NodeKind::Int {
            signed: false,
            bytes: 2,
        } => "a 16-bit unsigned integer",
        NodeKind::Int {
            signed: false,
            bytes: 4,
        } => "a 32-bit unsigned integer",
        NodeKind::Int { signed: false, .. } => "a 64-bit unsigned integer",
        NodeKind::Float { bytes: 4 } => "a 32-bit float",
        NodeKind::Float { .. } => "a 64-bit float",
        NodeKind::BigInt => "an integer",
        NodeKind::Str => "a string",
        NodeKind::List { .. } => "a list",
        NodeKind::Tuple(_) => "a tuple",
        NodeKind::Record(_) => "a record",
        NodeKind::Optional(_) => "an optional",
        NodeKind::Handle(_) => "a file path",
        NodeKind::Table => "a table",
    }
}

/// The inclusive range of a fixed-width integer type.
pub fn int_range(signed: bool, bytes: u8) -> (i128, i128) {
    let bits = u32::from(bytes) * 8;
    if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}

/// The value of an integer [`Value`] (fixed or big) as `i128`, if it fits.
pub(crate) fn int_value(value: &Value) -> Option<i128> {
    match value {
        Value::Int(v) => Some(i128::from(*v)),
        Value::UInt(v) => Some(i128::from(*v)),
        Value::BigInt(b) => match b.limbs.as_slice() {
            [v] => Some(i128::from(*v as i64)),
            [lo, hi] => Some(((*hi as i64 as i128) << 64) | (*lo as i128)),
            _ => None,
        },
        _ => None,
    }
}

/// Checks an integer value against a fixed-width integer node.
pub(crate) fn check_int(
    value: &Value,
    signed: bool,
    bytes: u8,
    kind: &NodeKind,
) -> Result<i128, EncodeError> {
    let Some(v) = int_value(value) else {
        return Err(EncodeError::new(EncodeErrorKind::Mismatch {
            expected: describe(kind),
            got: value.kind_name(),
        }));
    };
    let (lo, hi) = int_range(signed, bytes);
    if v < lo || v > hi {
        return Err(EncodeError::new(EncodeErrorKind::OutOfRange {
            value: v.to_string(),
            expected: describe(kind),
        }));
    }
    Ok(v)
}

/// The [`BigInt`] of an integer value (`Int`/`UInt` are accepted for `j`).
pub(crate) fn big_value(value: &Value) -> Option<BigInt> {
    match value {
        Value::BigInt(b) => Some(b.clone()),
        Value::Int(v) => Some(BigInt::from_i64(*v)),
        Value::UInt(v) => Some(BigInt::from_u64(*v)),
        _ => None,
    }
}

// ---------------------------------------------------------------------------
// JSON -> Value: validation of tool arguments.

/// A JSON argument that does not match its schema. Displays as
/// `argument '<path>': <problem>`, where the path uses `name`, `name[3]` and
/// `name.field` steps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueError {
    pub path: String,
    pub kind: ValueErrorKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ValueErrorKind {
    /// `expected <what>, got <JSON>`.
    Expected {
        what: &'static str,
        got: String,
    },
    /// `<literal> is out of range for <type> (<lo> to <hi>)`.
    OutOfRange {
        literal: String,
        ty: &'static str,
        range: Option<(String, String)>,
    },
    /// An array of the wrong length for a tuple, fixed-length list or
    /// positional record.
    Length {
        expected: u64,
        got: usize,
    },
    UnknownField {
        field: String,
        expected: Vec<String>,
    },
    MissingField(String),
    TooManyDigits(usize),
    Table,
    TooDeep,
    Schema(String),
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "argument '{}': ", self.path)?;
        match &self.kind {
            ValueErrorKind::Expected { what, got } => write!(f, "expected {what}, got {got}"),
            ValueErrorKind::OutOfRange { literal, ty, range } => {
                write!(f, "{literal} is out of range for {ty}")?;
                if let Some((lo, hi)) = range {
                    write!(f, " ({lo} to {hi})")?;
                }
                Ok(())
            }
            ValueErrorKind::Length { expected, got } => {
                let items = if *expected == 1 { "item" } else { "items" };
                write!(
                    f,
                    "expected an array of exactly {expected} {items}, got {got}"
                )
            }
            ValueErrorKind::UnknownField { field, expected } => {
                write!(
                    f,
                    "unknown field '{field}' (expected {})",
                    expected.join(", ")
                )
            }
            ValueErrorKind::MissingField(field) => write!(f, "missing field '{field}'"),
            ValueErrorKind::TooManyDigits(n) => {
                write!(
                    f,
                    "integer has {n} digits, more than the {} supported",
                    BigInt::MAX_DIGITS
                )
            }
            ValueErrorKind::Table => f.write_str("tables cannot be passed as JSON"),
            ValueErrorKind::TooDeep => write!(f, "nesting exceeds {MAX_VALUE_DEPTH} levels"),
            ValueErrorKind::Schema(msg) => write!(f, "invalid schema: {msg}"),
        }
    }
}

impl std::error::Error for ValueError {}

/// Where in an argument a value sits; rendered only when an error occurs.
pub(crate) enum Path<'a> {
    Root(&'a str),
    Index(&'a Path<'a>, usize),
    Field(&'a Path<'a>, &'a str),
}

impl Path<'_> {
    pub(crate) fn render(&self) -> String {
        match self {
            Path::Root(name) => name.to_string(),
            Path::Index(parent, i) => format!("{}[{i}]", parent.render()),
            Path::Field(parent, key) => format!("{}.{key}", parent.render()),
        }
    }

    pub(crate) fn err<T>(&self, kind: ValueErrorKind) -> Result<T, ValueError> {
        Err(ValueError {
            path: self.render(),
            kind,
        })
    }

    pub(crate) fn expected<T>(
        &self,
        what: &'static str,
        got: &serde_json::Value,
    ) -> Result<T, ValueError> {
        self.err(ValueErrorKind::Expected {
            what,
            got: show_json(got),
        })
    }
}

/// A short rendering of a JSON value for error messages: scalars as JSON
/// text (long ones cut), containers by kind.
pub(crate) fn show_json(v: &serde_json::Value) -> String {
    const MAX: usize = 40;
    match v {
        serde_json::Value::Array(_) => "an array".into(),
        serde_json::Value::Object(_) => "an object".into(),
        serde_json::Value::String(s) if s.chars().count() > MAX => {
            let cut: String = s.chars().take(MAX).collect();
            let mut out = String::new();
            json::write_str(&mut out, &cut);
            out.pop();
            out.push_str("...\"");
            out
        }
        serde_json::Value::String(s) => {
            let mut out = String::new();
            json::write_str(&mut out, s);
            out
        }
        other => {
            let text = json::text(other);
            if text.len() > MAX {
                format!("{}...", &text[..MAX])
            } else {
                text
            }
        }
    }
}

/// True for a JSON number literal without fraction or exponent.
pub(crate) fn is_integer_literal(lit: &str) -> bool {
    !lit.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'))
}

/// Converts a JSON tool argument to a [`Value`] of `schema`, validating it.
/// `path` names the argument in error messages.
pub fn from_json(schema: &Schema, v: &serde_json::Value, path: &str) -> Result<Value, ValueError> {
    let root = Path::Root(path);
    let layout = match Layout::new(schema) {
        Ok(layout) => layout,
        Err(e) => return root.err(ValueErrorKind::Schema(e.0)),
    };
    convert(&layout, layout.root(), v, &root, 0)
}

/// [`from_json`] with an already compiled layout.
pub fn from_json_with(
    layout: &Layout,
    v: &serde_json::Value,
    path: &str,
) -> Result<Value, ValueError> {
    convert(layout, layout.root(), v, &Path::Root(path), 0)
}

fn convert(
    layout: &Layout,
    id: NodeId,
    v: &serde_json::Value,
    path: &Path<'_>,
    depth: usize,
) -> Result<Value, ValueError> {
    use serde_json::Value as J;
    if depth > MAX_VALUE_DEPTH {
        return path.err(ValueErrorKind::TooDeep);
    }
    let kind = &layout.node(id).kind;
    match kind {
        NodeKind::Nil => match v {
            J::Null => Ok(Value::Nil),
            other => path.expected("null", other),
        },
        NodeKind::Bool => match v {
            J::Bool(b) => Ok(Value::Bool(*b)),
            other => path.expected("true or false", other),
        },
        NodeKind::Int { signed, bytes } => {
            let J::Number(n) = v else {
                return path.expected("an integer", v);
            };
            let lit = n.to_string();
            if !is_integer_literal(&lit) {
                return path.expected("an integer", v);
            }
            let (lo, hi) = int_range(*signed, *bytes);
            let out_of_range = || {
                path.err(ValueErrorKind::OutOfRange {
                    literal: lit.clone(),
                    ty: describe(kind),
                    range: Some((lo.to_string(), hi.to_string())),
                })
            };
            // Literals too long for i128 are out of range for every width.
            let Ok(value) = lit.parse::<i128>() else {
                return out_of_range();
            };
            if value < lo || value > hi {
                return out_of_range();
            }
            Ok(if *signed {
                Value::Int(value as i64)
            } else {
                Value::UInt(value as u64)
            })
        }
        NodeKind::BigInt => {
            let text = match v {
                J::Number(n) => {
                    let lit = n.to_string();
                    if !is_integer_literal(&lit) {
                        return path.expected("an integer", v);
                    }
                    lit
                }
                // The reference accepts big integers as strings of digits;
                // clients that cannot send big numbers rely on that.
                J::String(s) => s.clone(),
                other => return path.expected("an integer", other),
            };
            match BigInt::parse_decimal(&text) {
                Ok(b) => Ok(Value::BigInt(b)),
                Err(ParseBigIntError::TooLong) => {
                    path.err(ValueErrorKind::TooManyDigits(text.len()))
                }
                Err(ParseBigIntError::Invalid) => path.expected("an integer", v),
            }
        }
        NodeKind::Float { bytes } => {
            let x = match v {
                J::Number(n) => {
                    let lit = n.to_string();
                    let x: f64 = match lit.parse() {
                        Ok(x) => x,
                        Err(_) => return path.expected("a number", v),
                    };
                    let narrowed = if *bytes == 4 { f64::from(x as f32) } else { x };
                    if !narrowed.is_finite() {
                        return path.err(ValueErrorKind::OutOfRange {
                            literal: lit,
                            ty: describe(kind),
                            range: None,
                        });
                    }
                    narrowed
                }
                // Non-finite values cannot be JSON numbers; the reference
                // accepts (and emits) them as strings.
                J::String(s) => match s.as_str() {
                    "nan" | "NaN" => f64::NAN,
                    "inf" | "Infinity" => f64::INFINITY,
                    "-inf" | "-Infinity" => f64::NEG_INFINITY,
                    _ => return path.expected("a number", v),
                },
                other => return path.expected("a number", other),
            };
            Ok(Value::Float(x))
        }
        NodeKind::Str => match v {
            J::String(s) => Ok(Value::Str(s.as_bytes().to_vec())),
            other => path.expected("a string", other),
        },
        NodeKind::Handle(_) => match v {
            J::String(s) => Ok(Value::Handle(s.as_bytes().to_vec())),
            other => path.expected("a file path string", other),
        },
        NodeKind::List { len, elem } => {
            let J::Array(items) = v else {
                return path.expected("an array", v);
            };
            if let Some(n) = len {
                if items.len() as u64 != *n {
                    return path.err(ValueErrorKind::Length {
                        expected: *n,
                        got: items.len(),
                    });
                }
            }
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                out.push(convert(
                    layout,
                    *elem,
                    item,
                    &Path::Index(path, i),
                    depth + 1,
                )?);
            }
            Ok(Value::List(out))
        }
        NodeKind::Tuple(members) => {
            let J::Array(items) = v else {
                return path.expected("an array", v);
            };
            if items.len() != members.len() {
                return path.err(ValueErrorKind::Length {
                    expected: members.len() as u64,
                    got: items.len(),
                });
            }
            let mut out = Vec::with_capacity(items.len());
            for (i, (item, m)) in items.iter().zip(members).enumerate() {
                out.push(convert(
                    layout,
                    m.node,
                    item,
                    &Path::Index(path, i),
                    depth + 1,
                )?);
            }
            Ok(Value::Tuple(out))
        }
        NodeKind::Record(members) => match v {
            J::Object(map) => {
                if let Some(unknown) = map.keys().find(|k| !members.iter().any(|m| &m.key == *k)) {
                    return path.err(ValueErrorKind::UnknownField {
                        field: unknown.clone(),
                        expected: members.iter().map(|m| m.key.clone()).collect(),
                    });
                }
                let mut out = Vec::with_capacity(members.len());
                for m in members {
                    match map.get(&m.key) {
                        Some(item) => out.push(convert(
                            layout,
                            m.node,
                            item,
                            &Path::Field(path, &m.key),
                            depth + 1,
                        )?),
                        // An omitted optional field is absent (the reference
                        // fails here although its tool schema allows it).
                        None if matches!(layout.node(m.node).kind, NodeKind::Optional(_)) => {
                            out.push(Value::Optional(None))
                        }
                        None => return path.err(ValueErrorKind::MissingField(m.key.clone())),
                    }
                }
                Ok(Value::Record(out))
            }
            // Positional form, accepted by the reference.
            J::Array(items) => {
                if items.len() != members.len() {
                    return path.err(ValueErrorKind::Length {
                        expected: members.len() as u64,
                        got: items.len(),
                    });
                }
                let mut out = Vec::with_capacity(items.len());
                for (item, m) in items.iter().zip(members) {
                    out.push(convert(
                        layout,
                        m.node,
                        item,
                        &Path::Field(path, &m.key),
                        depth + 1,
                    )?);
                }
                Ok(Value::Record(out))
            }
            other => path.expected("an object", other),
        },
        NodeKind::Optional(inner) => match v {
            J::Null => Ok(Value::Optional(None)),
            other => Ok(Value::Optional(Some(Box::new(convert(
                layout,
                *inner,
                other,
                path,
                depth + 1,
            )?)))),
        },
        NodeKind::Table => path.err(ValueErrorKind::Table),
    }
}

#[cfg(test)]
mod tests;
