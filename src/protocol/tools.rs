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

use crate::format::manifest::{Arg, Command, GrpArg, Manifest, SchemaText};
use crate::format::schema::Schema;

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
    /// A tools file's `module`: the prefix of the tools' names when they
    /// are namespaced, instead of the manifest's module name.
    pub module: Option<String>,
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
    /// That command's name: the tool's name until a tools file renames it
    /// (an old name is then answered with the new one).
    pub command_name: String,
    /// The tool object of the `tools/list` payload.
    pub json: Value,
    /// The same tool for MCP 2026-07-28: identical but for recursive types,
    /// which are `$defs` entries reached through `$ref` instead of the
    /// reference's bare `{"type":"object"}`.
    pub modern_json: Value,
    /// The `inputSchema` properties in advertised order (`_render` last).
    pub properties: Vec<Property>,
    /// Property names a call must supply, in advertised order.
    pub required: Vec<String>,
    /// One entry per element of the command's `args`, in manifest order.
    pub slots: Vec<Slot>,
    /// The `_render` projections in terminal order (empty: no `_render`).
    pub renders: Vec<Render>,
    /// OAuth scopes a call needs besides the server's (a tools file's
    /// `scopes`; empty without one).
    pub scopes: Vec<String>,
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
    /// The field's name in the record.
    pub key: String,
    /// The property that supplies it in the unrolled form: `key`, unless a
    /// tools file renamed it (`curate`).
    pub property: String,
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
        for json in [&mut self.json, &mut self.modern_json] {
            if let Value::Object(map) = json {
                map.insert("name".into(), Value::String(name.clone()));
            }
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
        match shape_tool(manifest, index, command, false) {
            Ok(mut tool) => {
                if let Ok(modern) = shape_tool(manifest, index, command, true) {
                    tool.modern_json = modern.json;
                }
                tools.push(tool)
            }
            Err(reason) => notes.push(format!(
                "morloc mcp: excluding command '{}' from the tool surface ({reason})",
                command.name
            )),
        }
    }
    Surface {
        tools,
        module: None,
        notes,
    }
}

/// Maps a wire schema to its JSON Schema (the `T` of the surface spec).
pub fn json_schema(schema: &Schema) -> Value {
    emit(schema, &mut Emit::default())
}

/// How schemas are written: the reference's way (`defs` is `None`: a
/// recursive type is a bare object), or for MCP 2026-07-28 (recursive types
/// collected into `defs` and referenced with `$ref`).
#[derive(Default)]
struct Emit {
    defs: Option<Map<String, Value>>,
}

impl Emit {
    fn modern() -> Emit {
        Emit {
            defs: Some(Map::new()),
        }
    }

    /// Takes the collected definitions (none for the reference's way).
    fn take_defs(&mut self) -> Option<Map<String, Value>> {
        self.defs
            .as_mut()
            .map(std::mem::take)
            .filter(|d| !d.is_empty())
    }
}

fn def_ref(name: &str) -> Value {
    let mut map = Map::new();
    map.insert("$ref".into(), Value::String(format!("#/$defs/{name}")));
    Value::Object(map)
}

/// Whether `schema` refers back to the declaration `name`.
fn refers_to(schema: &Schema, name: &str) -> bool {
    match schema {
        Schema::Recur(n) => n == name,
        Schema::List { elem, .. } => refers_to(elem, name),
        Schema::Optional(inner) => refers_to(inner, name),
        Schema::Tuple(items) => items.iter().any(|s| refers_to(s, name)),
        Schema::Record(fields) | Schema::Table(fields) => {
            fields.iter().any(|(_, s)| refers_to(s, name))
        }
        Schema::Named { body, .. } => refers_to(body, name),
        _ => false,
    }
}

fn emit(schema: &Schema, e: &mut Emit) -> Value {
    match schema {
        Schema::Nil => type_only("null"),
        Schema::Bool => type_only("boolean"),
        Schema::Int { .. } | Schema::BigInt => type_only("integer"),
        Schema::Float { .. } => type_only("number"),
        Schema::Str => type_only("string"),
        // Stream handles travel as their path text; commands using them are
        // excluded anyway.
        Schema::Handle(_) => type_only("string"),
        Schema::List { elem, .. } => array_of(emit(elem, e)),
        Schema::Tuple(items) => {
            let n = items.len() as u64;
            let mut map = Map::new();
            map.insert("type".into(), "array".into());
            map.insert(
                "prefixItems".into(),
                Value::Array(items.iter().map(|s| emit(s, e)).collect()),
            );
            map.insert("minItems".into(), n.into());
            map.insert("maxItems".into(), n.into());
            Value::Object(map)
        }
        Schema::Record(fields) => object_schema(fields.iter().map(|(k, s)| (k.as_str(), s)), e),
        Schema::Table(columns) => {
            // Column schemas are arrays; the row object shows element types.
            let rows = columns.iter().map(|(k, s)| match s.peel_named() {
                Schema::List { elem, .. } => (k.as_str(), &**elem),
                _ => (k.as_str(), s),
            });
            array_of(object_schema(rows, e))
        }
        Schema::Optional(inner) => with_null(emit(inner, e)),
        Schema::Named { name, body } if e.defs.is_some() && refers_to(body, name) => {
            let known = e.defs.as_ref().is_some_and(|d| d.contains_key(name));
            if !known {
                // Reserve the name first: the body refers to it.
                if let Some(defs) = e.defs.as_mut() {
                    defs.insert(name.clone(), Value::Null);
                }
                let def = emit(body, e);
                if let Some(defs) = e.defs.as_mut() {
                    defs.insert(name.clone(), def);
                }
            }
            def_ref(name)
        }
        Schema::Named { body, .. } => emit(body, e),
        Schema::Recur(name) if e.defs.is_some() => def_ref(name),
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

fn object_schema<'a>(fields: impl Iterator<Item = (&'a str, &'a Schema)>, e: &mut Emit) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (key, schema) in fields {
        if !is_optional(schema) {
            required.push(Value::String(key.to_string()));
        }
        properties.insert(key.to_string(), emit(schema, e));
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
    // A `$ref` (modern recursive types only) has no `type` to extend.
    if schema.get("$ref").is_some() && schema.get("type").is_none() {
        let mut null = Map::new();
        null.insert("type".into(), "null".into());
        let mut map = Map::new();
        map.insert(
            "anyOf".into(),
            Value::Array(vec![schema, Value::Object(null)]),
        );
        return Value::Object(map);
    }
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
fn argument_schema(schema: Option<&SchemaText>, many: bool, e: &mut Emit) -> Value {
    let base = match schema.and_then(SchemaText::schema) {
        Some(s) => emit(s, e),
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
                property: entry.key.clone(),
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
/// Shapes one command as a tool; `modern` writes its schemas for MCP
/// 2026-07-28 (see [`Tool::modern_json`]).
fn shape_tool(
    manifest: &Manifest,
    index: usize,
    command: &Command,
    modern: bool,
) -> Result<Tool, String> {
    let mut e = if modern {
        Emit::modern()
    } else {
        Emit::default()
    };
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
                let mut schema = argument_schema(pos.schema.as_ref(), pos.many, &mut e);
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
                let mut schema = argument_schema(opt.schema.as_ref(), opt.many, &mut e);
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
                    Some(s) => emit(s, &mut e),
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
                            .map(|f| emit(f, &mut e))
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
    if let Some(defs) = e.take_defs() {
        input.insert("$defs".into(), Value::Object(defs));
    }

    let mut json = Map::new();
    json.insert("name".into(), Value::String(command.name.clone()));
    json.insert("description".into(), Value::String(command.desc.join("\n")));
    json.insert("inputSchema".into(), Value::Object(input));
    if let Some(output) = output_schema(command, modern) {
        json.insert("outputSchema".into(), output);
    }

    Ok(Tool {
        name: command.name.clone(),
        command: index,
        command_name: command.name.clone(),
        modern_json: Value::Null,
        json: Value::Object(json),
        properties,
        required,
        slots,
        renders,
        scopes: Vec::new(),
    })
}

pub mod curate;
mod defaults;
mod output;
pub use defaults::typed_default;
pub use output::{accept_also, output_schema};

#[cfg(test)]
mod tests;
