//! TODO(json)
