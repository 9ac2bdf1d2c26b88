//! The help texts of the command line (the serving options' own come from
//! the settings table).

use super::settings::options_help;
use super::AGENT_RESULT_CHARS;

pub(super) const TOP_HELP: &str = "\
morloc-mcp: serve the exported functions of a compiled Morloc program as
Model Context Protocol (MCP) tools

Usage:
  morloc-mcp mcp <program> [options]      serve one program (stdio, or HTTP with --http-port)
  morloc-mcp router <program>... --http-port <port> [options]
                                          serve several programs over HTTP,
                                          tools named <module>__<command>
  morloc-mcp tools <program>              print the tools/list payload
  morloc-mcp config <program>             print an mcpServers entry for MCP clients

<program> is a manifest.json, a build directory containing one, or a Morloc
launcher script. Run 'morloc-mcp <command> --help' (or 'morloc-mcp help
<command>') for the options of a command.

Options:
  -h, --help       print this help
  -V, --version    print the version
";

/// `mcp --help`: the usage, then every option of the settings table.
pub(super) fn mcp_help() -> String {
    "\
Usage: morloc-mcp mcp <program> [options]

Serve <program> as an MCP server: over stdio by default, over HTTP with
--http-port. <program> is a manifest.json, a build directory containing one,
or a Morloc launcher script.

"
    .to_string()
        + &options_help()
}

/// `router --help`.
pub(super) fn router_help() -> String {
    "\
Usage: morloc-mcp router <program>... --http-port <port> [options]

Serve several programs behind one HTTP endpoint; each tool is named
<module>__<command> (or <command> with --plain-tool-names, when no two
programs share a command name).

"
    .to_string()
        + &options_help()
}

pub(super) const TOOLS_HELP: &str = "\
Usage: morloc-mcp tools <program> [--tools-file <path>]
       morloc-mcp tools <program> --template

Print the tools/list payload of <program> (pretty-printed JSON) on stdout,
curated by its tools file (see --tools-file). Commands that cannot be served
are listed on stderr.

Options:
      --tools-file <path>   the tools file to apply [default: the
                            morloc-mcp-tools.json beside the manifest, if any]
      --template            print a starting tools file for <program>: every
                            tool and argument with every setting, changing
                            nothing until edited
  -h, --help                print this help
";

/// `config --help`.
pub(super) fn config_help() -> String {
    format!(
        "\
Usage: morloc-mcp config <program> [options]

Print an mcpServers entry that runs <program> over stdio, for MCP client
configuration files. The serving options given (those of 'morloc-mcp mcp
--help', except --http-port: the entry serves over stdio) are checked and
written into the entry, relative paths made absolute. Unless given, it
serves with --max-result-chars {AGENT_RESULT_CHARS}, so an agent gets a long result as a
preview and a link it can read in pages rather than a truncated value.

Options:
  -h, --help    print this help
"
    )
}

pub(super) const NEXUS_HELP: &str = "\
morloc-nexus (MCP modes of the Morloc runtime, provided by morloc-mcp)

Usage:
  morloc-nexus mcp <target> [options]      serve <target> as an MCP server
  morloc-nexus run <target> --mcp-tools    print the tools/list payload
  morloc-nexus run <target> --mcp-config   print an mcpServers client entry

Run 'morloc-nexus mcp --help' for the serving options.
";

pub(super) const NEXUS_ONLY_MCP: &str =
    "only the MCP modes of morloc-nexus are provided (mcp, --mcp-tools, --mcp-config)";
