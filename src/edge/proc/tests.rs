//! Unit tests of the `proc` module (kept apart from the code they test).

use super::*;
use std::time::{Duration, Instant};

/// How long any test waits for a child before failing instead of hanging:
/// far more than any wait takes on a loaded machine, since only a failing
/// test waits this long.
const TIMEOUT: Duration = Duration::from_secs(60);

fn os(items: &[&str]) -> Vec<OsString> {
    items.iter().map(OsString::from).collect()
}

fn sh(script: &str) -> PoolSpawn {
    PoolSpawn {
        program: os(&["sh", "-c", script]),
        ..PoolSpawn::default()
    }
}

/// Waits until `fd` is readable or the deadline passes.
fn wait_readable(fd: RawFd, deadline: Instant) -> bool {
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `pfd` is one valid pollfd.
        match syscall!(poll(&mut pfd, 1, remaining.as_millis() as libc::c_int)) {
            // poll is never restarted after a signal handler, SA_RESTART
            // or not.
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            res => return matches!(res, Ok(n) if n > 0),
        }
    }
}

/// Reads a non-blocking descriptor until EOF, polling with a deadline.
#[track_caller]
fn read_to_eof(fd: &OwnedFd) -> String {
    let deadline = Instant::now() + TIMEOUT;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        // SAFETY: `buf` is valid for writes of its full length.
        match syscall!(read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len())) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n as usize]),
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                assert!(
                    wait_readable(fd.as_raw_fd(), deadline),
                    "no EOF within {TIMEOUT:?}"
                );
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => panic!("read failed: {err}"),
        }
    }
    String::from_utf8(out).expect("child output is UTF-8")
}

/// Polls `reap(pid)` until the child has ended.
#[track_caller]
fn reap_blocking(pid: i32) -> ExitDesc {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(desc) = reap(pid) {
            return desc;
        }
        assert!(Instant::now() < deadline, "pid {pid} did not exit");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Runs a script as a pool and returns (combined output, exit).
#[track_caller]
fn run(spec: &PoolSpawn) -> (String, ExitDesc) {
    let spawned = spawn_pool(spec).expect("spawn");
    let output = read_to_eof(&spawned.output);
    (output, reap_blocking(spawned.pid))
}

#[track_caller]
fn check_run(script: &str, expected_output: &str, expected_exit: &str) {
    let (output, exit) = run(&sh(script));
    assert_eq!(output, expected_output, "output of {script:?}");
    assert_eq!(exit.to_string(), expected_exit, "exit of {script:?}");
}

#[test]
fn spawn_collects_stdout_and_stderr_and_status() {
    check_run(
        "echo out; echo err >&2; exit 3",
        "out\nerr\n",
        "exited with status 3",
    );
    check_run("kill -9 $$", "", "killed by signal 9 (SIGKILL)");
    check_run("true", "", "exited with status 0");
}

#[test]
fn spawn_sets_up_the_child_environment() {
    // stdin is /dev/null; the child leads its own group; nothing is
    // blocked or ignored; extra env vars arrive; the extra arguments
    // follow the program; only fds 0-2 are open (listed by a separate
    // `ls` process, since a shell glob would see its own directory fd).
    let mut spec = sh(concat!(
        "readlink /proc/$$/fd/0; ",
        "echo pgid=$(cut -d' ' -f5 /proc/$$/stat) pid=$$; ",
        // Read with builtins: while the shell waits for a forked
        // command it blocks signals itself, which would show up here.
        "while IFS= read -r l; do case \"$l\" in SigBlk*|SigIgn*) printf '%s\\n' \"$l\";; esac; done < /proc/$$/status; ",
        "echo \"$POOL_TEST_VAR\" \"$0\" \"$1\"; ",
        "ls /proc/$$/fd"
    ));
    spec.args = os(&["first", "second"]);
    spec.env = vec![(OsString::from("POOL_TEST_VAR"), OsString::from("hello"))];
    let (output, exit) = run(&spec);
    assert_eq!(exit, ExitDesc::Exited(0));
    let lines: Vec<&str> = output.lines().collect();
    assert_eq!(lines.len(), 8, "unexpected output: {output}");
    assert_eq!(lines[0], "/dev/null");
    let (pgid, pid) = lines[1].split_once(' ').expect("pgid line");
    assert_eq!(
        pgid.trim_start_matches("pgid="),
        pid.trim_start_matches("pid=")
    );
    assert_eq!(lines[2], "SigBlk:\t0000000000000000");
    // The launcher of the tests may ignore signals we never touch, which
    // are inherited as they should be; the ones we change must not be.
    // (The Rust runtime ignores SIGPIPE in this test process.)
    let ignored = lines[3].strip_prefix("SigIgn:\t").expect("SigIgn line");
    let ignored = u64::from_str_radix(ignored, 16).expect("hex mask");
    for sig in CHILD_DEFAULT_SIGNALS {
        assert_eq!(
            ignored & (1 << (sig - 1)),
            0,
            "signal {sig} ignored in child"
        );
    }
    assert_eq!(lines[4], "hello first second");
    assert_eq!(lines[5..], ["0", "1", "2"]);
}

#[test]
fn spawn_failure_names_the_program() {
    let spec = PoolSpawn {
        program: os(&["/nonexistent/morloc-pool-binary", "x"]),
        ..PoolSpawn::default()
    };
    let err = spawn_pool(&spec).expect_err("must fail");
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
    let msg = err.to_string();
    assert!(msg.contains("\"/nonexistent/morloc-pool-binary\""), "{msg}");
    let err = spawn_pool(&PoolSpawn::default()).expect_err("empty command");
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
}

#[test]
fn for_pool_appends_the_protocol_arguments() {
    let spec = PoolSpawn::for_pool(
        os(&["python3", "/opt/p/pools/py/pool.py"]),
        Path::new("/tmp/morloc.abc/pipe-py"),
        Path::new("/tmp/morloc.abc"),
        "morloc-1-00",
    );
    assert_eq!(
        spec.args,
        os(&["/tmp/morloc.abc/pipe-py", "/tmp/morloc.abc", "morloc-1-00"])
    );
}

#[test]
fn exit_desc_display() {
    #[track_caller]
    fn check(desc: ExitDesc, expected: &str) {
        assert_eq!(desc.to_string(), expected);
    }
    check(ExitDesc::Exited(0), "exited with status 0");
    check(ExitDesc::from_wait_status(3 << 8), "exited with status 3");
    check(
        ExitDesc::from_wait_status(9),
        "killed by signal 9 (SIGKILL)",
    );
    check(
        ExitDesc::from_wait_status(15),
        "killed by signal 15 (SIGTERM)",
    );
    check(
        ExitDesc::from_wait_status(11 | 0x80),
        "killed by signal 11 (SIGSEGV), core dumped",
    );
    check(
        ExitDesc::Signaled {
            signal: 40,
            core_dumped: false,
        },
        "killed by signal 40",
    );
    check(
        ExitDesc::from_wait_status(0xffff),
        "changed state (wait status 0xffff)",
    );
}

#[test]
fn kill_group_refuses_dangerous_targets() {
    for pgid in [-5, 0, 1] {
        let err = kill_group(pgid, 0).expect_err("refused");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(!group_alive(pgid));
    }
    // A group that does not exist is fine to signal and not alive.
    assert!(kill_group(i32::MAX, libc::SIGTERM).is_ok());
    assert!(!group_alive(i32::MAX));
    assert_eq!(reap(0), None);
    assert_eq!(reap(-1), None);
}

#[test]
fn tmpdir_is_private_and_removable() {
    use std::os::unix::fs::PermissionsExt;
    let dir = make_tmpdir().expect("mkdtemp");
    let text = dir.to_str().expect("utf-8");
    assert!(text.starts_with("/tmp/morloc.") && text.len() == "/tmp/morloc.XXXXXX".len());
    let mode = fs::metadata(&dir).expect("stat").permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    fs::create_dir(dir.join("sub")).expect("mkdir");
    fs::write(dir.join("sub/file"), b"x").expect("write");
    remove_tmpdir(&dir).expect("remove");
    assert!(!dir.exists());
    remove_tmpdir(&dir).expect("removing twice is fine");
}

#[test]
fn pollability_and_nonblocking() {
    let null = fs::File::open("/dev/null").expect("open");
    assert!(!is_pollable(null.as_fd()), "epoll refuses /dev/null");
    let (read_end, _write_end) = pipe(libc::O_CLOEXEC).expect("pipe");
    assert!(is_pollable(read_end.as_fd()));
    set_nonblocking(read_end.as_fd()).expect("nonblocking");
    let mut buf = [0u8; 1];
    // SAFETY: `buf` is valid for one byte.
    let err =
        syscall!(read(read_end.as_raw_fd(), buf.as_mut_ptr().cast(), 1)).expect_err("empty pipe");
    assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
}

// Tests below change process-wide state (signal handlers, subreaper
// status) or reap arbitrary children, which would disturb tests running
// on other threads. Each re-runs itself alone in a fresh copy of the test
// binary; the copy sees the environment variable and does the real work.

const ISOLATED_ENV: &str = "MORLOC_PROC_ISOLATED_TEST";

/// In the parent test process: re-run test `name` in a child process and
/// assert that it passed. In that child: return true so the caller runs
/// the body.
#[track_caller]
fn isolated(name: &str) -> bool {
    if std::env::var(ISOLATED_ENV).as_deref() == Ok(name) {
        return true;
    }
    let exe = std::env::current_exe().expect("test binary path");
    let output = Command::new(exe)
        .args([
            "--exact",
            &format!("edge::proc::tests::{name}"),
            "--test-threads=1",
            "--nocapture",
        ])
        .env(ISOLATED_ENV, name)
        .stdin(Stdio::null())
        .output()
        .expect("re-run test binary");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "isolated test {name} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    false
}

#[test]
fn signal_pipe_reports_sigchld_and_sigterm() {
    if !isolated("signal_pipe_reports_sigchld_and_sigterm") {
        return;
    }
    let signals = SignalPipe::new().expect("install");
    let err = SignalPipe::new().err().expect("second instance refused");
    assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
    assert_eq!(signals.drain(), Vec::<i32>::new());

    let spawned = spawn_pool(&sh("exit 7")).expect("spawn");
    let deadline = Instant::now() + TIMEOUT;
    let mut seen = Vec::new();
    while !seen.contains(&libc::SIGCHLD) {
        assert!(
            wait_readable(signals.as_raw_fd(), deadline),
            "no SIGCHLD byte"
        );
        seen.extend(signals.drain());
    }
    assert_eq!(reap_any(), vec![(spawned.pid, ExitDesc::Exited(7))]);
    assert_eq!(reap_any(), vec![], "nothing left to reap");

    // SAFETY: raise delivers SIGTERM to this thread; our handler catches it.
    unsafe { libc::raise(libc::SIGTERM) };
    assert!(wait_readable(signals.as_raw_fd(), Instant::now() + TIMEOUT));
    assert_eq!(signals.drain(), vec![libc::SIGTERM]);
    assert_eq!(signals.drain(), Vec::<i32>::new(), "drained");

    drop(signals);
    let again = SignalPipe::new().expect("reinstall after drop");
    drop(again);
}

#[test]
fn kill_group_takes_down_a_process_tree() {
    if !isolated("kill_group_takes_down_a_process_tree") {
        return;
    }
    set_child_subreaper().expect("subreaper");
    // The shell starts two grandchildren in the same group and prints
    // their pids, then waits.
    let spawned = spawn_pool(&sh("sleep 30 & echo $!; sleep 30 & echo $!; wait")).expect("spawn");
    let pgid = spawned.pid;
    let deadline = Instant::now() + TIMEOUT;
    // Both pids are printed before the group is killed: a kill between the
    // two `sleep`s would leave one grandchild unborn (a slow machine may
    // take any time to get there).
    let mut output = Vec::new();
    while output.iter().filter(|&&b| b == b'\n').count() < 2 {
        let mut buf = [0u8; 64];
        // SAFETY: `buf` is valid for writes of its full length.
        match syscall!(read(
            spawned.output.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len()
        )) {
            Ok(0) => panic!(
                "the shell ended early: {:?}",
                String::from_utf8_lossy(&output)
            ),
            Ok(n) => output.extend_from_slice(&buf[..n as usize]),
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                assert!(
                    wait_readable(spawned.output.as_raw_fd(), deadline),
                    "no pids"
                );
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => panic!("read failed: {err}"),
        }
    }
    assert!(group_alive(pgid));
    kill_group(pgid, libc::SIGKILL).expect("kill");
    // The grandchildren hold the output pipe; EOF proves they died too.
    let output = String::from_utf8(output).expect("pids") + &read_to_eof(&spawned.output);
    let mut grandchildren: Vec<i32> = output
        .lines()
        .map(|line| line.parse().expect("pid line"))
        .collect();
    assert_eq!(grandchildren.len(), 2, "output: {output}");
    // Zombies keep the group alive until reaped; the grandchildren come
    // back to us because we are their subreaper once the shell dies.
    let mut reaped = Vec::new();
    while group_alive(pgid) {
        assert!(Instant::now() < deadline, "group {pgid} still alive");
        reaped.extend(reap_any());
        std::thread::sleep(Duration::from_millis(2));
    }
    reaped.sort_by_key(|(pid, _)| *pid);
    grandchildren.push(pgid);
    grandchildren.sort();
    let pids: Vec<i32> = reaped.iter().map(|(pid, _)| *pid).collect();
    assert_eq!(pids, grandchildren);
    for (_, desc) in reaped {
        assert_eq!(desc.to_string(), "killed by signal 9 (SIGKILL)");
    }
}

#[test]
fn rehome_stdout_sends_fd1_to_stderr() {
    if !isolated("rehome_stdout_sends_fd1_to_stderr") {
        return;
    }
    let before = fs::read_link("/proc/self/fd/1").expect("fd 1");
    let stderr_target = fs::read_link("/proc/self/fd/2").expect("fd 2");
    let protocol = rehome_stdout().expect("rehome");
    assert!(protocol.as_raw_fd() >= 3);
    let fd = protocol.as_raw_fd();
    assert_eq!(
        fs::read_link(format!("/proc/self/fd/{fd}")).expect("protocol fd"),
        before
    );
    assert_eq!(
        fs::read_link("/proc/self/fd/1").expect("fd 1"),
        stderr_target
    );
    // SAFETY: F_GETFD only reads the descriptor flags.
    let flags = syscall!(fcntl(fd, libc::F_GETFD)).expect("flags");
    assert_ne!(flags & libc::FD_CLOEXEC, 0);
    // Restore fd 1 so the test harness can still report.
    // SAFETY: dup2 between two open descriptors.
    syscall!(dup2(fd, libc::STDOUT_FILENO)).expect("restore");
    // The close-on-exec protocol fd does not reach a pool.
    let (output, _) = run(&sh("ls /proc/$$/fd"));
    assert_eq!(output, "0\n1\n2\n");
    drop(protocol);
}

#[test]
fn ignore_sigpipe_sets_sig_ign() {
    if !isolated("ignore_sigpipe_sets_sig_ign") {
        return;
    }
    // SAFETY: installing SIG_DFL for SIGPIPE in this throw-away process.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    ignore_sigpipe().expect("ignore");
    // SAFETY: a zeroed sigaction is a valid out-buffer; act is null so
    // nothing changes.
    let mut old: libc::sigaction = unsafe { mem::zeroed() };
    // SAFETY: querying only.
    syscall!(sigaction(libc::SIGPIPE, ptr::null(), &mut old)).expect("query");
    assert_eq!(old.sa_sigaction, libc::SIG_IGN);
}

#[test]
fn random_bytes_come_from_the_kernel() {
    let mut empty = [0u8; 0];
    fill_random(&mut empty).unwrap();
    let mut a = [0u8; 64];
    let mut b = [0u8; 64];
    fill_random(&mut a).unwrap();
    fill_random(&mut b).unwrap();
    // 512 random bits: equal draws or an all-zero draw mean no randomness.
    assert_ne!(a, b);
    assert_ne!(a, [0u8; 64]);
    let mut big = vec![0u8; 1 << 20];
    fill_random(&mut big).unwrap();
    assert!(
        big.iter().filter(|&&x| x == 0).count() < 8192,
        "a 1 MiB draw is mostly zeros"
    );
}

#[test]
fn a_stat_line_says_exiting_by_its_flags_or_a_zombie_state() {
    // Fields after the command: state ppid pgrp session tty_nr tpgid flags.
    let line = |comm: &str, state: &str, flags: u64| {
        format!("4242 ({comm}) {state} 1 4242 4242 0 -1 {flags} 120 0 0 0 3 1 0 0 20 0 1 0\n")
    };
    assert!(!stat_says_exiting(
        line("python3", "S", 0x0040_0000).as_bytes()
    ));
    assert!(!stat_says_exiting(
        line("python3", "R", 0x0040_0100).as_bytes()
    ));
    // PF_EXITING, in any state.
    assert!(stat_says_exiting(
        line("python3", "R", 0x0040_0104).as_bytes()
    ));
    assert!(stat_says_exiting(line("python3", "D", 0x4).as_bytes()));
    assert!(stat_says_exiting(line("python3", "Z", 0).as_bytes()));
    assert!(stat_says_exiting(line("python3", "X", 0).as_bytes()));
    // A command with spaces and parentheses is skipped whole.
    assert!(!stat_says_exiting(line("a) Z 1 (b", "S", 0).as_bytes()));
    assert!(stat_says_exiting(line("x) S 1 (y", "Z", 0).as_bytes()));
    assert!(!stat_says_exiting(b""));
    assert!(!stat_says_exiting(b"4242 (truncated"));
}

#[test]
fn a_running_child_is_not_exiting_and_an_unreaped_one_is() {
    assert!(!is_exiting(std::process::id() as i32));
    assert!(!is_exiting(0) && !is_exiting(-1));
    // The child prints its line, then sleeps: it runs.
    let spawned = spawn_pool(&sh("echo up; exec sleep 30")).expect("spawn");
    assert!(wait_readable(
        spawned.output.as_raw_fd(),
        Instant::now() + TIMEOUT
    ));
    assert!(!is_exiting(spawned.pid));
    // A zombie until reaped (`reap` by pid: no other test reaps it).
    // SAFETY: kill(2) has no memory-safety preconditions.
    syscall!(kill(spawned.pid, libc::SIGKILL)).expect("kill");
    let _ = read_to_eof(&spawned.output);
    let deadline = Instant::now() + TIMEOUT;
    while !is_exiting(spawned.pid) {
        assert!(
            Instant::now() < deadline,
            "pid {} never seen exiting",
            spawned.pid
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(
        reap_blocking(spawned.pid).to_string(),
        "killed by signal 9 (SIGKILL)"
    );
}
