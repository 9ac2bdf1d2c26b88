//! TODO(shm)
