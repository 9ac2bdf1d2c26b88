//! Data formats: Morloc schemas, the manifest, values and their encodings
//! (JSON, voidstar, msgpack, packets) and the pure-command evaluator.
//!
//! Pure: no I/O. Imports only from this layer (and `std`, `serde_json`).

#![forbid(unsafe_code)]

pub mod decimal;
pub mod eval;
pub mod json;
pub mod lang;
pub mod manifest;
pub mod msgpack;
pub mod order;
pub mod packet;
pub mod schema;
pub mod value;
pub mod voidstar;
