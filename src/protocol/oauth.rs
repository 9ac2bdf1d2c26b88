//! The OAuth 2.1 resource server: access tokens (JWTs signed RS256 or
//! ES256) validated against the issuer's keys, the Protected Resource
//! Metadata document (RFC 9728), and the `WWW-Authenticate` challenges of
//! 401 and 403 answers (RFC 6750 §3).
//!
//! A token is accepted when its signature verifies with the issuer's key
//! named by its `kid`, `iss` is the issuer exactly, `aud` (a string or an
//! array) holds this server's audience, `exp` is not past and `nbf` not to
//! come (both with [`SKEW`] of leeway), it names a `sub`, and its scopes
//! include every required one. The clock is passed in.
//!
//! Pure: the keys arrive parsed (`jwks`), fetched by the caller.

use serde_json::{Map, Value as Json};

pub mod fetch;
pub mod jwks;
pub mod jwt;

pub use jwks::Jwks;

/// Leeway for `exp` and `nbf`, seconds: clocks of the issuer and this server
/// may disagree this much.
pub const SKEW: u64 = 60;

/// The path of the metadata document; the path-suffixed form (RFC 9728
/// §3.1) appends the resource's path.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// What tokens must carry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    /// `iss`, compared exactly.
    pub issuer: String,
    /// What `aud` must contain: this server's canonical URL unless set.
    pub audience: String,
    /// This server's canonical URL (its `/mcp` endpoint as clients reach
    /// it), whose metadata URL the challenges name.
    pub resource: String,
    /// Scopes every request needs.
    pub scopes: Vec<String>,
    /// Per command: the scopes a call of its tool needs, on top of
    /// `scopes`.
    pub tool_scopes: Vec<(CommandKey, Vec<String>)>,
}

/// A command as scopes are bound to it: its program's module name and its
/// name in the manifest, not the tool's advertised name, so the scopes
/// follow the command through renames (a tools file) and reloads.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CommandKey {
    pub module: String,
    pub command: String,
}

impl std::fmt::Display for CommandKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}__{}", self.module, self.command)
    }
}

impl Config {
    /// The scopes a call of command `key` needs besides the global ones.
    pub fn tool_needs(&self, key: &CommandKey) -> &[String] {
        self.tool_scopes
            .iter()
            .find(|(bound, _)| bound == key)
            .map_or(&[], |(_, s)| s.as_slice())
    }

    /// Every scope named anywhere, once each, in first-named order
    /// (`scopes_supported`).
    pub fn all_scopes(&self) -> Vec<String> {
        let mut all: Vec<String> = Vec::new();
        let named = self
            .scopes
            .iter()
            .chain(self.tool_scopes.iter().flat_map(|(_, s)| s));
        for scope in named {
            if !all.contains(scope) {
                all.push(scope.clone());
            }
        }
        all
    }
}

/// Who a valid token speaks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    pub issuer: String,
    pub subject: String,
    /// The token's scopes (`scope`, space-separated, or a `scp` array).
    pub scopes: Vec<String>,
    /// The token's `exp`: from `exp + SKEW` on, it is refused.
    pub expires: u64,
}

impl Principal {
    /// The owner of what this principal's requests create (sessions,
    /// tasks, queued calls): issuer and subject, never the token.
    pub fn owner(&self) -> String {
        format!("oauth {} {}", self.issuer, self.subject)
    }

    /// The scopes of `needed` this principal lacks.
    pub fn lacks<'s>(&self, needed: &'s [String]) -> Vec<&'s str> {
        needed
            .iter()
            .filter(|s| !self.scopes.contains(s))
            .map(String::as_str)
            .collect()
    }
}

/// Why a request was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No bearer token: 401 with the plain challenge.
    Missing,
    /// A bad token: 401 `invalid_token` with this description.
    Invalid(String),
    /// A valid token without these scopes: 403 `insufficient_scope`.
    Insufficient(Vec<String>),
}

/// What a token's check came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Accepted(Principal),
    Refused(Refusal),
    /// The token names a key not in the set held (or no set is held yet):
    /// the caller fetches the set again if it may, then checks again.
    UnknownKey,
}

fn invalid(why: impl Into<String>) -> Verdict {
    Verdict::Refused(Refusal::Invalid(why.into()))
}

/// The bearer token of an `Authorization` header value (scheme `Bearer` in
/// any case).
pub fn bearer(authorization: Option<&str>) -> Option<&str> {
    let value = authorization?.trim_matches([' ', '\t']);
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim_start_matches(' ');
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Checks the `Authorization` header value of a request against `config`,
/// with the keys held (`None`: none fetched yet) at `now` (seconds since
/// the Unix epoch).
pub fn validate(
    config: &Config,
    keys: Option<&Jwks>,
    authorization: Option<&str>,
    now: u64,
) -> Verdict {
    let Some(token) = bearer(authorization) else {
        return Verdict::Refused(Refusal::Missing);
    };
    let jws = match jwt::parse(token) {
        Ok(jws) => jws,
        Err(why) => return invalid(why),
    };
    if !jwks::ALGS.contains(&jws.alg.as_str()) {
        return invalid(format!("alg {} is not accepted", printable(&jws.alg)));
    }
    let Some(keys) = keys else {
        return Verdict::UnknownKey;
    };
    let Some(key) = keys.find(jws.kid.as_deref(), &jws.alg) else {
        return Verdict::UnknownKey;
    };
    if !key.verifies(&jws.alg, jws.signing_input, &jws.signature) {
        return invalid("signature does not verify");
    }
    let claims = &jws.claims;
    if claims.get("iss").and_then(Json::as_str) != Some(config.issuer.as_str()) {
        return invalid("wrong issuer");
    }
    let aud_ok = match claims.get("aud") {
        Some(Json::String(aud)) => *aud == config.audience,
        Some(Json::Array(auds)) => auds.iter().any(|a| a.as_str() == Some(&config.audience)),
        _ => false,
    };
    if !aud_ok {
        return invalid("token is not for this resource (aud)");
    }
    let expires = match seconds(claims, "exp") {
        Err(why) => return invalid(why),
        Ok(None) => return invalid("token has no exp"),
        Ok(Some(exp)) if now >= exp.saturating_add(SKEW) => return invalid("token expired"),
        Ok(Some(exp)) => exp,
    };
    match seconds(claims, "nbf") {
        Err(why) => return invalid(why),
        Ok(Some(nbf)) if now.saturating_add(SKEW) < nbf => {
            return invalid("token not yet valid (nbf)")
        }
        Ok(_) => {}
    }
    let subject = match claims.get("sub") {
        Some(Json::String(sub)) if !sub.is_empty() => sub.clone(),
        _ => return invalid("token has no sub"),
    };
    let principal = Principal {
        issuer: config.issuer.clone(),
        subject,
        scopes: scopes(claims),
        expires,
    };
    let lacking = principal.lacks(&config.scopes);
    if !lacking.is_empty() {
        return Verdict::Refused(Refusal::Insufficient(config.scopes.clone()));
    }
    Verdict::Accepted(principal)
}

/// At most this many accepted tokens are remembered.
pub const MAX_VERIFIED: usize = 4096;
/// At most this many bytes of remembered tokens (and their subjects and
/// scopes).
pub const MAX_VERIFIED_BYTES: usize = 4 << 20;

/// What the check of accepted tokens concluded, so a token presented again
/// is not decoded and verified again: keyed by the whole token (no hash
/// that could collide), valid until the token's `exp` (with [`SKEW`]), and
/// to be cleared by the caller whenever the key set changes (a key that
/// left must stop accepting its tokens). Bounded by [`MAX_VERIFIED`]
/// entries and [`MAX_VERIFIED_BYTES`]: past either, expired entries go
/// first, then any.
#[derive(Debug, Default)]
pub struct Verified {
    map: std::collections::HashMap<String, Principal>,
    bytes: usize,
}

impl Verified {
    /// The principal of `token` if it was accepted and has not expired at
    /// `now` (seconds since the Unix epoch).
    pub fn get(&self, token: &str, now: u64) -> Option<&Principal> {
        self.map
            .get(token)
            .filter(|p| now < p.expires.saturating_add(SKEW))
    }

    /// Remembers that `token` was accepted as `principal`.
    pub fn insert(&mut self, token: &str, principal: Principal) {
        let size = Verified::size(token, &principal);
        if size > MAX_VERIFIED_BYTES || self.map.contains_key(token) {
            return;
        }
        if self.map.len() >= MAX_VERIFIED || self.bytes + size > MAX_VERIFIED_BYTES {
            self.trim(size);
        }
        self.bytes += size;
        self.map.insert(token.to_string(), principal);
    }

    /// Forgets everything (the key set changed).
    pub fn clear(&mut self) {
        self.map.clear();
        self.bytes = 0;
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Makes room for an entry of `size` bytes: the earliest to expire go
    /// first (the expired among them).
    fn trim(&mut self, size: usize) {
        let held: Vec<(u64, String)> = self
            .map
            .iter()
            .map(|(token, p)| (p.expires, token.clone()))
            .collect();
        // Down to three quarters, so a full cache is not sorted per insert.
        let (entries, bytes) = (MAX_VERIFIED / 4 * 3, MAX_VERIFIED_BYTES / 4 * 3);
        for i in crate::format::order::order_by(&held, |(expires, _)| *expires) {
            if self.map.len() < entries && self.bytes + size <= bytes {
                break;
            }
            let token = &held[i].1;
            if let Some(p) = self.map.remove(token) {
                self.bytes -= Verified::size(token, &p);
            }
        }
    }

    fn size(token: &str, p: &Principal) -> usize {
        let scopes: usize = p.scopes.iter().map(String::len).sum();
        token.len() + p.issuer.len() + p.subject.len() + scopes + 64
    }
}

/// A NumericDate claim (seconds; a fraction is cut off).
fn seconds(claims: &Map<String, Json>, name: &str) -> Result<Option<u64>, String> {
    match claims.get(name) {
        None => Ok(None),
        Some(Json::Number(n)) => match (n.as_u64(), n.as_f64()) {
            (Some(s), _) => Ok(Some(s)),
            (None, Some(f)) if f >= 0.0 && f.is_finite() => Ok(Some(f as u64)),
            _ => Err(format!("{name} is not a valid time")),
        },
        Some(_) => Err(format!("{name} is not a number")),
    }
}

/// A token's scopes: `scope` (space-separated, RFC 9068), else `scp` (an
/// array or a string, as some issuers send).
fn scopes(claims: &Map<String, Json>) -> Vec<String> {
    let split = |s: &str| {
        s.split(' ')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    match (claims.get("scope"), claims.get("scp")) {
        (Some(Json::String(s)), _) | (None, Some(Json::String(s))) => split(s),
        (None, Some(Json::Array(a))) => a
            .iter()
            .filter_map(Json::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// `text` with anything but printable ASCII (and `"`, `\`) replaced, for a
/// quoted challenge parameter.
fn printable(text: &str) -> String {
    text.chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
                c
            } else {
                '?'
            }
        })
        .collect()
}

/// The URL of the metadata document for `resource` (RFC 9728 §3.1): the
/// well-known path inserted between its authority and its path.
pub fn metadata_url(resource: &str) -> String {
    let (scheme, rest) = resource.split_once("://").unwrap_or(("http", resource));
    let cut = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(cut);
    let path = path
        .split(['?', '#'])
        .next()
        .unwrap_or("")
        .trim_end_matches('/');
    format!("{scheme}://{authority}{METADATA_PATH}{path}")
}

/// The Protected Resource Metadata document.
pub fn metadata(config: &Config, resource_name: &str) -> Json {
    let mut doc = Map::new();
    doc.insert("resource".into(), Json::String(config.audience.clone()));
    let servers = vec![Json::String(config.issuer.clone())];
    doc.insert("authorization_servers".into(), Json::Array(servers));
    let scopes = config.all_scopes().into_iter().map(Json::String).collect();
    doc.insert("scopes_supported".into(), Json::Array(scopes));
    let methods = vec![Json::String("header".into())];
    doc.insert("bearer_methods_supported".into(), Json::Array(methods));
    doc.insert("resource_name".into(), Json::String(resource_name.into()));
    Json::Object(doc)
}

/// The `WWW-Authenticate` value and the status answering `refusal`.
pub fn challenge(config: &Config, refusal: &Refusal) -> (u16, String) {
    let meta = metadata_url(&config.resource);
    let scope = |s: &[String]| {
        if s.is_empty() {
            String::new()
        } else {
            format!(", scope=\"{}\"", printable(&s.join(" ")))
        }
    };
    match refusal {
        Refusal::Missing => (
            401,
            format!("Bearer resource_metadata=\"{meta}\"{}", scope(&config.scopes)),
        ),
        Refusal::Invalid(why) => (
            401,
            format!(
                "Bearer error=\"invalid_token\", error_description=\"{}\", resource_metadata=\"{meta}\"{}",
                printable(why),
                scope(&config.scopes)
            ),
        ),
        Refusal::Insufficient(needed) => (
            403,
            format!(
                "Bearer error=\"insufficient_scope\"{}, resource_metadata=\"{meta}\"",
                scope(needed)
            ),
        ),
    }
}

#[cfg(all(test, feature = "oauth"))]
mod tests;
