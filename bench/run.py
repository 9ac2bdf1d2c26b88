#!/usr/bin/env python3
"""Benchmarks for morloc-mcp; writes bench/RESULTS.md.

Usage:

    python3 bench/run.py <path-to-morloc-mcp> [--quick] [--out FILE] [--only NAME,...]

Every figure is measured from the outside, the way an MCP client sees the
server: a Python client writes newline-delimited JSON-RPC to the server's
stdin and reads replies line by line from its stdout (unbuffered pipes,
`time.perf_counter_ns`). The remote commands run in the repository's test pool
(`tests/pool/testpool.py`, a Python process speaking the real Morloc wire
protocol), so remote figures include that pool's own cost; the "raw floor"
measures exactly that cost without the server. `bench/README.md` explains each
figure.

Nothing here is a test: no timing is asserted. A check that a reply is the
expected one does stop the run, because a wrong reply makes its timing
meaningless. `--quick` runs far fewer iterations (to check the script itself;
its numbers are not worth publishing). Standard library only.
"""

from __future__ import annotations

import datetime
import gc
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH_DIR)
SHAPES = os.path.join(REPO, "examples", "shapes", "manifest.json")
NOPOOL = os.path.join(BENCH_DIR, "data", "nopool", "manifest.json")
GEO = os.path.join(REPO, "tests", "data", "tools", "geo", "manifest.json")
TESTPOOL = os.path.join(REPO, "tests", "pool", "testpool.py")
WIRE = os.path.join(REPO, "tests", "data", "wire")

# Iteration counts: (full run, --quick).
COUNTS = {
    "tools_cmd": (100, 5),
    "startup": (60, 5),
    "tools_list": (1000, 50),
    "pure": (5000, 200),
    "remote": (2000, 100),
    "warmup": (300, 20),
    "blocks": (20, 2),
    "slow_batches": (10, 2),
    "throughput_calls": (2000, 200),
    "throughput_repeats": (5, 1),
    "rss_sessions": (5, 1),
    "idle_starts": (10, 2),
    "exit": (60, 5),
    "http": (2000, 100),
}

SECTION_TIMEOUT_S = 600  # a hung server must not hang the benchmark forever
SHAPES_TOOLS = 19


class BenchError(Exception):
    """The server misbehaved or did not answer as expected."""


class SectionTimeout(BenchError):
    pass


# --- statistics -----------------------------------------------------------------

@dataclass
class Sample:
    """A set of measurements in one unit (ns for latencies)."""
    values: list[float]

    def percentile(self, p: float) -> float:
        """Linear interpolation between closest ranks."""
        data = sorted(self.values)
        if not data:
            return float("nan")
        k = (len(data) - 1) * p / 100.0
        lo = int(k)
        hi = min(lo + 1, len(data) - 1)
        return data[lo] + (data[hi] - data[lo]) * (k - lo)

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def median(self) -> float:
        return statistics.median(self.values)


def fmt_ms(ns: float) -> str:
    ms = ns / 1e6
    if ms < 1:
        return f"{ms:.4f}".rstrip("0").rstrip(".") if ms < 0.01 else f"{ms:.3f}"
    if ms < 100:
        return f"{ms:.2f}"
    return f"{ms:.1f}"


def fmt_bytes(n: float) -> str:
    if n >= 1 << 20:
        return f"{n / (1 << 20):.2f} MiB"
    if n >= 1 << 10:
        return f"{n / (1 << 10):.1f} KiB"
    return f"{int(n)} B"


@dataclass
class Row:
    """One line of a results table."""
    name: str
    n: str
    median: str
    spread: str
    note: str = ""


@dataclass
class Results:
    machine: list[tuple[str, str]] = field(default_factory=list)
    sections: dict[str, list[Row]] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)

    def add(self, section: str, row: Row) -> None:
        self.sections.setdefault(section, []).append(row)
        print(f"  {row.name}: {row.median} (n={row.n}, {row.spread}) {row.note}".rstrip(), flush=True)

    def note(self, section: str, text: str) -> None:
        self.notes.setdefault(section, []).append(text)
        print(f"  note: {text}", flush=True)


def latency_row(name: str, sample: Sample, note: str = "") -> Row:
    return Row(name, str(sample.n), f"{fmt_ms(sample.median)} ms",
               f"p10-p90 {fmt_ms(sample.percentile(10))}-{fmt_ms(sample.percentile(90))} ms, "
               f"min {fmt_ms(min(sample.values))}, max {fmt_ms(max(sample.values))}", note)


# --- the server as a child process --------------------------------------------------

class Server:
    """morloc-mcp on pipes; replies are read line by line with blocking reads."""

    def __init__(self, binary: str, manifest: str, extra: tuple[str, ...] = (),
                 stderr: int | None = None):
        self.stderr_file = tempfile.TemporaryFile() if stderr is None else None
        self.proc = subprocess.Popen(
            [binary, "mcp", manifest, *extra], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.stderr_file if stderr is None else stderr, bufsize=0)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.wfd = self.proc.stdin.fileno()
        self.rfd = self.proc.stdout.fileno()
        self.buf = bytearray()
        self.next_id = 1

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.write(self.wfd, view)
            view = view[n:]

    def readline(self) -> bytes:
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                line = bytes(self.buf[:i])
                del self.buf[:i + 1]
                return line
            chunk = os.read(self.rfd, 1 << 20)
            if not chunk:
                raise BenchError(f"server closed stdout (exit status {self.proc.poll()}); "
                                 f"stderr: {self.stderr_tail()}")
            self.buf += chunk

    def take_id(self) -> int:
        request_id = self.next_id
        self.next_id += 1
        return request_id

    def request(self, method: str, params: dict | None = None) -> dict:
        """A request with a fresh id; returns the parsed reply (checked id, no error)."""
        request_id = self.take_id()
        message: dict = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        reply = json.loads(self.readline())
        if reply.get("id") != request_id or "result" not in reply:
            raise BenchError(f"{method}: unexpected reply {str(reply)[:300]}")
        return reply

    def handshake(self) -> None:
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "1"}})
        self.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def call(self, name: str, arguments: dict) -> dict:
        result = self.request("tools/call", {"name": name, "arguments": arguments})["result"]
        if result.get("isError") is not False:
            raise BenchError(f"{name}: tool failed: {str(result)[:300]}")
        return result

    def stderr_tail(self) -> str:
        if self.stderr_file is None:
            return "(not captured)"
        self.stderr_file.seek(0)
        lines = self.stderr_file.read().decode(errors="replace").splitlines()
        return " | ".join(lines[-8:]) or "(empty)"

    def close(self, timeout: float = 10.0) -> int:
        """Close stdin and wait for the exit; returns the exit status."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise BenchError(f"server did not exit within {timeout:.0f} s of stdin EOF")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        if self.stderr_file is not None:
            self.stderr_file.close()


def call_bytes(request_id: int, name: str, arguments: str) -> bytes:
    return (b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}\n'
            % (request_id, name.encode(), arguments.encode()))


def check_ok(line: bytes, request_id: int, expected_text: bytes | None = None) -> None:
    """Cheap check of a tool-call reply: right id, a result, not an error.

    The fast path matches bytes (the server writes compact, ordered JSON);
    anything unusual falls back to parsing so the message is precise.
    """
    prefix = b'{"jsonrpc":"2.0","id":%d,"result":' % request_id
    if line.startswith(prefix) and b'"isError":false' in line and (
            expected_text is None or expected_text in line):
        return
    try:
        reply = json.loads(line)
    except ValueError:
        raise BenchError(f"reply is not JSON: {line[:200]!r}") from None
    if reply.get("id") != request_id:
        raise BenchError(f"reply id {reply.get('id')!r}, expected {request_id}")
    result = reply.get("result")
    if not isinstance(result, dict) or result.get("isError") is not False:
        raise BenchError(f"call {request_id} failed: {line[:300]!r}")
    if expected_text is not None and expected_text not in line:
        raise BenchError(f"call {request_id}: {expected_text!r} not in {line[:300]!r}")


@dataclass
class Timer:
    """Arms SIGALRM so a hung server ends the section with an error."""
    seconds: int = SECTION_TIMEOUT_S

    def __enter__(self) -> Timer:
        def expire(_signum: int, _frame: object) -> None:
            raise SectionTimeout(f"section took longer than {self.seconds} s")
        signal.signal(signal.SIGALRM, expire)
        signal.alarm(self.seconds)
        return self

    def __exit__(self, *exc: object) -> None:
        signal.alarm(0)


class quiet_gc:
    """No garbage collection pauses inside a timing loop."""

    def __enter__(self) -> None:
        gc.collect()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        gc.enable()


# --- individual benchmarks ------------------------------------------------------------

INIT_LINE = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
             b'"capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}\n')


def bench_startup(binary: str, manifest: str, runs: int) -> Sample:
    """Process start (just before spawning) to the initialize reply line."""
    times = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        server = Server(binary, manifest)
        try:
            server.write(INIT_LINE)
            line = server.readline()
            t1 = time.perf_counter_ns()
            if not line.startswith(b'{"jsonrpc":"2.0","id":1,"result":'):
                raise BenchError(f"initialize: unexpected reply {line[:200]!r}")
            times.append(t1 - t0)
            status = server.close()
            if status != 0:
                raise BenchError(f"server exited with status {status}: {server.stderr_tail()}")
        finally:
            server.kill()
    return Sample(times)


def bench_tools_cmd(binary: str, manifest: str, runs: int) -> Sample:
    """`morloc-mcp tools <manifest>`: process start to exit, output read."""
    times = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        done = subprocess.run([binary, "tools", manifest], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter_ns() - t0)
        if done.returncode != 0 or not done.stdout.startswith(b'{\n  "tools": ['):
            raise BenchError(f"tools: exit {done.returncode}, output {done.stdout[:100]!r}")
    return Sample(times)


def bench_true(runs: int) -> Sample:
    """Spawning `true`: the process-creation floor of the measurement."""
    times = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        subprocess.run(["true"])
        times.append(time.perf_counter_ns() - t0)
    return Sample(times)


def bench_exit(binary: str, manifest: str, runs: int, warm_call: bool) -> Sample:
    """stdin EOF to process exit (waitpid), after a session that made a call."""
    times = []
    for _ in range(runs):
        server = Server(binary, manifest)
        try:
            server.handshake()
            if warm_call:
                server.call("addOne", {"_1": 41})  # the pool is up and has served a call
            else:
                server.call("pureAnswer", {})
            assert server.proc.stdin is not None
            t0 = time.perf_counter_ns()
            server.proc.stdin.close()
            server.proc.wait(timeout=30)
            t1 = time.perf_counter_ns()
            if server.proc.returncode != 0:
                raise BenchError(f"exit status {server.proc.returncode}: {server.stderr_tail()}")
            times.append(t1 - t0)
        finally:
            server.kill()
    return Sample(times)


def sequential(server: Server, runs: int, warmup: int, name: str, arguments: str,
               expected: bytes | None) -> Sample:
    """Round trip of `runs` sequential tools/call requests, one in flight."""
    for _ in range(warmup):
        request_id = server.take_id()
        server.write(call_bytes(request_id, name, arguments))
        check_ok(server.readline(), request_id, expected)
    lines = [call_bytes(i, name, arguments) for i in range(server.next_id, server.next_id + runs)]
    first = server.next_id
    server.next_id += runs
    times = [0] * runs
    write, readline, clock = server.write, server.readline, time.perf_counter_ns
    with quiet_gc():
        for k in range(runs):
            t0 = clock()
            write(lines[k])
            line = readline()
            times[k] = clock() - t0
            check_ok(line, first + k, expected)
    return Sample(times)


def bench_tools_list(server: Server, runs: int, warmup: int) -> Sample:
    times = []
    with quiet_gc():
        for k in range(warmup + runs):
            request_id = server.take_id()
            data = b'{"jsonrpc":"2.0","id":%d,"method":"tools/list"}\n' % request_id
            t0 = time.perf_counter_ns()
            server.write(data)
            line = server.readline()
            t1 = time.perf_counter_ns()
            if not line.startswith(b'{"jsonrpc":"2.0","id":%d,"result":{"tools":[' % request_id):
                reply = json.loads(line)
                if reply.get("id") != request_id or "tools" not in reply.get("result", {}):
                    raise BenchError(f"tools/list: unexpected reply {line[:200]!r}")
            if k >= warmup:
                times.append(t1 - t0)
    tools = json.loads(line)["result"]["tools"]
    if len(tools) != SHAPES_TOOLS:
        raise BenchError(f"tools/list returned {len(tools)} tools, expected {SHAPES_TOOLS}")
    return Sample(times)


def concurrent_batch(server: Server, size: int, name: str, arguments: str,
                     expected: bytes) -> int:
    """Send `size` calls in one write, read all replies; returns the wall time in ns."""
    ids = [server.take_id() for _ in range(size)]
    data = b"".join(call_bytes(i, name, arguments) for i in ids)
    pending = set(ids)
    t0 = time.perf_counter_ns()
    server.write(data)
    while pending:
        line = server.readline()
        request_id = json.loads(line).get("id")
        if request_id not in pending:
            raise BenchError(f"reply for unknown or repeated id {request_id!r}")
        check_ok(line, request_id, expected)
        pending.remove(request_id)
    return time.perf_counter_ns() - t0


def throughput(server: Server, in_flight: int, total: int) -> float:
    """addOne calls per second with `in_flight` requests outstanding at all times."""
    sent = done = 0
    pending: set[int] = set()
    t0 = time.perf_counter_ns()
    burst = []
    while sent < min(in_flight, total):
        request_id = server.take_id()
        pending.add(request_id)
        burst.append(call_bytes(request_id, "addOne", '{"_1":41}'))
        sent += 1
    server.write(b"".join(burst))
    with quiet_gc():
        while done < total:
            line = server.readline()
            start = line.find(b'"id":') + 5
            end = line.find(b",", start)
            try:
                request_id = int(line[start:end])
            except ValueError:
                raise BenchError(f"cannot find the id in {line[:200]!r}") from None
            if request_id not in pending:
                raise BenchError(f"reply for unknown or repeated id {request_id}")
            check_ok(line, request_id, b'"text":"42"')
            pending.remove(request_id)
            done += 1
            if sent < total:
                request_id = server.take_id()
                pending.add(request_id)
                server.write(call_bytes(request_id, "addOne", '{"_1":41}'))
                sent += 1
    return total / ((time.perf_counter_ns() - t0) / 1e9)


def read_status(pid: int) -> dict[str, int]:
    """VmHWM / VmRSS of a process, in bytes."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                out[key] = int(rest.split()[0]) * 1024
    return out


def bench_idle(binary: str, manifest: str, starts: int) -> Sample:
    """Peak RSS of a fresh server serving `manifest` right after `initialize`."""
    peaks = []
    for _ in range(starts):
        server = Server(binary, manifest)
        try:
            server.handshake()
            server.request("ping")
            peaks.append(read_status(server.proc.pid)["VmHWM"])
            server.close()
        finally:
            server.kill()
    return Sample(peaks)


def bench_rss(binary: str, sessions: int) -> tuple[Sample, Sample]:
    """Peak and current RSS of the server after a mix of calls."""
    peaks, currents = [], []
    for _ in range(sessions):
        server = Server(binary, SHAPES)
        try:
            server.handshake()
            server.request("tools/list")
            for i in range(200):
                server.call("addOne", {"_1": i})
            server.call("hello", {"_1": "Ada"})
            server.call("mkResult", {"_1": 7})
            server.call("sumPoints", {"_1": [{"x": i, "y": -i} for i in range(100)]})
            server.call("swapPair", {"_1": [1, "one"]})
            server.call("mapInc", {"_1": [["k%d" % i, i] for i in range(100)]})
            server.call("bigText", {"_1": 100000})
            for _ in range(5):
                result = server.call("bigList", {"_1": 10000})
                if len(json.loads(result["content"][0]["text"])) != 10000:
                    raise BenchError("bigList 10000 returned the wrong length")
            for _ in range(100):
                server.call("pureAnswer", {})
            concurrent_batch(server, 32, "slowEcho", '{"_1":50}', b'"text":"50"')
            status = read_status(server.proc.pid)
            peaks.append(status["VmHWM"])
            currents.append(status["VmRSS"])
            server.close()
        finally:
            server.kill()
    return Sample(peaks), Sample(currents)


# --- raw floor: the same packet exchange without the server ---------------------------

PACKET_HEADER = struct.Struct("<IHHHH8sIQ")


class RawPool:
    """The test pool started directly, driven over its Unix socket."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="morloc-bench-")
        self.socket_path = os.path.join(self.dir, "pipe-py")
        basename = f"morloc-bench-{os.getpid()}"
        self.proc = subprocess.Popen(
            [sys.executable, TESTPOOL, self.socket_path, self.dir, basename],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(os.path.join(WIRE, "startup_ping.req.bin"), "rb") as f:
            ping = f.read()
        deadline = time.monotonic() + 30
        while True:
            try:
                if self.exchange(ping) == ping:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.close()
                raise BenchError("the test pool did not answer PING within 30 s")
            time.sleep(0.01)

    def exchange(self, packet: bytes) -> bytes:
        """connect, send one packet, read one reply packet, close."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(self.socket_path)
            sock.sendall(packet)
            data = sock.recv(65536)
            while True:
                if len(data) >= 32:
                    header = PACKET_HEADER.unpack_from(data)
                    need = 32 + header[6] + header[7]
                    if len(data) >= need:
                        return data[:need]
                chunk = sock.recv(65536)
                if not chunk:
                    raise BenchError(f"pool closed the connection after {len(data)} bytes")
                data += chunk
        finally:
            sock.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def floor_block(pool: RawPool, request: bytes, expected: bytes, runs: int) -> list[int]:
    times = [0] * runs
    exchange, clock = pool.exchange, time.perf_counter_ns
    with quiet_gc():
        for k in range(runs):
            t0 = clock()
            reply = exchange(request)
            times[k] = clock() - t0
            if reply != expected:
                raise BenchError("the test pool's addOne reply differs from addOne.resp.bin")
    return times


def bench_remote_and_floor(server: Server, runs: int, warmup: int,
                           blocks: int) -> tuple[Sample, Sample]:
    """Sequential addOne through the server, and the raw floor, interleaved.

    Both run in alternating blocks so that background load on the machine
    affects them alike; each side gets `runs` timed calls in total.
    """
    with open(os.path.join(WIRE, "addOne.req.bin"), "rb") as f:
        request = f.read()
    with open(os.path.join(WIRE, "addOne.resp.bin"), "rb") as f:
        expected = f.read()
    pool = RawPool()
    try:
        floor_block(pool, request, expected, warmup)
        sequential(server, 0, warmup, "addOne", '{"_1":41}', b'"text":"42"')
        remote: list[float] = []
        floor: list[float] = []
        per_block = max(1, runs // blocks)
        while len(remote) < runs:
            n = min(per_block, runs - len(remote))
            remote += sequential(server, n, 0, "addOne", '{"_1":41}', b'"text":"42"').values
            floor += floor_block(pool, request, expected, n)
        return Sample(remote), Sample(floor)
    finally:
        pool.close()


# --- HTTP (hook) --------------------------------------------------------------------

class HttpClient:
    """A keep-alive HTTP/1.1 client for POST /mcp, enough for the benchmark."""

    def __init__(self, host: str, port: int):
        self.sock = socket.create_connection((host, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.host = f"{host}:{port}"
        self.buf = b""
        self.session: str | None = None

    def post(self, body: bytes) -> tuple[int, dict[str, str], bytes]:
        headers = [f"POST /mcp HTTP/1.1", f"Host: {self.host}",
                   "Content-Type: application/json",
                   "Accept: application/json, text/event-stream",
                   "MCP-Protocol-Version: 2025-06-18",
                   f"Content-Length: {len(body)}"]
        if self.session:
            headers.append(f"Mcp-Session-Id: {self.session}")
        self.sock.sendall(("\r\n".join(headers) + "\r\n\r\n").encode() + body)
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        fields = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            fields[name.strip().lower()] = value.strip()
        length = int(fields.get("content-length", "0"))
        while len(self.buf) < length:
            self._fill()
        payload, self.buf = self.buf[:length], self.buf[length:]
        return status, fields, payload

    def _fill(self) -> None:
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise BenchError("HTTP server closed the connection")
        self.buf += chunk

    def close(self) -> None:
        self.sock.close()


def start_http(binary: str, manifest: str) -> tuple[subprocess.Popen, str, int] | str:
    """Start the server in HTTP mode on an OS-chosen port.

    Returns (process, host, port), or a string saying why HTTP was skipped.
    """
    proc = subprocess.Popen([binary, "mcp", manifest, "--http-port", "0",
                             "--http-host", "127.0.0.1"],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, bufsize=0)
    assert proc.stderr is not None
    lines: list[str] = []
    found: list[tuple[str, int]] = []
    ready = threading.Event()

    def drain() -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            line = raw.decode(errors="replace").rstrip("\n")
            lines.append(line)
            match = re.search(r"http://(\[[^\]]+\]|[^/:\s]+):(\d+)", line)
            if match and not found:
                found.append((match.group(1).strip("[]"), int(match.group(2))))
                ready.set()
        ready.set()

    threading.Thread(target=drain, daemon=True).start()
    ready.wait(15)
    if not found:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        tail = " | ".join(lines[-3:]) or "(no stderr)"
        return f"the binary did not start an HTTP listener with `--http-port 0` (exit status {proc.returncode}; stderr: {tail})"
    host, port = found[0]
    return proc, host, port


def bench_http(binary: str, runs: int, warmup: int, results: Results) -> None:
    section = "HTTP"
    started = start_http(binary, SHAPES)
    if isinstance(started, str):
        results.note(section, f"skipped: {started}")
        return
    proc, host, port = started
    try:
        client = HttpClient(host, port)
        status, fields, body = client.post(INIT_LINE.strip())
        if status != 200 or "mcp-session-id" not in fields:
            raise BenchError(f"HTTP initialize: status {status}, headers {fields}, body {body[:200]!r}")
        client.session = fields["mcp-session-id"]
        status, _, _ = client.post(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        if status not in (200, 202):
            raise BenchError(f"HTTP notifications/initialized: status {status}")
        status, _, body = client.post(b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}')
        if status != 200:
            raise BenchError(f"HTTP tools/list: status {status}, body {body[:200]!r}")
        names = [t.get("name") for t in json.loads(body)["result"]["tools"]]
        wire_names = {}
        for wanted in ("addOne", "pureAnswer"):
            matches = [n for n in names if n == wanted or n.endswith("__" + wanted)]
            if not matches:
                raise BenchError(f"HTTP tools/list has no {wanted} tool: {names}")
            wire_names[wanted] = matches[0]
            if matches[0] != wanted:
                results.note(section, f"over HTTP the tool `{wanted}` is named `{matches[0]}` "
                                      "(stdio serves it as `{wanted}`)".replace("{wanted}", wanted))
        for name, arguments, expected, label in (
                (wire_names["addOne"], '{"_1":41}', b'"text":"42"',
                 "keep-alive `tools/call addOne`, sequential"),
                (wire_names["pureAnswer"], "{}", b'"text":"42"',
                 "keep-alive `tools/call pureAnswer`, sequential")):
            times = []
            next_id = 100
            with quiet_gc():
                for k in range(warmup + runs):
                    next_id += 1
                    data = call_bytes(next_id, name, arguments).strip()
                    t0 = time.perf_counter_ns()
                    status, _, body = client.post(data)
                    t1 = time.perf_counter_ns()
                    if status != 200:
                        raise BenchError(f"HTTP {name}: status {status}, body {body[:200]!r}")
                    check_ok(body.strip(), next_id, expected)
                    if k >= warmup:
                        times.append(t1 - t0)
            note = "reference: 0.21 ms" if label.startswith("keep-alive `tools/call addOne`") else ""
            results.add(section, latency_row(label, Sample(times), note))
        client.close()
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# --- machine description --------------------------------------------------------------

def run_text(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def machine() -> list[tuple[str, str]]:
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.partition(":")[2].strip()
                    break
    except OSError:
        pass
    mem = "unknown"
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem = f"{int(line.split()[1]) / (1 << 20):.1f} GiB"
                    break
    except OSError:
        pass
    return [
        ("nproc", run_text(["nproc"])),
        ("CPU", cpu),
        ("memory", mem),
        ("kernel", f"{platform.system()} {platform.release()}"),
        ("rustc", run_text(["rustc", "--version"])),
        ("python", platform.python_version()),
        ("load average at start (1/5/15 min)", load_average()),
    ]


def load_average() -> str:
    """Other work on the machine skews every figure; the report says how much there was."""
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "unknown"


def binary_sizes(binary: str) -> tuple[int, int | None]:
    """(size as built, size after `strip`, or None when strip is missing)."""
    built = os.path.getsize(binary)
    strip = shutil.which("strip")
    if strip is None:
        return built, None
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "morloc-mcp")
        shutil.copyfile(binary, copy)
        if subprocess.run([strip, copy], capture_output=True).returncode != 0:
            return built, None
        return built, os.path.getsize(copy)


# --- report -----------------------------------------------------------------------------

SECTION_ORDER = ["Start-up and shutdown", "Sequential latency (stdio)", "Concurrency (stdio)",
                 "Memory and size", "HTTP"]

SECTION_INTRO = {
    "HTTP": ("HTTP figures (`--http-port`; a hook for further HTTP measurements): one keep-alive "
             "connection, one session, sequential POST /mcp requests, time from sending the request "
             "to having read the whole response."),
}


def display_path(path: str) -> str:
    """A path for the report: relative to the repository, never machine-specific."""
    absolute = os.path.abspath(path)
    if absolute.startswith(REPO + os.sep):
        return os.path.relpath(absolute, REPO)
    return os.path.basename(path)


def git_revision() -> str:
    text = run_text(["git", "-C", REPO, "rev-parse", "--short", "HEAD"])
    dirty = run_text(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"])
    return text + (" (with uncommitted changes)" if dirty and text != "unknown" else "")


def render(results: Results, binary: str, quick: bool, elapsed_s: float) -> str:
    out = ["# Benchmark results", ""]
    out.append("Written by `bench/run.py`; what each figure means and how it is measured is in "
               "`bench/README.md`.")
    out.append("Every latency is a median over the stated number of runs, with the spread beside it.")
    if quick:
        out.append("")
        out.append("**Quick run (`--quick`): too few iterations to be representative.**")
    out += ["", f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
            f"- binary: `{display_path(binary)}`, commit {git_revision()}",
            f"- total benchmark time: {elapsed_s:.0f} s", "", "## Machine", "",
            "| | |", "|---|---|"]
    for key, value in results.machine:
        out.append(f"| {key} | {value} |")
    for section in SECTION_ORDER:
        rows = results.sections.get(section, [])
        notes = results.notes.get(section, [])
        if not rows and not notes:
            continue
        out += ["", f"## {section}", ""]
        if section in SECTION_INTRO:
            out += [SECTION_INTRO[section], ""]
        if rows:
            out += ["| measurement | n | median | spread | note |", "|---|---|---|---|---|"]
            for row in rows:
                out.append(f"| {row.name} | {row.n} | {row.median} | {row.spread} | {row.note} |")
        if notes:
            if rows:
                out.append("")
            for note in notes:
                out.append(f"- {note}")
    out.append("")
    return "\n".join(out)


# --- main --------------------------------------------------------------------------------

ALL = ["tools_cmd", "startup", "tools_list", "pure", "remote", "concurrency", "rss", "idle", "size", "exit", "http"]


def main(argv: list[str]) -> int:
    args = argv[1:]
    quick = "--quick" in args
    out_path = os.path.join(BENCH_DIR, "RESULTS.md")
    only = ALL
    rest = []
    i = 0
    while i < len(args):
        if args[i] == "--quick":
            pass
        elif args[i] == "--out" and i + 1 < len(args):
            out_path = args[i + 1]
            i += 1
        elif args[i] == "--only" and i + 1 < len(args):
            only = args[i + 1].split(",")
            i += 1
        else:
            rest.append(args[i])
        i += 1
    unknown = [name for name in only if name not in ALL]
    if len(rest) != 1 or unknown:
        print(f"usage: {argv[0]} <path-to-morloc-mcp> [--quick] [--out FILE] "
              f"[--only {','.join(ALL)}]", file=sys.stderr)
        return 2
    binary = rest[0]
    if not os.access(binary, os.X_OK):
        print(f"bench: no executable at '{binary}' (build it with `cargo build --release`)",
              file=sys.stderr)
        return 2

    def count(key: str) -> int:
        return COUNTS[key][1 if quick else 0]

    started = time.monotonic()
    results = Results(machine=machine())
    S, L, C, M = SECTION_ORDER[:4]
    try:
        if "tools_cmd" in only:
            print("tools subcommand", flush=True)
            with Timer():
                sample = bench_tools_cmd(binary, SHAPES, count("tools_cmd"))
                floor = bench_true(count("tools_cmd"))
            results.add(S, latency_row("`morloc-mcp tools` on the shapes manifest, spawn to exit", sample,
                                       "target < 5 ms"))
            results.add(S, latency_row("spawning `true` the same way (process-creation floor)", floor))
        if "startup" in only:
            print("process start -> initialize answered", flush=True)
            with Timer():
                sample = bench_startup(binary, NOPOOL, count("startup"))
            results.add(S, latency_row("process start → `initialize` answered, manifest without pools", sample))
            with Timer():
                sample = bench_startup(binary, SHAPES, count("startup"))
            results.add(S, latency_row("process start → `initialize` answered, shapes (one pool)", sample,
                                       "reference: 76.5 ms (pools start eagerly)"))
        if "exit" in only:
            print("stdin EOF -> exit", flush=True)
            with Timer():
                sample = bench_exit(binary, NOPOOL, count("exit"), warm_call=False)
            results.add(S, latency_row("stdin EOF → process exit, manifest without pools", sample))
            with Timer():
                sample = bench_exit(binary, SHAPES, count("exit"), warm_call=True)
            results.add(S, latency_row("stdin EOF → process exit, shapes (pool running)", sample,
                                       "reference: 15 ms"))

        session_needed = {"tools_list", "pure", "remote", "concurrency"} & set(only)
        if session_needed:
            server = Server(binary, SHAPES)
            try:
                with Timer():
                    server.handshake()
                    server.call("addOne", {"_1": 0})  # wait until the pool is up
                    if "tools_list" in only:
                        print("tools/list round trip", flush=True)
                        sample = bench_tools_list(server, count("tools_list"), count("warmup"))
                        results.add(L, latency_row(f"`tools/list` ({SHAPES_TOOLS} tools)", sample,
                                                   "reference: 0.10 ms"))
                    if "pure" in only:
                        print("pure tools/call round trip", flush=True)
                        sample = sequential(server, count("pure"), count("warmup"), "pureAnswer", "{}",
                                            b'"text":"42"')
                        results.add(L, latency_row("`tools/call pureAnswer` (pure, in-process)", sample,
                                                   "target ≤ 0.03 ms; reference: 0.058 ms"))
                    if "remote" in only:
                        print("remote addOne round trip and raw floor", flush=True)
                        remote, floor = bench_remote_and_floor(server, count("remote"), count("warmup"),
                                                               count("blocks"))
                        results.add(L, latency_row("`tools/call addOne` (remote, test pool)", remote,
                                                   "reference: 0.085 ms with its own pool"))
                        results.add(L, latency_row("raw floor: addOne packet exchange with the same test pool, "
                                                   "no server", floor))
                        ratio = remote.median / floor.median
                        results.add(L, Row("ratio server / raw floor (medians)", "", f"{ratio:.3f}",
                                           f"p10 / p10 {remote.percentile(10) / floor.percentile(10):.3f}, "
                                           f"p90 / p90 {remote.percentile(90) / floor.percentile(90):.3f}",
                                           "target ≤ 1.15"))
                        results.add(L, Row("server overhead per remote call (median difference)", "",
                                           f"{fmt_ms(remote.median - floor.median)} ms", "", ""))
                if "concurrency" in only:
                    print("concurrency", flush=True)
                    for size in (8, 32):
                        with Timer():
                            walls = Sample([concurrent_batch(server, size, "slowEcho", '{"_1":200}',
                                                             b'"text":"200"')
                                            for _ in range(count("slow_batches"))])
                        results.add(C, latency_row(f"{size} concurrent `slowEcho 200`, wall time for the batch",
                                                   walls, "ideal: 200 ms"))
                    for in_flight in (1, 8, 32):
                        with Timer():
                            rates = [throughput(server, in_flight, count("throughput_calls"))
                                     for _ in range(count("throughput_repeats"))]
                        rate = Sample(rates)
                        results.add(C, Row(f"`addOne` throughput, {in_flight} in flight",
                                           f"{count('throughput_repeats')} × {count('throughput_calls')} calls",
                                           f"{rate.median:,.0f} calls/s",
                                           f"min {min(rates):,.0f}, max {max(rates):,.0f}",
                                           f"{1e6 / rate.median:.1f} µs per call"))
                status = server.close()
                if status != 0:
                    raise BenchError(f"server exited with status {status}")
            finally:
                server.kill()

        if "rss" in only:
            print("peak RSS", flush=True)
            with Timer():
                peaks, currents = bench_rss(binary, count("rss_sessions"))
            results.add(M, Row("peak RSS of the server (VmHWM) after a mix of calls incl. `bigList 10000`",
                               str(peaks.n), fmt_bytes(peaks.median),
                               f"min {fmt_bytes(min(peaks.values))}, max {fmt_bytes(max(peaks.values))}",
                               "reference: 12.7 MB"))
            results.add(M, Row("RSS at the end of that session (VmRSS)", str(currents.n),
                               fmt_bytes(currents.median),
                               f"min {fmt_bytes(min(currents.values))}, max {fmt_bytes(max(currents.values))}"))
        if "idle" in only:
            print("idle RSS", flush=True)
            with Timer():
                for label, manifest in (("pure program `nopool`", NOPOOL), ("pure program `geo` (tests/data/tools)", GEO),
                                        ("the bundled example `examples/shapes` (a pool)", SHAPES)):
                    peaks = bench_idle(binary, manifest, count("idle_starts"))
                    results.add(M, Row(f"peak RSS (VmHWM) at idle, {label}, fresh server after `initialize`",
                                       str(peaks.n), fmt_bytes(peaks.median),
                                       f"min {fmt_bytes(min(peaks.values))}, max {fmt_bytes(max(peaks.values))}"))
        if "size" in only:
            built, stripped = binary_sizes(binary)
            results.add(M, Row("release binary as built", "", fmt_bytes(built), f"{built:,} bytes"))
            if stripped is not None:
                results.add(M, Row("release binary after `strip`", "", fmt_bytes(stripped),
                                   f"{stripped:,} bytes", "reference: 3.0 MB + 19.7 MB runtime library"))
            else:
                results.note(M, "`strip` is not available: stripped size not measured")

        if "http" in only:
            print("HTTP", flush=True)
            with Timer():
                bench_http(binary, count("http"), count("warmup"), results)
    except BenchError as err:
        print(f"bench: {err}", file=sys.stderr)
        return 1

    results.machine.append(("load average at end (1/5/15 min)", load_average()))
    text = render(results, binary, quick, time.monotonic() - started)
    with open(out_path, "w") as f:
        f.write(text)
    print(f"\nwrote {display_path(out_path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
