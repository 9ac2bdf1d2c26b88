//! The `morloc-mcp` binary: parse the command line, then print or serve.
//!
//! Everything with logic lives in the library (`cli` for the command line);
//! this file only maps outcomes to output and exit statuses. A closed stdout
//! (`morloc-mcp tools prog | head`) counts as success.

use std::io::{self, Write};
use std::process::ExitCode;

use morloc_mcp::edge::cli::{self, Action, CliError, ServeConfig};

fn main() -> ExitCode {
    let mut argv = std::env::args_os();
    let argv0 = argv.next();
    let raw = match cli::parse_args(argv0.as_deref(), argv) {
        Ok(raw) => raw,
        Err(e) => return fail(&e),
    };
    let mut warnings = Vec::new();
    let action = cli::prepare(raw, &cli::Env::from_process(), &mut warnings);
    for warning in &warnings {
        eprintln!("morloc-mcp: warning: {warning}");
    }
    match action {
        Err(e) => fail(&e),
        Ok(Action::Print { stdout, stderr }) => {
            for line in &stderr {
                eprintln!("{line}");
            }
            print(&stdout)
        }
        Ok(Action::Serve(config)) => serve(config),
    }
}

fn fail(error: &CliError) -> ExitCode {
    eprintln!("morloc-mcp: {error}");
    ExitCode::from(error.exit_code())
}

fn print(text: &str) -> ExitCode {
    let mut stdout = io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("morloc-mcp: cannot write to stdout: {e}");
            ExitCode::FAILURE
        }
    }
}

fn serve(config: ServeConfig) -> ExitCode {
    match morloc_mcp::edge::reactor::serve(config) {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            eprintln!("morloc-mcp: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The static build's allocator: musl's gives freed pages back to the kernel
/// eagerly, which made every request pay for `mmap`/`munmap` pairs.
#[cfg(any(target_env = "musl", feature = "musl-libc"))]
#[global_allocator]
static ALLOCATOR: morloc_mcp::musl::alloc::SizeClassAlloc = morloc_mcp::musl::alloc::SizeClassAlloc;

/// musl's `memcpy` is slow for the short copies this server makes most; see
/// `morloc_mcp::musl::memcopy`. `memmove` is replaced too: musl's jumps into the
/// object file of its `memcpy`, which would then clash with this one.
#[cfg(all(
    target_arch = "x86_64",
    any(target_env = "musl", feature = "musl-libc")
))]
mod musl_copy {
    use std::ffi::c_void;

    use morloc_mcp::musl::memcopy;

    #[unsafe(no_mangle)]
    unsafe extern "C" fn memcpy(dst: *mut c_void, src: *const c_void, n: usize) -> *mut c_void {
        // SAFETY: the C contract of memcpy is the contract of copy_forward.
        unsafe { memcopy::copy_forward(dst.cast(), src.cast(), n) };
        dst
    }

    #[unsafe(no_mangle)]
    unsafe extern "C" fn memmove(dst: *mut c_void, src: *const c_void, n: usize) -> *mut c_void {
        // SAFETY: the C contract of memmove is the contract of copy_any.
        unsafe { memcopy::copy_any(dst.cast(), src.cast(), n) };
        dst
    }
}

/// What the glibc target's standard library and libgcc's unwinder expect
/// from the C library beyond what musl provides, for `make static`, which
/// links the glibc target against musl's `libc.a` (see `bench/static.sh`).
#[cfg(feature = "musl-libc")]
mod musl_libc {
    use std::ffi::{c_char, c_int, c_void};

    /// Asked by the standard library to choose how to spawn processes; any
    /// glibc from 2.24 on lets it use `posix_spawn`, whose musl version
    /// reports exec failures the same way.
    #[unsafe(no_mangle)]
    extern "C" fn gnu_get_libc_version() -> *const c_char {
        c"2.36".as_ptr()
    }

    /// glibc's lookup of the unwind tables for an address. Answering "not
    /// found" only means a panic prints no backtrace frames; with
    /// `panic = "abort"` nothing unwinds.
    #[unsafe(no_mangle)]
    extern "C" fn _dl_find_object(_pc: *mut c_void, _result: *mut c_void) -> c_int {
        -1
    }
}
