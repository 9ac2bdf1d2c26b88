//! The reference runtime's command line, for a binary installed as
//! `morloc-nexus`: its MCP modes (`mcp`, `run <target> --mcp-tools`,
//! `--mcp-config`) map onto ours; everything else is refused by name.

use std::ffi::OsString;
use std::path::PathBuf;

use super::help::{NEXUS_HELP, NEXUS_ONLY_MCP};
use super::{parse_serve, CliError, RawArgs};

/// The reference runtime's spellings, under the name `morloc-nexus`.
pub(super) fn parse_nexus(args: Vec<OsString>) -> Result<RawArgs, CliError> {
    let Some(mode) = args.first() else {
        return Err(CliError::Usage(format!(
            "{NEXUS_ONLY_MCP}; see 'morloc-nexus --help'"
        )));
    };
    match mode.to_str() {
        Some("-h" | "--help") => Ok(RawArgs::Help(NEXUS_HELP.into())),
        Some("-V" | "--version") => Ok(RawArgs::Version),
        Some("mcp") => parse_serve(
            lexopt::Parser::from_args(args.into_iter().skip(1)),
            false,
            "mcp",
        ),
        Some("run") => parse_nexus_run(&args[1..]),
        _ => Err(CliError::Usage(format!(
            "'{}' is not provided: {NEXUS_ONLY_MCP}",
            mode.to_string_lossy()
        ))),
    }
}

/// `run [flags] TARGET [flag]`: the flags may precede the target, or be the
/// first word after it (the launcher form `./prog --mcp-tools`). When several
/// are given, `--json-help` beats `--mcp-tools`, which beats `--mcp-config`.
fn parse_nexus_run(words: &[OsString]) -> Result<RawArgs, CliError> {
    const JSON_HELP: &str = "--json-help";
    const TOOLS: &str = "--mcp-tools";
    const CONFIG: &str = "--mcp-config";
    let is_flag = |w: &OsString| matches!(w.to_str(), Some(JSON_HELP | TOOLS | CONFIG));
    let leading = words.iter().take_while(|w| is_flag(w)).count();
    let target = words
        .get(leading)
        .filter(|w| !w.to_string_lossy().starts_with('-'));
    let mut flags: Vec<&OsString> = words[..leading].iter().collect();
    if target.is_some() {
        flags.extend(words.get(leading + 1).filter(|w| is_flag(w)));
    }
    let has = |name: &str| flags.iter().any(|w| w.to_str() == Some(name));
    if flags.is_empty() {
        return Err(CliError::Usage(format!(
            "running commands is not provided: {NEXUS_ONLY_MCP}"
        )));
    }
    let Some(target) = target else {
        return Err(CliError::Usage(
            "--json-help/--mcp-tools/--mcp-config require a program target".into(),
        ));
    };
    let target = PathBuf::from(target);
    if has(JSON_HELP) {
        Err(CliError::Usage(format!(
            "--json-help is not provided: {NEXUS_ONLY_MCP}"
        )))
    } else if has(TOOLS) {
        Ok(RawArgs::Tools {
            target,
            tools_file: None,
        })
    } else {
        Ok(RawArgs::Config {
            target,
            options: Vec::new(),
        })
    }
}
