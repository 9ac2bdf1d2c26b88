//! TODO(manifest)
