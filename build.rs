//! Build script: lays out the release binary so that the code the server
//! runs to start and answer its first requests sits together.
//!
//! The kernel maps a binary's code in windows around each page touched
//! (fault-around, 64 KiB), so code spread over the whole `.text` makes an
//! idle server map nearly all of it. `link/hot-symbols.txt` lists the
//! functions a start-up runs (written by `bench/hot_symbols.py`); when the
//! LLVM linker is installed, a release build for glibc Linux links with it
//! and places those functions first (`--symbol-ordering-file`). Names that
//! no longer exist are skipped, so a stale list only costs memory. Without
//! `ld.lld`, for static or other targets, or with `MORLOC_MCP_NO_ORDER` set,
//! nothing changes.

use std::env;
use std::path::Path;
use std::process::Command;

const ORDER: &str = "link/hot-symbols.txt";

fn main() {
    println!("cargo:rerun-if-changed={ORDER}");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=MORLOC_MCP_NO_ORDER");
    println!("cargo:rerun-if-env-changed=MORLOC_MCP_LINK_MAP");
    let var = |key: &str| env::var(key).unwrap_or_default();
    let release = var("PROFILE") == "release";
    let glibc_linux = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    let features = var("CARGO_CFG_TARGET_FEATURE");
    let static_build = features.split(',').any(|f| f == "crt-static")
        || env::var_os("CARGO_FEATURE_MUSL_LIBC").is_some();
    if !release || !glibc_linux || static_build || env::var_os("MORLOC_MCP_NO_ORDER").is_some() {
        return;
    }
    let order = Path::new(&var("CARGO_MANIFEST_DIR")).join(ORDER);
    let lld = Command::new("ld.lld").arg("--version").output();
    if !order.is_file() || !lld.is_ok_and(|out| out.status.success()) {
        return;
    }
    println!("cargo:rustc-link-arg-bins=-fuse-ld=lld");
    println!(
        "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
        order.display()
    );
    println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    // `bench/hot_symbols.py` reads the names the build gave the functions.
    if let Some(map) = env::var_os("MORLOC_MCP_LINK_MAP") {
        let map = Path::new(&map).display().to_string();
        println!("cargo:rustc-link-arg-bins=-Wl,-Map={map}");
    }
}
