//! The name the integration tests have always used for their helpers:
//! everything in the test support library (`tests/support/`), re-exported,
//! so `crate::util::Proc`, `crate::util::TIMEOUT` and the rest keep working.

pub use crate::support::*;
