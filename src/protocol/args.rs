//! `tools/call` arguments: from the client's named `arguments` object to the
//! positional call vector the executor takes.
//!
//! The executor wants exactly one JSON value per manifest argument, in
//! manifest order; MCP clients send an object keyed by the property names of
//! the tool's `inputSchema`. [`resolve`] performs the request checks of the
//! reference runtime (with its exact -32602 messages), picks the command to run
//! (the tool's own, or a `_render` projection's entry command) and fills every
//! slot from the supplied value or its typed default. Values are not
//! type-checked here: that is the value validator's job, after this step.
//!
//! Deliberate differences from the reference (see the reference-gaps notes):
//! a non-string `_render` is rejected instead of meaning `raw`; a field missing
//! from a whole-object record is filled only from its default, never from a
//! same-named top-level argument; an optional type whose default is the text
//! `null` defaults to JSON null, and an empty default on a list-typed option
//! defaults to `[]`; integer defaults beyond 64 bits stay exact.
//!
//! Architecture Invariant: pure; no I/O; never panics on any input.

use std::fmt;

use serde_json::{Map, Value};

use crate::format::json::scan;
use crate::protocol::tools::{RecordSlot, Slot, Surface, Tool, RENDER_PROPERTY, RENDER_RAW};

/// JSON-RPC "invalid params", the code of every [`ArgError`].
pub const INVALID_PARAMS: i64 = -32602;

/// A resolved `tools/call`.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// Index into [`Surface::tools`].
    pub tool: usize,
    /// Index into the manifest's `commands` of the command to execute: the
    /// tool's own command, or the entry command of the selected `_render`
    /// projection. `Err(entry)` when that projection's entry names no command;
    /// the call must then fail as an `isError` result (the reference's text is
    /// `Unknown command: <entry>`).
    pub command: Result<usize, String>,
    /// One value per manifest argument of the tool's command, in manifest
    /// order (`_render` takes none). A projection's entry command receives the
    /// same vector.
    pub args: Vec<Value>,
}

/// A request the tool layer refuses; becomes a JSON-RPC error response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgError {
    /// Always [`INVALID_PARAMS`].
    pub code: i64,
    pub message: String,
}

impl ArgError {
    fn new(message: String) -> ArgError {
        ArgError {
            code: INVALID_PARAMS,
            message,
        }
    }
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ArgError {}

/// Resolves a `tools/call` request. `params` is the request's `params`
/// member: `None` when the key is absent (answered `missing params`),
/// `Some(&Value::Null)` for an explicit null. All checks of the request run
/// here, in the reference's order.
pub fn resolve(surface: &Surface, params: Option<&Value>) -> Result<Call, ArgError> {
    let empty = Map::new();
    let call = resolve_in(surface, params, |params| match params.get("arguments") {
        None | Some(Value::Null) => Ok(Arguments::Parsed(&empty)),
        Some(Value::Object(map)) => Ok(Arguments::Parsed(map)),
        Some(_) => Err(ArgError::new("'arguments' must be an object".into())),
    })?;
    Ok(Call {
        tool: call.tool,
        command: call.command,
        args: call.args.into_iter().map(Source::into_value).collect(),
    })
}

/// A resolved `tools/call` whose arguments were left as JSON text.
#[derive(Clone, Debug, PartialEq)]
pub struct TextCall<'a> {
    /// Index into [`Surface::tools`].
    pub tool: usize,
    /// As [`Call::command`].
    pub command: Result<usize, String>,
    /// One source per manifest argument, as [`Call::args`].
    pub args: Vec<Source<'a>>,
}

/// Where one call-vector value comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source<'a> {
    /// The JSON text of a value the client sent (valid JSON).
    Text(&'a str),
    /// A value built here: a default, a flag, or an assembled record.
    Json(Value),
}

impl Source<'_> {
    /// The value as a JSON tree (parses text; for small or in-process uses).
    pub fn into_value(self) -> Value {
        match self {
            Source::Json(v) => v,
            Source::Text(text) => serde_json::from_str(text).unwrap_or(Value::Null),
        }
    }
}

/// [`resolve`] for a request whose `params.arguments` is given as the JSON
/// text `arguments` (an object, already validated) instead of in `params`:
/// the same checks and errors, but a supplied value is returned as its text
/// ([`Source::Text`]), so a large argument never becomes a tree.
pub fn resolve_text<'a>(
    surface: &Surface,
    params: Option<&Value>,
    arguments: &'a str,
) -> Result<TextCall<'a>, ArgError> {
    resolve_in(surface, params, |_| {
        Ok(Arguments::Text(arguments, member_spans(arguments)))
    })
}

/// [`resolve_text`] for a request whose `params` were not parsed: `name`
/// is `params.name` (`None` when absent), `params` holds nothing else
/// read here, and `members` are the members of `arguments` (keys'
/// positions and values' spans, as `jsonrpc::CallLine` gives them).
pub fn resolve_named<'a>(
    surface: &Surface,
    name: Option<&str>,
    arguments: &'a str,
    members: Vec<(usize, std::ops::Range<usize>)>,
) -> Result<TextCall<'a>, ArgError> {
    resolve_tool(surface, name, || Ok(Arguments::Text(arguments, members)))
}

/// The client's named arguments: a parsed object, or an object's JSON text
/// with the place of each member (key, value), found in one reading.
enum Arguments<'a> {
    Parsed(&'a Map<String, Value>),
    Text(&'a str, Vec<(usize, std::ops::Range<usize>)>),
}

/// The members of the (valid) object `text`: each key's position and its
/// value's span, in order, read once (as [`scan::members`] walks them).
fn member_spans(text: &str) -> Vec<(usize, std::ops::Range<usize>)> {
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    let open = scan::skip_ws(bytes, 0);
    if bytes.get(open) != Some(&b'{') {
        return spans;
    }
    let mut key = scan::skip_ws(bytes, open + 1);
    while bytes.get(key) == Some(&b'"') {
        let key_end = scan::string_end(bytes, key).unwrap_or(bytes.len());
        let colon = scan::skip_ws(bytes, key_end);
        let value = scan::skip_ws(bytes, colon + 1);
        let end = scan::value_end(bytes, value);
        spans.push((key, value..end));
        let after = scan::skip_ws(bytes, end);
        if bytes.get(after) != Some(&b',') {
            break;
        }
        key = scan::skip_ws(bytes, after + 1);
    }
    spans
}

impl<'a> Arguments<'a> {
    /// The keys in order of first appearance (a text may repeat a key).
    fn first_key(&self, wanted: impl Fn(&str) -> bool) -> Option<String> {
        match self {
            Arguments::Parsed(map) => map.keys().find(|k| wanted(k)).cloned(),
            // A key without escapes is looked at in place (no allocation
            // per argument of every call).
            Arguments::Text(text, spans) => spans.iter().find_map(|(key, _)| {
                let bytes = text.as_bytes();
                match scan::plain_str(bytes, *key).map(std::str::from_utf8) {
                    Some(Ok(plain)) => wanted(plain).then(|| plain.to_string()),
                    _ => Some(scan::decode_string(bytes, *key)).filter(|k| wanted(k)),
                }
            }),
        }
    }

    /// The text of the value of `key` (its last occurrence, as serde_json
    /// keeps it).
    fn text_of(
        text: &'a str,
        spans: &[(usize, std::ops::Range<usize>)],
        key: &str,
    ) -> Option<&'a str> {
        let (_, value) = spans
            .iter()
            .rev()
            .find(|(k, _)| scan::str_eq(text.as_bytes(), *k, key))?;
        Some(&text[value.clone()])
    }

    fn contains(&self, key: &str) -> bool {
        match self {
            Arguments::Parsed(map) => map.contains_key(key),
            Arguments::Text(text, spans) => Self::text_of(text, spans, key).is_some(),
        }
    }

    /// Whether the value of `key` is a boolean (`None` when absent).
    fn is_boolean(&self, key: &str) -> Option<bool> {
        match self {
            Arguments::Parsed(map) => map.get(key).map(Value::is_boolean),
            Arguments::Text(text, spans) => {
                Self::text_of(text, spans, key).map(|v| matches!(v, "true" | "false"))
            }
        }
    }

    /// The value of `key` as a tree.
    fn value(&self, key: &str) -> Option<Value> {
        self.source(key).map(Source::into_value)
    }

    fn source(&self, key: &str) -> Option<Source<'a>> {
        match self {
            Arguments::Parsed(map) => map.get(key).cloned().map(Source::Json),
            Arguments::Text(text, spans) => Self::text_of(text, spans, key).map(Source::Text),
        }
    }
}

/// A served tool the client probably meant by `name`: the same command
/// with or without the router's `<module>__` prefix, or the same name in
/// another case.
pub fn suggest_tool<'s>(surface: &'s Surface, name: &str) -> Option<&'s str> {
    let wanted = bare(name);
    let names = || surface.tools.iter().map(|t| t.name.as_str());
    renamed_to(surface, name)
        .or_else(|| names().find(|n| bare(n) == wanted))
        .or_else(|| names().find(|n| n.eq_ignore_ascii_case(name)))
        .or_else(|| names().find(|n| bare(n).eq_ignore_ascii_case(wanted)))
}

/// A tool name without its `<module>__` prefix.
fn bare(name: &str) -> &str {
    name.rsplit_once("__").map_or(name, |(_, command)| command)
}

/// The tool that a tools file renamed: `name` (bare or prefixed) is the
/// name of the command behind it, which it no longer answers to.
pub fn renamed_to<'s>(surface: &'s Surface, name: &str) -> Option<&'s str> {
    let wanted = bare(name);
    surface
        .tools
        .iter()
        .find(|t| t.command_name == wanted && bare(&t.name) != wanted)
        .map(|t| t.name.as_str())
}

/// The checks and slot filling shared by [`resolve`] and [`resolve_text`];
/// `arguments` reads the arguments once the tool is known.
fn resolve_in<'a, 'p>(
    surface: &Surface,
    params: Option<&'p Value>,
    arguments: impl FnOnce(&'p Value) -> Result<Arguments<'a>, ArgError>,
) -> Result<TextCall<'a>, ArgError> {
    let Some(params) = params else {
        return Err(ArgError::new("missing params".into()));
    };
    let name = params.get("name").and_then(Value::as_str);
    resolve_tool(surface, name, || arguments(params))
}

/// [`resolve_in`] once `params` is known to be there: `name` is its tool
/// name (`None` when absent or not a string).
fn resolve_tool<'a>(
    surface: &Surface,
    name: Option<&str>,
    arguments: impl FnOnce() -> Result<Arguments<'a>, ArgError>,
) -> Result<TextCall<'a>, ArgError> {
    let Some(name) = name else {
        return Err(ArgError::new("missing tool 'name'".into()));
    };
    let Some(tool_index) = surface.find_index(name) else {
        return Err(ArgError::new(match renamed_to(surface, name) {
            Some(new) => {
                format!("unknown tool '{name}': the tools file renamed it '{new}'; call '{new}'")
            }
            None => match suggest_tool(surface, name) {
                Some(other) => format!("unknown tool '{name}' (did you mean '{other}'?)"),
                None => format!("unknown tool '{name}'"),
            },
        }));
    };
    let tool = &surface.tools[tool_index];
    let arguments = arguments()?;
    if let Some(key) = arguments.first_key(|key| !tool.has_property(key)) {
        let names: Vec<&str> = tool.properties.iter().map(|p| p.name.as_str()).collect();
        return Err(ArgError::new(if names.is_empty() {
            format!(
                "unknown argument '{key}' ('{}' takes no arguments)",
                tool.name
            )
        } else {
            format!(
                "unknown argument '{key}' (the arguments of '{}': {})",
                tool.name,
                names.join(", ")
            )
        }));
    }
    // Presence is by key: an explicit null satisfies a required argument.
    if let Some(missing) = tool
        .required
        .iter()
        .find(|name| !arguments.contains(name.as_str()))
    {
        return Err(ArgError::new(format!(
            "missing required argument '{missing}'"
        )));
    }
    for slot in &tool.slots {
        if let Slot::Flag { key, .. } = slot {
            if arguments.is_boolean(key) == Some(false) {
                return Err(ArgError::new(format!("argument '{key}' must be a boolean")));
            }
        }
    }
    let command = select_command(tool, arguments.value(RENDER_PROPERTY).as_ref())?;
    let args = tool
        .slots
        .iter()
        .map(|slot| fill_slot(slot, &arguments))
        .collect();
    Ok(TextCall {
        tool: tool_index,
        command,
        args,
    })
}

/// Picks the command a `_render` value selects.
fn select_command(tool: &Tool, render: Option<&Value>) -> Result<Result<usize, String>, ArgError> {
    let render = match render {
        None => return Ok(Ok(tool.command)),
        Some(Value::String(render)) => render,
        // The reference treats any non-string as `raw`; a typo'd type should
        // not silently run something else.
        Some(_) => {
            return Err(ArgError::new(format!(
                "argument '{RENDER_PROPERTY}' must be a string"
            )))
        }
    };
    if render == RENDER_RAW {
        return Ok(Ok(tool.command));
    }
    // Duplicate terminal names are possible; the first one wins.
    match tool.renders.iter().find(|r| r.name == *render) {
        Some(target) => Ok(target.command.ok_or_else(|| target.entry.clone())),
        None => Err(ArgError::new(format!("unknown render '{render}'"))),
    }
}

/// The call-vector value of one slot. Checks have already passed.
fn fill_slot<'a>(slot: &Slot, arguments: &Arguments<'a>) -> Source<'a> {
    match slot {
        Slot::Value { key, default } => arguments
            .source(key)
            .unwrap_or_else(|| Source::Json(default.clone())),
        Slot::Flag { key, default } => {
            Source::Json(arguments.value(key).unwrap_or(Value::Bool(*default)))
        }
        Slot::Record(record) => Source::Json(fill_record(record, arguments)),
    }
}

fn fill_record(record: &RecordSlot, arguments: &Arguments<'_>) -> Value {
    let mut object = Map::new();
    if let Some(whole) = &record.whole {
        match arguments.value(whole) {
            // Fields the client left out come from their defaults only, and
            // after the client's keys.
            Some(Value::Object(supplied)) => object = supplied,
            // Not an object: forwarded for the value validator to reject.
            Some(other) => return other,
            None => {}
        }
    }
    for field in &record.fields {
        if object.contains_key(&field.key) {
            continue;
        }
        let supplied = match record.whole {
            None if record.fields_exposed => arguments.value(&field.property),
            _ => None,
        };
        object.insert(
            field.key.clone(),
            supplied.unwrap_or_else(|| field.default.clone()),
        );
    }
    Value::Object(object)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::manifest::Manifest;
    use crate::protocol::tools;

    const SHAPES: &str = include_str!("../../tests/data/shapes/manifest.json");
    const EDGE_CASES: &str = include_str!("../../tests/data/reference/protocol_edge_cases.jsonl");

    fn shapes() -> Surface {
        tools::build(&Manifest::from_json(SHAPES, &mut Vec::new()).unwrap())
    }

    fn surface_of(commands: &str) -> Surface {
        let text = format!(
            r#"{{"name":"m","build":{{"path":".","time":1,"morloc_version":"0.98.2"}},"commands":[{commands}]}}"#
        );
        match Manifest::from_json(&text, &mut Vec::new()) {
            Ok(m) => tools::build(&m),
            Err(e) => panic!("test manifest does not load: {e}"),
        }
    }

    fn json(text: &str) -> Value {
        serde_json::from_str(text).unwrap_or_else(|e| panic!("bad test JSON {text}: {e}"))
    }

    /// Checks that [`resolve_text`] agrees with [`resolve`] on `params` (the
    /// arguments object given as text, `params.arguments` then null).
    #[track_caller]
    fn text_agrees_on(surface: &Surface, params: &Value, text: &str) {
        let mut stripped = params.clone();
        stripped["arguments"] = Value::Null;
        let tree = resolve(surface, Some(params));
        let streamed = resolve_text(surface, Some(&stripped), text);
        match (tree, streamed) {
            (Ok(a), Ok(b)) => {
                assert_eq!((a.tool, &a.command), (b.tool, &b.command), "{text}");
                let b: Vec<Value> = b.args.into_iter().map(Source::into_value).collect();
                assert_eq!(a.args, b, "{text}");
            }
            (Err(a), Err(b)) => assert_eq!(a, b, "{text}"),
            (a, b) => panic!("{text}: {a:?} vs {b:?}"),
        }
    }

    #[track_caller]
    fn text_agrees(surface: &Surface, params: &Value) {
        if let Some(args @ Value::Object(_)) = params.get("arguments") {
            text_agrees_on(surface, params, &args.to_string());
        }
    }

    #[test]
    fn text_arguments_keep_the_last_duplicate_and_decode_keys() {
        let s = shapes();
        let params = json(r#"{"name":"addOne","arguments":{"_1":2}}"#);
        for text in [
            r#"{"_1":1,"_1":2}"#,
            r#"{"\u005f1":2}"#,
            r#" { "_1" : 2 } "#,
        ] {
            text_agrees_on(&s, &params, text);
        }
        let call = resolve_text(&s, Some(&params), r#"{"_1":[1, 2]}"#).unwrap();
        assert_eq!(call.args, vec![Source::Text("[1, 2]")]);
        let err = resolve_text(&s, Some(&params), r#"{"_1":1,"_\u0032":2}"#).unwrap_err();
        assert_eq!(
            err.message,
            "unknown argument '_2' (the arguments of 'addOne': _1)"
        );
    }

    /// Resolves `params` (compact JSON text, or `None` for no params key) and
    /// compares with the expected command index and compact call vector.
    #[track_caller]
    fn check_ok(surface: &Surface, params: &str, command: Result<usize, &str>, args: &str) {
        let params = json(params);
        text_agrees(surface, &params);
        match resolve(surface, Some(&params)) {
            Ok(call) => {
                assert_eq!(
                    call.command,
                    command.map_err(str::to_string),
                    "command for {params}"
                );
                assert_eq!(
                    serde_json::to_string(&call.args).unwrap(),
                    args,
                    "args for {params}"
                );
            }
            Err(e) => panic!("{params}: unexpected error {e}"),
        }
    }

    #[track_caller]
    fn check_err(surface: &Surface, params: Option<&str>, message: &str) {
        let params = params.map(json);
        if let Some(p) = &params {
            text_agrees(surface, p);
        }
        match resolve(surface, params.as_ref()) {
            Ok(call) => panic!("{params:?}: accepted as {call:?}"),
            Err(e) => {
                assert_eq!(e.code, INVALID_PARAMS);
                assert_eq!(e.message, message, "for {params:?}");
            }
        }
    }

    #[track_caller]
    #[test]
    fn request_checks_in_order() {
        let s = shapes();
        check_err(&s, None, "missing params");
        check_err(&s, Some("null"), "missing tool 'name'");
        check_err(&s, Some("[]"), "missing tool 'name'");
        check_err(&s, Some("{}"), "missing tool 'name'");
        check_err(&s, Some(r#"{"name":5}"#), "missing tool 'name'");
        check_err(
            &s,
            Some(r#"{"name":"nope","arguments":5}"#),
            "unknown tool 'nope'",
        );
        check_err(
            &s,
            Some(r#"{"name":"addOne","arguments":[41]}"#),
            "'arguments' must be an object",
        );
        check_err(
            &s,
            Some(r#"{"name":"addOne","arguments":"x"}"#),
            "'arguments' must be an object",
        );
        check_err(
            &s,
            Some(r#"{"name":"addOne","arguments":false}"#),
            "'arguments' must be an object",
        );
        check_err(
            &s,
            Some(r#"{"name":"addOne"}"#),
            "missing required argument '_1'",
        );
        check_err(
            &s,
            Some(r#"{"name":"addOne","arguments":null}"#),
            "missing required argument '_1'",
        );
        // Unknown keys are reported before missing ones, first in client order.
        check_err(
            &s,
            Some(r#"{"name":"addOne","arguments":{"zz":1,"aa":2}}"#),
            "unknown argument 'zz' (the arguments of 'addOne': _1)",
        );
        check_err(
            &s,
            Some(r#"{"name":"addOne","arguments":{"_1":41,"_render":"raw"}}"#),
            "unknown argument '_render' (the arguments of 'addOne': _1)",
        );
        check_err(
            &s,
            Some(r#"{"name":"scaleReal","arguments":{"_2":1}}"#),
            "missing required argument '_1'",
        );
        // The internal record fields are not properties of the whole form.
        check_err(
            &s,
            Some(r#"{"name":"configWhole","arguments":{"tmpDir":"/x"}}"#),
            "unknown argument 'tmpDir' (the arguments of 'configWhole': configwhole)",
        );
        // A tool is found by its (possibly renamed) name only.
        let mut renamed = shapes();
        renamed.tools[0].rename("main__addOne".into());
        check_err(
            &renamed,
            Some(r#"{"name":"addOne","arguments":{"_1":1}}"#),
            "unknown tool 'addOne' (did you mean 'main__addOne'?)",
        );
        // A tools file's new name: the old one names it.
        let mut curated = shapes();
        curated.tools[0].rename("add_one".into());
        check_err(
            &curated,
            Some(r#"{"name":"addOne","arguments":{"_1":1}}"#),
            "unknown tool 'addOne': the tools file renamed it 'add_one'; call 'add_one'",
        );
        curated.tools[0].rename("main__add_one".into());
        check_err(
            &curated,
            Some(r#"{"name":"main__addOne","arguments":{"_1":1}}"#),
            "unknown tool 'main__addOne': the tools file renamed it 'main__add_one'; call 'main__add_one'",
        );
        // The other way round, and another case.
        check_err(
            &s,
            Some(r#"{"name":"main__addOne","arguments":{"_1":1}}"#),
            "unknown tool 'main__addOne' (did you mean 'addOne'?)",
        );
        check_err(
            &s,
            Some(r#"{"name":"addone","arguments":{"_1":1}}"#),
            "unknown tool 'addone' (did you mean 'addOne'?)",
        );
        check_err(
            &s,
            Some(r#"{"name":"pureAnswer","arguments":{"x":1}}"#),
            "unknown argument 'x' ('pureAnswer' takes no arguments)",
        );
        check_ok(
            &renamed,
            r#"{"name":"main__addOne","arguments":{"_1":1}}"#,
            Ok(0),
            "[1]",
        );
    }

    #[test]
    fn values_pass_through_untouched() {
        let s = shapes();
        check_ok(
            &s,
            r#"{"name":"addOne","arguments":{"_1":41}}"#,
            Ok(0),
            "[41]",
        );
        // Explicit null satisfies `required`; the value is not type-checked.
        check_ok(
            &s,
            r#"{"name":"addOne","arguments":{"_1":null}}"#,
            Ok(0),
            "[null]",
        );
        check_ok(
            &s,
            r#"{"name":"addOne","arguments":{"_1":"41"}}"#,
            Ok(0),
            r#"["41"]"#,
        );
        check_ok(
            &s,
            r#"{"name":"addOne","arguments":{"_1":123456789012345678901234567890}}"#,
            Ok(0),
            "[123456789012345678901234567890]",
        );
        // Strings are not re-quoted or re-parsed.
        check_ok(
            &s,
            r#"{"name":"hello","arguments":{"_1":"C:\\temp\\new \"q\"\n"}}"#,
            Ok(4),
            r#"["C:\\temp\\new \"q\"\n"]"#,
        );
        check_ok(
            &s,
            r#"{"name":"sumMany","arguments":{"_1":[1,2,3]}}"#,
            Ok(1),
            "[[1,2,3]]",
        );
        // Extra params keys are ignored.
        check_ok(
            &s,
            r#"{"name":"pureAnswer","_meta":{"progressToken":1},"x":2}"#,
            Ok(17),
            "[]",
        );
    }

    #[test]
    fn defaults_fill_omitted_arguments() {
        let s = shapes();
        // scale: the option's typed default.
        check_ok(
            &s,
            r#"{"name":"scale","arguments":{"_1":5}}"#,
            Ok(2),
            "[5,2]",
        );
        check_ok(
            &s,
            r#"{"name":"scale","arguments":{"_1":5,"factor":null}}"#,
            Ok(2),
            "[5,null]",
        );
        check_ok(
            &s,
            r#"{"name":"scale","arguments":{"factor":3,"_1":5}}"#,
            Ok(2),
            "[5,3]",
        );
        // An omitted `?T` positional is sent as null.
        check_ok(&s, r#"{"name":"maybeDouble"}"#, Ok(3), "[null]");
        check_ok(
            &s,
            r#"{"name":"maybeDouble","arguments":{"_1":4}}"#,
            Ok(3),
            "[4]",
        );
    }

    #[test]
    fn unrolled_records() {
        let s = shapes();
        check_ok(
            &s,
            r#"{"name":"configFlat"}"#,
            Ok(5),
            r#"[{"tmpDir":"/tmp","numThreads":1,"removeCaches":false}]"#,
        );
        // Field order is the manifest's, whatever the client's order.
        check_ok(
            &s,
            r#"{"name":"configFlat","arguments":{"removeCaches":true,"tmpDir":"/z"}}"#,
            Ok(5),
            r#"[{"tmpDir":"/z","numThreads":1,"removeCaches":true}]"#,
        );
        // Record-entry flags are not checked for booleans (the decoder is).
        check_ok(
            &s,
            r#"{"name":"configFlat","arguments":{"removeCaches":"yes"}}"#,
            Ok(5),
            r#"[{"tmpDir":"/tmp","numThreads":1,"removeCaches":"yes"}]"#,
        );
    }

    #[test]
    fn whole_object_records() {
        let s = shapes();
        // Absent: built from the defaults.
        check_ok(
            &s,
            r#"{"name":"configWhole"}"#,
            Ok(6),
            r#"[{"tmpDir":"/tmp","numThreads":1,"removeCaches":false}]"#,
        );
        // Supplied: client keys first (extra keys kept), missing fields appended.
        check_ok(
            &s,
            r#"{"name":"configWhole","arguments":{"configwhole":{"numThreads":3,"extra":0}}}"#,
            Ok(6),
            r#"[{"numThreads":3,"extra":0,"tmpDir":"/tmp","removeCaches":false}]"#,
        );
        // Not an object: verbatim, null included.
        check_ok(
            &s,
            r#"{"name":"configWhole","arguments":{"configwhole":5}}"#,
            Ok(6),
            "[5]",
        );
        check_ok(
            &s,
            r#"{"name":"configWhole","arguments":{"configwhole":null}}"#,
            Ok(6),
            "[null]",
        );
        check_ok(
            &s,
            r#"{"name":"configWhole","arguments":{"configwhole":[1,2]}}"#,
            Ok(6),
            "[[1,2]]",
        );
    }

    #[test]
    fn whole_object_fields_never_come_from_top_level_arguments() {
        // Reference gap 3.16: the reference would take `limit` from the
        // positional of the same name.
        let s = surface_of(
            r#"{"name":"f","type":"pure","args":[
                {"kind":"pos","schema":"j","name":"limit"},
                {"kind":"grp","schema":"m25limitj4names","type":"Cfg","group_opt":{"long":"cfg"},"entries":[
                    {"key":"limit","arg":{"kind":"opt","long":"limit","default":"7"}},
                    {"key":"name","arg":{"kind":"opt","long":"name","default":"\"n\""}}]}]}"#,
        );
        check_ok(
            &s,
            r#"{"name":"f","arguments":{"limit":1,"cfg":{"name":"x"}}}"#,
            Ok(0),
            r#"[1,{"name":"x","limit":7}]"#,
        );
        check_ok(
            &s,
            r#"{"name":"f","arguments":{"limit":1}}"#,
            Ok(0),
            r#"[1,{"limit":7,"name":"n"}]"#,
        );
    }

    #[test]
    fn unparseable_unrolled_records_use_defaults_only() {
        let s = surface_of(
            r#"{"name":"f","type":"pure","args":[
                {"kind":"pos","schema":"j","name":"a"},
                {"kind":"grp","schema":"m9","entries":[
                    {"key":"a","arg":{"kind":"opt","long":"a","default":"2"}},
                    {"key":"a","arg":{"kind":"opt","long":"a","default":"3"}},
                    {"key":"b","arg":{"kind":"flag","long":"b","default":"true"}},
                    {"key":"c","arg":{"kind":"pos"}}]}]}"#,
        );
        check_ok(
            &s,
            r#"{"name":"f","arguments":{"a":1}}"#,
            Ok(0),
            r#"[1,{"a":2,"b":true,"c":null}]"#,
        );
    }

    #[test]
    fn flags() {
        let s = surface_of(
            r#"{"name":"f","type":"pure","args":[
                {"kind":"flag","long":"yes","default":"true"},
                {"kind":"flag","long":"no","default":"false"},
                {"kind":"flag","short":"v","default":"TRUE"},
                {"kind":"flag","long":"bad"}]}"#,
        );
        check_ok(&s, r#"{"name":"f"}"#, Ok(0), "[true,false,false,false]");
        check_ok(
            &s,
            r#"{"name":"f","arguments":{"bad":true,"yes":false}}"#,
            Ok(0),
            "[false,false,false,true]",
        );
        // The first offending flag in manifest order, not client order.
        check_err(
            &s,
            Some(r#"{"name":"f","arguments":{"bad":1,"no":null}}"#),
            "argument 'no' must be a boolean",
        );
        check_err(
            &s,
            Some(r#"{"name":"f","arguments":{"v":"true"}}"#),
            "argument 'v' must be a boolean",
        );
    }

    #[test]
    fn render_dispatch() {
        let s = surface_of(
            r#"{"name":"plot","type":"pure","args":[{"kind":"pos","schema":"af8"},{"kind":"flag","long":"log"}],
                "terminals":[{"long":"svg","entry":"mlcp_plot_svg"},{"long":"svg","entry":"other"},{"long":"gone","entry":"missing"}]},
               {"name":"mlcp_plot_svg","type":"pure","internal":true},
               {"name":"other","type":"pure","internal":true}"#,
        );
        check_ok(
            &s,
            r#"{"name":"plot","arguments":{"_1":[1]}}"#,
            Ok(0),
            "[[1],false]",
        );
        check_ok(
            &s,
            r#"{"name":"plot","arguments":{"_1":[1],"_render":"raw"}}"#,
            Ok(0),
            "[[1],false]",
        );
        // The same vector goes to the entry command; the first duplicate wins.
        check_ok(
            &s,
            r#"{"name":"plot","arguments":{"_render":"svg","_1":[1]}}"#,
            Ok(1),
            "[[1],false]",
        );
        check_ok(
            &s,
            r#"{"name":"plot","arguments":{"_1":[1],"_render":"gone"}}"#,
            Err("missing"),
            "[[1],false]",
        );
        check_err(
            &s,
            Some(r#"{"name":"plot","arguments":{"_1":[1],"_render":"png"}}"#),
            "unknown render 'png'",
        );
        check_err(
            &s,
            Some(r#"{"name":"plot","arguments":{"_1":[1],"_render":"SVG"}}"#),
            "unknown render 'SVG'",
        );
        // Reference gap 3.15: non-strings are rejected rather than meaning raw.
        check_err(
            &s,
            Some(r#"{"name":"plot","arguments":{"_1":[1],"_render":null}}"#),
            "argument '_render' must be a string",
        );
        check_err(
            &s,
            Some(r#"{"name":"plot","arguments":{"_1":[1],"_render":1}}"#),
            "argument '_render' must be a string",
        );
        // Flag errors come before render errors.
        check_err(
            &s,
            Some(r#"{"name":"plot","arguments":{"_1":[1],"_render":"png","log":0}}"#),
            "argument 'log' must be a boolean",
        );
        // Missing required before render.
        check_err(
            &s,
            Some(r#"{"name":"plot","arguments":{"_render":"png"}}"#),
            "missing required argument '_1'",
        );
    }

    /// The reference's stdio edge cases that concern argument errors: every
    /// -32602 reply must be reproduced exactly from the same params.
    #[test]
    fn reference_edge_cases() {
        let s = shapes();
        let mut n_checked = 0;
        for line in EDGE_CASES.lines() {
            let case = json(line);
            let Some(input) = case["in"].as_str() else {
                continue;
            };
            let Ok(request) = serde_json::from_str::<Value>(input.trim()) else {
                continue;
            };
            if request["method"] != "tools/call" {
                continue;
            }
            let Some(reply) = case["out"][0].as_str().map(json) else {
                continue;
            };
            if let Some(params) = request.get("params") {
                text_agrees(&s, params);
            }
            let result = resolve(&s, request.get("params"));
            if reply["error"]["code"] == INVALID_PARAMS {
                // Ours is the reference's message, with a hint added in
                // parentheses to some (docs/differences.md).
                let message = reply["error"]["message"].as_str().unwrap_or_default();
                let ours = match result {
                    Ok(_) => panic!("{input}: accepted"),
                    Err(e) => e.message,
                };
                assert!(
                    ours == message || ours.starts_with(&format!("{message} (")),
                    "{input}: {ours:?} is not {message:?}"
                );
                n_checked += 1;
            } else if reply.get("result").is_some() {
                assert!(result.is_ok(), "{input}: {result:?}");
                n_checked += 1;
            }
        }
        assert!(n_checked >= 25, "only {n_checked} edge cases checked");
    }
}
