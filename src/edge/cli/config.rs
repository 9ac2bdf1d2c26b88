//! `morloc-mcp config`: the `mcpServers` entry an MCP client launches the
//! server with.

use std::path::Path;

use serde_json::{Map, Value};

use crate::format::manifest::Loaded;

/// The `--max-result-chars` that `morloc-mcp config` writes for agent
/// clients: Claude Code cuts a tool result at 25,000 tokens (about 100,000
/// characters of prose, fewer of JSON, whose digits and punctuation make
/// short tokens), so a margin below that.
pub const AGENT_RESULT_CHARS: usize = 80_000;

/// The `mcpServers` client entry for a program served over stdio with
/// `options` (`(name, value)`, the value empty for a switch).
pub fn config_json(program: &Loaded, exe: &Path, options: &[(String, String)]) -> Value {
    let mut args = vec![
        Value::from("mcp"),
        Value::from(program.path.to_string_lossy().into_owned()),
    ];
    for (name, value) in options {
        args.push(Value::from(format!("--{name}")));
        if !value.is_empty() {
            args.push(Value::from(value.as_str()));
        }
    }
    let mut server = Map::new();
    server.insert(
        "command".into(),
        Value::from(exe.to_string_lossy().into_owned()),
    );
    server.insert("args".into(), Value::Array(args));
    let mut servers = Map::new();
    servers.insert(program.manifest.name.clone(), Value::Object(server));
    let mut root = Map::new();
    root.insert("mcpServers".into(), Value::Object(servers));
    Value::Object(root)
}
