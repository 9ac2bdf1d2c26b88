#!/usr/bin/env python3
"""A 100 MB result served whole against served as pages (`--max-result-chars`).

    python3 bench/paged_results.py target/release/morloc-mcp [--runs N] [--out FILE]

Serves the shapes program with the test pool over stdio and, for `bigText`
of 100 million characters (a 100 MB JSON string) and `bigList` of 5 million
elements (39 MB of JSON), measures three ways of getting the value, each in
a fresh server after one warm-up call:

  whole      the option off: one tools/call answers with the whole value;
  pages      --max-result-chars 80000: the tools/call answers with a
             preview and a link, then resources/read walks the value in
             pages (1,000,000 characters or 500,000 elements each);
  read whole --max-result-chars 80000, then one resources/read without a
             query (the whole value through the resource).

Time: from writing the tools/call to reading the last reply. Peak: the
server's VmHWM at the end. Every value is checked: the pages joined (or the
whole text) must be the value exactly. The section between the
`paged-results` markers of bench/RESULTS.md is replaced (or written to
--out). No figure is asserted.
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
BEGIN = "<!-- paged-results:begin -->"
END = "<!-- paged-results:end -->"
LIMIT = "80000"
CASES = [("bigText", 100_000_000, 1_000_000), ("bigList", 5_000_000, 500_000)]


def peak_rss(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


class Server:
    def __init__(self, binary: str, manifest: str, extra: list[str]):
        self.proc = subprocess.Popen([binary, "mcp", manifest, *extra], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "paged-results", "version": "1"}})
        assert self.proc.stdin is not None
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.proc.stdin.flush()

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        assert self.proc.stdin is not None and self.proc.stdout is not None
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the server closed stdout during {method}")
        reply = json.loads(line)
        if "result" not in reply:
            raise RuntimeError(f"{method}: {str(reply)[:300]}")
        return reply["result"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def expected_value(tool: str, n: int):
    return "x" * n if tool == "bigText" else list(range(n))


def run(binary: str, manifest: str, mode: str, tool: str, n: int,
        page: int) -> tuple[float, float, int, int, int]:
    """(seconds in all, seconds of the tools/call, peak RSS after the call,
    peak RSS at the end, number of replies) of getting the value one way."""
    extra = [] if mode == "whole" else ["--max-result-chars", LIMIT]
    server = Server(binary, manifest, extra)
    try:
        warm = server.request("tools/call", {"name": "addOne", "arguments": {"_1": 1}})
        if warm["content"][0]["text"] != "2":
            raise RuntimeError(f"warm-up call failed: {warm}")
        start = time.perf_counter()
        result = server.request("tools/call", {"name": tool, "arguments": {"_1": n}})
        call_took = time.perf_counter() - start
        call_peak = peak_rss(server.proc.pid)
        replies = 1
        if mode == "whole":
            value = json.loads(result["content"][0]["text"])
        else:
            uri = result["structuredContent"]["resultLink"]["uri"]
            if mode == "read whole":
                read = server.request("resources/read", {"uri": uri})
                value = json.loads(read["contents"][0]["text"])
                replies += 1
            else:
                parts: list = []
                next_uri = f"{uri}?offset=0&limit={page}"
                while next_uri:
                    content = server.request("resources/read", {"uri": next_uri})["contents"][0]
                    replies += 1
                    if tool == "bigText":
                        parts.append(content["text"])
                    else:
                        parts.extend(json.loads(content["text"]))
                    next_uri = content.get("_meta", {}).get("next")
                value = "".join(parts) if tool == "bigText" else parts
        took = time.perf_counter() - start
        peak = peak_rss(server.proc.pid)
    finally:
        server.close()
    if value != expected_value(tool, n):
        raise RuntimeError(f"{tool} {n} ({mode}): the value read back is wrong")
    return took, call_took, call_peak, peak, replies


def render(rows: list, runs: int, binary: str) -> str:
    lines = [BEGIN, "", "## A big result whole or in pages (`bench/paged_results.py`)", "",
             f"The shapes program with the test pool, served over stdio by `{os.path.relpath(binary, ROOT)}`; "
             f"{runs} runs per row, each in a fresh server after one warm-up call. {provenance()}",
             "*whole*: the option off, the value in the tools/call reply. *pages*: `--max-result-chars "
             f"{LIMIT}`, the tools/call answers with a link, then `resources/read` walks the value page by "
             "page (following `_meta.next`). *read whole*: the same option, then one `resources/read` "
             "without a query. Time: tools/call written to the last reply read, median (min–max), the "
             "client's JSON parsing and checking included; of it, the tools/call alone. Peak: the "
             "server's VmHWM after the tools/call and at the end (the call's own peak holds the value "
             "as the pool's shared memory and as JSON text). Every value read back is checked.", "",
             "| value | way | replies | time | of it the tools/call | peak after the call | peak at the end |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for label, mode, replies, times, calls, call_peak, peak in rows:
        t = f"{statistics.median(times):.2f} s ({min(times):.2f}–{max(times):.2f})"
        lines.append(f"| {label} | {mode} | {replies} | {t} | {statistics.median(calls):.2f} s | "
                     f"{call_peak / 1e6:.0f} MB | {peak / 1e6:.0f} MB |")
    lines += ["", END]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="A big result whole or in pages.")
    parser.add_argument("binary")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    args = parser.parse_args(argv)
    runs, binary = max(1, args.runs), os.path.abspath(args.binary)
    rows = []
    with tempfile.TemporaryDirectory(prefix="paged-results-") as tmp:
        manifest = test_pool_manifest(tmp)
        for tool, n, page in CASES:
            label = (f"`bigText {n:,}` (100 MB string), pages of {page:,} characters" if tool == "bigText"
                     else f"`bigList {n:,}` (39 MB of JSON), pages of {page:,} elements")
            for mode in ("whole", "pages", "read whole"):
                times, calls, call_peaks, peaks, replies = [], [], [], [], 0
                for _ in range(runs):
                    took, call_took, call_peak, peak, replies = run(binary, manifest, mode, tool, n, page)
                    times.append(took)
                    calls.append(call_took)
                    call_peaks.append(call_peak)
                    peaks.append(peak)
                print(f"{tool} {n} {mode}: median {statistics.median(times):.2f} s, "
                      f"peak {max(call_peaks) / 1e6:.0f} / {max(peaks) / 1e6:.0f} MB, {replies} replies",
                      flush=True)
                rows.append((label, mode, replies, times, calls, max(call_peaks), max(peaks)))
    write_section(args.out, BEGIN, END, render(rows, runs, binary))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
