//! The HTTP request headers of MCP 2026-07-28 that mirror body fields
//! (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`), checked against the
//! body they claim to describe.
//!
//! Intermediaries may route on these headers, so a server that executes the
//! body must refuse a request whose headers say something else (`400` with
//! `HeaderMismatch`, `-32020`). Header values arrive trimmed of surrounding
//! blanks (RFC 9110 §5.5) and are compared case-sensitively; `Mcp-Name` may
//! carry its value Base64-encoded as `=?base64?…?=`, which is decoded before
//! the comparison. [`is_modern_post`] decides, once per request, which era
//! an HTTP `POST` speaks.
//!
//! Architecture Invariant: pure; no I/O.

use serde_json::Value as Json;

use crate::protocol::jsonrpc::{self, ErrorCode, Incoming, RequestId};

use super::era;
use super::identity::VERSION_KEY;

/// Whether a message POSTed over HTTP is served under the modern rules,
/// from its body (`era::is_modern`) and its headers: `in_session` when it
/// carries an `Mcp-Session-Id`, `version` its `MCP-Protocol-Version`. A
/// modern version header without a session makes any message modern, even
/// a request missing its `_meta` (which is then `-32602`).
pub fn is_modern_post(msg: &Incoming, version: Option<&str>, in_session: bool) -> bool {
    let modern_header = version.is_some_and(|v| era::MODERN_VERSIONS.contains(&v));
    match msg {
        Incoming::Request { method, params, .. } => {
            era::is_modern(method, params.as_ref(), in_session) || (modern_header && !in_session)
        }
        Incoming::Notification { .. } | Incoming::Invalid(_) | Incoming::Empty => {
            modern_header && !in_session
        }
        Incoming::Response => false,
    }
}

/// The methods whose `Mcp-Name` header is required, with the body field it
/// mirrors.
fn name_field(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        // The Tasks extension routes by task.
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}

/// Checks the mirrored headers of a modern request; `header` looks a header
/// up by name (any case). `Err` is the complete `-32020` error response.
pub fn check<'h>(
    id: &RequestId,
    method: &str,
    params: Option<&Json>,
    header: &dyn Fn(&str) -> Option<&'h str>,
) -> Result<(), Json> {
    let declared = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(VERSION_KEY))
        .and_then(Json::as_str)
        .unwrap_or("");
    let named = name_field(method).map(|field| {
        let body = params.and_then(|p| p.get(field)).and_then(Json::as_str);
        (field, body)
    });
    check_fields(id, method, declared, named, header)
}

/// [`check`] for a plain `tools/call` read in place: `version` its
/// `_meta` version, `name` its `params.name`.
pub fn check_call<'h>(
    id: &RequestId,
    version: &str,
    name: Option<&str>,
    header: &dyn Fn(&str) -> Option<&'h str>,
) -> Result<(), Json> {
    check_fields(id, "tools/call", version, Some(("name", name)), header)
}

/// [`check`] on the body's fields: its declared version, its method, and
/// (for a method routed by name) the name field and its string value.
fn check_fields<'h>(
    id: &RequestId,
    method: &str,
    declared: &str,
    named: Option<(&str, Option<&str>)>,
    header: &dyn Fn(&str) -> Option<&'h str>,
) -> Result<(), Json> {
    let mismatch = |message: String| {
        Err(jsonrpc::error_response(
            Some(id),
            ErrorCode::HeaderMismatch,
            &format!("header mismatch: {message}"),
        ))
    };
    match header("mcp-protocol-version") {
        None => return mismatch("missing MCP-Protocol-Version header".into()),
        Some(v) if v != declared => {
            return mismatch(format!(
                "MCP-Protocol-Version header value '{v}' does not match body value '{declared}'"
            ))
        }
        Some(_) => {}
    }
    match header("mcp-method") {
        None => return mismatch("missing Mcp-Method header".into()),
        Some(v) if v != method => {
            return mismatch(format!(
                "Mcp-Method header value '{v}' does not match body value '{method}'"
            ))
        }
        Some(_) => {}
    }
    let Some((field, body)) = named else {
        return Ok(());
    };
    match (header("mcp-name"), body) {
        (None, None) => Ok(()),
        (None, Some(_)) => mismatch(format!(
            "missing Mcp-Name header (the body has params.{field})"
        )),
        (Some(raw), body) => {
            let value = match decode_value(raw) {
                Ok(v) => v,
                Err(why) => return mismatch(format!("Mcp-Name header value '{raw}' {why}")),
            };
            if Some(value.as_str()) != body {
                return mismatch(format!(
                    "Mcp-Name header value '{value}' does not match body value '{}'",
                    body.unwrap_or("(none)")
                ));
            }
            Ok(())
        }
    }
}

/// A header value as sent: literal, or `=?base64?<standard base64>?=` for
/// values that are not plain ASCII (decoded, must be UTF-8).
pub fn decode_value(raw: &str) -> Result<String, &'static str> {
    let Some(encoded) = raw
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="))
    else {
        return Ok(raw.to_string());
    };
    let bytes = base64_decode(encoded).ok_or("is not valid Base64")?;
    String::from_utf8(bytes).map_err(|_| "does not decode to UTF-8")
}

/// Standard Base64 with `=` padding; `None` for anything else.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    fn sextet(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    for (i, quad) in bytes.chunks(4).enumerate() {
        let last = i + 1 == bytes.len() / 4;
        let pad = quad.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n = 0u32;
        for &c in &quad[..4 - pad] {
            n = n << 6 | sextet(c)?;
        }
        n <<= 6 * pad as u32;
        let decoded = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        // Non-zero bits under the padding mean a non-canonical encoding.
        if decoded[3 - pad..].iter().any(|&b| b != 0) {
            return None;
        }
        out.extend_from_slice(&decoded[..3 - pad]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::mcp::base64;
    use serde_json::json;

    #[test]
    fn the_era_of_a_post_comes_from_its_body_and_headers() {
        let meta = |v: &str| json!({"_meta": {VERSION_KEY: v}});
        let request = |method: &str, params: Option<Json>| Incoming::Request {
            id: RequestId::Int("1".into()),
            method: method.into(),
            params,
        };
        let modern = era::MODERN_VERSIONS[0];
        let legacy = era::LEGACY_VERSIONS[0];
        let cases = [
            // (message, version header, in a session, modern)
            (request("tools/list", None), None, false, false),
            (request("tools/list", Some(meta(modern))), None, false, true),
            (request("server/discover", None), None, false, true),
            // The header alone makes a sessionless message modern ...
            (request("tools/list", None), Some(modern), false, true),
            (Incoming::Empty, Some(modern), false, true),
            // ... but not one inside a legacy session, nor a legacy header.
            (request("tools/list", None), Some(modern), true, false),
            (request("tools/list", None), Some(legacy), false, false),
            // In a session, a legacy `_meta` version stays legacy.
            (request("initialize", Some(meta(legacy))), None, true, false),
            (request("initialize", Some(meta(legacy))), None, false, true),
            (Incoming::Response, Some(modern), false, false),
        ];
        for (msg, version, in_session, expected) in cases {
            let got = is_modern_post(&msg, version, in_session);
            assert_eq!(got, expected, "{msg:?} {version:?} {in_session}");
        }
    }

    #[track_caller]
    fn check_headers(method: &str, params: Json, headers: &[(&str, &str)], ok: bool) {
        let lookup = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| *v)
        };
        let id = RequestId::Int("1".into());
        let got = check(&id, method, Some(&params), &lookup);
        // A call read in place is checked the same from its parts.
        let version = params["_meta"][VERSION_KEY].as_str();
        if let (Some(version), "tools/call") = (version, method) {
            let name = params["name"].as_str();
            assert_eq!(check_call(&id, version, name, &lookup), got, "{headers:?}");
        }
        match (got, ok) {
            (Ok(()), true) => {}
            (Err(reply), false) => assert_eq!(jsonrpc::error_code(&reply), Some(-32020)),
            (got, _) => panic!("{method} {headers:?}: got {got:?}"),
        }
    }

    #[test]
    fn mirrored_headers_must_match_the_body() {
        let list = json!({"_meta": {VERSION_KEY: "2026-07-28"}});
        let call = json!({"name": "add", "_meta": {VERSION_KEY: "2026-07-28"}});
        let v = ("MCP-Protocol-Version", "2026-07-28");
        check_headers(
            "tools/list",
            list.clone(),
            &[v, ("Mcp-Method", "tools/list")],
            true,
        );
        check_headers(
            "tools/list",
            list.clone(),
            &[v, ("mcp-method", "tools/list")],
            true,
        );
        check_headers("tools/list", list.clone(), &[v], false);
        check_headers(
            "tools/list",
            list.clone(),
            &[v, ("Mcp-Method", "TOOLS/LIST")],
            false,
        );
        check_headers(
            "tools/list",
            list.clone(),
            &[v, ("Mcp-Method", "prompts/list")],
            false,
        );
        check_headers(
            "tools/list",
            list.clone(),
            &[("Mcp-Method", "tools/list")],
            false,
        );
        check_headers(
            "tools/list",
            list,
            &[
                ("MCP-Protocol-Version", "2025-11-25"),
                ("Mcp-Method", "tools/list"),
            ],
            false,
        );
        let m = ("Mcp-Method", "tools/call");
        check_headers(
            "tools/call",
            call.clone(),
            &[v, m, ("Mcp-Name", "add")],
            true,
        );
        check_headers(
            "tools/call",
            call.clone(),
            &[v, m, ("Mcp-Name", "=?base64?YWRk?=")],
            true,
        );
        check_headers(
            "tools/call",
            call.clone(),
            &[v, m, ("Mcp-Name", "=?base64?YWR?=")],
            false,
        );
        check_headers(
            "tools/call",
            call.clone(),
            &[v, m, ("Mcp-Name", "sub")],
            false,
        );
        check_headers("tools/call", call, &[v, m], false);
    }

    #[test]
    fn base64_round_trips_and_rejects_junk() {
        for text in ["", "f", "fo", "foo", "foob", "Hello, 世界", " padded "] {
            assert_eq!(
                base64_decode(&base64(text.as_bytes())).as_deref(),
                Some(text.as_bytes())
            );
        }
        for bad in ["Zg=", "Zg===", "Z===", "Zh==", "Zg==Zg==", "Zm9v!", "Zm 9v"] {
            assert_eq!(base64_decode(bad), None, "{bad}");
        }
    }
}
