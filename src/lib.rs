//! morloc-mcp: serve the exported functions of a compiled Morloc program as
//! Model Context Protocol tools.
//!
//! The library exists so that the binary, the integration tests and the fuzz
//! targets link the same code. Modules are listed in reading order: data
//! formats first (pure, no I/O), then the protocol state machines (pure),
//! then the I/O edge (processes, shared memory, the reactor).

// Data formats: pure, no I/O.
pub mod eval;
pub mod json;
pub mod manifest;
pub mod msgpack;
pub mod packet;
pub mod schema;
pub mod value;
pub mod voidstar;

// The MCP surface and protocol state machines: pure, no I/O.
pub mod args;
pub mod http;
pub mod jsonrpc;
pub mod mcp;
pub mod tools;

// The I/O edge.
pub mod cli;
pub mod proc;
pub mod reactor;
pub mod shm;

// The global allocator and byte copying of the static (musl) build.
#[cfg(target_os = "linux")]
pub mod alloc;
pub mod memcopy;
