"""Calls per second of a CPU-bound pool function: one instance served
directly, and three instances behind nginx started from deploy/nginx.conf
(its addresses replaced by free loopback ports).

The function is the test pool's `spin` (TESTPOOL_PROGRAM=bench): N steps of
integer work in Python, a few milliseconds per call. The clients send modern
(2026-07-28) tools/call requests on keep-alive connections, from 2 processes
of 4 threads each, for a fixed time after a warm-up; every answer is checked.
Each setup runs with the default pool replicas and with --pool-replicas
py=1 (one Python process per instance, the reference's behaviour).

Usage: python3 bench/scale_bench.py target/release/morloc-mcp [--seconds S]
Prints a Markdown table; skips with one line when nginx is not installed.
"""

import argparse
import http.client
import json
import multiprocessing
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from programs import spin_answer, spin_manifest

ROOT = Path(__file__).resolve().parents[1]
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}}
SPIN = 200_000
PROCESSES, THREADS = 2, 4


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def client(port: int, until: float, warm_until: float, answer: str, out) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "spin__spin", "arguments": {"_1": SPIN}, "_meta": META}})
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "spin__spin"}
    done = errors = 0
    while time.time() < until:
        try:
            conn.request("POST", "/mcp", body, headers)
            resp = conn.getresponse()
            raw = resp.read()
            ok = resp.status == 200 and json.loads(raw)["result"]["content"][0]["text"] == answer
        except (OSError, http.client.HTTPException, KeyError, ValueError):
            ok = False
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        if time.time() >= warm_until:
            done += ok
            errors += not ok
    out.append((done, errors))


def process(port: int, until: float, warm_until: float, answer: str, queue) -> None:
    out: list = []
    threads = [threading.Thread(target=client, args=(port, until, warm_until, answer, out))
               for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    queue.put((sum(d for d, _ in out), sum(e for _, e in out)))


def drive(port: int, seconds: float, answer: str) -> tuple[float, int]:
    warm_until = time.time() + 2.0
    until = warm_until + seconds
    queue = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=process, args=(port, until, warm_until, answer, queue))
             for _ in range(PROCESSES)]
    for p in procs:
        p.start()
    totals = [queue.get(timeout=seconds + 60) for _ in procs]
    for p in procs:
        p.join()
    return sum(d for d, _ in totals) / seconds, sum(e for _, e in totals)


def wait_health(port: int) -> None:
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/health")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"port {port} never became healthy")


def stop(procs: list) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def instances(binary: str, manifest: str, env: dict[str, str], n: int,
              extra: list[str]) -> tuple[list, list[int]]:
    ports = [free_port() for _ in range(n)]
    procs = [subprocess.Popen([binary, "mcp", str(manifest), "--http-port", str(port),
                               "--instance-id", name, *extra],
                              env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
             for name, port in zip("abc", ports)]
    for port in ports:
        wait_health(port)
    return procs, ports


def nginx(path: str, ports: list[int], tmp: Path) -> tuple[subprocess.Popen, int]:
    text = (ROOT / "deploy/nginx.conf").read_text()
    for default, port in zip((8101, 8102, 8103), ports):
        text = text.replace(f"127.0.0.1:{default}", f"127.0.0.1:{port}")
    lb_port = free_port()
    text = text.replace("127.0.0.1:8100", f"127.0.0.1:{lb_port}")
    conf = tmp / "nginx.conf"
    conf.write_text(text)
    proc = subprocess.Popen([path, "-p", str(tmp), "-e", "stderr", "-c", str(conf)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=open(tmp / "nginx.log", "wb"))
    wait_health(lb_port)
    return proc, lb_port


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args()
    path = shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None)
    if path is None:
        print("scale_bench: SKIPPED: nginx is not installed")
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="morloc-scale-bench-"))
    manifest, env = spin_manifest(str(tmp))
    answer = spin_answer(SPIN)
    rows = []
    try:
        for replicas, extra in (("default", []), ("py=1", ["--pool-replicas", "py=1"])):
            procs, ports = instances(args.binary, manifest, env, 1, extra)
            try:
                rate, errors = drive(ports[0], args.seconds, answer)
            finally:
                stop(procs)
            rows.append(("1 instance, direct", replicas, rate, errors))
            procs, ports = instances(args.binary, manifest, env, 3, extra)
            lb = None
            try:
                lb, lb_port = nginx(path, ports, tmp)
                rate, errors = drive(lb_port, args.seconds, answer)
            finally:
                stop(([lb] if lb else []) + procs)
            rows.append(("3 instances behind nginx", replicas, rate, errors))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"CPU-bound `spin` ({SPIN} steps of Python integer work per call), modern tools/call, "
          f"{PROCESSES * THREADS} clients ({PROCESSES} processes x {THREADS} threads, on the same machine), "
          f"{args.seconds:.0f} s after a 2 s warm-up; {os.cpu_count()} CPUs.\n")
    print("| setup | pool replicas | calls/s | errors |")
    print("|---|---|---|---|")
    for setup, replicas, rate, errors in rows:
        print(f"| {setup} | {replicas} | {rate:,.0f} | {errors} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
