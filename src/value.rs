//! TODO(value)
