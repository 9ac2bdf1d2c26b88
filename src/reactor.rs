//! TODO(reactor)
