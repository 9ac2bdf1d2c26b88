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
//! [`PacketJob`] is this work made resumable (each argument through
//! [`text::Sliced`]): a text longer than [`SLICE_ABOVE`] is encoded a
//! bounded step at a time, so the reactor can serve other events between
//! steps; shorter ones run to the end at once.
//!
//! Architecture Invariant: pure; no I/O.

use std::rc::Rc;

use crate::format::packet;
use crate::format::schema::Schema;
use crate::format::value::{self, Layout, LayoutError, ValueError, ValueErrorKind};
use crate::format::voidstar::{self, text};
use crate::protocol::args::Source;

use super::Program;

/// One argument slot of a command, compiled at load (`call::Compiled`).
#[derive(Debug)]
pub struct Slot {
    /// The name a client knows the slot by, for messages (`call::slot_name`).
    pub name: String,
    /// How it is encoded, or why it cannot be passed (`call::slot_schema`).
    pub form: Result<Form, String>,
}

/// The schema an argument is encoded with, compiled.
#[derive(Debug)]
pub struct Form {
    pub schema: Schema,
    /// `schema` as the packet's metadata spells it.
    pub wire: String,
    pub layout: Result<Layout, LayoutError>,
}

impl Slot {
    /// The slot's schema and layout, or the message of a call that passes it.
    pub fn form(&self) -> Result<&Form, String> {
        self.form
            .as_ref()
            .map_err(|why| format!("argument '{}' cannot be passed: {why}", self.name))
    }
}

impl Form {
    /// The compiled layout, or its error as the value checks report it.
    pub fn layout(&self, name: &str) -> Result<&Layout, ValueError> {
        self.layout.as_ref().map_err(|e| ValueError {
            path: name.to_string(),
            kind: ValueErrorKind::Schema(e.0.clone()),
        })
    }
}

/// The one message for a call vector of the wrong length.
fn arity(expected: usize, sources: &[Source]) -> Result<(), String> {
    if sources.len() == expected {
        return Ok(());
    }
    Err(format!(
        "expected {expected} arguments, got {}",
        sources.len()
    ))
}

/// One argument, checked and ready to be written.
#[cfg(test)]
enum Ready<'a> {
    Text(text::Plan<'a>),
    /// The typed path's blob (or its encoding error message).
    Blob(Result<Vec<u8>, String>),
}

/// Checks the arguments of `command` and encodes its CALL packet. The error
/// is the message of the call's `isError` result. The one-shot form of
/// [`PacketJob`], kept to check it against.
#[cfg(test)]
pub fn call_packet(
    program: &Program,
    command: usize,
    sources: &[Source],
) -> Result<Vec<u8>, String> {
    let cmd = program.command(command);
    arity(cmd.args.len(), sources)?;
    // Schemas, wire strings and layouts, compiled at load.
    let slots = &program.compiled(command).slots;
    let mut forms = Vec::with_capacity(sources.len());
    for slot in slots.iter() {
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

/// Arguments texts up to this length are encoded at once; longer ones in
/// slices ([`PacketJob`]).
pub const SLICE_ABOVE: usize = 64 * 1024;

/// [`call_packet`] as resumable work: each [`PacketJob::step`] does a
/// bounded amount of it, and the outcome is the same packet or message.
/// Made while the arguments text is borrowed, it then needs the text for
/// good: the request's whole body handed over ([`PacketJob::take_text`],
/// no copy), or a copy of the arguments ([`PacketJob::copy_text`]); a short
/// text is encoded at once while still borrowed ([`PacketJob::run_on`]).
#[derive(Clone, Debug)]
pub struct PacketJob {
    /// The text holding the arguments (empty until handed over), and where
    /// they start in it.
    text: Vec<u8>,
    base: Option<usize>,
    /// The arguments' address and length when the job was made: how they
    /// are found again in the text handed over.
    origin: (usize, usize),
    mid: u32,
    /// The command's compiled slots (shared with the program, each with a
    /// usable form) and, slot by slot, what was given for it.
    slots: Rc<[Slot]>,
    sources: Vec<JobSource>,
    /// The slot being planned (then written).
    at: usize,
    writing: bool,
    out: Vec<u8>,
    /// Where the CALL header and the current DATA packet start in `out`.
    call: usize,
    data: Option<usize>,
}

#[derive(Clone, Debug)]
enum JobSource {
    /// A span of the arguments text, and its encoding so far.
    Text(std::ops::Range<usize>, Box<text::Sliced>),
    /// A small value: the typed path's blob (or its message) once checked.
    Json(serde_json::Value, Option<Result<Vec<u8>, String>>),
}

impl PacketJob {
    /// Prepares the packet of `command` for `sources`, whose texts are
    /// slices of `arguments`. The error is the message of the call's
    /// `isError` result (as [`call_packet`] gives it).
    pub fn new(
        program: &Program,
        command: usize,
        sources: &[Source],
        arguments: &str,
    ) -> Result<PacketJob, String> {
        let cmd = program.command(command);
        arity(cmd.args.len(), sources)?;
        let base = arguments.as_ptr() as usize;
        // Schemas, wire strings and layouts, compiled at load.
        let slots = Rc::clone(&program.compiled(command).slots);
        let mut given = Vec::with_capacity(sources.len());
        for (slot, source) in slots.iter().zip(sources) {
            slot.form()?;
            given.push(match source {
                Source::Text(t) => {
                    // A slice of `arguments`: its place in it.
                    let start = (t.as_ptr() as usize)
                        .checked_sub(base)
                        .filter(|s| s + t.len() <= arguments.len())
                        .ok_or_else(|| {
                            format!("argument '{}' is not in the arguments", slot.name)
                        })?;
                    JobSource::Text(start..start + t.len(), Box::default())
                }
                Source::Json(v) => JobSource::Json(v.clone(), None),
            });
        }
        Ok(PacketJob {
            text: Vec::new(),
            base: None,
            origin: (arguments.as_ptr() as usize, arguments.len()),
            mid: cmd.mid,
            slots,
            sources: given,
            at: 0,
            writing: false,
            out: Vec::new(),
            call: 0,
            data: None,
        })
    }

    /// The bytes the job holds (the text, and the packet so far).
    pub fn held(&self) -> usize {
        self.text.capacity() + self.out.capacity()
    }

    /// Where the arguments the job was made from are in `body` (the text
    /// they were borrowed from).
    fn place_in(&self, body: &[u8]) -> Option<usize> {
        let (address, len) = self.origin;
        address
            .checked_sub(body.as_ptr() as usize)
            .filter(|at| at.checked_add(len).is_some_and(|end| end <= body.len()))
    }

    /// Hands over `body`, the buffer the arguments were borrowed from
    /// (moved, not copied: its heap block stays where it was).
    pub fn take_text(&mut self, body: Vec<u8>) {
        if let Some(at) = self.place_in(&body) {
            self.text = body;
            self.base = Some(at);
        }
    }

    /// Copies the arguments out of `body`, the text they were borrowed from.
    pub fn copy_text(&mut self, body: &[u8]) {
        if let Some(at) = self.place_in(body) {
            self.text = body[at..at + self.origin.1].to_vec();
            self.base = Some(0);
        }
    }

    /// Does about `budget` units of work (see [`text::Sliced`]); the
    /// outcome once done.
    pub fn step(&mut self, mut budget: usize) -> Option<Result<Vec<u8>, String>> {
        let Some(base) = self.base else {
            let message = "internal error: the arguments text was not handed over";
            return Some(Err(message.into()));
        };
        let text = std::mem::take(&mut self.text);
        let arguments = text.get(base..base + self.origin.1).unwrap_or_default();
        let advanced = self.advance(arguments, &mut budget);
        self.text = text;
        self.outcome(advanced)
    }

    /// Runs the job to its end.
    #[cfg(test)]
    pub fn run(mut self) -> Result<Vec<u8>, String> {
        loop {
            if let Some(outcome) = self.step(usize::MAX) {
                return outcome;
            }
        }
    }

    /// Runs the job to its end on `arguments`, the text it was made from,
    /// still borrowed (nothing is copied).
    pub fn run_on(mut self, arguments: &str) -> Result<Vec<u8>, String> {
        if self.place_in(arguments.as_bytes()) != Some(0) {
            return Err("internal error: not the arguments text of the call".into());
        }
        loop {
            let mut budget = usize::MAX;
            let advanced = self.advance(arguments.as_bytes(), &mut budget);
            if let Some(outcome) = self.outcome(advanced) {
                return outcome;
            }
        }
    }

    fn outcome(&mut self, advanced: Result<bool, String>) -> Option<Result<Vec<u8>, String>> {
        match advanced {
            Ok(true) => Some(Ok(std::mem::take(&mut self.out))),
            Ok(false) => None,
            Err(message) => Some(Err(message)),
        }
    }

    /// Moves the job on over `arguments` (the arguments text itself).
    fn advance(&mut self, arguments: &[u8], budget: &mut usize) -> Result<bool, String> {
        while !self.writing {
            let (Some(slot), Some(source)) =
                (self.slots.get(self.at), self.sources.get_mut(self.at))
            else {
                self.begin_writing()?;
                break;
            };
            let form = slot.form()?;
            let name = &slot.name;
            match source {
                JobSource::Text(span, enc) => {
                    let layout = form.layout(name).map_err(|e| e.to_string())?;
                    let json = &arguments[span.clone()];
                    let done = enc
                        .plan_step(layout, json, name, budget)
                        .map_err(|e| e.to_string())?;
                    if !done {
                        return Ok(false);
                    }
                }
                JobSource::Json(json, blob) => {
                    let v =
                        value::from_json(&form.schema, json, name).map_err(|e| e.to_string())?;
                    *blob = Some(
                        voidstar::encode_flat(&form.schema, &v)
                            .map_err(|e| format!("cannot encode argument '{name}': {e}")),
                    );
                }
            }
            self.at += 1;
            if *budget == 0 {
                return Ok(false);
            }
        }
        while let (Some(slot), Some(source)) =
            (self.slots.get(self.at), self.sources.get_mut(self.at))
        {
            let form = slot.form()?;
            let start = match self.data {
                Some(start) => start,
                None => {
                    let start = packet::begin_data_packet(&mut self.out, &form.wire);
                    self.data = Some(start);
                    start
                }
            };
            match source {
                JobSource::Text(span, enc) => {
                    let Ok(layout) = &form.layout else {
                        return Err("internal error: an unplanned argument".into());
                    };
                    let json = &arguments[span.clone()];
                    if !enc.write_step(layout, json, &mut self.out, budget) {
                        return Ok(false);
                    }
                }
                JobSource::Json(_, Some(Ok(blob))) => self.out.extend_from_slice(blob),
                JobSource::Json(..) => {}
            }
            packet::end_data_packet(&mut self.out, start, &form.wire);
            self.data = None;
            self.at += 1;
            if *budget == 0 {
                return Ok(false);
            }
        }
        packet::end_call_packet(&mut self.out, self.call, self.mid);
        Ok(true)
    }

    /// Once every argument is checked: the encoding errors, in order, then
    /// the buffer sized for the whole packet.
    fn begin_writing(&mut self) -> Result<(), String> {
        let mut total = packet::HEADER_LEN;
        for (slot, source) in self.slots.iter().zip(&self.sources) {
            let len = match source {
                JobSource::Text(_, enc) => match enc.encode_error() {
                    Some(e) => return Err(format!("cannot encode argument '{}': {e}", slot.name)),
                    None => enc.size(),
                },
                JobSource::Json(_, Some(Ok(blob))) => blob.len(),
                JobSource::Json(_, Some(Err(message))) => return Err(message.clone()),
                JobSource::Json(_, None) => 0,
            };
            total += packet::data_packet_len(&slot.form()?.wire, len);
        }
        self.out = Vec::with_capacity(total);
        self.call = packet::begin_call_packet(&mut self.out);
        self.writing = true;
        self.at = 0;
        Ok(())
    }
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

    /// A job's outcome, stepped with `budget` units at a time.
    fn sliced(job: Result<PacketJob, String>, budget: usize) -> Result<Vec<u8>, String> {
        let mut job = job?;
        for _ in 0..100_000 {
            if let Some(outcome) = job.step(budget) {
                return outcome;
            }
        }
        panic!("a job that does not end");
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
            for budget in [1, 2, 3, 5, 8, 50, usize::MAX] {
                let mut job = PacketJob::new(&program, command, &streamed.args, &text);
                if let Ok(job) = &mut job {
                    job.copy_text(text.as_bytes());
                }
                assert_eq!(sliced(job, budget), got, "{case} by {budget}");
            }
            // The whole body handed over instead: the same packet.
            let body = format!("{{\"arguments\":{text}}}").into_bytes();
            let arguments = std::str::from_utf8(&body[13..body.len() - 1]).unwrap();
            let call = args::resolve_text(&program.surface, Some(&stripped), arguments).unwrap();
            let mut job = PacketJob::new(&program, command, &call.args, arguments);
            if let Ok(job) = &mut job {
                job.take_text(body);
            }
            assert_eq!(sliced(job, 4), got, "{case} from the whole body");
            checked += usize::from(got.is_ok());
        }
        assert!(checked >= 10, "only {checked} packets compared");
    }
}
