//! Compilation: the JSON expression tree of a pure command (pure-eval.md)
//! into [`Node`]s, checked once at start-up so evaluation never meets a
//! malformed tree.

use super::*;

pub(super) fn str_field<'j>(j: &'j Json, key: &str) -> &'j str {
    j.get(key).and_then(Json::as_str).unwrap_or("")
}

pub(super) fn array_field<'j>(j: &'j Json, key: &str) -> &'j [Json] {
    j.get(key)
        .and_then(Json::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn schema_field(j: &Json) -> Result<Schema, EvalError> {
    let text = str_field(j, "schema");
    schema::parse(text)
        .map_err(|e| EvalError::malformed(format!("schema error: {e} in \"{text}\"")))
}

/// A missing child compiles like JSON `null`, which fails with the
/// reference's "missing 'tag'" message.
fn child(j: &Json, key: &str, depth: usize) -> Result<Box<Node>, EvalError> {
    Ok(Box::new(compile_node(
        j.get(key).unwrap_or(&Json::Null),
        depth + 1,
    )?))
}

fn children(j: &Json, key: &str, depth: usize) -> Result<Vec<Node>, EvalError> {
    array_field(j, key)
        .iter()
        .map(|e| compile_node(e, depth + 1))
        .collect()
}

fn strings(j: &Json, key: &str) -> Vec<Vec<u8>> {
    array_field(j, key)
        .iter()
        .map(|s| s.as_str().unwrap_or("").as_bytes().to_vec())
        .collect()
}

pub(super) fn compile_node(j: &Json, depth: usize) -> Result<Node, EvalError> {
    if depth > MAX_TREE_DEPTH {
        return Err(EvalError::malformed(format!(
            "expression tree nesting exceeds {MAX_TREE_DEPTH} levels"
        )));
    }
    let Some(tag) = j.get("tag").and_then(Json::as_str) else {
        return Err(EvalError::malformed("Expression missing 'tag' field"));
    };
    let node = match tag {
        "lit" => compile_lit(j)?,
        "str" => compile_str(j)?,
        "container" => compile_container(j, depth)?,
        "app" => compile_app(j, depth)?,
        "lambda" => {
            let body = child(j, "body", depth)?;
            let vars = array_field(j, "vars")
                .iter()
                .map(|v| v.as_str().unwrap_or("").to_string())
                .collect();
            Node::Lambda(Lambda { vars, body })
        }
        "bound" => Node::Bound {
            schema: schema_field(j)?,
            var: str_field(j, "var").to_string(),
        },
        "interpolation" => Node::Interpolation {
            schema: schema_field(j)?,
            strings: strings(j, "strings"),
        },
        "pattern" => {
            let schema = schema_field(j)?;
            let pattern = pattern::compile(j.get("pattern").unwrap_or(&Json::Null), depth + 1)?;
            Node::Pattern { schema, pattern }
        }
        "map" => {
            let schema = schema_field(j)?;
            if !matches!(schema.peel_named(), Schema::List { .. }) {
                return Err(EvalError::malformed(format!(
                    "map schema \"{schema}\" is not a list"
                )));
            }
            Node::Map {
                schema,
                func: child(j, "func", depth)?,
                list: child(j, "list", depth)?,
            }
        }
        "if" => Node::If {
            cond: child(j, "cond", depth)?,
            then: child(j, "then", depth)?,
            otherwise: child(j, "else", depth)?,
            schema: schema_field(j)?,
        },
        "throw" => Node::Throw {
            msg: child(j, "msg", depth)?,
        },
        "catch" => Node::Catch {
            fallible: child(j, "fallible", depth)?,
            fallback: child(j, "fallback", depth)?,
        },
        "show" => Node::Show {
            schema: schema_field(j)?,
            child: child(j, "child", depth)?,
        },
        "read" => Node::Read {
            schema: schema_field(j)?,
            child: child(j, "child", depth)?,
        },
        "hash" => Node::Hash {
            schema: schema_field(j)?,
            child: child(j, "child", depth)?,
        },
        "load" => Node::Load {
            schema: schema_field(j)?,
            child: child(j, "child", depth)?,
        },
        "save" => Node::Save {
            format: SaveFormat::from_name(
                j.get("format").and_then(Json::as_str).unwrap_or("voidstar"),
            ),
            level: child(j, "level", depth)?,
            value: child(j, "value", depth)?,
            path: child(j, "path", depth)?,
        },
        "open" | "fschema" | "open_ostream" | "append" => {
            unsupported(j, tag, depth, &["path"], true)?
        }
        "flen" | "next" | "streamlayout" | "stream" => {
            unsupported(j, tag, depth, &["handle"], true)?
        }
        "ifile_walk" => {
            children(j, "args", depth)?;
            unsupported(j, tag, depth, &["handle"], true)?
        }
        "close" | "flush" => unsupported(j, tag, depth, &["handle"], false)?,
        "write" => unsupported(j, tag, depth, &["level", "value", "handle"], false)?,
        "concat" => unsupported(j, tag, depth, &["paths", "dest"], false)?,
        "stdin" | "stdout" | "stderr" => unsupported(j, tag, depth, &[], true)?,
        _ => {
            return Err(EvalError::malformed(format!(
                "Unknown expression tag: {tag}"
            )))
        }
    };
    Ok(node)
}

fn compile_lit(j: &Json) -> Result<Node, EvalError> {
    let schema = schema_field(j)?;
    let lit_type = str_field(j, "lit_type");
    // The reference reads a missing value as "0".
    let text = j.get("value").and_then(Json::as_str).unwrap_or("0");
    let value = literal(lit_type, text)?;
    match schema::parse(lit_type) {
        Ok(expected) if expected == *schema.peel_named() => {}
        _ => {
            return Err(EvalError::malformed(format!(
                "lit schema \"{schema}\" does not match lit_type \"{lit_type}\""
            )));
        }
    }
    Ok(Node::Const { schema, value })
}

fn compile_str(j: &Json) -> Result<Node, EvalError> {
    let schema = schema_field(j)?;
    let bytes = str_field(j, "value").as_bytes().to_vec();
    let value = match schema.peel_named() {
        Schema::Str => Value::Str(bytes),
        // Resolved paths (`@datafile`) may be typed as file handles.
        Schema::Handle(_) => Value::Handle(bytes),
        _ => {
            return Err(EvalError::malformed(format!(
                "str literal schema \"{schema}\" is not a string"
            )))
        }
    };
    Ok(Node::Const { schema, value })
}

fn compile_container(j: &Json, depth: usize) -> Result<Node, EvalError> {
    let schema = schema_field(j)?;
    let elements = children(j, "elements", depth)?;
    let expected = match schema.peel_named() {
        Schema::List { .. } => None,
        Schema::Tuple(members) => Some(members.len()),
        Schema::Record(fields) => Some(fields.len()),
        Schema::Optional(_) if elements.len() <= 1 => None,
        Schema::Optional(_) => {
            return Err(EvalError::malformed(format!(
                "optional container has {} elements, expected 0 or 1",
                elements.len()
            )));
        }
        _ => {
            return Err(EvalError::malformed(
                "Container schema is not a container type",
            ))
        }
    };
    if let Some(n) = expected.filter(|n| *n != elements.len()) {
        return Err(EvalError::malformed(format!(
            "container of schema \"{schema}\" has {} elements, expected {n}",
            elements.len()
        )));
    }
    Ok(Node::Container { schema, elements })
}

fn compile_app(j: &Json, depth: usize) -> Result<Node, EvalError> {
    let schema = schema_field(j)?;
    let func = match *child(j, "func", depth)? {
        Node::Lambda(lambda) => Func::Lambda(lambda),
        Node::Pattern { pattern, .. } => Func::Pattern(pattern),
        Node::Interpolation { strings, .. } => Func::Interpolation(strings),
        other => {
            return Err(EvalError::malformed(format!(
                "Invalid function in app expression (type={})",
                other.tag()
            )));
        }
    };
    let args = children(j, "args", depth)?;
    Ok(Node::App { schema, func, args })
}

/// A file or stream intrinsic: validates the named children and the node
/// schema (`typed`; Unit otherwise), then keeps only the tag.
fn unsupported(
    j: &Json,
    tag: &str,
    depth: usize,
    keys: &[&str],
    typed: bool,
) -> Result<Node, EvalError> {
    let schema = if typed { schema_field(j)? } else { Schema::Nil };
    for key in keys {
        child(j, key, depth)?;
    }
    Ok(Node::Unsupported {
        tag: tag.to_string(),
        schema,
    })
}

/// Parses the text of a `lit` node. The reference silently turns an
/// unparsable number into 0; a literal that does not parse is rejected here.
fn literal(lit_type: &str, text: &str) -> Result<Value, EvalError> {
    let bad = || EvalError::malformed(format!("invalid {lit_type} literal \"{text}\""));
    fn int<T: std::str::FromStr + Into<i64>>(text: &str) -> Option<Value> {
        text.parse::<T>().ok().map(|v| Value::Int(v.into()))
    }
    fn uint<T: std::str::FromStr + Into<u64>>(text: &str) -> Option<Value> {
        text.parse::<T>().ok().map(|v| Value::UInt(v.into()))
    }
    let value = match lit_type {
        "f4" => text.parse::<f32>().ok().map(|v| Value::Float(v as f64)),
        "f8" => text.parse::<f64>().ok().map(Value::Float),
        "i1" => int::<i8>(text),
        "i2" => int::<i16>(text),
        "i4" => int::<i32>(text),
        "i8" => int::<i64>(text),
        "u1" => uint::<u8>(text),
        "u2" => uint::<u16>(text),
        "u4" => uint::<u32>(text),
        "u8" => uint::<u64>(text),
        "j" => parse_decimal(text.trim()).map(Value::BigInt),
        "b" => Some(Value::Bool(text != "0")),
        "z" => Some(Value::Nil),
        _ => {
            return Err(EvalError::malformed(format!(
                "Unknown lit_type: {lit_type}"
            )))
        }
    };
    value.ok_or_else(bad)
}

/// Parses an optionally negative decimal integer of any length into minimal
/// two's-complement limbs (the [`BigInt`] invariant).
pub(super) fn parse_decimal(text: &str) -> Option<BigInt> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // The magnitude, base 2^64, least significant limb first.
    let mut limbs: Vec<u64> = vec![0];
    for digit in digits.bytes() {
        let mut carry = (digit - b'0') as u128;
        for limb in limbs.iter_mut() {
            let wide = *limb as u128 * 10 + carry;
            *limb = wide as u64;
            carry = wide >> 64;
        }
        if carry > 0 {
            limbs.push(carry as u64);
        }
    }
    if negative && limbs.iter().any(|l| *l != 0) {
        let mut carry = true;
        for limb in limbs.iter_mut() {
            let (sum, overflow) = (!*limb).overflowing_add(carry as u64);
            *limb = sum;
            carry = overflow;
        }
        if limbs.last().is_some_and(|top| top >> 63 == 0) {
            limbs.push(u64::MAX);
        }
    } else if limbs.last().is_some_and(|top| top >> 63 == 1) {
        limbs.push(0);
    }
    Some(BigInt { limbs })
}
