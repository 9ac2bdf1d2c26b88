//! TODO(mcp)
