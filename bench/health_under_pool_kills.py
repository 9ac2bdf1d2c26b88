#!/usr/bin/env python3
"""How long `GET /health` waits while the pool is killed and restarted under load.

    python3 bench/health_under_pool_kills.py target/release/morloc-mcp [--before OLD]
        [--clients 4] [--seconds 60] [--period 13] [--trials 2] [--out FILE]

Serves the test pool's shapes program over HTTP. `--clients` clients
(legacy sessions, each on its own connection) call `slowEcho 5` (5 ms in
the pool) one after another (the server adds replicas for them), while a
killer sends SIGKILL to the pool's primary process (the one `/health`
judges) every `--period` seconds (the server notices on SIGCHLD, fails the
call that ran there and starts the process again), and a prober opens a new
connection every 20 ms and times `GET /health` from connect to the whole
answer. Any answer counts: `200` (ready) or `503` (the pool restarting);
what is measured is how long the one thread keeps a health check waiting
while a pool dies and starts. The period stays above the restart breaker's
(5 starts within 60 s), so every kill is followed by a restart.

Reported per build: the probes, how many were `503`, their p50, p99 and
worst, the pool processes killed, the calls answered with a result and with
an error, and the load average at the start and the end. With `--before`,
the older binary and this one take turns, `--trials` runs each. The section
between the `health-kills` markers of bench/RESULTS.md is replaced (or
written to --out). No figure is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import statistics
import sys
import tempfile
import threading
import time

from args_memory import manifest
from health_under_bodies import open_session, post, start
from report import provenance, write_section

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- health-kills:begin -->"
END = "<!-- health-kills:end -->"


def load() -> str:
    return " ".join(open("/proc/loadavg", encoding="ascii").read().split()[:3])


def primaries(pid: int) -> list[int]:
    """The server's primary pool processes: children whose socket (their
    first argument) is not a replica's (`pipe-py.r1`)."""
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as f:
                kids = [int(p) for p in f.read().split()]
        except OSError:
            continue
        for kid in kids:
            try:
                with open(f"/proc/{kid}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if len(argv) > 2 and not re.search(rb"\.r\d+$", argv[2]):
                out.append(kid)
    return out


def client(port: int, stop: threading.Event, counts: dict, errors: list[str]) -> None:
    try:
        sock, session = open_session(port, "health-kills", 120)
        call = (b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slowEcho",'
                b'"arguments":{"_1":5}}}')
        while not stop.is_set():
            code, _, reply = post(sock, port, call, session)
            message = json.loads(reply)
            if code != 200 or "result" not in message and "error" not in message:
                raise RuntimeError(f"call: {code} {reply[:200]!r}")
            failed = "error" in message or message["result"].get("isError")
            counts["failed" if failed else "ok"] += 1
        sock.close()
    except Exception as e:  # noqa: BLE001 - reported by the caller
        errors.append(str(e))


def measure(binary: str, manifest_path: str, clients: int, seconds: float, period: float) -> dict:
    proc, port = start(binary, manifest_path)
    load_start = load()
    try:
        probe_code(port)
        stop = threading.Event()
        errors: list[str] = []
        counts = {"ok": 0, "failed": 0}
        threads = [threading.Thread(target=client, args=(port, stop, counts, errors))
                   for _ in range(clients)]
        for t in threads:
            t.start()
        kills = 0

        def killer() -> None:
            nonlocal kills
            while not stop.wait(period):
                for child in primaries(proc.pid):
                    try:
                        os.kill(child, signal.SIGKILL)
                        kills += 1
                    except ProcessLookupError:
                        pass

        killing = threading.Thread(target=killer)
        killing.start()
        waits = []
        unready = 0
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            took, code = probe_code(port)
            waits.append(took)
            unready += code == 503
            time.sleep(0.02)
        stop.set()
        killing.join()
        for t in threads:
            t.join()
        if errors:
            raise RuntimeError("; ".join(errors))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    waits.sort()
    return {"probes": len(waits), "unready": unready,
            "p50": statistics.median(waits) * 1000,
            "p99": waits[min(len(waits) - 1, int(len(waits) * 0.99))] * 1000,
            "worst": waits[-1] * 1000, "kills": kills, "ok": counts["ok"],
            "failed": counts["failed"], "load": f"{load_start} → {load()}"}


def probe_code(port: int) -> tuple[float, int]:
    """`probe`, keeping the status."""
    began = time.perf_counter()
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    sock.close()
    code = int(data.split(b" ", 2)[1])
    if code not in (200, 503):
        raise RuntimeError(f"/health answered {code}")
    return time.perf_counter() - began, code


def row(name: str, r: dict) -> str:
    return (f"| {name} | {r['probes']} | {r['unready']} | {r['p50']:.1f} ms | {r['p99']:.1f} ms"
            f" | {r['worst']:.1f} ms | {r['kills']} | {r['ok']} / {r['failed']} | {r['load']} |")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("binary")
    parser.add_argument("--before", help="an older binary to measure the same way, in turns")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--period", type=float, default=13.0)
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--label", default="this build", help="the name of BINARY's rows")
    parser.add_argument("--before-label", default="before", help="the name of OLD's rows")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    args = parser.parse_args(argv)
    builds = [(args.label, args.binary)]
    if args.before:
        builds.insert(0, (args.before_label, args.before))
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        path = manifest(directory)
        for _ in range(args.trials):
            for name, binary in builds:
                r = measure(binary, path, args.clients, args.seconds, args.period)
                rows.append(row(name, r))
                print(rows[-1], flush=True)
    lines = [BEGIN, "", "## `/health` while pools are killed under load (`bench/health_under_pool_kills.py`)",
             "", f"{provenance()} {args.clients} clients call `slowEcho 5` back to back for "
             f"{args.seconds:.0f} s while the pool's primary process gets SIGKILL every "
             f"{args.period:g} s (and is started again); a prober times `GET /health` on a new connection every 20 ms. "
             "Builds take turns.", "",
             "| build | probes | 503 | p50 | p99 | worst | pools killed | calls ok / failed | load (start → end) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    lines += rows
    lines += ["", END]
    write_section(args.out, BEGIN, END, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
