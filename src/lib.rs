//! morloc-mcp: serve the exported functions of a compiled Morloc program as
//! Model Context Protocol tools.
//!
//! The library exists so that the binary, the integration tests and the fuzz
//! targets link the same code. The folders are the layers, listed bottom up:
//! each may use the ones above it in this list, never one below.

// Pure data formats: schemas, the manifest, values and their encodings.
pub mod format;

// Pure protocol logic: tools, arguments, JSON-RPC, MCP, HTTP/1.1.
pub mod protocol;

// The I/O edge: the command line, processes, shared memory, the reactor.
pub mod edge;

// The global allocator and byte copying of the static (musl) build.
pub mod musl;
