//! The compiled program's `manifest.json`, loaded into typed structs.
//!
//! The Morloc compiler writes one manifest per program: its module name, the
//! language pools to start, and every exported command with its arguments,
//! schemas and documentation. Loading follows the reference runtime's rules:
//! unknown keys are ignored at every level, absent fields take defaults, field
//! types are strict (an explicit `null` only where a field is nullable), and
//! enumerations are closed. Every error names the offending field by its path
//! (`commands[3].args[0].kind`).
//!
//! Schema strings are parsed once here; a schema that does not parse is kept
//! with its error, because the reference still serves such commands (their
//! properties become `{}`) and only fails when they are called.
//!
//! Architecture Invariant: [`Manifest::from_json`] is pure; only [`load`] reads
//! files.

use std::fmt;
use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::format::schema::{self, Schema, SchemaError};

/// The runtime version whose manifests and wire format we implement.
pub const REFERENCE_VERSION: &str = "0.98.2";

/// A loaded manifest.
#[derive(Clone, Debug)]
pub struct Manifest {
    pub name: String,
    pub build: Build,
    pub pools: Vec<Pool>,
    pub commands: Vec<Command>,
    /// The module docstring, one entry per line.
    pub desc: Vec<String>,
    pub unsafe_skip_null_check: bool,
    pub no_shm: bool,
    pub inline_size: Option<i64>,
    pub tmpdir: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Build {
    pub path: String,
    pub time: i64,
    pub morloc_version: String,
}

#[derive(Clone, Debug)]
pub struct Pool {
    pub lang: String,
    /// argv prefix; the last element is relative to the manifest's directory.
    pub exec: Vec<String>,
    /// Socket file name inside the run's tmpdir (`pipe-<lang>`).
    pub socket: String,
    pub allow_string_null: bool,
    pub pool_hash: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandKind {
    Remote,
    Pure,
}

#[derive(Clone, Debug)]
pub struct Command {
    pub name: String,
    pub kind: CommandKind,
    /// Manifold id sent in CALL packets.
    pub mid: u32,
    /// Index into [`Manifest::pools`] of the pool that runs the command.
    pub pool: usize,
    pub needed_pools: Vec<usize>,
    pub desc: Vec<String>,
    pub args: Vec<Arg>,
    pub ret: Return,
    /// The expression tree of a pure command.
    pub expr: Option<Value>,
    pub internal: bool,
    pub terminals: Vec<Terminal>,
}

/// A schema string together with its parse.
#[derive(Clone, Debug)]
pub struct SchemaText {
    pub text: String,
    pub parsed: Result<Schema, SchemaError>,
}

impl SchemaText {
    pub fn new(text: &str) -> SchemaText {
        SchemaText {
            text: text.to_string(),
            parsed: schema::parse(text),
        }
    }

    pub fn schema(&self) -> Option<&Schema> {
        self.parsed.as_ref().ok()
    }
}

#[derive(Clone, Debug)]
pub struct Return {
    pub schema: SchemaText,
    pub mime: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Terminal {
    pub long: String,
    /// Name of the (usually internal) command executed for this projection.
    pub entry: String,
}

#[derive(Clone, Debug)]
pub enum Arg {
    Pos(PosArg),
    Opt(OptArg),
    Flag(FlagArg),
    Grp(GrpArg),
}

#[derive(Clone, Debug)]
pub struct PosArg {
    pub schema: Option<SchemaText>,
    pub name: Option<String>,
    pub metavar: Option<String>,
    pub many: bool,
    pub stdin: bool,
    pub desc: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct OptArg {
    pub schema: Option<SchemaText>,
    pub long: Option<String>,
    pub short: Option<String>,
    pub default: Option<String>,
    pub many: bool,
    pub desc: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct FlagArg {
    pub long: Option<String>,
    pub short: Option<String>,
    pub default: Option<String>,
    pub desc: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct GrpArg {
    pub schema: Option<SchemaText>,
    /// The record type's name (`ConfigWhole`).
    pub type_name: Option<String>,
    /// Set when the record is passed as one whole-object option.
    pub group_opt: Option<GroupOpt>,
    pub entries: Vec<GroupEntry>,
    pub desc: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct GroupOpt {
    pub short: Option<String>,
    pub long: Option<String>,
}

#[derive(Clone, Debug)]
pub struct GroupEntry {
    /// The record field this entry fills.
    pub key: String,
    pub arg: Arg,
}

impl Arg {
    /// The schema the argument's value is encoded with (flags are `b`).
    pub fn schema_text(&self) -> Option<&SchemaText> {
        match self {
            Arg::Pos(a) => a.schema.as_ref(),
            Arg::Opt(a) => a.schema.as_ref(),
            Arg::Flag(_) => None,
            Arg::Grp(a) => a.schema.as_ref(),
        }
    }
}

impl Manifest {
    /// Parses manifest text. `warnings` receives non-fatal notes (version).
    pub fn from_json(text: &str, warnings: &mut Vec<String>) -> Result<Manifest, ManifestError> {
        let root: Value = serde_json::from_str(text)
            .map_err(|e| ManifestError::new("", format!("not valid JSON: {e}")))?;
        let obj = Obj::new(&root, "")?;
        let build_obj = obj.required_obj("build")?;
        let build = Build {
            path: build_obj.required_str("path")?,
            time: build_obj.required_i64("time")?,
            morloc_version: build_obj.required_str("morloc_version")?,
        };
        if !version_compatible(&build.morloc_version) {
            warnings.push(format!(
                "manifest built with morloc {}, this server implements {}; serving it anyway",
                build.morloc_version, REFERENCE_VERSION
            ));
        }
        let mut pools = Vec::new();
        for (i, p) in obj.array("pools")?.iter().enumerate() {
            pools.push(parse_pool(&Obj::new(p, &format!("pools[{i}]"))?)?);
        }
        let mut commands = Vec::new();
        for (i, c) in obj.array("commands")?.iter().enumerate() {
            commands.push(parse_command(
                &Obj::new(c, &format!("commands[{i}]"))?,
                pools.len(),
            )?);
        }
        Ok(Manifest {
            name: obj.required_str("name")?,
            build,
            pools,
            commands,
            desc: obj.strings("desc")?,
            unsafe_skip_null_check: obj.bool_or("unsafe_skip_null_check", false)?,
            no_shm: obj.bool_or("no_shm", false)?,
            inline_size: obj.opt_i64("inline_size")?,
            tmpdir: obj.opt_str("tmpdir")?,
        })
    }

    pub fn command(&self, name: &str) -> Option<&Command> {
        // The compiler never emits duplicates; if it did, the later one wins,
        // as in the reference.
        self.commands.iter().rev().find(|c| c.name == name)
    }
}

/// True for the versions whose wire format this server implements (0.98.x).
pub fn version_compatible(version: &str) -> bool {
    version
        .strip_prefix("0.98.")
        .is_some_and(|patch| !patch.is_empty() && patch.bytes().all(|b| b.is_ascii_digit()))
}

/// A manifest that could not be loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestError {
    /// Path of the offending field (`commands[2].args[0].kind`), empty for the whole file.
    pub field: String,
    pub message: String,
}

impl ManifestError {
    fn new(field: &str, message: String) -> ManifestError {
        ManifestError {
            field: field.to_string(),
            message,
        }
    }
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "field '{}': {}", self.field, self.message)
        }
    }
}

impl std::error::Error for ManifestError {}

/// A manifest file that could not be read or parsed, with its path.
#[derive(Debug)]
pub struct LoadError {
    pub path: PathBuf,
    pub kind: LoadErrorKind,
}

#[derive(Debug)]
pub enum LoadErrorKind {
    Read(std::io::Error),
    Parse(ManifestError),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            LoadErrorKind::Read(e) => {
                write!(f, "cannot read manifest '{}': {e}", self.path.display())
            }
            LoadErrorKind::Parse(e) => write!(f, "invalid manifest '{}': {e}", self.path.display()),
        }
    }
}

impl std::error::Error for LoadError {}

/// A manifest loaded from disk, with where it lives.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub manifest: Manifest,
    /// Canonical absolute path of the manifest file (symlinks followed).
    pub path: PathBuf,
    /// Its directory: pool executables are relative to it.
    pub dir: PathBuf,
    /// The tools file applied to the program's tools: the one given on the
    /// command line, else the one beside the manifest, if it exists.
    pub tools_file: PathBuf,
    /// `tools_file` was given on the command line, so it must exist.
    pub tools_file_given: bool,
}

fn parse_pool(o: &Obj<'_>) -> Result<Pool, ManifestError> {
    let exec = o.required_strings("exec")?;
    if exec.is_empty() {
        return Err(o.error("exec", "must list at least the pool program".into()));
    }
    Ok(Pool {
        lang: o.required_str("lang")?,
        exec,
        socket: o.required_str("socket")?,
        allow_string_null: o.bool_or("allow_string_null", true)?,
        pool_hash: o.str_or("pool_hash", "")?,
    })
}

fn parse_command(o: &Obj<'_>, n_pools: usize) -> Result<Command, ManifestError> {
    let kind = match o.required_str("type")?.as_str() {
        "remote" => CommandKind::Remote,
        "pure" => CommandKind::Pure,
        other => {
            return Err(o.error(
                "type",
                format!("unknown command type '{other}' (expected remote or pure)"),
            ))
        }
    };
    let pool = o.u64_or("pool", 0)? as usize;
    let needed_pools: Vec<usize> = o
        .u64s("needed_pools")?
        .into_iter()
        .map(|n| n as usize)
        .collect();
    if kind == CommandKind::Remote {
        if pool >= n_pools {
            return Err(o.error(
                "pool",
                format!("pool index {pool} out of range ({n_pools} pools)"),
            ));
        }
        if let Some(bad) = needed_pools.iter().find(|&&p| p >= n_pools) {
            return Err(o.error(
                "needed_pools",
                format!("pool index {bad} out of range ({n_pools} pools)"),
            ));
        }
    }
    let mut args = Vec::new();
    for (i, a) in o.array("args")?.iter().enumerate() {
        args.push(parse_arg(&Obj::new(a, &o.sub(&format!("args[{i}]")))?)?);
    }
    let ret = match o.get("return") {
        None => Return {
            schema: SchemaText::new(""),
            mime: None,
        },
        Some(v) => {
            let r = Obj::new(v, &o.sub("return"))?;
            Return {
                schema: SchemaText::new(&r.str_or("schema", "")?),
                mime: r.opt_str("mime")?,
            }
        }
    };
    let mut terminals = Vec::new();
    for (i, t) in o.array("terminals")?.iter().enumerate() {
        let t = Obj::new(t, &o.sub(&format!("terminals[{i}]")))?;
        if let Some(short) = t.opt_str("short")? {
            if short.chars().count() != 1 {
                return Err(t.error(
                    "short",
                    format!("expected a single character, got '{short}'"),
                ));
            }
        }
        terminals.push(Terminal {
            long: t.required_str("long")?,
            entry: t.required_str("entry")?,
        });
    }
    let expr = match o.get("expr") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.clone()),
    };
    Ok(Command {
        name: o.required_str("name")?,
        kind,
        mid: u32::try_from(o.u64_or("mid", 0)?)
            .map_err(|_| o.error("mid", "does not fit in 32 bits".into()))?,
        pool,
        needed_pools,
        desc: o.strings("desc")?,
        args,
        ret,
        expr,
        internal: o.bool_or("internal", false)?,
        terminals,
    })
}

fn parse_schema_field(o: &Obj<'_>) -> Result<Option<SchemaText>, ManifestError> {
    Ok(o.opt_str("schema")?.map(|s| SchemaText::new(&s)))
}

fn check_enum(o: &Obj<'_>, key: &str, allowed: &[&str]) -> Result<(), ManifestError> {
    if let Some(v) = o.opt_str(key)? {
        if !allowed.contains(&v.as_str()) {
            return Err(o.error(
                key,
                format!(
                    "unknown value '{v}' (expected one of {})",
                    allowed.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

fn parse_arg(o: &Obj<'_>) -> Result<Arg, ManifestError> {
    let kind = o.required_str("kind")?;
    // Fields that do not shape the MCP surface must still have their types.
    for key in ["source", "list_source"] {
        check_enum(o, key, &["auto", "inline", "file"])?;
    }
    for key in ["form", "list_form"] {
        check_enum(o, key, &["auto", "packet", "bytes", "bytes-only", "list"])?;
    }
    match kind.as_str() {
        "pos" => Ok(Arg::Pos(PosArg {
            schema: parse_schema_field(o)?,
            name: o.opt_str("name")?,
            metavar: o.opt_str("metavar")?,
            many: o.bool_or("many", false)?,
            stdin: o.bool_or("stdin", false)?,
            desc: o.strings("desc")?,
        })),
        "opt" => Ok(Arg::Opt(OptArg {
            schema: parse_schema_field(o)?,
            long: o.opt_str("long")?,
            short: o.opt_str("short")?,
            default: o.opt_str("default")?,
            many: o.bool_or("many", false)?,
            desc: o.strings("desc")?,
        })),
        "flag" => Ok(Arg::Flag(FlagArg {
            long: o.opt_str("long")?,
            short: o.opt_str("short")?,
            default: o.opt_str("default")?,
            desc: o.strings("desc")?,
        })),
        "grp" => {
            let group_opt = match o.get("group_opt") {
                None | Some(Value::Null) => None,
                Some(v) => {
                    let g = Obj::new(v, &o.sub("group_opt"))?;
                    Some(GroupOpt {
                        short: g.opt_str("short")?,
                        long: g.opt_str("long")?,
                    })
                }
            };
            let mut entries = Vec::new();
            for (i, e) in o.array("entries")?.iter().enumerate() {
                let e = Obj::new(e, &o.sub(&format!("entries[{i}]")))?;
                let key = e.required_str("key")?;
                let Some(arg) = e.get("arg") else {
                    return Err(e.error("arg", "missing field".into()));
                };
                let arg = parse_arg(&Obj::new(arg, &e.sub("arg"))?)?;
                entries.push(GroupEntry { key, arg });
            }
            Ok(Arg::Grp(GrpArg {
                schema: parse_schema_field(o)?,
                type_name: o.opt_str("type")?,
                group_opt,
                entries,
                desc: o.strings("desc")?,
            }))
        }
        other => Err(o.error(
            "kind",
            format!("unknown argument kind '{other}' (expected pos, opt, flag or grp)"),
        )),
    }
}

/// A JSON object being read, with its path for error messages.
struct Obj<'a> {
    map: &'a Map<String, Value>,
    path: String,
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl<'a> Obj<'a> {
    fn new(v: &'a Value, path: &str) -> Result<Obj<'a>, ManifestError> {
        match v {
            Value::Object(map) => Ok(Obj {
                map,
                path: path.to_string(),
            }),
            other => Err(ManifestError::new(
                path,
                format!("expected an object, got {}", type_name(other)),
            )),
        }
    }

    fn sub(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    fn error(&self, key: &str, message: String) -> ManifestError {
        ManifestError::new(&self.sub(key), message)
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    fn wrong(&self, key: &str, expected: &str, got: &Value) -> ManifestError {
        self.error(key, format!("expected {expected}, got {}", type_name(got)))
    }

    fn required_obj(&self, key: &str) -> Result<Obj<'a>, ManifestError> {
        match self.get(key) {
            None => Err(self.error(key, "missing field".into())),
            Some(v) => Obj::new(v, &self.sub(key)),
        }
    }

    fn required_str(&self, key: &str) -> Result<String, ManifestError> {
        match self.get(key) {
            None => Err(self.error(key, "missing field".into())),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(self.wrong(key, "a string", other)),
        }
    }

    fn str_or(&self, key: &str, default: &str) -> Result<String, ManifestError> {
        match self.get(key) {
            None => Ok(default.to_string()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(self.wrong(key, "a string", other)),
        }
    }

    fn opt_str(&self, key: &str) -> Result<Option<String>, ManifestError> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.wrong(key, "a string or null", other)),
        }
    }

    fn bool_or(&self, key: &str, default: bool) -> Result<bool, ManifestError> {
        match self.get(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(self.wrong(key, "a boolean", other)),
        }
    }

    fn required_i64(&self, key: &str) -> Result<i64, ManifestError> {
        match self.get(key) {
            None => Err(self.error(key, "missing field".into())),
            Some(Value::Number(n)) => n
                .as_i64()
                .ok_or_else(|| self.error(key, format!("expected an integer, got {n}"))),
            Some(other) => Err(self.wrong(key, "an integer", other)),
        }
    }

    fn opt_i64(&self, key: &str) -> Result<Option<i64>, ManifestError> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => n
                .as_i64()
                .map(Some)
                .ok_or_else(|| self.error(key, format!("expected an integer, got {n}"))),
            Some(other) => Err(self.wrong(key, "an integer or null", other)),
        }
    }

    fn u64_or(&self, key: &str, default: u64) -> Result<u64, ManifestError> {
        match self.get(key) {
            None => Ok(default),
            Some(Value::Number(n)) => n.as_u64().ok_or_else(|| {
                self.error(key, format!("expected a non-negative integer, got {n}"))
            }),
            Some(other) => Err(self.wrong(key, "a non-negative integer", other)),
        }
    }

    fn array(&self, key: &str) -> Result<&'a [Value], ManifestError> {
        match self.get(key) {
            None => Ok(&[]),
            Some(Value::Array(a)) => Ok(a),
            Some(other) => Err(self.wrong(key, "an array", other)),
        }
    }

    fn strings(&self, key: &str) -> Result<Vec<String>, ManifestError> {
        let mut out = Vec::new();
        for (i, v) in self.array(key)?.iter().enumerate() {
            match v {
                Value::String(s) => out.push(s.clone()),
                other => {
                    return Err(self.error(
                        &format!("{key}[{i}]"),
                        format!("expected a string, got {}", type_name(other)),
                    ))
                }
            }
        }
        Ok(out)
    }

    fn required_strings(&self, key: &str) -> Result<Vec<String>, ManifestError> {
        if self.get(key).is_none() {
            return Err(self.error(key, "missing field".into()));
        }
        self.strings(key)
    }

    fn u64s(&self, key: &str) -> Result<Vec<u64>, ManifestError> {
        let mut out = Vec::new();
        for (i, v) in self.array(key)?.iter().enumerate() {
            match v.as_u64() {
                Some(n) => out.push(n),
                None => {
                    return Err(self.error(
                        &format!("{key}[{i}]"),
                        format!(
                            "expected a non-negative integer, got {}",
                            crate::format::json::text(v)
                        ),
                    ))
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPES: &str = include_str!("../../tests/data/shapes/manifest.json");

    #[track_caller]
    fn check_err(text: &str, expected: &str) {
        let mut warnings = Vec::new();
        match Manifest::from_json(text, &mut warnings) {
            Ok(_) => panic!("accepted: {text}"),
            Err(e) => assert_eq!(e.to_string(), expected),
        }
    }

    fn minimal(commands: &str) -> String {
        format!(
            r#"{{"name":"m","build":{{"path":".","time":1,"morloc_version":"0.98.2"}},"pools":[{{"lang":"py","exec":["python3","p.py"],"socket":"pipe-py"}}],"commands":{commands}}}"#
        )
    }

    #[test]
    fn loads_the_shapes_fixture() {
        let mut warnings = Vec::new();
        let m = Manifest::from_json(SHAPES, &mut warnings).unwrap();
        assert!(warnings.is_empty());
        assert_eq!(m.name, "main");
        assert_eq!(m.pools[0].exec, vec!["python3", "pools/py/pool.py"]);
        assert_eq!(m.commands.len(), 19);
        let add = m.command("addOne").unwrap();
        assert_eq!((add.kind, add.mid), (CommandKind::Remote, 1));
        assert!(m.command("pureAnswer").unwrap().expr.is_some());
        let Arg::Grp(g) = &m.command("configWhole").unwrap().args[0] else {
            panic!()
        };
        assert_eq!(
            g.group_opt.as_ref().unwrap().long.as_deref(),
            Some("config")
        );
        assert_eq!(g.entries.len(), 3);
    }

    #[test]
    fn bad_manifests_name_the_problem() {
        check_err("nope", "not valid JSON: expected ident at line 1 column 2");
        check_err("[]", "expected an object, got an array");
        check_err(
            r#"{"build":{"path":".","time":1,"morloc_version":"0.98.2"}}"#,
            "field 'name': missing field",
        );
        check_err(r#"{"name":"m"}"#, "field 'build': missing field");
        check_err(
            r#"{"name":5,"build":{"path":".","time":1,"morloc_version":"0.98.2"}}"#,
            "field 'name': expected a string, got a number",
        );
        check_err(
            r#"{"name":"m","build":{"path":".","time":"x","morloc_version":"0.98.2"}}"#,
            "field 'build.time': expected an integer, got a string",
        );
        check_err(
            &minimal(r#"[{"name":"f","type":"magic"}]"#),
            "field 'commands[0].type': unknown command type 'magic' (expected remote or pure)",
        );
        check_err(
            &minimal(r#"[{"name":"f","type":"pure","desc":null}]"#),
            "field 'commands[0].desc': expected an array, got null",
        );
        check_err(&minimal(r#"[{"name":"f","type":"pure","args":[{"kind":"weird"}]}]"#), "field 'commands[0].args[0].kind': unknown argument kind 'weird' (expected pos, opt, flag or grp)");
        check_err(&minimal(r#"[{"name":"f","type":"pure","args":[{"kind":"pos","source":"web"}]}]"#), "field 'commands[0].args[0].source': unknown value 'web' (expected one of auto, inline, file)");
        check_err(
            &minimal(r#"[{"name":"f","type":"remote","pool":3}]"#),
            "field 'commands[0].pool': pool index 3 out of range (1 pools)",
        );
        check_err(
            &minimal(
                r#"[{"name":"f","type":"pure","terminals":[{"short":"ab","long":"x","entry":"y"}]}]"#,
            ),
            "field 'commands[0].terminals[0].short': expected a single character, got 'ab'",
        );
    }

    #[test]
    fn unknown_keys_are_ignored_and_schemas_kept_with_errors() {
        let text = minimal(
            r#"[{"name":"f","type":"pure","extra":1,"args":[{"kind":"pos","schema":"*","x":[]}],"return":{"schema":"j"}}]"#,
        );
        let m = Manifest::from_json(&text, &mut Vec::new()).unwrap();
        let Arg::Pos(p) = &m.commands[0].args[0] else {
            panic!()
        };
        assert!(p.schema.as_ref().unwrap().parsed.is_err());
    }

    #[test]
    fn other_versions_warn_but_load() {
        let text = minimal("[]").replace("0.98.2", "0.99.0");
        let mut warnings = Vec::new();
        Manifest::from_json(&text, &mut warnings).unwrap();
        assert_eq!(warnings.len(), 1);
        assert!(version_compatible("0.98.7"));
        assert!(!version_compatible("0.98."));
        assert!(!version_compatible("0.9"));
    }
}
