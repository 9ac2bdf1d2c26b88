//! The test support library: everything the integration tests share.
//!
//! - [`proc`]: the binary under test, test data, temporary directories, and
//!   a child process with piped stdio read line by line with deadlines;
//! - [`stdio`]: the JSON-RPC clients over a server's stdin and stdout (one
//!   matching responses by id, one line by line), the shapes program
//!   fixtures, and the test pool processes of a run;
//! - [`http`]: the HTTP client (raw HTTP/1.1, both protocol revisions,
//!   reads retried on `EINTR`/`EAGAIN`) and the launcher of a server on an
//!   OS-chosen port that returns once the server says where it listens;
//! - [`procfs`]: processes, descriptors and shared-memory files of a run;
//! - [`time`]: the only place tests touch the clock (waiting on a
//!   condition, lower bounds, budgets, pacing); see its rules;
//! - [`trace`]: the test pool's record of when calls ran, from its side.
//!
//! `crate::util` re-exports all of it under the name older tests use.

#![allow(dead_code)]

pub mod http;
#[cfg(feature = "oauth")]
pub mod oauth;
pub mod proc;
pub mod procfs;
pub mod stdio;
pub mod time;
pub mod trace;

pub use proc::*;
pub use time::*;
pub use trace::*;
