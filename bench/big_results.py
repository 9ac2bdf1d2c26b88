#!/usr/bin/env python3
"""Large results from real Morloc pools: time and peak memory of the server.

    python3 bench/big_results.py target/release/morloc-mcp [--runs N] [--out FILE]

Serves the `workbench` program (compiled by the real Morloc 0.98.2 compiler)
with the real pool runtime and calls `bigList` with 1M and 4M elements and
`bigText` with 20 million characters. Each run starts a fresh server, warms
the pool with one small call, then times one large call from writing the
request line to reading the whole reply line, and reads the server's peak
resident set (VmHWM) afterwards. Every reply is checked byte for byte.

Needs a Morloc installation ($MORLOC_HOME, default ~/.local/share/morloc)
and the `workbench` program compiled by `make test-real` (or under
$MORLOC_PROGRAMS; bench/programs.py says where it looks). Without them it
prints one line saying so and exits 0.

The section between the `big-results` markers of bench/RESULTS.md is
replaced with the table (or written to --out). No figure is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from report import write_section
from programs import NEEDS, program_manifest, runtime_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- big-results:begin -->"
END = "<!-- big-results:end -->"

CASES = [
    ("bigList", 1_000_000),
    ("bigList", 4_000_000),
    ("bigText", 20_000_000),
]

# Measured earlier on this machine with the reference `morloc-nexus mcp`,
# not by this script (it does not run the reference).
REFERENCE = {
    ("bigList", 1_000_000): "0.27–0.47 s, 115 MB",
    ("bigList", 4_000_000): "6.1 s, 435 MB",
}




def expected_text(tool: str, n: int) -> str:
    if tool == "bigList":
        return "[" + ",".join(map(str, range(n))) + "]"
    return '"' + "x" * n + '"'


def peak_rss(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


class Server:
    def __init__(self, binary: str, manifest: str, env: dict[str, str]):
        self.proc = subprocess.Popen([binary, "mcp", manifest], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "big-results", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict) -> bytes:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the server closed stdout during {method}")
        return line

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def run_case(binary: str, manifest: str, env: dict[str, str], tool: str, n: int,
             expected: str) -> tuple[float, int, int]:
    """(seconds, peak RSS in bytes, JSON text bytes) of one large call."""
    server = Server(binary, manifest, env)
    try:
        warm = json.loads(server.request("tools/call", {"name": "addOne", "arguments": {"_1": 1}}))
        if warm["result"]["content"][0]["text"] != "2":
            raise RuntimeError(f"warm-up call failed: {warm}")
        start = time.perf_counter()
        line = server.request("tools/call", {"name": tool, "arguments": {"_1": n}})
        took = time.perf_counter() - start
        peak = peak_rss(server.proc.pid)
    finally:
        server.close()
    reply = json.loads(line)
    result = reply.get("result", {})
    text = result.get("content", [{}])[0].get("text", "")
    if result.get("isError") or text != expected:
        raise RuntimeError(f"{tool} {n}: wrong reply ({len(text)} bytes, isError "
                           f"{result.get('isError')}): {text[:200]!r}")
    return took, peak, len(text.encode())


def render(rows: list[tuple[str, int, list[float], int, int]], runs: int, binary: str) -> str:
    load = os.getloadavg()
    lines = [BEGIN, "", "## Large results from real pools (`bench/big_results.py`)", "",
             f"The `workbench` program with the real Morloc 0.98.2 Python pool, served by `{os.path.relpath(binary, ROOT)}`;",
             f"{runs} runs per row, each in a fresh server after one warm-up call (load average {load[0]:.2f} at the end).",
             "Time: request line written to reply line read, median (min–max). Peak: the server's VmHWM after the call.",
             "Results above 64 KiB come back through shared memory and are rendered straight to JSON text.",
             "The reference figures were measured earlier with `morloc-nexus mcp`, not by this script.", "",
             "| call | JSON text | time | peak RSS | peak / JSON | reference |",
             "|---|---:|---:|---:|---:|---|"]
    for tool, n, times, peak, size in rows:
        t = f"{statistics.median(times):.3f} s ({min(times):.3f}–{max(times):.3f})"
        ref = REFERENCE.get((tool, n), "—")
        lines.append(f"| `{tool} {n:,}` | {size / 1e6:.1f} MB | {t} | {peak / 1e6:.1f} MB | "
                     f"{peak / size:.2f} | {ref} |")
    lines += ["", END]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Large results from real Morloc pools.")
    parser.add_argument("binary")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    args = parser.parse_args(argv)
    runs, out, binary = max(1, args.runs), args.out, os.path.abspath(args.binary)
    manifest = program_manifest("workbench")
    env = runtime_env()
    if manifest is None or env is None:
        print(f"big_results: skipped: {NEEDS}")
        return 0
    rows = []
    for tool, n in CASES:
        expected = expected_text(tool, n)
        times, peaks, size = [], [], 0
        for _ in range(runs):
            took, peak, size = run_case(binary, manifest, env, tool, n, expected)
            times.append(took)
            peaks.append(peak)
        print(f"{tool} {n}: median {statistics.median(times):.3f} s, peak {max(peaks) / 1e6:.1f} MB, "
              f"JSON {size / 1e6:.1f} MB", flush=True)
        rows.append((tool, n, times, max(peaks), size))
    section = render(rows, runs, binary)
    write_section(out, BEGIN, END, section)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
