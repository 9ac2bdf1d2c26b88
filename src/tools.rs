//! The MCP tool surface: which manifest commands become tools, and the JSON
//! Schema each tool advertises.
//!
//! The surface is computed once at start-up from the [`Manifest`] and then only
//! read. Every tool carries two views of the same traversal of its command's
//! arguments: the `tools/list` object (`json`, with keys in the reference
//! runtime's order, so the payload is byte-identical to the reference) and the
//! inverse mapping the `tools/call` path needs ([`Slot`]s, one per manifest
//! argument, plus the property list and the `_render` targets). Producing both
//! from one walk is what keeps the advertised property names and the argument
//! resolver in agreement.
//!
//! Commands that cannot be served are left out with a note; the notes are
//! returned in [`Surface::notes`] for the caller to print.
//!
//! Architecture Invariant: pure; no I/O (not even stderr).

use serde_json::{Map, Value};

use crate::args::typed_default;
use crate::manifest::{Arg, Command, GrpArg, Manifest, SchemaText};
use crate::schema::Schema;

/// The synthetic property that selects an output projection.
pub const RENDER_PROPERTY: &str = "_render";

/// The `_render` value that selects the command's own typed result.
pub const RENDER_RAW: &str = "raw";

/// The fixed description of the `_render` property (reference wording).
pub const RENDER_DESCRIPTION: &str = "Output projection: 'raw' returns the underlying typed value; a renderer name returns that projection (e.g. an image).";

/// Every servable command of one manifest, in manifest order.
#[derive(Clone, Debug)]
pub struct Surface {
    pub tools: Vec<Tool>,
    /// One stderr line per excluded command, in manifest order, without a
    /// trailing newline.
    pub notes: Vec<String>,
}

/// One tool.
#[derive(Clone, Debug)]
pub struct Tool {
    /// The advertised name; equal to `json["name"]`. Change it with
    /// [`Tool::rename`] so both stay in step.
    pub name: String,
    /// Index into [`Manifest::commands`] of the command behind the tool.
    pub command: usize,
    /// The tool object of the `tools/list` payload.
    pub json: Value,
    /// The `inputSchema` properties in advertised order (`_render` last).
    pub properties: Vec<Property>,
    /// Property names a call must supply, in advertised order.
    pub required: Vec<String>,
    /// One entry per element of the command's `args`, in manifest order.
    pub slots: Vec<Slot>,
    /// The `_render` projections in terminal order (empty: no `_render`).
    pub renders: Vec<Render>,
}

/// One advertised `inputSchema` property.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Property {
    pub name: String,
    pub feeds: Feeds,
}

/// What a property's value is used for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feeds {
    /// The whole value of the argument slot with this index.
    Arg(usize),
    /// Field `field` (index into [`RecordSlot::fields`]) of the record in
    /// argument slot `arg` (the unrolled record form).
    Field { arg: usize, field: usize },
    /// The `_render` selector; not part of the call vector.
    Render,
}

/// How one element of the call vector is obtained from the named arguments.
#[derive(Clone, Debug, PartialEq)]
pub enum Slot {
    /// A positional or an option: the property `key` verbatim, else
    /// `default` (JSON null for positionals, the typed default for options).
    Value { key: String, default: Value },
    /// A flag: the property `key`, which must be a JSON boolean, else `default`.
    Flag { key: String, default: bool },
    /// A record argument, unrolled or whole-object.
    Record(RecordSlot),
}

/// A record argument.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordSlot {
    /// Whole-object form: the property holding the complete record.
    /// `None` for the unrolled form.
    pub whole: Option<String>,
    /// The record's fields in manifest `entries` order.
    pub fields: Vec<Field>,
    /// Unrolled form only: true when each field is advertised as its own
    /// property (the group schema parsed). When false the record is built
    /// from defaults alone.
    pub fields_exposed: bool,
}

/// One record field with the value used when the call does not supply it.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    pub key: String,
    pub default: Value,
}

/// One `_render` projection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Render {
    /// The enum value (the terminal's `long` name).
    pub name: String,
    /// The name of the command that computes the projection.
    pub entry: String,
    /// Its index in [`Manifest::commands`] (the later one if the name is
    /// duplicated); `None` when no command has that name, which makes every
    /// call of this projection fail at execution time.
    pub command: Option<usize>,
}

impl Surface {
    /// The `tools/list` result: `{"tools":[...]}`.
    pub fn list_result(&self) -> Value {
        let tools = self.tools.iter().map(|tool| tool.json.clone()).collect();
        let mut result = Map::new();
        result.insert("tools".into(), Value::Array(tools));
        Value::Object(result)
    }

    /// The index of the tool a call with this name reaches. When two tools
    /// share a name (the compiler should prevent this) both are listed and
    /// the later one answers, as in the reference.
    pub fn find_index(&self, name: &str) -> Option<usize> {
        self.tools.iter().rposition(|tool| tool.name == name)
    }

    /// The tool a call with this name reaches (see [`Surface::find_index`]).
    pub fn find(&self, name: &str) -> Option<&Tool> {
        self.find_index(name).map(|index| &self.tools[index])
    }
}

impl Tool {
    /// Changes the advertised name in place (the `name` key keeps its
    /// position); used to namespace tools as `<module>__<command>`.
    pub fn rename(&mut self, name: String) {
        if let Value::Object(map) = &mut self.json {
            map.insert("name".into(), Value::String(name.clone()));
        }
        self.name = name;
    }

    /// True when the tool has the property `name`.
    pub fn has_property(&self, name: &str) -> bool {
        self.properties.iter().any(|p| p.name == name)
    }
}

/// Builds the tool surface of a manifest: internal commands are skipped
/// silently, unservable ones are excluded with a note, the rest become tools
/// in manifest order.
pub fn build(manifest: &Manifest) -> Surface {
    let mut tools = Vec::new();
    let mut notes = Vec::new();
    for (index, command) in manifest.commands.iter().enumerate() {
        if command.internal {
            continue;
        }
        match shape_tool(manifest, index, command) {
            Ok(tool) => tools.push(tool),
            Err(reason) => notes.push(format!(
                "morloc mcp: excluding command '{}' from the tool surface ({reason})",
                command.name
            )),
        }
    }
    Surface { tools, notes }
}

/// Maps a wire schema to its JSON Schema (the `T` of the surface spec).
pub fn json_schema(schema: &Schema) -> Value {
    match schema {
        Schema::Nil => type_only("null"),
        Schema::Bool => type_only("boolean"),
        Schema::Int { .. } | Schema::BigInt => type_only("integer"),
        Schema::Float { .. } => type_only("number"),
        Schema::Str => type_only("string"),
        // Stream handles travel as their path text; commands using them are
        // excluded anyway.
        Schema::Handle(_) => type_only("string"),
        Schema::List { elem, .. } => array_of(json_schema(elem)),
        Schema::Tuple(items) => {
            let n = items.len() as u64;
            let mut map = Map::new();
            map.insert("type".into(), "array".into());
            map.insert(
                "prefixItems".into(),
                Value::Array(items.iter().map(json_schema).collect()),
            );
            map.insert("minItems".into(), n.into());
            map.insert("maxItems".into(), n.into());
            Value::Object(map)
        }
        Schema::Record(fields) => object_schema(fields.iter().map(|(k, s)| (k.as_str(), s))),
        Schema::Table(columns) => {
            // Column schemas are arrays; the row object shows element types.
            let rows = columns.iter().map(|(k, s)| match s.peel_named() {
                Schema::List { elem, .. } => (k.as_str(), &**elem),
                _ => (k.as_str(), s),
            });
            array_of(object_schema(rows))
        }
        Schema::Optional(inner) => with_null(json_schema(inner)),
        Schema::Named { body, .. } => json_schema(body),
        // Expanding a back-reference would not terminate; the reference
        // keeps only "it is an object".
        Schema::Recur(_) => type_only("object"),
    }
}

/// True when the schema's top level (through declarations) is `?T`.
pub fn is_optional(schema: &Schema) -> bool {
    matches!(schema.peel_named(), Schema::Optional(_))
}

fn type_only(name: &str) -> Value {
    let mut map = Map::new();
    map.insert("type".into(), name.into());
    Value::Object(map)
}

fn array_of(items: Value) -> Value {
    let mut map = Map::new();
    map.insert("type".into(), "array".into());
    map.insert("items".into(), items);
    Value::Object(map)
}

fn object_schema<'a>(fields: impl Iterator<Item = (&'a str, &'a Schema)>) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (key, schema) in fields {
        if !is_optional(schema) {
            required.push(Value::String(key.to_string()));
        }
        properties.insert(key.to_string(), json_schema(schema));
    }
    let mut map = Map::new();
    map.insert("type".into(), "object".into());
    map.insert("properties".into(), Value::Object(properties));
    map.insert("required".into(), Value::Array(required));
    map.insert("additionalProperties".into(), false.into());
    Value::Object(map)
}

/// Unions `"null"` into a schema's `type`, keeping the key's position.
fn with_null(mut schema: Value) -> Value {
    if let Value::Object(map) = &mut schema {
        let new_type = match map.get("type") {
            Some(Value::String(t)) => {
                Some(Value::Array(vec![Value::String(t.clone()), "null".into()]))
            }
            Some(Value::Array(types)) if !types.iter().any(|t| t == "null") => {
                let mut types = types.clone();
                types.push("null".into());
                Some(Value::Array(types))
            }
            _ => None,
        };
        if let Some(t) = new_type {
            map.insert("type".into(), t);
        }
    }
    schema
}

/// The property schema of a typed argument: `T(schema)`, or `{}` when the
/// schema is absent or unparseable, array-wrapped for `many` unless it
/// already is exactly an array.
fn argument_schema(schema: Option<&SchemaText>, many: bool) -> Value {
    let base = match schema.and_then(SchemaText::schema) {
        Some(s) => json_schema(s),
        None => Value::Object(Map::new()),
    };
    if many && base.get("type").and_then(Value::as_str) != Some("array") {
        return array_of(base);
    }
    base
}

/// Appends the `description` key: the non-empty `desc` lines, then
/// `(default: <raw>)` when a default is given, joined by single spaces.
fn describe(property: &mut Value, desc: &[String], default: Option<&str>) {
    let mut parts: Vec<String> = desc
        .iter()
        .filter(|line| !line.is_empty())
        .cloned()
        .collect();
    if let Some(d) = default {
        parts.push(format!("(default: {d})"));
    }
    if parts.is_empty() {
        return;
    }
    if let Value::Object(map) = property {
        map.insert("description".into(), Value::String(parts.join(" ")));
    }
}

/// An option or flag's property name: `long`, else `short`, else `option`.
fn option_name(long: Option<&String>, short: Option<&String>) -> String {
    long.or(short)
        .cloned()
        .unwrap_or_else(|| "option".to_string())
}

fn schema_excluded(schema: Option<&SchemaText>) -> bool {
    schema
        .and_then(SchemaText::schema)
        .is_some_and(Schema::contains_table_or_handle)
}

/// The manifest `default` and `desc` of a group entry's nested argument.
fn entry_default(arg: &Arg) -> Option<&str> {
    match arg {
        Arg::Opt(a) => a.default.as_deref(),
        Arg::Flag(a) => a.default.as_deref(),
        Arg::Pos(_) | Arg::Grp(_) => None,
    }
}

fn entry_desc(arg: &Arg) -> &[String] {
    match arg {
        Arg::Pos(a) => &a.desc,
        Arg::Opt(a) => &a.desc,
        Arg::Flag(a) => &a.desc,
        Arg::Grp(a) => &a.desc,
    }
}

/// The schema of field `key` in a record schema (through declarations).
fn record_field<'a>(record: Option<&'a Schema>, key: &str) -> Option<&'a Schema> {
    match record?.peel_named() {
        Schema::Record(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, s)| s),
        _ => None,
    }
}

/// The record's fields with their typed defaults (both record forms).
fn record_fields(group: &GrpArg) -> Vec<Field> {
    let record = group.schema.as_ref().and_then(SchemaText::schema);
    group
        .entries
        .iter()
        .map(|entry| {
            let default = match &entry.arg {
                Arg::Flag(flag) => Value::Bool(flag.default.as_deref() == Some("true")),
                Arg::Opt(opt) => typed_default(
                    opt.default.as_deref(),
                    record_field(record, &entry.key),
                    false,
                ),
                Arg::Pos(_) | Arg::Grp(_) => Value::Null,
            };
            Field {
                key: entry.key.clone(),
                default,
            }
        })
        .collect()
}

/// Accumulates the properties of one tool, refusing duplicate names.
struct Shaper {
    schemas: Map<String, Value>,
    properties: Vec<Property>,
    required: Vec<String>,
}

impl Shaper {
    fn add(
        &mut self,
        name: &str,
        schema: Value,
        feeds: Feeds,
        required: bool,
    ) -> Result<(), String> {
        if self.schemas.contains_key(name) {
            return Err(format!("property name collision on '{name}'"));
        }
        self.schemas.insert(name.to_string(), schema);
        self.properties.push(Property {
            name: name.to_string(),
            feeds,
        });
        if required {
            self.required.push(name.to_string());
        }
        Ok(())
    }
}

/// Shapes one command, or gives the reason it cannot be served.
fn shape_tool(manifest: &Manifest, index: usize, command: &Command) -> Result<Tool, String> {
    for arg in &command.args {
        if matches!(arg, Arg::Pos(p) if p.stdin) {
            return Err("reads from @stdin".into());
        }
        if schema_excluded(arg.schema_text()) {
            return Err("argument has an Arrow Table or stream-handle type".into());
        }
    }
    if schema_excluded(Some(&command.ret.schema)) {
        return Err("return has an Arrow Table or stream-handle type".into());
    }

    let mut shaper = Shaper {
        schemas: Map::new(),
        properties: Vec::new(),
        required: Vec::new(),
    };
    let mut slots = Vec::with_capacity(command.args.len());
    let mut n_positionals = 0usize;
    for (slot_index, arg) in command.args.iter().enumerate() {
        let feeds = Feeds::Arg(slot_index);
        let slot = match arg {
            Arg::Pos(pos) => {
                n_positionals += 1;
                let name = match pos.name.as_deref() {
                    Some(name) if !name.is_empty() => name.to_string(),
                    _ => format!("_{n_positionals}"),
                };
                let mut schema = argument_schema(pos.schema.as_ref(), pos.many);
                describe(&mut schema, &pos.desc, None);
                // A missing or unparseable schema counts as required.
                let optional = pos
                    .schema
                    .as_ref()
                    .and_then(SchemaText::schema)
                    .is_some_and(is_optional);
                shaper.add(&name, schema, feeds, !optional)?;
                Slot::Value {
                    key: name,
                    default: Value::Null,
                }
            }
            Arg::Opt(opt) => {
                let name = option_name(opt.long.as_ref(), opt.short.as_ref());
                let mut schema = argument_schema(opt.schema.as_ref(), opt.many);
                describe(&mut schema, &opt.desc, opt.default.as_deref());
                shaper.add(&name, schema, feeds, false)?;
                let parsed = opt.schema.as_ref().and_then(SchemaText::schema);
                Slot::Value {
                    key: name,
                    default: typed_default(opt.default.as_deref(), parsed, opt.many),
                }
            }
            Arg::Flag(flag) => {
                let name = option_name(flag.long.as_ref(), flag.short.as_ref());
                let mut schema = type_only("boolean");
                describe(&mut schema, &flag.desc, flag.default.as_deref());
                shaper.add(&name, schema, feeds, false)?;
                Slot::Flag {
                    key: name,
                    default: flag.default.as_deref() == Some("true"),
                }
            }
            Arg::Grp(group) if group.group_opt.is_some() => {
                let name = match &group.type_name {
                    Some(t) => t.to_lowercase(),
                    None => "group".to_string(),
                };
                let mut schema = match group.schema.as_ref().and_then(SchemaText::schema) {
                    Some(s) => json_schema(s),
                    None => type_only("object"),
                };
                describe(&mut schema, &group.desc, None);
                shaper.add(&name, schema, feeds, false)?;
                Slot::Record(RecordSlot {
                    whole: Some(name),
                    fields: record_fields(group),
                    fields_exposed: false,
                })
            }
            Arg::Grp(group) => {
                let record = group.schema.as_ref().and_then(SchemaText::schema);
                // An unparseable group schema advertises no fields at all;
                // the record is then built from defaults.
                if record.is_some() {
                    for (field_index, entry) in group.entries.iter().enumerate() {
                        let field = record_field(record, &entry.key);
                        let mut schema = field
                            .map(json_schema)
                            .unwrap_or_else(|| Value::Object(Map::new()));
                        let default = entry_default(&entry.arg);
                        describe(&mut schema, entry_desc(&entry.arg), default);
                        let required = default.is_none() && field.is_some_and(|f| !is_optional(f));
                        let feeds = Feeds::Field {
                            arg: slot_index,
                            field: field_index,
                        };
                        shaper.add(&entry.key, schema, feeds, required)?;
                    }
                }
                Slot::Record(RecordSlot {
                    whole: None,
                    fields: record_fields(group),
                    fields_exposed: record.is_some(),
                })
            }
        };
        slots.push(slot);
    }

    let mut renders = Vec::with_capacity(command.terminals.len());
    if !command.terminals.is_empty() {
        let mut values = vec![Value::String(RENDER_RAW.into())];
        for terminal in &command.terminals {
            values.push(Value::String(terminal.long.clone()));
            renders.push(Render {
                name: terminal.long.clone(),
                entry: terminal.entry.clone(),
                command: manifest
                    .commands
                    .iter()
                    .rposition(|c| c.name == terminal.entry),
            });
        }
        let mut schema = type_only("string");
        if let Value::Object(map) = &mut schema {
            map.insert("enum".into(), Value::Array(values));
            map.insert("default".into(), RENDER_RAW.into());
            map.insert("description".into(), RENDER_DESCRIPTION.into());
        }
        shaper.add(RENDER_PROPERTY, schema, Feeds::Render, false)?;
    }

    let Shaper {
        schemas,
        properties,
        required,
    } = shaper;
    let mut input = Map::new();
    input.insert("type".into(), "object".into());
    input.insert("properties".into(), Value::Object(schemas));
    input.insert(
        "required".into(),
        Value::Array(required.iter().map(|r| Value::String(r.clone())).collect()),
    );
    input.insert("additionalProperties".into(), false.into());

    let mut json = Map::new();
    json.insert("name".into(), Value::String(command.name.clone()));
    json.insert("description".into(), Value::String(command.desc.join("\n")));
    json.insert("inputSchema".into(), Value::Object(input));
    if let Some(ret) = command.ret.schema.schema() {
        if matches!(ret.peel_named(), Schema::Record(_)) {
            json.insert("outputSchema".into(), json_schema(ret));
        }
    }

    Ok(Tool {
        name: command.name.clone(),
        command: index,
        json: Value::Object(json),
        properties,
        required,
        slots,
        renders,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema;

    const SHAPES: &str = include_str!("../tests/data/shapes/manifest.json");
    const SHAPES_TOOLS: &str = include_str!("../tests/data/shapes/expected-mcp-tools.json");

    fn manifest(commands: &str) -> Manifest {
        let text = format!(
            r#"{{"name":"m","build":{{"path":".","time":1,"morloc_version":"0.98.2"}},"commands":[{commands}]}}"#
        );
        match Manifest::from_json(&text, &mut Vec::new()) {
            Ok(m) => m,
            Err(e) => panic!("test manifest does not load: {e}\n{text}"),
        }
    }

    fn json(text: &str) -> Value {
        match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => panic!("bad test JSON {text}: {e}"),
        }
    }

    /// Checks `T(schema)` against compact JSON.
    #[track_caller]
    fn check_t(schema_text: &str, expected: &str) {
        let parsed = schema::parse(schema_text).unwrap_or_else(|e| panic!("{schema_text}: {e}"));
        assert_eq!(
            serde_json::to_string(&json_schema(&parsed)).unwrap(),
            expected,
            "T({schema_text})"
        );
    }

    /// Shapes one pure command given its `args` array (and extra command
    /// keys) and checks the compact `inputSchema`.
    #[track_caller]
    fn check_input(args: &str, expected: &str) {
        let m = manifest(&format!(r#"{{"name":"f","type":"pure","args":{args}}}"#));
        let surface = build(&m);
        assert_eq!(surface.notes, Vec::<String>::new());
        let input = &surface.tools[0].json["inputSchema"];
        assert_eq!(
            serde_json::to_string(input).unwrap(),
            expected,
            "args {args}"
        );
    }

    /// Checks that a command is excluded with exactly this reason.
    #[track_caller]
    fn check_excluded(command_keys: &str, reason: &str) {
        let m = manifest(&format!(r#"{{"name":"f","type":"pure",{command_keys}}}"#));
        let surface = build(&m);
        assert!(surface.tools.is_empty(), "not excluded: {command_keys}");
        assert_eq!(
            surface.notes,
            vec![format!(
                "morloc mcp: excluding command 'f' from the tool surface ({reason})"
            )]
        );
    }

    #[test]
    fn shapes_fixture_matches_the_reference_bytes() {
        let m = Manifest::from_json(SHAPES, &mut Vec::new()).unwrap();
        let surface = build(&m);
        assert!(surface.notes.is_empty());
        let pretty = serde_json::to_string_pretty(&surface.list_result()).unwrap() + "\n";
        assert_eq!(pretty, SHAPES_TOOLS);
    }

    #[test]
    fn wire_types_map_to_json_schema() {
        check_t("z", r#"{"type":"null"}"#);
        check_t("b", r#"{"type":"boolean"}"#);
        for int in ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "j"] {
            check_t(int, r#"{"type":"integer"}"#);
        }
        check_t("f4", r#"{"type":"number"}"#);
        check_t("f8", r#"{"type":"number"}"#);
        check_t("s", r#"{"type":"string"}"#);
        check_t("aj", r#"{"type":"array","items":{"type":"integer"}}"#);
        check_t("a:3f8", r#"{"type":"array","items":{"type":"number"}}"#);
        check_t(
            "t2js",
            r#"{"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],"minItems":2,"maxItems":2}"#,
        );
        check_t(
            "t0",
            r#"{"type":"array","prefixItems":[],"minItems":0,"maxItems":0}"#,
        );
        check_t(
            "m21xj1y?s",
            r#"{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":["string","null"]}},"required":["x"],"additionalProperties":false}"#,
        );
        check_t(
            "m0",
            r#"{"type":"object","properties":{},"required":[],"additionalProperties":false}"#,
        );
        check_t("?j", r#"{"type":["integer","null"]}"#);
        check_t("??j", r#"{"type":["integer","null"]}"#);
        check_t(
            "?aj",
            r#"{"type":["array","null"],"items":{"type":"integer"}}"#,
        );
        check_t(
            "<dict>at2sj",
            r#"{"type":"array","items":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"minItems":2,"maxItems":2}}"#,
        );
        check_t("<a<b>>f8", r#"{"type":"number"}"#);
        check_t(
            "&4Treem24leafj4kidsa^4Tree",
            r#"{"type":"object","properties":{"leaf":{"type":"integer"},"kids":{"type":"array","items":{"type":"object"}}},"required":["leaf","kids"],"additionalProperties":false}"#,
        );
        check_t(
            "&4Tree?m11x?^4Tree",
            r#"{"type":["object","null"],"properties":{"x":{"type":["object","null"]}},"required":[],"additionalProperties":false}"#,
        );
        check_t("F", r#"{"type":"string"}"#);
        check_t("O", r#"{"type":"string"}"#);
        check_t("I", r#"{"type":"string"}"#);
        check_t(
            "T:21aj1bas",
            r#"{"type":"array","items":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a","b"],"additionalProperties":false}}"#,
        );
        check_t(
            "T",
            r#"{"type":"array","items":{"type":"object","properties":{},"required":[],"additionalProperties":false}}"#,
        );
    }

    #[test]
    fn null_union_rules() {
        assert_eq!(
            with_null(json(r#"{"type":"string"}"#)),
            json(r#"{"type":["string","null"]}"#)
        );
        assert_eq!(
            with_null(json(r#"{"type":["a","null"]}"#)),
            json(r#"{"type":["a","null"]}"#)
        );
        assert_eq!(
            with_null(json(r#"{"type":["a"]}"#)),
            json(r#"{"type":["a","null"]}"#)
        );
        assert_eq!(with_null(json("{}")), json("{}"));
        // The type key keeps its first position.
        let v = with_null(json(r#"{"type":"array","items":{}}"#));
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"type":["array","null"],"items":{}}"#
        );
    }

    #[test]
    fn positionals() {
        // Unnamed positionals are `_k`, counted over all positionals.
        check_input(
            r#"[{"kind":"pos","schema":"j","name":"origin","metavar":"X"},{"kind":"pos","schema":"s","metavar":"Y"}]"#,
            r#"{"type":"object","properties":{"origin":{"type":"integer"},"_2":{"type":"string"}},"required":["origin","_2"],"additionalProperties":false}"#,
        );
        // An empty name counts as unnamed; `?T` is not required.
        check_input(
            r#"[{"kind":"pos","schema":"?j","name":""}]"#,
            r#"{"type":"object","properties":{"_1":{"type":["integer","null"]}},"required":[],"additionalProperties":false}"#,
        );
        // Missing and unparseable schemas: `{}` and still required.
        check_input(
            r#"[{"kind":"pos"},{"kind":"pos","schema":"q"},{"kind":"pos","schema":null}]"#,
            r#"{"type":"object","properties":{"_1":{},"_2":{},"_3":{}},"required":["_1","_2","_3"],"additionalProperties":false}"#,
        );
        // Descriptions: empty lines dropped, space-only lines kept, no default text.
        check_input(
            r#"[{"kind":"pos","schema":"j","desc":["Start point","","  ","(lat, lon)"]}]"#,
            r#"{"type":"object","properties":{"_1":{"type":"integer","description":"Start point    (lat, lon)"}},"required":["_1"],"additionalProperties":false}"#,
        );
    }

    #[test]
    fn many_wraps_unless_already_an_array() {
        check_input(
            r#"[{"kind":"pos","schema":"aj","many":true},{"kind":"pos","schema":"j","many":true},{"kind":"pos","schema":"?aj","many":true},{"kind":"pos","many":true}]"#,
            r#"{"type":"object","properties":{"_1":{"type":"array","items":{"type":"integer"}},"_2":{"type":"array","items":{"type":"integer"}},"_3":{"type":"array","items":{"type":["array","null"],"items":{"type":"integer"}}},"_4":{"type":"array","items":{}}},"required":["_1","_2","_4"],"additionalProperties":false}"#,
        );
        check_input(
            r#"[{"kind":"opt","schema":"s","long":"tag","many":true,"default":""}]"#,
            r#"{"type":"object","properties":{"tag":{"type":"array","items":{"type":"string"},"description":"(default: )"}},"required":[],"additionalProperties":false}"#,
        );
    }

    #[test]
    fn options_and_flags() {
        check_input(
            r#"[{"kind":"opt","schema":"f8","long":"radius","short":"r","default":"6371.0","desc":["Sphere radius in km"]},
                {"kind":"opt","schema":"s","short":"q","default":"\"box\""},
                {"kind":"opt","schema":"j"},
                {"kind":"flag","long":"miles","short":"m","default":"false","desc":["Report miles"]},
                {"kind":"flag","short":"v"}]"#,
            r#"{"type":"object","properties":{"radius":{"type":"number","description":"Sphere radius in km (default: 6371.0)"},"q":{"type":"string","description":"(default: \"box\")"},"option":{"type":"integer"},"miles":{"type":"boolean","description":"Report miles (default: false)"},"v":{"type":"boolean"}},"required":[],"additionalProperties":false}"#,
        );
    }

    #[test]
    fn unrolled_records() {
        // Fields in entries order; required only without a default, found,
        // and not optional; unknown keys map to `{}`.
        check_input(
            r#"[{"kind":"grp","schema":"<dict>m31aj1b?s1cb","type":"R","group_opt":null,"desc":["ignored"],"entries":[
                {"key":"c","arg":{"kind":"flag","long":"see","default":"false","desc":["C flag"]}},
                {"key":"a","arg":{"kind":"opt","long":"aa","desc":["A"]}},
                {"key":"b","arg":{"kind":"opt","long":"bb"}},
                {"key":"zz","arg":{"kind":"opt","long":"zz"}},
                {"key":"a2","arg":{"kind":"opt","long":"a2","default":""}}]}]"#,
            r#"{"type":"object","properties":{"c":{"type":"boolean","description":"C flag (default: false)"},"a":{"type":"integer","description":"A"},"b":{"type":["string","null"]},"zz":{},"a2":{"description":"(default: )"}},"required":["a"],"additionalProperties":false}"#,
        );
        // An unparseable group schema advertises nothing but keeps its slot.
        let m = manifest(
            r#"{"name":"f","type":"pure","args":[{"kind":"pos","schema":"j"},{"kind":"grp","schema":"m9","entries":[{"key":"a","arg":{"kind":"opt","long":"a","default":"1"}}]}]}"#,
        );
        let tool = &build(&m).tools[0];
        assert_eq!(tool.properties.len(), 1);
        assert_eq!(tool.slots.len(), 2);
        assert_eq!(
            tool.slots[1],
            Slot::Record(RecordSlot {
                whole: None,
                fields: vec![Field {
                    key: "a".into(),
                    default: json("1")
                }],
                fields_exposed: false
            })
        );
        // A record schema that parses but is not a record: every field is `{}`.
        check_input(
            r#"[{"kind":"grp","schema":"j","entries":[{"key":"a","arg":{"kind":"opt","long":"a"}}]}]"#,
            r#"{"type":"object","properties":{"a":{}},"required":[],"additionalProperties":false}"#,
        );
    }

    #[test]
    fn whole_object_records() {
        check_input(
            r#"[{"kind":"grp","schema":"<dict>m21aj1b?s","type":"SysConfig","group_opt":{"long":"config"},"desc":["The config"],"entries":[
                {"key":"a","arg":{"kind":"opt","long":"aa","default":"1"}}]}]"#,
            r#"{"type":"object","properties":{"sysconfig":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":["string","null"]}},"required":["a"],"additionalProperties":false,"description":"The config"}},"required":[],"additionalProperties":false}"#,
        );
        check_input(
            r#"[{"kind":"grp","schema":"m9","group_opt":{"short":"c"},"entries":[]}]"#,
            r#"{"type":"object","properties":{"group":{"type":"object"}},"required":[],"additionalProperties":false}"#,
        );
    }

    #[test]
    fn render_property_and_output_schema() {
        let m = manifest(
            r#"{"name":"plot","type":"pure","args":[{"kind":"pos","schema":"af8"}],"return":{"schema":"<x>m11aj"},
                "terminals":[{"short":"s","long":"svg","entry":"mlcp_plot_svg","render":true,"default":true},{"long":"png","entry":"nowhere"}]},
               {"name":"mlcp_plot_svg","type":"pure","internal":true,"return":{"schema":"s","mime":"image/svg+xml"}}"#,
        );
        let surface = build(&m);
        assert_eq!(surface.tools.len(), 1);
        let tool = &surface.tools[0];
        assert_eq!(
            serde_json::to_string(&tool.json).unwrap(),
            r#"{"name":"plot","description":"","inputSchema":{"type":"object","properties":{"_1":{"type":"array","items":{"type":"number"}},"_render":{"type":"string","enum":["raw","svg","png"],"default":"raw","description":"Output projection: 'raw' returns the underlying typed value; a renderer name returns that projection (e.g. an image)."}},"required":["_1"],"additionalProperties":false},"outputSchema":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}}"#
        );
        assert_eq!(
            tool.renders,
            vec![
                Render {
                    name: "svg".into(),
                    entry: "mlcp_plot_svg".into(),
                    command: Some(1)
                },
                Render {
                    name: "png".into(),
                    entry: "nowhere".into(),
                    command: None
                },
            ]
        );
        assert_eq!(tool.properties.last().map(|p| p.feeds), Some(Feeds::Render));
    }

    #[test]
    fn output_schema_only_for_records() {
        for (ret, has) in [
            ("m11aj", true),
            ("&1Rm11aj", true),
            ("<d>m0", true),
            ("?m11aj", false),
            ("am11aj", false),
            ("j", false),
            ("z", false),
            ("", false),
            ("m1", false),
        ] {
            let m = manifest(&format!(
                r#"{{"name":"f","type":"pure","return":{{"schema":"{ret}"}}}}"#
            ));
            let tool = &build(&m).tools[0];
            assert_eq!(tool.json.get("outputSchema").is_some(), has, "return {ret}");
        }
    }

    #[test]
    fn descriptions_join_lines_verbatim() {
        let m = manifest(
            r#"{"name":"f","type":"pure","desc":["A","","B "]},{"name":"g","type":"pure"}"#,
        );
        let surface = build(&m);
        assert_eq!(surface.tools[0].json["description"], "A\n\nB ");
        assert_eq!(surface.tools[1].json["description"], "");
        let keys: Vec<&String> = surface.tools[1].json.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["name", "description", "inputSchema"]);
    }

    #[test]
    fn exclusions() {
        check_excluded(
            r#""args":[{"kind":"pos","schema":"s","stdin":true}]"#,
            "reads from @stdin",
        );
        check_excluded(
            r#""args":[{"kind":"pos","schema":"T:11aj"}]"#,
            "argument has an Arrow Table or stream-handle type",
        );
        check_excluded(
            r#""args":[{"kind":"opt","schema":"am11xF","long":"x"}]"#,
            "argument has an Arrow Table or stream-handle type",
        );
        check_excluded(
            r#""args":[{"kind":"grp","schema":"m11xO","entries":[]}]"#,
            "argument has an Arrow Table or stream-handle type",
        );
        check_excluded(
            r#""return":{"schema":"?I"}"#,
            "return has an Arrow Table or stream-handle type",
        );
        // Arguments are checked in order, stdin before the schema of the same arg.
        check_excluded(
            r#""args":[{"kind":"pos","schema":"T","stdin":true},{"kind":"pos","schema":"s","stdin":true}]"#,
            "reads from @stdin",
        );
        check_excluded(
            r#""args":[{"kind":"pos","schema":"F"},{"kind":"pos","schema":"s","stdin":true}]"#,
            "argument has an Arrow Table or stream-handle type",
        );
        // Argument rules come before the return rule.
        check_excluded(
            r#""args":[{"kind":"pos","stdin":true}],"return":{"schema":"T"}"#,
            "reads from @stdin",
        );
        // Collisions between every kind of property name.
        check_excluded(
            r#""args":[{"kind":"pos","schema":"j","name":"x"},{"kind":"opt","schema":"j","long":"x"}]"#,
            "property name collision on 'x'",
        );
        check_excluded(
            r#""args":[{"kind":"pos","schema":"j"},{"kind":"flag","long":"_1"}]"#,
            "property name collision on '_1'",
        );
        check_excluded(
            r#""args":[{"kind":"flag","short":"x"},{"kind":"grp","schema":"m11xj","entries":[{"key":"x","arg":{"kind":"opt"}}]}]"#,
            "property name collision on 'x'",
        );
        check_excluded(
            r#""args":[{"kind":"opt","long":"cfg"},{"kind":"grp","schema":"m0","type":"Cfg","group_opt":{},"entries":[]}]"#,
            "property name collision on 'cfg'",
        );
        check_excluded(
            r#""args":[{"kind":"opt","long":"_render"}],"terminals":[{"long":"svg","entry":"x"}]"#,
            "property name collision on '_render'",
        );
        check_excluded(
            r#""args":[{"kind":"opt"},{"kind":"flag"}]"#,
            "property name collision on 'option'",
        );
    }

    #[test]
    fn unservable_schemas_that_do_not_parse_are_served() {
        let m = manifest(
            r#"{"name":"f","type":"pure","args":[{"kind":"pos","schema":"T:"}],"return":{"schema":"Fx"}}"#,
        );
        assert_eq!(build(&m).tools.len(), 1);
        // Flags and group entries carry no schema of their own.
        let m = manifest(
            r#"{"name":"f","type":"pure","args":[{"kind":"grp","schema":"m11xj","entries":[{"key":"x","arg":{"kind":"opt","schema":"F"}}]}]}"#,
        );
        assert_eq!(build(&m).tools.len(), 1);
    }

    #[test]
    fn internal_commands_are_skipped_silently_and_notes_keep_order() {
        let m = manifest(
            r#"{"name":"a","type":"pure","internal":true,"args":[{"kind":"pos","stdin":true}]},
               {"name":"b","type":"pure","args":[{"kind":"pos","stdin":true}]},
               {"name":"c","type":"pure"},
               {"name":"d","type":"pure","return":{"schema":"T"}}"#,
        );
        let surface = build(&m);
        assert_eq!(
            surface
                .tools
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>(),
            ["c"]
        );
        assert_eq!(surface.tools[0].command, 2);
        assert_eq!(surface.notes.len(), 2);
        assert!(surface.notes[0].contains("'b'"));
        assert!(surface.notes[1].contains("'d'"));
    }

    #[test]
    fn duplicate_tool_names_are_listed_and_the_later_answers() {
        let m =
            manifest(r#"{"name":"f","type":"pure"},{"name":"f","type":"pure","desc":["second"]}"#);
        let surface = build(&m);
        assert_eq!(surface.tools.len(), 2);
        assert_eq!(surface.find_index("f"), Some(1));
        assert_eq!(surface.find("f").map(|t| t.command), Some(1));
        assert!(surface.find("g").is_none());
    }

    #[test]
    fn rename_keeps_key_order() {
        let m = manifest(r#"{"name":"f","type":"pure"}"#);
        let mut surface = build(&m);
        surface.tools[0].rename("geo__f".into());
        assert_eq!(
            serde_json::to_string(&surface.tools[0].json).unwrap(),
            r#"{"name":"geo__f","description":"","inputSchema":{"type":"object","properties":{},"required":[],"additionalProperties":false}}"#
        );
        assert!(surface.find("f").is_none());
        assert_eq!(surface.find_index("geo__f"), Some(0));
    }

    #[test]
    fn slots_and_feeds_follow_the_manifest() {
        let m = Manifest::from_json(SHAPES, &mut Vec::new()).unwrap();
        let surface = build(&m);
        let scale = surface.find("scale").unwrap();
        assert_eq!(
            scale.slots,
            vec![
                Slot::Value {
                    key: "_1".into(),
                    default: Value::Null
                },
                Slot::Value {
                    key: "factor".into(),
                    default: json("2")
                },
            ]
        );
        let flat = surface.find("configFlat").unwrap();
        assert_eq!(
            flat.properties
                .iter()
                .map(|p| (p.name.as_str(), p.feeds))
                .collect::<Vec<_>>(),
            [
                ("tmpDir", Feeds::Field { arg: 0, field: 0 }),
                ("numThreads", Feeds::Field { arg: 0, field: 1 }),
                ("removeCaches", Feeds::Field { arg: 0, field: 2 }),
            ]
        );
        assert_eq!(
            flat.slots,
            vec![Slot::Record(RecordSlot {
                whole: None,
                fields: vec![
                    Field {
                        key: "tmpDir".into(),
                        default: json(r#""/tmp""#)
                    },
                    Field {
                        key: "numThreads".into(),
                        default: json("1")
                    },
                    Field {
                        key: "removeCaches".into(),
                        default: json("false")
                    },
                ],
                fields_exposed: true,
            })]
        );
        let whole = surface.find("configWhole").unwrap();
        assert!(
            matches!(&whole.slots[0], Slot::Record(r) if r.whole.as_deref() == Some("configwhole"))
        );
        assert_eq!(whole.required, Vec::<String>::new());
    }
}
