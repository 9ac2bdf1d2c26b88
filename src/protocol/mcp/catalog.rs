//! What one endpoint serves: a [`Program`] is everything computed once at
//! start-up from a manifest (its tool surface, compiled pure expressions); a
//! [`Catalog`] holds the programs served together (one, or several behind the
//! router, their tools renamed `<module>__<command>`), finds a tool by name and
//! swaps in a rebuilt program while calls on the old one finish.
//!
//! Architecture Invariant: pure; no I/O.

use std::collections::HashMap;

use serde_json::{Map, Value as Json};

use crate::format::eval;
use crate::format::manifest::{Command, CommandKind, Loaded};
use crate::protocol::tools::Surface;

use super::{bigresults, call, jobs, modern};

/// Everything derived once from the manifest.
#[derive(Debug)]
pub struct Program {
    pub loaded: Loaded,
    pub surface: Surface,
    /// Compiled expression per command (pure commands only).
    pub exprs: Vec<Option<eval::Expr>>,
    /// Per command: its argument and return schemas compiled, for its calls.
    pub(super) compiled: Vec<call::Compiled>,
}

/// A pure command whose expression tree does not compile.
#[derive(Debug)]
pub struct ProgramError {
    pub command: String,
    pub error: eval::EvalError,
}

impl std::fmt::Display for ProgramError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "pure command '{}' has an invalid expression: {}",
            self.command, self.error
        )
    }
}

impl Program {
    /// Builds the tool surface and compiles pure expressions. The exclusion
    /// notes are returned in `surface.notes` for the caller to print.
    pub fn new(loaded: Loaded, surface: Surface) -> Result<Program, ProgramError> {
        let mut exprs = Vec::with_capacity(loaded.manifest.commands.len());
        for cmd in &loaded.manifest.commands {
            exprs.push(match (&cmd.kind, &cmd.expr) {
                (CommandKind::Pure, Some(expr)) => {
                    Some(eval::compile(expr).map_err(|error| ProgramError {
                        command: cmd.name.clone(),
                        error,
                    })?)
                }
                _ => None,
            });
        }
        let compiled = loaded.manifest.commands.iter().map(call::Compiled::new);
        Ok(Program {
            compiled: compiled.collect(),
            loaded,
            surface,
            exprs,
        })
    }

    pub fn command(&self, index: usize) -> &Command {
        &self.loaded.manifest.commands[index]
    }

    /// What the calls of command `index` need, compiled at load.
    pub fn compiled(&self, index: usize) -> &call::Compiled {
        &self.compiled[index]
    }
}

/// Everything one endpoint serves: one program (stdio, single-program HTTP)
/// or several (the router), with tool names already made unique.
///
/// A program rebuilt on disk is reloaded with [`Catalog::replace`]: the new
/// program is appended and takes the old one's place in `live`, while the old
/// one stays at its index (retired) so calls still running on it can finish.
#[derive(Debug)]
pub struct Catalog {
    /// Every program ever served, retired ones included; a program's index
    /// never changes.
    pub programs: Vec<Program>,
    /// The programs served now, in their original order (indices into
    /// `programs`).
    live: Vec<usize>,
    /// Tools are named `<module>__<command>`.
    namespaced: bool,
    /// `serverInfo.name`.
    pub server_name: String,
    /// `serverInfo.version`.
    pub server_version: String,
    /// Tool name → program index.
    tool_index: HashMap<String, usize>,
    /// The legacy `tools/list` result (the reference's bytes), computed once
    /// per surface.
    list: Json,
    /// The modern `tools/list` result (JSON Schema 2020-12 dialect named,
    /// caching hints, `resultType`, server identity), computed once per
    /// surface.
    modern_list: Json,
    /// The tool list can change (the program is reloaded when rebuilt):
    /// declared as `tools.listChanged` in both eras.
    pub list_changes: bool,
    /// `--job-tools`: the job tools are listed and answered, and output
    /// schemas also accept a job handle (`jobs`).
    job_tools: bool,
    /// `--max-result-chars`: longer results are stored and linked
    /// (`bigresults`); `None` returns every value whole.
    pub result_limit: Option<usize>,
}

/// Two programs that would publish the same tool name.
#[derive(Debug)]
pub struct CatalogError(pub String);

impl std::fmt::Display for CatalogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Catalog {
    /// One program under its plain tool names (stdio).
    pub fn single(program: Program) -> Catalog {
        let server_name = program.loaded.manifest.name.clone();
        let server_version = program.loaded.manifest.build.morloc_version.clone();
        Catalog::build(vec![program], false, server_name, server_version)
            .expect("one program has no cross-program collisions")
    }

    /// Several programs; with `namespaced`, every tool is renamed
    /// `<module>__<command>`. A duplicate module or tool name is an error.
    pub fn multi(
        mut programs: Vec<Program>,
        namespaced: bool,
        router: bool,
    ) -> Result<Catalog, CatalogError> {
        if namespaced {
            for p in &mut programs {
                namespace(p);
            }
        }
        let (server_name, server_version) = match (router, programs.first()) {
            (false, Some(p)) => (
                p.loaded.manifest.name.clone(),
                p.loaded.manifest.build.morloc_version.clone(),
            ),
            (true, Some(p)) => (
                "morloc".to_string(),
                p.loaded.manifest.build.morloc_version.clone(),
            ),
            (_, None) => ("morloc".to_string(), "unknown".to_string()),
        };
        Catalog::build(programs, namespaced, server_name, server_version)
    }

    fn build(
        programs: Vec<Program>,
        namespaced: bool,
        server_name: String,
        server_version: String,
    ) -> Result<Catalog, CatalogError> {
        let live = (0..programs.len()).collect();
        let mut catalog = Catalog {
            programs,
            live,
            namespaced,
            server_name,
            server_version,
            tool_index: HashMap::new(),
            list: Json::Null,
            modern_list: Json::Null,
            list_changes: false,
            job_tools: false,
            result_limit: None,
        };
        catalog.index()?;
        Ok(catalog)
    }

    /// Recomputes the name index and both `tools/list` results from the
    /// live programs.
    fn index(&mut self) -> Result<(), CatalogError> {
        let mut modules: HashMap<&str, usize> = HashMap::new();
        for &i in self.live.iter().filter(|_| self.namespaced) {
            let p = &self.programs[i];
            if let Some(j) = modules.insert(module_of(p), i) {
                return Err(CatalogError(format!(
                    "two programs have the module name '{}' ({} and {}), so their tools would both be named {}__<command>: give one a module name of its own with {{\"module\": \"<name>\"}} in its tools file ({} beside its manifest), or serve with --plain-tool-names if no two of their commands share a name",
                    module_of(p),
                    self.programs[j].loaded.path.display(),
                    p.loaded.path.display(),
                    module_of(p),
                    crate::protocol::tools::curate::BESIDE_MANIFEST,
                )));
            }
        }
        let mut tool_index = HashMap::new();
        let mut tools = Vec::new();
        for &i in &self.live {
            let p = &self.programs[i];
            for tool in &p.surface.tools {
                if let Some(j) = tool_index.insert(tool.name.clone(), i) {
                    if j != i {
                        let other = &self.programs[j];
                        return Err(CatalogError(format!(
                            "two programs have a tool named '{}' ({} and {}): rename it in one program's tools file ({{\"tools\": {{\"{}\": {{\"name\": \"<new name>\"}}}}}} in {} beside its manifest){}",
                            tool.name,
                            other.loaded.path.display(),
                            p.loaded.path.display(),
                            tool.command_name,
                            crate::protocol::tools::curate::BESIDE_MANIFEST,
                            if self.namespaced { "" } else { ", or serve without --plain-tool-names" },
                        )));
                    }
                }
                if self.job_tools {
                    if let Some(clash) = jobs::clash(&tool.name) {
                        return Err(CatalogError(clash));
                    }
                }
                // A big result's link, then a job handle, are valid where
                // the value would have been.
                let json = bigresults::wrap_tool(tool.json.clone(), self.result_limit);
                tools.push(match self.job_tools {
                    true => jobs::widen_tool(&json),
                    false => json,
                });
            }
        }
        if self.job_tools {
            tools.extend(jobs::tools());
        }
        let modern_tools = self.modern_tools();
        let mut list = Map::new();
        list.insert("tools".into(), Json::Array(tools));
        self.tool_index = tool_index;
        self.list = Json::Object(list);
        self.modern_list = modern::list_result(self, modern_tools);
        Ok(())
    }

    /// Declares that the tool list can change (reloads are on); the cached
    /// modern list follows.
    pub fn set_list_changes(&mut self, on: bool) {
        self.list_changes = on;
        self.modern_list = modern::list_result(self, self.modern_tools());
    }

    fn modern_tools(&self) -> Vec<Json> {
        let limit = self.result_limit;
        if self.job_tools {
            let served: Vec<Json> = (self.live_tools())
                .map(|t| bigresults::wrap_tool(t.modern_json.clone(), limit))
                .collect();
            return jobs::modern_tools(served.iter());
        }
        self.live_tools()
            .map(|t| bigresults::wrap_tool(modern::tool_json(&t.modern_json), limit))
            .collect()
    }

    fn live_tools(&self) -> impl Iterator<Item = &crate::protocol::tools::Tool> {
        let live = self.live.iter();
        live.flat_map(|&i| self.programs[i].surface.tools.iter())
    }

    /// Turns the job tools (`--job-tools`) on or off. A served tool with a
    /// job tool's name is an error, and nothing changes.
    pub fn set_job_tools(&mut self, on: bool) -> Result<(), CatalogError> {
        let before = self.job_tools;
        self.job_tools = on;
        if let Err(e) = self.index() {
            self.job_tools = before;
            self.index().expect("the previous surface was consistent");
            return Err(e);
        }
        Ok(())
    }

    /// Whether the job tools are on.
    pub fn job_tools(&self) -> bool {
        self.job_tools
    }

    /// Turns big results as resources on (`Some(limit)`) or off; both
    /// cached tool lists follow (`outputSchema`s may be links).
    pub fn set_result_limit(&mut self, limit: Option<usize>) {
        self.result_limit = limit;
        self.index().expect("the surface was consistent");
    }

    /// The programs served now (indices into `programs`).
    pub fn live(&self) -> &[usize] {
        &self.live
    }

    /// Serves `program` in place of the live program at position `slot` of
    /// [`Catalog::live`]; returns its index. The replaced program stays in
    /// `programs` (retired). On a collision nothing changes.
    pub fn replace(&mut self, slot: usize, mut program: Program) -> Result<usize, CatalogError> {
        if self.namespaced {
            namespace(&mut program);
        }
        let old = self.live[slot];
        self.programs.push(program);
        let new = self.programs.len() - 1;
        self.live[slot] = new;
        if let Err(e) = self.index() {
            self.live[slot] = old;
            self.programs.pop();
            self.index().expect("the previous surface was consistent");
            return Err(e);
        }
        Ok(new)
    }

    /// Drops what a retired program no longer needs once no call runs on it:
    /// its commands, tools and compiled expressions (its name, pools and
    /// path stay, for the records of its run). A live program is left alone;
    /// returns whether anything was released.
    pub fn release(&mut self, index: usize) -> bool {
        if self.is_live(index) || index >= self.programs.len() {
            return false;
        }
        let program = &mut self.programs[index];
        program.loaded.manifest.commands = Vec::new();
        program.loaded.manifest.desc = Vec::new();
        program.surface.tools = Vec::new();
        program.surface.notes = Vec::new();
        program.exprs = Vec::new();
        program.compiled = Vec::new();
        true
    }

    /// Whether program `index` is still served (not retired by a reload).
    pub fn is_live(&self, index: usize) -> bool {
        self.live.contains(&index)
    }

    /// The legacy `tools/list` result.
    pub fn legacy_list(&self) -> &Json {
        &self.list
    }

    /// The modern `tools/list` result.
    pub fn modern_list(&self) -> &Json {
        &self.modern_list
    }

    /// The command `name` stands for, as a user would write it: a tool's
    /// advertised name, `<module>__<command>`, the command's own name, or a
    /// tools file's name for it without the `<module>__` prefix. Returns
    /// the program's module name and the command's manifest name; an error
    /// names `name` and says what there is, or which programs' commands it
    /// could mean.
    pub fn command_named(&self, name: &str) -> Result<(String, String), String> {
        let mut found: Vec<(String, String)> = Vec::new();
        for &index in &self.live {
            let program = &self.programs[index];
            let module = &program.loaded.manifest.name;
            let commands = &program.loaded.manifest.commands;
            let advertised = program.surface.tools.iter().filter(|t| {
                t.name == name
                    || t.name
                        .strip_prefix(module.as_str())
                        .and_then(|r| r.strip_prefix("__"))
                        == Some(name)
            });
            let by_tool = advertised.map(|t| commands[t.command].name.clone());
            let by_command = commands
                .iter()
                .filter(|c| !c.internal)
                .filter(|c| c.name == name || format!("{module}__{}", c.name) == name)
                .map(|c| c.name.clone());
            for command in by_tool.chain(by_command) {
                let pair = (module.clone(), command);
                if !found.contains(&pair) {
                    found.push(pair);
                }
            }
        }
        match found.len() {
            1 => Ok(found.remove(0)),
            0 => {
                let tools: Vec<&str> = self
                    .live
                    .iter()
                    .flat_map(|&i| self.programs[i].surface.tools.iter())
                    .map(|t| t.name.as_str())
                    .collect();
                Err(format!(
                    "no tool or command is named '{name}' (the tools: {})",
                    tools.join(", ")
                ))
            }
            _ => {
                let each: Vec<String> = found.iter().map(|(m, c)| format!("{m}__{c}")).collect();
                Err(format!(
                    "'{name}' could mean {}: write <module>__<command>",
                    each.join(" or ")
                ))
            }
        }
    }

    pub fn program_of(&self, tool_name: &str) -> Option<usize> {
        self.tool_index.get(tool_name).copied()
    }
}

/// Renames every tool of `program` `<module>__<command>`.
/// The module name a program's tools are prefixed with: its tools file's
/// `module`, else the manifest's name.
fn module_of(program: &Program) -> &str {
    program
        .surface
        .module
        .as_deref()
        .unwrap_or(&program.loaded.manifest.name)
}

fn namespace(program: &mut Program) {
    let module = module_of(program).to_string();
    for tool in &mut program.surface.tools {
        let name = format!("{module}__{}", tool.name);
        tool.rename(name);
    }
}
