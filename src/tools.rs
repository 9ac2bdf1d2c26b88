//! TODO(tools)
