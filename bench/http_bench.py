#!/usr/bin/env python3
"""HTTP throughput and latency of morloc-mcp under concurrent keep-alive clients.

    python3 bench/http_bench.py target/release/morloc-mcp
    python3 bench/http_bench.py BIN --clients 1,16,64 --seconds 10 --tool addOne
    python3 bench/http_bench.py BIN --quick            # 2 s per level, to check the script

The server serves `examples/shapes/manifest.json` with `--http-port 0` (its
pool is `tests/pool/testpool.py`, started at start-up). For each client count
N, N clients each open one keep-alive connection, initialize their own
session, make a few untimed warm-up calls, then call the tool as fast as they
can for the given time, one request in flight per client. Every reply is
checked (status 200, the request's id, `"isError":false`, the expected text).

Reported per N: calls per second (all clients together, completed calls over
the measured wall time), and the median and 99th percentile of the time from
writing a request to having read its whole response.

The clients are threads spread over several worker processes (at most one per
CPU) so the Python interpreter lock does not serialise them; on a small
machine the clients, the server and the pool still share the same cores, and
the figures say as much about that as about the server. `pureAnswer` (a pure
command evaluated inside the server) shows the server's own ceiling;
`addOne` (the default) includes a Unix-socket round trip to the Python pool,
which starts a thread per call. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import re
import socket
import subprocess
import sys
import threading
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH_DIR)
SHAPES = os.path.join(REPO, "examples", "shapes", "manifest.json")
PROTOCOL = "2025-06-18"

# The tools this script knows how to call: arguments and the expected text.
TOOLS = {
    "addOne": ({"_1": 41}, "42"),
    "pureAnswer": ({}, "42"),
    "slowEcho": ({"_1": 10}, "10"),
}


class BenchError(Exception):
    pass


class Client:
    """One keep-alive connection with its own MCP session."""

    def __init__(self, host: str, port: int):
        self.sock = socket.create_connection((host, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.host = f"{host}:{port}"
        self.buf = b""
        self.session: str | None = None

    def request_bytes(self, body: bytes) -> bytes:
        head = (f"POST /mcp HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
                f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n")
        if self.session:
            head += f"Mcp-Session-Id: {self.session}\r\n"
        return (head + "\r\n").encode() + body

    def roundtrip(self, request: bytes) -> tuple[int, dict[str, str], bytes]:
        self.sock.sendall(request)
        while b"\r\n\r\n" not in self.buf:
            self.fill()
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        fields = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            fields[name.strip().lower()] = value.strip()
        length = int(fields.get("content-length", "0"))
        while len(self.buf) < length:
            self.fill()
        body, self.buf = self.buf[:length], self.buf[length:]
        return status, fields, body

    def post(self, message: dict) -> tuple[int, dict[str, str], bytes]:
        return self.roundtrip(self.request_bytes(json.dumps(message).encode()))

    def fill(self) -> None:
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise BenchError("the server closed the connection")
        self.buf += chunk

    def initialize(self) -> None:
        status, fields, body = self.post({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": PROTOCOL, "capabilities": {},
                       "clientInfo": {"name": "http_bench", "version": "1"}}})
        if status != 200 or "mcp-session-id" not in fields:
            raise BenchError(f"initialize: status {status}, body {body[:200]!r}")
        self.session = fields["mcp-session-id"]
        status, _, _ = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        if status != 202:
            raise BenchError(f"notifications/initialized: status {status}")


def start_server(binary: str, manifest: str,
                 extra: list[str] | tuple[str, ...] = ()) -> tuple[subprocess.Popen, str, int]:
    proc = subprocess.Popen([binary, "mcp", manifest, "--http-port", "0", *extra],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    assert proc.stderr is not None
    found: list[tuple[str, int]] = []
    lines: list[str] = []
    ready = threading.Event()

    def drain() -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            line = raw.decode(errors="replace").rstrip("\n")
            lines.append(line)
            match = re.search(r"over HTTP at http://(\[[^\]]+\]|[^/:\s]+):(\d+)/mcp", line)
            if match and not found:
                found.append((match.group(1).strip("[]"), int(match.group(2))))
                ready.set()
        ready.set()

    threading.Thread(target=drain, daemon=True).start()
    ready.wait(20)
    if not found:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        raise BenchError(f"no HTTP banner; stderr: {' | '.join(lines[-5:])}")
    return proc, found[0][0], found[0][1]


def served_name(host: str, port: int, tool: str) -> str:
    """The tool's name over HTTP (`main__addOne` unless served plain)."""
    client = Client(host, port)
    client.initialize()
    status, _, body = client.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    client.sock.close()
    if status != 200:
        raise BenchError(f"tools/list: status {status}")
    names = [t["name"] for t in json.loads(body)["result"]["tools"]]
    for name in names:
        if name == tool or name.endswith("__" + tool):
            return name
    raise BenchError(f"no tool {tool} in {names}")


def client_thread(host: str, port: int, name: str, arguments: dict, expected: str, warmup: int,
                  warm: threading.Barrier, start: mp.Event, stop_at: mp.Value, out: list,
                  errors: list) -> None:
    try:
        client = Client(host, port)
        client.initialize()
        checks = []
        requests = []
        # Requests are prepared before the timed loop; ids cycle so the
        # expected bytes can be prepared too.
        for i in range(64):
            body = json.dumps({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                               "params": {"name": name, "arguments": arguments}}).encode()
            requests.append(client.request_bytes(body))
            checks.append((f'"id":{i + 1},'.encode(), f'"text":"{expected}"'.encode()))
        for i in range(warmup):
            status, _, body = client.roundtrip(requests[i % 64])
            if status != 200 or b'"isError":false' not in body:
                raise BenchError(f"warm-up call: status {status}, body {body[:200]!r}")
        warm.wait()
        start.wait()
        deadline = stop_at.value
        clock = time.perf_counter
        i = 0
        while True:
            t0 = clock()
            if t0 >= deadline:
                break
            status, _, body = client.roundtrip(requests[i % 64])
            t1 = clock()
            id_bytes, text = checks[i % 64]
            if status != 200 or id_bytes not in body or text not in body or b'"isError":false' not in body:
                raise BenchError(f"bad reply: status {status}, body {body[:200]!r}")
            out.append(t1 - t0)
            i += 1
        client.sock.close()
    except Exception as e:  # reported by the parent
        errors.append(f"{type(e).__name__}: {e}")
        warm.abort()


def worker(host: str, port: int, name: str, tool: str, threads: int, warmup: int,
           ready: mp.Barrier, start: mp.Event, stop_at: mp.Value, results: mp.Queue) -> None:
    arguments, expected = TOOLS[tool]
    outs: list[list[float]] = [[] for _ in range(threads)]
    errors: list[str] = []
    warm = threading.Barrier(threads + 1)
    ts = [threading.Thread(target=client_thread,
                           args=(host, port, name, arguments, expected, warmup, warm, start, stop_at,
                                 outs[k], errors))
          for k in range(threads)]
    for t in ts:
        t.start()
    try:
        warm.wait()
    except threading.BrokenBarrierError:
        pass  # a client failed; the parent reports it
    ready.wait()
    for t in ts:
        t.join()
    latencies = [x for out in outs for x in out]
    results.put((latencies, errors))


def percentile(sorted_values: list[float], p: float) -> float:
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, round(p / 100 * (len(sorted_values) - 1))))
    return sorted_values[k]


def run_level(host: str, port: int, name: str, tool: str, clients: int, seconds: float,
              warmup: int, probe=None) -> dict:
    """Runs `clients` for `seconds` after their warm-up. With `probe` (a
    function giving a number, e.g. the server's CPU seconds), the result's
    `probed` is how much it grew over the timed window."""
    procs = max(1, min(clients, os.cpu_count() or 1))
    per = [clients // procs + (1 if k < clients % procs else 0) for k in range(procs)]
    ctx = mp.get_context("fork")
    ready = ctx.Barrier(procs + 1)
    start = ctx.Event()
    stop_at = ctx.Value("d", 0.0)
    results = ctx.Queue()
    workers = [ctx.Process(target=worker,
                           args=(host, port, name, tool, n, warmup, ready, start, stop_at, results))
               for n in per]
    for w in workers:
        w.start()
    # The barrier opens once every client has connected, initialized and
    # warmed up, so the timed window starts with everyone in it.
    ready.wait()
    first = probe() if probe else 0.0
    began = time.perf_counter()
    stop_at.value = began + seconds
    start.set()
    latencies: list[float] = []
    errors: list[str] = []
    for _ in workers:
        lat, err = results.get()
        latencies.extend(lat)
        errors.extend(err)
    probed = probe() - first if probe else 0.0
    for w in workers:
        w.join()
    if errors:
        raise BenchError(f"{len(errors)} client(s) failed, first: {errors[0]}")
    latencies.sort()
    return {
        "clients": clients,
        "calls": len(latencies),
        "rate": len(latencies) / seconds,
        "p50": percentile(latencies, 50) * 1000,
        "p99": percentile(latencies, 99) * 1000,
        "probed": probed,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary")
    parser.add_argument("--manifest", default=SHAPES)
    parser.add_argument("--tool", default="addOne", choices=sorted(TOOLS))
    parser.add_argument("--clients", default="1,16,64",
                        help="comma-separated client counts (default 1,16,64)")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured time per level")
    parser.add_argument("--warmup", type=int, default=50, help="untimed calls per client")
    parser.add_argument("--quick", action="store_true", help="2 s per level, 5 warm-up calls")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.warmup = 2.0, 5
    levels = [int(c) for c in args.clients.split(",") if c.strip()]

    proc, host, port = start_server(args.binary, args.manifest)
    try:
        name = served_name(host, port, args.tool)
        load = os.getloadavg()
        print(f"# HTTP keep-alive benchmark: `{name}`, {args.seconds:g} s per level"
              + (" (quick: not worth publishing)" if args.quick else ""))
        print()
        print(f"- machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}")
        print(f"- binary: `{args.binary}`; load average at start {load[0]:.2f}")
        print()
        print("| clients | calls/s | p50 (ms) | p99 (ms) | calls |")
        print("|--:|--:|--:|--:|--:|")
        for clients in levels:
            r = run_level(host, port, name, args.tool, clients, args.seconds, args.warmup)
            print(f"| {r['clients']} | {r['rate']:.0f} | {r['p50']:.3f} | {r['p99']:.3f} | {r['calls']} |",
                  flush=True)
        print()
        print(f"- load average at the end {os.getloadavg()[0]:.2f}")
    except BenchError as e:
        print(f"http_bench: {e}", file=sys.stderr)
        return 1
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
