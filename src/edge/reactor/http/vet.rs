//! The checks an HTTP request passes before it is handled (Host, Origin,
//! CORS preflight, bearer token, path, method), the small JSON error bodies
//! of the responses that refuse it, and the connection caps (with the 503 for
//! a connection over one).

use super::*;

/// A request answered before its body matters: a check failed, or a
/// preflight.
pub(super) struct Early {
    pub(super) status: u16,
    pub(super) headers: Vec<(String, String)>,
    pub(super) body: Vec<u8>,
    pub(super) keep_alive: bool,
}

fn owned(headers: &[(&str, &str)]) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The checks that depend only on a request's head, in order: Host, Origin,
/// CORS preflight, bearer token, path, method. `Ok` carries the CORS headers
/// for the response; the method is then POST or DELETE. Used again before
/// as soon as a head is complete, so a refused request's body is never read.
pub(super) fn vet(front: &HttpFront, req: &Request) -> Result<Vec<(String, String)>, Early> {
    let keep_alive = req.keep_alive;
    let early = |status, headers, message: &str, keep_alive| Early {
        status,
        headers,
        body: json_error(message),
        keep_alive,
    };
    let origin = req.header("origin");
    // An absolute-form target names the host itself (RFC 9112 §3.2.2); it is
    // checked like the Host header, which it overrides.
    let authority = ["http://", "https://"]
        .iter()
        .find_map(|scheme| req.target.strip_prefix(scheme))
        .map(|rest| rest.split(['/', '?', '#']).next().unwrap_or(""));
    if authority.is_some_and(|a| !front.policy.host_ok(Some(a))) {
        let msg = format!(
            "forbidden: '{}' is not a name of this server",
            authority.unwrap_or("")
        );
        return Err(early(403, Vec::new(), &msg, false));
    }
    if !front.policy.host_ok(req.header("host")) {
        let msg = format!(
            "forbidden: Host '{}' is not a name of this server",
            req.header("host").unwrap_or("")
        );
        return Err(early(403, Vec::new(), &msg, false));
    }
    if !front.policy.origin_ok(origin) {
        let msg = format!(
            "forbidden: Origin '{}' is not allowed",
            origin.unwrap_or("")
        );
        return Err(early(403, Vec::new(), &msg, keep_alive));
    }
    let cors = origin
        .map(|o| owned(&http::cors_headers(o)))
        .unwrap_or_default();
    if req.method == "OPTIONS" {
        let headers = match origin {
            Some(o) => owned(&http::cors_preflight_headers(o)),
            None => vec![("Allow".into(), "POST, DELETE, OPTIONS".into())],
        };
        return Err(Early {
            status: 204,
            headers,
            body: Vec::new(),
            keep_alive,
        });
    }
    if let Some(expected) = &front.token {
        if !http::bearer_ok(req.header("authorization"), expected) {
            let mut headers = cors;
            headers.push((
                "WWW-Authenticate".into(),
                "Bearer realm=\"morloc-mcp\"".into(),
            ));
            return Err(early(401, headers, "unauthorized", keep_alive));
        }
    }
    if req.path != "/mcp" {
        return Err(early(404, cors, "not found", keep_alive));
    }
    if req.method != "POST" && req.method != "DELETE" {
        let mut headers = cors;
        headers.push(("Allow".into(), "POST, DELETE, OPTIONS".into()));
        return Err(early(405, headers, "method not allowed", keep_alive));
    }
    Ok(cors)
}

pub(super) fn json_error(message: &str) -> Vec<u8> {
    let mut m = serde_json::Map::new();
    m.insert("error".into(), Json::String(message.into()));
    serde_json::to_vec(&Json::Object(m)).unwrap_or_default()
}

/// Raises the soft open-file limit as far as the connection cap can use
/// (each connection may also hold a socket to a pool) and returns how many
/// connections fit under the resulting limit.
pub(super) fn connection_cap() -> usize {
    let wanted: libc::rlim_t = 2 * MAX_CONNECTIONS as libc::rlim_t + FD_RESERVE;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct we own.
    let soft = unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return MAX_CONNECTIONS;
        }
        if limit.rlim_cur >= wanted {
            wanted
        } else {
            let raised = libc::rlimit {
                rlim_cur: wanted.min(limit.rlim_max),
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                raised.rlim_cur
            } else {
                limit.rlim_cur
            }
        }
    };
    let cap = soft.saturating_sub(FD_RESERVE) / 2;
    usize::try_from(cap)
        .unwrap_or(MAX_CONNECTIONS)
        .clamp(1, MAX_CONNECTIONS)
}

/// Answers a connection over a cap with 503 and closes it.
pub(super) fn refuse(mut stream: TcpStream, message: &str) {
    let mut out = Vec::new();
    http::write_response(
        &mut out,
        503,
        Some("application/json"),
        &[("Retry-After", "1")],
        &json_error(message),
        false,
    );
    let _ = stream.write(&out);
}
