//! TODO(voidstar)

// TEMP-SHIM: scalar/Str-only stand-ins for the codec helper's flat voidstar
// codec so the evaluator branch compiles; replaced by the real ones.
use crate::schema::Schema;
use crate::value::Value;

#[derive(Debug)]
pub struct EncodeError(pub String);

impl std::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

pub fn encode_flat(schema: &Schema, v: &Value) -> Result<Vec<u8>, EncodeError> {
    Ok(match (schema, v) {
        (Schema::Int { bytes, .. }, Value::Int(i)) => i.to_le_bytes()[..*bytes as usize].to_vec(),
        (Schema::Str, Value::Str(s)) => {
            let mut out = (s.len() as u64).to_le_bytes().to_vec();
            out.extend_from_slice(&(if s.is_empty() { 0u64 } else { 16 }).to_le_bytes());
            out.extend_from_slice(s);
            out
        }
        _ => return Err(EncodeError("shim: unsupported".into())),
    })
}

pub fn decode_flat(schema: &Schema, blob: &[u8]) -> Result<Value, EncodeError> {
    let short = || EncodeError("shim: blob too short".into());
    Ok(match schema {
        Schema::Int { bytes, .. } => {
            let mut b = [0u8; 8];
            b[..*bytes as usize].copy_from_slice(blob.get(..*bytes as usize).ok_or_else(short)?);
            Value::Int(i64::from_le_bytes(b))
        }
        Schema::Str => {
            let n = u64::from_le_bytes(blob.get(..8).ok_or_else(short)?.try_into().unwrap_or([0; 8])) as usize;
            Value::Str(blob.get(16..16 + n).ok_or_else(short)?.to_vec())
        }
        _ => return Err(EncodeError("shim: unsupported".into())),
    })
}
