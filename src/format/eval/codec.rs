//! The evaluator's calls into the data codecs, gathered in one place.
//!
//! `@show`, `@read`, `@save` and `@load` convert values to and from JSON,
//! msgpack and flat voidstar blobs. Keeping every such call here means the
//! rest of the evaluator sees one small interface with string errors, and a
//! codec signature change touches only this file.

use serde_json::Value as Json;

use crate::format::schema::Schema;
use crate::format::value::{self, Value};
use crate::{format::msgpack, format::voidstar};

/// JSON text of a value (`schema-and-data.md` §10.2).
pub(super) fn to_json(schema: &Schema, value: &Value) -> Result<String, String> {
    let mut out = String::new();
    value::to_json(schema, value, &mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

/// A parsed JSON document converted with a schema (§10.1).
pub(super) fn from_json(schema: &Schema, json: &Json) -> Result<Value, String> {
    value::from_json(schema, json, "").map_err(|e| e.to_string())
}

/// The flat voidstar blob of a value (§6).
pub(super) fn voidstar_encode(schema: &Schema, value: &Value) -> Result<Vec<u8>, String> {
    voidstar::encode_flat(schema, value).map_err(|e| e.to_string())
}

/// A value read back from a flat voidstar blob.
pub(super) fn voidstar_decode(schema: &Schema, blob: &[u8]) -> Result<Value, String> {
    voidstar::decode_flat(schema, blob).map_err(|e| e.to_string())
}

/// The raw msgpack encoding of a value (§4).
pub(super) fn msgpack_encode(schema: &Schema, value: &Value) -> Result<Vec<u8>, String> {
    msgpack::encode(schema, value).map_err(|e| e.to_string())
}

/// A value read from raw msgpack bytes.
pub(super) fn msgpack_decode(schema: &Schema, bytes: &[u8]) -> Result<Value, String> {
    msgpack::decode(schema, bytes).map_err(|e| e.to_string())
}
