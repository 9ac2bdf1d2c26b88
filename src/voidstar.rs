//! TODO(voidstar)
