//! Processes, signals and descriptors: the Linux-facing building blocks the
//! reactor calls to start pools, notice their death and tidy up after them.
//!
//! Everything here is a thin, documented wrapper over one or two system
//! calls, so the reactor can stay a readable state machine. The module owns
//! no long-lived state except the [`SignalPipe`] handler globals. It assumes
//! Linux: `prctl`, `pipe2`, `F_DUPFD_CLOEXEC` and `epoll` are used directly.
//!
//! Descriptor discipline: every descriptor this module creates is
//! close-on-exec, so a pool inherits only the three standard descriptors it
//! is explicitly given.

#![deny(clippy::undocumented_unsafe_blocks)]

use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::io;
use std::mem;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

/// Calls a `libc` function and turns the C convention "-1 means failure,
/// details in errno" into an `io::Result`.
///
/// The macro contains the `unsafe` block so that call sites stay short;
/// every call site carries its own `// SAFETY:` comment saying why the
/// arguments are valid for that particular call.
macro_rules! syscall {
    ($name:ident ( $($arg:expr),* $(,)? )) => {{
        // SAFETY: the call site documents why these arguments are valid.
        #[allow(unused_unsafe)]
        let res = unsafe { ::libc::$name($($arg),*) };
        if res == -1 {
            Err(::std::io::Error::last_os_error())
        } else {
            Ok(res)
        }
    }};
}
pub(crate) use syscall;

/// The signals [`SignalPipe`] turns into readable bytes.
pub const HANDLED_SIGNALS: [i32; 4] = [libc::SIGCHLD, libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

/// Signals whose disposition a pool must start with at the default, whatever
/// the server did with them. Handlers are reset by `execve` anyway, but
/// "ignored" survives it, and the window between `fork` and `execve` would
/// otherwise run our handlers in the child.
const CHILD_DEFAULT_SIGNALS: [i32; 6] = [
    libc::SIGPIPE,
    libc::SIGCHLD,
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
];

/// Moves the real standard output out of the way and returns it as the
/// protocol stream.
///
/// Fd 1 is duplicated onto the lowest free descriptor at or above 3, marked
/// close-on-exec so pools never inherit it; then fd 1 is made a copy of fd 2.
/// From then on anything that writes to "stdout" (pools, libraries, stray
/// `println!`) lands on stderr, and only the returned descriptor carries
/// protocol messages. Call this once, before starting any pool.
pub fn rehome_stdout() -> io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC only reads fd 1 and creates a new descriptor.
    let fd = syscall!(fcntl(libc::STDOUT_FILENO, libc::F_DUPFD_CLOEXEC, 3))?;
    // SAFETY: fcntl just created `fd`; nothing else owns it.
    let protocol = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: dup2 takes two plain descriptor numbers and replaces fd 1 atomically.
    match syscall!(dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO)) {
        Ok(_) => {}
        // With fd 2 closed there is no stderr to share, but fd 1 must still
        // stop pointing at the protocol stream: send it to /dev/null.
        Err(err) if err.raw_os_error() == Some(libc::EBADF) => {
            let null = fs::OpenOptions::new().write(true).open("/dev/null")?;
            // SAFETY: `null` is an open descriptor for the duration of the call.
            syscall!(dup2(null.as_raw_fd(), libc::STDOUT_FILENO))?;
        }
        Err(err) => return Err(err),
    }
    Ok(protocol)
}

/// Creates the per-run directory `/tmp/morloc.XXXXXX` with mode 0700.
///
/// Like the reference this ignores `$TMPDIR`: the pool socket paths
/// `<tmpdir>/pipe-<lang>` must fit in `sun_path` (108 bytes) and in the C++
/// pool's 128-byte buffer, and an arbitrary `$TMPDIR` could make them too long.
pub fn make_tmpdir() -> io::Result<PathBuf> {
    make_tmpdir_in(Path::new("/tmp"))
}

/// Creates `<parent>/morloc.XXXXXX` with mode 0700 (see [`make_tmpdir`]).
pub fn make_tmpdir_in(parent: &Path) -> io::Result<PathBuf> {
    let mut template = parent.join("morloc.XXXXXX").into_os_string().into_vec();
    template.push(0);
    // SAFETY: `template` is a writable NUL-terminated buffer; mkdtemp only
    // rewrites the six X characters in place.
    let res = unsafe { libc::mkdtemp(template.as_mut_ptr().cast()) };
    if res.is_null() {
        let err = io::Error::last_os_error();
        return Err(io::Error::new(
            err.kind(),
            format!(
                "cannot create temporary directory {}/morloc.XXXXXX: {err}",
                parent.display()
            ),
        ));
    }
    template.pop();
    Ok(PathBuf::from(OsString::from_vec(template)))
}

/// Removes a directory tree, treating "already gone" as success.
pub fn remove_tmpdir(path: &Path) -> io::Result<()> {
    match fs::remove_dir_all(path) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => Err(io::Error::new(
            err.kind(),
            format!("cannot remove {}: {err}", path.display()),
        )),
        _ => Ok(()),
    }
}

/// Fills `buf` from the kernel's random source: the `getrandom` system call,
/// which needs no file (a minimal container may have no `/dev`), or
/// `/dev/urandom` where the call is missing or forbidden (old kernels,
/// seccomp filters).
pub fn fill_random(buf: &mut [u8]) -> io::Result<()> {
    let mut filled = 0;
    while filled < buf.len() {
        let rest = &mut buf[filled..];
        // SAFETY: the pointer and length describe `rest`.
        let err = match syscall!(getrandom(rest.as_mut_ptr().cast(), rest.len(), 0)) {
            Ok(n) => {
                filled += n as usize;
                continue;
            }
            Err(err) => err,
        };
        match err.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::ENOSYS | libc::EPERM) => {
                use std::io::Read;
                return fs::File::open("/dev/urandom")
                    .and_then(|mut file| file.read_exact(rest))
                    .map_err(|e| {
                        io::Error::new(
                            e.kind(),
                            format!("no random source: getrandom: {err}; /dev/urandom: {e}"),
                        )
                    });
            }
            _ => return Err(err),
        }
    }
    Ok(())
}

/// What to run for one pool.
#[derive(Clone, Debug, Default)]
pub struct PoolSpawn {
    /// The manifest's `exec` list, already resolved: the first element is
    /// looked up through `PATH` if it has no slash, the last one (the pool
    /// script or binary) is absolute.
    pub program: Vec<OsString>,
    /// Appended after `program`; for a pool `[socket_path, tmpdir, basename]`.
    pub args: Vec<OsString>,
    /// Added to (or overriding) the inherited environment.
    pub env: Vec<(OsString, OsString)>,
}

impl PoolSpawn {
    /// The argument vector the pool protocol prescribes:
    /// `exec ++ [socket_path, tmpdir, basename]`, with no extra environment.
    pub fn for_pool(
        program: Vec<OsString>,
        socket_path: &Path,
        tmpdir: &Path,
        basename: &str,
    ) -> PoolSpawn {
        PoolSpawn {
            program,
            args: vec![
                socket_path.as_os_str().to_owned(),
                tmpdir.as_os_str().to_owned(),
                OsString::from(basename),
            ],
            env: Vec::new(),
        }
    }
}

/// A started pool.
#[derive(Debug)]
pub struct Spawned {
    /// Process id, which is also its process-group id.
    pub pid: i32,
    /// Read end of the pipe that carries the pool's stdout and stderr,
    /// non-blocking and close-on-exec. EOF arrives once every process of the
    /// pool that inherited the write end has exited.
    pub output: OwnedFd,
}

/// Starts one pool process.
///
/// The child gets stdin from `/dev/null`, stdout and stderr on one fresh
/// pipe (returned as [`Spawned::output`]), its own process group, default
/// signal dispositions and an empty signal mask, and `PR_SET_PDEATHSIG =
/// SIGTERM`. The child is not waited for: the caller reaps it by pid
/// ([`reap`] or [`reap_any`]).
///
/// Linux delivers the parent-death signal when the *thread* that forked the
/// child exits, so call this only from a thread that lives as long as the
/// server (the reactor's).
///
/// Implementation choice: `std::process::Command` with `process_group(0)`
/// and `pre_exec`, rather than a hand-written fork/exec. The standard
/// library already reports exec failures back to the parent through a
/// close-on-exec pipe (so "program not found" is an ordinary `io::Error`),
/// handles `PATH` lookup, the environment and the stdio `dup2`s, and
/// retries on `EINTR`; `pre_exec` covers the one thing it lacks, the
/// parent-death signal. `spawn` returns only after the child has exec'd.
pub fn spawn_pool(spec: &PoolSpawn) -> io::Result<Spawned> {
    let Some((exe, exe_args)) = spec.program.split_first() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "cannot start pool: empty command",
        ));
    };
    let (read_end, write_end) = pipe(libc::O_CLOEXEC)?;
    let write_end_for_stderr = write_end.try_clone()?;
    // SAFETY: getpid has no preconditions.
    let parent_pid = unsafe { libc::getpid() };

    let mut command = Command::new(exe);
    command
        .args(exe_args)
        .args(&spec.args)
        .envs(spec.env.iter().map(|(key, value)| (key, value)))
        .stdin(Stdio::null())
        .stdout(Stdio::from(write_end))
        .stderr(Stdio::from(write_end_for_stderr))
        .process_group(0);
    // SAFETY: the closure runs between fork and exec, where only
    // async-signal-safe calls are allowed. `child_setup` makes only raw
    // system calls (sigprocmask, signal, prctl, getppid) and does not
    // allocate, lock or touch Rust-level global state.
    unsafe {
        command.pre_exec(move || child_setup(parent_pid));
    }
    let child = command.spawn().map_err(|err| {
        io::Error::new(
            err.kind(),
            format!("cannot start pool command {exe:?}: {err}"),
        )
    })?;
    // Dropping the command closes our copies of the pipe's write end; the
    // pool's output reaches EOF only when nothing else holds it.
    drop(command);
    let pid = child.id() as i32;
    // Dropping a `Child` neither kills nor waits for it.
    drop(child);

    // The reference also sets the group from the parent side, which closes
    // the race in a raw fork/exec where the parent signals the group before
    // the child ran setpgid. Here the child has already exec'd (after its own
    // setpgid), so this normally fails with EACCES; ESRCH means it already
    // exited. Neither matters, and no other outcome changes anything either.
    // SAFETY: setpgid takes two plain integers.
    let _ = syscall!(setpgid(pid, pid));

    set_nonblocking(read_end.as_fd())?;
    Ok(Spawned {
        pid,
        output: read_end,
    })
}

/// Runs in the child between fork and exec. Async-signal-safe only.
fn child_setup(parent_pid: libc::pid_t) -> io::Result<()> {
    // SAFETY: `set` is a properly sized sigset_t that sigemptyset initialises
    // before sigprocmask reads it; the old-mask pointer may be null.
    unsafe {
        let mut set: libc::sigset_t = mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, ptr::null_mut());
    }
    for sig in CHILD_DEFAULT_SIGNALS {
        // SAFETY: installing SIG_DFL for a valid signal number.
        unsafe { libc::signal(sig, libc::SIG_DFL) };
    }
    // Our own descriptors are all close-on-exec, but whoever started the
    // server may have leaked some to us (an inherited pipe end would keep
    // the client waiting for an EOF that a pool postpones). Mark every
    // descriptor from 3 up close-on-exec too. Closing them outright would
    // also close the standard library's exec-error pipe. CLOSE_RANGE_CLOEXEC
    // needs Linux 5.11; on older kernels the call fails and is ignored.
    // SAFETY: close_range takes plain integers and only changes fd flags.
    unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    // SAFETY: PR_SET_PDEATHSIG takes the signal number as its second argument.
    syscall!(prctl(
        libc::PR_SET_PDEATHSIG,
        libc::SIGTERM as libc::c_ulong,
        0 as libc::c_ulong,
        0 as libc::c_ulong,
        0 as libc::c_ulong
    ))?;
    // If the server died before prctl ran, the signal will never come; the
    // child was re-parented, which getppid shows. Give up instead of running
    // as an orphan. A raw errno builds the error without allocating.
    // SAFETY: getppid has no preconditions.
    if unsafe { libc::getppid() } != parent_pid {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(())
}

/// Makes this process the reaper of its orphaned descendants, so pool
/// workers whose parent died are re-parented to us and can be reaped by
/// [`reap_any`] instead of lingering as zombies or escaping cleanup.
pub fn set_child_subreaper() -> io::Result<()> {
    // SAFETY: PR_SET_CHILD_SUBREAPER takes a plain flag.
    syscall!(prctl(
        libc::PR_SET_CHILD_SUBREAPER,
        1 as libc::c_ulong,
        0 as libc::c_ulong,
        0 as libc::c_ulong,
        0 as libc::c_ulong
    ))?;
    Ok(())
}

/// Ignores SIGPIPE, so that writing to a pool socket or a pipe whose reader
/// has gone away fails with `EPIPE` instead of killing the server.
/// Pools get the default disposition back in [`spawn_pool`].
pub fn ignore_sigpipe() -> io::Result<()> {
    // SAFETY: installing SIG_IGN for SIGPIPE.
    if unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) } == libc::SIG_ERR {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sends `sig` to every process in group `pgid`; a group that no longer
/// exists is not an error.
///
/// `pgid` must be greater than 1: `kill(0, ..)` would hit our own group and
/// `kill(-1, ..)` every process we may signal, so both are refused.
pub fn kill_group(pgid: i32, sig: i32) -> io::Result<()> {
    if pgid <= 1 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing to signal process group {pgid}"),
        ));
    }
    // SAFETY: kill takes plain integers; the negative pid names the group.
    match syscall!(kill(-pgid, sig)) {
        Err(err) if err.raw_os_error() != Some(libc::ESRCH) => Err(err),
        _ => Ok(()),
    }
}

/// True while any process of group `pgid` exists. Zombies count: reap
/// before asking if "exited" is what you want to know.
pub fn group_alive(pgid: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence and permission.
    match syscall!(kill(-pgid, 0)) {
        Ok(_) => true,
        // EPERM: members exist but belong to someone else.
        Err(err) => err.raw_os_error() == Some(libc::EPERM),
    }
}

/// How a child process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitDesc {
    /// Normal exit with this status.
    Exited(i32),
    /// Terminated by a signal.
    Signaled { signal: i32, core_dumped: bool },
    /// Any other wait status (not produced without WUNTRACED/WCONTINUED).
    Other(i32),
}

impl ExitDesc {
    /// Decodes a raw `waitpid` status.
    pub fn from_wait_status(status: i32) -> ExitDesc {
        if libc::WIFEXITED(status) {
            ExitDesc::Exited(libc::WEXITSTATUS(status))
        } else if libc::WIFSIGNALED(status) {
            ExitDesc::Signaled {
                signal: libc::WTERMSIG(status),
                core_dumped: libc::WCOREDUMP(status),
            }
        } else {
            ExitDesc::Other(status)
        }
    }
}

impl fmt::Display for ExitDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ExitDesc::Exited(code) => write!(f, "exited with status {code}"),
            ExitDesc::Signaled {
                signal,
                core_dumped,
            } => {
                write!(f, "killed by signal {signal}")?;
                if let Some(name) = signal_name(signal) {
                    write!(f, " ({name})")?;
                }
                if core_dumped {
                    f.write_str(", core dumped")?;
                }
                Ok(())
            }
            ExitDesc::Other(status) => write!(f, "changed state (wait status {status:#x})"),
        }
    }
}

/// The conventional name of a standard signal, e.g. `SIGKILL` for 9.
pub fn signal_name(sig: i32) -> Option<&'static str> {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGPWR => "SIGPWR",
        libc::SIGSYS => "SIGSYS",
        _ => return None,
    };
    Some(name)
}

/// Non-blocking `waitpid(pid, WNOHANG)`: `Some` if `pid` has ended (and is
/// now reaped), `None` if it is still running, is not our child, or was
/// already reaped.
pub fn reap(pid: i32) -> Option<ExitDesc> {
    // pid 0 and negative pids mean "any child of a group" to waitpid.
    if pid <= 0 {
        return None;
    }
    loop {
        let mut status = 0;
        // SAFETY: `status` is a valid out-pointer for the duration of the call.
        match syscall!(waitpid(pid, &mut status, libc::WNOHANG)) {
            Ok(0) => return None,
            Ok(_) => return Some(ExitDesc::from_wait_status(status)),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        }
    }
}

/// Whether process `pid` is on its way out: inside exit (the kernel's
/// `PF_EXITING`, set before the process closes its descriptors) or a zombie
/// not reaped yet. A connection that breaks while its peer process is
/// exiting was broken by that exit, and SIGCHLD follows. `false` when it
/// runs on, is gone, or `/proc` cannot say.
pub fn is_exiting(pid: i32) -> bool {
    pid > 0 && fs::read(format!("/proc/{pid}/stat")).is_ok_and(|stat| stat_says_exiting(&stat))
}

/// The reading of a `/proc/<pid>/stat` line for [`is_exiting`]: `pid
/// (comm) state ppid pgrp session tty_nr tpgid flags ...`, counted from
/// the last `)` (the command may hold spaces and parentheses).
fn stat_says_exiting(stat: &[u8]) -> bool {
    const PF_EXITING: u64 = 0x4;
    let Some(close) = stat.iter().rposition(|&b| b == b')') else {
        return false;
    };
    let rest = String::from_utf8_lossy(&stat[close + 1..]);
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next();
    let flags = fields.nth(5).and_then(|f| f.parse::<u64>().ok());
    matches!(state, Some("Z" | "X" | "x")) || flags.is_some_and(|f| f & PF_EXITING != 0)
}

/// Reaps every child that has ended, without blocking.
///
/// As a subreaper ([`set_child_subreaper`]) we also inherit orphaned pool
/// workers, whose pids the caller never saw, so waiting for known pids alone
/// would leave zombies. Pids that match no pool can simply be dropped.
pub fn reap_any() -> Vec<(i32, ExitDesc)> {
    let mut reaped = Vec::new();
    loop {
        let mut status = 0;
        // SAFETY: `status` is a valid out-pointer for the duration of the call.
        match syscall!(waitpid(-1, &mut status, libc::WNOHANG)) {
            Ok(0) => break,
            Ok(pid) => reaped.push((pid, ExitDesc::from_wait_status(status))),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            // ECHILD: no children left at all.
            Err(_) => break,
        }
    }
    reaped
}

/// Write end of the self-pipe, read by the signal handler; -1 when none.
static SIGNAL_WRITE_FD: AtomicI32 = AtomicI32::new(-1);
/// Bit `n - 1` set means signal `n` arrived since the last drain.
static PENDING_SIGNALS: AtomicU64 = AtomicU64::new(0);
/// Guards the one-instance rule of [`SignalPipe`].
static SIGNAL_PIPE_TAKEN: AtomicBool = AtomicBool::new(false);

/// Turns SIGCHLD, SIGTERM, SIGINT and SIGHUP into readiness on a pipe, so
/// the reactor learns about them from `poll` like any other event.
///
/// The handlers (installed with `SA_RESTART`, so interrupted system calls
/// resume) record the signal in an atomic bit set and write its number as
/// one byte to a non-blocking close-on-exec pipe. The bit set is the source
/// of truth; the byte is only a wake-up. That way a full pipe (a burst of
/// SIGCHLDs, say) can drop bytes without ever losing a SIGTERM. The price is
/// that [`SignalPipe::drain`] reports which signals arrived, not how often,
/// which is all the reactor needs: one SIGCHLD means "reap everything".
///
/// Register [`SignalPipe::as_raw_fd`] for readable interest with mio's
/// `SourceFd`, and call [`SignalPipe::drain`] on every readable event (mio is
/// edge-triggered; `drain` reads until the pipe is empty).
///
/// Only one instance may exist per process, because signal dispositions are
/// process-wide; a second [`SignalPipe::new`] fails with `AlreadyExists`.
/// Dropping the instance restores the previous dispositions.
pub struct SignalPipe {
    read_end: OwnedFd,
    /// Kept open for the handler, which knows it only by number.
    _write_end: OwnedFd,
    /// Dispositions to restore on drop, in the order of `HANDLED_SIGNALS`.
    previous: Vec<(i32, libc::sigaction)>,
}

impl SignalPipe {
    /// Creates the pipe and installs the handlers.
    pub fn new() -> io::Result<SignalPipe> {
        if SIGNAL_PIPE_TAKEN.swap(true, Ordering::SeqCst) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "a signal pipe is already installed in this process",
            ));
        }
        let (read_end, write_end) = match pipe(libc::O_CLOEXEC | libc::O_NONBLOCK) {
            Ok(ends) => ends,
            Err(err) => {
                SIGNAL_PIPE_TAKEN.store(false, Ordering::SeqCst);
                return Err(err);
            }
        };
        PENDING_SIGNALS.store(0, Ordering::SeqCst);
        SIGNAL_WRITE_FD.store(write_end.as_raw_fd(), Ordering::SeqCst);
        let mut pipe = SignalPipe {
            read_end,
            _write_end: write_end,
            previous: Vec::with_capacity(HANDLED_SIGNALS.len()),
        };
        for sig in HANDLED_SIGNALS {
            // SAFETY: an all-zero sigaction is a valid value to fill in.
            let mut action: libc::sigaction = unsafe { mem::zeroed() };
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART | libc::SA_NOCLDSTOP;
            // SAFETY: `action.sa_mask` is a valid sigset_t to clear.
            syscall!(sigemptyset(&mut action.sa_mask))?;
            // SAFETY: as above, a zeroed sigaction is a valid out-buffer.
            let mut old: libc::sigaction = unsafe { mem::zeroed() };
            // An early return drops `pipe`, which restores what was
            // installed so far.
            // SAFETY: both pointers refer to live sigaction structs; the
            // handler is async-signal-safe (see `on_signal`).
            syscall!(sigaction(sig, &action, &mut old))?;
            pipe.previous.push((sig, old));
        }
        Ok(pipe)
    }

    /// Reads the pipe until it is empty and returns the signals that arrived
    /// since the last call, each once, in ascending order.
    pub fn drain(&self) -> Vec<i32> {
        let mut buf = [0u8; 64];
        loop {
            // SAFETY: `buf` is valid for writes of its full length.
            match syscall!(read(
                self.read_end.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len()
            )) {
                Ok(n) if n > 0 => continue,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                // 0 (cannot happen while we hold the write end) or WouldBlock.
                _ => break,
            }
        }
        // Swapping after the read loop cannot lose a signal: a handler sets
        // its bit before writing its byte, so a bit we miss here comes with a
        // byte still in the pipe, which triggers the next readable event.
        let pending = PENDING_SIGNALS.swap(0, Ordering::SeqCst);
        (1..=64)
            .filter(|sig| pending & (1u64 << (sig - 1)) != 0)
            .collect()
    }
}

impl AsRawFd for SignalPipe {
    /// The read end, to register with the poller.
    fn as_raw_fd(&self) -> RawFd {
        self.read_end.as_raw_fd()
    }
}

impl Drop for SignalPipe {
    fn drop(&mut self) {
        for (sig, old) in self.previous.drain(..) {
            // SAFETY: `old` is the disposition the kernel handed back when
            // we installed ours; restoring it is always valid.
            let _ = syscall!(sigaction(sig, &old, ptr::null_mut()));
        }
        // Handlers are gone, so nobody reads the descriptor number after this
        // (in a multi-threaded process a handler already running on another
        // thread could still race with the close; the server is single-threaded).
        SIGNAL_WRITE_FD.store(-1, Ordering::SeqCst);
        SIGNAL_PIPE_TAKEN.store(false, Ordering::SeqCst);
    }
}

/// The signal handler. Async-signal-safe: it touches only lock-free atomics,
/// `write(2)` and errno, which it restores so the interrupted code never sees
/// it change.
extern "C" fn on_signal(sig: libc::c_int) {
    // SAFETY: __errno_location returns this thread's errno slot, valid for
    // the life of the thread.
    let errno_slot = unsafe { libc::__errno_location() };
    // SAFETY: see above.
    let saved_errno = unsafe { *errno_slot };
    if (1..=64).contains(&sig) {
        PENDING_SIGNALS.fetch_or(1u64 << (sig - 1), Ordering::SeqCst);
    }
    let fd = SIGNAL_WRITE_FD.load(Ordering::SeqCst);
    if fd >= 0 {
        let byte = sig as u8;
        // SAFETY: `byte` is valid for one byte; a failed write (pipe full)
        // is fine because the bit above already records the signal.
        unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) };
    }
    // SAFETY: see above.
    unsafe { *errno_slot = saved_errno };
}

/// Sets `O_NONBLOCK` on a descriptor.
///
/// The flag lives on the open file description, which may be shared: setting
/// it on an inherited stdin also affects other processes reading that same
/// terminal or pipe.
pub fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: F_GETFL only reads the flags of a descriptor we borrow.
    let flags = syscall!(fcntl(fd.as_raw_fd(), libc::F_GETFL))?;
    if flags & libc::O_NONBLOCK == 0 {
        // SAFETY: F_SETFL with the flags just read plus O_NONBLOCK.
        syscall!(fcntl(
            fd.as_raw_fd(),
            libc::F_SETFL,
            flags | libc::O_NONBLOCK
        ))?;
    }
    Ok(())
}

/// Whether epoll (and so mio) accepts this descriptor.
///
/// epoll refuses regular files and `/dev/null` with `EPERM`, because they
/// are always ready. Stdin redirected from a file is therefore not
/// registrable; the reactor must read it with plain blocking reads instead.
/// This asks the kernel directly with a throw-away epoll instance.
pub fn is_pollable(fd: BorrowedFd<'_>) -> bool {
    // SAFETY: epoll_create1 takes only flags.
    let Ok(epfd) = syscall!(epoll_create1(libc::EPOLL_CLOEXEC)) else {
        return false;
    };
    // SAFETY: epoll_create1 just created `epfd`; nothing else owns it.
    let epoll = unsafe { OwnedFd::from_raw_fd(epfd) };
    let mut event = libc::epoll_event {
        events: libc::EPOLLIN as u32,
        u64: 0,
    };
    // SAFETY: both descriptors are open and `event` is a valid epoll_event.
    syscall!(epoll_ctl(
        epoll.as_raw_fd(),
        libc::EPOLL_CTL_ADD,
        fd.as_raw_fd(),
        &mut event
    ))
    .is_ok()
}

/// `pipe2` with the given flags, as owned descriptors (read end, write end),
/// always close-on-exec.
fn pipe(flags: libc::c_int) -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds: [libc::c_int; 2] = [-1, -1];
    // SAFETY: `fds` is valid for the two descriptors pipe2 writes.
    syscall!(pipe2(fds.as_mut_ptr(), flags | libc::O_CLOEXEC))?;
    // SAFETY: pipe2 succeeded, so both are fresh descriptors owned by nobody else.
    let ends = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok(ends)
}

#[cfg(test)]
mod tests;
