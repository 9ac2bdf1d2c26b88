//! TODO(eval)
