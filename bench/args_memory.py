#!/usr/bin/env python3
"""Large tool arguments: the server's peak memory and how long it stalls.

    python3 bench/args_memory.py target/release/morloc-mcp [--scale F] [--out FILE]

Serves four commands of the test pool (tests/pool/testpool.py) over stdio,
each taking one big list: 6 M integers (`[Int]`, a 12 MB body), 2 M reals
(`[Real]`), 1 M short strings (`[Str]`) and 300 k `{"x":1,"y":2}` records
(`[{x: Int, y: Int}]`); --scale multiplies the counts. The commands are given
mids the pool has no function for, so the pool reads the whole CALL packet
and answers at once with an error, without decoding it: what is measured is
the server's side only (reading the line, checking and encoding the
arguments, sending the packet).

Each row starts a fresh server, warms the pool with one small call, then
writes the big request line followed by a `ping` line, and reads:
- stall: seconds from the end of the write until the `ping` is answered (the
  one thread decodes the line's envelope before it reads the ping; the
  packet is then encoded in slices, the ping answered between two);
- peak: the server's VmHWM after the call, and VmRSS (what it keeps);
- target: body + encoded CALL packet + 16 MiB (the goal for the peak).

The section between the `args-memory` markers of bench/RESULTS.md is
replaced with the table (or written to --out). No figure is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from programs import TESTPOOL
from report import write_section

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- args-memory:begin -->"
END = "<!-- args-memory:end -->"
MIB = 1024 * 1024

# Measured on this machine by this script with the binary of 035abc8, where
# the whole request was parsed into a JSON tree and then a typed value:
# peak (VmHWM), after (VmRSS), stall. Stalls depend on the machine's load
# (6.66 s for the integers in an earlier, busier run); peaks do not.
BEFORE = {
    "sinkInts": "1251 MiB, 885 MiB after, 2.19 s",
    "sinkReals": "407 MiB, 270 MiB after, 0.56 s",
    "sinkStrs": "220 MiB, 166 MiB after, 0.30 s",
    "sinkPoints": "342 MiB, 321 MiB after, 0.55 s",
}

# (tool, schema, type, JSON of one element, elements, flat bytes per element)
CASES = [
    ("sinkInts", "aj", "[Int]", "1", 6_000_000, 16),
    ("sinkReals", "af8", "[Real]", "1.5", 2_000_000, 8),
    ("sinkStrs", "as", "[Str]", '"abcdefgh"', 1_000_000, 16 + 8),
    ("sinkPoints", "a<dict>m21xj1yj", "[Point]", '{"x":1,"y":2}', 300_000, 32),
]


def manifest(directory: str) -> str:
    """The shapes manifest with the four sink commands and the test pool."""
    with open(os.path.join(ROOT, "tests", "data", "shapes", "manifest.json"), encoding="utf-8") as f:
        data = json.load(f)
    template = next(c for c in data["commands"] if c["name"] == "sumMany")
    for mid, (tool, schema, ty, *_rest) in enumerate(CASES, start=70):
        command = json.loads(json.dumps(template))
        command.update(name=tool, mid=mid, desc=[f"Take a big {ty} (the test pool has no function)"])
        command["args"][0].update(schema=schema, type=ty)
        data["commands"].append(command)
    data["pools"][0]["exec"] = ["python3", TESTPOOL]
    path = os.path.join(directory, "manifest.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)
    return path


def status(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


class Server:
    def __init__(self, binary: str, manifest_path: str):
        self.proc = subprocess.Popen([binary, "mcp", manifest_path], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                       "clientInfo": {"name": "args-memory", "version": "1"}})
        self.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def read(self) -> dict:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the server closed stdout")
        return json.loads(line)

    def request(self, rid: int, method: str, params: dict) -> dict:
        self.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                               "params": params}).encode() + b"\n")
        return self.read()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def run_case(binary: str, manifest_path: str, tool: str, element: str, n: int,
             per_element: int) -> dict:
    body = (b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"'
            + tool.encode() + b'","arguments":{"_1":['
            + ",".join([element] * n).encode() + b"]}}}\n")
    server = Server(binary, manifest_path)
    try:
        warm = server.request(2, "tools/call", {"name": "addOne", "arguments": {"_1": 1}})
        if warm["result"]["content"][0]["text"] != "2":
            raise RuntimeError(f"warm-up call failed: {warm}")
        before = status(server.proc.pid, "VmRSS")
        start = time.perf_counter()
        server.write(body + b'{"jsonrpc":"2.0","id":4,"method":"ping"}\n')
        written = time.perf_counter()
        replies = {}
        stall = None
        while len(replies) < 2:
            reply = server.read()
            replies[reply.get("id")] = reply
            if reply.get("id") == 4 and stall is None:
                stall = time.perf_counter() - written
        took = time.perf_counter() - start
        peak = status(server.proc.pid, "VmHWM")
        after = status(server.proc.pid, "VmRSS")
    finally:
        server.close()
    result = replies[3].get("result", {})
    if not result.get("isError"):
        raise RuntimeError(f"{tool}: expected the pool's error, got {replies[3]}")
    text = result["content"][0]["text"]
    if "KeyError" not in text and not text.strip().isdigit():
        raise RuntimeError(f"{tool}: the pool did not receive the call: {text[:200]!r}")
    # The CALL packet: header, one DATA packet (header + 32-byte schema
    # metadata), the list head and its data (aligned to 64 for numbers).
    packet = 32 + 32 + 32 + 16 + 63 + n * per_element
    return {"tool": tool, "n": n, "body": len(body), "packet": packet, "before": before,
            "peak": peak, "after": after, "stall": stall, "took": took}


def full_n(tool: str) -> int:
    return next(n for t, _s, _ty, _e, n, _p in CASES if t == tool)


def render(rows: list[dict], binary: str) -> str:
    out = [f"Binary: `{binary}`. One fresh server per row, over stdio; the pool answers "
           "without decoding. Stall: from the end of the write to the answer of a `ping` "
           "sent right behind the call. Peak: VmHWM after the call; after: VmRSS then. "
           "Target: body + CALL packet + 16 MiB.",
           "",
           "| argument | body | packet | peak | peak / body | target | after | stall | before (035abc8) |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        target = r["body"] + r["packet"] + 16 * MIB
        ok = "yes" if r["peak"] <= target else "no"
        out.append(
            f"| {r['tool']} ({r['n']:,}) | {r['body'] / MIB:.1f} MiB | {r['packet'] / MIB:.1f} MiB "
            f"| {r['peak'] / MIB:.0f} MiB | {r['peak'] / r['body']:.1f}x "
            f"| {target / MIB:.0f} MiB ({ok}) | {r['after'] / MIB:.0f} MiB | {r['stall']:.2f} s "
            f"| {BEFORE.get(r['tool'], '') if r['n'] == full_n(r['tool']) else ''} |")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("binary")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the element counts")
    parser.add_argument("--out", help="write the table here instead of bench/RESULTS.md")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        path = manifest(directory)
        for tool, _schema, _ty, element, n, per_element in CASES:
            count = max(1, int(n * args.scale))
            row = run_case(args.binary, path, tool, element, count, per_element)
            print(f"{tool}: body {row['body'] / MIB:.1f} MiB, peak {row['peak'] / MIB:.0f} MiB, "
                  f"after {row['after'] / MIB:.0f} MiB, stall {row['stall']:.2f} s", flush=True)
            rows.append(row)
    section = (BEGIN + "\n\n## Large arguments (`bench/args_memory.py`)\n\n"
               + render(rows, args.binary) + "\n" + END + "\n")
    out = args.out or os.path.join(ROOT, "bench", "RESULTS.md")
    write_section(out, BEGIN, END, section)
    print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
