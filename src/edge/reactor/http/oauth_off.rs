//! The OAuth resource server's stand-in in a build without the `oauth`
//! feature (`cargo build --no-default-features`): no resource server can be set up
//! (the command line refuses `--oauth-*` already), so every request passes
//! and the metadata endpoints answer 404. The same names as `oauth.rs`, so
//! callers need no `cfg`; none of that module's code is linked in.

use std::time::Instant;

use mio::{Registry, Token};

use super::HttpFront;
use crate::edge::cli::oauth::OAuthConfig;
use crate::edge::reactor::{Sources, StartError};
use crate::protocol::http::{Answer, Headers, Request};
use crate::protocol::mcp::{CallRequest, Catalog, Program};

pub(super) const METADATA: &str = "/.well-known/oauth-protected-resource";
pub(super) const METADATA_MCP: &str = "/.well-known/oauth-protected-resource/mcp";

/// Never made in this build.
pub(super) enum OAuthFront {}

impl OAuthFront {
    pub(super) fn new(_: OAuthConfig, _: String, _: &Catalog) -> Result<OAuthFront, StartError> {
        Err(StartError("this build has no OAuth support".into()))
    }

    pub(super) fn audience(&self) -> &str {
        match *self {}
    }

    pub(super) fn deadline(&self) -> Option<Instant> {
        match *self {}
    }
}

#[allow(dead_code)]
pub(super) enum Guard {
    Pass,
    Refuse(Answer),
    Parked { fetch: bool },
}

pub(super) type Parked = Vec<(Token, Request)>;

impl HttpFront {
    pub(super) fn oauth_owner(&self, _: Token) -> Option<String> {
        None
    }

    pub(super) fn oauth_head(&self, _: &Request, _: Headers) -> Option<Answer> {
        None
    }

    pub(super) fn oauth_guard(&mut self, _: Token, _: &mut Request, _: &Headers, _: bool) -> Guard {
        Guard::Pass
    }

    pub(super) fn oauth_tool_refusal(
        &self,
        _: &Catalog,
        _: Token,
        _: &CallRequest,
        _: &Headers,
        _: bool,
    ) -> Option<Answer> {
        None
    }

    pub(super) fn start_fetch(&mut self, _: &Registry, _: &mut Sources) -> Parked {
        Vec::new()
    }

    pub(super) fn jwks_event(&mut self, _: &Registry, _: &mut Sources) -> Parked {
        Vec::new()
    }

    pub(super) fn jwks_timers(&mut self, _: Instant, _: &Registry, _: &mut Sources) -> Parked {
        Vec::new()
    }

    pub(super) fn oauth_metadata(&self, _: &Catalog, keep_alive: bool) -> Answer {
        Answer::error(404, Vec::new(), "not found", keep_alive)
    }

    pub(in crate::edge::reactor) fn oauth_unbound(
        &self,
        _: &Catalog,
        _: usize,
        _: &Program,
    ) -> Option<String> {
        None
    }
}
