//! The CALL packet of a remote `tools/call` whose arguments arrived as JSON
//! text: checked and encoded straight from the text into one buffer.
//!
//! This is what [`super::call::prepare`] does for typed values, with the
//! same messages in the same order: every argument is checked before any is
//! encoded (so the first invalid one is reported even when an earlier one
//! cannot be encoded), and the bytes are identical. A supplied value goes
//! text to voidstar ([`voidstar::text`]); defaults, flags and assembled
//! records are small trees and take the typed path. The buffer is sized once
//! from the plans, so building it costs the packet and nothing more. Schemas
//! and layouts are the program's, compiled at load.
//!
//! Architecture Invariant: pure; no I/O.

use crate::format::packet;
use crate::format::value;
use crate::format::voidstar::{self, text};
use crate::protocol::args::Source;

use super::Program;

/// One argument, checked and ready to be written.
enum Ready<'a> {
    Text(text::Plan<'a>),
    /// The typed path's blob (or its encoding error message).
    Blob(Result<Vec<u8>, String>),
}

/// Checks the arguments of `command` and encodes its CALL packet. The error
/// is the message of the call's `isError` result.
pub fn call_packet(
    program: &Program,
    command: usize,
    sources: &[Source],
) -> Result<Vec<u8>, String> {
    let cmd = program.command(command);
    if sources.len() != cmd.args.len() {
        return Err(format!(
            "expected {} arguments, got {}",
            cmd.args.len(),
            sources.len()
        ));
    }
    // Schemas, wire strings and layouts, compiled at load.
    let slots = &program.compiled(command).slots;
    let mut forms = Vec::with_capacity(sources.len());
    for slot in slots {
        forms.push(slot.form()?);
    }
    let mut ready = Vec::with_capacity(sources.len());
    for (slot, source) in sources.iter().enumerate() {
        let name = &slots[slot].name;
        let form = forms[slot];
        ready.push(match source {
            Source::Text(json) => {
                let layout = form.layout(name).map_err(|e| e.to_string())?;
                Ready::Text(text::plan(layout, json, name).map_err(|e| e.to_string())?)
            }
            Source::Json(json) => {
                let layout = form.layout(name).map_err(|e| e.to_string())?;
                let v = value::from_json_with(layout, json, name).map_err(|e| e.to_string())?;
                Ready::Blob(
                    voidstar::encode_flat_with(layout, &v)
                        .map_err(|e| format!("cannot encode argument '{name}': {e}")),
                )
            }
        });
    }
    let mut total = packet::HEADER_LEN;
    for (slot, r) in ready.iter().enumerate() {
        let name = &slots[slot].name;
        let len = match r {
            Ready::Text(plan) => match plan.encode_error() {
                Some(e) => return Err(format!("cannot encode argument '{name}': {e}")),
                None => plan.size(),
            },
            Ready::Blob(Ok(blob)) => blob.len(),
            Ready::Blob(Err(message)) => return Err(message.clone()),
        };
        total += packet::data_packet_len(&forms[slot].wire, len);
    }
    let mut out = Vec::with_capacity(total);
    let call = packet::begin_call_packet(&mut out);
    for (r, form) in ready.iter().zip(&forms) {
        let wire = &form.wire;
        let start = packet::begin_data_packet(&mut out, wire);
        match r {
            Ready::Text(plan) => plan.write(&mut out),
            Ready::Blob(Ok(blob)) => out.extend_from_slice(blob),
            Ready::Blob(Err(_)) => {}
        }
        packet::end_data_packet(&mut out, start, wire);
    }
    packet::end_call_packet(&mut out, call, cmd.mid);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::args;
    use crate::protocol::mcp::{slot_name, slot_schema};

    fn program() -> Program {
        crate::protocol::mcp::shapes_program()
    }

    /// The typed path: `prepare`, then one DATA packet per value.
    fn typed(
        program: &Program,
        command: usize,
        args: Vec<serde_json::Value>,
    ) -> Result<Vec<u8>, String> {
        let cmd = program.command(command);
        let mut parts = Vec::new();
        for (slot, (arg, json)) in cmd.args.iter().zip(&args).enumerate() {
            let name = slot_name(cmd, slot);
            let schema = slot_schema(arg)
                .map_err(|why| format!("argument '{name}' cannot be passed: {why}"))?;
            let v = value::from_json(&schema, json, &name).map_err(|e| e.to_string())?;
            let blob = voidstar::encode_flat(&schema, &v).map_err(|e| e.to_string())?;
            parts.push(packet::data_packet_voidstar(
                &schema.to_wire_string(),
                &blob,
            ));
        }
        Ok(packet::call_packet(cmd.mid, &parts))
    }

    #[test]
    fn packets_and_errors_match_the_typed_path() {
        let program = program();
        let cases = [
            r#"{"name":"addOne","arguments":{"_1":41}}"#,
            r#"{"name":"addOne","arguments":{"_1":"123456789012345678901234567890"}}"#,
            r#"{"name":"addOne","arguments":{"_1":1.5}}"#,
            r#"{"name":"scale","arguments":{"_1":3}}"#,
            r#"{"name":"scale","arguments":{"_1":3,"factor":-7}}"#,
            r#"{"name":"scale","arguments":{"_1":"x","factor":"y"}}"#,
            r#"{"name":"sumPoints","arguments":{"_1":[{"x":1,"y":2},{"y":4,"x":3}]}}"#,
            r#"{"name":"sumPoints","arguments":{"_1":[{"x":1,"y":2},{"x":3}]}}"#,
            r#"{"name":"swapPair","arguments":{"_1":[7,"seven"]}}"#,
            r#"{"name":"mapInc","arguments":{"_1":[["a",1],["b",2]]}}"#,
            r#"{"name":"hello","arguments":{"_1":"w\u00f6rld \ud83d\ude00"}}"#,
            r#"{"name":"maybeDouble","arguments":{"_1":null}}"#,
            r#"{"name":"scaleReal","arguments":{"_1":1e400,"_2":2}}"#,
            r#"{"name":"configWhole","arguments":{"configwhole":{"numThreads":4}}}"#,
            r#"{"name":"configWhole","arguments":{"configwhole":{"numThreads":"x"}}}"#,
            r#"{"name":"configFlat","arguments":{"numThreads":4,"removeCaches":true}}"#,
        ];
        let mut checked = 0;
        for case in cases {
            let params: serde_json::Value = serde_json::from_str(case).unwrap();
            let text = params["arguments"].to_string();
            let mut stripped = params.clone();
            stripped["arguments"] = serde_json::Value::Null;
            let tree = args::resolve(&program.surface, Some(&params)).unwrap();
            let streamed = args::resolve_text(&program.surface, Some(&stripped), &text).unwrap();
            let command = tree.command.clone().unwrap();
            let want = typed(&program, command, tree.args);
            let got = call_packet(&program, command, &streamed.args);
            assert_eq!(got, want, "{case}");
            checked += usize::from(got.is_ok());
        }
        assert!(checked >= 10, "only {checked} packets compared");
    }
}
