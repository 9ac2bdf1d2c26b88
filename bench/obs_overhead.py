#!/usr/bin/env python3
"""What access logs, traces and metrics add to one call.

    python3 bench/obs_overhead.py target/release/morloc-mcp [--calls N] [--rounds N] [--out FILE]

Two servers of the same binary serve the shapes program with the test pool
at once, on each transport: *off* with `--log-level warn` (no access line,
no span; the call counters of `/metrics` are always kept), *on* with
`--log-level debug --log-format json` (an access line per request, a span
line per pool call) with a `traceparent` on every call (in `_meta` on
stdio, as a header over HTTP) and `/metrics` scraped after every block. The
on server's stderr goes to a file, as to a collector tailing it.

A client (Python, the same for both) makes sequential `addOne` calls in
blocks of --calls, the two servers taking turns block by block for
--rounds rounds. Per server: the median call and its p10-p90 over every
call; the added latency is the median over rounds of (on - off) block
medians, with its p25-p75; CPU is the server's user + system time per call
over the timed calls (from /proc). Every reply is checked, and so is every
line the on server wrote (JSON, one access line per call).

The section between the `obs-overhead` markers of bench/RESULTS.md is
replaced (or written to --out). No figure is asserted; the target is 5 %.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from programs import test_pool_manifest
from report import provenance, write_section

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- obs-overhead:begin -->"
END = "<!-- obs-overhead:end -->"
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "obs-bench", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
OFF = ["--log-level", "warn"]
ON = ["--log-level", "debug", "--log-format", "json"]


def call(traced: bool) -> dict:
    params: dict = {"name": "addOne", "arguments": {"_1": 41}}
    if traced:
        params["_meta"] = {"traceparent": TRACEPARENT}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


def cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Stdio:
    def __init__(self, binary: str, manifest: str, flags: list[str], log, traced: bool):
        self.proc = subprocess.Popen([binary, "mcp", manifest, *flags], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=log, bufsize=0)
        self.line = (json.dumps(call(traced)) + "\n").encode()
        self.ask((json.dumps(INIT) + "\n").encode())
        self.proc.stdin.write((json.dumps(INITIALIZED) + "\n").encode())

    def ask(self, line: bytes) -> bytes:
        self.proc.stdin.write(line)
        return self.proc.stdout.readline()

    def once(self) -> bytes:
        return self.ask(self.line)

    def scrape(self) -> None:
        pass

    def stop(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(30)


class Http:
    def __init__(self, binary: str, manifest: str, flags: list[str], log, traced: bool):
        self.log_path = log.name
        self.proc = subprocess.Popen([binary, "mcp", manifest, "--http-port", "0", "--plain-tool-names", *flags],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        self.port = self.wait_port(log.name, flags)
        self.sock = socket.create_connection(("127.0.0.1", self.port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        status, headers, _ = self.post(json.dumps(INIT).encode(), {})
        self.session = headers["mcp-session-id"]
        self.post(json.dumps(INITIALIZED).encode(), {"Mcp-Session-Id": self.session})
        extra = {"Mcp-Session-Id": self.session}
        if traced:
            extra["traceparent"] = TRACEPARENT
        body = json.dumps(call(False)).encode()
        self.request = self.head("POST", "/mcp", extra, len(body)) + body
        self.metrics = self.head("GET", "/metrics", {}, None)
        self.traced = traced

    def wait_port(self, path: str, flags: list[str]) -> int:
        # At `warn` the banner is not written: the port is read from /proc.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            text = open(path, encoding="utf-8", errors="replace").read()
            found = re.search(r"over HTTP at http://[^\s]*:(\d+)/mcp", text)
            if found:
                return int(found.group(1))
            port = listening_port(self.proc.pid)
            if port:
                return port
            time.sleep(0.02)
        raise RuntimeError("the server did not listen")

    def head(self, method: str, path: str, extra: dict, length: int | None) -> bytes:
        lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{self.port}",
                 "Accept: application/json, text/event-stream"]
        if length is not None:
            lines += ["Content-Type: application/json", f"Content-Length: {length}"]
        lines += [f"{k}: {v}" for k, v in extra.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    def post(self, body: bytes, extra: dict):
        self.sock.sendall(self.head("POST", "/mcp", extra, len(body)) + body)
        return self.read()

    def read(self):
        while b"\r\n\r\n" not in self.buf:
            self.buf += self.sock.recv(65536)
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        headers = {k.lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
        length = int(headers.get("content-length", "0"))
        while len(self.buf) < length:
            self.buf += self.sock.recv(65536)
        body, self.buf = self.buf[:length], self.buf[length:]
        return int(lines[0].split()[1]), headers, body

    def once(self) -> bytes:
        self.sock.sendall(self.request)
        return self.read()[2]

    def scrape(self) -> None:
        if self.traced:
            self.sock.sendall(self.metrics)
            status, _, text = self.read()
            if status != 200 or b"mcp_server_tool_calls_total" not in text:
                raise RuntimeError(f"/metrics answered {status}")

    def stop(self) -> None:
        self.sock.close()
        self.proc.terminate()
        self.proc.wait(30)


def listening_port(pid: int) -> int | None:
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in open(table).read().splitlines()[1:]:
            cols = row.split()
            if cols[3] == "0A" and cols[9] in inodes:
                return int(cols[1].rsplit(":", 1)[1], 16)
    return None


def timed_block(server, calls: int) -> list[float]:
    out = []
    for _ in range(calls):
        t = time.perf_counter()
        reply = server.once()
        out.append(time.perf_counter() - t)
        if b'"text":"42"' not in reply:
            raise RuntimeError(f"addOne answered {reply[:300]!r}")
    server.scrape()
    return out


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def measure(kind, binary: str, manifest: str, calls: int, rounds: int, tmp: str) -> dict:
    off_log = open(os.path.join(tmp, f"{kind.__name__}-off.log"), "w")
    on_log = open(os.path.join(tmp, f"{kind.__name__}-on.log"), "w")
    servers = {"off": kind(binary, manifest, OFF, off_log, False),
               "on": kind(binary, manifest, ON, on_log, True)}
    for s in servers.values():
        timed_block(s, 200)  # warm: pool started, paths hot
    cpu0 = {k: cpu_seconds(s.proc.pid) for k, s in servers.items()}
    times = {"off": [], "on": []}
    added = []
    for r in range(rounds):
        order = ["off", "on"] if r % 2 == 0 else ["on", "off"]
        medians = {}
        for name in order:
            block = timed_block(servers[name], calls)
            times[name] += block
            medians[name] = statistics.median(block)
        added.append(medians["on"] - medians["off"])
    cpu = {k: (cpu_seconds(s.proc.pid) - cpu0[k]) / (calls * rounds) for k, s in servers.items()}
    for s in servers.values():
        s.stop()
    on_log.close()
    lines = open(on_log.name, encoding="utf-8").read().splitlines()
    records = [json.loads(line) for line in lines]
    access = [r for r in records if r["msg"] == "access" and r.get("method") == "tools/call"]
    spans = [r for r in records if r["msg"] == "span"]
    expected = (calls * rounds) + 200
    if len(access) != expected or len(spans) != expected:
        raise RuntimeError(f"{len(access)} access lines and {len(spans)} spans for {expected} calls")
    if any(r["trace_id"] != TRACEPARENT[3:35] for r in access):
        raise RuntimeError("an access line lost the caller's trace")
    off = statistics.median(times["off"])
    return {"off": off, "on": statistics.median(times["on"]),
            "off_spread": (pct(times["off"], 0.1), pct(times["off"], 0.9)),
            "on_spread": (pct(times["on"], 0.1), pct(times["on"], 0.9)),
            "added": statistics.median(added), "added_spread": (pct(added, 0.25), pct(added, 0.75)),
            "cpu": cpu, "bytes": os.path.getsize(on_log.name) / len(access)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("binary")
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        manifest = test_pool_manifest(tmp)
        for kind in (Stdio, Http):
            m = measure(kind, binary, manifest, args.calls, args.rounds, tmp)
            ms = lambda s: f"{s * 1000:.4f}"  # noqa: E731
            row = (f"| {kind.__name__.lower() if kind is Stdio else 'HTTP'} "
                   f"| {ms(m['off'])} ({ms(m['off_spread'][0])}-{ms(m['off_spread'][1])}) "
                   f"| {ms(m['on'])} ({ms(m['on_spread'][0])}-{ms(m['on_spread'][1])}) "
                   f"| {ms(m['added'])} ({ms(m['added_spread'][0])}-{ms(m['added_spread'][1])}) "
                   f"| {100 * m['added'] / m['off']:.1f} % "
                   f"| {m['cpu']['off'] * 1e6:.1f} µs / {m['cpu']['on'] * 1e6:.1f} µs "
                   f"| {m['bytes']:.0f} B |")
            print(row, flush=True)
            rows.append(row)
    lines = [BEGIN, "", "## Logs, traces and metrics: what they add to a call (`bench/obs_overhead.py`)", "",
             f"Sequential `addOne 41` on the test pool, {args.calls} calls per block, {args.rounds} rounds, "
             "the two servers taking turns block by block. *off*: `--log-level warn`; *on*: "
             "`--log-level debug --log-format json` (an access line and a pool-call span per call, "
             "stderr to a file), a `traceparent` on every call, `/metrics` scraped after each block "
             "(HTTP). Medians in ms with p10-p90; *added* is the median over rounds of the on-off "
             "difference of block medians (p25-p75); CPU is the server's user + system time per "
             "call, off / on; *log* is the bytes written per call. The client is Python (the same "
             "for both). " + provenance(), "",
             "| transport | off | on | added | added / off | CPU off / on | log |",
             "|---|---|---|---|---|---|---|", *rows, "", END]
    write_section(args.out, BEGIN, END, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
