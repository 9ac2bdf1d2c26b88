#!/usr/bin/env python3
"""Structured output of big results: what `structuredContent` costs.

    python3 bench/structured_results.py target/release/morloc-mcp [--before BINARY] [--runs N] [--out FILE]

Serves the shapes program with the test pool over stdio and calls `bigList`
(1M and 4M elements) and `bigText` (20 million characters), once as a legacy
session (the reference's shape: the value once, in the text block) and once
as a modern 2026-07-28 request (the value twice on the wire: escaped in the
text block, raw as `structuredContent`, written from the one text the
server holds). Each run starts a fresh server, warms the pool with one small
call, times one large call from writing the request line to reading the
whole reply line, and reads the server's peak resident set (VmHWM). Every
reply is checked: the text is the expected value, and a modern reply's
`structuredContent` is that value parsed.

`--before BINARY` adds the same rows for another build (one without
structured output) to compare with. The test pool is Python: its time is in
every row, so compare memory more than time.

The section between the `structured-results` markers of bench/RESULTS.md is
replaced with the table (or written to --out). No figure is asserted.
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

from programs import test_pool_manifest
from report import provenance, write_section

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- structured-results:begin -->"
END = "<!-- structured-results:end -->"

CASES = [("bigList", 1_000_000), ("bigList", 4_000_000), ("bigText", 20_000_000)]
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "structured-results", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def expected_text(tool: str, n: int) -> str:
    if tool == "bigList":
        return "[" + ",".join(map(str, range(n))) + "]"
    return '"' + "x" * n + '"'


def cpu_seconds(pid: int) -> float:
    """The process's user + system CPU time so far."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


class Server:
    def __init__(self, binary: str, manifest: str, modern: bool):
        self.proc = subprocess.Popen([binary, "mcp", manifest], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.modern = modern
        self.next_id = 0
        if not modern:
            self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "structured-results", "version": "1"}})
            self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict) -> bytes:
        self.next_id += 1
        if self.modern:
            params = {**params, "_meta": MODERN_META}
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


def run_case(binary: str, manifest: str, modern: bool, tool: str, n: int,
             expected: str) -> tuple[float, float, int, int, bool]:
    """(seconds, server CPU seconds, peak RSS, reply line bytes,
    structuredContent present)."""
    server = Server(binary, manifest, modern)
    try:
        warm = json.loads(server.request("tools/call", {"name": "addOne", "arguments": {"_1": 1}}))
        if warm["result"]["content"][0]["text"] != "2":
            raise RuntimeError(f"warm-up call failed: {warm}")
        cpu = cpu_seconds(server.proc.pid)
        start = time.perf_counter()
        line = server.request("tools/call", {"name": tool, "arguments": {"_1": n}})
        took = time.perf_counter() - start
        cpu = cpu_seconds(server.proc.pid) - cpu
        peak = peak_rss(server.proc.pid)
    finally:
        server.close()
    result = json.loads(line).get("result", {})
    text = result.get("content", [{}])[0].get("text", "")
    if result.get("isError") or text != expected:
        raise RuntimeError(f"{tool} {n}: wrong reply ({len(text)} bytes): {text[:200]!r}")
    structured = "structuredContent" in result
    if structured and result["structuredContent"] != json.loads(expected):
        raise RuntimeError(f"{tool} {n}: structuredContent is not the value")
    return took, cpu, peak, len(line), structured


def render(rows: list[tuple[str, str, str, int, list[float], list[float], int, bool]], runs: int) -> str:
    lines = [BEGIN, "", "## Structured output of big results (`bench/structured_results.py`)", "",
             f"The shapes program with the test pool (Python), over stdio; {provenance()}",
             f"{runs} runs per row, each in a fresh server after one warm-up call. Time: request line written",
             "to reply line read, median (min–max); it includes the test pool's own work and, on a busy machine,",
             "waiting for a CPU. Server CPU: the server process's user + system time over the call, median",
             "(the pool's work is not in it). Peak: the server's VmHWM after the call. Legacy: an `initialize` session (the value once, in the text block, as the",
             "reference answers). Modern: a 2026-07-28 request, whose reply carries the value twice (escaped in",
             "the text block, raw as `structuredContent`), written from the one JSON text the server holds.",
             "\"before\" is the build without structured output (the modern reply then had the text block only).", "",
             "| build | era | call | reply line | structuredContent | time | server CPU | peak RSS | peak / reply |",
             "|---|---|---|---:|---|---:|---:|---:|---:|"]
    for build, era, tool_n, size, times, cpus, peak, structured in rows:
        t = f"{statistics.median(times):.3f} s ({min(times):.3f}–{max(times):.3f})"
        lines.append(f"| {build} | {era} | `{tool_n}` | {size / 1e6:.1f} MB | {'yes' if structured else 'no'} | "
                     f"{t} | {statistics.median(cpus):.2f} s | {peak / 1e6:.1f} MB | {peak / size:.2f} |")
    lines += ["", END]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="What structuredContent costs for big results.")
    parser.add_argument("binary")
    parser.add_argument("--before", help="another build to compare with")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    args = parser.parse_args(argv)
    runs = max(1, args.runs)
    builds = [("this", os.path.abspath(args.binary))]
    if args.before:
        builds.insert(0, ("before", os.path.abspath(args.before)))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        manifest = test_pool_manifest(tmp)
        for tool, n in CASES:
            expected = expected_text(tool, n)
            for build, binary in builds:
                for era, modern in (("legacy", False), ("modern", True)):
                    times, cpus, peaks, size, structured = [], [], [], 0, False
                    for _ in range(runs):
                        took, cpu, peak, size, structured = run_case(binary, manifest, modern, tool, n, expected)
                        times.append(took)
                        cpus.append(cpu)
                        peaks.append(peak)
                    print(f"{build} {era} {tool} {n}: median {statistics.median(times):.3f} s, "
                          f"CPU {statistics.median(cpus):.2f} s, peak {max(peaks) / 1e6:.1f} MB, "
                          f"reply {size / 1e6:.1f} MB", flush=True)
                    rows.append((build, era, f"{tool} {n:,}", size, times, cpus, max(peaks), structured))
    write_section(args.out, BEGIN, END, render(rows, runs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
