//! The MCP surface and the protocol state machines: tool definitions,
//! argument mapping, JSON-RPC framing, MCP sessions, the HTTP/1.1 parser.
//!
//! Pure: no I/O. Imports from `format` and from this layer.

#![forbid(unsafe_code)]

pub mod args;
pub mod http;
pub mod instance;
pub mod jsonrpc;
pub mod log;
pub mod mcp;
pub mod metrics;
pub mod oauth;
pub mod suggest;
pub mod tools;
pub mod trace;
