#!/usr/bin/env python3
"""Soak test for morloc-mcp: a long mixed workload, watching the server's memory.

Usage:

    python3 bench/soak.py <path-to-morloc-mcp> [minutes] [--out FILE] [--no-write]
                          [--pause-ms N]

Two servers run the `examples/shapes` program for the given number of minutes
(default 10): one over stdio, one over HTTP (`--http-port 0`). A client thread
drives each of them without a break:

* stdio: rounds of pipelined requests, answered concurrently by the server:
  `addOne`, `hello` with a 10 KB string, `bigList 10000` (every fourth
  round), `mkResult`,
  `pureAnswer`, calls that fail (a wrong argument type, an unknown tool, a
  Python exception in the pool, `@throw`), an unparseable line, and a
  `slowEcho` cancelled with `notifications/cancelled` (which must never be
  answered). Every 25th round adds a call with a progress token, which must
  get its progress notifications. Every reply is checked.
* HTTP: sessions (`initialize`, `notifications/initialized`, a few calls,
  `DELETE`), several per keep-alive connection, then the connection is
  closed; now and then a malformed request (400 and a close) and a call
  abandoned by closing its connection.

Every 10 s a third thread samples each server's VmRSS and open descriptor
count from /proc. At the end the script prints, and writes as the "Soak"
section of bench/RESULTS.md (replacing an earlier one), the first, last and
largest RSS and the RSS slope (least squares, KiB per minute), over the
whole run and without its first minute (start-up allocations settle then).

The script stops with an error at the first wrong reply. Standard library
only; Linux only (/proc).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH_DIR)
SHAPES = os.path.join(REPO, "examples", "shapes", "manifest.json")
RESULTS = os.path.join(BENCH_DIR, "RESULTS.md")

SAMPLE_EVERY = 10.0
REPLY_TIMEOUT = 60.0
HELLO_TEXT = "".join(chr(0x61 + i % 26) for i in range(10 * 1024))
INITIALIZE = {"protocolVersion": "2025-06-18", "capabilities": {},
              "clientInfo": {"name": "soak", "version": "1"}}


class SoakError(Exception):
    pass


def compact(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def text_of(result: dict) -> str:
    content = result.get("content") or [{}]
    return content[0].get("text", "")


# --- what each call must return -------------------------------------------------

def expect_text(expected: str, is_error: bool = False):
    def check(reply: dict) -> None:
        result = reply.get("result")
        if not isinstance(result, dict) or result.get("isError") is not is_error \
                or text_of(result) != expected:
            raise SoakError(f"expected text {expected[:80]!r} (isError {is_error}), "
                            f"got {str(reply)[:300]}")
    return check


def expect_prefix(prefix: str, is_error: bool):
    def check(reply: dict) -> None:
        result = reply.get("result")
        if not isinstance(result, dict) or result.get("isError") is not is_error \
                or not text_of(result).startswith(prefix):
            raise SoakError(f"expected text starting {prefix!r} (isError {is_error}), "
                            f"got {str(reply)[:300]}")
    return check


def expect_error(code: int, message: str):
    def check(reply: dict) -> None:
        error = reply.get("error")
        if not isinstance(error, dict) or error.get("code") != code \
                or error.get("message") != message:
            raise SoakError(f"expected error {code} {message!r}, got {str(reply)[:300]}")
    return check


BIG_LIST = "[" + ",".join(str(i) for i in range(10000)) + "]"


def check_mk_result(n: int):
    def check(reply: dict) -> None:
        result = reply.get("result") or {}
        if result.get("structuredContent") != {"status": "ok", "value": n} \
                or result.get("isError") is not False:
            raise SoakError(f"mkResult {n}: got {str(reply)[:300]}")
    return check


def calls(prefix: str, n: int) -> list[tuple[str, dict, object]]:
    """The calls of round `n`: (tool, arguments, check). `bigList 10000` costs
    the Python test pool about 90 ms, so it is in every fourth round only."""
    out = [(prefix + "addOne", {"_1": n + k}, expect_text(str(n + k + 1))) for k in range(4)]
    if n % 4 == 0:
        out.append((prefix + "bigList", {"_1": 10000}, expect_text(BIG_LIST)))
    return out + [
        (prefix + "hello", {"_1": HELLO_TEXT}, expect_text(json.dumps(f"Hello, {HELLO_TEXT}!"))),
        (prefix + "mkResult", {"_1": n}, check_mk_result(n)),
        (prefix + "pureAnswer", {}, expect_text("42")),
        (prefix + "addOne", {"_1": "x"},
         expect_text("argument '_1': expected an integer, got \"x\"", True)),
        (prefix + "pyFail", {"_1": n}, expect_prefix(f"python-side failure: boom {n}", True)),
        (prefix + "mustFail", {"_1": n}, expect_text("intentional failure: boom", True)),
        (prefix + "noSuchTool", {}, expect_error(-32602, f"unknown tool '{prefix}noSuchTool'")),
    ]


# --- the stdio server -----------------------------------------------------------

class StdioClient:
    def __init__(self, binary: str):
        self.proc = subprocess.Popen([binary, "mcp", SHAPES], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     bufsize=0)
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 1
        self.requests = 0

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, message: object) -> None:
        data = message if isinstance(message, bytes) else compact(message)
        assert self.proc.stdin is not None
        self.proc.stdin.write(data + b"\n")
        self.requests += 1

    def take_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def recv(self) -> dict:
        try:
            line = self.lines.get(timeout=REPLY_TIMEOUT)
        except queue.Empty:
            raise SoakError(f"stdio: no reply within {REPLY_TIMEOUT} s") from None
        if line is None:
            raise SoakError(f"stdio: the server closed its output (status {self.proc.poll()})")
        return json.loads(line)

    def handshake(self) -> None:
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE})
        reply = self.recv()
        if reply.get("id") != 0 or "result" not in reply:
            raise SoakError(f"stdio initialize: {reply}")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def round(self, n: int, with_progress: bool) -> None:
        """One round of pipelined requests; returns when every reply is in."""
        pending: dict[object, object] = {}
        for tool, arguments, check in calls("", n):
            request_id = self.take_id()
            pending[request_id] = check
            self.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                       "params": {"name": tool, "arguments": arguments}})
        # An unparseable line: answered with id null.
        self.send(b'{"jsonrpc":"2.0","id":')
        pending[None] = expect_error(-32700, "invalid JSON")
        # A slow call, cancelled at once: never answered.
        cancelled = self.take_id()
        self.send({"jsonrpc": "2.0", "id": cancelled, "method": "tools/call",
                   "params": {"name": "slowEcho", "arguments": {"_1": 300}}})
        self.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": cancelled, "reason": "soak"}})
        progress_token = None
        if with_progress:
            request_id = self.take_id()
            progress_token = f"p{request_id}"
            pending[request_id] = expect_text("1100")
            self.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                       "params": {"name": "slowEcho", "arguments": {"_1": 1100},
                                  "_meta": {"progressToken": progress_token}}})
        ping = self.take_id()
        pending[ping] = lambda reply: None
        self.send({"jsonrpc": "2.0", "id": ping, "method": "ping"})
        notes = 0
        while pending:
            reply = self.recv()
            if reply.get("method") == "notifications/progress":
                if reply["params"].get("progressToken") != progress_token:
                    raise SoakError(f"stdio: unexpected progress {reply}")
                notes += 1
                continue
            reply_id = reply.get("id")
            if reply_id == cancelled:
                raise SoakError(f"stdio: the cancelled call {cancelled} was answered: {reply}")
            check = pending.pop(reply_id, None)
            if check is None:
                raise SoakError(f"stdio: unexpected message {str(reply)[:300]}")
            check(reply)
        if with_progress and notes < 2:
            raise SoakError(f"stdio: {notes} progress notifications for a 1.1 s call, expected 2")

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=30)


# --- the HTTP server ------------------------------------------------------------

class HttpConnection:
    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=REPLY_TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def _fill(self) -> None:
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise SoakError("HTTP: the server closed the connection")
        self.buf += chunk

    def exchange(self, method: str, body: bytes | None, session: str | None) -> tuple[int, dict, bytes]:
        head = [f"{method} /mcp HTTP/1.1", "Host: 127.0.0.1",
                "Accept: application/json, text/event-stream"]
        if session is not None:
            head.append(f"Mcp-Session-Id: {session}")
        if body is not None:
            head += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
        self.sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + (body or b""))
        return self.response()

    def response(self) -> tuple[int, dict, bytes]:
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        fields = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            fields[name.strip().lower()] = value.strip()
        length = int(fields.get("content-length", "0"))
        while len(self.buf) < length:
            self._fill()
        body, self.buf = self.buf[:length], self.buf[length:]
        return status, fields, body

    def close(self) -> None:
        self.sock.close()


class HttpClient:
    def __init__(self, binary: str):
        self.proc = subprocess.Popen([binary, "mcp", SHAPES, "--http-port", "0"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, bufsize=0)
        assert self.proc.stderr is not None
        deadline = time.monotonic() + 30
        self.port = 0
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline().decode(errors="replace")
            match = re.search(r"over HTTP at http://127\.0\.0\.1:(\d+)/mcp", line)
            if match:
                self.port = int(match.group(1))
                break
            if not line:
                break
        if not self.port:
            raise SoakError("HTTP: the server printed no address")
        threading.Thread(target=self._drain, daemon=True).start()
        self.requests = 0
        self.sessions = 0
        self.next_id = 1

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        while self.proc.stderr.read(1 << 16):
            pass

    def post(self, conn: HttpConnection, message: object, session: str | None,
             expect_status: int = 200) -> tuple[dict, bytes]:
        status, fields, body = conn.exchange("POST", compact(message), session)
        self.requests += 1
        if status != expect_status:
            raise SoakError(f"HTTP POST {str(message)[:100]}: status {status}, body {body[:300]!r}")
        return fields, body

    def session(self, conn: HttpConnection, n: int) -> None:
        fields, _ = self.post(conn, {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                     "params": INITIALIZE}, None)
        session = fields.get("mcp-session-id")
        if not session:
            raise SoakError(f"HTTP initialize: no session id in {fields}")
        self.post(conn, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session, 202)
        # A few of the round's calls per session, rotating.
        round_calls = calls("main__", n)
        for k in range(3):
            tool, arguments, check = round_calls[(n * 3 + k) % len(round_calls)]
            self.next_id += 1
            _, body = self.post(conn, {"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                                       "params": {"name": tool, "arguments": arguments}}, session)
            reply = json.loads(body)
            if reply.get("id") != self.next_id:
                raise SoakError(f"HTTP: reply for the wrong id: {str(reply)[:200]}")
            check(reply)
        status, _, body = conn.exchange("DELETE", None, session)
        self.requests += 1
        if status != 200:
            raise SoakError(f"HTTP DELETE: status {status}, body {body[:200]!r}")
        self.sessions += 1

    def abandoned_call(self) -> None:
        """A slow call whose client goes away: the server cancels it."""
        conn = HttpConnection(self.port)
        fields, _ = self.post(conn, {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                     "params": INITIALIZE}, None)
        session = fields["mcp-session-id"]
        self.post(conn, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session, 202)
        body = compact({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": "main__slowEcho", "arguments": {"_1": 2000}}})
        conn.sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nMcp-Session-Id: "
                          + session.encode() + b"\r\nContent-Type: application/json\r\n"
                          + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        self.requests += 1
        time.sleep(0.05)
        conn.close()
        # The session is still there; end it.
        other = HttpConnection(self.port)
        status, _, _ = other.exchange("DELETE", None, session)
        if status != 200:
            raise SoakError(f"HTTP DELETE after an abandoned call: status {status}")
        other.close()

    def malformed(self) -> None:
        conn = HttpConnection(self.port)
        conn.sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: x\r\n\r\n")
        status, fields, _ = conn.response()
        self.requests += 1
        if status != 400 or fields.get("connection") != "close":
            raise SoakError(f"HTTP malformed request: status {status}, headers {fields}")
        conn.close()

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)


# --- sampling and the report ------------------------------------------------------

def proc_status(pid: int) -> tuple[int, int] | None:
    """(VmRSS in KiB, open descriptors), or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, StopIteration):
        return None
    return rss, fds


def slope_per_minute(samples: list[tuple[float, int, int]]) -> float | None:
    """Least-squares slope of RSS (KiB) over time, per minute."""
    if len(samples) < 2:
        return None
    ts = [s[0] for s in samples]
    ys = [s[1] for s in samples]
    mt, my = sum(ts) / len(ts), sum(ys) / len(ys)
    var = sum((t - mt) ** 2 for t in ts)
    if var == 0:
        return None
    return sum((t - mt) * (y - my) for t, y in zip(ts, ys)) / var * 60.0


def fmt_slope(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1f} KiB/min"


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def report(args, commit: str, started: datetime.datetime, elapsed: float, load_start: str,
           stdio: StdioClient, http: HttpClient, rounds: int, http_rounds: int,
           samples: dict[str, list[tuple[float, int, int]]], exits: dict[str, int]) -> str:
    binary = os.path.relpath(os.path.abspath(args.binary), REPO)
    lines = [
        "## Soak",
        "",
        "Written by `bench/soak.py` (what it does is in its docstring): a stdio server and an HTTP "
        "server of `examples/shapes` under a continuous mixed workload, VmRSS and open descriptors "
        f"sampled every {SAMPLE_EVERY:.0f} s.",
        "",
        f"- date: {started.strftime('%Y-%m-%d %H:%M UTC')}",
        f"- binary: `{binary}`, commit {commit} (at the start of the run)",
        f"- duration: {elapsed / 60:.1f} min; machine: {os.cpu_count()} CPUs, "
        f"{platform.system()} {platform.release()}",
        f"- load average at start / end (1/5/15 min): {load_start} / {load_average()}",
        f"- stdio: {rounds:,} rounds, {stdio.requests:,} messages sent "
        f"({stdio.requests / elapsed:,.0f}/s), every reply checked, "
        f"{rounds:,} cancelled calls never answered, exit status {exits['stdio']} at EOF",
        f"- HTTP: {http.sessions:,} sessions on {http_rounds:,} connections, "
        f"{http.requests:,} requests ({http.requests / elapsed:,.0f}/s), "
        f"exit status {exits['http']} on SIGTERM",
        "",
        "| server | samples | first RSS | last RSS | max RSS | slope, whole run | slope after the first minute | open fds first / last / max |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, series in samples.items():
        if not series:
            lines.append(f"| {name} | 0 | | | | | | |")
            continue
        rss = [s[1] for s in series]
        fds = [s[2] for s in series]
        later = [s for s in series if s[0] >= 60.0]
        lines.append(
            f"| {name} | {len(series)} | {rss[0]:,} KiB | {rss[-1]:,} KiB | {max(rss):,} KiB | "
            f"{fmt_slope(slope_per_minute(series))} | {fmt_slope(slope_per_minute(later))} | "
            f"{fds[0]} / {fds[-1]} / {max(fds)} |")
    lines.append("")
    for name, series in samples.items():
        values = " ".join(str(s[1]) for s in series)
        lines.append(f"- {name} VmRSS samples (KiB): {values}")
    lines.append("")
    return "\n".join(lines)


def write_section(path: str, section: str) -> None:
    """Replaces the `## Soak` section of `path` (up to the next `## `), or appends it."""
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        text = "# Benchmark results\n"
    match = re.search(r"^## Soak\n", text, flags=re.M)
    if match:
        rest = re.search(r"^## ", text[match.end():], flags=re.M)
        end = match.end() + rest.start() if rest else len(text)
        text = text[:match.start()] + section + ("\n" + text[end:] if rest else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    with open(path, "w") as f:
        f.write(text.rstrip("\n") + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary")
    parser.add_argument("minutes", nargs="?", type=float, default=10.0)
    parser.add_argument("--out", default=RESULTS, help="the results file (default bench/RESULTS.md)")
    parser.add_argument("--no-write", action="store_true", help="print the section only")
    parser.add_argument("--pause-ms", type=float, default=2.0,
                        help="pause between rounds of each client, to leave the machine usable")
    args = parser.parse_args()

    started = datetime.datetime.now(datetime.timezone.utc)
    load_start = load_average()
    commit = git_commit()
    stdio = StdioClient(args.binary)
    http = HttpClient(args.binary)
    stdio.handshake()
    duration = args.minutes * 60.0
    t0 = time.monotonic()
    stop = threading.Event()
    failures: list[str] = []
    samples: dict[str, list[tuple[float, int, int]]] = {"stdio": [], "HTTP": []}
    counters = {"rounds": 0, "http_rounds": 0}

    def sampler() -> None:
        while True:
            now = time.monotonic() - t0
            for name, pid in (("stdio", stdio.proc.pid), ("HTTP", http.proc.pid)):
                status = proc_status(pid)
                if status is not None:
                    samples[name].append((now, *status))
            print(f"[{now / 60:5.1f} min] stdio rounds {counters['rounds']:,}, "
                  f"HTTP sessions {http.sessions:,}; RSS stdio "
                  f"{samples['stdio'][-1][1] if samples['stdio'] else '?'} KiB, HTTP "
                  f"{samples['HTTP'][-1][1] if samples['HTTP'] else '?'} KiB", flush=True)
            if stop.wait(SAMPLE_EVERY):
                return

    def guarded(body) -> None:
        try:
            body()
        except Exception as e:  # noqa: BLE001 - any failure ends the run
            failures.append(f"{type(e).__name__}: {e}")
            stop.set()

    def drive_stdio() -> None:
        n = 0
        while not stop.is_set() and time.monotonic() - t0 < duration:
            n += 1
            stdio.round(n, with_progress=n % 25 == 0)
            counters["rounds"] = n
            time.sleep(args.pause_ms / 1000.0)

    def drive_http() -> None:
        n = 0
        while not stop.is_set() and time.monotonic() - t0 < duration:
            n += 1
            conn = HttpConnection(http.port)
            for k in range(4):
                http.session(conn, n * 4 + k)
            conn.close()
            counters["http_rounds"] = n
            if n % 10 == 0:
                http.malformed()
            if n % 50 == 0:
                http.abandoned_call()
            time.sleep(args.pause_ms / 1000.0)

    sampling = threading.Thread(target=sampler, daemon=True)
    sampling.start()
    drivers = [threading.Thread(target=guarded, args=(f,), daemon=True)
               for f in (drive_stdio, drive_http)]
    for d in drivers:
        d.start()
    for d in drivers:
        d.join()
    # One last sample at the very end.
    elapsed = time.monotonic() - t0
    for name, pid in (("stdio", stdio.proc.pid), ("HTTP", http.proc.pid)):
        status = proc_status(pid)
        if status is not None:
            samples[name].append((elapsed, *status))
    stop.set()
    sampling.join()
    exits = {"stdio": stdio.close(), "http": http.stop()}
    if failures:
        for failure in failures:
            print(f"soak failed: {failure}", file=sys.stderr)
        return 1
    section = report(args, commit, started, elapsed, load_start, stdio, http, counters["rounds"],
                     counters["http_rounds"], samples, exits)
    print(section)
    if not args.no_write:
        write_section(args.out, section)
        print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
