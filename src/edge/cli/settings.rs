//! The serving options of `mcp` and `router`, each declared once.
//!
//! The [`settings!`] table below is the only place an option is declared:
//! its field in [`Settings`] (type and default), its flag name and value
//! syntax, the default the help shows, how a typed value is checked and
//! stored, and its help text (the doc comment). From it come the
//! [`Settings`] struct, its `Default`, the [`FLAGS`] the parser walks, the
//! `--help` text ([`options_help`]), the "did you mean" candidates, and the
//! checks of the docs (`docs_list_every_flag` in the tests). The owners
//! (the reactor, its HTTP front, the pools) read [`Settings`] itself: a
//! field never has to be copied into another struct on its way.
//!
//! To add an option: add one entry to the table (doc comment, field, type,
//! default, flag, value name, shown default, setter), read
//! `settings.<field>` where it is used, and add its row to the options
//! table of the docs (a test fails until it is there). Nothing else.

use std::path::PathBuf;
use std::time::Duration;

use super::values::{byte_size, count, lang_count, seconds};
use super::{CliError, DEFAULT_HTTP_HOST};
use crate::protocol::http::{
    DEFAULT_MAX_BUFFERED, DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_OWNER,
};
use crate::protocol::instance::InstanceId;
use crate::protocol::log::{Format, Level};

/// The default shown in `--help` and checked against the field's default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown {
    /// No default (the option is off unless given).
    Nothing,
    /// The value as typed: giving it changes nothing (a test checks).
    Typed(&'static str),
    /// A default that is not a value one could type (it depends on the
    /// transport, the machine, ...).
    Said(&'static str),
}

/// Who sees an option in `--help` and the docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Audience {
    Everyone,
    /// For tests (short timers, small tables); parsed, never shown.
    Tests,
}

/// One option as the parser, the help and the docs see it.
pub struct Flag {
    /// Without the leading `--`.
    pub name: &'static str,
    /// The value's name, `<seconds>`; empty for a switch.
    pub value: &'static str,
    pub default: Shown,
    pub audience: Audience,
    /// The help text (the field's doc comment, one space-led line each).
    pub help: &'static [&'static str],
    /// Checks the typed value and stores it; the error says why it is bad
    /// (the caller names the flag and the value).
    pub set: fn(&mut Settings, &str) -> Result<(), String>,
}

impl Flag {
    /// Whether the option takes a value.
    pub fn takes_value(&self) -> bool {
        !self.value.is_empty()
    }

    /// Stores `text` for this flag into `settings`, or a usage error naming
    /// the flag and the value.
    pub(super) fn apply(&self, settings: &mut Settings, text: &str) -> Result<(), CliError> {
        (self.set)(settings, text).map_err(|why| {
            let name = self.name;
            CliError::Usage(if text.is_empty() {
                format!("empty value for '--{name}': {why}")
            } else {
                format!("invalid value '{text}' for '--{name}': {why}")
            })
        })
    }
}

/// Declares [`Settings`], its `Default` and [`FLAGS`] from one table.
macro_rules! settings {
    ($(
        $(#[doc = $doc:literal])*
        $field:ident: $ty:ty = $default:expr,
            $flag:literal $value:literal $shown:expr, $audience:ident,
            |$s:ident, $v:ident| $set:expr;
    )*) => {
        /// Every serving option, with its default until the command line
        /// says otherwise.
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub struct Settings {
            $( $(#[doc = $doc])* pub $field: $ty, )*
        }

        impl Default for Settings {
            fn default() -> Settings {
                Settings { $( $field: $default, )* }
            }
        }

        /// The options in `--help` order.
        pub const FLAGS: &[Flag] = &[$(
            Flag {
                name: $flag,
                value: $value,
                default: $shown,
                audience: Audience::$audience,
                help: &[$($doc),*],
                set: |$s: &mut Settings, $v: &str| -> Result<(), String> {
                    $set;
                    Ok(())
                },
            },
        )*];
    };
}

use Shown::{Nothing, Said, Typed};

// Each entry: the help (doc comment), `field: Type = default,`, then
// `"flag-name" "<value>" shown-default, audience,` and the setter
// `|settings, text| ...` (a `?` on a `Result<_, String>` reports why a
// value is bad). A switch has the value name "" and ignores `text`.
settings! {
    /// serve Streamable HTTP at /mcp on this port (0..65535; 0 lets the
    /// system choose)
    http_port: Option<u16> = None,
        "http-port" "<port>" Nothing, Everyone,
        |s, v| s.http_port = Some(v.trim().parse().map_err(|_| "expected a port number 0..65535")?);
    /// HTTP bind address
    http_host: String = DEFAULT_HTTP_HOST.to_string(),
        "http-host" "<addr>" Typed(DEFAULT_HTTP_HOST), Everyone,
        |s, v| s.http_host = non_empty(v, "an IP address or 'localhost'")?;
    /// require 'Authorization: Bearer <token>' over HTTP
    /// [env: MORLOC_MCP_TOKEN]
    auth_token: Option<String> = None,
        "auth-token" "<token>" Nothing, Everyone,
        // The reference accepts it and then refuses every request.
        |s, v| s.auth_token = Some(non_empty(v, "no request could match it")?);
    /// allow a non-loopback HTTP bind without a token
    allow_no_auth: bool = false,
        "allow-no-auth" "" Nothing, Everyone,
        |s, _v| s.allow_no_auth = true;
    /// accept HTTP requests carrying this Origin (repeatable)
    allow_origins: Vec<String> = Vec::new(),
        "allow-origin" "<origin>" Nothing, Everyone,
        |s, v| s.allow_origins.push(non_empty(v, "an Origin such as https://app.example")?);
    /// the /mcp endpoint as clients reach it (behind a TLS proxy:
    /// https://host/mcp); the default OAuth audience
    public_url: Option<String> = None,
        "public-url" "<url>" Said("http://<host>:<port>/mcp"), Everyone,
        |s, v| s.public_url = Some(url(v)?);
    /// act as an OAuth 2.1 resource server: accept access tokens (JWT, RS256
    /// or ES256) from this issuer (their 'iss', exactly); needs --oauth-jwks
    oauth_issuer: Option<String> = None,
        "oauth-issuer" "<url>" Nothing, Everyone,
        |s, v| s.oauth_issuer = Some(non_empty(v, "the issuer's 'iss'")?);
    /// the issuer's keys: a JWKS file, or an http:// URL (IP or localhost; no
    /// TLS: see the OAuth docs) fetched on the first token and on an unknown
    /// key
    oauth_jwks: Option<String> = None,
        "oauth-jwks" "<url|file>" Nothing, Everyone,
        |s, v| s.oauth_jwks = Some(non_empty(v, "a JWKS file or an http:// URL")?);
    /// fetch (or read) the keys again once they are this old
    oauth_jwks_max_age: Duration = super::oauth::DEFAULT_JWKS_MAX_AGE,
        "oauth-jwks-max-age" "<seconds>" Typed("3600"), Everyone,
        |s, v| s.oauth_jwks_max_age = seconds(v)?;
    /// what a token's 'aud' must hold
    oauth_audience: Option<String> = None,
        "oauth-audience" "<aud>" Said("the --public-url"), Everyone,
        |s, v| s.oauth_audience = Some(non_empty(v, "an audience")?);
    /// scopes every request needs (comma-separated)
    oauth_scopes: Vec<String> = Vec::new(),
        "oauth-scopes" "<scopes>" Nothing, Everyone,
        |s, v| s.oauth_scopes.extend(scope_list(&non_empty(v, "scopes")?));
    /// scopes a call of <tool> also needs; 403 with insufficient_scope
    /// without them (repeatable; added to the tools file's 'scopes')
    oauth_tool_scopes: Vec<(String, Vec<String>)> = Vec::new(),
        "oauth-tool-scopes" "<tool>=<scopes>" Nothing, Everyone,
        |s, v| s.oauth_tool_scopes.push(tool_scopes(v)?);
    /// fail a tool call that runs longer than this (0 for no limit)
    call_timeout: Option<Duration> = Some(Duration::from_secs(600)),
        "call-timeout" "<seconds>" Typed("600"), Everyone,
        |s, v| s.call_timeout = limit(v)?;
    /// answer a remote tool call still running after this many
    /// milliseconds with a task handle, to clients that declared the tasks
    /// extension (0: at once)
    task_after: Duration = Duration::from_millis(1000),
        "task-after" "<ms>" Typed("1000"), Everyone,
        |s, v| s.task_after = Duration::from_millis(
            v.trim().parse().map_err(|_| "expected a number of milliseconds (0 or more)")?,
        );
    /// keep a finished task's result this long
    task_ttl: Duration = Duration::from_secs(3600),
        "task-ttl" "<seconds>" Typed("3600"), Everyone,
        |s, v| s.task_ttl = seconds(v)?;
    /// keep tasks in this directory, so finished results survive a restart
    task_dir: Option<PathBuf> = None,
        "task-dir" "<dir>" Nothing, Everyone,
        |s, v| s.task_dir = Some(PathBuf::from(non_empty(v, "a directory")?));
    /// answer a remote tool call still running after --task-after with a
    /// job handle, to clients without the tasks extension, and add the
    /// tools job_status, job_result and job_cancel
    job_tools: bool = false,
        "job-tools" "" Nothing, Everyone,
        |s, _v| s.job_tools = true;
    /// a tool result whose JSON text is longer than <n> characters comes
    /// back as a preview and a resource_link; the whole value is read, in
    /// pages, with resources/read (for agents; 'config' writes 80000; 0:
    /// off, every value whole)
    max_result_chars: Option<usize> = None,
        "max-result-chars" "<n>" Typed("0"), Everyone,
        |s, v| s.max_result_chars = Some(count(v, 0)?).filter(|&n| n > 0);
    /// most bytes of stored results (--max-result-chars) and finished
    /// tasks' results one caller holds; past it that caller's oldest are
    /// freed, never another's, and a single result over it is refused
    /// (suffix k, m or g)
    max_owner_bytes: usize = crate::protocol::mcp::bigresults::MAX_OWNER_BYTES,
        "max-owner-bytes" "<bytes>" Typed("512m"), Everyone,
        |s, v| s.max_owner_bytes = byte_size(v)?;
    /// start language pools on first use, not at start-up
    lazy_pools: bool = false,
        "lazy-pools" "" Nothing, Everyone,
        |s, _v| s.lazy_pools = true;
    /// curate the tools (titles, descriptions, hints, hidden, names, OAuth
    /// scopes)
    tools_file: Option<PathBuf> = None,
        "tools-file" "<path>" Said("the morloc-mcp-tools.json beside the manifest, if any"),
        Everyone,
        |s, v| s.tools_file = Some(PathBuf::from(non_empty(v, "a tools file")?));
    /// this server's name behind a load balancer, the prefix of every
    /// session id it mints (letters, digits, '-', '_')
    instance_id: Option<InstanceId> = None,
        "instance-id" "<name>" Said("random per process"), Everyone,
        |s, v| s.instance_id = Some(InstanceId::parse(v)?);
    /// over HTTP, how long SIGTERM waits for running calls before exiting
    drain_timeout: Duration = Duration::from_secs(30),
        "drain-timeout" "<seconds>" Typed("30"), Everyone,
        |s, v| s.drain_timeout = seconds(v)?;
    /// run at most <n> processes of each <lang> pool (repeatable; 1 = one
    /// process, as morloc-nexus; <lang> is py, r, cpp or rust, or another
    /// pool language of the manifest)
    pool_replicas: Vec<(String, usize)> = Vec::new(),
        "pool-replicas" "<lang>=<n>"
        Said("py, r, cpp and rust scale up to max(CPUs, 8); others 1"), Everyone,
        |s, v| s.pool_replicas.push(lang_count(v, 1)?);
    /// keep <n> processes of each <lang> pool ready from the start, so a
    /// burst of calls finds them up (repeatable; idle ones are not stopped
    /// below <n>)
    pool_min: Vec<(String, usize)> = Vec::new(),
        "pool-min" "<lang>=<n>" Said("1"), Everyone,
        |s, v| s.pool_min.push(lang_count(v, 1)?);
    /// over HTTP, most bytes buffered across all connections (request
    /// bodies, unread input, queued responses); past it a new request body
    /// gets 503 (suffix k, m or g for KiB, MiB, GiB)
    max_buffered: usize = DEFAULT_MAX_BUFFERED,
        "max-buffered" "<bytes>" Typed("256m"), Everyone,
        |s, v| s.max_buffered = byte_size(v)?;
    /// over HTTP, most connections from one address (a load balancer in
    /// front is one address; 0: no cap)
    max_conns_per_peer: usize = 256,
        "max-conns-per-peer" "<n>" Typed("256"), Everyone,
        |s, v| s.max_conns_per_peer = count(v, 0)?;
    /// over HTTP, most answer bytes queued unread on one connection; past
    /// it the connection is not read (no new request starts) until its
    /// client reads, and its event stream's notifications are dropped
    /// (suffix k, m or g)
    max_unread_per_conn: usize = 4 * 1024 * 1024,
        "max-unread-per-conn" "<bytes>" Typed("4m"), Everyone,
        |s, v| s.max_unread_per_conn = byte_size(v)?;
    /// over HTTP, most answer bytes queued unread on the connections of one
    /// address; past it none of them is read until the address reads, and
    /// only this much of them counts in --max-buffered (suffix k, m or g)
    max_unread_per_peer: usize = 64 * 1024 * 1024,
        "max-unread-per-peer" "<bytes>" Typed("64m"), Everyone,
        |s, v| s.max_unread_per_peer = byte_size(v)?;
    /// most legacy HTTP sessions of one owner (the bearer token, else the
    /// peer address); its next one drops its least recently used
    max_sessions_per_owner: usize = DEFAULT_MAX_SESSIONS_PER_OWNER,
        "max-sessions-per-owner" "<n>" Typed("1000"), Everyone,
        |s, v| s.max_sessions_per_owner = count(v, 1)?;
    /// over HTTP, answer 408 and close when a request takes longer than
    /// this from its first byte to the end of its body
    request_timeout: Duration = Duration::from_secs(30),
        "request-timeout" "<seconds>" Typed("30"), Everyone,
        |s, v| s.request_timeout = positive_seconds(v)?;
    /// over HTTP, close a keep-alive connection that sent nothing for this
    /// long
    idle_timeout: Duration = Duration::from_secs(120),
        "idle-timeout" "<seconds>" Typed("120"), Everyone,
        |s, v| s.idle_timeout = positive_seconds(v)?;
    /// fail a tool call that waited this long for a pool process (0 for no
    /// limit)
    queue_timeout: Option<Duration> = Some(Duration::from_secs(300)),
        "queue-timeout" "<seconds>" Typed("300"), Everyone,
        |s, v| s.queue_timeout = limit(v)?;
    /// refuse a tool call at once when its client (stdio, an HTTP session,
    /// else an HTTP connection) already has <n> calls waiting for a pool
    /// process (0 for no cap)
    max_queued_per_owner: usize = 256,
        "max-queued-per-owner" "<n>" Typed("256"), Everyone,
        |s, v| s.max_queued_per_owner = count(v, 0)?;
    /// refuse a tool call at once when <n> calls wait for pool processes in
    /// all (0 for no cap)
    max_queued: usize = 4096,
        "max-queued" "<n>" Typed("4096"), Everyone,
        |s, v| s.max_queued = count(v, 0)?;
    /// over HTTP, name a single program's tools <command> instead of
    /// <module>__<command> (stdio never prefixes); the router takes it when
    /// no two programs share a command name
    plain_tool_names: bool = false,
        "plain-tool-names" "" Nothing, Everyone,
        |s, _v| s.plain_tool_names = true;
    /// what stderr shows: error, warn, info (an access line per request) or
    /// debug (a span per pool call)
    log_level: Option<Level> = None,
        "log-level" "<level>" Said("warn over stdio, info over HTTP"), Everyone,
        |s, v| s.log_level = Some(Level::parse(v).ok_or_else(|| {
            format!("expected one of {}", Level::NAMES.join(", "))
        })?);
    /// text ('morloc-mcp: <message> key=value...') or json (one object per
    /// line)
    log_format: Format = Format::Text,
        "log-format" "<format>" Typed("text"), Everyone,
        |s, v| s.log_format = Format::parse(v).ok_or("expected text or json")?;
    /// over HTTP, GET /metrics takes 'Authorization: Bearer <token>' instead
    /// of the MCP token [env: MORLOC_MCP_METRICS_TOKEN]
    metrics_token: Option<String> = None,
        "metrics-token" "<token>" Nothing, Everyone,
        |s, v| s.metrics_token = Some(non_empty(v, "no scrape could match it")?);
    /// how long an idle legacy HTTP session lives
    session_ttl: Duration = crate::protocol::http::DEFAULT_SESSION_TTL,
        "session-ttl" "<seconds>" Typed("3600"), Tests,
        |s, v| s.session_ttl = seconds(v)?;
    /// the most legacy HTTP sessions in all
    max_sessions: usize = DEFAULT_MAX_SESSIONS,
        "max-sessions" "<n>" Typed("10000"), Tests,
        |s, v| s.max_sessions = count(v, 1)?;
    /// how long a pool may take to answer its first ping
    pool_start_timeout: Duration = Duration::from_secs(60),
        "pool-start-timeout" "<seconds>" Typed("60"), Tests,
        |s, v| s.pool_start_timeout = seconds(v)?;
    /// how long a pool's process group has between SIGTERM and SIGKILL
    pool_stop_grace: Duration = Duration::from_millis(200),
        "pool-stop-grace" "<seconds>" Typed("0.2"), Tests,
        |s, v| s.pool_stop_grace = seconds(v)?;
    /// how long a replica may sit idle before it is stopped
    replica_idle: Duration = Duration::from_secs(30),
        "replica-idle" "<seconds>" Typed("30"), Tests,
        |s, v| s.replica_idle = seconds(v)?;
}

/// The flag named `name` (without dashes).
pub fn flag(name: &str) -> Option<&'static Flag> {
    FLAGS.iter().find(|f| f.name == name)
}

fn non_empty(text: &str, expected: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        Err(expected.to_string())
    } else {
        Ok(text.to_string())
    }
}

/// A number of seconds where 0 means no limit.
fn limit(text: &str) -> Result<Option<Duration>, String> {
    Ok(Some(seconds(text)?).filter(|d| !d.is_zero()))
}

/// A number of seconds above 0.
fn positive_seconds(text: &str) -> Result<Duration, String> {
    match seconds(text)? {
        d if d.is_zero() => Err("expected a number of seconds above 0".into()),
        d => Ok(d),
    }
}

fn url(text: &str) -> Result<String, String> {
    if text.starts_with("http://") || text.starts_with("https://") {
        Ok(text.to_string())
    } else {
        Err("expected an http:// or https:// URL (the /mcp endpoint as clients reach it)".into())
    }
}

/// Scopes separated by commas or spaces.
fn scope_list(text: &str) -> Vec<String> {
    text.split([',', ' '])
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// `TOOL=SCOPE[,SCOPE...]`.
fn tool_scopes(text: &str) -> Result<(String, Vec<String>), String> {
    let bad = || "expected TOOL=SCOPE[,SCOPE...]".to_string();
    let (tool, scopes) = text.split_once('=').ok_or_else(bad)?;
    let scopes = scope_list(scopes);
    if tool.is_empty() || scopes.is_empty() {
        return Err(bad());
    }
    Ok((tool.to_string(), scopes))
}

/// The column the help texts start at, and the width they wrap to.
const HELP_COLUMN: usize = 32;
const HELP_WIDTH: usize = 80;

/// The `Options:` section of `mcp --help` and `router --help`.
pub fn options_help() -> String {
    let mut out = String::from("Options:\n");
    for flag in FLAGS.iter().filter(|f| f.audience == Audience::Everyone) {
        let mut head = format!("      --{}", flag.name);
        if flag.takes_value() {
            head.push(' ');
            head.push_str(flag.value);
        }
        let mut text: Vec<&str> = flag
            .help
            .iter()
            .flat_map(|l| l.split_whitespace())
            .collect();
        let default = match flag.default {
            Nothing => None,
            Typed(t) | Said(t) => Some(format!("[default: {t}]")),
        };
        if let Some(d) = &default {
            text.extend(d.split_whitespace());
        }
        wrap_into(&mut out, head, &text);
    }
    out.push_str(&format!(
        "  -h, --help{:w$}print this help\n",
        "",
        w = HELP_COLUMN - 12
    ));
    out
}

/// Appends `head` and the words, wrapped at [`HELP_WIDTH`] from
/// [`HELP_COLUMN`] (on the next line when the head is too long).
fn wrap_into(out: &mut String, head: String, words: &[&str]) {
    let mut line = head;
    if line.len() + 1 >= HELP_COLUMN {
        out.push_str(&line);
        out.push('\n');
        line = String::new();
    }
    let mut fresh = true;
    for word in words {
        if !fresh && line.len() + 1 + word.len() > HELP_WIDTH {
            out.push_str(line.trim_end());
            out.push('\n');
            line = String::new();
            fresh = true;
        }
        if fresh {
            line = format!("{line:HELP_COLUMN$}");
        } else {
            line.push(' ');
        }
        line.push_str(word);
        fresh = false;
    }
    out.push_str(&line);
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typed_default_changes_nothing_and_names_are_unique() {
        let mut names = std::collections::HashSet::new();
        for f in FLAGS {
            assert!(names.insert(f.name), "--{} twice", f.name);
            assert!(!f.help.is_empty(), "--{} has no help", f.name);
            if let Typed(text) = f.default {
                let mut s = Settings::default();
                f.apply(&mut s, text).unwrap();
                assert_eq!(s, Settings::default(), "--{} {text}", f.name);
            }
            // A switch ignores its (absent) value; an option with a value
            // refuses an empty one, or takes it as its default.
            if f.takes_value() {
                let mut s = Settings::default();
                if f.apply(&mut s, "").is_ok() {
                    assert_eq!(s, Settings::default(), "--{} ''", f.name);
                }
            }
        }
    }

    /// The rows of the options table in `docs/usage.md`: each row's first
    /// cell, and the row.
    fn documented() -> Vec<(Vec<String>, String)> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/usage.md");
        let text = std::fs::read_to_string(path).expect("docs/usage.md");
        text.lines()
            .filter(|l| l.starts_with("| `--"))
            .map(|row| {
                let first = row.split(" | ").next().unwrap_or("");
                let names = first
                    .split('`')
                    .filter(|w| w.starts_with("--"))
                    .map(|w| w[2..].split([' ', '=']).next().unwrap_or("").to_string())
                    .collect();
                (names, row.to_string())
            })
            .collect()
    }

    #[test]
    fn docs_list_every_serving_flag_with_its_default() {
        let rows = documented();
        for f in FLAGS.iter().filter(|f| f.audience == Audience::Everyone) {
            let row = rows
                .iter()
                .find(|(names, _)| names.iter().any(|n| n == f.name))
                .map(|(_, row)| row)
                .unwrap_or_else(|| panic!("docs/usage.md has no row for --{}", f.name));
            if let Typed(default) = f.default {
                assert!(
                    row.contains(default),
                    "the row of --{} does not say its default {default}: {row}",
                    f.name
                );
            }
        }
        // The other way round (every documented flag exists, `tools`' and
        // `--help` included) is checked by tests/docs/check_docs.py.
    }

    #[test]
    fn help_lines_fit_and_every_shown_flag_is_in_it() {
        let help = options_help();
        for line in help.lines() {
            assert!(line.len() <= HELP_WIDTH, "too long: {line}");
        }
        for f in FLAGS {
            let shown = help.contains(&format!("--{} ", f.name))
                || help.contains(&format!("--{}\n", f.name));
            assert_eq!(shown, f.audience == Audience::Everyone, "--{}", f.name);
        }
        assert!(help.contains(
            "      --call-timeout <seconds>  fail a tool call that runs longer than this (0\n"
        ));
        assert!(
            help.contains("      --max-sessions-per-owner <n>\n"),
            "{help}"
        );
    }
}
