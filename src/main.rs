//! The `morloc-mcp` binary: parse the command line, then print or serve.
//!
//! Everything with logic lives in the library (`cli` for the command line);
//! this file only maps outcomes to output and exit statuses. A closed stdout
//! (`morloc-mcp tools prog | head`) counts as success.
//!
//! The C library calls `main` here directly (`no_main`): the standard
//! library's start-up, which this replaces, finds the main thread's stack
//! bounds by parsing `/proc/self/maps` with the C library's `sscanf` (for a
//! message on stack overflow), which maps in C library code that nothing
//! else here uses: without it the idle server's peak RSS is 0.15-0.34 MiB
//! lower (`bench/run.py`'s `idle` case). What that start-up did and this
//! server needs is done in [`start`]: standard descriptors that are closed
//! are opened on `/dev/null`, and SIGPIPE is ignored. A stack overflow still
//! kills the process (SIGSEGV on the guard page), only without the message.

// The test harness of this target brings its own `main` (no tests here).
#![cfg_attr(not(test), no_main)]
#![cfg_attr(test, allow(dead_code, unused_imports))]

use std::ffi::{c_char, c_int, CStr, OsStr, OsString};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;

use morloc_mcp::edge::cli::{self, Action, CliError, ServeConfig};
use morloc_mcp::edge::log;
use morloc_mcp::protocol::log::Level;

/// The process entry point, called by the C library's start-up code.
#[cfg(not(test))]
#[unsafe(no_mangle)]
extern "C" fn main(argc: c_int, argv: *const *const c_char) -> c_int {
    start();
    // SAFETY: the C library passes `argc` valid NUL-terminated strings in
    // `argv`, which live as long as the process.
    let mut args = (0..usize::try_from(argc).unwrap_or(0)).map(|i| unsafe {
        OsStr::from_bytes(CStr::from_ptr(*argv.add(i)).to_bytes()).to_os_string()
    });
    c_int::from(run(args.next(), args))
}

/// What the standard library's own start-up did that this server relies
/// on: fds 0, 1 and 2 refer to something (a descriptor opened later must
/// never become the protocol stdout by accident), and a write to a closed
/// pipe is an `EPIPE` error, not a fatal signal (the `tools | head` case;
/// `serve` ignores SIGPIPE again for its own reasons).
fn start() {
    for fd in 0..3 {
        // SAFETY: F_GETFD reads the descriptor flags; open(2) of a literal
        // path. An fd opened here is the lowest free one, which is `fd`.
        unsafe {
            if libc::fcntl(fd, libc::F_GETFD) == -1
                && io::Error::last_os_error().raw_os_error() == Some(libc::EBADF)
                && libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) == -1
            {
                libc::abort();
            }
        }
    }
    // SAFETY: installing SIG_IGN for SIGPIPE.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
}

fn run(argv0: Option<OsString>, argv: impl Iterator<Item = OsString>) -> u8 {
    let argv: Vec<OsString> = argv.collect();
    // Lines before serving (a usage error, a warning) already take the
    // format asked for; `serve` sets the level and format again.
    let (level, format) = cli::obs::early_logging(&argv);
    log::configure(level, format);
    let raw = match cli::parse_args(argv0.as_deref(), argv) {
        Ok(raw) => raw,
        Err(e) => return fail(&e),
    };
    let mut warnings = Vec::new();
    let action = cli::prepare(raw, &cli::Env::from_process(), &mut warnings);
    for warning in &warnings {
        log::warn(&format!("warning: {warning}"));
    }
    match action {
        Err(e) => fail(&e),
        Ok(Action::Print { stdout, stderr }) => {
            for line in &stderr {
                log::labelled(Level::Warn, line);
            }
            print(&stdout)
        }
        Ok(Action::Serve(config)) => serve(config),
    }
}

fn fail(error: &CliError) -> u8 {
    log::error(&error.to_string());
    error.exit_code()
}

fn print(text: &str) -> u8 {
    let mut stdout = io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => 0,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => 0,
        Err(e) => {
            log::error(&format!("cannot write to stdout: {e}"));
            1
        }
    }
}

fn serve(config: ServeConfig) -> u8 {
    match morloc_mcp::edge::reactor::serve(config) {
        Ok(code) => u8::try_from(code).unwrap_or(1),
        Err(e) => {
            // In the format --log-format asked for (serve set it first).
            log::error(&e.to_string());
            1
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
