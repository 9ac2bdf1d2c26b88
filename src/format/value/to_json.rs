//! Value -> JSON text: the compact JSON of a result, exact for big integers
//! and with shortest round-trip floats (see [`crate::format::json`]).

use super::*;

/// Appends the compact JSON text of `value` (typed by `schema`) to `out`.
///
/// Integers (fixed and big) are exact decimals; floats use the shortest
/// round-trip digits ([`json::write_f64`], [`json::write_f32`] for `f4`).
/// NaN and infinities become the strings `"nan"`, `"inf"` and `"-inf"`,
/// as in the reference. Records are objects in schema field order. String
/// bytes that are not UTF-8 are replaced with U+FFFD (the reference prints
/// an empty string instead).
pub fn to_json(schema: &Schema, value: &Value, out: &mut String) -> Result<(), EncodeError> {
    let layout = Layout::new(schema)?;
    write_json(&layout, layout.root(), value, out, 0)
}

/// [`to_json`] with an already compiled layout.
pub fn to_json_with(layout: &Layout, value: &Value, out: &mut String) -> Result<(), EncodeError> {
    write_json(layout, layout.root(), value, out, 0)
}

fn write_json(
    layout: &Layout,
    id: NodeId,
    value: &Value,
    out: &mut String,
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
        (NodeKind::Nil, Value::Nil) => out.push_str("null"),
        (NodeKind::Bool, Value::Bool(b)) => out.push_str(if *b { "true" } else { "false" }),
        (NodeKind::Int { signed, bytes }, v) => {
            out.push_str(&check_int(v, *signed, *bytes, kind)?.to_string())
        }
        (NodeKind::BigInt, v) => out.push_str(&big_value(v).ok_or_else(mismatch)?.to_decimal()),
        (NodeKind::Float { bytes }, Value::Float(x)) => {
            if x.is_nan() {
                out.push_str("\"nan\"");
            } else if x.is_infinite() {
                out.push_str(if *x > 0.0 { "\"inf\"" } else { "\"-inf\"" });
            } else if *bytes == 4 {
                json::write_f32(out, *x as f32);
            } else {
                json::write_f64(out, *x);
            }
        }
        (NodeKind::Str, Value::Str(bytes)) | (NodeKind::Handle(_), Value::Handle(bytes)) => {
            json::write_str(out, &String::from_utf8_lossy(bytes));
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
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(layout, *elem, item, out, depth + 1)?;
            }
            out.push(']');
        }
        (NodeKind::Tuple(members), Value::Tuple(items)) => {
            if items.len() != members.len() {
                return Err(EncodeError::new(EncodeErrorKind::Members {
                    expected: members.len(),
                    got: items.len(),
                }));
            }
            out.push('[');
            for (i, (item, m)) in items.iter().zip(members).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(layout, m.node, item, out, depth + 1)?;
            }
            out.push(']');
        }
        (NodeKind::Record(members), Value::Record(items)) => {
            if items.len() != members.len() {
                return Err(EncodeError::new(EncodeErrorKind::Members {
                    expected: members.len(),
                    got: items.len(),
                }));
            }
            out.push('{');
            for (i, (item, m)) in items.iter().zip(members).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json::write_str(out, &m.key);
                out.push(':');
                write_json(layout, m.node, item, out, depth + 1)?;
            }
            out.push('}');
        }
        (NodeKind::Optional(_), Value::Optional(None)) => out.push_str("null"),
        (NodeKind::Optional(inner), Value::Optional(Some(v))) => {
            write_json(layout, *inner, v, out, depth + 1)?
        }
        (NodeKind::Table, _) => return Err(EncodeError::new(EncodeErrorKind::Table)),
        _ => return Err(mismatch()),
    }
    Ok(())
}
