//! The one integration-test binary: each module spawns the real binary or
//! drives the library through its public API.

mod util;
mod golden_tools;
mod cli;
mod wire;
mod stdio;
mod pools;
mod http;
mod faults;
