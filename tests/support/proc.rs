//! Processes under test: locating the binary and the test data, throw-away
//! directories, and running the binary with a deadline so a hang fails the
//! test instead of stalling the run.
//!
//! Every wait has a timeout. Output of a long-running child is read by
//! background threads into channels, so a test can wait for "the next line"
//! with a deadline without non-blocking I/O.

use std::ffi::OsStr;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::thread;
use std::time::{Duration, Instant};

use super::time::TIMEOUT;

/// The binary under test: the one cargo built with the tests, or the one
/// named by `MORLOC_MCP_TEST_BIN` (how `make static` runs this whole suite
/// against the static binary).
pub fn bin() -> PathBuf {
    match std::env::var_os("MORLOC_MCP_TEST_BIN") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_morloc-mcp")),
    }
}

/// A path inside `tests/data`.
pub fn data(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(relative)
}

/// Reads a file or fails the test with its path.
#[track_caller]
pub fn read(path: &Path) -> String {
    match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => panic!("cannot read {}: {e}", path.display()),
    }
}

/// A fresh, empty directory removed when dropped. Names come from the process
/// id and a counter, so parallel tests never share one; it lives under the
/// system temporary directory to keep Unix socket paths short.
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    #[track_caller]
    pub fn new() -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("morloc-mcp-test-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        if let Err(e) = fs::create_dir_all(&path) {
            panic!("cannot create {}: {e}", path.display());
        }
        TempDir { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn join(&self, relative: &str) -> PathBuf {
        self.path.join(relative)
    }

    /// Writes a file (creating parent directories) and returns its path.
    #[track_caller]
    pub fn write(&self, relative: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path.join(relative);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)
                .unwrap_or_else(|e| panic!("cannot create {}: {e}", parent.display()));
        }
        fs::write(&path, contents)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        path
    }

    /// Writes an executable file. No child is forked meanwhile (see
    /// [`FORKING`]), so none holds the file open for writing when something
    /// executes it.
    #[track_caller]
    pub fn write_executable(&self, relative: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let _no_fork = FORKING.write().unwrap_or_else(PoisonError::into_inner);
        let path = self.write(relative, contents);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755))
            .unwrap_or_else(|e| panic!("cannot chmod {}: {e}", path.display()));
        path
    }

    /// A symlink `relative` -> `target`.
    #[track_caller]
    pub fn symlink(&self, target: &Path, relative: &str) -> PathBuf {
        let path = self.path.join(relative);
        std::os::unix::fs::symlink(target, &path).unwrap_or_else(|e| {
            panic!(
                "cannot link {} -> {}: {e}",
                path.display(),
                target.display()
            )
        });
        path
    }
}

impl Default for TempDir {
    fn default() -> TempDir {
        TempDir::new()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// What a finished process left behind.
#[derive(Debug)]
pub struct Output {
    /// The exit code; `None` when killed by a signal.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// The stderr lines.
    pub fn stderr_lines(&self) -> Vec<&str> {
        self.stderr.lines().collect()
    }
}

/// Held shared while a child is forked and until it has exec'd (which
/// closes the descriptors it inherited from every thread of the tests), and
/// exclusively while a file to be executed is written: a child forked while
/// the writing descriptor is open holds it until its exec, and executing
/// the file meanwhile (the server starting a pool script, `make` running a
/// stand-in tool) fails with ETXTBSY.
static FORKING: RwLock<()> = RwLock::new(());

/// A command running the binary under test.
pub fn cmd<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut command = Command::new(bin());
    command.args(args);
    command.env_remove("MORLOC_MCP_TOKEN");
    command
}

/// Makes `command`'s child start with file-creation mask `mask` (a test of
/// file modes must not depend on the umask of whoever runs the suite).
pub fn with_umask(command: &mut Command, mask: u32) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: `umask` is async-signal-safe and touches no memory; the
    // closure runs in the child between fork and exec.
    unsafe {
        command.pre_exec(move || {
            libc::umask(mask as libc::mode_t);
            Ok(())
        })
    }
}

/// Runs the binary with these arguments and no stdin.
#[track_caller]
pub fn run<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    output(&mut cmd(args))
}

/// Runs a command to completion with no stdin, killing it after [`TIMEOUT`].
#[track_caller]
pub fn output(command: &mut Command) -> Output {
    output_within(command, TIMEOUT)
}

/// [`output`] for a command that does many steps and bounds each of them
/// itself (a script that runs pages of documentation): killed after
/// `deadline`, a limit for a hang, not for slowness.
#[track_caller]
pub fn output_within(command: &mut Command, deadline: Duration) -> Output {
    let mut child = Proc::spawn(command);
    let status = child.wait(deadline);
    Output {
        code: status.code(),
        stdout: child.stdout_rest(TIMEOUT),
        stderr: child.stderr_text(TIMEOUT),
    }
}

/// A running child with piped stdio. Stdout arrives line by line through a
/// channel; stderr is collected whole. The child is killed when dropped.
pub struct Proc {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Receiver<String>,
    stderr: Arc<Mutex<String>>,
    stderr_done: Receiver<()>,
    /// Served over HTTP, so no client is on stdin (see [`Proc::stop`]).
    http: bool,
}

impl Proc {
    #[track_caller]
    pub fn spawn(command: &mut Command) -> Proc {
        let http = command.get_args().any(|arg| arg == "--http-port");
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // A test process that is killed (a CI timeout, ^C) runs no `Drop`:
        // its children get SIGTERM then, as a client's stop would send,
        // rather than serve on (an HTTP server has no stdin to end it) beside
        // the next stage. The signal comes when the forking thread ends; a
        // test's thread outlives the processes it starts (they stop on drop).
        // SAFETY: prctl takes plain integers and is async-signal-safe; the
        // closure runs in the child between fork and exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(command, || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        // A script a test has just written is not held open by a child
        // forked here ([`FORKING`]), but a child forked elsewhere (the tidy
        // checks run `git`) may hold its writing descriptor until its exec:
        // "busy" (ETXTBSY) for a moment. Retry until that has surely passed.
        let deadline = Instant::now() + TIMEOUT;
        let forking = FORKING.read().unwrap_or_else(PoisonError::into_inner);
        let mut child = loop {
            match command.spawn() {
                Ok(child) => break child,
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && Instant::now() < deadline => {
                    thread::sleep(Duration::from_millis(10));
                }
                Err(e) => panic!("cannot spawn {command:?}: {e}"),
            }
        };
        // `spawn` returns once the child has exec'd.
        drop(forking);
        let stdin = child.stdin.take();
        let (line_tx, stdout) = mpsc::channel();
        if let Some(out) = child.stdout.take() {
            thread::spawn(move || {
                let mut reader = BufReader::new(out);
                loop {
                    // Lines keep their `\n` so a missing final newline is visible.
                    let mut line = String::new();
                    match reader.read_line(&mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {
                            if line_tx.send(line).is_err() {
                                break;
                            }
                        }
                    }
                }
            });
        }
        let stderr = Arc::new(Mutex::new(String::new()));
        let (done_tx, stderr_done) = mpsc::channel();
        if let Some(mut err) = child.stderr.take() {
            let sink = Arc::clone(&stderr);
            thread::spawn(move || {
                let mut buf = [0u8; 4096];
                loop {
                    match err.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            if let Ok(mut text) = sink.lock() {
                                text.push_str(&String::from_utf8_lossy(&buf[..n]));
                            }
                        }
                    }
                }
                let _ = done_tx.send(());
            });
        }
        Proc {
            child,
            stdin,
            stdout,
            stderr,
            stderr_done,
            http,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes `line` plus a newline to the child's stdin.
    #[track_caller]
    pub fn send_line(&mut self, line: &str) {
        self.send_bytes(format!("{line}\n").as_bytes());
    }

    #[track_caller]
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        let Some(stdin) = self.stdin.as_mut() else {
            panic!("stdin already closed")
        };
        if let Err(e) = stdin.write_all(bytes).and_then(|()| stdin.flush()) {
            panic!("cannot write to the child's stdin: {e}");
        }
    }

    /// Closes stdin (the child sees EOF).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The next stdout line (with its newline, if it had one), or `None` at
    /// EOF. Fails the test after `timeout`.
    #[track_caller]
    pub fn read_line(&mut self, timeout: Duration) -> Option<String> {
        match self.stdout.recv_timeout(timeout) {
            Ok(line) => Some(line),
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => {
                panic!(
                    "no stdout line within {timeout:?}; stderr so far:\n{}",
                    self.stderr_now()
                )
            }
        }
    }

    /// The next stdout line if one arrives within `wait`; `None` on silence
    /// or EOF (for asserting that nothing is sent).
    pub fn try_read_line(&mut self, wait: Duration) -> Option<String> {
        self.stdout.recv_timeout(wait).ok()
    }

    /// Everything left on stdout until EOF.
    #[track_caller]
    pub fn stdout_rest(&mut self, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        let mut text = String::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stdout.recv_timeout(left) {
                Ok(line) => text.push_str(&line),
                Err(RecvTimeoutError::Disconnected) => return text,
                Err(RecvTimeoutError::Timeout) => {
                    panic!("stdout not closed within {timeout:?}; got so far:\n{text}")
                }
            }
        }
    }

    /// Stderr collected so far.
    pub fn stderr_now(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// All of stderr, waiting up to `timeout` for it to close.
    pub fn stderr_text(&mut self, timeout: Duration) -> String {
        let _ = self.stderr_done.recv_timeout(timeout);
        self.stderr_now()
    }

    /// Waits for the child to exit; kills it and fails the test after `timeout`.
    #[track_caller]
    pub fn wait(&mut self, timeout: Duration) -> ExitStatus {
        self.close_stdin();
        self.wait_keeping_stdin(timeout)
    }

    /// Sends a signal (e.g. `libc::SIGTERM`) to the child.
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) has no memory-safety preconditions; the pid is our
        // own child, which has not been reaped while `self` exists.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, signal);
        }
    }
}

/// How long a dropped [`Proc`] gets to exit after each step of [`Proc::stop`].
const STOP_GRACE: Duration = Duration::from_secs(2);

impl Proc {
    /// Stops the child the way MCP clients stop a server: close stdin, then
    /// SIGTERM, then SIGKILL, each after [`STOP_GRACE`] without an exit. An
    /// HTTP server has no client on its stdin, so it starts at SIGTERM. A
    /// server given the chance removes its run directory and shared memory;
    /// one killed outright leaves them to the next server's start-up sweep.
    pub fn stop(&mut self) {
        let exited_within = |child: &mut Child, grace: Duration| {
            let deadline = Instant::now() + grace;
            loop {
                match child.try_wait() {
                    Ok(None) if Instant::now() < deadline => {
                        thread::sleep(Duration::from_millis(2))
                    }
                    Ok(None) => return false,
                    Ok(Some(_)) | Err(_) => return true,
                }
            }
        };
        self.close_stdin();
        if !self.http && exited_within(&mut self.child, STOP_GRACE) {
            return;
        }
        self.signal(libc::SIGTERM);
        if exited_within(&mut self.child, STOP_GRACE) {
            return;
        }
        // Killed outright, the server cannot stop its pools: a pool that
        // ignores SIGTERM (or waits out a long --pool-stop-grace) would
        // outlive the test, so its processes are ended here too.
        let pools = super::procfs::children_of(self.child.id() as i32);
        let _ = self.child.kill();
        let _ = self.child.wait();
        for pid in pools {
            // SAFETY: kill(2) has no memory-safety preconditions; the pids
            // were the server's children a moment ago (a pool leads its own
            // process group, so the group goes with it).
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.stop();
        }
    }
}

/// Compares two texts and, on a mismatch, shows the first differing line
/// with its neighbours instead of two walls of text.
#[track_caller]
pub fn assert_text_eq(expected: &str, actual: &str, what: &str) {
    if expected == actual {
        return;
    }
    let expected_lines: Vec<&str> = expected.split('\n').collect();
    let actual_lines: Vec<&str> = actual.split('\n').collect();
    let first = expected_lines
        .iter()
        .zip(&actual_lines)
        .position(|(e, a)| e != a)
        .unwrap_or_else(|| expected_lines.len().min(actual_lines.len()));
    let from = first.saturating_sub(3);
    let show = |lines: &[&str]| -> String {
        lines
            .iter()
            .enumerate()
            .skip(from)
            .take(7)
            .map(|(i, l)| format!("{:>5} | {l}\n", i + 1))
            .collect()
    };
    panic!(
        "{what} differs at line {}\n--- expected\n{}--- actual\n{}",
        first + 1,
        show(&expected_lines),
        show(&actual_lines)
    );
}

/// Compares `actual` with the golden file, or writes it when the file is
/// missing or `UPDATE_GOLDEN` is set.
#[track_caller]
pub fn check_golden(expected_path: &Path, actual: &str) {
    if std::env::var_os("UPDATE_GOLDEN").is_some() || !expected_path.exists() {
        fs::write(expected_path, actual)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", expected_path.display()));
        return;
    }
    let expected = read(expected_path);
    assert_text_eq(
        &expected,
        actual,
        &format!(
            "{} (rerun with UPDATE_GOLDEN=1 to accept)",
            expected_path.display()
        ),
    );
}

// ---- additions for tests/pools.rs -------------------------------------------

impl Proc {
    /// Like [`Proc::wait`], but keeps stdin open, so that an exit caused by a
    /// signal is not mistaken for (or raced by) an exit at EOF.
    #[track_caller]
    pub fn wait_keeping_stdin(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return status,
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(2)),
                Ok(None) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    panic!(
                        "process did not exit within {timeout:?}; stderr:\n{}",
                        self.stderr_now()
                    );
                }
                Err(e) => panic!("cannot wait for the child: {e}"),
            }
        }
    }
}

/// The test pool script that stands in for a compiled language pool.
pub fn test_pool() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pool/testpool.py")
}

/// Fails unless `text` is the JSON text the shapes program's `bigText`
/// answers for `chars`: a string of that many `x` (its start is shown
/// otherwise).
#[track_caller]
pub fn assert_big_text(text: &str, chars: u64) {
    let start = &text[..text.floor_char_boundary(200)];
    assert_eq!(text.len() as u64, chars + 2, "{start}");
    assert!(
        text.starts_with('"')
            && text.ends_with('"')
            && text[1..text.len() - 1].bytes().all(|b| b == b'x'),
        "{start}"
    );
}

/// A runnable copy of the `shapes` program in `dir`: its manifest with the
/// pool's command replaced by `python3 <absolute path of the test pool>`.
/// Returns the path of the written manifest.
#[track_caller]
pub fn shapes_manifest(dir: &TempDir) -> PathBuf {
    shapes_manifest_with(dir, |_| {})
}

/// Makes a shapes manifest serve calls concurrently: the test pool runs each
/// connection on its own thread (like a C++ pool), and large results travel
/// in files (`no_shm`), so no call needs its pool to itself (see the result
/// leases in ARCHITECTURE.md). A real Python pool runs one call at a time.
pub fn serve_concurrently(manifest: &mut serde_json::Value) {
    manifest["no_shm"] = serde_json::json!(true);
    manifest["pools"][0]["exec"] = serde_json::json!([
        "env",
        "TESTPOOL_WORKERS=threads",
        "python3",
        test_pool().to_string_lossy()
    ]);
}

/// [`shapes_manifest`], with `edit` applied to the manifest JSON before it
/// is written (to add commands or change fields).
#[track_caller]
pub fn shapes_manifest_with(dir: &TempDir, edit: impl FnOnce(&mut serde_json::Value)) -> PathBuf {
    let text = read(&data("shapes/manifest.json"));
    let mut manifest: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("shapes/manifest.json is not JSON: {e}"));
    let exec = serde_json::json!(["python3", test_pool().to_string_lossy()]);
    match manifest.pointer_mut("/pools/0/exec") {
        Some(slot) => *slot = exec,
        None => panic!("shapes/manifest.json has no pools[0].exec"),
    }
    edit(&mut manifest);
    dir.write("manifest.json", manifest.to_string())
}
