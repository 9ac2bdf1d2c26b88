//! Start-up: each program's tool surface and the catalog, the protocol
//! stream moved off fd 1, then the reactor runs until it is told to stop,
//! and shuts down.

use super::{Reactor, StartError};
use crate::edge::cli::{HttpConfig, ServeConfig, Settings};
use crate::edge::{log, manifest_file, proc};
use crate::protocol::instance::InstanceId;
use crate::protocol::log::Level;
use crate::protocol::mcp::{Catalog, Program};

/// Builds each program's tool surface (printing exclusion notes), then
/// serves over stdio or HTTP. Returns the process exit status.
pub fn serve(config: ServeConfig) -> Result<i32, StartError> {
    log::configure(config.obs.log_level, config.obs.log_format);
    let mut programs = Vec::new();
    for p in config.programs {
        let surface = manifest_file::surface(&p.loaded).map_err(StartError)?;
        for note in &surface.notes {
            log::labelled(Level::Warn, note);
        }
        programs.push(Program::new(p.loaded, surface).map_err(|e| StartError(e.to_string()))?);
    }
    let instance = match config.settings.instance_id.clone() {
        Some(id) => id,
        None => {
            let mut random = [0u8; 6];
            proc::fill_random(&mut random)
                .map_err(|e| StartError(format!("cannot pick an instance id: {e}")))?;
            InstanceId::from_random(random)
        }
    };
    let options = config.settings;
    let result_limit = options.max_result_chars;
    let job = options.job_tools;
    let serving = Serving {
        instance,
        metrics_token: config.obs.metrics_token,
    };
    match config.http {
        None => {
            let Some(program) = programs.pop() else {
                return Err(StartError("nothing to serve".into()));
            };
            let mut catalog = Catalog::single(program);
            catalog.set_result_limit(result_limit);
            job_tools(&mut catalog, job)?;
            run_server(catalog, options, serving, None)
        }
        Some(http) => {
            // Over HTTP, tools are namespaced `<module>__<command>` unless the
            // user asked for plain names (the reference's, for one program;
            // for the router, refused at start if two programs share one).
            let namespaced = !options.plain_tool_names;
            let mut catalog = Catalog::multi(programs, namespaced, config.router)
                .map_err(|e| StartError(e.to_string()))?;
            catalog.set_result_limit(result_limit);
            job_tools(&mut catalog, job)?;
            run_server(catalog, options, serving, Some(http))
        }
    }
}

/// `--job-tools`: the job tools on, or why they cannot be.
fn job_tools(catalog: &mut Catalog, on: bool) -> Result<(), StartError> {
    if !on {
        return Ok(());
    }
    catalog
        .set_job_tools(on)
        .map_err(|e| StartError(format!("cannot serve: {e}")))
}

/// What the server resolved at start-up beyond [`Settings`].
pub(super) struct Serving {
    /// The prefix of every session (and task) id this server mints.
    pub(super) instance: InstanceId,
    /// The bearer token `GET /metrics` takes instead of the MCP one
    /// (`--metrics-token`, else its environment variable).
    pub(super) metrics_token: Option<String>,
}

fn run_server(
    mut catalog: Catalog,
    options: Settings,
    serving: Serving,
    http: Option<HttpConfig>,
) -> Result<i32, StartError> {
    // Before anything can print: the protocol stream gets a private fd and
    // fd 1 becomes stderr, so no stray write ever reaches the client.
    let protocol_out = proc::rehome_stdout()
        .map_err(|e| StartError(format!("cannot set up the protocol stream: {e}")))?;
    std::env::set_var("MORLOC_QUIET", "1");
    proc::ignore_sigpipe().map_err(|e| StartError(format!("cannot ignore SIGPIPE: {e}")))?;
    // Orphaned pool workers are re-parented to us so they can be reaped.
    let _ = proc::set_child_subreaper();
    // A rebuilt program is reloaded (`reactor::reload`), so the tool list
    // can change: both eras declare `tools.listChanged`.
    catalog.set_list_changes(true);
    let mut reactor = Reactor::new(catalog, options, serving, protocol_out, http)?;
    let code = reactor.run();
    reactor.shutdown();
    Ok(code)
}
