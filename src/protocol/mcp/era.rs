//! Which revision of MCP a request speaks, and the per-request metadata of
//! the modern one.
//!
//! MCP has two eras. *Legacy* revisions (2024-11-05 to 2025-11-25) open a
//! session with `initialize`; *modern* ones (2026-07-28) are stateless and
//! carry their version, client capabilities and log level in every request's
//! `_meta`. A dual-era server tells them apart per request, as the versioning
//! page of 2026-07-28 says: a request carrying
//! `_meta["io.modelcontextprotocol/protocolVersion"]` is modern (even an
//! `initialize`: modern clients get `-32601` for it), a request of a method
//! that exists only in the modern era (`server/discover`,
//! `subscriptions/listen`) is modern too (and malformed without its `_meta`),
//! and everything else is legacy and served exactly as before. The one
//! exception keeps legacy clients safe: inside a legacy session (after
//! `initialize` on stdio, with a session id on HTTP) a request whose `_meta`
//! names a legacy revision stays legacy.
//!
//! Architecture Invariant: pure; no I/O.

use serde_json::{Map, Value as Json};

use crate::protocol::jsonrpc::{self, ErrorCode, RequestId};

use super::LOG_LEVELS;

/// Stateless revisions we serve, newest first.
pub const MODERN_VERSIONS: [&str; 1] = ["2026-07-28"];
/// Revisions negotiated through `initialize`, oldest first.
pub const LEGACY_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

pub use super::identity::{
    CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY, SERVER_INFO_KEY, SUBSCRIPTION_KEY,
    VERSION_KEY,
};

/// Methods that exist only in the modern era.
const MODERN_ONLY: [&str; 2] = ["server/discover", "subscriptions/listen"];

/// Every revision served, newest first: what `server/discover` and
/// `UnsupportedProtocolVersionError` list.
pub fn all_versions() -> Vec<&'static str> {
    let mut all: Vec<&str> = MODERN_VERSIONS.to_vec();
    all.extend(LEGACY_VERSIONS.iter().rev());
    all
}

/// Whether a request is served under the modern rules. `in_legacy_session`
/// is true when the request arrives inside a legacy session.
pub fn is_modern(method: &str, params: Option<&Json>, in_legacy_session: bool) -> bool {
    match declared_version(params) {
        Some(Json::String(v)) if in_legacy_session && LEGACY_VERSIONS.contains(&v.as_str()) => {
            false
        }
        Some(_) => true,
        None => MODERN_ONLY.contains(&method),
    }
}

/// The `_meta` protocol version field, whatever its type.
pub fn declared_version(params: Option<&Json>) -> Option<&Json> {
    params?.get("_meta")?.get(VERSION_KEY)
}

/// What a modern request says about itself in `_meta`.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestMeta {
    pub version: String,
    /// Index into [`LOG_LEVELS`]; `None`: the request wants no log messages.
    pub log_level: Option<usize>,
    /// The extensions the request declared in its capabilities
    /// (`extensions` members whose value is an object), by name.
    pub extensions: Vec<String>,
}

impl RequestMeta {
    /// Whether the request declared extension `name`.
    pub fn declares(&self, name: &str) -> bool {
        self.extensions.iter().any(|e| e == name)
    }
}

/// Checks a modern request's `_meta`: `-32602` when a required field is
/// missing or mistyped, `-32022` for a version we do not serve. The `Err`
/// is the complete error response.
pub fn request_meta(id: &RequestId, params: Option<&Json>) -> Result<RequestMeta, Json> {
    let invalid =
        |message: String| jsonrpc::error_response(Some(id), ErrorCode::InvalidParams, &message);
    let meta = match params.map(|p| p.get("_meta")) {
        Some(Some(Json::Object(meta))) => meta,
        Some(Some(other)) => {
            return Err(invalid(format!(
                "'params._meta' must be an object, got {}", crate::format::json::text(other)
            )))
        }
        _ => {
            return Err(invalid(format!(
                "missing 'params._meta': a request of MCP {} carries '{VERSION_KEY}' and '{CAPABILITIES_KEY}' in it",
                MODERN_VERSIONS[0]
            )))
        }
    };
    let version = match meta.get(VERSION_KEY) {
        Some(Json::String(v)) => v.clone(),
        None => return Err(invalid(format!("missing '_meta.{VERSION_KEY}'"))),
        Some(other) => {
            return Err(invalid(format!(
                "'_meta.{VERSION_KEY}' must be a string, got {}",
                crate::format::json::text(other)
            )))
        }
    };
    match meta.get(CAPABILITIES_KEY) {
        Some(Json::Object(_)) => {}
        None => return Err(invalid(format!("missing '_meta.{CAPABILITIES_KEY}'"))),
        Some(other) => {
            return Err(invalid(format!(
                "'_meta.{CAPABILITIES_KEY}' must be an object, got {}",
                crate::format::json::text(other)
            )))
        }
    }
    if let Some(info) = meta.get(CLIENT_INFO_KEY) {
        if !info.is_object() {
            return Err(invalid(format!(
                "'_meta.{CLIENT_INFO_KEY}' must be an object, got {}",
                crate::format::json::text(info)
            )));
        }
    }
    let log_level = match meta.get(LOG_LEVEL_KEY) {
        None => None,
        Some(level) => match level
            .as_str()
            .and_then(|l| LOG_LEVELS.iter().position(|x| *x == l))
        {
            Some(i) => Some(i),
            None => {
                return Err(invalid(format!(
                    "invalid '_meta.{LOG_LEVEL_KEY}' {}: expected one of {}",
                    crate::format::json::text(level),
                    LOG_LEVELS.join(", ")
                )))
            }
        },
    };
    if !MODERN_VERSIONS.contains(&version.as_str()) {
        return Err(unsupported_version(Some(id), &version));
    }
    Ok(RequestMeta {
        version,
        log_level,
        extensions: declared_extensions(meta),
    })
}

/// [`request_meta`] for a request whose `_meta` was read in place (each
/// key, without escapes, and its value's JSON text, in order:
/// `jsonrpc::CallLine::meta`), where [`is_modern`] gives `true` for it:
/// the meta when it holds nothing but a version served, the client's
/// capabilities and info and a known log level, each once. `None` for
/// anything else (an error to answer, a field read elsewhere such as a
/// progress token or a trace context), which the parsed `_meta` decides.
pub fn meta_in_place<'a>(
    members: impl Iterator<Item = (&'a str, &'a str)>,
    in_legacy_session: bool,
) -> Option<RequestMeta> {
    let (mut version, mut capabilities, mut info, mut level) = (None, None, None, None);
    for (key, value) in members {
        let slot = match key {
            VERSION_KEY => &mut version,
            CAPABILITIES_KEY => &mut capabilities,
            CLIENT_INFO_KEY => &mut info,
            LOG_LEVEL_KEY => &mut level,
            _ => return None,
        };
        if slot.replace(value).is_some() {
            return None;
        }
    }
    let version = plain_string(version?)?;
    if !MODERN_VERSIONS.contains(&version)
        || (in_legacy_session && LEGACY_VERSIONS.contains(&version))
    {
        return None;
    }
    let capabilities: &str = capabilities.filter(|c| c.starts_with('{'))?;
    if info.is_some_and(|i: &str| !i.starts_with('{')) {
        return None;
    }
    let log_level = match level {
        None => None,
        Some(level) => {
            let level = plain_string(level)?;
            Some(LOG_LEVELS.iter().position(|x| *x == level)?)
        }
    };
    // Only a capabilities object with members may declare extensions.
    let extensions = match capabilities[1..].trim_start().starts_with('}') {
        true => Vec::new(),
        false => extensions_of(&serde_json::from_str(capabilities).ok()?),
    };
    Some(RequestMeta {
        version: version.to_string(),
        log_level,
        extensions,
    })
}

/// The contents of the JSON string literal `text` when it holds no escape.
fn plain_string(text: &str) -> Option<&str> {
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.contains('\\')).then_some(inner)
}

/// The extensions a `_meta` object declares in its client capabilities.
fn declared_extensions(meta: &Map<String, Json>) -> Vec<String> {
    meta.get(CAPABILITIES_KEY)
        .map(extensions_of)
        .unwrap_or_default()
}

/// The extensions client capabilities declare: the members of their
/// `extensions` object whose value is an object, by name.
fn extensions_of(capabilities: &Json) -> Vec<String> {
    Some(capabilities)
        .and_then(|c| c.get("extensions"))
        .and_then(Json::as_object)
        .map(|e| {
            e.iter()
                .filter(|(_, v)| v.is_object())
                .map(|(k, _)| k.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// `UnsupportedProtocolVersionError` (`-32022`) for `requested`.
pub fn unsupported_version(id: Option<&RequestId>, requested: &str) -> Json {
    let supported: Vec<Json> = all_versions().into_iter().map(Json::from).collect();
    let mut data = Map::new();
    data.insert("supported".into(), Json::Array(supported));
    data.insert("requested".into(), Json::String(requested.into()));
    let how = if LEGACY_VERSIONS.contains(&requested) {
        format!(" ({requested} is served to clients that open a session with 'initialize')")
    } else {
        String::new()
    };
    jsonrpc::error_response_data(
        id,
        ErrorCode::UnsupportedProtocolVersion,
        &format!(
            "unsupported protocol version '{requested}'{how}; per-request '_meta' is served for {}",
            MODERN_VERSIONS.join(", ")
        ),
        Json::Object(data),
    )
}

/// The HTTP status of a modern response: `404` for an unknown method,
/// `400` for malformed requests and the modern request errors, `200` for
/// results and every other error.
pub fn http_status(reply: &Json) -> u16 {
    const NOT_FOUND: i64 = ErrorCode::MethodNotFound as i64;
    const BAD: [i64; 5] = [
        ErrorCode::InvalidRequest as i64,
        ErrorCode::InvalidParams as i64,
        ErrorCode::HeaderMismatch as i64,
        ErrorCode::MissingRequiredClientCapability as i64,
        ErrorCode::UnsupportedProtocolVersion as i64,
    ];
    match jsonrpc::error_code(reply) {
        Some(NOT_FOUND) => 404,
        Some(code) if BAD.contains(&code) => 400,
        _ => 200,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[track_caller]
    fn check_era(method: &str, params: Json, in_session: bool, modern: bool) {
        assert_eq!(is_modern(method, Some(&params), in_session), modern);
    }

    /// [`meta_in_place`] on `_meta` members as text: what
    /// [`request_meta`] gives for the parsed `_meta`, or `None`.
    #[track_caller]
    fn in_place(members: &[(&str, &str)], in_session: bool) -> Option<RequestMeta> {
        let meta = meta_in_place(members.iter().copied(), in_session);
        if let Some(found) = &meta {
            let mut parsed = Map::new();
            for (key, value) in members {
                parsed.insert(key.to_string(), serde_json::from_str(value).unwrap());
            }
            let params = json!({ "_meta": parsed });
            assert!(is_modern("tools/call", Some(&params), in_session));
            let id = RequestId::Int("1".into());
            assert_eq!(request_meta(&id, Some(&params)).as_ref(), Ok(found));
        }
        meta
    }

    #[test]
    fn a_plain_meta_is_read_in_place() {
        let (v, c) = ((VERSION_KEY, r#""2026-07-28""#), (CAPABILITIES_KEY, "{}"));
        let info = (CLIENT_INFO_KEY, r#"{"name":"c"}"#);
        let level = |l| (LOG_LEVEL_KEY, l);
        let read = in_place(&[v, info, c], false).expect("read in place");
        assert_eq!((read.log_level, read.extensions.len()), (None, 0));
        let read = in_place(&[c, v, level(r#""error""#)], true).expect("read in place");
        assert_eq!(read.log_level, Some(4));
        let tasks = (
            CAPABILITIES_KEY,
            r#"{ "extensions" : {"io.modelcontextprotocol/tasks":{},"x":1}}"#,
        );
        let read = in_place(&[v, tasks], false).expect("read in place");
        assert_eq!(read.extensions, ["io.modelcontextprotocol/tasks"]);
        let refused: [&[(&str, &str)]; 10] = [
            &[v],
            &[c],
            &[v, c, v],
            &[(VERSION_KEY, r#""2025-06-18""#), c],
            &[(VERSION_KEY, r#""2026-07-2\u0038""#), c],
            &[v, (CAPABILITIES_KEY, "[]")],
            &[v, c, (CLIENT_INFO_KEY, "1")],
            &[v, c, level(r#""loud""#)],
            &[v, c, level("1")],
            &[v, c, ("progressToken", "1")],
        ];
        for members in refused {
            assert_eq!(in_place(members, false), None, "{members:?}");
        }
    }

    #[test]
    fn era_follows_the_compatibility_matrix() {
        let v = |v: &str| json!({"_meta": {VERSION_KEY: v}});
        check_era("tools/list", json!({}), false, false);
        check_era(
            "initialize",
            json!({"protocolVersion": "2025-06-18"}),
            false,
            false,
        );
        check_era("initialize", v("2026-07-28"), false, true);
        check_era("tools/call", v("2026-07-28"), true, true);
        check_era("tools/call", v("2025-11-25"), true, false);
        check_era("tools/call", v("2025-11-25"), false, true);
        check_era("server/discover", json!({}), false, true);
        check_era("subscriptions/listen", json!({}), true, true);
        assert!(!is_modern("ping", None, false));
    }

    #[track_caller]
    fn check_meta(params: Json, expect: Result<Option<usize>, i64>) {
        let id = RequestId::Int("7".into());
        let got = request_meta(&id, Some(&params));
        match (got, expect) {
            (Ok(meta), Ok(level)) => assert_eq!(meta.log_level, level),
            (Err(reply), Err(code)) => {
                assert_eq!(jsonrpc::error_code(&reply), Some(code), "{reply}");
                assert_eq!(reply["id"], json!(7));
            }
            (got, expect) => panic!("got {got:?}, expected {expect:?}"),
        }
    }

    #[test]
    fn request_meta_is_checked() {
        let ok = json!({VERSION_KEY: "2026-07-28", CAPABILITIES_KEY: {}});
        check_meta(json!({"_meta": ok}), Ok(None));
        let mut with_level = ok.clone();
        with_level[LOG_LEVEL_KEY] = json!("warning");
        check_meta(json!({"_meta": with_level}), Ok(Some(3)));
        with_level[LOG_LEVEL_KEY] = json!("loud");
        check_meta(json!({"_meta": with_level}), Err(-32602));
        check_meta(json!({}), Err(-32602));
        check_meta(json!({"_meta": 3}), Err(-32602));
        check_meta(json!({"_meta": {VERSION_KEY: "2026-07-28"}}), Err(-32602));
        check_meta(json!({"_meta": {CAPABILITIES_KEY: {}}}), Err(-32602));
        check_meta(
            json!({"_meta": {VERSION_KEY: 2026, CAPABILITIES_KEY: {}}}),
            Err(-32602),
        );
        check_meta(
            json!({"_meta": {VERSION_KEY: "v999.0.0", CAPABILITIES_KEY: {}}}),
            Err(-32022),
        );
        check_meta(
            json!({"_meta": {VERSION_KEY: "2025-11-25", CAPABILITIES_KEY: {}}}),
            Err(-32022),
        );
    }

    #[test]
    fn request_meta_names_the_declared_extensions() {
        let id = RequestId::Int("1".into());
        let caps = json!({"extensions": {"a/x": {}, "b/y": true}});
        let params = json!({"_meta": {VERSION_KEY: "2026-07-28", CAPABILITIES_KEY: caps}});
        let meta = request_meta(&id, Some(&params)).unwrap();
        assert_eq!(meta.extensions, ["a/x"]);
        assert!(meta.declares("a/x") && !meta.declares("b/y"));
    }

    #[test]
    fn unsupported_version_lists_every_served_revision() {
        let reply = unsupported_version(Some(&RequestId::Str("a".into())), "1900-01-01");
        assert_eq!(
            reply["error"]["data"],
            json!({
                "supported": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"],
                "requested": "1900-01-01"
            })
        );
        assert_eq!(http_status(&reply), 400);
    }
}
