//! The one integration-test binary: each module spawns the real binary or
//! drives the library through its public API.

mod args_text;
mod cli;
mod faults;
mod golden_tools;
mod http;
mod modern;
mod pools;
mod replicas;
mod results;
mod scale;
mod stdio;
mod tasks;
mod tidy;
mod util;
mod wire;
