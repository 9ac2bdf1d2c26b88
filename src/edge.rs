//! The I/O edge: the command line, child processes, shared memory and the
//! reactor, the only caller of `Poll::poll`.
//!
//! Imports from `format`, `protocol` and this layer.

pub mod cli;
pub mod proc;
pub mod reactor;
pub mod shm;
