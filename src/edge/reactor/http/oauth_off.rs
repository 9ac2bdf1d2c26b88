//! The OAuth resource server's stand-in in a build without the `oauth`
//! feature (`cargo build --no-default-features`): no resource server can be set up
//! (the command line refuses `--oauth-*` already), so every request passes
//! and the metadata endpoints answer 404. The same names as `oauth.rs`, so
//! callers need no `cfg`; none of that module's code is linked in.

use std::time::Instant;

use mio::Token;

use super::HttpFront;
use crate::edge::cli::oauth::OAuthConfig;
use crate::edge::reactor::{Reactor, StartError};
use crate::protocol::http::{json_error, Answer, Headers, Request};
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
    Parked,
}

impl HttpFront {
    pub(super) fn oauth_owner(&self, _: Token) -> Option<String> {
        None
    }

    pub(super) fn oauth_head(&self, _: &Request, _: Headers) -> Option<Answer> {
        None
    }
}

impl Reactor {
    pub(super) fn oauth_guard(&mut self, _: Token, _: &mut Request, _: &Headers, _: bool) -> Guard {
        Guard::Pass
    }

    pub(super) fn oauth_tool_refusal(
        &self,
        _: Token,
        _: &CallRequest,
        _: &Headers,
        _: bool,
    ) -> Option<Answer> {
        None
    }

    pub(in crate::edge::reactor) fn jwks_event(&mut self) {}

    pub(in crate::edge::reactor) fn oauth_unbound(&self, _: usize, _: &Program) -> Option<String> {
        None
    }

    pub(super) fn jwks_timers(&mut self, _: Instant) {}

    pub(super) fn http_oauth_metadata(&mut self, token: Token, req: Request, _: Headers) {
        self.respond(token, 404, &[], &json_error("not found"), req.keep_alive);
    }
}
