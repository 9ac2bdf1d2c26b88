//! TODO(proc)
