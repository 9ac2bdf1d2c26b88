//! The command line, in two stages.
//!
//! [`parse_args`] turns argv into [`RawArgs`]: only what was typed, checked
//! for syntax and value ranges, with no I/O (lexopt does the tokenizing).
//! [`prepare`] then does the work that touches the outside world: it reads the
//! environment, finds each program's manifest (a `manifest.json`, a build
//! directory holding one, or a Morloc launcher script), loads it, and returns
//! an [`Action`]: something to print, or a validated [`ServeConfig`].
//!
//! Invoked under the name `morloc-nexus`, the binary also understands the
//! reference runtime's spellings of the MCP modes (`morloc-nexus mcp TARGET`,
//! `morloc-nexus run TARGET --mcp-tools`, `... --mcp-config`), so existing
//! client configurations and launcher scripts keep working.
//!
//! Errors are one line each; [`CliError::exit_code`] gives 2 for usage errors
//! and 1 for start-up failures.
//!
//! The help texts live in `help`, the option value parsers in `values`.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};

use lexopt::Arg::{Long, Short, Value as Word};
use serde_json::Value;

use crate::edge::manifest_file;
use crate::format::manifest::{self, Loaded};
use crate::protocol::tools;

mod config;
mod help;
mod locate;
mod nexus;
pub mod oauth;
pub mod settings;
pub use locate::{launcher_manifest, locate_manifest};
pub use settings::Settings;
pub mod obs;
mod values;
pub use config::{config_json, AGENT_RESULT_CHARS};
use help::*;
use values::string_value;

/// The environment variable holding the HTTP bearer token when
/// `--auth-token` is not given.
pub const TOKEN_ENV: &str = "MORLOC_MCP_TOKEN";

/// Bind address used when `--http-host` is not given.
pub const DEFAULT_HTTP_HOST: &str = "127.0.0.1";

/// What was typed, checked but not yet acted on.
// Made once per process: the size of the serving variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RawArgs {
    /// Print this text on stdout and exit 0.
    Help(String),
    Version,
    Serve(RawServe),
    Tools {
        target: PathBuf,
        /// `--tools-file`: the tools file to apply instead of the one beside
        /// the manifest.
        tools_file: Option<PathBuf>,
    },
    /// `tools --template`: print a starting tools file.
    ToolsTemplate {
        target: PathBuf,
    },
    Config {
        target: PathBuf,
        /// The serving options the entry passes on, `(name, value)` in
        /// command-line order (the value empty for a switch; a relative
        /// path already made absolute). `morloc-mcp config` adds
        /// `--max-result-chars` for agents unless given; `--mcp-config`
        /// writes none, as the reference.
        options: Vec<(String, String)>,
    },
}

/// The typed options of `mcp` and `router`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawServe {
    pub router: bool,
    /// One for `mcp`, at least one for `router`.
    pub targets: Vec<PathBuf>,
    /// Every option, typed or default (see `settings`).
    pub settings: Settings,
}

/// The outside world [`prepare`] consults, passed in so tests can fake it.
#[derive(Clone, Debug, Default)]
pub struct Env {
    /// The value of [`TOKEN_ENV`], if set.
    pub auth_token: Option<OsString>,
    /// This executable's absolute path (for `config`).
    pub current_exe: Option<PathBuf>,
}

impl Env {
    pub fn from_process() -> Env {
        Env {
            auth_token: std::env::var_os(TOKEN_ENV),
            current_exe: std::env::current_exe().ok(),
        }
    }
}

/// What to do after the command line has been prepared.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Action {
    /// Write `stderr` lines (each without its newline), then `stdout`
    /// verbatim, and exit 0.
    Print {
        stdout: String,
        stderr: Vec<String>,
    },
    Serve(ServeConfig),
}

/// A validated serving configuration with every manifest loaded.
#[derive(Debug)]
pub struct ServeConfig {
    /// `router` (several programs, namespaced tool names, HTTP only) or `mcp`.
    pub router: bool,
    /// The programs in command-line order; exactly one unless `router`.
    pub programs: Vec<Program>,
    /// HTTP transport; `None` means stdio (never `None` for the router).
    pub http: Option<HttpConfig>,
    /// Every option as given (the owners read their fields from here).
    pub settings: Settings,
    /// Logs and the `/metrics` token, resolved for the transport.
    pub obs: obs::ObsConfig,
}

/// What HTTP needs beyond [`Settings`]: the values resolved from the
/// environment and checked together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpConfig {
    pub port: u16,
    /// The bearer token (from `--auth-token`, else a non-empty
    /// `MORLOC_MCP_TOKEN`); never empty.
    pub auth_token: Option<String>,
    pub oauth: Option<oauth::OAuthConfig>,
}

/// One program to serve.
#[derive(Clone, Debug)]
pub struct Program {
    /// The target as typed (manifest, build directory or launcher).
    pub target: PathBuf,
    /// The loaded manifest with its canonical path and directory.
    pub loaded: Loaded,
}

/// A command line that cannot be acted on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CliError {
    /// Bad syntax or values: exit status 2.
    Usage(String),
    /// The program cannot be loaded: exit status 1.
    Start(String),
}

impl CliError {
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => 2,
            CliError::Start(_) => 1,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(message) | CliError::Start(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for CliError {}

/// Stage one: argv (without `argv[0]`) to [`RawArgs`]. `argv0` picks the
/// `morloc-nexus` compatibility spellings when its file name is
/// `morloc-nexus`. No I/O.
pub fn parse_args(
    argv0: Option<&OsStr>,
    args: impl IntoIterator<Item = OsString>,
) -> Result<RawArgs, CliError> {
    let is_nexus = argv0
        .and_then(|a| Path::new(a).file_name())
        .is_some_and(|name| name == "morloc-nexus");
    let args: Vec<OsString> = args.into_iter().collect();
    if is_nexus {
        return nexus::parse_nexus(args);
    }
    let mut parser = lexopt::Parser::from_args(args);
    let subcommand = match parser.next().map_err(|e| usage(e, None))? {
        Some(Short('h') | Long("help")) => return Ok(RawArgs::Help(TOP_HELP.into())),
        Some(Short('V') | Long("version")) => return Ok(RawArgs::Version),
        Some(Word(word)) => word,
        Some(Long(name)) => return Err(invalid_option(name, None, ["help", "version"])),
        Some(other) => return Err(usage(other.unexpected(), None)),
        None => {
            return Err(CliError::Usage(
                "missing command (mcp, router, tools or config); see 'morloc-mcp --help'".into(),
            ))
        }
    };
    match subcommand.to_str() {
        Some("mcp") => parse_serve(parser, false, "mcp"),
        Some("router") => parse_serve(parser, true, "router"),
        Some("tools") => parse_tools(parser),
        Some("config") => parse_config(parser),
        Some("help") => help_of(parser),
        _ => {
            let typed = subcommand.to_string_lossy();
            let hint = match crate::protocol::suggest::closest(&typed, COMMANDS) {
                Some(near) => format!("did you mean '{near}'?"),
                None => "expected mcp, router, tools or config".to_string(),
            };
            Err(CliError::Usage(format!(
                "unknown command '{typed}' ({hint}); see 'morloc-mcp --help'"
            )))
        }
    }
}

/// Stage two: reads the environment and the manifests.
pub fn prepare(raw: RawArgs, env: &Env, warnings: &mut Vec<String>) -> Result<Action, CliError> {
    match raw {
        RawArgs::Help(text) => Ok(Action::Print {
            stdout: text,
            stderr: Vec::new(),
        }),
        RawArgs::Version => Ok(Action::Print {
            stdout: format!(
                "morloc-mcp {} (Morloc manifests {})\n",
                env!("CARGO_PKG_VERSION"),
                manifest::REFERENCE_VERSION
            ),
            stderr: Vec::new(),
        }),
        RawArgs::Tools { target, tools_file } => {
            let mut program = load_program(&target, warnings)?;
            if let Some(path) = &tools_file {
                manifest_file::give_tools_file(&mut program.loaded, path);
            }
            let surface = manifest_file::surface(&program.loaded).map_err(CliError::Start)?;
            Ok(Action::Print {
                stdout: pretty(&surface.list_result())?,
                stderr: surface.notes,
            })
        }
        RawArgs::ToolsTemplate { target } => {
            let program = load_program(&target, warnings)?;
            let manifest = &program.loaded.manifest;
            let surface = tools::build(manifest);
            Ok(Action::Print {
                stdout: pretty(&tools::curate::template(&surface, manifest))?,
                stderr: surface.notes,
            })
        }
        RawArgs::Config { target, options } => {
            let program = load_program(&target, warnings)?;
            let exe = env
                .current_exe
                .clone()
                .unwrap_or_else(|| PathBuf::from("morloc-mcp"));
            Ok(Action::Print {
                stdout: pretty(&config_json(&program.loaded, &exe, &options))?,
                stderr: Vec::new(),
            })
        }
        RawArgs::Serve(serve) => {
            let settings = serve.settings;
            let mut programs = Vec::with_capacity(serve.targets.len());
            for target in &serve.targets {
                let mut program = load_program(target, warnings)?;
                if let Some(path) = &settings.tools_file {
                    manifest_file::give_tools_file(&mut program.loaded, path);
                }
                programs.push(program);
            }
            let env_token = env
                .auth_token
                .as_ref()
                .and_then(|t| t.to_str())
                .filter(|t| !t.is_empty())
                .map(str::to_string);
            let oauth = oauth::config(&settings, settings.http_port.is_some())?;
            let http = settings.http_port.map(|port| HttpConfig {
                port,
                auth_token: settings.auth_token.clone().or(env_token),
                oauth,
            });
            let env_metrics = std::env::var(obs::METRICS_TOKEN_ENV).ok();
            let obs = obs::resolve(&settings, http.is_some(), env_metrics.as_deref())?;
            Ok(Action::Serve(ServeConfig {
                router: serve.router,
                programs,
                http,
                settings,
                obs,
            }))
        }
    }
}

fn load_program(target: &Path, warnings: &mut Vec<String>) -> Result<Program, CliError> {
    let path = locate_manifest(target)?;
    match manifest_file::load(&path, warnings) {
        Ok(loaded) => Ok(Program {
            target: target.to_path_buf(),
            loaded,
        }),
        Err(e) => Err(CliError::Start(e.to_string())),
    }
}

fn pretty(value: &Value) -> Result<String, CliError> {
    match serde_json::to_string_pretty(value) {
        Ok(text) => Ok(text + "\n"),
        Err(e) => Err(CliError::Start(format!("cannot render JSON: {e}"))),
    }
}

/// A lexopt error as a usage error, pointing at the relevant help.
fn usage(error: lexopt::Error, command: Option<&str>) -> CliError {
    let help = match command {
        Some(command) => format!("morloc-mcp {command} --help"),
        None => "morloc-mcp --help".to_string(),
    };
    let context = command.map(|c| format!(" for '{c}'")).unwrap_or_default();
    CliError::Usage(format!("{error}{context}; see '{help}'"))
}

/// `help [command]`: the help of the command named, as `<command> --help`.
fn help_of(mut parser: lexopt::Parser) -> Result<RawArgs, CliError> {
    let text = match parser.next().map_err(|e| usage(e, None))? {
        None => TOP_HELP.to_string(),
        Some(Word(word)) => match word.to_str() {
            Some("mcp") => mcp_help(),
            Some("router") => router_help(),
            Some("tools") => TOOLS_HELP.to_string(),
            Some("config") => config_help(),
            _ => {
                let typed = word.to_string_lossy();
                let hint = match crate::protocol::suggest::closest(&typed, COMMANDS) {
                    Some(near) => format!("did you mean '{near}'?"),
                    None => "expected mcp, router, tools or config".to_string(),
                };
                return Err(CliError::Usage(format!(
                    "no help for '{typed}' ({hint}); see 'morloc-mcp --help'"
                )));
            }
        },
        Some(other) => return Err(usage(other.unexpected(), None)),
    };
    Ok(RawArgs::Help(text))
}

/// The commands, for "did you mean".
const COMMANDS: [&str; 4] = ["mcp", "router", "tools", "config"];

/// An option `command` (or the top level) does not take, with the known
/// option nearest to it, if one is near.
fn invalid_option<'a>(
    name: &str,
    command: Option<&str>,
    known: impl IntoIterator<Item = &'a str>,
) -> CliError {
    let hint = match crate::protocol::suggest::closest(name, known) {
        Some(near) => format!(" (did you mean '--{near}'?)"),
        None => String::new(),
    };
    let (context, help) = match command {
        Some(command) => (
            format!(" for '{command}'"),
            format!("morloc-mcp {command} --help"),
        ),
        None => (String::new(), "morloc-mcp --help".to_string()),
    };
    CliError::Usage(format!(
        "invalid option '--{name}'{context}{hint}; see '{help}'"
    ))
}

/// Takes serving option `--name` (and its value) into `settings`, or says
/// which option was meant. Returns the flag and its value as typed.
fn setting(
    parser: &mut lexopt::Parser,
    name: &str,
    command: &str,
    settings: &mut Settings,
) -> Result<(&'static settings::Flag, String), CliError> {
    let Some(flag) = settings::flag(name) else {
        let known = settings::FLAGS
            .iter()
            .filter(|f| f.audience == settings::Audience::Everyone)
            .map(|f| f.name)
            .chain(["help"]);
        return Err(invalid_option(name, Some(command), known));
    };
    let text = if flag.takes_value() {
        string_value(parser, &format!("--{name}"), command)?
    } else {
        String::new()
    };
    flag.apply(settings, &text)?;
    Ok((flag, text))
}

fn parse_serve(
    mut parser: lexopt::Parser,
    router: bool,
    command: &'static str,
) -> Result<RawArgs, CliError> {
    let mut raw = RawServe {
        router,
        ..RawServe::default()
    };
    while let Some(arg) = parser.next().map_err(|e| usage(e, Some(command)))? {
        match arg {
            Short('h') | Long("help") => {
                return Ok(RawArgs::Help(if router {
                    router_help()
                } else {
                    mcp_help()
                }));
            }
            Long(name) => {
                let name = name.to_string();
                setting(&mut parser, &name, command, &mut raw.settings)?;
            }
            Word(target) if router || raw.targets.is_empty() => {
                raw.targets.push(PathBuf::from(target))
            }
            other => return Err(usage(other.unexpected(), Some(command))),
        }
    }
    if raw.targets.is_empty() {
        let what = if router {
            "at least one <program>"
        } else {
            "<program>"
        };
        return Err(CliError::Usage(format!(
            "missing {what}; see 'morloc-mcp {command} --help'"
        )));
    }
    if raw.settings.tools_file.is_some() && raw.targets.len() > 1 {
        return Err(CliError::Usage(format!(
            "--tools-file curates one program; with several, put a {} beside each manifest",
            tools::curate::BESIDE_MANIFEST
        )));
    }
    if router && raw.settings.http_port.is_none() {
        return Err(CliError::Usage(
            "'router' serves HTTP only: --http-port is required".into(),
        ));
    }
    Ok(RawArgs::Serve(raw))
}

/// Parses `tools`: one target, `--tools-file`, `--template`, `--help`.
fn parse_tools(mut parser: lexopt::Parser) -> Result<RawArgs, CliError> {
    let mut target = None;
    let mut tools_file = None;
    let mut template = false;
    while let Some(arg) = parser.next().map_err(|e| usage(e, Some("tools")))? {
        match arg {
            Short('h') | Long("help") => return Ok(RawArgs::Help(TOOLS_HELP.into())),
            Long("template") => template = true,
            Long("tools-file") => {
                tools_file = Some(PathBuf::from(string_value(
                    &mut parser,
                    "--tools-file",
                    "tools",
                )?))
            }
            Word(word) if target.is_none() => target = Some(PathBuf::from(word)),
            Long(name) => {
                let known = ["tools-file", "template", "help"];
                return Err(invalid_option(name, Some("tools"), known));
            }
            other => return Err(usage(other.unexpected(), Some("tools"))),
        }
    }
    let Some(target) = target else {
        return Err(CliError::Usage(
            "missing <program>; see 'morloc-mcp tools --help'".into(),
        ));
    };
    match (template, tools_file) {
        (true, Some(_)) => Err(CliError::Usage(
            "--template prints a new tools file; it takes no --tools-file".into(),
        )),
        (true, None) => Ok(RawArgs::ToolsTemplate { target }),
        (false, tools_file) => Ok(RawArgs::Tools { target, tools_file }),
    }
}

/// Parses `config`: one target and the serving options to pass on, checked
/// as `mcp` checks them for stdio (the entry serves over stdio).
fn parse_config(mut parser: lexopt::Parser) -> Result<RawArgs, CliError> {
    let mut target = None;
    let mut settings = Settings::default();
    let mut options = Vec::new();
    while let Some(arg) = parser.next().map_err(|e| usage(e, Some("config")))? {
        match arg {
            Short('h') | Long("help") => return Ok(RawArgs::Help(config_help())),
            Long(name) => {
                let name = name.to_string();
                let (flag, mut text) = setting(&mut parser, &name, "config", &mut settings)?;
                if matches!(flag.value, "<path>" | "<dir>") {
                    text = absolute(&text)?;
                }
                options.push((name, text));
            }
            Word(word) if target.is_none() => target = Some(PathBuf::from(word)),
            other => return Err(usage(other.unexpected(), Some("config"))),
        }
    }
    let Some(target) = target else {
        return Err(CliError::Usage(
            "missing <program>; see 'morloc-mcp config --help'".into(),
        ));
    };
    if settings.http_port.is_some() {
        return Err(CliError::Usage(
            "'config' writes an entry for clients that start the server over stdio: --http-port has no place in it (run 'morloc-mcp mcp <program> --http-port <port>' and give clients its URL)".into(),
        ));
    }
    oauth::config(&settings, false)?;
    obs::resolve(&settings, false, None)?;
    if !options.iter().any(|(name, _)| name == "max-result-chars") {
        options.push(("max-result-chars".into(), AGENT_RESULT_CHARS.to_string()));
    }
    Ok(RawArgs::Config { target, options })
}

/// `path` made absolute against the current directory, so a client that
/// starts the server elsewhere finds the same file.
fn absolute(path: &str) -> Result<String, CliError> {
    std::path::absolute(path)
        .map(|p| p.to_string_lossy().into_owned())
        .map_err(|e| CliError::Start(format!("cannot make '{path}' absolute: {e}")))
}

#[cfg(test)]
mod tests;
