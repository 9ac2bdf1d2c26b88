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
use std::time::Duration;

use lexopt::Arg::{Long, Short, Value as Word};
use serde_json::Value;

use crate::edge::manifest_file;
use crate::format::manifest::{self, Loaded};
use crate::protocol::instance::InstanceId;
use crate::protocol::tools;

mod config;
mod help;
mod locate;
mod nexus;
pub mod oauth;
pub use locate::{launcher_manifest, locate_manifest};
pub mod obs;
mod values;
pub use config::{config_json, AGENT_RESULT_CHARS};
use help::*;
use values::{byte_size, count, lang_count, seconds, string_value};

/// The environment variable holding the HTTP bearer token when
/// `--auth-token` is not given.
pub const TOKEN_ENV: &str = "MORLOC_MCP_TOKEN";

/// Bind address used when `--http-host` is not given.
pub const DEFAULT_HTTP_HOST: &str = "127.0.0.1";

/// How long a remote call runs before a tasks-aware client gets a task
/// handle, when `--task-after` is not given.
pub const DEFAULT_TASK_AFTER: Duration = Duration::from_millis(1000);
/// How long a settled task is kept, when `--task-ttl` is not given.
pub const DEFAULT_TASK_TTL: Duration = Duration::from_secs(3600);
/// The per-call deadline used when `--call-timeout` is not given.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(600);

/// How long a call may wait for a pool process, unless `--queue-timeout`.
pub const DEFAULT_QUEUE_TIMEOUT: Duration = Duration::from_secs(300);
/// The most calls one owner may have waiting, unless `--max-queued-per-owner`.
pub const DEFAULT_MAX_QUEUED_PER_OWNER: usize = 256;
/// The most calls waiting in all, unless `--max-queued`.
pub const DEFAULT_MAX_QUEUED: usize = 4096;

/// How long an idle HTTP session lives (the reference's value).
pub const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(3600);

/// What was typed, checked but not yet acted on.
// Made once per process: the size of the serving variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RawArgs {
    /// Print this text on stdout and exit 0.
    Help(&'static str),
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
        /// `--max-result-chars` in the entry written (`morloc-mcp config`
        /// writes one suited to agents; `--mcp-config` none, as the
        /// reference).
        result_limit: Option<usize>,
    },
}

/// The typed options of `mcp` and `router`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawServe {
    pub router: bool,
    /// One for `mcp`, at least one for `router`.
    pub targets: Vec<PathBuf>,
    pub http_port: Option<u16>,
    pub http_host: Option<String>,
    /// `Some("")` never occurs: an empty token is rejected while parsing.
    pub auth_token: Option<String>,
    pub allow_no_auth: bool,
    pub allow_origins: Vec<String>,
    pub call_timeout: Option<Duration>,
    pub task_after: Option<Duration>,
    pub task_ttl: Option<Duration>,
    pub task_dir: Option<PathBuf>,
    pub job_tools: bool,
    pub session_ttl: Option<Duration>,
    /// Hidden, for tests: how long a request may take to arrive.
    pub request_timeout: Option<Duration>,
    /// Hidden, for tests: how long a pool may take to answer its first ping.
    pub pool_start_timeout: Option<Duration>,
    pub plain_tool_names: bool,
    pub lazy_pools: bool,
    pub instance_id: Option<InstanceId>,
    pub drain_timeout: Option<Duration>,
    /// `--pool-replicas LANG=N`, in command-line order (a later one wins).
    pub pool_replicas: Vec<(String, usize)>,
    /// `--pool-min LANG=N`, in command-line order (a later one wins).
    pub pool_min: Vec<(String, usize)>,
    /// Hidden, for tests: how long an idle replica lives.
    pub replica_idle: Option<Duration>,
    /// Hidden, for tests: how long a pool has between SIGTERM and SIGKILL.
    pub pool_stop_grace: Option<Duration>,
    pub max_buffered: Option<usize>,
    pub max_conns_per_peer: Option<usize>,
    pub max_sessions_per_owner: Option<usize>,
    /// Hidden, for tests: the total session cap.
    pub max_sessions: Option<usize>,
    pub queue_timeout: Option<Duration>,
    pub max_queued_per_owner: Option<usize>,
    pub max_queued: Option<usize>,
    /// `--tools-file`: curates the tools of the (one) program served.
    pub tools_file: Option<PathBuf>,
    /// `--max-result-chars` (0: off).
    pub max_result_chars: Option<usize>,
    pub oauth: oauth::OAuthArgs,
    /// `--log-level`, `--log-format`, `--metrics-token`.
    pub obs: obs::RawObs,
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
    /// Deadline of one tool call; `None` means no limit.
    pub call_timeout: Option<Duration>,
    /// How long a remote call of a tasks-aware client runs before it is
    /// answered with a task.
    pub task_after: Duration,
    /// How long a settled task is kept.
    pub task_ttl: Duration,
    /// Where tasks are stored (`None`: in memory only).
    pub task_dir: Option<PathBuf>,
    /// `--job-tools`: long calls of clients without the Tasks extension
    /// become jobs, polled with the job tools.
    pub job_tools: bool,
    /// Start pools on first use instead of before serving.
    pub lazy_pools: bool,
    /// Router: name tools `<command>` instead of `<module>__<command>`.
    pub plain_tool_names: bool,
    /// How long a pool may take to answer its first ping.
    pub pool_start_timeout: Duration,
    /// The prefix of every session and task id; `None`: pick one at random.
    pub instance_id: Option<InstanceId>,
    /// Over HTTP, how long SIGTERM lets running calls finish.
    pub drain_timeout: Duration,
    /// `--pool-replicas`: the most processes per pool language.
    pub pool_replicas: Vec<(String, usize)>,
    /// `--pool-min`: the processes per pool language kept ready.
    pub pool_min: Vec<(String, usize)>,
    /// How long a replica may sit idle before it is stopped.
    pub replica_idle: Duration,
    /// How long a pool's process group has between SIGTERM and SIGKILL.
    pub pool_stop_grace: Duration,
    /// How long a call may wait for a pool process; `None` means no limit.
    pub queue_timeout: Option<Duration>,
    /// The most calls one owner may have waiting (0: no cap).
    pub max_queued_per_owner: usize,
    /// The most calls waiting in all (0: no cap).
    pub max_queued: usize,
    /// Results longer than this many characters are stored and linked
    /// (`None`: every value whole).
    pub max_result_chars: Option<usize>,
    /// Logs and the `/metrics` token.
    pub obs: obs::ObsConfig,
}

/// How long SIGTERM lets calls finish over HTTP, unless `--drain-timeout`.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// How long an idle replica lives, unless changed (hidden flag).
pub const DEFAULT_REPLICA_IDLE: Duration = Duration::from_secs(30);

/// How long a pool's process group has between SIGTERM and SIGKILL when it
/// is stopped, unless changed (hidden flag).
pub const DEFAULT_POOL_STOP_GRACE: Duration = Duration::from_millis(200);

/// How long a pool may take to become ready, unless changed (hidden flag).
pub const DEFAULT_POOL_START_TIMEOUT: Duration = Duration::from_secs(60);

/// HTTP transport options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpConfig {
    pub port: u16,
    /// The bind address text as given (`127.0.0.1`, `::1`, `0.0.0.0`, ...).
    pub host: String,
    /// The bearer token (from `--auth-token`, else a non-empty
    /// `MORLOC_MCP_TOKEN`); never empty.
    pub auth_token: Option<String>,
    pub allow_no_auth: bool,
    /// Extra `Origin` values to accept, verbatim.
    pub allow_origins: Vec<String>,
    /// Idle lifetime of a session.
    pub session_ttl: Duration,
    /// How long one request's head and body may take to arrive.
    pub request_timeout: Duration,
    /// Most bytes buffered across all connections.
    pub max_buffered: usize,
    /// Most connections from one peer address; 0 for no cap; `None` for
    /// the default (`DEFAULT_MAX_CONNS_PER_PEER`).
    pub max_conns_per_peer: Option<usize>,
    /// Most legacy sessions of one owner.
    pub max_sessions_per_owner: usize,
    /// Most legacy sessions in all.
    pub max_sessions: usize,
    /// `--public-url`: the `/mcp` endpoint as clients reach it.
    pub public_url: Option<String>,
    pub oauth: Option<oauth::OAuthConfig>,
}

/// Most HTTP connections from one address, unless `--max-conns-per-peer`:
/// a quarter of the 1024 slots, so one address cannot hold them all, while
/// a load balancer in front (one address, on loopback too) still has room
/// for 256 concurrent requests.
pub const DEFAULT_MAX_CONNS_PER_PEER: usize = 256;

/// How long a request may take to arrive, unless changed (hidden flag).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

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
        Some(Short('h') | Long("help")) => return Ok(RawArgs::Help(TOP_HELP)),
        Some(Short('V') | Long("version")) => return Ok(RawArgs::Version),
        Some(Word(word)) => word,
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
        Some("config") => {
            parse_target_only(parser, "config", CONFIG_HELP).map(|target| match target {
                Ok(target) => RawArgs::Config {
                    target,
                    result_limit: Some(AGENT_RESULT_CHARS),
                },
                Err(help) => RawArgs::Help(help),
            })
        }
        Some("help") => Ok(RawArgs::Help(TOP_HELP)),
        _ => Err(CliError::Usage(format!(
            "unknown command '{}' (expected mcp, router, tools or config); see 'morloc-mcp --help'",
            subcommand.to_string_lossy()
        ))),
    }
}

/// Stage two: reads the environment and the manifests.
pub fn prepare(raw: RawArgs, env: &Env, warnings: &mut Vec<String>) -> Result<Action, CliError> {
    match raw {
        RawArgs::Help(text) => Ok(Action::Print {
            stdout: text.to_string(),
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
        RawArgs::Config {
            target,
            result_limit,
        } => {
            let program = load_program(&target, warnings)?;
            let exe = env
                .current_exe
                .clone()
                .unwrap_or_else(|| PathBuf::from("morloc-mcp"));
            Ok(Action::Print {
                stdout: pretty(&config_json(&program.loaded, &exe, result_limit))?,
                stderr: Vec::new(),
            })
        }
        RawArgs::Serve(serve) => {
            let mut programs = Vec::with_capacity(serve.targets.len());
            for target in &serve.targets {
                let mut program = load_program(target, warnings)?;
                if let Some(path) = &serve.tools_file {
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
            let oauth = oauth::config(&serve.oauth, serve.http_port.is_some())?;
            let http = serve.http_port.map(|port| HttpConfig {
                port,
                host: serve
                    .http_host
                    .clone()
                    .unwrap_or_else(|| DEFAULT_HTTP_HOST.to_string()),
                auth_token: serve.auth_token.clone().or(env_token),
                allow_no_auth: serve.allow_no_auth,
                allow_origins: serve.allow_origins.clone(),
                session_ttl: serve.session_ttl.unwrap_or(DEFAULT_SESSION_TTL),
                request_timeout: serve.request_timeout.unwrap_or(DEFAULT_REQUEST_TIMEOUT),
                max_buffered: serve
                    .max_buffered
                    .unwrap_or(crate::protocol::http::DEFAULT_MAX_BUFFERED),
                max_conns_per_peer: serve.max_conns_per_peer,
                max_sessions_per_owner: serve
                    .max_sessions_per_owner
                    .unwrap_or(crate::protocol::http::DEFAULT_MAX_SESSIONS_PER_OWNER),
                max_sessions: serve
                    .max_sessions
                    .unwrap_or(crate::protocol::http::DEFAULT_MAX_SESSIONS),
                public_url: serve.oauth.public_url.clone(),
                oauth,
            });
            let call_timeout = match serve.call_timeout {
                None => Some(DEFAULT_CALL_TIMEOUT),
                Some(limit) if limit.is_zero() => None,
                Some(limit) => Some(limit),
            };
            let env_metrics = std::env::var(obs::METRICS_TOKEN_ENV).ok();
            let obs = obs::resolve(&serve.obs, http.is_some(), env_metrics.as_deref())?;
            Ok(Action::Serve(ServeConfig {
                obs,
                router: serve.router,
                programs,
                http,
                call_timeout,
                task_after: serve.task_after.unwrap_or(DEFAULT_TASK_AFTER),
                task_ttl: serve.task_ttl.unwrap_or(DEFAULT_TASK_TTL),
                task_dir: serve.task_dir.clone(),
                job_tools: serve.job_tools,
                lazy_pools: serve.lazy_pools,
                plain_tool_names: serve.plain_tool_names,
                pool_start_timeout: serve
                    .pool_start_timeout
                    .unwrap_or(DEFAULT_POOL_START_TIMEOUT),
                instance_id: serve.instance_id.clone(),
                drain_timeout: serve.drain_timeout.unwrap_or(DEFAULT_DRAIN_TIMEOUT),
                pool_replicas: serve.pool_replicas.clone(),
                pool_min: serve.pool_min.clone(),
                replica_idle: serve.replica_idle.unwrap_or(DEFAULT_REPLICA_IDLE),
                pool_stop_grace: serve.pool_stop_grace.unwrap_or(DEFAULT_POOL_STOP_GRACE),
                queue_timeout: match serve.queue_timeout {
                    None => Some(DEFAULT_QUEUE_TIMEOUT),
                    Some(limit) if limit.is_zero() => None,
                    Some(limit) => Some(limit),
                },
                max_queued_per_owner: serve
                    .max_queued_per_owner
                    .unwrap_or(DEFAULT_MAX_QUEUED_PER_OWNER),
                max_queued: serve.max_queued.unwrap_or(DEFAULT_MAX_QUEUED),
                max_result_chars: serve.max_result_chars.filter(|&n| n > 0),
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
                return Ok(RawArgs::Help(if router { ROUTER_HELP } else { MCP_HELP }));
            }
            Long("http-port") => {
                let text = string_value(&mut parser, "--http-port", command)?;
                let port = text.parse::<u16>().map_err(|_| {
                    CliError::Usage(format!(
                        "invalid value '{text}' for '--http-port': expected a port number 0..65535"
                    ))
                })?;
                raw.http_port = Some(port);
            }
            Long("http-host") => {
                let host = string_value(&mut parser, "--http-host", command)?;
                if host.is_empty() {
                    return Err(CliError::Usage("empty value for '--http-host'".into()));
                }
                raw.http_host = Some(host);
            }
            Long("auth-token") => {
                let token = string_value(&mut parser, "--auth-token", command)?;
                // The reference accepts it and then refuses every request.
                if token.is_empty() {
                    return Err(CliError::Usage(
                        "empty value for '--auth-token': no request could match it".into(),
                    ));
                }
                raw.auth_token = Some(token);
            }
            Long("allow-no-auth") => raw.allow_no_auth = true,
            Long("allow-origin") => {
                let origin = string_value(&mut parser, "--allow-origin", command)?;
                if origin.is_empty() {
                    return Err(CliError::Usage("empty value for '--allow-origin'".into()));
                }
                raw.allow_origins.push(origin);
            }
            Long("call-timeout") => {
                let text = string_value(&mut parser, "--call-timeout", command)?;
                raw.call_timeout = Some(seconds(&text, "--call-timeout")?);
            }
            Long("task-after") => {
                let text = string_value(&mut parser, "--task-after", command)?;
                let ms: u64 = text.trim().parse().map_err(|_| {
                    CliError::Usage(format!(
                        "invalid value '{text}' for '--task-after': expected a number of milliseconds (0 or more)"
                    ))
                })?;
                raw.task_after = Some(Duration::from_millis(ms));
            }
            Long("task-dir") => {
                let text = string_value(&mut parser, "--task-dir", command)?;
                raw.task_dir = Some(PathBuf::from(text));
            }
            Long("task-ttl") => {
                let text = string_value(&mut parser, "--task-ttl", command)?;
                raw.task_ttl = Some(seconds(&text, "--task-ttl")?);
            }
            // Hidden: lets tests watch sessions expire.
            Long("session-ttl") => {
                let text = string_value(&mut parser, "--session-ttl", command)?;
                raw.session_ttl = Some(seconds(&text, "--session-ttl")?);
            }
            // Hidden: lets tests see the 408 without waiting half a minute.
            Long("request-timeout") => {
                let text = string_value(&mut parser, "--request-timeout", command)?;
                raw.request_timeout = Some(seconds(&text, "--request-timeout")?);
            }
            Long("pool-start-timeout") => {
                let text = string_value(&mut parser, "--pool-start-timeout", command)?;
                raw.pool_start_timeout = Some(seconds(&text, "--pool-start-timeout")?);
            }
            Long("plain-tool-names") => raw.plain_tool_names = true,
            Long("lazy-pools") => raw.lazy_pools = true,
            Long("job-tools") => raw.job_tools = true,
            Long("instance-id") => {
                let text = string_value(&mut parser, "--instance-id", command)?;
                let id = InstanceId::parse(&text).map_err(|why| {
                    CliError::Usage(format!("invalid value '{text}' for '--instance-id': {why}"))
                })?;
                raw.instance_id = Some(id);
            }
            Long("drain-timeout") => {
                let text = string_value(&mut parser, "--drain-timeout", command)?;
                raw.drain_timeout = Some(seconds(&text, "--drain-timeout")?);
            }
            Long("pool-replicas") => {
                let text = string_value(&mut parser, "--pool-replicas", command)?;
                raw.pool_replicas
                    .push(lang_count(&text, "--pool-replicas")?);
            }
            Long("pool-min") => {
                let text = string_value(&mut parser, "--pool-min", command)?;
                raw.pool_min.push(lang_count(&text, "--pool-min")?);
            }
            // Hidden: lets tests see an idle replica stop.
            Long("replica-idle") => {
                let text = string_value(&mut parser, "--replica-idle", command)?;
                raw.replica_idle = Some(seconds(&text, "--replica-idle")?);
            }
            // Hidden: lets tests hold a pool in its stop.
            Long("pool-stop-grace") => {
                let text = string_value(&mut parser, "--pool-stop-grace", command)?;
                raw.pool_stop_grace = Some(seconds(&text, "--pool-stop-grace")?);
            }
            Long("max-buffered") => {
                let text = string_value(&mut parser, "--max-buffered", command)?;
                raw.max_buffered = Some(byte_size(&text, "--max-buffered")?);
            }
            Long("max-conns-per-peer") => {
                let text = string_value(&mut parser, "--max-conns-per-peer", command)?;
                raw.max_conns_per_peer = Some(count(&text, "--max-conns-per-peer", 0)?);
            }
            Long("max-sessions-per-owner") => {
                let text = string_value(&mut parser, "--max-sessions-per-owner", command)?;
                raw.max_sessions_per_owner = Some(count(&text, "--max-sessions-per-owner", 1)?);
            }
            // Hidden: lets tests fill the session table.
            Long("max-sessions") => {
                let text = string_value(&mut parser, "--max-sessions", command)?;
                raw.max_sessions = Some(count(&text, "--max-sessions", 1)?);
            }
            Long("queue-timeout") => {
                let text = string_value(&mut parser, "--queue-timeout", command)?;
                raw.queue_timeout = Some(seconds(&text, "--queue-timeout")?);
            }
            Long("max-queued-per-owner") => {
                let text = string_value(&mut parser, "--max-queued-per-owner", command)?;
                raw.max_queued_per_owner = Some(count(&text, "--max-queued-per-owner", 0)?);
            }
            Long("max-queued") => {
                let text = string_value(&mut parser, "--max-queued", command)?;
                raw.max_queued = Some(count(&text, "--max-queued", 0)?);
            }
            Long("max-result-chars") => {
                let text = string_value(&mut parser, "--max-result-chars", command)?;
                raw.max_result_chars = Some(count(&text, "--max-result-chars", 0)?);
            }
            Long("tools-file") => {
                let text = string_value(&mut parser, "--tools-file", command)?;
                raw.tools_file = Some(PathBuf::from(text));
            }
            Long(name) if oauth::FLAGS.contains(&name) => {
                let name = name.to_string();
                oauth::flag(&name, &mut parser, &mut raw.oauth, command)?;
            }
            Long(flag) if obs::is_obs_flag(flag) => {
                let flag = flag.to_string();
                let text = string_value(&mut parser, &format!("--{flag}"), command)?;
                obs::parse_flag(&flag, &text, &mut raw.obs)?;
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
    if raw.tools_file.is_some() && raw.targets.len() > 1 {
        return Err(CliError::Usage(format!(
            "--tools-file curates one program; with several, put a {} beside each manifest",
            tools::curate::BESIDE_MANIFEST
        )));
    }
    if router && raw.http_port.is_none() {
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
            Short('h') | Long("help") => return Ok(RawArgs::Help(TOOLS_HELP)),
            Long("template") => template = true,
            Long("tools-file") => {
                tools_file = Some(PathBuf::from(string_value(
                    &mut parser,
                    "--tools-file",
                    "tools",
                )?))
            }
            Word(word) if target.is_none() => target = Some(PathBuf::from(word)),
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

/// Parses `tools` / `config`: one target and `--help`. `Ok(Err(help))` when
/// help was asked for.
fn parse_target_only(
    mut parser: lexopt::Parser,
    command: &'static str,
    help: &'static str,
) -> Result<Result<PathBuf, &'static str>, CliError> {
    let mut target = None;
    while let Some(arg) = parser.next().map_err(|e| usage(e, Some(command)))? {
        match arg {
            Short('h') | Long("help") => return Ok(Err(help)),
            Word(word) if target.is_none() => target = Some(PathBuf::from(word)),
            other => return Err(usage(other.unexpected(), Some(command))),
        }
    }
    match target {
        Some(target) => Ok(Ok(target)),
        None => Err(CliError::Usage(format!(
            "missing <program>; see 'morloc-mcp {command} --help'"
        ))),
    }
}

#[cfg(test)]
mod tests;
