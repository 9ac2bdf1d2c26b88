//! The I/O edge: the command line, child processes, shared memory, run
//! directories and the reactor, the only caller of `Poll::poll`.
//!
//! Imports from `format`, `protocol` and this layer.

pub mod cli;
pub mod log;
pub mod manifest_file;
pub mod proc;
pub mod reactor;
pub mod rundir;
pub mod shm;
