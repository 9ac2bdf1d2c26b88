#!/usr/bin/env python3
"""Concurrent calls on a multi-threaded (C++) pool, with one process and with replicas.

    python3 bench/threaded.py target/release/morloc-mcp [--rounds N] [--out FILE]

The pool is the test pool serving like a Morloc 0.98.2 C++ pool
(`TESTPOOL_WORKERS=cpp`: worker threads, each freeing its last
shared-memory result when it starts its next call), named `cpp` in the
shapes manifest. Every call returns an `Int` (schema `j`, unbounded), so
each may come back through shared memory and holds its pool process until
the server has read it. Two configurations, each in a fresh server:

- `cpp=1`: one process, the default before C++ pools had replicas;
- default: up to max(CPUs, 8) processes, replicas started when calls wait.

For each: the wall time of a first round of 8 concurrent `slowEcho 500`
calls (the replicas start during it), then the median (min-max) over
`--rounds` warm rounds, and the same for a mixed round (8 `slowEcho 500`
and 8 `bigList 20000`, a 110 KB result through shared memory). Every reply
is checked byte for byte. The section between the `threaded` markers of
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
import time

from report import provenance, write_section
from programs import TESTPOOL

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- threaded:begin -->"
END = "<!-- threaded:end -->"
SLEEP_MS = 500
BIG = 20_000


def threaded_manifest(directory: str) -> str:
    """The shapes manifest with a C++-like test pool named `cpp`."""
    with open(os.path.join(ROOT, "tests", "data", "shapes", "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    manifest["pools"][0]["lang"] = "cpp"
    manifest["pools"][0]["exec"] = ["env", "TESTPOOL_WORKERS=cpp", "python3", TESTPOOL]
    path = os.path.join(directory, "manifest.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(manifest, f)
    return path


class Server:
    def __init__(self, binary: str, manifest: str, extra: list[str]):
        self.proc = subprocess.Popen([binary, "mcp", manifest, *extra], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 1
        self.send("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "threaded-bench", "version": "1"}})
        self.read()
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.proc.stdin.flush()

    def send(self, method: str, params: dict) -> int:
        rid = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()
        return rid

    def read(self) -> dict:
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the server closed its stdout")
            msg = json.loads(line)
            if "id" in msg and "method" not in msg:
                return msg

    def round(self, calls: list[tuple[str, int, str]]) -> float:
        """Sends every call at once; returns the seconds until the last reply."""
        started = time.monotonic()
        expected = {}
        for tool, n, text in calls:
            expected[self.send("tools/call", {"name": tool, "arguments": {"_1": n}})] = (tool, n, text)
        for _ in calls:
            msg = self.read()
            tool, n, text = expected[msg["id"]]
            result = msg.get("result", {})
            got = result.get("content", [{}])[0].get("text")
            if result.get("isError") or got != text:
                raise RuntimeError("%s %d: unexpected reply %s" % (tool, n, json.dumps(msg)[:300]))
        return time.monotonic() - started

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def sleepers() -> list[tuple[str, int, str]]:
    return [("slowEcho", SLEEP_MS, str(SLEEP_MS))] * 8


def mixed() -> list[tuple[str, int, str]]:
    big = json.dumps(list(range(BIG)), separators=(",", ":"))
    calls = []
    for _ in range(8):
        calls += [("slowEcho", SLEEP_MS, str(SLEEP_MS)), ("bigList", BIG, big)]
    return calls


def measure(binary: str, manifest: str, extra: list[str], calls, rounds: int) -> tuple[float, list[float]]:
    server = Server(binary, manifest, extra)
    try:
        first = server.round(calls)
        warm = [server.round(calls) for _ in range(rounds)]
    finally:
        server.close()
    return first, warm


def render(rows, rounds: int) -> str:
    lines = [BEGIN, "", "## Concurrent calls on a threaded pool (`bench/threaded.py`)", "",
             "Wall time of a round of concurrent calls on the test pool serving like a C++ pool "
             "(`TESTPOOL_WORKERS=cpp`), every result an `Int` that may come back through shared "
             "memory: the first round (replicas start during it), then the median (min-max) over "
             "%d warm rounds. %s" % (rounds, provenance()), "",
             "| round | `--pool-replicas cpp=1` (before) | default (replicas) |",
             "|---|---|---|"]
    for label, cells in rows:
        out = []
        for first, warm in cells:
            out.append("first %.2f s, then %.2f s (%.2f-%.2f)" % (
                first, statistics.median(warm), min(warm), max(warm)))
        lines.append("| %s | %s |" % (label, " | ".join(out)))
    lines += ["", END, ""]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Concurrent calls on a threaded pool.")
    parser.add_argument("binary")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    args = parser.parse_args(argv)
    rounds, binary = max(1, args.rounds), os.path.abspath(args.binary)
    tmp = tempfile.TemporaryDirectory()
    manifest = threaded_manifest(tmp.name)
    cases = [("8 x `slowEcho %d`" % SLEEP_MS, sleepers()),
             ("8 x `slowEcho %d` + 8 x `bigList %d`" % (SLEEP_MS, BIG), mixed())]
    rows = []
    for label, calls in cases:
        cells = []
        for extra in (["--pool-replicas", "cpp=1"], []):
            first, warm = measure(binary, manifest, extra, calls, rounds)
            cells.append((first, warm))
            print("%s, %s: first %.2f s, warm median %.2f s" % (
                label, " ".join(extra) or "default", first, statistics.median(warm)), flush=True)
        rows.append((label, cells))
    write_section(args.out, BEGIN, END, render(rows, rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
