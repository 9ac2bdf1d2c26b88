//! The logical value model shared by the codecs and the pure evaluator.
//!
//! A Morloc value is only meaningful together with its [`Schema`](crate::schema::Schema):
//! none of the binary formats is self-describing. [`Value`] is the in-memory form
//! every codec converts to and from (JSON arguments, flat voidstar blobs, shared
//! memory, msgpack) and the form the pure evaluator computes on. Records keep
//! their field values in schema order; the keys live in the schema.
//!
//! Architecture Invariant: pure; no I/O.

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

/// An arbitrary-precision integer as little-endian two's-complement 64-bit
/// limbs, exactly the voidstar `j` representation.
///
/// INVARIANT: `limbs` is minimal: no redundant sign-extension limb at the top
/// (so 2^63 needs two limbs and -2^63 one); zero is one limb `[0]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BigInt {
    pub limbs: Vec<u64>,
}
