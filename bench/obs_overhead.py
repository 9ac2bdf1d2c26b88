#!/usr/bin/env python3
"""What access logs, traces and metrics add to one call.

    python3 bench/obs_overhead.py target/release/morloc-mcp [--calls N] [--rounds N] [--out FILE]

Servers of the same binary serve the shapes program with the test pool
at once, on each transport: *off* with `--log-level warn` (no access line,
no span; the call counters of `/metrics` are always kept), *on* with
`--log-level debug --log-format json` (an access line per request, a span
line per pool call) with a `traceparent` on every call (in `_meta` on
stdio, as a header over HTTP) and `/metrics` scraped after every block. The
on server's stderr goes to a file, as to a collector tailing it.

A third server, *access*, runs with `--log-level info` (text access lines
only: the HTTP default). A client (Python, the same for all) makes
sequential `addOne` calls, --calls per round, the servers taking turns
call by call for --rounds rounds. Per server: the median call and its
p10-p90 over every call; the added latency is the median over rounds of the
difference of round medians against *off*, with its p25-p75; CPU is the
server's user + system time per call over the timed calls (from /proc);
instructions per call are counted by callgrind over stdio when valgrind is
installed (the only figure the machine's load does not move). Every reply
is checked, and so is every line written (JSON, one access line per call).

The section between the `obs-overhead` markers of bench/RESULTS.md is
replaced (or written to --out). No figure is asserted; the target is 5 %.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
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


def timed_block(server, calls: int, scrape: bool = True) -> list[float]:
    out = []
    for _ in range(calls):
        t = time.perf_counter()
        reply = server.once()
        out.append(time.perf_counter() - t)
        if b'"text":"42"' not in reply:
            raise RuntimeError(f"addOne answered {reply[:300]!r}")
    if scrape:
        server.scrape()
    return out


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


CONFIGS = [
    # name, flags, traced (a traceparent on every call, /metrics scraped)
    ("off", OFF, False),
    ("access", ["--log-level", "info"], False),
    ("full", ON, True),
]


def measure(kind, binary: str, manifest: str, calls: int, rounds: int, tmp: str) -> dict:
    logs = {name: open(os.path.join(tmp, f"{kind.__name__}-{name}.log"), "w") for name, _, _ in CONFIGS}
    servers = {name: kind(binary, manifest, flags, logs[name], traced) for name, flags, traced in CONFIGS}
    for s in servers.values():
        timed_block(s, 200)  # warm: pool started, paths hot
    cpu0 = {k: cpu_seconds(s.proc.pid) for k, s in servers.items()}
    times: dict[str, list[float]] = {name: [] for name in servers}
    added: dict[str, list[float]] = {name: [] for name in servers if name != "off"}
    names = list(servers)
    for r in range(rounds):
        # Call by call in turn, so a burst of load on the machine weighs on
        # every server alike; the order rotates each round.
        order = names[r % len(names):] + names[:r % len(names)]
        block: dict[str, list[float]] = {name: [] for name in names}
        for _ in range(calls):
            for name in order:
                block[name] += timed_block(servers[name], 1, scrape=False)
        for name in order:
            servers[name].scrape()
            times[name] += block[name]
        medians = {name: statistics.median(t) for name, t in block.items()}
        for name in added:
            added[name].append(medians[name] - medians["off"])
    cpu = {k: (cpu_seconds(s.proc.pid) - cpu0[k]) / (calls * rounds) for k, s in servers.items()}
    for s in servers.values():
        s.stop()
    for log in logs.values():
        log.close()
    records = [json.loads(line) for line in open(logs["full"].name, encoding="utf-8")]
    access = [r for r in records if r["msg"] == "access" and r.get("method") == "tools/call"]
    spans = [r for r in records if r["msg"] == "span"]
    expected = (calls * rounds) + 200
    if len(access) != expected or len(spans) != expected:
        raise RuntimeError(f"{len(access)} access lines and {len(spans)} spans for {expected} calls")
    if any(r["trace_id"] != TRACEPARENT[3:35] for r in access):
        raise RuntimeError("an access line lost the caller's trace")
    text = [l for l in open(logs["access"].name, encoding="utf-8") if l.startswith("morloc-mcp: access ")]
    if sum(" method=tools/call " in l for l in text) != expected:
        raise RuntimeError("the access server did not write one line per call")
    out = {}
    for name in servers:
        t = times[name]
        out[name] = {"median": statistics.median(t), "spread": (pct(t, 0.1), pct(t, 0.9)), "cpu": cpu[name],
                     "bytes": os.path.getsize(logs[name].name) / expected}
        if name in added:
            out[name]["added"] = statistics.median(added[name])
            out[name]["added_spread"] = (pct(added[name], 0.25), pct(added[name], 0.75))
    return out


def instructions(binary: str, manifest: str, flags: list[str], traced: bool, calls: int, tmp: str) -> float | None:
    """Instructions the server executes per call (stdio, under callgrind):
    the difference of a 100-call and a 100 + `calls`-call session."""
    if shutil.which("valgrind") is None:
        return None
    line = (json.dumps(call(traced)) + "\n").encode()
    totals = []
    for n in (100, 100 + calls):
        out = os.path.join(tmp, f"callgrind-{n}.out")
        argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", binary, "mcp", manifest, *flags]
        with open(os.path.join(tmp, "callgrind.log"), "w") as log:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, bufsize=0)
            proc.stdin.write((json.dumps(INIT) + "\n").encode())
            proc.stdout.readline()
            proc.stdin.write((json.dumps(INITIALIZED) + "\n").encode())
            for _ in range(n):
                proc.stdin.write(line)
                if b'"text":"42"' not in proc.stdout.readline():
                    raise RuntimeError("addOne failed under callgrind")
            proc.stdin.close()
            proc.wait(120)
        with open(out, encoding="utf-8", errors="replace") as f:
            totals.append(next(int(l.split()[1]) for l in f if l.startswith(("summary:", "totals:"))))
    return (totals[1] - totals[0]) / calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("binary")
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    rows = []
    ms = lambda s: f"{s * 1000:.4f}"  # noqa: E731
    with tempfile.TemporaryDirectory() as tmp:
        manifest = test_pool_manifest(tmp)
        counts = {name: instructions(binary, manifest, flags, traced, 300, tmp) for name, flags, traced in CONFIGS}
        for kind in (Stdio, Http):
            m = measure(kind, binary, manifest, args.calls, args.rounds, tmp)
            off = m["off"]
            for name, _, _ in CONFIGS:
                r = m[name]
                added = "" if name == "off" else (
                    f"{ms(r['added'])} ({ms(r['added_spread'][0])} to {ms(r['added_spread'][1])}) "
                    f"| {100 * r['added'] / off['median']:+.1f} %")
                count = counts[name]
                inst = "" if count is None or kind is Http else f"{count / 1000:.1f} k"
                row = (f"| {'stdio' if kind is Stdio else 'HTTP'} | {name} "
                       f"| {ms(r['median'])} ({ms(r['spread'][0])}-{ms(r['spread'][1])}) "
                       f"| {added or '| '} | {r['cpu'] * 1e6:.1f} µs | {inst} | {r['bytes']:.0f} B |")
                print(row, flush=True)
                rows.append(row)
    lines = [BEGIN, "", "## Logs, traces and metrics: what they add to a call (`bench/obs_overhead.py`)", "",
             f"Sequential `addOne 41` on the test pool, {args.calls} calls per round, {args.rounds} rounds, "
             "three servers of one binary taking turns call by call. *off*: `--log-level warn`; "
             "*access*: `--log-level info` (an access line per request, text: the HTTP default); "
             "*full*: `--log-level debug --log-format json` (an access line and a pool-call span per "
             "call), a `traceparent` on every call, `/metrics` scraped after each round (HTTP). "
             "stderr goes to a file. Medians in ms with p10-p90; *added* is the median over rounds of "
             "the difference of round medians against *off* (p25 to p75), and that median over the "
             "median *off* call; CPU is the server's user + system time per call; instructions are "
             "the server's per call under callgrind (stdio, 300 calls); *log* is the bytes written "
             "per call. The client is Python (the same for all). " + provenance(), "",
             "| transport | logs | call | added | added / off | CPU | instructions | log |",
             "|---|---|---|---|---|---|---|---|", *rows, "", END]
    write_section(args.out, BEGIN, END, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
