//! TODO(jsonrpc)
