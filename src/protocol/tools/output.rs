//! The `outputSchema` of a tool: which commands advertise one, in which era.
//!
//! Legacy (before 2026-07-28) keeps the reference's rule: a record return
//! only, written the reference's way. MCP 2026-07-28 lets `structuredContent`
//! be any JSON value (SEP-2106), so there every command whose return type is
//! known and whose result is JSON gets one, recursive types as `$defs`. Two
//! kinds of command advertise none in that era: a media return (`mime`: the
//! answer is an image, audio or resource block, with no structured value)
//! and a tool with `_render` projections (a projection answers with media,
//! which no schema of the typed value describes).
//!
//! Architecture Invariant: pure; no I/O.

use serde_json::{Map, Value};

use crate::format::manifest::Command;
use crate::format::schema::Schema;

use super::{emit, Emit};

/// The `outputSchema` a tool for `command` advertises, if any; `modern`
/// selects MCP 2026-07-28 (see the module doc). Without the dialect key:
/// the modern `tools/list` names it on every schema.
pub fn output_schema(command: &Command, modern: bool) -> Option<Value> {
    let ret = command.ret.schema.schema()?;
    let wanted = if modern {
        command.ret.mime.is_none() && command.terminals.is_empty()
    } else {
        matches!(ret.peel_named(), Schema::Record(_))
    };
    if !wanted {
        return None;
    }
    // Its own definitions: `$ref`s resolve against the schema's root.
    let mut e = if modern {
        Emit::modern()
    } else {
        Emit::default()
    };
    let mut output = emit(ret, &mut e);
    if let Some(defs) = e.take_defs() {
        if let Value::Object(map) = &mut output {
            map.insert("$defs".into(), Value::Object(defs));
        }
    }
    Some(output)
}

/// `schema` widened to also accept `alternative`: `anyOf` the two, with
/// `$schema` and `$defs` kept at the root (so `$ref`s still resolve) and
/// `type: object` kept there when `schema` has it (legacy revisions want an
/// object schema). A schema that is not an object is returned as it is.
pub fn accept_also(schema: Value, alternative: Value) -> Value {
    let Value::Object(mut inner) = schema else {
        return schema;
    };
    let mut out = Map::new();
    if let Some(dialect) = inner.remove("$schema") {
        out.insert("$schema".into(), dialect);
    }
    if inner.get("type").and_then(Value::as_str) == Some("object") {
        out.insert("type".into(), Value::String("object".into()));
    }
    let defs = inner.remove("$defs");
    out.insert(
        "anyOf".into(),
        Value::Array(vec![Value::Object(inner), alternative]),
    );
    if let Some(defs) = defs {
        out.insert("$defs".into(), defs);
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests;
