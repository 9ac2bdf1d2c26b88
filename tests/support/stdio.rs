//! The JSON-RPC client of the tests over a server's stdin and stdout, and
//! the fixtures it usually serves: the shapes program with its pool run by
//! the test pool (directly, through a wrapper script that sets the pool's
//! environment knobs, or with concurrent workers), plus fault commands. Also
//! what the tests inspect of a run through `/proc`, its tmpdir and
//! `/dev/shm`: the pool processes, their groups and what they leave behind.
//!
//! Every stdout line must parse as a JSON-RPC message; every read has a
//! deadline ([`TIMEOUT`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value as Json};

use super::proc::{cmd, Proc, TempDir};
use super::time::{poll_until, wait_for, TIMEOUT};
use super::trace::{CallTrace, Hold};

// ---- program fixtures -----------------------------------------------------

/// The test pool script.
pub fn testpool() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pool/testpool.py")
}

/// Fault commands added to the shapes manifest: name and mid.
pub const FAULTS: [(&str, u32); 5] = [
    ("badMagic", 90),
    ("closeEarly", 91),
    ("poolExit", 92),
    ("hang", 93),
    ("truncated", 94),
];

/// A shapes build in a temporary directory.
pub struct Program {
    pub _dir: TempDir,
    pub manifest: PathBuf,
}

impl Program {
    /// The pool runs `python3 testpool.py` directly.
    pub fn shapes() -> Program {
        let dir = TempDir::new();
        let exec = vec![json!("python3"), json!(testpool().to_string_lossy())];
        Program::build(dir, exec)
    }

    /// The pool runs a wrapper script: `lines` (shell) and then, unless they
    /// exit, `exec python3 testpool.py "$@"`.
    pub fn wrapped(lines: &str) -> Program {
        let dir = TempDir::new();
        let script = format!(
            "#!/bin/sh\n{lines}\nexec python3 '{}' \"$@\"\n",
            testpool().display()
        );
        let wrapper = dir.write_executable("pool-wrapper.sh", script);
        let exec = vec![json!(wrapper.to_string_lossy())];
        Program::build(dir, exec)
    }

    /// Shapes with a pool that serves calls concurrently (see
    /// `util::serve_concurrently`).
    pub fn concurrent() -> Program {
        Program::shapes().edited(crate::util::serve_concurrently)
    }

    /// The program with its manifest JSON changed by `edit`.
    pub fn edited(self, edit: impl FnOnce(&mut Json)) -> Program {
        let text = crate::util::read(&self.manifest);
        let mut manifest: Json = serde_json::from_str(&text).expect("manifest parses");
        edit(&mut manifest);
        std::fs::write(&self.manifest, manifest.to_string()).expect("manifest written");
        self
    }

    pub fn build(dir: TempDir, exec: Vec<Json>) -> Program {
        let base = crate::util::read(&crate::util::data("shapes/manifest.json"));
        let mut manifest: Json = serde_json::from_str(&base).expect("shapes manifest parses");
        manifest["pools"][0]["exec"] = Json::Array(exec);
        let commands = manifest["commands"]
            .as_array_mut()
            .expect("shapes manifest has commands");
        for (name, mid) in FAULTS {
            commands.push(json!({
                "name": name, "type": "remote", "mid": mid, "pool": 0, "needed_pools": [0],
                "args": [{"kind": "pos", "schema": "j"}],
                "return": {"schema": "j"}
            }));
        }
        let manifest_path = dir.write("manifest.json", manifest.to_string());
        Program {
            _dir: dir,
            manifest: manifest_path,
        }
    }
}

// ---- a JSON-RPC client over the server's stdio -----------------------------

pub struct Server {
    pub proc: Proc,
    pub next_id: u64,
    /// Messages read while waiting for something else, in arrival order.
    pub stash: Vec<Json>,
    /// Keeps the manifest directory alive as long as the server.
    pub _program: Option<Program>,
}

impl Server {
    /// Starts `mcp <manifest> <extra...>` and completes the handshake.
    #[track_caller]
    pub fn start(program: &Program, extra: &[&str]) -> Server {
        Server::start_env(program, extra, &[])
    }

    /// [`Server::start`] with environment variables for the server (and so
    /// its pools), e.g. a [`super::trace::CallTrace`]'s.
    #[track_caller]
    pub fn start_env(program: &Program, extra: &[&str], env: &[(&str, OsString)]) -> Server {
        let mut args = vec!["mcp".to_string(), program.manifest.display().to_string()];
        args.extend(extra.iter().map(|s| s.to_string()));
        let mut command = cmd(&args);
        for (key, value) in env {
            command.env(key, value);
        }
        let proc = Proc::spawn(&mut command);
        let mut server = Server {
            proc,
            next_id: 1,
            stash: Vec::new(),
            _program: None,
        };
        let id = server.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "pools-test", "version": "1"}}),
        );
        let reply = server.response(id, TIMEOUT);
        assert!(reply.get("result").is_some(), "initialize failed: {reply}");
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    /// Starts a server that owns its program directory.
    #[track_caller]
    pub fn owning(program: Program, extra: &[&str]) -> Server {
        Server::owning_env(program, extra, &[])
    }

    /// [`Server::owning`] with environment variables (see
    /// [`Server::start_env`]).
    #[track_caller]
    pub fn owning_env(program: Program, extra: &[&str], env: &[(&str, OsString)]) -> Server {
        let mut server = Server::start_env(&program, extra, env);
        server._program = Some(program);
        server
    }

    /// Fails if the response to request `id` has already arrived (it would
    /// be in the stash): for asserting that one answer came before another.
    #[track_caller]
    pub fn assert_unanswered(&self, id: u64, what: &str) {
        let answered = self
            .stash
            .iter()
            .any(|m| m.get("method").is_none() && m.get("id") == Some(&json!(id)));
        assert!(!answered, "{what}: request {id} was answered first");
    }

    pub fn pid(&self) -> i32 {
        self.proc.pid() as i32
    }

    #[track_caller]
    pub fn send(&mut self, msg: &Json) {
        self.proc.send_line(&msg.to_string());
    }

    /// Sends a request; returns its id.
    #[track_caller]
    pub fn request(&mut self, method: &str, params: Json) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Sends a `tools/call`; returns its id.
    #[track_caller]
    pub fn call(&mut self, tool: &str, arguments: Json) -> u64 {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    /// The next stdout message, which must be a JSON-RPC 2.0 message.
    #[track_caller]
    pub fn next_message(&mut self, timeout: Duration) -> Json {
        let Some(line) = self.proc.read_line(timeout) else {
            panic!(
                "stdout closed while a message was expected; stderr:\n{}",
                self.proc.stderr_now()
            )
        };
        parse_protocol_line(&line)
    }

    /// Waits for the response to request `id`, stashing everything else.
    #[track_caller]
    pub fn response(&mut self, id: u64, timeout: Duration) -> Json {
        let is_it = |m: &Json| m.get("method").is_none() && m.get("id") == Some(&json!(id));
        if let Some(pos) = self.stash.iter().position(is_it) {
            return self.stash.remove(pos);
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                panic!(
                    "no response to request {id} within {timeout:?}; stderr:\n{}",
                    self.proc.stderr_now()
                );
            }
            let msg = self.next_message(left);
            if is_it(&msg) {
                return msg;
            }
            self.stash.push(msg);
        }
    }

    /// The `result` of a `tools/call` answered within `timeout`.
    #[track_caller]
    pub fn result_within(&mut self, id: u64, timeout: Duration) -> Json {
        let msg = self.response(id, timeout);
        match msg.get("result") {
            Some(result) => result.clone(),
            None => panic!("request {id} got a protocol error instead of a result: {msg}"),
        }
    }

    /// Calls a tool and returns its `result`.
    #[track_caller]
    pub fn call_result(&mut self, tool: &str, arguments: Json) -> Json {
        let id = self.call(tool, arguments);
        self.result_within(id, TIMEOUT)
    }

    /// Calls a tool that must succeed; returns its text content.
    #[track_caller]
    pub fn call_ok(&mut self, tool: &str, arguments: Json) -> String {
        let result = self.call_result(tool, arguments.clone());
        assert_eq!(
            result["isError"],
            json!(false),
            "{tool} {arguments} failed: {result}"
        );
        text_of(&result)
    }

    /// Closes stdin and waits for the exit status.
    #[track_caller]
    pub fn finish(&mut self) -> i32 {
        let status = self.proc.wait(TIMEOUT);
        status
            .code()
            .unwrap_or_else(|| panic!("server died by a signal: {status:?}"))
    }

    /// Waits for the exit status of a server ended by a signal (stdin stays
    /// open, so EOF cannot end it first).
    #[track_caller]
    pub fn exit_code_after_signal(&mut self) -> i32 {
        let status = self.proc.wait_keeping_stdin(TIMEOUT);
        status
            .code()
            .unwrap_or_else(|| panic!("server died by a signal: {status:?}"))
    }

    /// What the server wrote on stderr so far.
    pub fn stderr_now(&self) -> String {
        self.proc.stderr_now()
    }

    /// Waits until the server's stderr contains `needle`.
    #[track_caller]
    pub fn wait_stderr(&self, needle: &str) {
        if poll_until(|| self.proc.stderr_now().contains(needle).then_some(())).is_none() {
            panic!(
                "stderr never showed {needle:?}; stderr:\n{}",
                self.proc.stderr_now()
            );
        }
    }
}

/// Parses one stdout line, failing the test unless it is a JSON-RPC 2.0
/// message on one line.
#[track_caller]
pub fn parse_protocol_line(line: &str) -> Json {
    let Some(body) = line.strip_suffix('\n') else {
        panic!("protocol line without a newline: {line:?}")
    };
    let msg: Json = serde_json::from_str(body)
        .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
    assert_eq!(
        msg.get("jsonrpc"),
        Some(&json!("2.0")),
        "not JSON-RPC 2.0: {line:?}"
    );
    let is_response =
        msg.get("id").is_some() && (msg.get("result").is_some() || msg.get("error").is_some());
    let is_notification = msg.get("method").is_some();
    assert!(
        is_response || is_notification,
        "neither a response nor a notification: {line:?}"
    );
    msg
}

/// The text of a result's single text content block.
#[track_caller]
pub fn text_of(result: &Json) -> String {
    match result["content"][0]["text"].as_str() {
        Some(text) => text.to_string(),
        None => panic!("result without text content: {result}"),
    }
}

/// The text of a result that must be an `isError` result.
#[track_caller]
pub fn error_text(result: &Json) -> String {
    assert_eq!(
        result["isError"],
        json!(true),
        "expected an isError result: {result}"
    );
    text_of(result)
}

// ---- processes, tmpdirs and shared memory ---------------------------------

pub use super::procfs::{all_pids, cmdline, group_members};

/// `(ppid, pgrp)` of a live process, from `/proc/<pid>/stat`.
pub fn stat_of(pid: i32) -> Option<(i32, i32)> {
    super::procfs::stat(pid).map(|s| (s.ppid, s.pgrp))
}

/// What a running test pool tells about its server's run.
#[derive(Debug)]
pub struct PoolInfo {
    pub pid: i32,
    /// The pool's process group (its own pid).
    pub pgid: i32,
    pub tmpdir: PathBuf,
    pub basename: String,
}

/// The test pool that is a child of `server` (and is not `except`), waiting
/// up to [`TIMEOUT`] for it to appear.
#[track_caller]
pub fn pool_of(server: &Server, except: Option<i32>) -> PoolInfo {
    let found = poll_until(|| {
        all_pids().into_iter().find_map(|pid| {
            if Some(pid) == except {
                return None;
            }
            let (ppid, pgrp) = stat_of(pid)?;
            if ppid != server.pid() {
                return None;
            }
            let args = cmdline(pid);
            // argv: python3 testpool.py <socket> <tmpdir> <basename>
            let at = args.iter().position(|a| a.ends_with("testpool.py"))?;
            if args.len() < at + 4 {
                return None;
            }
            Some(PoolInfo {
                pid,
                pgid: pgrp,
                tmpdir: PathBuf::from(&args[at + 2]),
                basename: args[at + 3].clone(),
            })
        })
    });
    found.unwrap_or_else(|| {
        panic!(
            "no test pool child of the server within {TIMEOUT:?}; stderr:\n{}",
            server.proc.stderr_now()
        )
    })
}

/// Waits until the pool accepts connections on its socket, so that a call
/// made next does not spend its deadline waiting for a slow interpreter
/// start. (The pool takes the empty connection as a client that went away.)
#[track_caller]
pub fn wait_listening(pool: &PoolInfo) {
    let socket = pool.tmpdir.join("pipe-py");
    wait_for(
        format!("pool {} listening on {}", pool.pid, socket.display()),
        || std::os::unix::net::UnixStream::connect(&socket).is_ok(),
    );
}

/// After the server exited: no process of its pool groups, no tmpdir, no
/// shared-memory files of its pid.
#[track_caller]
pub fn assert_no_leftovers(server_pid: i32, groups: &[i32], tmpdir: &Path) {
    let members = group_members(groups);
    assert!(
        members.is_empty(),
        "pool processes left behind: {members:?}"
    );
    assert!(!tmpdir.exists(), "tmpdir {} left behind", tmpdir.display());
    let shm = super::procfs::shm_files(server_pid);
    assert!(shm.is_empty(), "shared memory left behind: {shm:?}");
}

// ---- a line-by-line session ---------------------------------------------------

/// A server driven line by line over its stdin and stdout, for tests that
/// check the exact bytes of each line (or want each reply as it comes,
/// without the id matching of [`Server`]). Test files wrap it with their
/// program's start-up and their own shorthands.
pub struct Lines {
    pub proc: Proc,
    /// Keeps the program's directory alive as long as the server.
    pub dir: Option<TempDir>,
    /// The last id [`Lines::quiet`] used.
    pub sync_id: u64,
}

/// What a finished session left behind.
pub struct Finished {
    pub status: std::process::ExitStatus,
    /// Stdout after the last line read.
    pub rest: String,
    pub stderr: String,
}

impl Lines {
    /// Spawns `command` (the binary with its arguments and environment).
    #[track_caller]
    pub fn spawn(command: &mut std::process::Command, dir: Option<TempDir>) -> Lines {
        Lines {
            proc: Proc::spawn(command),
            dir,
            sync_id: 1000,
        }
    }

    /// `mcp <manifest> <options...>` with `env` set.
    #[track_caller]
    pub fn mcp(
        manifest: &Path,
        options: &[&str],
        env: &[(&str, OsString)],
        dir: Option<TempDir>,
    ) -> Lines {
        let mut command = super::proc::cmd(["mcp"]);
        command.arg(manifest).args(options);
        for (key, value) in env {
            command.env(key, value);
        }
        Lines::spawn(&mut command, dir)
    }

    /// `morloc-mcp mcp` of the shapes program with `options`, its test
    /// pool tracing its calls into `trace` and holding `slowEcho` calls
    /// while `hold` says so: the set-up of a test that holds a call in its
    /// pool until the next request has arrived. Not initialized.
    #[track_caller]
    pub fn shapes_held(options: &[&str], trace: &CallTrace, hold: &Hold) -> Lines {
        let dir = TempDir::new();
        let manifest = super::proc::shapes_manifest(&dir);
        Lines::mcp(&manifest, options, &[trace.env(), hold.env()], Some(dir))
    }

    /// Writes one line (a newline is added).
    #[track_caller]
    pub fn send(&mut self, line: &str) {
        self.proc.send_line(line);
    }

    #[track_caller]
    pub fn send_json(&mut self, msg: &Json) {
        self.proc.send_line(&msg.to_string());
    }

    /// The next stdout line without its LF (which must be there); fails the
    /// test at EOF or after [`TIMEOUT`].
    #[track_caller]
    pub fn line(&mut self) -> String {
        match self.proc.read_line(TIMEOUT) {
            Some(line) => match line.strip_suffix('\n') {
                Some(body) => body.to_string(),
                None => panic!("stdout line without LF: {line:?}"),
            },
            None => panic!("stdout closed; stderr:\n{}", self.proc.stderr_now()),
        }
    }

    /// The next stdout line, parsed.
    #[track_caller]
    pub fn json(&mut self) -> Json {
        let line = self.line();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Sends a line and returns the next one.
    #[track_caller]
    pub fn ask(&mut self, line: &str) -> String {
        self.send(line);
        self.line()
    }

    /// Sends a message and returns the next one.
    #[track_caller]
    pub fn ask_json(&mut self, msg: &Json) -> Json {
        self.send_json(msg);
        self.json()
    }

    /// Asserts that nothing was sent since the last read (and that the
    /// server still answers): a ping's reply must be the next line.
    #[track_caller]
    pub fn quiet(&mut self) {
        self.sync_id += 1;
        let id = format!("sync-{}", self.sync_id);
        self.quiet_as(&id);
    }

    /// [`Lines::quiet`] with a ping of id `tag` (a string).
    #[track_caller]
    pub fn quiet_as(&mut self, tag: &str) {
        let reply = self.ask_json(&json!({"jsonrpc": "2.0", "id": tag, "method": "ping"}));
        assert_eq!(reply, json!({"jsonrpc": "2.0", "id": tag, "result": {}}));
    }

    /// Closes stdin and waits for the exit and the end of both streams.
    #[track_caller]
    pub fn finish(&mut self) -> Finished {
        self.proc.close_stdin();
        let status = self.proc.wait(TIMEOUT);
        let rest = self.proc.stdout_rest(TIMEOUT);
        let stderr = self.proc.stderr_text(TIMEOUT);
        Finished {
            status,
            rest,
            stderr,
        }
    }
}
