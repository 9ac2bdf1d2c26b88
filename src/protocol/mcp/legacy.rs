//! Legacy MCP (2024-11-05 to 2025-11-25): the `initialize` handshake and
//! the per-session rules, served exactly as before the stateless revision.
//!
//! A session is opened by `initialize` (the revision is echoed when we speak
//! it, else `2025-06-18`), unlocked by `notifications/initialized`, and may
//! set its log level with `logging/setLevel`; `ping` is answered at any time.
//!
//! Architecture Invariant: pure; no I/O.

use serde_json::{Map, Value as Json};

use crate::protocol::jsonrpc::{self, ErrorCode, RequestId};

use super::SUPPORTED_VERSIONS;
use super::{initialize_result, tools_call, Catalog, Session, Step, DEFAULT_VERSION, LOG_LEVELS};

/// Answers one legacy request.
pub(super) fn request(
    catalog: &Catalog,
    session: &mut Session,
    id: RequestId,
    method: &str,
    params: Option<Json>,
    arguments: Option<&str>,
) -> Step {
    let reply = |result: Json| Step::Reply(jsonrpc::result_response(&id, result));
    let fail = |code: ErrorCode, message: &str| {
        Step::Reply(jsonrpc::error_response(Some(&id), code, message))
    };
    match method {
        "initialize" => {
            let asked = params
                .as_ref()
                .and_then(|p| p.get("protocolVersion"))
                .and_then(Json::as_str);
            let version = match asked {
                Some(v) if SUPPORTED_VERSIONS.contains(&v) => v,
                _ => DEFAULT_VERSION,
            };
            session.protocol_version = Some(version.to_string());
            reply(initialize_result(catalog, version))
        }
        "ping" => reply(Json::Object(Map::new())),
        // Reference leniency kept: a client that sends the notification with
        // an id still unlocks tools, and gets no reply.
        "notifications/initialized" => {
            session.initialized = true;
            Step::Nothing
        }
        "logging/setLevel" => {
            let level = params.as_ref().and_then(|p| p.get("level"));
            let known = level
                .and_then(Json::as_str)
                .and_then(|l| LOG_LEVELS.iter().position(|x| *x == l));
            match known {
                Some(i) => {
                    session.log_level = Some(i);
                    reply(Json::Object(Map::new()))
                }
                None => fail(
                    ErrorCode::InvalidParams,
                    &format!(
                        "invalid log level {}: expected one of {}",
                        match level {
                            None => "(missing)".to_string(),
                            Some(Json::String(l)) => format!("'{l}'"),
                            Some(other) => crate::format::json::text(other),
                        },
                        LOG_LEVELS.join(", ")
                    ),
                ),
            }
        }
        "resources/list" | "resources/templates/list" | "resources/read"
            if !session.initialized && catalog.result_limit.is_some() =>
        {
            fail(
                ErrorCode::InvalidRequest,
                &format!("received {method} before initialization completed"),
            )
        }
        "tools/list" | "tools/call" if !session.initialized => fail(
            ErrorCode::InvalidRequest,
            &format!("received {method} before initialization completed"),
        ),
        "tools/list" => reply(catalog.legacy_list().clone()),
        "resources/list" | "resources/templates/list" | "resources/read"
            if catalog.result_limit.is_some() =>
        {
            match super::bigresults::resource_request(id, method, params.as_ref(), false) {
                Ok(request) => Step::Resource(request),
                Err(reply) => Step::Reply(reply),
            }
        }
        "tools/call" => tools_call(catalog, id, params, arguments, None),
        other => fail(
            ErrorCode::MethodNotFound,
            &format!("unknown method '{other}'"),
        ),
    }
}
