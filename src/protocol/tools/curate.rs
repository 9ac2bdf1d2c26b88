//! A tools file: what an operator says about a program's tools without
//! recompiling it (titles, descriptions, annotation hints, hidden tools, new
//! names, argument names and descriptions, OAuth scopes a call needs),
//! checked against the program and applied to its [`Surface`].
//!
//! The file is JSON:
//!
//! ```json
//! {"tools": {"addOne": {"name": "add_one", "title": "Add one",
//!   "description": "Adds one to a number.", "hidden": false,
//!   "annotations": {"readOnlyHint": true, "idempotentHint": true},
//!   "scopes": ["mcp:math"],
//!   "arguments": {"_1": {"name": "x", "description": "The number."}}}}}
//! ```
//!
//! Keys of `tools` are the manifest's command names; keys of `arguments` are
//! the properties the tool advertises without the file (`_1`, an option's
//! name, a record field). Every key is optional, and `null` leaves a setting
//! as it is, so [`template`] can list every setting as a no-op. Anything the
//! file names that the program does not have is an error that names it and
//! lists what there is. Nothing is guessed: a hint is emitted only when the
//! file sets it.
//!
//! Pure: the caller reads the file.

use std::fmt;

use serde_json::{Map, Value};

use super::{Feeds, Slot, Surface, Tool, RENDER_PROPERTY};
use crate::format::manifest::Manifest;
use crate::protocol::log::Untrusted;

/// The name under which a tools file is found beside a program's manifest.
pub const BESIDE_MANIFEST: &str = "morloc-mcp-tools.json";

/// The hints of MCP's `ToolAnnotations` a tools file may set.
pub const HINTS: [&str; 4] = [
    "readOnlyHint",
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
];

/// A parsed tools file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Curation {
    /// `module`: the name the router prefixes the program's tools with
    /// (`<module>__<command>`) instead of the manifest's module name.
    pub module: Option<String>,
    /// Per command, in file order.
    pub tools: Vec<(String, ToolCuration)>,
}

/// What the file says about one command's tool.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolCuration {
    pub name: Option<String>,
    pub title: Option<String>,
    pub description: Option<String>,
    pub hidden: bool,
    /// Hint name and value, in [`HINTS`] order.
    pub annotations: Vec<(&'static str, bool)>,
    /// OAuth scopes a call of the tool needs, in file order (none: unset).
    pub scopes: Vec<String>,
    /// Per advertised property, in file order.
    pub arguments: Vec<(String, ArgCuration)>,
}

/// What the file says about one argument.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ArgCuration {
    pub name: Option<String>,
    pub description: Option<String>,
}

/// A tools file that cannot be used: where in the file, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CurateError {
    /// The JSON path of the offending key (`tools.addOne.arguments._9`),
    /// empty for the whole file.
    pub at: String,
    pub message: String,
}

impl fmt::Display for CurateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.at.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.at, self.message)
        }
    }
}

impl std::error::Error for CurateError {}

fn error(at: &str, message: impl Into<String>) -> CurateError {
    CurateError {
        at: at.to_string(),
        message: message.into(),
    }
}

fn object<'a>(value: &'a Value, at: &str) -> Result<&'a Map<String, Value>, CurateError> {
    value
        .as_object()
        .ok_or_else(|| error(at, format!("must be an object, not {}", kind(value))))
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Rejects keys other than `allowed`, naming the first one and the choices.
fn only_keys(map: &Map<String, Value>, allowed: &[&str], at: &str) -> Result<(), CurateError> {
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        None => Ok(()),
        Some(key) => Err(error(
            &join(at, key),
            format!(
                "unknown key {} (expected one of: {})",
                Untrusted(key),
                allowed.join(", ")
            ),
        )),
    }
}

fn join(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_string()
    } else {
        format!("{at}.{key}")
    }
}

fn text(map: &Map<String, Value>, key: &str, at: &str) -> Result<Option<String>, CurateError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(error(
            &join(at, key),
            format!("must be a string or null, not {}", kind(other)),
        )),
    }
}

fn flag(map: &Map<String, Value>, key: &str, at: &str) -> Result<Option<bool>, CurateError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(error(
            &join(at, key),
            format!("must be a boolean or null, not {}", kind(other)),
        )),
    }
}

/// Parses a tools file's text. Its meaning is checked against a program by
/// [`apply`].
pub fn parse(text_of_file: &str) -> Result<Curation, CurateError> {
    let root: Value = serde_json::from_str(text_of_file)
        .map_err(|e| error("", format!("not valid JSON: {e}")))?;
    let root = object(&root, "")?;
    only_keys(root, &["module", "tools"], "")?;
    let mut curation = Curation {
        module: text(root, "module", "")?,
        ..Curation::default()
    };
    if let Some(module) = &curation.module {
        check_module_name(module).map_err(|m| error("module", m))?;
    }
    let tools = match root.get("tools") {
        Some(tools) => tools,
        None if curation.module.is_some() => return Ok(curation),
        None => return Err(error("", "missing key 'tools'")),
    };
    for (command, entry) in object(tools, "tools")? {
        let at = format!("tools.{command}");
        let entry = object(entry, &at)?;
        only_keys(
            entry,
            &[
                "name",
                "title",
                "description",
                "hidden",
                "annotations",
                "scopes",
                "arguments",
            ],
            &at,
        )?;
        let mut tool = ToolCuration {
            name: text(entry, "name", &at)?,
            title: text(entry, "title", &at)?,
            description: text(entry, "description", &at)?,
            hidden: flag(entry, "hidden", &at)?.unwrap_or(false),
            ..ToolCuration::default()
        };
        if let Some(name) = &tool.name {
            check_tool_name(name).map_err(|m| error(&join(&at, "name"), m))?;
        }
        match entry.get("annotations") {
            None | Some(Value::Null) => {}
            Some(hints) => {
                let hints_at = join(&at, "annotations");
                let hints = object(hints, &hints_at)?;
                only_keys(hints, &HINTS, &hints_at)?;
                for hint in HINTS {
                    if let Some(value) = flag(hints, hint, &hints_at)? {
                        tool.annotations.push((hint, value));
                    }
                }
            }
        }
        tool.scopes = scopes(entry, &at)?;
        match entry.get("arguments") {
            None | Some(Value::Null) => {}
            Some(arguments) => {
                let args_at = join(&at, "arguments");
                for (property, arg) in object(arguments, &args_at)? {
                    let arg_at = join(&args_at, property);
                    let arg = object(arg, &arg_at)?;
                    only_keys(arg, &["name", "description"], &arg_at)?;
                    let curated = ArgCuration {
                        name: text(arg, "name", &arg_at)?,
                        description: text(arg, "description", &arg_at)?,
                    };
                    if let Some(name) = &curated.name {
                        check_property_name(name).map_err(|m| error(&join(&arg_at, "name"), m))?;
                    }
                    tool.arguments.push((property.clone(), curated));
                }
            }
        }
        curation.tools.push((command.clone(), tool));
    }
    Ok(curation)
}

/// `scopes`: an array of RFC 6749 scope tokens (printable ASCII but space,
/// `"` and `\`), each kept once, or `null`.
fn scopes(map: &Map<String, Value>, at: &str) -> Result<Vec<String>, CurateError> {
    let at = join(at, "scopes");
    let items = match map.get("scopes") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(error(
                &at,
                format!("must be an array of strings or null, not {}", kind(other)),
            ))
        }
    };
    let mut scopes: Vec<String> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Value::String(scope) = item else {
            return Err(error(
                &format!("{at}[{i}]"),
                format!("must be a string, not {}", kind(item)),
            ));
        };
        let valid = |c: char| matches!(c, '\x21' | '\x23'..='\x5b' | '\x5d'..='\x7e');
        if scope.is_empty() || !scope.chars().all(valid) {
            return Err(error(
                &format!("{at}[{i}]"),
                format!(
                    "{scope:?} is not a valid OAuth scope (one or more printable ASCII characters, no space, '\"' or '\\')"
                ),
            ));
        }
        if !scopes.contains(scope) {
            scopes.push(scope.clone());
        }
    }
    Ok(scopes)
}

/// MCP's rule for tool names: 1 to 128 of `A-Z a-z 0-9 _ - .`.
fn check_tool_name(name: &str) -> Result<(), String> {
    let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if name.is_empty() || name.len() > 128 || !name.chars().all(valid) {
        return Err(format!(
            "'{name}' is not a valid tool name (1 to 128 characters of A-Z, a-z, 0-9, '_', '-', '.')"
        ));
    }
    Ok(())
}

/// A module name for tool prefixes: 1 to 64 of `A-Z a-z 0-9 _ -`, without
/// `__` (the separator of `<module>__<command>`).
fn check_module_name(name: &str) -> Result<(), String> {
    let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-');
    if name.is_empty() || name.len() > 64 || !name.chars().all(valid) || name.contains("__") {
        return Err(format!(
            "'{name}' is not a valid module name (1 to 64 characters of A-Z, a-z, 0-9, '_', '-', without '__')"
        ));
    }
    Ok(())
}

/// A property name clients can send: 1 to 64 of `A-Z a-z 0-9 _ - .`, and
/// not the `_render` selector.
fn check_property_name(name: &str) -> Result<(), String> {
    let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if name.is_empty() || name.len() > 64 || !name.chars().all(valid) {
        return Err(format!(
            "'{name}' is not a valid argument name (1 to 64 characters of A-Z, a-z, 0-9, '_', '-', '.')"
        ));
    }
    if name == RENDER_PROPERTY {
        return Err(format!(
            "'{RENDER_PROPERTY}' is reserved for the output projection"
        ));
    }
    Ok(())
}

/// Applies `curation` to the surface of `manifest`: every command and
/// argument it names must exist and be served, and the names it gives must
/// stay unique. On error the surface is left as it was.
pub fn apply(
    surface: &mut Surface,
    manifest: &Manifest,
    curation: &Curation,
) -> Result<(), CurateError> {
    surface.module.clone_from(&curation.module);
    let mut tools = surface.tools.clone();
    let mut hidden = vec![false; tools.len()];
    for (command, wanted) in &curation.tools {
        let at = format!("tools.{command}");
        // A command by its name, or as `<module>__<command>` (the name a
        // served tool has over HTTP and in the router).
        let named = |name: &str| {
            name == command
                || command
                    .strip_prefix(manifest.name.as_str())
                    .and_then(|rest| rest.strip_prefix("__"))
                    == Some(name)
        };
        let Some(index) = tools
            .iter()
            .rposition(|t| named(&manifest.commands[t.command].name))
        else {
            let exists = manifest.commands.iter().any(|c| named(&c.name));
            let message = if exists {
                format!("command '{command}' is not served as a tool (see the exclusion notes at start-up)")
            } else {
                let served: Vec<&str> = tools
                    .iter()
                    .map(|t| manifest.commands[t.command].name.as_str())
                    .collect();
                format!(
                    "the program has no command '{command}' (its tools: {})",
                    served.join(", ")
                )
            };
            return Err(error(&at, message));
        };
        let tool = &mut tools[index];
        hidden[index] = wanted.hidden;
        tool.scopes.clone_from(&wanted.scopes);
        for (property, arg) in &wanted.arguments {
            curate_argument(tool, property, arg, &join(&at, "arguments"))?;
        }
        if let Some(name) = &wanted.name {
            tool.rename(name.clone());
        }
        for json in [&mut tool.json, &mut tool.modern_json] {
            dress(json, wanted);
        }
    }
    // New names must not collide with each other or with untouched tools.
    let kept: Vec<&Tool> = tools
        .iter()
        .zip(&hidden)
        .filter(|(_, h)| !**h)
        .map(|(t, _)| t)
        .collect();
    for (i, tool) in kept.iter().enumerate() {
        if let Some(other) = kept[..i].iter().find(|t| t.name == tool.name) {
            let command = &manifest.commands[tool.command].name;
            let first = &manifest.commands[other.command].name;
            return Err(error(
                &format!("tools.{command}"),
                format!(
                    "two tools would be named '{}' (commands '{first}' and '{command}')",
                    tool.name
                ),
            ));
        }
    }
    surface.tools = tools
        .into_iter()
        .zip(hidden)
        .filter(|(_, h)| !*h)
        .map(|(t, _)| t)
        .collect();
    Ok(())
}

/// Title, description and hints, in both forms of the tool: the title comes
/// after the name, the annotations last.
fn dress(json: &mut Value, wanted: &ToolCuration) {
    let Value::Object(map) = json else { return };
    if let Some(description) = &wanted.description {
        map.insert("description".into(), Value::String(description.clone()));
    }
    if wanted.title.is_none() && wanted.annotations.is_empty() {
        return;
    }
    let old = std::mem::take(map);
    for (key, value) in old {
        let is_name = key == "name";
        map.insert(key, value);
        if is_name {
            if let Some(title) = &wanted.title {
                map.insert("title".into(), Value::String(title.clone()));
            }
        }
    }
    let mut annotations = Map::new();
    if let Some(title) = &wanted.title {
        annotations.insert("title".into(), Value::String(title.clone()));
    }
    for (hint, value) in &wanted.annotations {
        annotations.insert((*hint).into(), Value::Bool(*value));
    }
    map.insert("annotations".into(), Value::Object(annotations));
}

/// Renames and describes one advertised property of `tool`, wherever the
/// property's name is used: the property list, the call slots, `required`
/// and both `inputSchema`s.
fn curate_argument(
    tool: &mut Tool,
    property: &str,
    arg: &ArgCuration,
    at: &str,
) -> Result<(), CurateError> {
    let at = join(at, property);
    let Some(index) = tool.properties.iter().position(|p| p.name == property) else {
        let names: Vec<&str> = tool.properties.iter().map(|p| p.name.as_str()).collect();
        return Err(error(
            &at,
            format!(
                "tool '{}' has no argument '{property}' (its arguments: {})",
                tool.name,
                names.join(", ")
            ),
        ));
    };
    let feeds = tool.properties[index].feeds;
    if let Some(name) = &arg.name {
        if feeds == Feeds::Render {
            return Err(error(
                &join(&at, "name"),
                "the output projection '_render' cannot be renamed",
            ));
        }
        if name != property && tool.has_property(name) {
            return Err(error(
                &join(&at, "name"),
                format!("tool '{}' already has an argument '{name}'", tool.name),
            ));
        }
    }
    for json in [&mut tool.json, &mut tool.modern_json] {
        let Some(input) = json.get_mut("inputSchema").and_then(Value::as_object_mut) else {
            continue;
        };
        if let Some(Value::Object(props)) = input.get_mut("properties") {
            if let Some(Value::Object(schema)) = props.get_mut(property) {
                if let Some(description) = &arg.description {
                    schema.insert("description".into(), Value::String(description.clone()));
                }
            }
            if let Some(name) = &arg.name {
                let old = std::mem::take(props);
                for (key, value) in old {
                    let key = if key == property { name.clone() } else { key };
                    props.insert(key, value);
                }
            }
        }
        if let (Some(name), Some(Value::Array(required))) = (&arg.name, input.get_mut("required")) {
            for entry in required.iter_mut() {
                if entry.as_str() == Some(property) {
                    *entry = Value::String(name.clone());
                }
            }
        }
    }
    let Some(name) = &arg.name else { return Ok(()) };
    tool.properties[index].name = name.clone();
    for entry in tool.required.iter_mut().filter(|r| *r == property) {
        *entry = name.clone();
    }
    match (feeds, tool.slots.get_mut(feeds_slot(feeds))) {
        (Feeds::Arg(_), Some(Slot::Value { key, .. } | Slot::Flag { key, .. })) => {
            *key = name.clone()
        }
        (Feeds::Arg(_), Some(Slot::Record(record))) => record.whole = Some(name.clone()),
        (Feeds::Field { field, .. }, Some(Slot::Record(record))) => {
            record.fields[field].property = name.clone();
        }
        _ => {}
    }
    Ok(())
}

fn feeds_slot(feeds: Feeds) -> usize {
    match feeds {
        Feeds::Arg(slot) | Feeds::Field { arg: slot, .. } => slot,
        Feeds::Render => usize::MAX,
    }
}

/// A starting tools file for `surface`: every tool with every setting, each
/// either its current value (description, argument names and descriptions)
/// or `null` (not set), so the file changes nothing until edited.
pub fn template(surface: &Surface, manifest: &Manifest) -> Value {
    let mut tools = Map::new();
    for tool in &surface.tools {
        let mut entry = Map::new();
        entry.insert("name".into(), Value::String(tool.name.clone()));
        entry.insert("title".into(), Value::Null);
        entry.insert(
            "description".into(),
            tool.json.get("description").cloned().unwrap_or(Value::Null),
        );
        entry.insert("hidden".into(), Value::Bool(false));
        let hints = HINTS.iter().map(|h| (h.to_string(), Value::Null)).collect();
        entry.insert("annotations".into(), Value::Object(hints));
        entry.insert("scopes".into(), Value::Null);
        let mut arguments = Map::new();
        let props = tool.json.pointer("/inputSchema/properties");
        for property in &tool.properties {
            if property.feeds == Feeds::Render {
                continue;
            }
            let description = props
                .and_then(|p| p.get(&property.name))
                .and_then(|s| s.get("description"))
                .cloned()
                .unwrap_or(Value::Null);
            let mut arg = Map::new();
            arg.insert("name".into(), Value::String(property.name.clone()));
            arg.insert("description".into(), description);
            arguments.insert(property.name.clone(), Value::Object(arg));
        }
        entry.insert("arguments".into(), Value::Object(arguments));
        tools.insert(
            manifest.commands[tool.command].name.clone(),
            Value::Object(entry),
        );
    }
    let mut root = Map::new();
    root.insert("tools".into(), Value::Object(tools));
    Value::Object(root)
}

#[cfg(test)]
mod tests;
