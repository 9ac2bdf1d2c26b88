//! The names every era shares and the identity every modern result carries:
//! the `_meta` keys of 2026-07-28, `serverInfo`, [`complete`] (`resultType`
//! and the server's name in `_meta`) and the caching hints.
//!
//! A leaf: `era`, `results`, `discover`, `tasks` and `subscriptions` build on
//! it, and it builds on none of them.
//!
//! Architecture Invariant: pure; no I/O.

use serde_json::{Map, Value as Json};

use super::Catalog;

/// `_meta` key: the request's protocol version (required).
pub const VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities for this request (required).
pub const CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's name and version (optional).
pub const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the lowest log level the client wants for this request.
pub const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
/// Result `_meta` key: who answered.
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
/// Notification `_meta` key: the `subscriptions/listen` request it belongs to.
pub const SUBSCRIPTION_KEY: &str = "io.modelcontextprotocol/subscriptionId";

/// How long (ms) a modern client may keep a `tools/list` or
/// `server/discover` answer: the surface changes only when the program is
/// reloaded, and subscribers hear about that at once.
pub const CACHE_TTL_MS: u64 = 60_000;

/// `{"name": …, "version": …}`.
pub fn server_info(catalog: &Catalog) -> Json {
    let mut info = Map::new();
    info.insert("name".into(), Json::String(catalog.server_name.clone()));
    info.insert(
        "version".into(),
        Json::String(catalog.server_version.clone()),
    );
    Json::Object(info)
}

/// [`server_info`] as its JSON text, written without a map.
pub fn server_info_text(catalog: &Catalog) -> String {
    use crate::format::json::write_str;
    let mut text =
        String::with_capacity(24 + catalog.server_name.len() + catalog.server_version.len());
    text.push_str(r#"{"name":"#);
    write_str(&mut text, &catalog.server_name);
    text.push_str(r#","version":"#);
    write_str(&mut text, &catalog.server_version);
    text.push('}');
    text
}

/// Marks a modern result complete and names the server in its `_meta`
/// (keys already in `_meta` are kept).
pub fn complete(result: Json, catalog: &Catalog) -> Json {
    complete_with(result, server_info(catalog))
}

/// [`complete`] with the server's `serverInfo` given.
pub fn complete_with(mut result: Json, info: Json) -> Json {
    if let Json::Object(map) = &mut result {
        map.insert("resultType".into(), Json::String("complete".into()));
        let meta = map
            .entry("_meta")
            .or_insert_with(|| Json::Object(Map::new()));
        if let Json::Object(meta) = meta {
            meta.insert(SERVER_INFO_KEY.into(), info);
        }
    }
    result
}

/// Adds the `CacheableResult` hints: `ttlMs` and a `public` scope (the
/// surface is the same for every caller).
pub fn cacheable(result: &mut Map<String, Json>, ttl_ms: u64) {
    result.insert("ttlMs".into(), Json::from(ttl_ms));
    result.insert("cacheScope".into(), Json::String("public".into()));
}
