//! The one integration-test binary: each module spawns the real binary or
//! drives the library through its public API.

mod args_text;
mod bigresults;
mod cli;
mod crossings;
mod curate;
mod docs;
mod fairness;
mod faults;
mod golden_tools;
mod hostile;
mod http;
mod jobs;
mod limits;
#[cfg(feature = "oauth")]
mod log_lines;
mod make_test;
mod metrics;
mod modern;
#[cfg(feature = "oauth")]
mod oauth;
mod obs;
mod pools;
mod real_scripts;
mod replicas;
mod results;
mod scale;
mod sliced;
mod stdio;
mod structured;
mod support;
mod tasks;
mod threaded;
mod tidy;
mod util;
mod wire;
