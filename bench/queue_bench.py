#!/usr/bin/env python3
"""The queue of calls waiting for a pool process: server CPU per call by
queue length, and how long a newcomer's quick call waits behind other
clients' slow ones.

    python3 bench/queue_bench.py target/release/morloc-mcp [--sizes 500,5000,50000]
                                 [--before OLD_BINARY [--before-sizes 500,5000,20000]]
                                 [--out FILE] [--print-only]

With --before, the same is measured with an older binary too (a build
whose queue is walked on every event takes minutes at 50,000, hence its
own, shorter list of sizes), and both columns are reported.

1. CPU per call. Over stdio, with one process of the test pool
   (`--pool-replicas py=1`), K `addOne` calls are written at once, so
   nearly all of them wait in the queue, and read back (each reply is
   checked). The server's CPU time (utime + stime from /proc/<pid>/stat)
   over the run, divided by K, is the cost per call; it should not grow
   with K. The queue caps are lifted (`--max-queued 0
   --max-queued-per-owner 0 --queue-timeout 0`) when the binary has them.
2. Fairness. Over HTTP, with up to 8 processes of the test pool, three
   legacy sessions queue 8 `slowEcho 6000` calls each (24 calls, one
   connection per call); once they are sent, a fourth session calls
   `addOne` and its latency is measured. Served in arrival order it waits
   for two or three rounds of the slow calls; served round-robin across
   owners, it goes as soon as a process is free.

The section between the `queue` markers of bench/RESULTS.md is replaced (or
written to --out; --print-only prints it). No figure is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time

from programs import test_pool_manifest
from report import provenance, write_section

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- queue:begin -->"
END = "<!-- queue:end -->"
PROTOCOL = "2025-06-18"
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of process `pid`, in seconds."""
    with open("/proc/%d/stat" % pid, encoding="utf-8") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # Fields 14 and 15 of stat(5); the split starts at field 3.
    return (int(fields[11]) + int(fields[12])) / TICKS


def queue_flags(binary: str) -> list[str]:
    """The flags that lift the queue's bounds, if this binary has them."""
    text = subprocess.run([binary, "mcp", "--help"], capture_output=True, text=True).stdout
    if "--max-queued" not in text:
        return []
    return ["--max-queued", "0", "--max-queued-per-owner", "0", "--queue-timeout", "0"]


def cpu_per_call(binary: str, manifest: str, k: int) -> tuple[float, float]:
    """Server CPU ms per call and wall seconds for K queued `addOne` calls."""
    proc = subprocess.Popen(
        [binary, "mcp", manifest, "--pool-replicas", "py=1"] + queue_flags(binary),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None

    def send(msg: dict) -> None:
        proc.stdin.write(json.dumps(msg).encode() + b"\n")

    send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
          "params": {"protocolVersion": PROTOCOL, "capabilities": {},
                     "clientInfo": {"name": "queue-bench", "version": "1"}}})
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
          "params": {"name": "addOne", "arguments": {"_1": 1}}})
    proc.stdin.flush()
    for _ in range(2):
        json.loads(proc.stdout.readline())
    lines = b"".join(
        json.dumps({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call",
                    "params": {"name": "addOne", "arguments": {"_1": i}}}).encode() + b"\n"
        for i in range(k))

    def write() -> None:
        proc.stdin.write(lines)
        proc.stdin.flush()

    before = cpu_seconds(proc.pid)
    start = time.monotonic()
    writer = threading.Thread(target=write)
    writer.start()
    for _ in range(k):
        reply = json.loads(proc.stdout.readline())
        i = reply["id"] - 10
        text = reply["result"]["content"][0]["text"]
        if reply["result"].get("isError") or text != str(i + 1):
            raise SystemExit("call %d: unexpected reply %s" % (i, reply))
    wall = time.monotonic() - start
    used = cpu_seconds(proc.pid) - before
    writer.join()
    proc.stdin.close()
    proc.wait(30)
    return used * 1000 / k, wall


class Http:
    """One HTTP/1.1 connection to the server."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.port = port
        self.buf = b""

    def post(self, message: dict, session: str | None) -> tuple[int, dict[str, str], bytes]:
        body = json.dumps(message).encode()
        head = ("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                "Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n"
                % (self.port, len(body)))
        if session:
            head += "Mcp-Session-Id: %s\r\nMCP-Protocol-Version: %s\r\n" % (session, PROTOCOL)
        self.sock.sendall(head.encode() + b"\r\n" + body)
        while b"\r\n\r\n" not in self.buf:
            self.fill()
        raw, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        fields = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            fields[name.strip().lower()] = value.strip()
        length = int(fields.get("content-length", "0"))
        while len(self.buf) < length:
            self.fill()
        data, self.buf = self.buf[:length], self.buf[length:]
        return int(lines[0].split()[1]), fields, data

    def fill(self) -> None:
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise SystemExit("the server closed the connection")
        self.buf += chunk


def new_session(port: int) -> str:
    conn = Http(port)
    _, fields, _ = conn.post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                              "params": {"protocolVersion": PROTOCOL, "capabilities": {},
                                         "clientInfo": {"name": "queue-bench", "version": "1"}}},
                             None)
    session = fields["mcp-session-id"]
    conn.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    return session


def call(port: int, session: str, tool: str, value: int) -> dict:
    conn = Http(port)
    status, _, body = conn.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                 "params": {"name": tool, "arguments": {"_1": value}}}, session)
    if status != 200:
        raise SystemExit("%s: HTTP %d %r" % (tool, status, body[:200]))
    return json.loads(body)


def fairness(binary: str, manifest: str, slow_ms: int) -> float:
    """Seconds the newcomer's `addOne` took with 24 slow calls of three
    other sessions running or queued."""
    proc = subprocess.Popen([binary, "mcp", manifest, "--http-port", "0", "--plain-tool-names",
                             "--pool-replicas", "py=8"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    assert proc.stderr is not None
    port = 0
    for raw in proc.stderr:
        found = re.search(r"over HTTP at http://[^ ]*:(\d+)/mcp", raw.decode(errors="replace"))
        if found:
            port = int(found.group(1))
            break
    threading.Thread(target=lambda: proc.stderr.read(), daemon=True).start()
    try:
        owners = [new_session(port) for _ in range(3)]
        # Warm: the primary is up before the measured run.
        call(port, owners[0], "addOne", 1)
        slow = []
        for n in range(8):
            for session in owners:
                t = threading.Thread(target=call, args=(port, session, "slowEcho", slow_ms))
                t.start()
                slow.append(t)
                time.sleep(0.01)
        newcomer = new_session(port)
        time.sleep(0.3)
        start = time.monotonic()
        reply = call(port, newcomer, "addOne", 41)
        took = time.monotonic() - start
        if reply["result"]["content"][0]["text"] != "42":
            raise SystemExit("addOne: unexpected reply %s" % reply)
        for t in slow:
            t.join()
        return took
    finally:
        proc.terminate()
        proc.wait(30)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="CPU per queued call, and fairness.")
    parser.add_argument("binary")
    parser.add_argument("--sizes", default="500,5000,50000",
                        help="queue lengths K, comma-separated")
    parser.add_argument("--before", help="an older binary to compare with")
    parser.add_argument("--before-sizes", default="500,5000,20000")
    parser.add_argument("--slow-ms", type=int, default=6000)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    parser.add_argument("--print-only", action="store_true")
    args = parser.parse_args(argv)
    binary = os.path.abspath(args.binary)
    tmp = tempfile.TemporaryDirectory()
    manifest = test_pool_manifest(tmp.name)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    runs = [("after", binary, sizes)]
    if args.before:
        before_sizes = [int(s) for s in args.before_sizes.split(",") if s]
        runs.insert(0, ("before", os.path.abspath(args.before), before_sizes))
    cpu: dict[tuple[str, int], float] = {}
    waits: dict[str, float] = {}
    for name, path, ks in runs:
        for k in ks:
            ms, wall = cpu_per_call(path, manifest, k)
            print("%s, K=%d: %.3f ms server CPU per call (%.1f s)" % (name, k, ms, wall), flush=True)
            cpu[(name, k)] = ms
        waits[name] = fairness(path, manifest, args.slow_ms)
        print("%s: newcomer's addOne behind 24 x slowEcho %d: %.2f s"
              % (name, args.slow_ms, waits[name]), flush=True)
    names = [name for name, _, _ in runs]
    cell = lambda name, k: "%.3f ms" % cpu[(name, k)] if (name, k) in cpu else "not run"
    out = [BEGIN, "", "## Queued calls (`bench/queue_bench.py`)", "", provenance(), "",
           "Server CPU time per call (utime + stime over the run / calls), K `addOne` calls "
           "written at once over stdio to one test pool process (the clock ticks are 10 ms, "
           "so 500 calls resolve only 0.02 ms):", "",
           "| queued calls | " + " | ".join(names) + " |",
           "|---:|" + "---:|" * len(names)]
    for k in sorted({k for _, k in cpu}):
        out.append("| %d | " % k + " | ".join(cell(name, k) for name in names) + " |")
    out += ["", "A new session's `addOne` behind 24 `slowEcho %d` calls of three other sessions "
            "(8 each, up to 8 py processes): " % args.slow_ms
            + ", ".join("%s %.2f s" % (name, waits[name]) for name in names) + ".", "", END]
    section = "\n".join(out) + "\n"
    if args.print_only:
        print(section)
    else:
        write_section(args.out, BEGIN, END, section)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
