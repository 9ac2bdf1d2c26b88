//! Modern MCP (2026-07-28): stateless requests, each carrying its own
//! version, capabilities and log level in `_meta`.
//!
//! There is no handshake and no session: every request is checked on its own
//! (`era::request_meta`) and answered from the catalog. `server/discover`
//! says what we serve; `tools/list` gives the surface with the JSON Schema
//! 2020-12 dialect named on every schema and caching hints; `tools/call`
//! becomes a call; `subscriptions/listen` a long-lived subscription. Empty
//! prompt and resource lists are served so modern clients that ask get an
//! answer (with `--max-result-chars`, `resources/*` serve the stored long
//! results instead, `bigresults`). The methods this revision removed (`initialize`, `ping`,
//! `logging/setLevel`, `resources/subscribe`, …) are unknown here (`-32601`).
//! Every result carries `resultType: "complete"` and the server's identity in
//! `_meta`.
//!
//! Architecture Invariant: pure; no I/O.

use serde_json::{Map, Value as Json};

use crate::protocol::jsonrpc::{self, ErrorCode, RequestId};

use super::identity::{cacheable, complete, CACHE_TTL_MS};
use super::{
    discover, era, subscriptions, tasks, tools_call, Catalog, Step, TaskMethod, TaskRequest,
};

/// The JSON Schema dialect every modern tool schema names.
pub const SCHEMA_DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// Answers one modern request.
pub(super) fn request(
    catalog: &Catalog,
    id: RequestId,
    method: &str,
    params: Option<Json>,
    arguments: Option<&str>,
) -> Step {
    let meta = match era::request_meta(&id, params.as_ref()) {
        Ok(meta) => meta,
        Err(reply) => return Step::Reply(reply),
    };
    let reply = |result: Json| Step::Reply(jsonrpc::result_response(&id, result));
    match method {
        "server/discover" => reply(discover::discover_result(catalog)),
        "tools/list" => reply(catalog.modern_list().clone()),
        "tools/call" => tools_call(catalog, id, params, arguments, Some(meta)),
        "subscriptions/listen" => match subscriptions::listen_request(id, params.as_ref()) {
            // Task notifications are for clients of the Tasks extension.
            Ok(listen)
                if !listen.filter.task_ids.is_empty() && !meta.declares(tasks::EXTENSION) =>
            {
                Step::Reply(tasks::missing_capability(&listen.id))
            }
            Ok(listen) => Step::Listen(listen),
            Err(reply) => Step::Reply(reply),
        },
        "tasks/get" | "tasks/update" | "tasks/cancel" => {
            task_request(id, method, params.as_ref(), &meta)
        }
        "resources/list" | "resources/templates/list" | "resources/read"
            if catalog.result_limit.is_some() =>
        {
            match super::bigresults::resource_request(id, method, params.as_ref(), true) {
                Ok(request) => Step::Resource(request),
                Err(reply) => Step::Reply(reply),
            }
        }
        "prompts/list" => reply(empty_list(catalog, "prompts")),
        "resources/list" => reply(empty_list(catalog, "resources")),
        "resources/templates/list" => reply(empty_list(catalog, "resourceTemplates")),
        "prompts/get" => Step::Reply(jsonrpc::error_response(
            Some(&id),
            ErrorCode::InvalidParams,
            &format!(
                "unknown prompt {}: this server has no prompts",
                name_of(params.as_ref(), "name")
            ),
        )),
        "resources/read" => {
            let uri = params
                .as_ref()
                .and_then(|p| p.get("uri"))
                .cloned()
                .unwrap_or(Json::Null);
            let mut data = Map::new();
            data.insert("uri".into(), uri);
            Step::Reply(jsonrpc::error_response_data(
                Some(&id),
                ErrorCode::InvalidParams,
                &format!(
                    "resource not found: {} (this server has no resources)",
                    name_of(params.as_ref(), "uri")
                ),
                Json::Object(data),
            ))
        }
        other => Step::Reply(jsonrpc::error_response(
            Some(&id),
            ErrorCode::MethodNotFound,
            &format!(
                "unknown method '{other}' in MCP {}",
                era::MODERN_VERSIONS[0]
            ),
        )),
    }
}

/// `tasks/*`: only for a client that declared the extension (`-32021`
/// otherwise), with a string `taskId`.
fn task_request(
    id: RequestId,
    method: &str,
    params: Option<&Json>,
    meta: &era::RequestMeta,
) -> Step {
    if !meta.declares(tasks::EXTENSION) {
        return Step::Reply(tasks::missing_capability(&id));
    }
    let task_id = match tasks::task_id_param(params) {
        Ok(t) => t,
        Err(message) => {
            return Step::Reply(jsonrpc::error_response(
                Some(&id),
                ErrorCode::InvalidParams,
                &message,
            ))
        }
    };
    let method = match method {
        "tasks/get" => TaskMethod::Get,
        "tasks/update" => TaskMethod::Update,
        _ => TaskMethod::Cancel,
    };
    Step::Task(TaskRequest {
        id,
        method,
        task_id,
    })
}

fn name_of(params: Option<&Json>, key: &str) -> String {
    match params.and_then(|p| p.get(key)) {
        Some(Json::String(s)) => format!("'{s}'"),
        Some(other) => crate::format::json::text(other),
        None => "(none given)".into(),
    }
}

/// `{"<key>": [], ttlMs, cacheScope}`, completed.
fn empty_list(catalog: &Catalog, key: &str) -> Json {
    let mut result = Map::new();
    result.insert(key.into(), Json::Array(Vec::new()));
    cacheable(&mut result, CACHE_TTL_MS);
    complete(Json::Object(result), catalog)
}

/// The modern `tools/list` result for the catalog's tools (in catalog
/// order, which is manifest order: deterministic).
pub(super) fn list_result(catalog: &Catalog, tools: Vec<Json>) -> Json {
    let mut result = Map::new();
    result.insert("tools".into(), Json::Array(tools));
    cacheable(&mut result, CACHE_TTL_MS);
    complete(Json::Object(result), catalog)
}

/// A tool object of the modern surface: the legacy object with the schema
/// dialect named first in `inputSchema` and `outputSchema` (the schemas are
/// already 2020-12: tuples are `prefixItems`, records close with
/// `additionalProperties: false`).
pub(super) fn tool_json(legacy: &Json) -> Json {
    let Json::Object(tool) = legacy else {
        return legacy.clone();
    };
    let mut out = Map::new();
    for (key, value) in tool {
        let value = match (key.as_str(), value) {
            ("inputSchema" | "outputSchema", Json::Object(schema)) => {
                let mut named = Map::new();
                named.insert("$schema".into(), Json::String(SCHEMA_DIALECT.into()));
                for (k, v) in schema {
                    if k != "$schema" {
                        named.insert(k.clone(), v.clone());
                    }
                }
                Json::Object(named)
            }
            _ => value.clone(),
        };
        out.insert(key.clone(), value);
    }
    Json::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn modern_tools_name_their_dialect() {
        let legacy = json!({
            "name": "f",
            "description": "",
            "inputSchema": {"type": "object", "properties": {}, "required": [], "additionalProperties": false},
            "outputSchema": {"type": "object"}
        });
        assert_eq!(
            tool_json(&legacy).to_string(),
            r#"{"name":"f","description":"","inputSchema":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{},"required":[],"additionalProperties":false},"outputSchema":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}}"#
        );
    }
}
