//! morloc-mcp: serve the exported functions of a compiled Morloc program as
//! Model Context Protocol tools.
//!
//! The library exists so that the binary, the integration tests and the fuzz
//! targets link the same code. The folders are the layers, listed bottom up:
//! each may use the ones above it in this list, never one below.

pub mod edge;
pub mod format;
pub mod protocol;

// The global allocator and byte copying of the static (musl) build.
pub mod musl;
