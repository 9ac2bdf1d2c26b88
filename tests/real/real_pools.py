#!/usr/bin/env python3
"""The server against the real Morloc 0.98.2 runtime: `make test-real`.

Serves programs compiled by the real Morloc compiler through their real
Python pools, with the server binary given by --bin. --programs names the
compiled programs (<dir>/<program>/nexus-build/manifest.json): the suite's
own, which tests/real/run.sh compiles from tests/real/programs/. --manifests
may name a directory of the same layout holding only the manifests of other
programs (no pools): their tools/list is checked, and the checks that call
them say that they were skipped and why. It checks:

- every program's tools/list against tests/data/real/<program>.tools.json;
- every exported tool of every program, with known answers (Python
  `workbench`, R `rbench`, C++ `cppbench`);
- where the reference `morloc-nexus` is installed with the runtime, every
  compiled program served by both side by side (differential.py):
  tools/list byte for byte, every call's reply the same or differing only
  as docs/differences.md says;
- large values element for element (1, 20 and 100 MB strings, 1M- and
  5M-element lists, 50k records, recursive records of 65535 nodes), in
  results and in arguments;
- rounds of 32 concurrent calls of mixed sizes, every byte of every reply;
- large and concurrent results over Streamable HTTP too;
- 8 concurrent 300 ms calls spread over pool replicas (how fast is
  bench/replicas.py's), and queueing with --pool-replicas py=1;
- with 4 processes of the pool (--pool-replicas py=4): a replica and the
  primary each killed by pid while calls run on every process (only the
  call on the killed process fails, promptly and clearly; the process comes
  back under a new pid; later rounds are exact), and concurrent rounds of
  large results in shared memory and small ones spread over the replicas,
  every byte checked;
- a pool worker that exits during a call, and a pool and a worker killed
  by pid while a large result is built: the call fails clearly and the
  next call works;
- a call past --call-timeout: it fails, and the restarted pool serves on;
- long calls as tasks (a 2026-07-28 client declaring the Tasks
  extension, over stdio and HTTP at once, slowEcho as the slow function): a
  task polled while working to its exact result, synchronous answers without
  the extension, expiry after --task-ttl, tasks/cancel, the pool killed by
  pid mid-task (failed), and --task-dir across a server restart;
- pool output on stdout never reaching the protocol stream;
- no file left in /dev/shm or /tmp by what the run started, however a
  server is stopped (stdin EOF, SIGTERM, SIGINT), even mid-call.

Standard library only. Finds the installation as tests/real/run.sh does
(place.py: natively, or inside a root directory served with chroot).
Prints one line per check ("ok", "FAIL" or "skip" with the reason) and a
closing "N passed, M failed, K skipped"; exits 1 when a check fails. `--only NAME` (repeatable) runs the checks whose name contains
NAME.
"""

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import differential
import place

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "data", "real")

# Every wait for a reply is bounded, so a hang fails the check instead of CI.
CALL_TIMEOUT = 180.0
# How long a wait for anything that is not itself the subject of a check (an
# exit, a restart, a worker getting busy) may take: only a hang waits it out,
# and a loaded machine only makes things slower.
HANG = 60.0
# Batches of 32 concurrent calls per concurrency check.
CONCURRENT_ROUNDS = 3
SHM_DIR = "/dev/shm"


class CheckFailed(Exception):
    pass


class Skipped(Exception):
    """A check that cannot run here; the message says why."""


def expect(cond, message):
    if not cond:
        raise CheckFailed(message)


def compact(value):
    """The JSON text the server writes for a value (compact, UTF-8)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def short(text, limit=300):
    text = str(text)
    return text if len(text) <= limit else text[:limit] + "... (%d chars)" % len(text)


class Server:
    """One `morloc-mcp mcp <manifest>` process and a tiny MCP stdio client.

    A reader thread takes every stdout line; each must be a JSON-RPC message
    (anything else is protocol corruption and is recorded). Replies are
    matched to requests by id, so many calls can be in flight.
    """

    def __init__(self, binary, manifest, place, args=(), initialize=True):
        self.place = place
        self.proc = subprocess.Popen(
            place.argv([place.inside(binary), "mcp", place.inside(manifest), *args]),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=place.popen_env(),
        )
        self.lock = threading.Condition()
        self.replies = {}
        self.raw = {}  # reply id -> the reply's line, while keep_raw
        self.keep_raw = False
        self.arrivals = {}  # reply id -> time.monotonic() when it was read
        self.notifications = []
        self.bad_lines = []
        self.stderr_lines = []
        self.next_id = 1
        self.pool_runs = set()  # (tmpdir, shm basename) seen in pool argv
        self.pool_pids = set()  # pools and their workers
        self.leftovers = None  # set by close()
        self.reader = threading.Thread(target=self._read_stdout, daemon=True)
        self.reader.start()
        self.err_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self.err_reader.start()
        if not initialize:  # a 2026-07-28 client: every request says its version
            return
        reply = self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "real-pools-suite", "version": "1"},
            },
        )
        expect("result" in reply, "initialize failed: %s" % short(reply))
        self.notify("notifications/initialized")

    def _read_stdout(self):
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
                ok = isinstance(msg, dict) and msg.get("jsonrpc") == "2.0"
            except ValueError:
                ok = False
            with self.lock:
                if not ok:
                    self.bad_lines.append(line[:200])
                elif "id" in msg and "method" not in msg:
                    self.replies[msg["id"]] = msg
                    if self.keep_raw and len(line) < 1 << 20:
                        self.raw[msg["id"]] = line
                    self.arrivals[msg["id"]] = time.monotonic()
                else:
                    self.notifications.append(msg)
                self.lock.notify_all()
        with self.lock:
            self.lock.notify_all()

    def _read_stderr(self):
        for line in self.proc.stderr:
            with self.lock:
                if len(self.stderr_lines) < 10000:
                    self.stderr_lines.append(line.decode("utf-8", "replace").rstrip("\n"))

    def send(self, msg):
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def start(self, method, params):
        """Sends a request and returns its id without waiting."""
        with self.lock:
            rid = self.next_id
            self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid

    def wait(self, rid, timeout=CALL_TIMEOUT):
        deadline = time.monotonic() + timeout
        with self.lock:
            while rid not in self.replies:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CheckFailed("no reply to request %s within %.0f s" % (rid, timeout))
                if self.proc.poll() is not None and not self.reader.is_alive():
                    raise CheckFailed(
                        "server exited (status %s) before replying to request %s; stderr: %s"
                        % (self.proc.returncode, rid, short(" | ".join(self.stderr_lines[-5:])))
                    )
                self.lock.wait(min(left, 0.5))
            return self.replies.pop(rid)

    def request(self, method, params=None, timeout=CALL_TIMEOUT):
        return self.wait(self.start(method, params or {}), timeout)

    def request_raw(self, method, params=None, timeout=CALL_TIMEOUT):
        """A request's reply and its line as read (replies under 1 MiB)."""
        rid = self.start(method, params or {})
        reply = self.wait(rid, timeout)
        with self.lock:
            return reply, self.raw.pop(rid, None)

    def start_call(self, name, arguments):
        self.record_pools()
        return self.start("tools/call", {"name": name, "arguments": arguments})

    def call(self, name, arguments, timeout=CALL_TIMEOUT):
        """A tools/call; returns its `result` (the JSON-RPC error fails the check)."""
        reply = self.wait(self.start_call(name, arguments), timeout)
        self.record_pools()
        expect("result" in reply, "%s: JSON-RPC error %s" % (name, short(reply)))
        return reply["result"]

    def spans_since(self, mark, command, n, timeout=HANG):
        """The processes (`py`, `py#2`, ...) that ran the first n calls of
        `command` whose span lines (--log-level debug) came after stderr
        line `mark`; waits for them, as stderr is read apart from stdout."""
        deadline = time.monotonic() + timeout
        span = re.compile(r'span name="pool call" pool="?([^"\s]+)"? command="?%s"? ' % re.escape(command))
        while True:
            with self.lock:
                found = [m.group(1) for m in map(span.search, self.stderr_lines[mark:]) if m]
            if len(found) >= n or time.monotonic() > deadline:
                expect(len(found) >= n, "%d of %d span lines of %s came (is --log-level debug on?)"
                       % (len(found), n, command))
                return found[:n]
            time.sleep(0.02)

    def children(self):
        """Pids of the server's direct children (its pools)."""
        return [pid for pid, ppid in process_table() if ppid == self.proc.pid]

    def pool_processes(self):
        """{socket: pid} of the server's pool processes (pool argv ends with
        socket, tmpdir, basename); a replica's socket is the pool's plus
        `.rN`."""
        out = {}
        for pid, ppid in process_table():
            argv = cmdline(pid) if ppid == self.proc.pid else []
            if len(argv) >= 4 and argv[-4].endswith("pool.py"):
                out[argv[-3]] = pid
        return out

    def record_pools(self):
        """Remembers the tmpdir and shm basename each pool was started with
        (pool argv: exec..., socket, tmpdir, basename), for the clean-up check."""
        table = process_table()
        for pid, ppid in table:
            if ppid != self.proc.pid:
                continue
            argv = cmdline(pid)
            if len(argv) >= 3:
                self.pool_runs.add((argv[-2], argv[-1]))
            self.pool_pids.add(pid)
            self.pool_pids.update(p for p, pp in table if pp == pid)

    def close(self):
        """Ends the session with stdin EOF, as a client does; returns the exit status."""
        self.record_pools()
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout=HANG)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise CheckFailed("server did not exit within %.0f s of stdin EOF" % HANG)
        finally:
            self.reader.join(timeout=HANG)
            self.err_reader.join(timeout=HANG)
            # At once: a later server's start-up removes what dead runs left.
            self.leftovers = self.left_behind()

    def stop(self, signum):
        """Ends the server with a signal; returns the exit status."""
        self.record_pools()
        self.proc.send_signal(signum)
        try:
            return self.proc.wait(timeout=HANG)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise CheckFailed("server did not exit within %.0f s of signal %d" % (HANG, signum))
        finally:
            self.reader.join(timeout=HANG)
            self.err_reader.join(timeout=HANG)
            self.leftovers = self.left_behind()

    def left_behind(self):
        """What this server's run left: its run directory, shared-memory
        files named after it or its pools' basename, live pool processes."""
        shm = os.listdir(SHM_DIR)
        prefixes = ["morloc-%d-" % self.proc.pid] + [basename for _, basename in self.pool_runs]
        left = [os.path.join(SHM_DIR, n) for n in shm if any(n.startswith(p) for p in prefixes)]
        left += [tmpdir for tmpdir, _ in self.pool_runs if os.path.exists(self.place.host(tmpdir))]
        left += [
            "pool process %d" % pid for pid in self.pool_pids if any(a.endswith("pool.py") for a in cmdline(pid))
        ]
        return sorted(set(left))


class HttpServer(Server):
    """The same server over Streamable HTTP (`--http-port 0`): one POST per
    message, a fresh connection each, so calls from several threads run
    concurrently. Replies come as JSON or as an event stream."""

    def __init__(self, binary, manifest, place, args=(), initialize=True):
        self.place = place
        self.proc = subprocess.Popen(
            place.argv([place.inside(binary), "mcp", place.inside(manifest), "--http-port", "0", *args]),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=place.popen_env(),
        )
        self.lock = threading.Condition()
        self.bad_lines = []
        self.stderr_lines = []
        self.pool_runs = set()
        self.pool_pids = set()
        self.leftovers = None
        self.next_id = 1
        # The first stderr line names the bound port.
        line = self.proc.stderr.readline().decode("utf-8", "replace")
        found = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
        if not found:
            self.proc.kill()
            self.proc.wait()
            raise CheckFailed("no HTTP address on the server's stderr: %r" % line)
        self.port = int(found.group(1))
        self.reader = threading.Thread(target=self.proc.stdout.read, daemon=True)
        self.reader.start()
        self.err_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self.err_reader.start()
        self.session = None
        if not initialize:  # a 2026-07-28 client: no session, headers per request
            return
        reply, headers = self.post(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "real-pools-suite", "version": "1"},
                },
            }
        )
        expect(reply and "result" in reply, "initialize failed: %s" % short(reply))
        self.session = headers.get("mcp-session-id")
        expect(self.session, "no Mcp-Session-Id header")
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, msg, extra=None, status=200):
        """POSTs one message (with the `extra` headers); returns (the reply
        with msg's id or None, headers). The HTTP status must be `status`
        (any when None)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=CALL_TIMEOUT)
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-06-18",
        }
        headers.update(extra or {})
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        try:
            conn.request("POST", "/mcp", json.dumps(msg).encode(), headers)
            response = conn.getresponse()
            body = response.read()
            got = {k.lower(): v for k, v in response.getheaders()}
        finally:
            conn.close()
        if "id" not in msg:
            expect(response.status == 202, "notification answered %d" % response.status)
            return None, got
        expect(status is None or response.status == status,
               "HTTP %d, want %s: %s" % (response.status, status, short(body)))
        if got.get("content-type", "").startswith("text/event-stream"):
            # One JSON-RPC message per event; ours carries the request id.
            for event in body.split(b"\n\n"):
                data = b"\n".join(l[5:].lstrip() for l in event.split(b"\n") if l.startswith(b"data:"))
                if data:
                    reply = json.loads(data)
                    if reply.get("id") == msg["id"] and "method" not in reply:
                        return reply, got
            raise CheckFailed("no reply in the event stream: %s" % short(body))
        return json.loads(body), got

    def call(self, name, arguments, timeout=CALL_TIMEOUT):
        self.record_pools()
        with self.lock:
            rid = self.next_id
            self.next_id += 1
        reply, _ = self.post({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
        expect("result" in reply, "%s: JSON-RPC error %s" % (name, short(reply)))
        return reply["result"]

    def close(self):
        return self.stop(signal.SIGTERM)


# The 2026-07-28 protocol and its Tasks extension (docs/long-calls.md).
MODERN = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"


class TaskClient:
    """A 2026-07-28 client of one server, over stdio or HTTP: every request
    carries its version and client capabilities in `_meta`, declaring the
    Tasks extension or not. Over HTTP each request also names its method and
    target in `Mcp-Method` and `Mcp-Name` (the tool, or the task id), tools
    are named `workbench__<command>`, and a request in flight runs on a
    thread of its own; over stdio requests are matched to replies by id."""

    def __init__(self, server, http):
        self.server = server
        self.http = http
        self.label = "http" if http else "stdio"
        self.next_id = 1

    def tool(self, command):
        return "workbench__" + command if self.http else command

    def message(self, method, params, tasks):
        caps = {"extensions": {TASKS: {}}} if tasks else {}
        params = dict(params, _meta={
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": caps,
        })
        self.next_id += 1
        return {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}

    def send(self, method, params, tasks=True, name=None, status=200):
        """Sends a request; returns a handle for result()."""
        self.server.record_pools()
        msg = self.message(method, params, tasks)
        if not self.http:
            return self.server.start(method, msg["params"])
        if name is None:
            name = params.get("taskId", params.get("name"))
        headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
        if name:
            headers["Mcp-Name"] = name
        box = {}

        def post():
            try:
                box["reply"] = self.server.post(msg, headers, status)[0]
            except Exception as e:  # re-raised by result()
                box["error"] = e

        thread = threading.Thread(target=post, daemon=True)
        thread.start()
        return thread, box

    def result(self, handle, timeout=CALL_TIMEOUT):
        if not self.http:
            return self.server.wait(handle, timeout)
        thread, box = handle
        thread.join(timeout)
        expect(not thread.is_alive(), "no HTTP reply within %.0f s" % timeout)
        if "error" in box:
            raise box["error"]
        return box["reply"]

    def ask(self, method, params, tasks=True, **kw):
        return self.result(self.send(method, params, tasks, **kw))

    def call(self, command, ms_or_arg, tasks=True):
        """A tools/call of `command` with `_1`; returns the reply."""
        return self.ask("tools/call", {"name": self.tool(command), "arguments": {"_1": ms_or_arg}}, tasks)

    def get(self, task):
        reply = self.ask("tasks/get", {"taskId": task})
        expect("result" in reply, "tasks/get %s: %s" % (task, short(reply)))
        result = reply["result"]
        expect(result.get("taskId") == task and result.get("resultType") == "complete",
               "tasks/get %s answered %s" % (task, short(result)))
        return result

    def task(self, command, arg, what):
        """A call that must become a task; returns its id."""
        reply = self.call(command, arg)
        result = reply.get("result", {})
        expect(result.get("resultType") == "task" and result.get("status") == "working",
               "%s: want a task handle, got %s" % (what, short(reply)))
        task = result.get("taskId", "")
        expect(re.fullmatch(r"[A-Za-z0-9_-]+\.[0-9a-f]{32}", task), "%s: task id %r" % (what, task))
        return task

    def settle(self, task, what, interval=0.1):
        """Polls tasks/get while the task is `working` (each such answer
        must say something in statusMessage); returns the last answer and
        how many `working` answers came before it."""
        deadline = time.monotonic() + 60
        working = 0
        while True:
            result = self.get(task)
            if result.get("status") != "working":
                return result, working
            working += 1
            message = result.get("statusMessage")
            expect(isinstance(message, str) and message.startswith("running for "),
                   "%s: working with statusMessage %r" % (what, message))
            expect(time.monotonic() < deadline, "%s: still working after 60 s" % what)
            time.sleep(interval)

    def completed(self, command, arg, want, what):
        """The call becomes a task that completes with exactly the value `want`."""
        done, _ = self.settle(self.task(command, arg, what), what)
        expect(done.get("status") == "completed", "%s: %s" % (what, short(done)))
        expect(done.get("result") == modern_result(want),
               "%s: result %s, want %s" % (what, short(done.get("result")), compact(want)))

    def synchronous(self, handle, want, what):
        """The reply to a call sent without the extension: the plain result."""
        reply = self.result(handle)
        result = reply.get("result", {})
        expect(result.get("resultType") == "complete" and "taskId" not in result,
               "%s: want a plain result, got %s" % (what, short(reply)))
        expect_value(result, want, what, structured=True)


def process_table():
    """(pid, ppid) of every process, from /proc."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                stat = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        # The command name may contain spaces and parentheses: split after the last ')'.
        fields = stat[stat.rfind(")") + 2 :].split()
        out.append((int(name), int(fields[1])))
    return out


def stat_fields(pid):
    """The fields of /proc/PID/stat after the command name (None if gone)."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    # The command name may contain spaces and parentheses: split after the last ')'.
    return stat[stat.rfind(")") + 2 :].split()


def cpu_ticks(pid):
    """User plus system CPU time of a process, in clock ticks (0 if gone)."""
    fields = stat_fields(pid)
    return int(fields[11]) + int(fields[12]) if fields else 0


def tree_ticks(pid):
    """CPU clock ticks of a process and its children, live and reaped."""
    fields = stat_fields(pid)
    if not fields:
        return 0
    own = sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return own + sum(cpu_ticks(child) for child, ppid in process_table() if ppid == pid)


def busy_worker(pool, timeout=HANG):
    """The child of `pool` that is burning CPU (the worker running the
    call), once it has run for a few ticks."""
    deadline = time.monotonic() + timeout
    start = {}
    while time.monotonic() < deadline:
        workers = [pid for pid, ppid in process_table() if ppid == pool]
        for pid in workers:
            ticks = cpu_ticks(pid)
            start.setdefault(pid, ticks)
            if ticks - start[pid] >= 10:
                return pid
        time.sleep(0.02)
    raise CheckFailed("no worker of pool %d got busy within %.0f s" % (pool, timeout))


def descendants(pid):
    """Every process below pid (children, their children, ...)."""
    table = process_table()
    out, level = [], [pid]
    while level:
        level = [p for p, parent in table if parent in level]
        out += level
    return out


def sleeping(pids):
    """Those of pids with a thread inside a sleep: the kernel's wait channel
    (/proc/PID/task/TID/wchan) names a nanosleep. A real pool's worker is
    there while it runs slowEcho (time.sleep); an idle worker waits in
    select or poll, never in a sleep."""
    out = []
    for pid in pids:
        try:
            tids = os.listdir("/proc/%d/task" % pid)
        except OSError:
            continue
        for tid in tids:
            try:
                with open("/proc/%d/task/%s/wchan" % (pid, tid)) as f:
                    channel = f.read()
            except OSError:
                continue
            if "nanosleep" in channel:
                out.append(pid)
                break
    return out


def wait_until(what, probe, timeout=60.0):
    """Polls probe() until it returns something true, and returns that;
    fails the check after timeout seconds, naming what was awaited."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise CheckFailed("%s: not seen within %.0f s" % (what, timeout))
        time.sleep(0.01)


def wait_in_sleep(pools, what):
    """Waits until each process in pools has a worker inside slowEcho's
    sleep: the call is in that process."""
    wait_until(what, lambda: all(sleeping(descendants(pool)) for pool in pools))


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def text_of(result):
    content = result.get("content")
    expect(
        isinstance(content, list) and len(content) == 1 and content[0].get("type") == "text",
        "expected one text block, got %s" % short(result),
    )
    return content[0]["text"]


def expect_value(result, expected, what, structured=False):
    """The result is not an error and its text is exactly compact(expected)."""
    expect(result.get("isError") is False, "%s: isError: %s" % (what, short(result)))
    text = text_of(result)
    want = compact(expected)
    if text != want:
        try:
            got = json.loads(text)
        except ValueError:
            got = None
        if got == expected:
            raise CheckFailed("%s: right value, other bytes: %s, want %s" % (what, short(text), short(want)))
        raise CheckFailed("%s: got %s, want %s" % (what, short(text), short(want)))
    if structured:
        expect(
            result.get("structuredContent") == expected,
            "%s: structuredContent %s, want %s" % (what, short(result.get("structuredContent")), short(expected)),
        )
    else:
        expect("structuredContent" not in result, "%s: unexpected structuredContent" % what)


def modern_result(value):
    """A 2026-07-28 tool result of a JSON value: its text, and the value as
    structuredContent (docs/protocol.md, structured output)."""
    return {"content": [{"type": "text", "text": compact(value)}], "structuredContent": value, "isError": False}


def expect_error(result, needle, what):
    expect(result.get("isError") is True, "%s: expected isError, got %s" % (what, short(result)))
    text = text_of(result)
    expect(needle in text, "%s: error %r does not mention %r" % (what, short(text), needle))


def expect_list(result, n, what):
    """bigList n: [0, 1, ..., n-1], compared element for element."""
    expect(result.get("isError") is False, "%s: isError: %s" % (what, short(result)))
    text = text_of(result)
    values = json.loads(text)
    expect(isinstance(values, list), "%s: not a list: %s" % (what, short(text)))
    expect(len(values) == n, "%s: %d elements, want %d" % (what, len(values), n))
    for i, v in enumerate(values):
        if v != i or type(v) is not int:
            raise CheckFailed("%s: element %d is %r" % (what, i, v))
    expect(text == "[" + ",".join(map(str, range(n))) + "]", "%s: text differs from the compact list" % what)


def expect_text(result, expected, what):
    """A string result, every character compared."""
    expect(result.get("isError") is False, "%s: isError: %s" % (what, short(result)))
    text = text_of(result)
    want = compact(expected)
    if text != want:
        n = next((i for i, (a, b) in enumerate(zip(text, want)) if a != b), min(len(text), len(want)))
        raise CheckFailed(
            "%s: %d chars, want %d; first difference at %d: %r vs %r"
            % (what, len(text), len(want), n, text[n : n + 20], want[n : n + 20])
        )


def records(n):
    return [{"x": i, "y": i / 2, "label": "p%d" % i} for i in range(n)]


def expect_records(result, n, what):
    expect(result.get("isError") is False, "%s: isError: %s" % (what, short(result)))
    text = text_of(result)
    values = json.loads(text)
    expect(isinstance(values, list) and len(values) == n, "%s: %s elements, want %d" % (what, len(values), n))
    for i, (got, want) in enumerate(zip(values, records(n))):
        if got != want or list(got) != ["x", "y", "label"]:
            raise CheckFailed("%s: record %d is %r, want %r" % (what, i, got, want))
    expect(text == compact(records(n)), "%s: text differs from the compact records" % what)


# --- the suite ---------------------------------------------------------------


class Suite:
    def __init__(self, place, binary, programs, only, manifests=None, reference=None, extra=()):
        self.place = place
        self.binary = binary
        self.programs = programs
        self.manifests = manifests
        # The reference server (host path) and more directories of
        # compiled programs to compare with it.
        self.reference = reference
        self.extra = list(extra)
        self.only = only
        self.passed = 0
        self.failed = []
        self.skipped = []
        self.servers = []

    def compiled(self, program):
        """The manifest of a compiled program (with its pools), or None: one
        of the suite's own, else one under MORLOC_REAL_PROGRAMS (so the
        checks of the programs known by name run where they are compiled)."""
        path = os.path.join(self.programs, program, "nexus-build", "manifest.json")
        if os.path.isfile(path):
            return path
        for entry in self.extra_dirs():
            for name, path in differential.programs_at(entry):
                if name == program:
                    return path
        return None

    def extra_dirs(self):
        """The MORLOC_REAL_PROGRAMS entries, as host paths (a path inside a
        root is taken inside it)."""
        out = []
        for entry in self.extra:
            if self.place.root is not None and not os.path.exists(entry):
                entry = self.place.host(entry)
            out.append(entry)
        return out

    def manifest_only(self, program):
        """The manifest of a program known only by its manifest, or None."""
        if not self.manifests:
            return None
        path = os.path.join(self.manifests, program, "nexus-build", "manifest.json")
        return path if os.path.isfile(path) else None

    def manifest(self, program):
        path = self.compiled(program)
        if path is None:
            raise Skipped("%s is not compiled here (only programs whose sources are in tests/real/programs/ are)" % program)
        return path

    def serve(self, program, args=()):
        server = Server(self.binary, self.manifest(program), self.place, args)
        self.servers.append(server)
        return server

    def check(self, name, fn):
        if self.only and not any(o in name for o in self.only):
            return
        started = time.monotonic()
        try:
            note = fn()
        except Skipped as e:
            self.skipped.append(name)
            print("skip %s: %s" % (name, e), flush=True)
            return
        except CheckFailed as e:
            self.failed.append(name)
            print("FAIL %s (%.2f s): %s" % (name, time.monotonic() - started, e), flush=True)
            return
        except Exception as e:  # a harness error is a failure too, never a pass
            self.failed.append(name)
            print("FAIL %s (%.2f s): %s: %s" % (name, time.monotonic() - started, type(e).__name__, e), flush=True)
            return
        self.passed += 1
        note = "; %s" % note if isinstance(note, str) else ""
        print("ok   %s (%.2f s)%s" % (name, time.monotonic() - started, note), flush=True)

    def surface(self, server, program):
        got = server.request("tools/list")
        expect("result" in got, "tools/list failed: %s" % short(got))
        with open(os.path.join(GOLDEN, program + ".tools.json"), encoding="utf-8") as f:
            want = json.load(f)
        # Key order matters too: compare the texts of both, order preserved.
        got_text = json.dumps(got["result"], indent=2, ensure_ascii=False)
        want_text = json.dumps(want, indent=2, ensure_ascii=False)
        if got_text != want_text:
            got_lines, want_lines = got_text.splitlines(), want_text.splitlines()
            n = next((i for i, (a, b) in enumerate(zip(got_lines, want_lines)) if a != b), min(len(got_lines), len(want_lines)))
            raise CheckFailed(
                "tools/list differs from %s.tools.json at line %d: %r, want %r"
                % (program, n + 1, got_lines[n] if n < len(got_lines) else None, want_lines[n] if n < len(want_lines) else None)
            )
        return [t["name"] for t in got["result"]["tools"]]

    def program_checks(self, program, calls, excluded=()):
        """tools/list, then every (tool, arguments, check) in calls; every
        tool the surface lists must be called at least once. Calling an
        excluded command is an unknown-tool error. A program known only by
        its manifest gets the tools/list and excluded-command checks (which
        need no pool) and a note that its calls were not made."""
        if self.compiled(program) is None:
            path = self.manifest_only(program)
            if path is None:
                raise Skipped("%s is neither compiled here nor among --manifests" % program)
            # Never starts a pool, so it stays out of the clean-up check.
            server = Server(self.binary, path, self.place, ("--lazy-pools",))
            try:
                self.surface(server, program)
                self.excluded_are_unknown(server, excluded)
                expect(not server.bad_lines, "non-protocol stdout: %s" % short(server.bad_lines))
            finally:
                status = server.close()
            expect(status == 0, "server exit status %s" % status)
            return "tools/list only: %s has a manifest but no compiled pools here, so its %d calls were skipped" % (
                program, len(calls))
        server = self.serve(program)
        try:
            names = self.surface(server, program)
            self.excluded_are_unknown(server, excluded)
            called = {tool for tool, _, _ in calls}
            expect(called >= set(names), "tools never called: %s" % sorted(set(names) - called))
            expect(called <= set(names), "calls of tools not listed: %s" % sorted(called - set(names)))
            for tool, arguments, verify in calls:
                what = "%s %s" % (tool, compact(arguments))
                verify(server.call(tool, arguments), what)
            expect(not server.bad_lines, "non-protocol stdout: %s" % short(server.bad_lines))
        finally:
            status = server.close()
        expect(status == 0, "server exit status %s" % status)
        return server

    def excluded_are_unknown(self, server, excluded):
        for tool in excluded:
            reply = server.request("tools/call", {"name": tool, "arguments": {}})
            error = reply.get("error", {})
            expect(
                error.get("code") == -32602 and tool in error.get("message", ""),
                "excluded %s: want an unknown-tool error, got %s" % (tool, short(reply)),
            )

    def run(self):
        v = lambda want, structured=False: lambda r, what: expect_value(r, want, what, structured)
        err = lambda needle: lambda r, what: expect_error(r, needle, what)

        # -- every exported tool, with the reference's answers where it gave them
        self.check(
            "shapes: tools/list and every tool",
            lambda: self.program_checks(
                "shapes",
                [
                    ("addOne", {"_1": 41}, v(42)),
                    ("addOne", {"_1": -(2**62)}, v(-(2**62) + 1)),
                    ("sumMany", {"_1": [1, 2, 3, 4]}, v(10)),
                    ("sumMany", {"_1": []}, v(0)),
                    ("scale", {"_1": 5}, v(10)),
                    ("scale", {"_1": 5, "factor": 3}, v(15)),
                    ("maybeDouble", {"_1": None}, v(None)),
                    ("maybeDouble", {}, v(None)),
                    ("maybeDouble", {"_1": 21}, v(42)),
                    ("hello", {"_1": "Ada"}, v("Hello, Ada!")),
                    ("hello", {"_1": "naïve \"q\" \\ ✓ \n"}, v("Hello, naïve \"q\" \\ ✓ \n!")),
                    ("configFlat", {}, v("/tmp:1:False")),
                    ("configFlat", {"tmpDir": "/x", "numThreads": 2, "removeCaches": True}, v("/x:2:True")),
                    (
                        "configWhole",
                        {"configwhole": {"tmpDir": "/x", "numThreads": 2, "removeCaches": True}},
                        v("/x:2:True"),
                    ),
                    ("configWhole", {}, v("/tmp:1:False")),
                    ("mkResult", {"_1": 7}, v({"status": "ok", "value": 7}, structured=True)),
                    ("noisyAdd", {"_1": 1}, v(2)),
                    ("pureAnswer", {}, v(42)),
                    ("mustFail", {"_1": 1}, err("intentional failure: boom")),
                ],
            ),
        )
        self.check(
            "excluded: tools/list and every tool",
            lambda: self.program_checks(
                "excluded", [("plainAdd", {"_1": 2, "_2": 3}, v(5))], excluded=("readStdin",)
            ),
        )
        self.check("excluded_table: tools/list and every tool", self.excluded_table)
        self.check(
            "record-docstrings: tools/list and every tool",
            lambda: self.program_checks(
                "record-docstrings",
                [
                    ("foo", {"algconfig": {"m": 5, "n": 2}, "_1": [1, 2, 3]}, v(211)),
                    ("foo", {"_1": [1]}, v(1)),
                    ("bar", {"_1": [1, 2, 3]}, v(110)),
                    (
                        "bar",
                        {
                            "sysconfig": {"tmpDir": "/x", "numThreads": 3, "removeCaches": True},
                            "algconfig": {"m": 2, "n": 0},
                            "yolo": "ab",
                            "_1": [10],
                        },
                        v(10 + 2 + 300 + 2000),
                    ),
                    # The reference answers 16; we answer 16.0 (docs/differences.md).
                    (
                        "travelTime",
                        {"add-five": True, "nothin": 2, "wind-speed": 1.5, "_1": 2.0, "_2": 3.0},
                        v(16.0),
                    ),
                    ("travelTime", {"_1": 2.0, "_2": 3.0}, v(0.0)),
                    ("bif", {}, v("False")),
                    ("bif", {"sysconfig": {"tmpDir": "/x", "numThreads": 2, "removeCaches": True}}, v("True")),
                    ("baz", {"_1": "a"}, v(["a", "a"])),
                ],
            ),
        )
        self.check(
            "cli-arg-comprehensive: tools/list and every tool",
            lambda: self.program_checks(
                "cli-arg-comprehensive",
                [
                    ("sumInts", {"_1": [1, 2, 3]}, v(6)),
                    ("countLits", {"_1": ["a", "b", "null"]}, v(3)),
                    ("greet", {}, v(4)),
                    ("greet", {"yolo": "hello"}, v(5)),
                    ("defaults", {}, v(42)),
                    ("defaults", {"i": 7}, v(7)),
                    ("passList", {"_1": [3, 1, 2]}, v([3, 1, 2])),
                    ("concatLists", {}, v([])),
                    ("concatLists", {"xs": [1, 2]}, v([1, 2])),
                    ("nullKeyword", {"_1": None}, v(None)),
                    ("nullKeyword", {"_1": 5}, v(5)),
                    ("recParam", {}, v(1)),
                    ("recParam", {"tree": {"val": 7, "children": [{"val": 8, "children": []}]}}, v(7)),
                ],
            ),
        )
        self.check(
            "recursive-records: tools/list and every tool",
            lambda: self.program_checks(
                "recursive-records",
                [
                    ("trieSizePy", {"_1": 2}, v(7)),
                    ("treeSizePy", {"_1": 3}, v(15)),
                    ("twoLevelTriePy", {"_1": 5}, v(6)),
                ]
                + RECURSIVE_CALLS,
            ),
        )
        self.check("workbench: tools/list and every tool", self.workbench_tools)
        self.check("rbench: tools/list and every tool (R pool)",
                   lambda: self.program_checks("rbench", self.lang_calls("rSleep")))
        self.check("cppbench: tools/list and every tool (C++ pool)",
                   lambda: self.program_checks("cppbench", self.lang_calls("cppSleep")))
        for label, manifest, problem in self.compared_programs():
            self.check("differential: %s against morloc-nexus: tools/list byte for byte, every call the same "
                       "or a documented difference" % label,
                       lambda label=label, manifest=manifest, problem=problem:
                       self.differential(label, manifest) if problem is None else expect(False, problem))

        # -- large values
        self.check("large: 1 MB, 20 MB and 100 MB strings (bigText)", self.large_strings)
        self.check("large: 1 MB and 20 MB string arguments (echoText)", self.large_string_arguments)
        self.check("large: 1M- and 5M-element lists (bigList)", self.large_lists)
        self.check("large: 50k records out (bigRecords) and in (digest)", self.large_records)
        self.check("large: recursive records of 65535 nodes out and in", self.large_recursive)
        self.check("concurrency: 3 rounds of 32 calls, results up to 100 KB, every byte", self.concurrent_small)
        self.check("concurrency: 3 rounds of 32 calls, results up to 4.8 MB and small ones, every byte", self.concurrent_large)
        self.check("replicas: 8 concurrent slowEcho 300 start replicas (rounds timed in bench/replicas.py); "
                   "400 calls over 8 replicas exact; with --pool-replicas py=1 one after the other", self.replicas)
        self.check("replicas: a replica killed by pid mid-call: only its call fails (naming py#N and SIGKILL), "
                   "the other 3 are exact, the replica is back under a new pid, later rounds exact", self.replica_kill)
        self.check("replicas: the primary killed by pid while replicas serve: their calls exact, calls made meanwhile "
                   "exact, the primary restarted, later rounds exact", self.primary_kill)
        self.check("replicas: 3 rounds of 16 calls over 4 processes, bigList 100k/500k and bigText 1M in shared "
                   "memory beside small calls, every byte; every process served", self.replicas_mixed)
        self.check("crash: the pool exits during a call (crash)", self.crash)
        self.check("crash: the pool killed by pid while its worker builds a large result", self.kill_mid_result)
        self.check("crash: a pool worker killed by pid while it builds a large result", self.kill_worker_mid_result)
        self.check("http: large results and 8 concurrent calls over Streamable HTTP", self.http)
        self.check("timeout: a call past --call-timeout fails, the pool restarts, the next call works", self.timeout)
        self.check("noise: pool stdout never reaches the protocol stream", self.noise)
        self.check("tasks: slowEcho 1500 a task after --task-after 300, polled while working, completed exactly; "
                   "without the extension synchronous; freed after --task-ttl (stdio and HTTP)",
                   lambda: self.on_both(self.tasks_complete))
        self.check("tasks: tasks/cancel settles cancelled, the pool serves on; a tool error is completed with isError "
                   "(stdio and HTTP)", lambda: self.on_both(self.tasks_cancel))
        self.check("tasks: the pool killed by pid mid-task: failed with a JSON-RPC error, the next task completes "
                   "(stdio and HTTP)", lambda: self.on_both(self.tasks_kill))
        self.check("tasks: --task-dir across a restart: completed survives, running reads failed (stdio and HTTP)",
                   lambda: self.on_both(self.tasks_restart))

        self.check("clean-up: the server stopped mid-call (SIGTERM, SIGINT, stdin EOF) leaves nothing", self.stop_mid_call)

        # -- last, over every server this run started
        self.check("clean-up: nothing left in /dev/shm or /tmp", self.clean_up)

        total = self.passed + len(self.failed) + len(self.skipped)
        print("test-real: %d passed, %d failed, %d skipped (of %d checks)"
              % (self.passed, len(self.failed), len(self.skipped), total), flush=True)
        for name in self.failed:
            print("  failed: %s" % name)
        return 0 if not self.failed else 1

    # -- single programs ------------------------------------------------------

    def excluded_table(self):
        """Its pool imports pyarrow at start-up: without it, every call fails
        with the pool's real start-up error, clearly."""
        probe = self.place.run(["python3", "-c", "import pyarrow"], capture_output=True)
        if probe.returncode == 0:
            check = lambda r, what: expect_value(r, 5, what)
        else:
            check = lambda r, what: expect_error(r, "pyarrow", what)
        return self.program_checks(
            "excluded_table", [("plainAdd", {"_1": 2, "_2": 3}, check)], excluded=("readTable", "sumTable")
        )

    def workbench_tools(self):
        return self.program_checks("workbench", self.workbench_calls())

    def workbench_calls(self):
        v = lambda want, structured=False: lambda r, what: expect_value(r, want, what, structured)
        points = [{"x": 1, "y": 0.5, "label": "a"}, {"x": 2, "y": 1.25, "label": "b"}]
        return (
            [
                ("addOne", {"_1": 41}, v(42)),
                ("bigList", {"_1": 0}, v([])),
                ("bigList", {"_1": 5}, v([0, 1, 2, 3, 4])),
                ("bigText", {"_1": 3}, v("xxx")),
                ("bigRecords", {"_1": 2}, v(records(2))),
                ("slowEcho", {"_1": 50}, v(50)),
                ("crash", {"_1": 3}, lambda r, what: expect_error(r, "pool", what)),
                ("addOne", {"_1": 1}, v(2)),  # the pool is back
                ("fail", {"_1": "it broke"}, lambda r, what: expect_error(r, "it broke", what)),
                ("noisy", {"_1": 1}, v(2)),
                ("countWords", {"_1": "b a b  c\nb"}, v([["a", 1], ["b", 3], ["c", 1]])),
                ("countWords", {"_1": ""}, v([])),
                (
                    "stats",
                    {"_1": [1, 2, 3.5]},
                    v({"count": 3, "mean": 6.5 / 3, "minimum": 1.0, "maximum": 3.5}, structured=True),
                ),
                ("swap", {"_1": [1, "a"]}, v(["a", 1])),
                ("echoText", {"_1": "naïve \"q\" \\ ✓ \u0001 \U0001f600"}, v("naïve \"q\" \\ ✓ \u0001 \U0001f600")),
                ("echoText", {"_1": ""}, v("")),
                ("digest", {"_1": points}, v("3:1.75:a,b")),
            ]
        )

    def lang_calls(self, sleep):
        """The calls of rbench and cppbench (the same functions in R and
        C++; `sleep` names the sleeping one)."""
        v = lambda want: lambda r, what: expect_value(r, want, what)
        text = "naïve \"q\" \\ ✓ \U0001f600 tab\there"
        return [
            (sleep, {"_1": 0.05}, v(0.05)),
            ("sumInts", {"_1": [1, 2, 3, -4]}, v(2)),
            ("sumInts", {"_1": []}, v(0)),
            ("echoText", {"_1": text}, v(text)),
            ("echoText", {"_1": ""}, v("")),
            ("bigList", {"_1": 5}, v([0, 1, 2, 3, 4])),
            ("bigList", {"_1": 0}, v([])),
            ("fail", {"_1": "it broke"}, lambda r, what: expect_error(r, "it broke", what)),
            ("sumInts", {"_1": [40, 2]}, v(42)),  # the pool serves on
        ]

    def own_calls(self, program):
        """The calls of one of the suite's own programs (tool, arguments,
        check), or None for a program the suite does not know."""
        if program == "workbench":
            return self.workbench_calls()
        if program == "rbench":
            return self.lang_calls("rSleep")
        if program == "cppbench":
            return self.lang_calls("cppSleep")
        return None

    # -- the reference, side by side -------------------------------------------

    def compared_programs(self):
        """(label, manifest, problem) of every compiled program to compare
        with the reference: the suite's own, then those MORLOC_REAL_PROGRAMS
        names (an entry naming none, or one outside a root, has its problem
        instead of a manifest: its check fails saying so)."""
        out = []
        if os.path.isdir(self.programs):
            for name in sorted(os.listdir(self.programs)):
                path = self.compiled(name)
                if path:
                    out.append((name, path, None))
        for entry in self.extra_dirs():
            found = differential.programs_at(entry)
            if not found:
                out.append((entry, None, "MORLOC_REAL_PROGRAMS names %s, which holds no compiled program (a "
                                         "manifest.json, <program>/nexus-build/manifest.json, or a directory of "
                                         "programs)" % entry))
            for name, path in found:
                label = "%s (%s)" % (name, entry)
                try:
                    self.place.inside(path)
                    out.append((label, path, None))
                except ValueError:
                    out.append((label, None, "%s is outside the root %s, where programs are served: compile it "
                                             "inside the root" % (path, self.place.root)))
        return out

    def differential(self, label, manifest):
        """Both servers on one program: tools/list byte for byte, then each
        call (the suite's own list, or calls made from the input schemas),
        reply against reply; a difference is a failure unless documented."""
        if self.reference is None:
            raise Skipped("the reference morloc-nexus is not installed with this runtime")
        differential.check_documented()
        own = self.own_calls(label) if manifest == self.compiled(label) else None
        skip = {"crash"}  # the reference answers "please retry" while its pool restarts
        ref = Server(self.reference, manifest, self.place)
        ours = Server(self.binary, manifest, self.place)
        counts = {}
        try:
            ref.keep_raw = ours.keep_raw = True
            (r, r_raw), (o, o_raw) = ref.request_raw("tools/list"), ours.request_raw("tools/list")
            expect("result" in r, "the reference's tools/list failed: %s" % short(r))
            if r_raw != o_raw:
                n = next((i for i, (a, b) in enumerate(zip(r_raw or b"", o_raw or b"")) if a != b), 0)
                raise CheckFailed("tools/list differs from the reference's at byte %d: ours %r, the reference's %r"
                                  % (n, (o_raw or b"")[max(0, n - 60):n + 60], (r_raw or b"")[max(0, n - 60):n + 60]))
            if own is not None:
                calls = [(tool, args) for tool, args, _ in own if tool not in skip]
            else:
                calls = differential.generated_calls(r["result"]["tools"])
            for tool, args in calls:
                params = {"name": tool, "arguments": args}
                rr = ref.request("tools/call", params, timeout=60)
                oo = ours.request("tools/call", params, timeout=60)
                try:
                    kind = differential.judge(oo, rr, "%s %s" % (tool, short(compact(args), 80)), args)
                except differential.Mismatch as e:
                    raise CheckFailed(str(e))
                counts[kind or "identical"] = counts.get(kind or "identical", 0) + 1
        finally:
            ref.close()
            ours.close()
        return "tools/list byte-identical; %d calls: %s" % (
            sum(counts.values()), ", ".join("%d %s" % (n, k) for k, n in sorted(counts.items())))

    # -- large values ---------------------------------------------------------

    def large_strings(self):
        server = self.serve("workbench")
        try:
            for n in (1_000_000, 20_000_000, 100_000_000):
                expect_text(server.call("bigText", {"_1": n}), "x" * n, "bigText %d" % n)
        finally:
            server.close()

    def large_string_arguments(self):
        server = self.serve("workbench")
        # Every printable ASCII character and some that JSON must escape or
        # that take several UTF-8 bytes, repeated: a wrong offset shows.
        unit = "".join(map(chr, range(32, 127))) + "\"\\\n\t é✓\U0001f600"
        try:
            for size in (1_000_000, 20_000_000):
                text = (unit * (size // len(unit) + 1))[:size]
                expect_text(server.call("echoText", {"_1": text}), text, "echoText of %d chars" % size)
        finally:
            server.close()

    def large_lists(self):
        server = self.serve("workbench")
        try:
            for n in (1_000_000, 5_000_000):
                expect_list(server.call("bigList", {"_1": n}), n, "bigList %d" % n)
        finally:
            server.close()

    def large_records(self):
        server = self.serve("workbench")
        n = 50_000
        try:
            expect_records(server.call("bigRecords", {"_1": n}), n, "bigRecords %d" % n)
            ps = records(n)
            want = "%d:%s:%s" % (sum(p["x"] for p in ps), repr(sum(p["y"] for p in ps)), ",".join(p["label"] for p in ps))
            expect_value(server.call("digest", {"_1": ps}), want, "digest of %d records" % n)
        finally:
            server.close()

    def large_recursive(self):
        server = self.serve("recursive-records")
        try:
            expect_value(server.call("trieBuild", {"_1": 15}), trie(15), "trieBuild 15", True)
            expect_value(server.call("treeKVBuild", {"_1": 15}), tree_kv(15), "treeKVBuild 15", True)
            expect_value(server.call("trieFromJson", {"_1": trie(15)}), 2**16 - 1, "trieFromJson of 65535 nodes")
            expect_value(server.call("treeKVFromJson", {"_1": tree_kv(15)}), 2**16 - 1, "treeKVFromJson of 65535 nodes")
        finally:
            server.close()

    # -- replicas -------------------------------------------------------------

    def slow_round(self, server, n=8, ms=300):
        started = time.monotonic()
        ids = [server.start("tools/call", {"name": "slowEcho", "arguments": {"_1": ms}}) for _ in range(n)]
        for rid in ids:
            reply = server.wait(rid)
            expect("result" in reply, "slowEcho: JSON-RPC error %s" % short(reply))
            expect_value(reply["result"], ms, "slowEcho %d" % ms)
        return time.monotonic() - started

    def replicas(self):
        """A real Python pool runs one call at a time; with replicas (the
        default) 8 calls overlap once the replicas are up. The first round
        starts them; the bound holds from then on."""
        server = self.serve("workbench")
        try:
            cold = self.slow_round(server)
            warm = [self.slow_round(server) for _ in range(3)]
            server.record_pools()
            print("     replicas: 8 x slowEcho 300: first round %.2f s, then %s s"
                  % (cold, ", ".join("%.2f" % t for t in warm)), flush=True)
            # How fast is for bench/replicas.py (bench/RESULTS.md); here,
            # that the burst was spread: replicas were started and run.
            procs = server.pool_processes()
            expect(len(procs) > 1, "8 concurrent calls left the pool with %d process(es)" % len(procs))
            # Replicas allocate at the same time; each has volumes of its own,
            # or a block claimed twice zeroes another call's argument (seen
            # as a 0 coming back within a few hundred calls).
            for _ in range(25):
                ids = [(server.start("tools/call", {"name": "slowEcho", "arguments": {"_1": 40 + i}}), 40 + i)
                       for i in range(16)]
                for rid, ms in ids:
                    reply = server.wait(rid)
                    expect("result" in reply, "slowEcho: JSON-RPC error %s" % short(reply))
                    expect_value(reply["result"], ms, "slowEcho %d on replicas" % ms)
        finally:
            server.close()
        one = self.serve("workbench", ("--pool-replicas", "py=1"))
        try:
            took = self.slow_round(one)
            print("     replicas: 8 x slowEcho 300 with --pool-replicas py=1: %.2f s" % took, flush=True)
            # One process: the calls cannot take less than 8 x 300 ms.
            expect(took >= 2.35, "8 calls into one Python pool took only %.2f s" % took)
        finally:
            one.close()

    # -- concurrency ----------------------------------------------------------

    def concurrent_small(self):
        self.concurrent(list_n=5_000, text_n=100_000, records_n=1_000, echo_unit=1_000)

    def concurrent_large(self):
        self.concurrent(list_n=300_000, text_n=2_000_000, records_n=20_000, echo_unit=20_000)

    def concurrent(self, list_n, text_n, records_n, echo_unit):
        """Rounds of 32 calls sent at once before any reply is read; results
        of every size interleave, each reply checked byte for byte."""
        server = self.serve("workbench")
        try:
            plan = []
            for i in range(32):
                kind = i % 6
                if kind == 0:
                    plan.append(("bigList", {"_1": list_n + i}, lambda r, w, n=list_n + i: expect_list(r, n, w)))
                elif kind == 1:
                    plan.append(("bigText", {"_1": text_n + i}, lambda r, w, n=text_n + i: expect_text(r, "x" * n, w)))
                elif kind == 2:
                    plan.append(("addOne", {"_1": i}, lambda r, w, i=i: expect_value(r, i + 1, w)))
                elif kind == 3:
                    n = records_n + i
                    plan.append(("bigRecords", {"_1": n}, lambda r, w, n=n: expect_records(r, n, w)))
                elif kind == 4:
                    s = "call %d: %s" % (i, "é" * (echo_unit * i))
                    plan.append(("echoText", {"_1": s}, lambda r, w, s=s: expect_text(r, s, w)))
                else:
                    plan.append(("slowEcho", {"_1": 20 + i}, lambda r, w, i=i: expect_value(r, 20 + i, w)))
            # The interleavings differ from round to round; a shared-memory
            # block reused too early shows in some rounds only.
            server.record_pools()
            for round_no in range(1, CONCURRENT_ROUNDS + 1):
                ids = [server.start("tools/call", {"name": tool, "arguments": args}) for tool, args, _ in plan]
                errors = []
                for rid, (tool, args, verify) in zip(ids, plan):
                    what = "%s %s" % (tool, short(compact(args), 40))
                    try:
                        reply = server.wait(rid)
                        expect("result" in reply, "%s: JSON-RPC error %s" % (what, short(reply)))
                        verify(reply["result"], what)
                    except CheckFailed as e:
                        errors.append(str(e))
                expect(
                    not errors,
                    "round %d: %d of 32 wrong: %s"
                    % (round_no, len(errors), "; ".join(short(e, 200) for e in errors[:4])),
                )
            expect(not server.bad_lines, "non-protocol stdout: %s" % short(server.bad_lines))
        finally:
            server.close()

    # -- replica deaths and shared memory over replicas -----------------------

    def warm_replicas(self, server, n):
        """Rounds of n concurrent slowEcho 300 until each call of a round ran
        on a process of its own, with n pool processes up; returns {socket:
        pid}. Which process ran a call is what the server's span line of it
        says (a server of these checks runs with --log-level debug), not how
        long the round took."""
        seen = []
        for _ in range(20):
            with server.lock:
                mark = len(server.stderr_lines)
            self.slow_round(server, n, 300)
            ran_on = server.spans_since(mark, "slowEcho", n)
            procs = server.pool_processes()
            seen.append("%s on %d process(es)" % ("+".join(sorted(ran_on)), len(procs)))
            if len(set(ran_on)) == n and len(procs) == n:
                server.record_pools()
                return procs
        raise CheckFailed("%d x slowEcho 300 never ran on %d processes at once: rounds ran on %s"
                          % (n, n, "; ".join(seen)))

    def kill_one_of_four(self, server, pick):
        """With 4 warm processes, starts 4 slowEcho calls (one each, least
        busy first) and, once each is in its process, 2 addOne calls that
        wait for a free process; once the server has read those, SIGKILLs
        the process pick(sockets) chooses and at once starts 2 more addOne
        calls. Returns (socket, number,
        processes before, replies of the slowEcho calls, replies of the
        addOne calls, seconds from the kill to each slowEcho reply)."""
        before = self.warm_replicas(server, 4)
        socket = pick(sorted(before))
        number = socket.rsplit(".r", 1)[1] if re.search(r"\.r\d+$", socket) else None
        slow = [(server.start_call("slowEcho", {"_1": 1500 + i}), 1500 + i) for i in range(4)]
        wait_in_sleep(before.values(), "a slowEcho call in each of the 4 processes")
        during = [(server.start_call("addOne", {"_1": i}), i + 1) for i in range(2)]
        # Lines are read in order: once the ping is answered, both addOne
        # calls wait in the server.
        expect("result" in server.request("ping"), "ping")
        os.kill(before[socket], signal.SIGKILL)
        killed = time.monotonic()
        during += [(server.start_call("addOne", {"_1": i}), i + 1) for i in range(2, 4)]
        replies = [(server.wait(rid), ms) for rid, ms in slow]
        after = [server.arrivals[rid] - killed for rid, _ in slow]
        added = [(server.wait(rid), want) for rid, want in during]
        return socket, number, before, replies, added, after

    def expect_one_death(self, replies, after, needle, what):
        """Exactly one of the concurrent slowEcho calls failed, saying
        needle, before any other answered; the others are exact."""
        failed = [(i, r) for i, (r, _) in enumerate(replies) if r.get("result", {}).get("isError") is not False]
        expect(len(failed) == 1, "%s: %d of 4 slowEcho calls failed, want 1: %s"
               % (what, len(failed), "; ".join(short(r, 200) for r, _ in replies)))
        i, reply = failed[0]
        expect("result" in reply, "%s: JSON-RPC error %s" % (what, short(reply)))
        expect_error(reply["result"], needle, what)
        # At once: before any call beside it answered (the figure is printed,
        # how fast is not asserted).
        others = [t for j, t in enumerate(after) if j != i]
        expect(after[i] < min(others),
               "%s: the failure came %.2f s after the kill, the other calls at %s s"
               % (what, after[i], ", ".join("%.2f" % t for t in others)))
        for j, (r, ms) in enumerate(replies):
            if j != i:
                expect("result" in r, "slowEcho %d: JSON-RPC error %s" % (ms, short(r)))
                expect_value(r["result"], ms, "slowEcho %d beside the killed process" % ms)
        return after[i]

    def expect_no_call_to_the_dead(self, server):
        """No call was handed the killed process while it was recovered
        (the server says so when a connection to it is refused)."""
        with server.lock:
            refused = [line for line in server.stderr_lines if "refused a connection" in line]
        expect(not refused, "a call was sent to the killed process: %s" % short(" | ".join(refused)))

    def restarted(self, server, socket, old, timeout=HANG):
        """The new pid on socket once the process killed as old is back."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid = server.pool_processes().get(socket)
            if pid is not None and pid != old:
                server.record_pools()
                return pid
            time.sleep(0.02)
        raise CheckFailed("no new process on %s within %.0f s of the kill: %s"
                          % (socket, timeout, server.pool_processes()))

    def exact_rounds(self, server, rounds=2):
        """Rounds of 16 concurrent distinct slowEcho and addOne calls, each
        answer exact."""
        for round_no in range(rounds):
            plan = [("slowEcho", 30 + i, 30 + i) if i % 2 else ("addOne", 100 * round_no + i, 100 * round_no + i + 1)
                    for i in range(16)]
            ids = [server.start_call(tool, {"_1": arg}) for tool, arg, _ in plan]
            for rid, (tool, arg, want) in zip(ids, plan):
                reply = server.wait(rid)
                expect("result" in reply, "%s %d: JSON-RPC error %s" % (tool, arg, short(reply)))
                expect_value(reply["result"], want, "%s %d in round %d after the kill" % (tool, arg, round_no + 1))

    def replica_kill(self):
        """SIGKILL one replica (by pid, found by its socket .rN among the
        server's children) while each of 4 processes runs a slowEcho."""
        server = self.serve("workbench", ("--pool-replicas", "py=4", "--log-level", "debug"))
        try:
            replicas = lambda sockets: [s for s in sockets if re.search(r"\.r\d+$", s)][1]
            socket, number, before, replies, added, after = self.kill_one_of_four(server, replicas)
            took = self.expect_one_death(
                replies, after, "pool 'py#%s' died (killed by signal 9 (SIGKILL)) while the call was running" % number,
                "slowEcho on the killed replica py#%s" % number)
            for r, want in added:
                expect("result" in r, "addOne: JSON-RPC error %s" % short(r))
                expect_value(r["result"], want, "addOne %d (waiting at the kill, or made just after)" % (want - 1))
            pid = self.restarted(server, socket, before[socket])
            self.expect_no_call_to_the_dead(server)
            now = server.pool_processes()
            expect({s: p for s, p in now.items() if s != socket} == {s: p for s, p in before.items() if s != socket},
                   "other processes changed: %s, were %s" % (now, before))
            self.warm_replicas(server, 4)  # the new replica serves with the others
            self.exact_rounds(server)
            print("     replicas: py#%s killed: its call failed %.3f s after the kill, back as pid %d (was %d)"
                  % (number, took, pid, before[socket]), flush=True)
        finally:
            server.close()

    def primary_kill(self):
        """SIGKILL the primary (the pool's own socket) while each of 4
        processes runs a slowEcho; 4 addOne calls made just after."""
        server = self.serve("workbench", ("--pool-replicas", "py=4", "--log-level", "debug"))
        try:
            primary = lambda sockets: [s for s in sockets if not re.search(r"\.r\d+$", s)][0]
            socket, _, before, replies, added, after = self.kill_one_of_four(server, primary)
            took = self.expect_one_death(
                replies, after, "pool 'py' died (killed by signal 9 (SIGKILL)) while the call was running",
                "slowEcho on the killed primary")
            for r, want in added:
                expect("result" in r, "addOne: JSON-RPC error %s" % short(r))
                expect_value(r["result"], want, "addOne %d (waiting at the kill, or made while the primary was down)" % (want - 1))
            pid = self.restarted(server, socket, before[socket])
            self.expect_no_call_to_the_dead(server)
            now = server.pool_processes()
            expect({s: p for s, p in now.items() if s != socket} == {s: p for s, p in before.items() if s != socket},
                   "replicas changed: %s, were %s" % (now, before))
            self.warm_replicas(server, 4)
            self.exact_rounds(server)
            # The restarted primary's shared memory serves large results.
            expect_list(server.call("bigList", {"_1": 100_000}), 100_000, "bigList 100000 after the restart")
            print("     replicas: the primary killed: its call failed %.3f s after the kill, back as pid %d (was %d)"
                  % (took, pid, before[socket]), flush=True)
        finally:
            server.close()

    def replicas_mixed(self):
        """Rounds of 16 calls sent at once over 4 warm processes: bigList
        100k and 500k and bigText 1M (all in shared memory, each process in
        volumes of its own) between small calls, each reply byte for byte;
        every process's CPU time grows, so every one served."""
        server = self.serve("workbench", ("--pool-replicas", "py=4", "--log-level", "debug"))
        try:
            procs = self.warm_replicas(server, 4)
            ticks = {s: tree_ticks(pid) for s, pid in procs.items()}
            for round_no in range(3):
                plan = []
                for i in range(16):
                    kind = i % 4
                    # The first four go one to each idle process: every
                    # process builds a large list each round.
                    if i < 4 or kind == 0:
                        n = (500_000 if i % 3 == 0 else 100_000) + 7 * i + round_no
                        plan.append(("bigList", n, lambda r, w, n=n: expect_list(r, n, w)))
                    elif kind == 1:
                        n = 1_000_000 + 13 * i + round_no
                        plan.append(("bigText", n, lambda r, w, n=n: expect_text(r, "x" * n, w)))
                    elif kind == 2:
                        plan.append(("addOne", i, lambda r, w, i=i: expect_value(r, i + 1, w)))
                    else:
                        plan.append(("slowEcho", 20 + i, lambda r, w, i=i: expect_value(r, 20 + i, w)))
                ids = [server.start_call(tool, {"_1": arg}) for tool, arg, _ in plan]
                errors = []
                for rid, (tool, arg, verify) in zip(ids, plan):
                    what = "%s %d" % (tool, arg)
                    try:
                        reply = server.wait(rid)
                        expect("result" in reply, "%s: JSON-RPC error %s" % (what, short(reply)))
                        verify(reply["result"], what)
                    except CheckFailed as e:
                        errors.append(str(e))
                expect(not errors, "round %d: %d of 16 wrong: %s"
                       % (round_no + 1, len(errors), "; ".join(short(e, 200) for e in errors[:4])))
            now = server.pool_processes()
            expect(now == procs, "pool processes changed during the rounds: %s, were %s" % (now, procs))
            grew = {s: tree_ticks(pid) - ticks[s] for s, pid in procs.items()}
            idle = sorted(s for s, t in grew.items() if t <= 0)
            expect(not idle, "processes that served nothing: %s (CPU ticks gained: %s)" % (idle, grew))
            print("     replicas: CPU ticks per process over the rounds: %s"
                  % ", ".join("%s %d" % (os.path.basename(s), grew[s]) for s in sorted(grew)), flush=True)
            expect(not server.bad_lines, "non-protocol stdout: %s" % short(server.bad_lines))
        finally:
            server.close()

    # -- pool deaths ----------------------------------------------------------

    def crash(self):
        server = self.serve("workbench")
        try:
            expect_value(server.call("addOne", {"_1": 1}), 2, "addOne before")
            result = server.call("crash", {"_1": 7})
            expect_error(result, "pool", "crash 7")
            expect_value(server.call("addOne", {"_1": 2}), 3, "addOne after the crash")
            expect_list(server.call("bigList", {"_1": 1000}), 1000, "bigList after the crash")
        finally:
            server.close()

    def kill_mid_result(self):
        """SIGKILL the pool process (the server's child, by pid) while its
        worker builds a large result; the call must fail saying how the pool
        died, and the restarted pool must serve the next call."""
        server = self.serve("workbench")
        try:
            expect_value(server.call("addOne", {"_1": 1}), 2, "addOne before")
            pools = server.children()
            expect(len(pools) == 1, "expected one pool process, found %s" % pools)
            rid = server.start_call("bigRecords", {"_1": 2_000_000})
            busy_worker(pools[0])
            os.kill(pools[0], signal.SIGKILL)
            reply = server.wait(rid)
            expect("result" in reply, "JSON-RPC error %s" % short(reply))
            expect_error(reply["result"], "killed by signal 9", "bigRecords with the pool killed")
            expect_value(server.call("addOne", {"_1": 2}), 3, "addOne after the kill")
            expect_list(server.call("bigList", {"_1": 1000}), 1000, "bigList after the kill")
            expect(server.children() and server.children() != pools, "the pool was not restarted")
        finally:
            server.close()

    def kill_worker_mid_result(self):
        """SIGKILL the pool worker (a child of the pool) that builds a large
        result: the pool lives on, the call fails clearly, the next works."""
        server = self.serve("workbench")
        try:
            expect_value(server.call("addOne", {"_1": 1}), 2, "addOne before")
            pools = server.children()
            expect(len(pools) == 1, "expected one pool process, found %s" % pools)
            rid = server.start_call("bigRecords", {"_1": 2_000_000})
            os.kill(busy_worker(pools[0]), signal.SIGKILL)
            reply = server.wait(rid)
            expect("result" in reply, "JSON-RPC error %s" % short(reply))
            expect_error(reply["result"], "pool 'py'", "bigRecords with its worker killed")
            for i in range(4):  # every worker, old and new, serves again
                expect_value(server.call("addOne", {"_1": i}), i + 1, "addOne %d after the kill" % i)
            expect_list(server.call("bigList", {"_1": 1000}), 1000, "bigList after the kill")
            expect(server.children() == pools, "the pool itself was restarted")
        finally:
            server.close()

    def http(self):
        """Results reach an HTTP client just as a stdio one, large ones and
        concurrent ones included; tools are named <module>__<command>."""
        server = HttpServer(self.binary, self.manifest("workbench"), self.place)
        self.servers.append(server)
        try:
            reply, _ = server.post({"jsonrpc": "2.0", "id": "list", "method": "tools/list", "params": {}})
            with open(os.path.join(GOLDEN, "workbench.tools.json"), encoding="utf-8") as f:
                want = ["workbench__" + t["name"] for t in json.load(f)["tools"]]
            names = [t["name"] for t in reply["result"]["tools"]]
            expect(names == want, "tools over HTTP: %s, want %s" % (names, want))
            expect_value(server.call("workbench__addOne", {"_1": 41}), 42, "addOne")
            expect_list(server.call("workbench__bigList", {"_1": 1_000_000}), 1_000_000, "bigList 1000000")
            expect_text(server.call("workbench__bigText", {"_1": 20_000_000}), "x" * 20_000_000, "bigText 20000000")
            plan = [
                ("workbench__bigList", {"_1": 200_000 + i}, lambda r, w, n=200_000 + i: expect_list(r, n, w))
                if i % 2 == 0
                else ("workbench__addOne", {"_1": i}, lambda r, w, i=i: expect_value(r, i + 1, w))
                for i in range(8)
            ]
            errors = []

            def run(tool, args, verify):
                try:
                    verify(server.call(tool, args), "%s %s" % (tool, compact(args)))
                except Exception as e:  # collected, reported below
                    errors.append(str(e))

            threads = [threading.Thread(target=run, args=item) for item in plan]
            for t in threads:
                t.start()
            for t in threads:
                t.join(CALL_TIMEOUT)
            expect(not any(t.is_alive() for t in threads), "an HTTP call did not finish")
            expect(not errors, "%d of 8 wrong: %s" % (len(errors), "; ".join(short(e, 200) for e in errors[:3])))
        finally:
            server.close()
        expect(not server.leftovers, "left behind: %s" % server.leftovers)

    def timeout(self):
        """The real Python pool runs one call at a time, so a call stuck in
        it blocks every later one: the server must give up on it at the
        deadline and restart the pool."""
        server = self.serve("workbench", ["--call-timeout", "1"])
        try:
            expect_value(server.call("addOne", {"_1": 1}), 2, "addOne before")
            pools = server.children()
            started = time.monotonic()
            expect_error(server.call("slowEcho", {"_1": 20_000}), "timed out after 1 s", "slowEcho 20000")
            expect(time.monotonic() - started < 10, "the timeout took %.1f s" % (time.monotonic() - started))
            started = time.monotonic()
            for i in range(3):
                expect_value(server.call("addOne", {"_1": i}), i + 1, "addOne %d after the timeout" % i)
            expect(time.monotonic() - started < 10, "calls after the timeout took %.1f s" % (time.monotonic() - started))
            expect_value(server.call("slowEcho", {"_1": 300}), 300, "slowEcho 300 within the deadline")
            expect(server.children() != pools, "the pool was not restarted")
        finally:
            server.close()

    # -- tasks ----------------------------------------------------------------

    def task_client(self, http, args):
        """A 2026-07-28 client of a new workbench server started with `args`."""
        kind = HttpServer if http else Server
        server = kind(self.binary, self.manifest("workbench"), self.place, args, initialize=False)
        self.servers.append(server)
        return TaskClient(server, http)

    def on_both(self, scenario):
        """Runs scenario(make, http) over stdio and over HTTP at the same
        time (`make(args)` starts a server for that transport); both must
        pass. Prints what each scenario measured."""
        self.manifest("workbench")  # skips the check when it is not compiled
        outcome = {}

        def run(http):
            label = "http" if http else "stdio"
            started = time.monotonic()
            try:
                note = scenario(lambda args: self.task_client(http, args), http)
                outcome[label] = (None, "%s %.2f s: %s" % (label, time.monotonic() - started, note))
            except Exception as e:  # reported below, never a pass
                outcome[label] = (e if isinstance(e, CheckFailed) else "%s: %s" % (type(e).__name__, e), None)

        threads = [threading.Thread(target=run, args=(http,), daemon=True) for http in (False, True)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(CALL_TIMEOUT)
        expect(len(outcome) == 2, "a transport's scenario did not finish within %.0f s" % CALL_TIMEOUT)
        for label in ("stdio", "http"):
            if outcome[label][1]:
                print("     %s" % outcome[label][1], flush=True)
        failures = ["%s: %s" % (label, outcome[label][0]) for label in ("stdio", "http") if outcome[label][0]]
        expect(not failures, "; ".join(failures))

    def tasks_complete(self, make, http):
        """--task-after 300: slowEcho 10 answers normally; slowEcho 1500
        becomes a task (handle after about 0.3 s) that a tasks/get sent at
        once finds working, that is polled while working and completes with
        exactly the result; the same call without the extension answers
        synchronously; the result is freed after --task-ttl 1.5."""
        c = make(["--task-after", "300", "--task-ttl", "1.5"])
        try:
            # The first call waits for the pool to start, which can take
            # longer than 300 ms: it is made without the extension.
            c.synchronous(c.send("tools/call", {"name": c.tool("addOne"), "arguments": {"_1": 1}}, tasks=False),
                          2, "addOne 1 without the extension")
            fast = c.call("slowEcho", 10).get("result", {})
            expect(fast.get("resultType") == "complete" and "taskId" not in fast,
                   "slowEcho 10: want a plain result, got %s" % short(fast))
            expect_value(fast, 10, "slowEcho 10", structured=True)

            started = time.monotonic()
            reply = c.call("slowEcho", 1500)
            handle_after = time.monotonic() - started
            created = reply.get("result", {})
            expect(created.get("resultType") == "task" and created.get("status") == "working",
                   "slowEcho 1500: want a task handle, got %s" % short(reply))
            # Not before --task-after; that it came before the call ended is
            # its status, working (the figure is printed, not bounded).
            expect(0.25 <= handle_after, "slowEcho 1500: the handle came after %.2f s" % handle_after)
            task = created.get("taskId", "")
            expect(re.fullmatch(r"[A-Za-z0-9_-]+\.[0-9a-f]{32}", task), "task id %r" % task)
            expect(created.get("pollIntervalMs") == 1000 and isinstance(created.get("ttlMs"), int),
                   "handle without pollIntervalMs/ttlMs: %s" % short(created))
            now = c.get(task)  # sent at once: the task exists already
            expect(now.get("status") == "working" and str(now.get("statusMessage")).startswith("running for "),
                   "tasks/get at once: %s" % short(now))
            plain_sent = time.monotonic()
            plain = c.send("tools/call", {"name": c.tool("slowEcho"), "arguments": {"_1": 1500}}, tasks=False)

            done, polls = c.settle(task, "slowEcho 1500")
            completed_at = time.monotonic()
            expect(done.get("status") == "completed", "slowEcho 1500: %s" % short(done))
            expect(done.get("result") == modern_result(1500),
                   "slowEcho 1500: result %s" % short(done.get("result")))
            expect(polls >= 3, "only %d tasks/get answered working during a 1.5 s call" % polls)
            # ttlMs counts from the task's creation (about 300 ms into the call).
            expect(isinstance(done.get("ttlMs"), int) and done["ttlMs"] >= 2600,
                   "ttlMs %s, want the time the task ran plus 1500" % done.get("ttlMs"))
            ack = c.ask("tasks/update", {"taskId": task, "inputResponses": {}})
            expect(ack.get("result", {}).get("resultType") == "complete", "tasks/update: %s" % short(ack))
            expect(c.get(task).get("status") == "completed", "the result is gone before its TTL")

            c.synchronous(plain, 1500, "slowEcho 1500 without the extension")
            plain_took = time.monotonic() - plain_sent
            expect(plain_took >= 1.45, "slowEcho 1500 without the extension answered after %.2f s" % plain_took)

            foreign = "mm1." + "0" * 32
            # Over HTTP, -32602 is answered with status 400.
            unknown = c.ask("tasks/get", {"taskId": foreign}, status=400 if http else 200)
            error = unknown.get("error", {})
            expect(error.get("code") == -32602 and "unknown task" in error.get("message", ""),
                   "another instance's task id: %s" % short(unknown))
            if http:  # the routing header must name the task
                bad = c.ask("tasks/get", {"taskId": task}, name="other", status=400)
                expect(bad.get("error", {}).get("code") == -32020, "Mcp-Name naming another task: %s" % short(bad))

            # Kept --task-ttl 1.5 s from its creation (the handle), then
            # freed: polled until it is gone.
            while True:
                polled = c.ask("tasks/get", {"taskId": task}, status=None)
                if "error" in polled:
                    break
                expect(polled.get("result", {}).get("status") == "completed",
                       "before its TTL: %s" % short(polled))
                expect(time.monotonic() < completed_at + 60,
                       "still kept 60 s after completing with --task-ttl 1.5: %s" % short(polled))
                time.sleep(0.1)
            gone_after = time.monotonic() - started
            expect(gone_after >= 1.5, "freed %.2f s after the call that made it, before --task-ttl 1.5" % gone_after)
            gone = c.ask("tasks/get", {"taskId": task}, status=400 if http else 200)
            error = gone.get("error", {})
            expect(error.get("code") == -32602 and "unknown task" in error.get("message", ""),
                   "after --task-ttl 1.5, want unknown task: %s" % short(gone))
            note = ("handle after %.2f s, %d polls while working, the call without the extension %.2f s, "
                    "freed %.2f s after the call" % (handle_after, polls, plain_took, gone_after))
        finally:
            c.server.close()
        expect(not c.server.leftovers, "left behind: %s" % c.server.leftovers)
        return note

    def tasks_cancel(self, make, http):
        """--task-after 0: slowEcho 2000 cancelled while in the pool is
        `cancelled` at once and still so once the call has ended there; the
        next calls get their own results; a tool error is `completed` with
        isError."""
        c = make(["--task-after", "0"])
        try:
            c.completed("addOne", 1, 2, "addOne 1")
            pools = c.server.children()
            expect(len(pools) == 1, "expected one pool process, found %s" % pools)
            task = c.task("slowEcho", 2000, "slowEcho 2000")
            wait_in_sleep(pools, "slowEcho 2000 in the pool")
            started = time.monotonic()
            ack = c.ask("tasks/cancel", {"taskId": task})
            acked = time.monotonic() - started
            result = ack.get("result", {})
            expect(result.get("resultType") == "complete" and "status" not in result,
                   "tasks/cancel: %s" % short(ack))
            got = c.get(task)
            expect(got.get("status") == "cancelled", "after tasks/cancel: %s" % short(got))
            again = c.ask("tasks/cancel", {"taskId": task})
            expect(again.get("result", {}).get("resultType") == "complete", "a second tasks/cancel: %s" % short(again))

            c.completed("slowEcho", 60, 60, "slowEcho 60 after the cancel")
            c.completed("addOne", 5, 6, "addOne 5 after the cancel")
            failing, _ = c.settle(c.task("fail", "it broke", "fail"), "fail")
            expect(failing.get("status") == "completed", "a tool error: %s" % short(failing))
            expect_error(failing.get("result", {}), "it broke", "a tool error in a task")
            c.synchronous(c.send("tools/call", {"name": c.tool("slowEcho"), "arguments": {"_1": 50}}, tasks=False),
                          50, "slowEcho 50 without the extension")

            # The other calls have answered: a worker still in a sleep is
            # the cancelled call's, run to its end.
            wait_until("the cancelled slowEcho 2000 ended in the pool",
                       lambda: not sleeping(descendants(c.server.proc.pid)))
            got = c.get(task)
            expect(got.get("status") == "cancelled", "once the cancelled call has ended: %s" % short(got))
            c.completed("addOne", 7, 8, "addOne 7 once the cancelled call has ended")
            note = "cancel acknowledged in %.3f s" % acked
        finally:
            c.server.close()
        expect(not c.server.leftovers, "left behind: %s" % c.server.leftovers)
        return note

    def tasks_kill(self, make, http):
        """--task-after 0: the pool process killed by pid while a task's
        slowEcho 3000 runs in it: the task is `failed` with an inlined
        JSON-RPC error at once, and the restarted pool serves the next task."""
        c = make(["--task-after", "0"])
        try:
            c.completed("addOne", 1, 2, "addOne before")
            pools = c.server.children()
            expect(len(pools) == 1, "expected one pool process, found %s" % pools)
            task = c.task("slowEcho", 3000, "slowEcho 3000")
            wait_in_sleep(pools, "slowEcho 3000 in the pool")
            os.kill(pools[0], signal.SIGKILL)
            killed = time.monotonic()
            failed, _ = c.settle(task, "slowEcho 3000 with the pool killed")
            took = time.monotonic() - killed
            expect(failed.get("status") == "failed", "slowEcho 3000 with the pool killed: %s" % short(failed))
            error = failed.get("error", {})
            expect(error.get("code") == -32603 and "pool 'py' died" in error.get("message", "")
                   and "SIGKILL" in error.get("message", ""), "the inlined error: %s" % short(error))
            expect("result" not in failed, "a failed task with a result: %s" % short(failed))
            c.completed("slowEcho", 50, 50, "slowEcho 50 after the kill")
            c.completed("addOne", 2, 3, "addOne 2 after the kill")
            now = c.server.children()
            expect(now and pools[0] not in now, "the pool was not restarted: %s, before %s" % (now, pools))
            note = "failed %.2f s after the kill" % took
        finally:
            c.server.close()
        expect(not c.server.leftovers, "left behind: %s" % c.server.leftovers)
        return note

    def tasks_restart(self, make, http):
        """--task-dir: a task completed before a restart reads back with its
        result, one running at the stop (SIGTERM) reads back `failed`."""
        store = self.place.mkdtemp("morloc-mcp-real-tasks-")
        args = ["--task-after", "0", "--task-dir", self.place.inside(store), "--drain-timeout", "0.5"]
        try:
            first = make(args)
            try:
                done_id = first.task("slowEcho", 100, "slowEcho 100")
                done, _ = first.settle(done_id, "slowEcho 100")
                expect(done.get("status") == "completed"
                       and done.get("result") == modern_result(100),
                       "slowEcho 100: %s" % short(done))
                running = first.task("slowEcho", 20_000, "slowEcho 20000")
                files = sorted(os.listdir(store))
                expect(files == sorted([done_id + ".json", running + ".json"]), "files in --task-dir: %s" % files)
            finally:
                stopped = time.monotonic()
                first.server.stop(signal.SIGTERM)
                stopped = time.monotonic() - stopped
            expect(not first.server.leftovers, "left behind: %s" % first.server.leftovers)
            second = make(args)
            try:
                got = second.get(done_id)
                expect(got.get("status") == "completed" and got.get("result") == done["result"],
                       "the completed task after the restart: %s" % short(got))
                got = second.get(running)
                expect(got.get("status") == "failed"
                       and got.get("statusMessage") == "the server restarted while the task was running"
                       and got.get("error", {}).get("code") == -32603,
                       "the task running at the stop, after the restart: %s" % short(got))
                second.completed("slowEcho", 40, 40, "slowEcho 40 after the restart")
            finally:
                second.server.close()
            expect(not second.server.leftovers, "left behind: %s" % second.server.leftovers)
        finally:
            shutil.rmtree(store, ignore_errors=True)
        return "stopped in %.2f s with a task running" % stopped

    # -- noise ----------------------------------------------------------------

    def noise(self):
        """noisy and noisyAdd print to stdout: the protocol stream stays
        clean, the lines reach stderr, and with logging/setLevel they come as
        notifications/message."""
        tried = []
        for program, tool, marker in (("workbench", "noisy", "NOISY-STDOUT"), ("shapes", "noisyAdd", "STRAY-POOL-STDOUT")):
            if self.compiled(program) is None:
                continue
            tried.append(program)
            server = self.serve(program)
            try:
                reply = server.request("logging/setLevel", {"level": "debug"})
                expect("result" in reply, "logging/setLevel: %s" % short(reply))
                ids = [server.start_call(tool, {"_1": i}) for i in range(20)]
                for i, rid in enumerate(ids):
                    reply = server.wait(rid)
                    expect_value(reply.get("result", {}), i + 1, "%s %d" % (tool, i))
                deadline = time.monotonic() + HANG
                while time.monotonic() < deadline:
                    with server.lock:
                        logged = [n for n in server.notifications if n.get("method") == "notifications/message"]
                        on_stderr = [l for l in server.stderr_lines if marker in l]
                    if len(logged) >= 20 and len(on_stderr) >= 20:
                        break
                    time.sleep(0.05)
                expect(not server.bad_lines, "%s: non-protocol stdout: %s" % (tool, short(server.bad_lines)))
                expect(len(on_stderr) >= 20, "%s: %d of 20 stdout lines on stderr" % (tool, len(on_stderr)))
                data = [n["params"].get("data", "") for n in logged]
                expect(
                    sum(marker in d for d in data) >= 20,
                    "%s: %d of 20 stdout lines as notifications/message" % (tool, sum(marker in d for d in data)),
                )
            finally:
                server.close()
        if not tried:
            raise Skipped("neither workbench nor shapes is compiled here")
        if tried != ["workbench", "shapes"]:
            return "only %s: the others are not compiled here" % ", ".join(tried)

    def stop_mid_call(self):
        """However the server is told to stop while a pool worker builds a
        large result (and another result sits in shared memory), it exits
        promptly and leaves no run directory, volume or pool behind."""
        for how in (signal.SIGTERM, signal.SIGINT, "eof"):
            server = self.serve("workbench")
            try:
                expect_list(server.call("bigList", {"_1": 100_000}), 100_000, "bigList before")
                pools = server.children()
                expect(len(pools) == 1, "expected one pool process, found %s" % pools)
                server.start_call("bigRecords", {"_1": 2_000_000})
                busy_worker(pools[0])
                server.record_pools()
            finally:
                if how == "eof":
                    server.close()
                else:
                    server.stop(how)
            expect(not server.leftovers, "after %s: left behind: %s" % (how, server.leftovers))

    # -- clean-up -------------------------------------------------------------

    def clean_up(self):
        """No server this run started may leave its run directory, a
        shared-memory file or a pool process behind (names taken from the
        pools' argv and the server pid, checked as each server exited)."""
        for server in self.servers:
            if server.proc.poll() is None:
                server.close()
        if not self.servers:
            raise Skipped("no server with pools ran")
        expect(all(s.pool_runs for s in self.servers), "a server's pools were never seen")
        left = [item for server in self.servers for item in server.leftovers]
        expect(not left, "left behind: %s" % left)


def trie(depth):
    """What the program's trieBuild returns (foo.py's build_trie)."""
    if depth <= 0:
        return {"val": 0, "subs": []}
    sub = trie(depth - 1)
    return {"val": None, "subs": [["L", sub], ["R", sub]]}


def tree_kv(depth):
    """What treeKVBuild returns (foo.py's build_treekv)."""
    if depth <= 0:
        return {"key": "leaf", "value": 1, "children": []}
    sub = tree_kv(depth - 1)
    return {"key": "inner", "value": 0, "children": [["L", sub], ["R", sub]]}


# The recursive records of recursive-records, with the reference's answers.
RECURSIVE_CALLS = [
    (
        "trieBuild",
        {"_1": 1},
        lambda r, w: expect_value(
            r, {"val": None, "subs": [["L", {"val": 0, "subs": []}], ["R", {"val": 0, "subs": []}]]}, w, True
        ),
    ),
    ("trieBuild", {"_1": 0}, lambda r, w: expect_value(r, {"val": 0, "subs": []}, w, True)),
    (
        "treeKVBuild",
        {"_1": 1},
        lambda r, w: expect_value(
            r,
            {
                "key": "inner",
                "value": 0,
                "children": [
                    ["L", {"key": "leaf", "value": 1, "children": []}],
                    ["R", {"key": "leaf", "value": 1, "children": []}],
                ],
            },
            w,
            True,
        ),
    ),
    (
        "trieFromJson",
        {"_1": {"val": None, "subs": [["L", {"val": 0, "subs": []}], ["R", {"val": 3, "subs": [["x", {"val": None, "subs": []}]]}]]}},
        lambda r, w: expect_value(r, 4, w),
    ),
    (
        "treeKVFromJson",
        {"_1": {"key": "a", "value": 1, "children": [["b", {"key": "b", "value": 2, "children": []}]]}},
        lambda r, w: expect_value(r, 2, w),
    ),
    # Deeper ones: 1023 nodes out (about 57 KB on the wire), 511 in.
    ("trieBuild", {"_1": 9}, lambda r, w: expect_value(r, trie(9), w, True)),
    ("treeKVBuild", {"_1": 9}, lambda r, w: expect_value(r, tree_kv(9), w, True)),
    ("trieFromJson", {"_1": trie(8)}, lambda r, w: expect_value(r, 511, w)),
    ("treeKVFromJson", {"_1": tree_kv(8)}, lambda r, w: expect_value(r, 511, w)),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True, help="the morloc-mcp binary")
    parser.add_argument("--programs", required=True, help="the directory of compiled programs")
    parser.add_argument("--manifests", help="a directory of manifests of other programs (tools/list checks only)")
    parser.add_argument("--only", action="append", default=[], help="run the checks whose name contains this")
    args = parser.parse_args()
    started = time.monotonic()
    found, why = place.find(need_compiler=False)
    if found is None:
        print("test-real: skipped: %s" % why)
        return 0
    manifests = os.path.abspath(args.manifests) if args.manifests else None
    with place.mounted(found):
        binary = found.install_binary(args.bin)
        if found.root is not None and manifests is not None:
            manifests = found.copy_in(manifests, "manifests")
        extra = [d for d in os.environ.get("MORLOC_REAL_PROGRAMS", "").split(":") if d]
        if "MORLOC_REAL_PROGRAMS" not in os.environ and found.root is not None:
            # Inside a root, programs compiled into the cache's extra/ are
            # compared too.
            default = found.host(os.path.join(place.ROOT_CACHE, "extra"))
            if os.path.isdir(default):
                extra = [default]
        reference = found.reference()
        print("test-real: the reference: %s" % (reference or "not installed (the differential checks skip)"),
              flush=True)
        status = Suite(found, binary, os.path.abspath(args.programs), args.only, manifests,
                       reference, extra).run()
    print("test-real: %.1f s" % (time.monotonic() - started))
    return status


if __name__ == "__main__":
    sys.exit(main())
