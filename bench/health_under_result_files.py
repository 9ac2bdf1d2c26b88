#!/usr/bin/env python3
"""How long `GET /health` waits while a large FILE result is read, and while
a pure command `@load`s a large file.

    python3 bench/health_under_result_files.py target/release/morloc-mcp
        [--before OLD] [--rounds 6] [--chars 67108864] [--out FILE]

Serves the test pool's shapes program with shared memory off (`no_shm`), so
the pool writes a large result to a msgpack file and replies with its path
(FILE + MSGPACK). One client on one connection calls `bigText --chars`
(`--chars` + 5 bytes of file) `--rounds` times, one after another, while a
prober opens a new connection (from 127.0.0.2: the per-address output
budget would hold it behind the caller's unread answer otherwise) every 20
ms and times `GET /health` from connect to the whole answer. With `--before`, the same with an older binary
first. Then, with this build only, the client calls the pure command
`loadHash` instead (`@hash (@load path)`, added to the manifest) on a text
file of the same size, and a last line gives what one `read` of that whole
file costs here (Python's `readinto`, one system call: the page-cache copy
that dominates a read of a regular file, the server's too).

Reports the probes' p50, p99 and worst while the client runs, and the
client's time. The section between the `health-files` markers of
bench/RESULTS.md is replaced (or written to --out). No figure is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from health_under_bodies import open_session, post, probe, start
from report import write_section

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTPOOL = os.path.join(ROOT, "tests", "pool", "testpool.py")
BEGIN = "<!-- health-files:begin -->"
END = "<!-- health-files:end -->"


# `/health` is probed from another address than the callers': the
# per-address output budget holds an address's connections while its big
# answer is unread.
PROBE_FROM = "127.0.0.2"


def manifest(directory: str) -> str:
    """The shapes manifest without shared memory, plus `loadHash`."""
    with open(os.path.join(ROOT, "tests", "data", "shapes", "manifest.json"), encoding="utf-8") as f:
        data = json.load(f)
    data["no_shm"] = True
    data["pools"][0]["exec"] = ["python3", TESTPOOL]
    pure = next(c for c in data["commands"] if c["name"] == "pureAnswer")
    arg = next(c for c in data["commands"] if c["name"] == "mustFail")["args"][0]
    command = json.loads(json.dumps(pure))
    command.update(name="loadHash", desc=["The hash of a text file's content (@load, in-process)"])
    command["args"] = [dict(arg, schema="s", type="Str")]
    command["return"].update(schema="s", type="Str")
    command["expr"] = {"tag": "lambda", "vars": ["p"], "body": {
        "tag": "hash", "schema": "s", "child": {
            "tag": "load", "schema": "s", "child": {"tag": "bound", "schema": "s", "var": "p"}}}}
    data["commands"].append(command)
    path = os.path.join(directory, "manifest.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)
    return path


def caller(port: int, body: bytes, rounds: int, check, errors: list[str]) -> None:
    try:
        sock, session = open_session(port, "health-files", 300)
        for _ in range(rounds):
            code, _, reply = post(sock, port, body, session)
            if code != 200 or not check(reply):
                raise RuntimeError(f"call: {code} {reply[:300]!r}")
        sock.close()
    except Exception as e:  # noqa: BLE001 - reported by the caller
        errors.append(str(e))


def measure(binary: str, manifest_path: str, rounds: int, body: bytes, check) -> dict:
    proc, port = start(binary, manifest_path)
    try:
        probe(port, PROBE_FROM)
        # The pool warm first, so its start is not measured.
        warm: list[str] = []
        caller(port, b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"addOne",'
               b'"arguments":{"_1":1}}}', 1, lambda r: b'"2"' in r, warm)
        if warm:
            raise RuntimeError("; ".join(warm))
        errors: list[str] = []
        thread = threading.Thread(target=caller, args=(port, body, rounds, check, errors))
        began = time.perf_counter()
        thread.start()
        waits = []
        while thread.is_alive():
            waits.append(probe(port, PROBE_FROM))
            time.sleep(0.02)
        took = time.perf_counter() - began
        thread.join()
        if errors:
            raise RuntimeError("; ".join(errors))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    waits.sort()
    return {"probes": len(waits), "p50": statistics.median(waits) * 1000,
            "p99": waits[min(len(waits) - 1, int(len(waits) * 0.99))] * 1000,
            "worst": waits[-1] * 1000, "took": took}


def row(name: str, r: dict) -> str:
    return (f"| {name} | {r['probes']} | {r['p50']:.1f} ms | {r['p99']:.1f} ms | {r['worst']:.1f} ms"
            f" | {r['took']:.1f} s |")


def read_cost(path: str, size: int, times: int = 5) -> float:
    """The fastest of `times` whole reads of `path` in one `readinto`, in ms."""
    buf = bytearray(size + 1)
    best = float("inf")
    for _ in range(times):
        fd = os.open(path, os.O_RDONLY)
        began = time.perf_counter()
        os.readv(fd, [buf])
        best = min(best, time.perf_counter() - began)
        os.close(fd)
    return best * 1000


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("binary")
    parser.add_argument("--before", help="an older binary to measure the same way")
    parser.add_argument("--before-label", default="before", help="what the older binary is (its commit)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--chars", type=int, default=64 << 20)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    args = parser.parse_args(argv)
    big = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "bigText", "arguments": {"_1": args.chars}}}).encode()
    exact = ('"text":"\\"' + "x" * 64).encode()

    def big_ok(reply: bytes) -> bool:
        return len(reply) > args.chars and exact in reply[:200]

    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    results = []
    with tempfile.TemporaryDirectory() as directory:
        path = manifest(directory)
        if args.before:
            results.append((f"{args.before_label}: FILE result read whole", measure(args.before, path, args.rounds, big, big_ok)))
            print(row(*results[-1]), flush=True)
        results.append((f"this build ({commit}): FILE result in slices", measure(args.binary, path, args.rounds, big, big_ok)))
        print(row(*results[-1]), flush=True)
        text = os.path.join(directory, "big.txt")
        with open(text, "wb") as f:
            f.write(b"y" * args.chars)
        load = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "loadHash", "arguments": {"_1": text}}}).encode()
        results.append((f"this build ({commit}): `@load` of a pure command", measure(
            args.binary, path, args.rounds, load, lambda r: b'"isError":false' in r)))
        print(row(*results[-1]), flush=True)
        read_ms = read_cost(text, args.chars)
        print(f"one read of the {args.chars:,}-byte file: {read_ms:.1f} ms", flush=True)
    loadavg = " ".join(open("/proc/loadavg", encoding="ascii").read().split()[:3])
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [BEGIN, "", "## `/health` while large result files are read (`bench/health_under_result_files.py`)", "",
             f"{stamp}, commit {commit}, {os.cpu_count()} CPUs, load average at the end {loadavg}. "
             f"One client calls `bigText {args.chars:,}` {args.rounds} times in a row (`no_shm`: a "
             f"{(args.chars + 5) / 1e6:.1f} MB FILE result each), or the pure `loadHash` on a file of the "
             "same size; a prober times `GET /health` on a new connection every 20 ms meanwhile. "
             f"One `read` of the whole file (page cache): {read_ms:.1f} ms.", "",
             "| build | probes | p50 | p99 | worst | client's time |",
             "|---|---:|---:|---:|---:|---:|"]
    lines += [row(name, r) for name, r in results]
    lines += ["", END]
    write_section(args.out, BEGIN, END, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
