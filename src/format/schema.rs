//! Morloc wire-schema strings: parsing, rendering and binary layout.
//!
//! Every value that crosses a process boundary in Morloc is typed by a compact
//! prefix-notation schema string such as `m36tmpDirsanumThreadsjcremoveCachesb`
//! (a record of three fields). This module turns such strings into a [`Schema`]
//! tree and renders a tree back to the hint-free text that goes into packet
//! metadata. [`Scope`] resolves back-references while walking a tree; the
//! voidstar layout (widths, alignments, member offsets) is computed by
//! [`crate::format::value::Layout`].
//!
//! Architecture Invariant: pure; no I/O, no allocation beyond the tree itself.

use std::fmt;

/// The longest nesting the parser accepts. Real schemas are a few levels deep;
/// the limit only exists so hostile input cannot exhaust the stack.
pub const MAX_DEPTH: usize = 128;

/// One node of a parsed schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Schema {
    /// `z`: the unit type.
    Nil,
    /// `b`.
    Bool,
    /// `i1 i2 i4 i8 u1 u2 u4 u8`: a fixed-width integer of `bytes` bytes.
    Int { signed: bool, bytes: u8 },
    /// `f4 f8`.
    Float { bytes: u8 },
    /// `j`: Morloc's arbitrary-precision `Int`.
    BigInt,
    /// `s`: a byte string (normally UTF-8).
    Str,
    /// `a<T>` or `a:<N><T>`; `len` is the declared fixed length, if any.
    List { len: Option<u64>, elem: Box<Schema> },
    /// `t<n>...`.
    Tuple(Vec<Schema>),
    /// `m<n>(<klen><key><T>)*`: fields in declaration order.
    Record(Vec<(String, Schema)>),
    /// `?<T>`.
    Optional(Box<Schema>),
    /// `T` or `T:<n>...`: an Arrow table with its minimum columns.
    Table(Vec<(String, Schema)>),
    /// `F`, `O`, `I`: file and stream handles.
    Handle(HandleKind),
    /// `&<klen><name><T>`: a named declaration that `^name` may refer back to.
    Named { name: String, body: Box<Schema> },
    /// `^<klen><name>`: a reference to the innermost enclosing declaration.
    Recur(String),
}

/// The three kinds of Morloc file/stream handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandleKind {
    IFile,
    OStream,
    IStream,
}

/// A schema string that does not parse; the message texts follow the
/// reference runtime's wording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaError {
    pub kind: SchemaErrorKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchemaErrorKind {
    UnexpectedEnd,
    UnknownChar { ch: char, pos: usize },
    BadBase62(char),
    BadIntSize(u32),
    BadFloatSize(u32),
    ExpectedTupleSize,
    ExpectedMapSize,
    ExpectedKeyLength,
    KeyPastEnd,
    KeyNotUtf8,
    UnclosedHint,
    UndeclaredName(String),
    Trailing { pos: usize },
    TooDeep,
    BadLength,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use SchemaErrorKind::*;
        match &self.kind {
            UnexpectedEnd => f.write_str("unexpected end of schema"),
            UnknownChar { ch, pos } => {
                write!(f, "unknown schema character '{ch}' at position {pos}")
            }
            BadBase62(c) => write!(f, "invalid base-62 size character '{c}'"),
            BadIntSize(n) => write!(f, "invalid integer size {n}"),
            BadFloatSize(n) => write!(f, "invalid float size {n}"),
            ExpectedTupleSize => f.write_str("expected tuple size"),
            ExpectedMapSize => f.write_str("expected map size"),
            ExpectedKeyLength => f.write_str("expected map key length"),
            KeyPastEnd => f.write_str("map key extends past end"),
            KeyNotUtf8 => f.write_str("map key is not valid UTF-8"),
            UnclosedHint => f.write_str("unclosed '<' in hint"),
            UndeclaredName(n) => write!(f, "back-reference to undeclared name '{n}'"),
            Trailing { pos } => write!(f, "trailing characters after schema at position {pos}"),
            TooDeep => write!(f, "schema nesting exceeds {MAX_DEPTH} levels"),
            BadLength => f.write_str("invalid fixed array length"),
        }
    }
}

impl std::error::Error for SchemaError {}

fn err<T>(kind: SchemaErrorKind) -> Result<T, SchemaError> {
    Err(SchemaError { kind })
}

/// The value of one base-62 digit (`0-9a-zA-Z+/`).
pub fn base62(c: u8) -> Option<u32> {
    match c {
        b'0'..=b'9' => Some((c - b'0') as u32),
        b'a'..=b'z' => Some((c - b'a') as u32 + 10),
        b'A'..=b'Z' => Some((c - b'A') as u32 + 36),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

fn base62_char(n: usize) -> char {
    const DIGITS: &[u8; 64] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+/";
    DIGITS[n & 63] as char
}

/// Parses a complete schema string.
pub fn parse(text: &str) -> Result<Schema, SchemaError> {
    let mut p = Parser {
        bytes: text.as_bytes(),
        pos: 0,
        scope: Vec::new(),
    };
    let schema = p.schema(0)?;
    if p.pos != p.bytes.len() {
        return err(SchemaErrorKind::Trailing { pos: p.pos });
    }
    Ok(schema)
}

struct Parser<'a> {
    bytes: &'a [u8],
    /// INVARIANT: pos <= bytes.len().
    pos: usize,
    /// Names of the declarations enclosing the current position.
    scope: Vec<String>,
}

impl Parser<'_> {
    fn next(&mut self) -> Result<u8, SchemaError> {
        match self.bytes.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => err(SchemaErrorKind::UnexpectedEnd),
        }
    }

    fn b62(&mut self, missing: SchemaErrorKind) -> Result<usize, SchemaError> {
        let Some(&c) = self.bytes.get(self.pos) else {
            return err(missing);
        };
        self.pos += 1;
        match base62(c) {
            Some(v) => Ok(v as usize),
            None => err(SchemaErrorKind::BadBase62(c as char)),
        }
    }

    fn key(&mut self) -> Result<String, SchemaError> {
        let len = self.b62(SchemaErrorKind::ExpectedKeyLength)?;
        let end = self.pos + len;
        if end > self.bytes.len() {
            return err(SchemaErrorKind::KeyPastEnd);
        }
        let key = std::str::from_utf8(&self.bytes[self.pos..end]).map_err(|_| SchemaError {
            kind: SchemaErrorKind::KeyNotUtf8,
        })?;
        self.pos = end;
        Ok(key.to_string())
    }

    fn skip_hint(&mut self) -> Result<(), SchemaError> {
        // The opening '<' is already consumed; hints may nest (`<std::vector<$1>>`).
        let mut depth = 1usize;
        while depth > 0 {
            match self.bytes.get(self.pos) {
                None => return err(SchemaErrorKind::UnclosedHint),
                Some(b'<') => depth += 1,
                Some(b'>') => depth -= 1,
                Some(_) => {}
            }
            self.pos += 1;
        }
        Ok(())
    }

    fn fields(&mut self, n: usize, depth: usize) -> Result<Vec<(String, Schema)>, SchemaError> {
        let mut fields = Vec::with_capacity(n);
        for _ in 0..n {
            let key = self.key()?;
            let schema = self.schema(depth + 1)?;
            fields.push((key, schema));
        }
        Ok(fields)
    }

    fn schema(&mut self, depth: usize) -> Result<Schema, SchemaError> {
        if depth > MAX_DEPTH {
            return err(SchemaErrorKind::TooDeep);
        }
        let start = self.pos;
        let c = self.next()?;
        let schema = match c {
            b'<' => {
                self.skip_hint()?;
                return self.schema(depth + 1);
            }
            b'z' => Schema::Nil,
            b'b' => Schema::Bool,
            b's' => Schema::Str,
            b'j' => Schema::BigInt,
            b'i' | b'u' => {
                let n = self.b62(SchemaErrorKind::UnexpectedEnd)? as u32;
                if !matches!(n, 1 | 2 | 4 | 8) {
                    return err(SchemaErrorKind::BadIntSize(n));
                }
                Schema::Int {
                    signed: c == b'i',
                    bytes: n as u8,
                }
            }
            b'f' => {
                let n = self.b62(SchemaErrorKind::UnexpectedEnd)? as u32;
                if !matches!(n, 4 | 8) {
                    return err(SchemaErrorKind::BadFloatSize(n));
                }
                Schema::Float { bytes: n as u8 }
            }
            b'a' => {
                let mut len = None;
                if self.bytes.get(self.pos) == Some(&b':') {
                    self.pos += 1;
                    let digits_start = self.pos;
                    while self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
                        self.pos += 1;
                    }
                    let digits =
                        std::str::from_utf8(&self.bytes[digits_start..self.pos]).unwrap_or("");
                    let n: u64 = digits.parse().map_err(|_| SchemaError {
                        kind: SchemaErrorKind::BadLength,
                    })?;
                    // `a:0` is how the reference stores "no fixed length".
                    len = (n != 0).then_some(n);
                }
                Schema::List {
                    len,
                    elem: Box::new(self.schema(depth + 1)?),
                }
            }
            b't' => {
                let n = self.b62(SchemaErrorKind::ExpectedTupleSize)?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.schema(depth + 1)?);
                }
                Schema::Tuple(items)
            }
            b'm' => {
                let n = self.b62(SchemaErrorKind::ExpectedMapSize)?;
                Schema::Record(self.fields(n, depth)?)
            }
            b'?' => Schema::Optional(Box::new(self.schema(depth + 1)?)),
            b'T' => {
                if self.bytes.get(self.pos) == Some(&b':') {
                    self.pos += 1;
                    let n = self.b62(SchemaErrorKind::ExpectedMapSize)?;
                    Schema::Table(self.fields(n, depth)?)
                } else {
                    Schema::Table(Vec::new())
                }
            }
            b'F' => Schema::Handle(HandleKind::IFile),
            b'O' => Schema::Handle(HandleKind::OStream),
            b'I' => Schema::Handle(HandleKind::IStream),
            b'&' => {
                let name = self.key()?;
                self.scope.push(name.clone());
                let body = self.schema(depth + 1);
                self.scope.pop();
                Schema::Named {
                    name,
                    body: Box::new(body?),
                }
            }
            b'^' => {
                let name = self.key()?;
                if !self.scope.contains(&name) {
                    return err(SchemaErrorKind::UndeclaredName(name));
                }
                Schema::Recur(name)
            }
            other => {
                // Report the character, not the byte: a multi-byte UTF-8
                // character shows up whole in the message.
                let ch = std::str::from_utf8(&self.bytes[start..])
                    .ok()
                    .and_then(|s| s.chars().next())
                    .unwrap_or(other as char);
                return err(SchemaErrorKind::UnknownChar { ch, pos: start });
            }
        };
        Ok(schema)
    }
}

impl Schema {
    /// Looks through named declarations (not back-references).
    pub fn peel_named(&self) -> &Schema {
        let mut s = self;
        while let Schema::Named { body, .. } = s {
            s = body;
        }
        s
    }

    /// True when an Arrow table or a stream handle appears anywhere in the tree.
    pub fn contains_table_or_handle(&self) -> bool {
        match self {
            Schema::Table(_) | Schema::Handle(_) => true,
            Schema::List { elem, .. } | Schema::Optional(elem) => elem.contains_table_or_handle(),
            Schema::Tuple(items) => items.iter().any(Schema::contains_table_or_handle),
            Schema::Record(fields) => fields.iter().any(|(_, s)| s.contains_table_or_handle()),
            Schema::Named { body, .. } => body.contains_table_or_handle(),
            _ => false,
        }
    }

    /// Renders the hint-free schema string (what packet metadata carries).
    pub fn to_wire_string(&self) -> String {
        let mut out = String::new();
        self.write_wire(&mut out);
        out
    }

    fn write_wire(&self, out: &mut String) {
        fn key(out: &mut String, k: &str) {
            out.push(base62_char(k.len()));
            out.push_str(k);
        }
        match self {
            Schema::Nil => out.push('z'),
            Schema::Bool => out.push('b'),
            Schema::Int { signed, bytes } => {
                out.push(if *signed { 'i' } else { 'u' });
                out.push(base62_char(*bytes as usize));
            }
            Schema::Float { bytes } => {
                out.push('f');
                out.push(base62_char(*bytes as usize));
            }
            Schema::BigInt => out.push('j'),
            Schema::Str => out.push('s'),
            Schema::List { len, elem } => {
                out.push('a');
                if let Some(n) = len {
                    out.push(':');
                    out.push_str(&n.to_string());
                }
                elem.write_wire(out);
            }
            Schema::Tuple(items) => {
                out.push('t');
                out.push(base62_char(items.len()));
                for item in items {
                    item.write_wire(out);
                }
            }
            Schema::Record(fields) => {
                out.push('m');
                out.push(base62_char(fields.len()));
                for (k, s) in fields {
                    key(out, k);
                    s.write_wire(out);
                }
            }
            Schema::Optional(inner) => {
                out.push('?');
                inner.write_wire(out);
            }
            Schema::Table(cols) => {
                out.push('T');
                if !cols.is_empty() {
                    out.push(':');
                    out.push(base62_char(cols.len()));
                    for (k, s) in cols {
                        key(out, k);
                        s.write_wire(out);
                    }
                }
            }
            Schema::Handle(kind) => out.push(match kind {
                HandleKind::IFile => 'F',
                HandleKind::OStream => 'O',
                HandleKind::IStream => 'I',
            }),
            Schema::Named { name, body } => {
                out.push('&');
                key(out, name);
                body.write_wire(out);
            }
            Schema::Recur(name) => {
                out.push('^');
                key(out, name);
            }
        }
    }
}

impl fmt::Display for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_wire_string())
    }
}

/// The declarations enclosing a node, innermost last, so that `^name` can be
/// resolved while walking a tree.
#[derive(Clone, Debug, Default)]
pub struct Scope<'a> {
    decls: Vec<(&'a str, &'a Schema)>,
}

impl<'a> Scope<'a> {
    pub fn new() -> Self {
        Scope { decls: Vec::new() }
    }

    /// Enters `schema`: pushes named declarations and returns the node that
    /// carries the actual type (never `Named`; `Recur` is resolved too).
    /// Returns `None` for a back-reference that does not resolve.
    pub fn enter(&mut self, mut schema: &'a Schema) -> Option<&'a Schema> {
        loop {
            match schema {
                Schema::Named { name, body } => {
                    self.decls.push((name, schema));
                    schema = body;
                }
                Schema::Recur(name) => {
                    let (_, decl) = self.decls.iter().rev().find(|(n, _)| n == name)?;
                    schema = decl;
                    // Re-entering the declaration pushes it again; that is
                    // harmless and keeps the innermost-wins rule.
                }
                other => return Some(other),
            }
        }
    }

    pub fn depth(&self) -> usize {
        self.decls.len()
    }

    /// Drops declarations pushed since `depth` (see [`Scope::depth`]).
    pub fn truncate(&mut self, depth: usize) {
        self.decls.truncate(depth);
    }
}

/// True for values with no out-of-line data: Nil, Bool, fixed numbers, and
/// tuples of those. Records are never fixed width (reference behaviour).
pub fn is_fixed_width(schema: &Schema) -> bool {
    match schema.peel_named() {
        Schema::Nil | Schema::Bool | Schema::Int { .. } | Schema::Float { .. } => true,
        Schema::Tuple(items) => items.iter().all(is_fixed_width),
        _ => false,
    }
}

/// An upper bound on the flat voidstar size of any value of `schema`, the
/// size a pool compares with its inline threshold; `None` when values can be
/// arbitrarily large (strings, lists, `Int`, which is arbitrary-precision,
/// tables, handles, recursive types).
///
/// The bound only needs to be safe, not tight: it decides whether a result
/// is certain to come back inline.
pub fn max_flat_size(schema: &Schema) -> Option<u64> {
    match schema {
        Schema::Nil => Some(0),
        Schema::Bool => Some(1),
        Schema::Int { bytes, .. } | Schema::Float { bytes } => Some(u64::from(*bytes)),
        // Each member may be preceded by up to 7 bytes of alignment padding,
        // and the whole may be padded to 8.
        Schema::Tuple(items) => items
            .iter()
            .try_fold(8, |sum: u64, item| Some(sum + max_flat_size(item)? + 7)),
        Schema::Record(fields) => fields.iter().try_fold(8, |sum: u64, (_, item)| {
            Some(sum + max_flat_size(item)? + 7)
        }),
        // The slot, padding before the value, and the value.
        Schema::Optional(inner) => Some(8 + 7 + max_flat_size(inner)?),
        Schema::Named { body, .. } => max_flat_size(body),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check_ok(text: &str, rendered: &str) {
        let schema = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(schema.to_wire_string(), rendered, "{text}");
    }

    #[track_caller]
    fn check_err(text: &str, msg: &str) {
        match parse(text) {
            Ok(s) => panic!("{text} parsed as {s:?}"),
            Err(e) => assert_eq!(e.to_string(), msg, "{text}"),
        }
    }

    #[test]
    fn every_code_parses_and_renders() {
        for code in [
            "z", "b", "s", "j", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f4", "f8", "F",
            "O", "I", "T",
        ] {
            check_ok(code, code);
        }
        check_ok("aj", "aj");
        check_ok("a:3f8", "a:3f8");
        check_ok("a:0f8", "af8");
        check_ok("t2js", "t2js");
        check_ok("t0", "t0");
        check_ok("?j", "?j");
        check_ok("m21xj1yj", "m21xj1yj");
        check_ok(
            "<dict>m36tmpDirsanumThreadsjcremoveCachesb",
            "m36tmpDirsanumThreadsjcremoveCachesb",
        );
        check_ok("<dict>at2sj", "at2sj");
        check_ok("a<dict>m21xj1yj", "am21xj1yj");
        check_ok("<std::vector<$1>>ai4", "ai4");
        check_ok("T:21xj1ys", "T:21xj1ys");
        check_ok(
            "&4Treem25valuej8childrena^4Tree",
            "&4Treem25valuej8childrena^4Tree",
        );
    }

    #[test]
    fn every_error_has_its_message() {
        check_err("", "unexpected end of schema");
        check_err("a", "unexpected end of schema");
        check_err("*", "unknown schema character '*' at position 0");
        check_err("jx", "trailing characters after schema at position 1");
        check_err("i3", "invalid integer size 3");
        check_err("f2", "invalid float size 2");
        check_err("i-", "invalid base-62 size character '-'");
        check_err("t", "expected tuple size");
        check_err("m", "expected map size");
        check_err("m1", "expected map key length");
        check_err("m15ab", "map key extends past end");
        check_err("<dict", "unclosed '<' in hint");
        check_err("^4Tree", "back-reference to undeclared name 'Tree'");
        check_err("m11xé", "unknown schema character 'é' at position 4");
        check_err("a:xj", "invalid fixed array length");
        check_err(
            &"?".repeat(1000),
            &format!("schema nesting exceeds {MAX_DEPTH} levels"),
        );
    }

    #[test]
    fn recursion_resolves_through_scope() {
        let s = parse("&4Triem23val?j4subsat2s^4Trie").unwrap();
        let mut scope = Scope::new();
        let node = scope.enter(&s).unwrap();
        let Schema::Record(fields) = node else {
            panic!("{node:?}")
        };
        let Schema::List { elem, .. } = &fields[1].1 else {
            panic!("{fields:?}")
        };
        let Schema::Tuple(items) = &**elem else {
            panic!("{elem:?}")
        };
        // The back-reference inside the tuple leads to the declared record.
        assert_eq!(scope.clone().enter(&items[1]), Some(node));
        assert_eq!(Scope::new().enter(&items[1]), None);
    }

    #[test]
    fn tables_and_handles_are_found_anywhere() {
        assert!(parse("am11xF").unwrap().contains_table_or_handle());
        assert!(parse("?T").unwrap().contains_table_or_handle());
        assert!(!parse("am11xj").unwrap().contains_table_or_handle());
        assert!(is_fixed_width(&parse("t2i4f8").unwrap()));
        assert!(!is_fixed_width(&parse("m11xj").unwrap()));
    }

    #[test]
    fn max_flat_size_bounds_only_fixed_shapes() {
        let size = |text: &str| max_flat_size(&parse(text).unwrap());
        assert_eq!(size("z"), Some(0));
        assert_eq!(size("b"), Some(1));
        assert_eq!(size("f8"), Some(8));
        assert_eq!(size("i4"), Some(4));
        assert_eq!(size("t2f8b"), Some(8 + 15 + 8));
        assert_eq!(size("m21xf81yf8"), Some(8 + 15 + 15));
        assert_eq!(size("?f8"), Some(23));
        for unbounded in ["j", "s", "af8", "a:3f8", "t2f8s", "m11xj", "?s", "T", "F"] {
            assert_eq!(size(unbounded), None, "{unbounded}");
        }
    }
}
