//! TODO(http)
