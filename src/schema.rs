//! TODO(schema)
