//! What the server says about itself: the legacy `initialize` result and the
//! modern `server/discover` result (2026-07-28), with the capabilities each
//! era declares.
//!
//! Both eras declare `tools` (with `listChanged` when the program can be
//! reloaded) and `logging`. The modern era also declares empty `prompts` and
//! `resources`: their list methods answer with empty, cacheable lists there,
//! so a modern client asking for them gets a result instead of an error.
//! It also declares the Tasks extension (`io.modelcontextprotocol/tasks`).
//! With `--max-result-chars` the legacy era declares `resources` too (long
//! results are read as resources, `bigresults`).
//!
//! Architecture Invariant: pure; no I/O.

use serde_json::{Map, Value as Json};

pub use super::identity::server_info;
use super::identity::{cacheable, complete, CACHE_TTL_MS};
use super::{era, tasks, Catalog};

/// `initialize` (legacy): the revision agreed, capabilities, `serverInfo`.
pub fn initialize_result(catalog: &Catalog, version: &str) -> Json {
    let mut caps = Map::new();
    caps.insert("tools".into(), tools_capability(catalog));
    caps.insert("logging".into(), Json::Object(Map::new()));
    if catalog.result_limit.is_some() {
        // Big results are read as resources (`bigresults`).
        caps.insert("resources".into(), Json::Object(Map::new()));
    }
    let mut result = Map::new();
    result.insert("protocolVersion".into(), Json::String(version.into()));
    result.insert("capabilities".into(), Json::Object(caps));
    result.insert("serverInfo".into(), server_info(catalog));
    Json::Object(result)
}

/// `server/discover` (modern): every revision served, the capabilities, and
/// caching hints; `serverInfo` travels in `_meta` like on every result.
pub fn discover_result(catalog: &Catalog) -> Json {
    let versions = era::all_versions().into_iter().map(Json::from).collect();
    let mut caps = Map::new();
    caps.insert("tools".into(), tools_capability(catalog));
    caps.insert("prompts".into(), Json::Object(Map::new()));
    caps.insert("resources".into(), Json::Object(Map::new()));
    caps.insert("logging".into(), Json::Object(Map::new()));
    let mut extensions = Map::new();
    extensions.insert(tasks::EXTENSION.into(), Json::Object(Map::new()));
    caps.insert("extensions".into(), Json::Object(extensions));
    let mut result = Map::new();
    result.insert("supportedVersions".into(), Json::Array(versions));
    result.insert("capabilities".into(), Json::Object(caps));
    cacheable(&mut result, CACHE_TTL_MS);
    complete(Json::Object(result), catalog)
}

/// `{"listChanged": …}`: true when a reload can change the tool list.
fn tools_capability(catalog: &Catalog) -> Json {
    let mut tools = Map::new();
    tools.insert("listChanged".into(), Json::Bool(catalog.list_changes));
    Json::Object(tools)
}
