#!/usr/bin/env python3
"""How long `GET /health` waits while other clients send big argument bodies.

    python3 bench/health_under_bodies.py target/release/morloc-mcp [--before OLD]
        [--senders 4] [--rounds 3] [--ints 6000000] [--out FILE]

Serves the test pool's shapes program with the `sinkInts` command of
bench/args_memory.py (`[Int]`, a mid the pool has no function for, so the pool
reads the whole CALL packet and answers at once: what is measured is the
server's side). Over HTTP, `--senders` clients (legacy sessions, each on its
own connection) each POST `--rounds` `tools/call`s of `--ints` integers (6 M:
a 12 MB body) one after another, while a prober opens a new connection every
20 ms and times `GET /health` from connect to the whole answer. Reports the
probes' p50, p99 and worst while the senders run, and the server's peak
memory (VmHWM). With --before, the same with an older binary.

The one thread checks each big body and encodes its call a bounded slice
per turn, so a probe waits for at most a slice and the few steps still done
in one go per call; the figures show how long.
The section between the `health-bodies` markers of bench/RESULTS.md is
replaced (or written to --out). No figure is asserted.
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
import threading
import time

from args_memory import manifest, status
from report import write_section

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- health-bodies:begin -->"
END = "<!-- health-bodies:end -->"


def start(binary: str, manifest_path: str) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([binary, "mcp", manifest_path, "--http-port", "0",
                             "--plain-tool-names"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    port: list[int] = []
    ready = threading.Event()

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            found = re.search(r"over HTTP at http://[^\s]*:(\d+)/mcp", line)
            if found and not port:
                port.append(int(found.group(1)))
                ready.set()
        ready.set()

    threading.Thread(target=drain, daemon=True).start()
    if not ready.wait(30) or not port:
        proc.kill()
        raise SystemExit("the server did not start")
    return proc, port[0]


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One response with a Content-Length body, read into one growing
    buffer (64 MB bodies)."""
    data = bytearray()
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise RuntimeError(f"closed before a head: {bytes(data[:200])!r}")
        data += chunk
    end = data.index(b"\r\n\r\n")
    lines = data[:end].decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = data[end + 4:]
    while len(body) < length:
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise RuntimeError("closed mid-body")
        body += chunk
    return int(lines[0].split()[1]), headers, bytes(body[:length])


def post(sock: socket.socket, port: int, body: bytes, session: str | None) -> tuple[int, dict, bytes]:
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n")
    if session:
        head += f"Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-06-18\r\n"
    sock.sendall(head.encode() + b"\r\n" + body)
    return read_response(sock)


def open_session(port: int, name: str, timeout: float) -> tuple[socket.socket, str]:
    """A connection with an initialized 2025-06-18 session on it."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": name, "version": "1"}}}).encode()
    code, headers, _ = post(sock, port, init, None)
    session = headers.get("mcp-session-id")
    if code != 200 or not session:
        raise RuntimeError(f"initialize: {code}")
    post(sock, port, b'{"jsonrpc":"2.0","method":"notifications/initialized"}', session)
    return sock, session


def sender(port: int, body: bytes, rounds: int, errors: list[str]) -> None:
    try:
        sock, session = open_session(port, "health-bodies", 120)
        for _ in range(rounds):
            code, _, reply = post(sock, port, body, session)
            result = json.loads(reply).get("result", {})
            if code != 200 or not result.get("isError"):
                raise RuntimeError(f"call: {code} {reply[:200]!r}")
        sock.close()
    except Exception as e:  # noqa: BLE001 - reported by the caller
        errors.append(str(e))


def probe(port: int, source: str = "127.0.0.1") -> float:
    """`GET /health` on a new connection from address `source`, timed from
    connect to the whole answer."""
    start = time.perf_counter()
    sock = socket.create_connection(("127.0.0.1", port), timeout=60, source_address=(source, 0))
    sock.sendall(f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
    code, _, _ = read_response(sock)
    sock.close()
    if code not in (200, 503):
        raise RuntimeError(f"/health answered {code}")
    return time.perf_counter() - start


def measure(binary: str, manifest_path: str, senders: int, rounds: int, ints: int) -> dict:
    body = (b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sinkInts",'
            b'"arguments":{"_1":[' + ",".join(["1"] * ints).encode() + b"]}}}")
    proc, port = start(binary, manifest_path)
    try:
        probe(port)
        errors: list[str] = []
        threads = [threading.Thread(target=sender, args=(port, body, rounds, errors))
                   for _ in range(senders)]
        began = time.perf_counter()
        for t in threads:
            t.start()
        waits = []
        while any(t.is_alive() for t in threads):
            waits.append(probe(port))
            time.sleep(0.02)
        took = time.perf_counter() - began
        for t in threads:
            t.join()
        if errors:
            raise RuntimeError("; ".join(errors))
        peak = status(proc.pid, "VmHWM")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    waits.sort()
    return {"body": len(body), "probes": len(waits),
            "p50": statistics.median(waits) * 1000,
            "p99": waits[min(len(waits) - 1, int(len(waits) * 0.99))] * 1000,
            "worst": waits[-1] * 1000, "took": took, "peak": peak / (1 << 20)}


def row(name: str, r: dict) -> str:
    return (f"| {name} | {r['probes']} | {r['p50']:.1f} ms | {r['p99']:.1f} ms | {r['worst']:.1f} ms"
            f" | {r['took']:.1f} s | {r['peak']:.0f} MiB |")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("binary")
    parser.add_argument("--before", help="an older binary to measure the same way")
    parser.add_argument("--senders", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ints", type=int, default=6_000_000)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        path = manifest(directory)
        results = []
        if args.before:
            results.append(("before", measure(args.before, path, args.senders, args.rounds, args.ints)))
            print(row(*results[-1]))
        results.append(("this build", measure(args.binary, path, args.senders, args.rounds, args.ints)))
        print(row(*results[-1]))
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    load = " ".join(open("/proc/loadavg", encoding="ascii").read().split()[:3])
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [BEGIN, "", "## `/health` while big argument bodies arrive (`bench/health_under_bodies.py`)", "",
             f"{stamp}, commit {commit}, {os.cpu_count()} CPUs, load average at the end {load}. "
             f"{args.senders} clients each POST {args.rounds} `tools/call`s of {args.ints:,} integers "
             f"({results[-1][1]['body'] / 1e6:.1f} MB bodies) one after another; a prober times `GET /health` "
             "on a new connection every 20 ms meanwhile.", "",
             "| build | probes | p50 | p99 | worst | senders' time | server peak |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    lines += [row(name, r) for name, r in results]
    lines += ["", END]
    write_section(args.out, BEGIN, END, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
