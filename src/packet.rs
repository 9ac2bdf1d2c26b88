//! TODO(packet)
