//! morloc-mcp: serve the exported functions of a compiled Morloc program as
//! Model Context Protocol tools.
//!
//! The library exists so that the binary, the integration tests and the fuzz
//! targets link the same code. Modules are listed in reading order: data
//! formats first (pure, no I/O), then the protocol state machines (pure),
//! then the I/O edge (processes, shared memory, the reactor).

// Data formats: pure, no I/O.
pub mod schema;
pub mod manifest;
pub mod value;
pub mod json;
pub mod voidstar;
pub mod msgpack;
pub mod packet;
pub mod eval;

// The MCP surface and protocol state machines: pure, no I/O.
pub mod tools;
pub mod args;
pub mod jsonrpc;
pub mod mcp;
pub mod http;

// The I/O edge.
pub mod cli;
pub mod proc;
pub mod shm;
pub mod reactor;
