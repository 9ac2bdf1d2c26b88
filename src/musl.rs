//! What the static (musl) build links instead of musl's own: a size-class
//! global allocator and fast short `memcpy`/`memmove`.
//!
//! Imports nothing from the other layers; `src/main.rs` installs them.

#[cfg(target_os = "linux")]
pub mod alloc;
pub mod memcopy;
