//! TODO(msgpack)

// TEMP-SHIM: tiny stand-ins for the codec helper's msgpack codec so the
// evaluator branch compiles; replaced by the real ones.
use crate::schema::Schema;
use crate::value::Value;

#[derive(Debug)]
pub struct MsgpackError(pub String);

impl std::fmt::Display for MsgpackError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

pub fn encode(schema: &Schema, v: &Value) -> Result<Vec<u8>, MsgpackError> {
    Ok(match (schema, v) {
        (Schema::Int { .. }, Value::Int(i)) if (0..128).contains(i) => vec![*i as u8],
        (Schema::Str, Value::Str(s)) if s.len() < 32 => {
            let mut out = vec![0xa0 | s.len() as u8];
            out.extend_from_slice(s);
            out
        }
        _ => return Err(MsgpackError("shim: unsupported".into())),
    })
}

pub fn decode(schema: &Schema, bytes: &[u8]) -> Result<Value, MsgpackError> {
    Ok(match (schema, bytes) {
        (Schema::Int { .. }, [b]) if *b < 128 => Value::Int(*b as i64),
        (Schema::Str, [m, rest @ ..]) if m & 0xe0 == 0xa0 && rest.len() == (m & 0x1f) as usize => {
            Value::Str(rest.to_vec())
        }
        _ => return Err(MsgpackError("shim: unsupported msgpack".into())),
    })
}
