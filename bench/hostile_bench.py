#!/usr/bin/env python3
"""Hostile HTTP peers against morloc-mcp: memory before authentication, and
connection slots held for nearly nothing.

    python3 bench/hostile_bench.py target/release/morloc-mcp
    python3 bench/hostile_bench.py BIN --holders 1030 --seconds 40 --mode both
    python3 bench/hostile_bench.py BIN --quick          # small, to check the script

Two measurements, each against a fresh server serving
`examples/shapes/manifest.json` with `--auth-token` on `--host` (default
0.0.0.0, a non-loopback bind, so the server's default per-peer connection
cap applies as it would in a deployment; the clients still connect over
loopback):

1. Pre-auth memory. `--bodies` clients (default 8) each send, without a
   token, a POST whose head declares a 63 MiB body and then the body itself
   in 1 MiB writes until the server stops taking it. Reported: each client's
   status, and the server's peak resident memory (VmHWM in
   /proc/<pid>/status) before and after.

2. Held slots. `--holders` connections (default 1030) from 127.0.0.1 try to
   hold the server's slots: `crlf` ones send a blank line every 10 s,
   `slowloris` ones send a request head one byte per second; a holder that
   is refused or closed reconnects at once, as an attacker would. Meanwhile
   a second client from 127.0.0.2 opens a new connection for `GET /health`
   every `--probe-every` seconds. Reported: how many holders the server kept
   open, how many connections it refused, and the probe's status counts and
   latency (median, 99th percentile, worst).

Standard library only; Linux (VmHWM, and 127.0.0.2 being loopback).
"""

from __future__ import annotations

import argparse
import os
import re
import selectors
import socket
import subprocess
import sys
import threading
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH_DIR)
SHAPES = os.path.join(REPO, "examples", "shapes", "manifest.json")
TOKEN = "bench-token"
MIB = 1024 * 1024


def start_server(binary: str, host: str, extra: list[str]) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen(
        [binary, "mcp", SHAPES, "--http-port", "0", "--http-host", host,
         "--auth-token", TOKEN, "--lazy-pools", *extra],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    port_box: list[int] = []
    ready = threading.Event()

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            match = re.search(r"over HTTP at http://[^\s]*:(\d+)/mcp", line)
            if match and not port_box:
                port_box.append(int(match.group(1)))
                ready.set()
            elif "morloc-mcp: HTTP:" in line:
                print("  server: " + line.strip().removeprefix("morloc-mcp: "))
        ready.set()

    threading.Thread(target=drain, daemon=True).start()
    if not ready.wait(30) or not port_box:
        proc.kill()
        raise SystemExit("the server did not start")
    return proc, port_box[0]


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def vm_hwm_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def connect(port: int, source: str, timeout: float = 30.0) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    return sock


def read_status(sock: socket.socket) -> int:
    """The status of the next response, or 0 if the connection ends first."""
    got = b""
    while b"\r\n" not in got:
        try:
            chunk = sock.recv(4096)
        except (ConnectionResetError, socket.timeout):
            return 0
        if not chunk:
            return 0
        got += chunk
    parts = got.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


# ---- 1. pre-auth memory ------------------------------------------------------

def pre_auth(binary: str, host: str, bodies: int, body_mib: int) -> None:
    proc, port = start_server(binary, host, [])
    try:
        time.sleep(0.5)
        before = vm_hwm_mib(proc.pid)
        length = body_mib * MIB
        head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                f"Content-Length: {length}\r\n\r\n").encode()
        statuses: list[int] = [0] * bodies
        sent: list[int] = [0] * bodies

        def client(k: int) -> None:
            sock = connect(port, "127.0.0.1")
            sock.sendall(head)
            chunk = b" " * MIB

            def send_body() -> None:
                try:
                    for _ in range(body_mib):
                        sock.sendall(chunk)
                        sent[k] += len(chunk)
                except OSError:
                    pass

            writer = threading.Thread(target=send_body, daemon=True)
            writer.start()
            statuses[k] = read_status(sock)
            writer.join(30)
            sock.close()

        t0 = time.monotonic()
        threads = [threading.Thread(target=client, args=(k,)) for k in range(bodies)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took = time.monotonic() - t0
        after = vm_hwm_mib(proc.pid)
        print(f"pre-auth memory: {bodies} token-less POSTs declaring {body_mib} MiB each")
        print(f"  statuses: {statuses}  (all answered in {took:.2f} s)")
        print(f"  body bytes the clients got out before the server closed: "
              f"{sum(sent) / MIB:.1f} MiB in all")
        print(f"  server VmHWM: before {before:.1f} MiB, after {after:.1f} MiB")
    finally:
        stop(proc)


# ---- 2. held slots -----------------------------------------------------------

class Holders:
    """Connections from 127.0.0.1 that try to hold slots, reconnecting when
    refused or closed."""

    def __init__(self, port: int, count: int, mode: str):
        self.port = port
        self.count = count
        self.mode = mode
        self.selector = selectors.DefaultSelector()
        self.socks: dict[socket.socket, list] = {}
        self.refused = 0
        self.closed = 0
        self.stop = threading.Event()

    def payload(self, k: int) -> bytes:
        if self.mode == "crlf" or (self.mode == "both" and k % 2 == 0):
            return b"\r\n"
        return b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + b"z" * 10_000

    def open(self, k: int) -> None:
        try:
            sock = connect(self.port, "127.0.0.1", timeout=5)
        except OSError:
            self.refused += 1
            return
        sock.setblocking(False)
        data = self.payload(k)
        # [slot, payload, next byte, next send time]
        self.socks[sock] = [k, data, 0, time.monotonic()]
        self.selector.register(sock, selectors.EVENT_READ)

    def drop(self, sock: socket.socket) -> int:
        k = self.socks.pop(sock)[0]
        self.selector.unregister(sock)
        sock.close()
        return k

    def run(self) -> None:
        for k in range(self.count):
            self.open(k)
        while not self.stop.is_set():
            now = time.monotonic()
            for sock, state in list(self.socks.items()):
                k, data, pos, due = state
                if now < due:
                    continue
                crlf = data == b"\r\n"
                piece = data if crlf else data[pos % len(data):pos % len(data) + 1]
                try:
                    sock.send(piece)
                except OSError:
                    continue
                state[2] = pos + 1
                state[3] = now + (10.0 if crlf else 1.0)
            for key, _ in self.selector.select(timeout=0.05):
                sock = key.fileobj
                try:
                    data = sock.recv(4096)
                except OSError:
                    data = b""
                if data.startswith(b"HTTP/1.1 503"):
                    self.refused += 1
                else:
                    self.closed += 1
                if not data or data.startswith(b"HTTP/"):
                    self.open(self.drop(sock))
        for sock in list(self.socks):
            self.drop(sock)


def held_slots(binary: str, host: str, holders: int, mode: str, seconds: float,
               probe_every: float) -> None:
    proc, port = start_server(binary, host, [])
    try:
        attack = Holders(port, holders, mode)
        attacker = threading.Thread(target=attack.run, daemon=True)
        attacker.start()
        time.sleep(2.0)
        held_at_start = len(attack.socks)
        latencies: list[float] = []
        statuses: dict[int, int] = {}
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            t0 = time.monotonic()
            try:
                sock = connect(port, "127.0.0.2", timeout=10)
                sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                status = read_status(sock)
                sock.close()
            except OSError:
                status = 0
            latencies.append(time.monotonic() - t0)
            statuses[status] = statuses.get(status, 0) + 1
            time.sleep(probe_every)
        attack.stop.set()
        attacker.join(10)
        latencies.sort()

        def pct(p: float) -> float:
            return latencies[min(len(latencies) - 1, round(p / 100 * (len(latencies) - 1)))] * 1000

        print(f"held slots: {holders} {mode} connections from 127.0.0.1 for {seconds:.0f} s")
        print(f"  holders open after 2 s: {held_at_start}; refused by the server: "
              f"{attack.refused}; closed by the server: {attack.closed}")
        print(f"  /health from 127.0.0.2 ({len(latencies)} probes, new connection each): "
              f"statuses {dict(sorted(statuses.items()))}")
        slow = sum(1 for x in latencies if x >= 1.0)
        print(f"  latency p50 {pct(50):.2f} ms, p99 {pct(99):.2f} ms, worst {latencies[-1] * 1000:.2f} ms"
              f" ({slow} of {len(latencies)} at 1 s or more)")
    finally:
        stop(proc)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary", nargs="?", default=os.path.join(REPO, "target/release/morloc-mcp"))
    parser.add_argument("--host", default="0.0.0.0", help="the server's bind address")
    parser.add_argument("--bodies", type=int, default=8)
    parser.add_argument("--body-mib", type=int, default=63)
    parser.add_argument("--holders", type=int, default=1030)
    parser.add_argument("--mode", choices=["crlf", "slowloris", "both"], default="both")
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--probe-every", type=float, default=0.05)
    parser.add_argument("--quick", action="store_true", help="small sizes, to check the script")
    args = parser.parse_args()
    if args.quick:
        args.bodies, args.body_mib, args.holders, args.seconds = 2, 4, 20, 3.0
    pre_auth(args.binary, args.host, args.bodies, args.body_mib)
    held_slots(args.binary, args.host, args.holders, args.mode, args.seconds, args.probe_every)
    return 0


if __name__ == "__main__":
    sys.exit(main())
