//! The help texts of the command line.

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
launcher script. Run 'morloc-mcp <command> --help' for the options of a command.

Options:
  -h, --help       print this help
  -V, --version    print the version
";

/// The options shared by `mcp` and `router`, as a literal for `concat!`.
macro_rules! serve_options {
    () => {
        "\
Options:
      --http-port <port>        serve Streamable HTTP at /mcp on this port
                                (0..65535; 0 lets the system choose)
      --http-host <addr>        HTTP bind address [default: 127.0.0.1]
      --auth-token <token>      require 'Authorization: Bearer <token>' over HTTP
                                [env: MORLOC_MCP_TOKEN]
      --allow-no-auth           allow a non-loopback HTTP bind without a token
      --allow-origin <origin>   accept HTTP requests carrying this Origin
                                (repeatable)
      --public-url <url>        the /mcp endpoint as clients reach it (behind a
                                TLS proxy: https://host/mcp); the default OAuth
                                audience [default: http://<host>:<port>/mcp]
      --oauth-issuer <url>      act as an OAuth 2.1 resource server: accept
                                access tokens (JWT, RS256 or ES256) from this
                                issuer (their 'iss', exactly); needs --oauth-jwks
      --oauth-jwks <url|file>   the issuer's keys: a JWKS file, or an http:// URL
                                (IP or localhost; no TLS: see the README, OAuth)
                                fetched on the first token and on an unknown key
      --oauth-jwks-max-age <seconds>
                                fetch (or read) the keys again once they are
                                this old [default: 3600]
      --oauth-audience <aud>    what a token's 'aud' must hold
                                [default: the --public-url]
      --oauth-scopes <scopes>   scopes every request needs (comma-separated)
      --oauth-tool-scopes <tool>=<scopes>
                                scopes a call of <tool> also needs; 403 with
                                insufficient_scope without them (repeatable;
                                added to the tools file's 'scopes')
      --call-timeout <seconds>  fail a tool call that runs longer than this
                                (0 for no limit) [default: 600]
      --task-after <ms>         answer a remote tool call still running after
                                this many milliseconds with a task handle, to
                                clients that declared the tasks extension
                                (0: at once) [default: 1000]
      --task-ttl <seconds>      keep a finished task's result this long
                                [default: 3600]
      --task-dir <dir>          keep tasks in this directory, so finished results
                                survive a restart
      --job-tools               answer a remote tool call still running after
                                --task-after with a job handle, to clients
                                without the tasks extension, and add the tools
                                job_status, job_result and job_cancel
      --max-result-chars <n>    a tool result whose JSON text is longer than <n>
                                characters comes back as a preview and a
                                resource_link; the whole value is read, in
                                pages, with resources/read (for agents;
                                'config' writes 80000) [default: off: every
                                value whole]
      --lazy-pools              start language pools on first use, not at start-up
      --tools-file <path>       curate the tools (titles, descriptions, hints,
                                hidden, names, OAuth scopes) [default: the
                                morloc-mcp-tools.json beside the manifest, if any]
      --instance-id <name>      this server's name behind a load balancer, the
                                prefix of every session id it mints (letters,
                                digits, '-', '_') [default: random per process]
      --drain-timeout <seconds> over HTTP, how long SIGTERM waits for running
                                calls before exiting [default: 30]
      --pool-replicas <lang>=<n>
                                run at most <n> processes of each <lang> pool
                                (repeatable; 1 = one process, as morloc-nexus)
                                [default: py, r, cpp and rust scale up to
                                max(CPUs, 8); others 1]
      --pool-min <lang>=<n>     keep <n> processes of each <lang> pool ready
                                from the start, so a burst of calls finds them
                                up (repeatable; idle ones are not stopped
                                below <n>) [default: 1]
      --max-buffered <bytes>    over HTTP, most bytes buffered across all
                                connections (request bodies, unread input,
                                queued responses); past it a new request body
                                gets 503 (suffix k, m or g for KiB, MiB, GiB)
                                [default: 256m]
      --max-conns-per-peer <n>  over HTTP, most connections from one address
                                (a load balancer in front is one address;
                                0: no cap) [default: 256]
      --max-sessions-per-owner <n>
                                most legacy HTTP sessions of one owner (the
                                bearer token, else the peer address); its
                                next one drops its least recently used
                                [default: 1000]
      --queue-timeout <seconds> fail a tool call that waited this long for a pool
                                process (0 for no limit) [default: 300]
      --max-queued-per-owner <n>
                                refuse a tool call at once when its client (stdio,
                                an HTTP session, else an HTTP connection) already
                                has <n> calls waiting for a pool process
                                (0 for no cap) [default: 256]
      --max-queued <n>          refuse a tool call at once when <n> calls wait for
                                pool processes in all (0 for no cap) [default: 4096]
      --plain-tool-names        over HTTP, name a single program's tools <command>
                                instead of <module>__<command> (stdio never
                                prefixes; with several programs it is ignored)
      --log-level <level>       what stderr shows: error, warn, info (an access
                                line per request) or debug (a span per pool
                                call) [default: warn over stdio, info over HTTP]
      --log-format <format>     text ('morloc-mcp: <message> key=value...') or
                                json (one object per line) [default: text]
      --metrics-token <token>   over HTTP, GET /metrics takes
                                'Authorization: Bearer <token>' instead of the
                                MCP token [env: MORLOC_MCP_METRICS_TOKEN]
  -h, --help                    print this help
"
    };
}

pub(super) const MCP_HELP: &str = concat!(
    "\
Usage: morloc-mcp mcp <program> [options]

Serve <program> as an MCP server: over stdio by default, over HTTP with
--http-port. <program> is a manifest.json, a build directory containing one,
or a Morloc launcher script.

",
    serve_options!()
);

pub(super) const ROUTER_HELP: &str = concat!(
    "\
Usage: morloc-mcp router <program>... --http-port <port> [options]

Serve several programs behind one HTTP endpoint; each tool is named
<module>__<command>.

",
    serve_options!()
);

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

pub(super) const CONFIG_HELP: &str = "\
Usage: morloc-mcp config <program>

Print an mcpServers entry that runs <program> over stdio, for MCP client
configuration files. It serves with --max-result-chars 80000, so an agent
gets a long result as a preview and a link it can read in pages rather than
a truncated value.

Options:
  -h, --help    print this help
";

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
