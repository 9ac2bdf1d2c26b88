//! The route table: which endpoint a request's path names, the methods it
//! allows, and whether the server's checks (Host, Origin, CORS preflight,
//! bearer token) guard it; plus those checks and the answers that refuse a
//! request (403, 401, 404, 405 with `Allow`, the 204 preflight).
//!
//! The table is generic over the handler, so the transport keeps its
//! handlers next to the paths they serve and a new endpoint is one entry.
//! The same [`admit`] runs as soon as a request's head is complete and again
//! on the whole request, so a refused request's body is never read.
//!
//! An unknown path is guarded like the guarded routes: it gets its 404 only
//! after the checks, so a stranger learns nothing about which paths exist.

use serde_json::Value as Json;

use super::parse::Request;
use super::response::{cors_headers, cors_preflight_headers, CORS_ALLOW_METHODS};
use super::security::{bearer_ok, OriginPolicy};

/// One endpoint.
#[derive(Debug)]
pub struct Route<H> {
    /// The exact path (no query string).
    pub path: &'static str,
    /// The methods it serves (an `OPTIONS` preflight is answered for
    /// guarded routes besides).
    pub methods: &'static [&'static str],
    /// Whether the Host, Origin and token checks apply. An open route
    /// (`/health`) is answered to anyone, without CORS headers.
    pub guarded: bool,
    pub handler: H,
}

impl<H> Route<H> {
    /// The `Allow` header of a `405` (and of a preflight without `Origin`).
    pub fn allow(&self) -> String {
        let mut allow = self.methods.join(", ");
        if self.guarded {
            allow.push_str(", OPTIONS");
        }
        allow
    }
}

/// Response header fields, in order.
pub type Headers = Vec<(String, String)>;

/// The route whose path is `path`.
pub fn find<'t, H>(table: &'t [Route<H>], path: &str) -> Option<&'t Route<H>> {
    table.iter().find(|r| r.path == path)
}

/// What the server's checks let through (for the transport's own values:
/// the Origin policy and the bearer token, if one is set).
pub struct Gate<'a> {
    pub policy: &'a OriginPolicy,
    pub token: Option<&'a str>,
}

/// A request answered before its handler sees it: a check failed, the path
/// or method is wrong, or a CORS preflight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub headers: Headers,
    pub body: Vec<u8>,
    pub keep_alive: bool,
}

impl Answer {
    /// An answer with a JSON `{"error": message}` body.
    pub fn error(status: u16, headers: Headers, message: &str, keep_alive: bool) -> Answer {
        Answer {
            status,
            headers,
            body: json_error(message),
            keep_alive,
        }
    }
}

/// The small JSON body of an HTTP-level error: `{"error": message}`.
pub fn json_error(message: &str) -> Vec<u8> {
    let mut m = serde_json::Map::new();
    m.insert("error".into(), Json::String(message.into()));
    serde_json::to_vec(&Json::Object(m)).unwrap_or_default()
}

/// Judges a request (its head is enough): the checks, in order Host,
/// Origin, CORS preflight, bearer token (skipped for an open route), then
/// path and method. `Ok` carries the route and the CORS headers for the
/// response.
pub fn admit<'t, H>(
    table: &'t [Route<H>],
    gate: &Gate<'_>,
    req: &Request,
) -> Result<(&'t Route<H>, Headers), Answer> {
    let route = find(table, &req.path);
    let cors = match route {
        Some(route) if !route.guarded => Vec::new(),
        _ => check(gate, route, req)?,
    };
    let keep_alive = req.keep_alive;
    let Some(route) = route else {
        return Err(Answer::error(404, cors, "not found", keep_alive));
    };
    if !route.methods.contains(&req.method.as_str()) {
        let mut headers = cors;
        headers.push(("Allow".into(), route.allow()));
        return Err(Answer::error(
            405,
            headers,
            "method not allowed",
            keep_alive,
        ));
    }
    Ok((route, cors))
}

/// The checks of a guarded route (`route`, or an unknown path): `Ok` is the
/// CORS headers for the response.
fn check<H>(gate: &Gate<'_>, route: Option<&Route<H>>, req: &Request) -> Result<Headers, Answer> {
    let keep_alive = req.keep_alive;
    let origin = req.header("origin");
    // An absolute-form target names the host itself (RFC 9112 §3.2.2); it is
    // checked like the Host header, which it overrides.
    let authority = ["http://", "https://"]
        .iter()
        .find_map(|scheme| req.target.strip_prefix(scheme))
        .map(|rest| rest.split(['/', '?', '#']).next().unwrap_or(""));
    if let Some(authority) = authority.filter(|a| !gate.policy.host_ok(Some(a))) {
        let msg = format!("forbidden: '{authority}' is not a name of this server");
        return Err(Answer::error(403, Vec::new(), &msg, false));
    }
    if !gate.policy.host_ok(req.header("host")) {
        let msg = format!(
            "forbidden: Host '{}' is not a name of this server",
            req.header("host").unwrap_or("")
        );
        return Err(Answer::error(403, Vec::new(), &msg, false));
    }
    if !gate.policy.origin_ok(origin) {
        let msg = format!(
            "forbidden: Origin '{}' is not allowed",
            origin.unwrap_or("")
        );
        return Err(Answer::error(403, Vec::new(), &msg, keep_alive));
    }
    let cors = origin.map(|o| owned(&cors_headers(o))).unwrap_or_default();
    if req.method == "OPTIONS" {
        let headers = match origin {
            Some(o) => owned(&cors_preflight_headers(o)),
            None => {
                let allow = route.map_or_else(|| CORS_ALLOW_METHODS.to_string(), Route::allow);
                vec![("Allow".into(), allow)]
            }
        };
        return Err(Answer {
            status: 204,
            headers,
            body: Vec::new(),
            keep_alive,
        });
    }
    if let Some(expected) = gate.token {
        if !bearer_ok(req.header("authorization"), expected) {
            let mut headers = cors;
            headers.push((
                "WWW-Authenticate".into(),
                "Bearer realm=\"morloc-mcp\"".into(),
            ));
            return Err(Answer::error(401, headers, "unauthorized", keep_alive));
        }
    }
    Ok(cors)
}

fn owned(headers: &[(&str, &str)]) -> Headers {
    headers
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests;
