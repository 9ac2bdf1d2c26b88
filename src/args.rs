//! TODO(args)
