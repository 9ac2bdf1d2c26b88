//! The one integration-test binary: each module spawns the real binary or
//! drives the library through its public API.

mod args_text;
mod cli;
mod curate;
mod fairness;
mod faults;
mod golden_tools;
mod hostile;
mod http;
mod make_test;
mod metrics;
mod modern;
mod obs;
mod pools;
mod real_scripts;
mod replicas;
mod results;
mod scale;
mod sliced;
mod stdio;
mod support;
mod tasks;
mod threaded;
mod tidy;
mod util;
mod wire;
