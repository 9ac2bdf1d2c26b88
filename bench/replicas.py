#!/usr/bin/env python3
"""Calls per second through pool replicas, by replica count.

    python3 bench/replicas.py target/release/morloc-mcp [--rounds N] [--out FILE]

A Python pool runs one call at a time; the server runs up to
`--pool-replicas py=N` processes of it. For N in 1, 2, 4 and 8 this starts
a fresh server with that cap, warms it (rounds of concurrent calls until
the replicas are up), then sends rounds of 16 concurrent calls and reports
the median calls per second over the rounds, for:

- a sleeping function (`slowEcho 100`): the pool waits, so more processes
  than CPUs still help;
- a CPU-bound function with small arguments and results: in the test pool,
  `spin 200000` (Python integer work); in the real workbench pool,
  `countWords` of a 200k-word text (a Python loop over the words, with a
  1.2 MB argument and a small result); here more processes than CPUs
  cannot help;
- a CPU-bound function with a large result, `bigList 50000` in the test
  pool: the pool builds and encodes the list (98 % of the CPU of a round,
  measured: 5.5 s in the pool, 0.12 s in the server), and the 400 KB result
  comes back through shared memory, so the result leases are in play.

The test pool (`tests/pool/testpool.py`, one call at a time like a real
Python pool) always runs; the real workbench pool runs when the real
runtime and programs are there (as for bench/big_results.py), else one line
says it was skipped. Every reply is checked. The section between the
`replicas` markers of bench/RESULTS.md is replaced (or written to --out).
No figure is asserted.
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
from programs import (NEEDS, program_manifest, runtime_env, spin_answer, spin_manifest,
                      test_pool_manifest)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- replicas:begin -->"
END = "<!-- replicas:end -->"
COUNTS = [1, 2, 4, 8]
SPIN = 200_000
BATCH = 16
WORDS = " ".join("w%d" % (i % 10) for i in range(200_000))




class Server:
    def __init__(self, binary: str, manifest: str, env: dict[str, str], replicas: int):
        self.proc = subprocess.Popen(
            [binary, "mcp", manifest, "--pool-replicas", "py=%d" % replicas],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.next_id = 1
        self.send("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "replicas-bench", "version": "1"}})
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

    def batch(self, tool: str, arguments: dict, expected: str, n: int) -> float:
        started = time.monotonic()
        for _ in range(n):
            self.send("tools/call", {"name": tool, "arguments": arguments})
        for _ in range(n):
            msg = self.read()
            result = msg.get("result", {})
            text = result.get("content", [{}])[0].get("text")
            if result.get("isError") or text != expected:
                raise RuntimeError("%s: unexpected reply %s" % (tool, json.dumps(msg)[:300]))
        return time.monotonic() - started

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def measure(binary, manifest, env, replicas, tool, arguments, expected, rounds):
    server = Server(binary, manifest, env, replicas)
    try:
        # Warm-up: the replicas start while these wait.
        for _ in range(3):
            server.batch(tool, arguments, expected, BATCH)
        rates = [BATCH / server.batch(tool, arguments, expected, BATCH) for _ in range(rounds)]
    finally:
        server.close()
    return rates


def count_words_text() -> str:
    return json.dumps([["w%d" % i, 20_000] for i in range(10)], separators=(",", ":"))


def render(rows, rounds: int, binary: str) -> str:
    lines = [BEGIN, "", "## Pool replicas (`bench/replicas.py`)", "",
             "Calls per second through `--pool-replicas py=N`: rounds of %d concurrent calls after a warm-up, "
             "median over %d rounds (min-max beside it). %s" % (BATCH, rounds, provenance()), "",
             "| pool | function | " + " | ".join("py=%d" % n for n in COUNTS) + " | py=2 / py=1 | py=8 / py=1 |",
             "|---|---|" + "---|" * (len(COUNTS) + 2)]
    for pool, label, rates in rows:
        cells = []
        for n in COUNTS:
            r = rates.get(n)
            cells.append("%.1f (%.1f-%.1f)" % (statistics.median(r), min(r), max(r)) if r else "-")
        def gain(n: int) -> float:
            return (statistics.median(rates[n]) / statistics.median(rates[1])
                    if rates.get(1) and rates.get(n) else 0)
        lines.append("| %s | %s | %s | %.2fx | %.2fx |" % (pool, label, " | ".join(cells), gain(2), gain(8)))
    lines += ["", END, ""]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Calls per second through pool replicas.")
    parser.add_argument("binary")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    args = parser.parse_args(argv)
    rounds, out, binary = max(1, args.rounds), args.out, os.path.abspath(args.binary)
    cases = []
    tmp = tempfile.TemporaryDirectory()
    os.mkdir(os.path.join(tmp.name, "spin"))
    shapes = test_pool_manifest(tmp.name)
    spin, spin_env = spin_manifest(os.path.join(tmp.name, "spin"))
    big = json.dumps(list(range(50_000)), separators=(",", ":"))
    cases.append(("test pool", "`slowEcho 100` (sleeps)", shapes, dict(os.environ),
                  "slowEcho", {"_1": 100}, "100"))
    cases.append(("test pool", "`spin %d` (CPU in the pool, small data)" % SPIN, spin, spin_env,
                  "spin", {"_1": SPIN}, spin_answer(SPIN)))
    cases.append(("test pool", "`bigList 50000` (CPU in the pool, a shared-memory result)",
                  shapes, dict(os.environ), "bigList", {"_1": 50_000}, big))
    workbench = program_manifest("workbench")
    env = runtime_env()
    if workbench is not None and env is not None:
        cases.append(("real Python pool", "`slowEcho 100` (sleeps)", workbench, env,
                      "slowEcho", {"_1": 100}, "100"))
        cases.append(("real Python pool", "`countWords` of 200k words (CPU in the pool)", workbench, env,
                      "countWords", {"_1": WORDS}, count_words_text()))
    else:
        print(f"replicas: real pool skipped: {NEEDS}")
    rows = []
    for pool, label, manifest, case_env, tool, arguments, expected in cases:
        rates = {}
        for n in COUNTS:
            rates[n] = measure(binary, manifest, case_env, n, tool, arguments, expected, rounds)
            print("%s, %s, py=%d: %.1f calls/s" % (pool, label, n, statistics.median(rates[n])), flush=True)
        rows.append((pool, label, rates))
    section = render(rows, rounds, binary)
    write_section(out, BEGIN, END, section)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
