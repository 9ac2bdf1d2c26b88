//! TODO(msgpack)
