//! The OAuth 2.1 resource server over HTTP: `OAuthFront` holds the
//! settings, the issuer's keys and the one JWKS fetch in flight; the guard
//! checks each request of a guarded route (`protocol::oauth::validate`),
//! and the metadata endpoints serve RFC 9728's document.
//!
//! Keys are fetched lazily, on the first token, again when a token names a
//! key not held (at most once per [`MIN_REFETCH`]), and again once they are
//! older than `--oauth-jwks-max-age` (so a key the issuer withdrew stops
//! being trusted). A request whose key is being fetched is parked: its
//! connection is held busy until the fetch ends, then the request is judged
//! again (without another fetch); a failed refresh keeps the old keys.
//! The fetch is an outbound HTTP/1.1 GET on a non-blocking socket in the
//! reactor's poll, ended at the end of the answer's body (or when the
//! server closes); a key set that cannot be fetched or parsed is a stderr
//! line, tokens are refused until one can, and the next token may try
//! again after a backoff of a second, doubling to [`MAX_BACKOFF`].
//!
//! A token once accepted is not verified again: what its check concluded
//! (its principal) is kept, keyed by the whole token, until its `exp` (with
//! the leeway) or until a new key set arrives, in a cache bounded in
//! entries and bytes (`oauth::Verified`).
//!
//! An accepted request's `Authorization` is replaced by the owner
//! (`oauth <issuer> <subject>`) before any handler sees it: sessions, tasks
//! and calls are owned by the subject, and the token goes no further.

use std::io::{self, Read, Write};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mio::net::TcpStream;
use mio::{Interest, Registry, Token};

use super::HttpFront;
use crate::edge::cli::oauth::{JwksSource, OAuthConfig};
use crate::edge::log;
use crate::edge::reactor::{Source, Sources, StartError};
use crate::protocol::http::{bearer_ok, Answer, Headers, Request};
use crate::protocol::log::Untrusted;
use crate::protocol::mcp::{CallRequest, Catalog, Program};
use crate::protocol::oauth::{self, fetch, CommandKey, Jwks, Refusal, Verdict};

/// The endpoints of the metadata document (RFC 9728 §3, §3.1).
pub(super) const METADATA: &str = oauth::METADATA_PATH;
pub(super) const METADATA_MCP: &str = "/.well-known/oauth-protected-resource/mcp";

/// The least time between two fetches of the keys for unknown key ids (and
/// between two tries after a failed first fetch).
const MIN_REFETCH: Duration = Duration::from_secs(60);
/// How long a fetch may take, connecting included.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest wait before another try after failed fetches (the first
/// waits a second, each further one twice as long).
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The resource server's state, owned by `HttpFront`.
pub(super) struct OAuthFront {
    config: oauth::Config,
    source: JwksSource,
    keys: Option<Jwks>,
    /// When the keys were last fetched or tried.
    tried: Option<Instant>,
    /// When the keys were last fetched again for an unknown key id.
    refetched: Option<Instant>,
    /// When the keys held were fetched (or read).
    fetched: Option<Instant>,
    /// Keys older than this are fetched again before use.
    max_age: Duration,
    /// Fetches failed in a row since the last good one.
    failures: u32,
    /// What accepted tokens concluded, until they expire or the keys change.
    verified: oauth::Verified,
    fetch: Option<Fetch>,
    /// Requests waiting for the fetch, with their connections.
    parked: Vec<(Token, Request)>,
}

/// A JWKS fetch in flight.
struct Fetch {
    stream: TcpStream,
    token: Token,
    request: Vec<u8>,
    written: usize,
    response: Vec<u8>,
    deadline: Instant,
}

impl OAuthFront {
    /// The resource server for `config`, serving `/mcp` at `canonical`. A
    /// key file is read now: one that cannot be read or parsed stops the
    /// start, and so does an `--oauth-tool-scopes` naming no command of
    /// `catalog` (or several).
    pub(super) fn new(
        config: OAuthConfig,
        canonical: String,
        catalog: &Catalog,
    ) -> Result<OAuthFront, StartError> {
        let mut tool_scopes: Vec<(CommandKey, Vec<String>)> = Vec::new();
        for (name, scopes) in &config.tool_scopes {
            let (module, command) = catalog
                .command_named(name)
                .map_err(|e| StartError(format!("--oauth-tool-scopes {name}: {e}")))?;
            let key = CommandKey { module, command };
            match tool_scopes.iter_mut().find(|(k, _)| *k == key) {
                Some((_, held)) => {
                    for scope in scopes {
                        if !held.contains(scope) {
                            held.push(scope.clone());
                        }
                    }
                }
                None => tool_scopes.push((key, scopes.clone())),
            }
        }
        let max_age = config.jwks_max_age;
        let fetched = matches!(config.jwks, JwksSource::File(_)).then(Instant::now);
        let keys = match &config.jwks {
            JwksSource::File(path) => Some(read_file(path).map_err(StartError)?),
            JwksSource::Url(_) => None,
        };
        Ok(OAuthFront {
            config: oauth::Config {
                issuer: config.issuer,
                audience: config.audience.unwrap_or_else(|| canonical.clone()),
                resource: canonical,
                scopes: config.scopes,
                tool_scopes,
            },
            source: config.jwks,
            keys,
            tried: None,
            refetched: None,
            fetched,
            max_age,
            failures: 0,
            verified: oauth::Verified::default(),
            fetch: None,
            parked: Vec::new(),
        })
    }

    pub(super) fn audience(&self) -> &str {
        &self.config.audience
    }

    /// When the fetch in flight times out.
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.fetch.as_ref().map(|f| f.deadline)
    }

    /// How long to wait after the last try before another: the backoff
    /// after failed fetches, else `MIN_REFETCH`.
    fn retry_wait(&self) -> Duration {
        match self.failures {
            0 => MIN_REFETCH,
            n => Duration::from_secs(1 << (n - 1).min(5)).min(MAX_BACKOFF),
        }
    }

    /// Whether the keys may be fetched now for a token whose key is not
    /// held: after failed fetches, once the backoff has passed; else the
    /// first time, and for unknown key ids at most once per `MIN_REFETCH`.
    fn may_fetch(&self, now: Instant) -> bool {
        let since =
            |t: Option<Instant>, wait: Duration| t.is_none_or(|t| now.duration_since(t) >= wait);
        match (self.failures, &self.keys) {
            (1.., _) => since(self.tried, self.retry_wait()),
            (0, None) => since(self.tried, MIN_REFETCH),
            (0, Some(_)) => since(self.refetched, MIN_REFETCH),
        }
    }

    /// Whether the keys held are older than `max_age` and may be fetched
    /// again now (after a failed try, once its backoff has passed, or
    /// `max_age` if shorter; the old keys serve meanwhile).
    fn stale(&self, now: Instant) -> bool {
        let older =
            |t: Option<Instant>, age: Duration| t.is_none_or(|t| now.duration_since(t) >= age);
        self.keys.is_some()
            && self.fetched.is_some()
            && older(self.fetched, self.max_age)
            && older(self.tried, self.max_age.min(self.retry_wait()))
    }

    /// Takes a new key set: what tokens concluded under the old one is
    /// forgotten (a key may have left).
    fn take_keys(&mut self, keys: Jwks, now: Instant) {
        self.keys = Some(keys);
        self.fetched = Some(now);
        self.failures = 0;
        self.verified.clear();
    }

    /// Judges `authorization`: a token accepted before and still within its
    /// time is not verified again; one accepted now is remembered.
    fn judge(&mut self, authorization: Option<&str>) -> Verdict {
        let now = unix_now();
        let token = oauth::bearer(authorization);
        if let Some(principal) = token.and_then(|t| self.verified.get(t, now)) {
            return Verdict::Accepted(principal.clone());
        }
        let verdict = oauth::validate(&self.config, self.keys.as_ref(), authorization, now);
        if let (Some(token), Verdict::Accepted(principal)) = (token, &verdict) {
            self.verified.insert(token, principal.clone());
        }
        verdict
    }

    /// The 401/403 answering `refusal`.
    fn refuse(&self, refusal: &Refusal, mut headers: Headers, keep_alive: bool) -> Answer {
        let (status, challenge) = oauth::challenge(&self.config, refusal);
        headers.push(("WWW-Authenticate".into(), challenge));
        let message = match status {
            403 => "forbidden: insufficient scope",
            _ => "unauthorized",
        };
        Answer::error(status, headers, message, keep_alive)
    }
}

/// Reads and parses a key file.
fn read_file(path: &std::path::Path) -> Result<Jwks, String> {
    let text = std::fs::read(path)
        .map_err(|e| format!("cannot read the JWKS file {}: {e}", path.display()))?;
    Jwks::parse(&text).map_err(|e| format!("the JWKS file {}: {e}", path.display()))
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// What the guard decided about a request.
pub(super) enum Guard {
    Pass,
    Refuse(Answer),
    /// Waiting for the keys, its connection held; `fetch`: the caller
    /// starts the fetch ([`HttpFront::start_fetch`]).
    Parked {
        fetch: bool,
    },
}

/// Requests that waited for the keys, to be judged again now.
pub(super) type Parked = Vec<(Token, Request)>;

impl HttpFront {
    /// Under OAuth, the owner of the requests on `token` (a session made
    /// by one subject is unknown to the others).
    pub(super) fn oauth_owner(&self, token: Token) -> Option<String> {
        self.oauth.as_ref().map(|_| self.owner_of(token))
    }

    /// The refusal of a request whose head is complete and carries no
    /// bearer token at all, before its body is read.
    pub(super) fn oauth_head(&self, head: &Request, cors: Headers) -> Option<Answer> {
        let oauth = self.oauth.as_ref()?;
        let auth = head.header("authorization");
        if oauth::bearer(auth).is_some() {
            return None;
        }
        Some(oauth.refuse(&Refusal::Missing, cors, head.keep_alive))
    }

    /// Judges a complete request to a guarded route under OAuth. The
    /// static token (`--auth-token`), if set, is accepted too. `may_fetch`:
    /// a token naming a key not held may park the request for a fetch.
    pub(super) fn oauth_guard(
        &mut self,
        token: Token,
        req: &mut Request,
        cors: &Headers,
        may_fetch: bool,
    ) -> Guard {
        let Some(oauth) = self.oauth.as_mut() else {
            return Guard::Pass;
        };
        let auth = req.header("authorization");
        if self.checks.token().is_some_and(|t| bearer_ok(auth, t)) {
            if let Some(conn) = self.conns.get_mut(&token) {
                conn.set_principal(None);
            }
            return Guard::Pass;
        }
        let now = Instant::now();
        // Keys past their age are fetched again first, as for an unknown key.
        let stale = may_fetch && oauth.stale(now);
        let mut verdict = if stale {
            Verdict::UnknownKey
        } else {
            oauth.judge(auth)
        };
        let fetch_due = may_fetch && (stale || oauth.may_fetch(now));
        if verdict == Verdict::UnknownKey && fetch_due {
            if let JwksSource::File(path) = &oauth.source {
                // A file is read again at once.
                if oauth.keys.is_some() {
                    oauth.refetched = Some(now);
                }
                oauth.tried = Some(now);
                match read_file(path) {
                    Ok(keys) => oauth.take_keys(keys, now),
                    Err(e) => log::warn(&format!("OAuth: {e}; keeping the keys held")),
                }
                verdict = oauth.judge(auth);
            }
        }
        let by_url = matches!(oauth.source, JwksSource::Url(_));
        match verdict {
            Verdict::Accepted(principal) => {
                let owner = principal.owner();
                req.headers.set("authorization", &owner);
                if let Some(conn) = self.conns.get_mut(&token) {
                    conn.set_principal(Some(principal));
                }
                Guard::Pass
            }
            Verdict::Refused(refusal) => {
                Guard::Refuse(oauth.refuse(&refusal, cors.clone(), req.keep_alive))
            }
            Verdict::UnknownKey if by_url && (may_fetch && oauth.fetch.is_some() || fetch_due) => {
                let keep_alive = req.keep_alive;
                oauth.parked.push((token, std::mem::take(req)));
                let fetch = oauth.fetch.is_none();
                self.hold(token, keep_alive);
                Guard::Parked { fetch }
            }
            Verdict::UnknownKey => {
                let why = if oauth.keys.is_none() {
                    "the issuer's keys cannot be fetched"
                } else {
                    "unknown key id"
                };
                let refusal = Refusal::Invalid(why.into());
                Guard::Refuse(oauth.refuse(&refusal, cors.clone(), req.keep_alive))
            }
        }
    }

    /// The 403 for a tool call whose tool (of `catalog`) needs scopes the
    /// request's token lacks (the global ones were checked by the guard).
    pub(super) fn oauth_tool_refusal(
        &self,
        catalog: &Catalog,
        token: Token,
        call: &CallRequest,
        cors: &Headers,
        keep_alive: bool,
    ) -> Option<Answer> {
        let oauth = self.oauth.as_ref()?;
        let principal = self.conns.get(&token)?.principal()?;
        let program = catalog.programs.get(call.program)?;
        // The tool called: a `_render` projection runs another command,
        // whose own tool may need other scopes (or none).
        let tool = program.surface.tools.get(call.tool)?;
        let key = command_key(program, tool.command);
        // The flag's scopes and the tools file's: a call needs both.
        let mut all = oauth.config.scopes.clone();
        for scope in oauth.config.tool_needs(&key).iter().chain(&tool.scopes) {
            if !all.contains(scope) {
                all.push(scope.clone());
            }
        }
        if principal.lacks(&all).is_empty() {
            return None;
        }
        Some(oauth.refuse(&Refusal::Insufficient(all), cors.clone(), keep_alive))
    }

    /// Starts fetching the keys from their URL, its socket watched in
    /// `registry` under a token of `sources`; on failure to start, ends the
    /// fetch at once and returns the parked requests.
    pub(super) fn start_fetch(&mut self, registry: &Registry, sources: &mut Sources) -> Parked {
        let Some(oauth) = self.oauth.as_mut() else {
            return Vec::new();
        };
        let JwksSource::Url(url) = &oauth.source else {
            return Vec::new();
        };
        let now = Instant::now();
        if oauth.keys.is_some() {
            oauth.refetched = Some(now);
        }
        oauth.tried = Some(now);
        let url = url.clone();
        let mut stream = match TcpStream::connect(url.addr) {
            Ok(s) => s,
            Err(e) => {
                return oauth.end_fetch(Err(format!("cannot connect: {e}")), registry, sources)
            }
        };
        let token = sources.add(Source::Jwks);
        let interest = Interest::READABLE | Interest::WRITABLE;
        if let Err(e) = registry.register(&mut stream, token, interest) {
            sources.remove(&token);
            let why = format!("cannot watch the socket: {e}");
            return oauth.end_fetch(Err(why), registry, sources);
        }
        oauth.fetch = Some(Fetch {
            stream,
            token,
            request: url.request(),
            written: 0,
            response: Vec::new(),
            deadline: now + FETCH_TIMEOUT,
        });
        Vec::new()
    }

    /// An event on the fetch's socket: write the request, read the answer;
    /// once it is whole (or failed) the fetch ends, and the requests that
    /// waited for it are returned.
    pub(super) fn jwks_event(&mut self, registry: &Registry, sources: &mut Sources) -> Parked {
        let Some(oauth) = self.oauth.as_mut() else {
            return Vec::new();
        };
        match oauth.fetch.as_mut().and_then(Fetch::advance) {
            Some(result) => oauth.end_fetch(result, registry, sources),
            None => Vec::new(),
        }
    }

    /// A fetch past its deadline ends as failed.
    pub(super) fn jwks_timers(
        &mut self,
        now: Instant,
        registry: &Registry,
        sources: &mut Sources,
    ) -> Parked {
        match self.oauth.as_mut() {
            Some(oauth) if oauth.deadline().is_some_and(|d| d <= now) => {
                oauth.end_fetch(Err("timed out".into()), registry, sources)
            }
            _ => Vec::new(),
        }
    }

    /// `GET /.well-known/oauth-protected-resource[/mcp]`: the metadata
    /// document of the tools of `catalog`, or 404 when OAuth is off.
    pub(super) fn oauth_metadata(&self, catalog: &Catalog, keep_alive: bool) -> Answer {
        let Some(oauth) = self.oauth.as_ref() else {
            return Answer::error(404, Vec::new(), "not found", keep_alive);
        };
        // Scopes named by the tools files are supported too.
        let mut config = oauth.config.clone();
        for program in &catalog.programs {
            for tool in program
                .surface
                .tools
                .iter()
                .filter(|t| !t.scopes.is_empty())
            {
                config
                    .tool_scopes
                    .push((command_key(program, tool.command), tool.scopes.clone()));
            }
        }
        let doc = oauth::metadata(&config, &catalog.server_name);
        Answer {
            status: 200,
            // Public, and read by browser-based clients from other origins.
            headers: vec![
                ("Access-Control-Allow-Origin".to_string(), "*".to_string()),
                ("Cache-Control".to_string(), "max-age=300".to_string()),
            ],
            body: serde_json::to_vec(&doc).unwrap_or_default(),
            keep_alive,
        }
    }

    /// Why `program` cannot replace the live program `old` of `catalog` (a
    /// reload): a command `--oauth-tool-scopes` is bound to would be gone,
    /// and its tool would answer without the scopes. `None` when it may.
    pub(in crate::edge::reactor) fn oauth_unbound(
        &self,
        catalog: &Catalog,
        old: usize,
        program: &Program,
    ) -> Option<String> {
        let oauth = self.oauth.as_ref()?;
        let old_module = &catalog.programs.get(old)?.loaded.manifest.name;
        let manifest = &program.loaded.manifest;
        let lost = oauth.config.tool_scopes.iter().find(|(key, _)| {
            key.module == *old_module
                && (manifest.name != key.module
                    || !manifest
                        .commands
                        .iter()
                        .any(|c| !c.internal && c.name == key.command))
        })?;
        Some(format!(
            "--oauth-tool-scopes is bound to command '{}', which the new build lacks",
            lost.0
        ))
    }
}

impl OAuthFront {
    /// Ends the fetch: keeps the keys it brought (or says why not), and
    /// returns the parked requests, to be judged again.
    fn end_fetch(
        &mut self,
        result: Result<Jwks, String>,
        registry: &Registry,
        sources: &mut Sources,
    ) -> Parked {
        if let Some(mut fetch) = self.fetch.take() {
            let _ = registry.deregister(&mut fetch.stream);
            sources.remove(&fetch.token);
        }
        let url = match &self.source {
            JwksSource::Url(u) => format!("http://{}{}", u.host, u.path),
            JwksSource::File(p) => p.display().to_string(),
        };
        match result {
            Ok(keys) => self.take_keys(keys, Instant::now()),
            Err(e) => {
                self.failures = self.failures.saturating_add(1);
                let wait = self.retry_wait().as_secs();
                log::warn(&format!(
                    "OAuth: cannot fetch the JWKS from {}: {e}; tokens it would verify are refused until it can be fetched (the next token tries again after {wait} s)",
                    Untrusted(&url)
                ))
            }
        }
        std::mem::take(&mut self.parked)
    }
}

impl Fetch {
    /// Writes the request and reads the answer as far as the socket
    /// allows: `Some` once the fetch is over (the key set, or why not).
    fn advance(&mut self) -> Option<Result<Jwks, String>> {
        if let Ok(Some(e)) | Err(e) = self.stream.take_error() {
            return Some(Err(e.to_string()));
        }
        while self.written < self.request.len() {
            match self.stream.write(&self.request[self.written..]) {
                Ok(n) => self.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
                Err(e) if e.kind() == io::ErrorKind::NotConnected => return None,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Some(Err(e.to_string())),
            }
        }
        let mut buf = [0u8; 16 * 1024];
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => return Some(answer(&self.response)),
                Ok(n) => {
                    self.response.extend_from_slice(&buf[..n]);
                    if self.response.len() > fetch::MAX_RESPONSE {
                        return Some(Err("the response is too long".into()));
                    }
                    // Whole at the end of its body, though the server may
                    // keep the connection open.
                    if fetch::complete(&self.response) {
                        return Some(answer(&self.response));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Some(Err(e.to_string())),
            }
        }
    }
}

/// What scopes are bound to for command `index` of `program`.
fn command_key(program: &Program, index: usize) -> CommandKey {
    CommandKey {
        module: program.loaded.manifest.name.clone(),
        command: program.command(index).name.clone(),
    }
}

/// The key set in a fetched response.
fn answer(response: &[u8]) -> Result<Jwks, String> {
    let (status, body) = fetch::response(response)?;
    if status != 200 {
        return Err(format!("HTTP status {status}"));
    }
    Jwks::parse(&body)
}
