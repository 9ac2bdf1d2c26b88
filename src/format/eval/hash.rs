//! `@hash`: the reference's structural 64-bit hash of a typed value.
//!
//! The reference hashes the voidstar bytes of a value with XXH64, folding the
//! type id of every node (and the length of every string and list) into the
//! seed, so that values of different shape never share a hash. XXH64 is
//! implemented here (it is short) to stay within the dependency budget.
//!
//! One deliberate difference: the reference hashes a present optional's
//! 8-byte relative pointer, so its hash depends on memory placement and is
//! not reproducible. Here a present optional hashes its inner value with the
//! seed of the optional node; an absent one hashes the 8 bytes of RELNULL,
//! exactly like the reference. Likewise a `^name` back-reference is hashed
//! as the declaration it names, where the reference hashes raw head bytes.

use crate::format::schema::{is_fixed_width, HandleKind, Schema, Scope};
use crate::format::value::{Layout, NodeKind, Value};

use super::MAX_VALUE_DEPTH;

const PRIME1: u64 = 0x9E37_79B1_85EB_CA87;
const PRIME2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const PRIME3: u64 = 0x1656_67B1_9E37_79F9;
const PRIME4: u64 = 0x85EB_CA77_C2B2_AE63;
const PRIME5: u64 = 0x27D4_EB2F_1656_67C5;

/// The Str element type (U8) folded in by the bulk path.
const U8_TYPE_ID: u64 = 6;

/// XXH64 of `data` with `seed`.
pub(super) fn xxh64(data: &[u8], seed: u64) -> u64 {
    fn round(acc: u64, lane: u64) -> u64 {
        acc.wrapping_add(lane.wrapping_mul(PRIME2))
            .rotate_left(31)
            .wrapping_mul(PRIME1)
    }
    fn merge(acc: u64, lane: u64) -> u64 {
        (acc ^ round(0, lane))
            .wrapping_mul(PRIME1)
            .wrapping_add(PRIME4)
    }
    fn u64_at(b: &[u8]) -> u64 {
        let mut word = [0u8; 8];
        word.copy_from_slice(&b[..8]);
        u64::from_le_bytes(word)
    }

    let mut rest = data;
    let mut h = if data.len() >= 32 {
        let mut v = [
            seed.wrapping_add(PRIME1).wrapping_add(PRIME2),
            seed.wrapping_add(PRIME2),
            seed,
            seed.wrapping_sub(PRIME1),
        ];
        while rest.len() >= 32 {
            for (k, acc) in v.iter_mut().enumerate() {
                *acc = round(*acc, u64_at(&rest[k * 8..]));
            }
            rest = &rest[32..];
        }
        let mut h = v[0]
            .rotate_left(1)
            .wrapping_add(v[1].rotate_left(7))
            .wrapping_add(v[2].rotate_left(12))
            .wrapping_add(v[3].rotate_left(18));
        for lane in v {
            h = merge(h, lane);
        }
        h
    } else {
        seed.wrapping_add(PRIME5)
    };
    h = h.wrapping_add(data.len() as u64);
    while rest.len() >= 8 {
        h ^= round(0, u64_at(rest));
        h = h.rotate_left(27).wrapping_mul(PRIME1).wrapping_add(PRIME4);
        rest = &rest[8..];
    }
    if rest.len() >= 4 {
        let mut word = [0u8; 4];
        word.copy_from_slice(&rest[..4]);
        h ^= (u32::from_le_bytes(word) as u64).wrapping_mul(PRIME1);
        h = h.rotate_left(23).wrapping_mul(PRIME2).wrapping_add(PRIME3);
        rest = &rest[4..];
    }
    for byte in rest {
        h ^= (*byte as u64).wrapping_mul(PRIME5);
        h = h.rotate_left(11).wrapping_mul(PRIME1);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(PRIME2);
    h ^= h >> 29;
    h = h.wrapping_mul(PRIME3);
    h ^ (h >> 32)
}

/// The reference's seed-combining function.
pub(super) fn mix(a: u64, b: u64) -> u64 {
    (a ^ b.wrapping_mul(PRIME1))
        .rotate_left(31)
        .wrapping_mul(PRIME2)
}

/// The `SerialType` id of a schema node (`schema-and-data.md` §2.2).
fn type_id(node: &Schema) -> u64 {
    match node {
        Schema::Nil => 0,
        Schema::Bool => 1,
        Schema::Int {
            signed: true,
            bytes,
        } => 2 + bytes.trailing_zeros() as u64,
        Schema::Int {
            signed: false,
            bytes,
        } => 6 + bytes.trailing_zeros() as u64,
        Schema::Float { bytes: 4 } => 10,
        Schema::Float { .. } => 11,
        Schema::Str => 13,
        Schema::List { .. } => 14,
        Schema::Tuple(_) => 15,
        Schema::Record(_) => 16,
        Schema::Optional(_) => 17,
        Schema::BigInt => 18,
        Schema::Table(_) => 19,
        Schema::Named { body, .. } => type_id(body),
        Schema::Recur(_) => 20,
        Schema::Handle(HandleKind::IFile) => 21,
        Schema::Handle(HandleKind::OStream) => 22,
        Schema::Handle(HandleKind::IStream) => 23,
    }
}

/// `@hash` of `value` typed by `schema`.
pub(super) fn hash_value(schema: &Schema, value: &Value) -> Result<u64, String> {
    hash_at(schema, &mut Scope::new(), value, 0, 0)
}

fn hash_at<'s>(
    schema: &'s Schema,
    scope: &mut Scope<'s>,
    value: &Value,
    seed: u64,
    depth: usize,
) -> Result<u64, String> {
    if depth > MAX_VALUE_DEPTH {
        return Err(format!("value nesting exceeds {MAX_VALUE_DEPTH} levels"));
    }
    let mark = scope.depth();
    let res = match scope.enter(schema) {
        Some(node) => hash_node(node, scope, value, seed, depth),
        None => Err(format!("unresolved back-reference in {schema}")),
    };
    scope.truncate(mark);
    res
}

fn hash_node<'s>(
    node: &'s Schema,
    scope: &mut Scope<'s>,
    value: &Value,
    seed: u64,
    depth: usize,
) -> Result<u64, String> {
    let seed = mix(seed, type_id(node));
    let mismatch = || format!("value does not match schema {node}");
    match (node, value) {
        (Schema::BigInt, Value::BigInt(n)) => {
            // One limb (or none) is stored inline as an i64; longer values
            // hash all their limbs.
            if n.limbs.len() <= 1 {
                Ok(xxh64(
                    &n.limbs.first().copied().unwrap_or(0).to_le_bytes(),
                    seed,
                ))
            } else {
                let bytes: Vec<u8> = n.limbs.iter().flat_map(|l| l.to_le_bytes()).collect();
                Ok(xxh64(&bytes, seed))
            }
        }
        (Schema::Handle(_), Value::Handle(path)) => Ok(xxh64(path, seed)),
        (Schema::Str, Value::Str(bytes)) => {
            let seed = mix(seed, bytes.len() as u64);
            if bytes.is_empty() {
                Ok(xxh64(&[], seed))
            } else {
                Ok(xxh64(bytes, mix(seed, U8_TYPE_ID)))
            }
        }
        (Schema::List { elem, .. }, Value::List(items)) => {
            let seed = mix(seed, items.len() as u64);
            if items.is_empty() {
                return Ok(xxh64(&[], seed));
            }
            if is_fixed_width(elem) {
                let elem = elem.peel_named();
                let mut bytes = Vec::new();
                for item in items {
                    head_bytes(elem, item, &mut bytes)?;
                }
                return Ok(xxh64(&bytes, mix(seed, type_id(elem))));
            }
            let mut h = seed;
            for item in items {
                h = hash_at(elem, scope, item, h, depth + 1)?;
            }
            Ok(h)
        }
        (Schema::Tuple(members), Value::Tuple(items)) if members.len() == items.len() => {
            if is_fixed_width(node) {
                let mut bytes = Vec::new();
                head_bytes(node, value, &mut bytes)?;
                return Ok(xxh64(&bytes, seed));
            }
            let mut h = seed;
            for (member, item) in members.iter().zip(items) {
                h = hash_at(member, scope, item, h, depth + 1)?;
            }
            Ok(h)
        }
        (Schema::Record(fields), Value::Record(items)) if fields.len() == items.len() => {
            let mut h = seed;
            for ((_, member), item) in fields.iter().zip(items) {
                h = hash_at(member, scope, item, h, depth + 1)?;
            }
            Ok(h)
        }
        (Schema::Optional(_), Value::Optional(None)) => Ok(xxh64(&[0xff; 8], seed)),
        (Schema::Optional(inner), Value::Optional(Some(v))) => {
            hash_at(inner, scope, v, seed, depth + 1)
        }
        (Schema::Nil | Schema::Bool | Schema::Int { .. } | Schema::Float { .. }, _) => {
            let mut bytes = Vec::new();
            head_bytes(node, value, &mut bytes)?;
            Ok(xxh64(&bytes, seed))
        }
        _ => Err(mismatch()),
    }
}

/// Appends the little-endian voidstar head of a fixed-width value
/// (padding bytes zero).
fn head_bytes(node: &Schema, value: &Value, out: &mut Vec<u8>) -> Result<(), String> {
    match (node, value) {
        (Schema::Nil, Value::Nil) => {}
        (Schema::Bool, Value::Bool(b)) => out.push(*b as u8),
        (Schema::Int { bytes, .. }, Value::Int(i)) => {
            out.extend_from_slice(&i.to_le_bytes()[..*bytes as usize])
        }
        (Schema::Int { bytes, .. }, Value::UInt(u)) => {
            out.extend_from_slice(&u.to_le_bytes()[..*bytes as usize])
        }
        (Schema::Float { bytes: 4 }, Value::Float(f)) => {
            out.extend_from_slice(&(*f as f32).to_le_bytes())
        }
        (Schema::Float { .. }, Value::Float(f)) => out.extend_from_slice(&f.to_le_bytes()),
        (Schema::Named { body, .. }, _) => head_bytes(body, value, out)?,
        (Schema::Tuple(members), Value::Tuple(items)) if members.len() == items.len() => {
            // Fixed-width tuples contain no back-references, so the tuple
            // alone compiles to its layout.
            let layout = Layout::new(node).map_err(|e| e.to_string())?;
            let root = layout.node(layout.root());
            let (width, offsets): (usize, Vec<usize>) = match &root.kind {
                NodeKind::Tuple(members) => {
                    (root.width, members.iter().map(|m| m.offset).collect())
                }
                _ => return Err(format!("tuple layout of {node} is inconsistent")),
            };
            let start = out.len();
            out.resize(start + width, 0);
            for ((member, item), offset) in members.iter().zip(items).zip(offsets) {
                let mut head = Vec::new();
                head_bytes(member, item, &mut head)?;
                let at = start + offset;
                match out.get_mut(at..at + head.len()) {
                    Some(slot) => slot.copy_from_slice(&head),
                    None => return Err(format!("tuple layout of {node} is inconsistent")),
                }
            }
        }
        _ => return Err(format!("value does not match schema {node}")),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::schema::parse;
    use crate::format::value::BigInt;

    #[test]
    fn xxh64_matches_published_vectors() {
        let pangram = b"The quick brown fox jumps over the lazy dog";
        let spam = b"Nobody inspects the spammish repetition";
        let cases: &[(&[u8], u64, u64)] = &[
            (b"", 0, 0xef46db3751d8e999),
            (b"", 1, 0xd5afba1336a3be4b),
            (b"a", 0, 0xd24ec4f1a98c6e5b),
            (b"abc", 0, 0x44bc2cf5ad770999),
            (b"abc", 5381, 0x19d1c1b5c673451f),
            (spam, 0, 0xfbcea83c8a378bf1),
            (spam, 123, 0xa8ba45551f24b7ae),
            (pangram, 0, 0x0b242d361fda71bc),
            (b"12345678901234567890123456789012", 0, 0x40fd1aa52d98274c),
            (
                b"12345678901234567890123456789012",
                5381,
                0x38ea26e7c55f8095,
            ),
        ];
        for (data, seed, want) in cases {
            assert_eq!(
                xxh64(data, *seed),
                *want,
                "{:?} seed {seed}",
                String::from_utf8_lossy(data)
            );
        }
    }

    #[track_caller]
    fn check(schema: &str, value: Value, want: &str) {
        let schema = parse(schema).unwrap();
        let h = hash_value(&schema, &value).unwrap();
        assert_eq!(format!("{h:016x}"), want);
    }

    #[test]
    fn reference_vectors() {
        check("i4", Value::Int(42), "28c71650acc0b031");
        check("s", Value::Str(b"abc".to_vec()), "0bad903b9314fc72");
    }

    #[test]
    fn hints_and_names_do_not_change_hashes() {
        let h = |s: &str, v: &Value| hash_value(&parse(s).unwrap(), v).unwrap();
        let n = Value::Int(42);
        assert_eq!(h("<int>i4", &n), h("i4", &n));
        let pair = Value::Tuple(vec![Value::Int(1), Value::Int(2)]);
        assert_eq!(h("<p>t2i1i4", &pair), h("t2i1i4", &pair));
        // Different shapes of the same bytes differ.
        assert_ne!(h("i4", &n), h("i8", &n));
        let nested = Value::List(vec![Value::List(vec![
            Value::Float(1.0),
            Value::Float(2.0),
        ])]);
        let flat = Value::List(vec![Value::Float(1.0), Value::Float(2.0)]);
        assert_ne!(h("aaf8", &nested), h("af8", &flat));
    }

    #[test]
    fn every_shape_hashes() {
        let big = Value::BigInt(BigInt { limbs: vec![0, 1] });
        let tree = Value::Record(vec![
            Value::BigInt(BigInt { limbs: vec![1] }),
            Value::List(vec![Value::Record(vec![
                Value::BigInt(BigInt { limbs: vec![2] }),
                Value::List(vec![]),
            ])]),
        ]);
        let cases: Vec<(&str, Value)> = vec![
            ("z", Value::Nil),
            ("b", Value::Bool(true)),
            ("u8", Value::UInt(u64::MAX)),
            ("f4", Value::Float(1.5)),
            ("j", big),
            ("s", Value::Str(Vec::new())),
            ("as", Value::List(vec![Value::Str(b"x".to_vec())])),
            (
                "at2i1i4",
                Value::List(vec![Value::Tuple(vec![Value::Int(1), Value::Int(2)])]),
            ),
            (
                "t2js",
                Value::Tuple(vec![
                    Value::BigInt(BigInt { limbs: vec![0] }),
                    Value::Str(Vec::new()),
                ]),
            ),
            ("?i4", Value::Optional(None)),
            ("?i4", Value::Optional(Some(Box::new(Value::Int(7))))),
            ("F", Value::Handle(b"/tmp/x".to_vec())),
            ("&4Treem25valuej8childrena^4Tree", tree),
        ];
        for (schema, value) in cases {
            assert!(
                hash_value(&parse(schema).unwrap(), &value).is_ok(),
                "{schema}"
            );
        }
        assert!(hash_value(&parse("i4").unwrap(), &Value::Str(Vec::new())).is_err());
    }
}
