#!/usr/bin/env python3
"""How long reloading a worst-case tools file stalls the server's one thread.

    python3 bench/tools_reload.py target/release/morloc-mcp
    python3 bench/tools_reload.py BIN --rounds 3     # fewer rounds

A stdio server serves `examples/shapes/manifest.json` with a tools file.
A client sends `ping` after `ping` (one outstanding at a time) and notes
each one's round trip. The tools file is rewritten with one of the shapes
below (each just under the 4 MiB cap), the server notices it (it looks
every 200 ms) and reloads; the stall is the longest ping round trip from
the write until 1 s after the reload's stderr line, and the baseline is the
longest in the 2 s before the write. Then the small tools file is written
back (another reload, not measured). Shapes, interleaved round by round:

- `description`: one command with a 4 MiB plain description;
- `escapes`: one command whose 4 MiB description is `\\u00e9` escapes (the
  slowest bytes to decode; 0.7 M characters, 1.4 MB of text once decoded);
- `arguments`: every command with long descriptions on all its arguments
  and itself, many small strings (the whole 4 MiB spread over them);
- `unknown`: 40,000 entries naming no command (the reload is refused with
  an error naming the first; the previous configuration keeps serving).

Reported per shape: the server's CPU time for the reload (from /proc, less
what the pings cost at the baseline's rate: on a busy machine the best
guide to the stall an idle one would see), the median and worst stall over
the rounds, the baseline, and the server's peak resident memory (VmHWM) at
the end.
Standard library only; Linux.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH_DIR)
SHAPES = os.path.join(REPO, "examples", "shapes", "manifest.json")
CAP = 4 * 1024 * 1024
ROOM = 4096  # bytes kept under the cap


def commands() -> list[dict]:
    with open(SHAPES) as f:
        return json.load(f)["commands"]


def small() -> str:
    return json.dumps({"tools": {"addOne": {"title": "Add one"}}})


def shaped(kind: str) -> str:
    budget = CAP - ROOM
    if kind == "description":
        return json.dumps({"tools": {"addOne": {"description": "x" * (budget - 60)}}})
    if kind == "escapes":
        n = (budget - 60) // 6
        return '{"tools": {"addOne": {"description": "' + "\\u00e9" * n + '"}}}'
    if kind == "arguments":
        cmds = commands()
        slots = sum(1 + len(c.get("args", [])) for c in cmds)
        each = (budget - 200 * slots) // slots
        tools = {}
        for c in cmds:
            args = {"_%d" % (i + 1): {"description": "a" * each}
                    for i in range(len(c.get("args", [])))}
            tools[c["name"]] = {"description": "d" * each, "arguments": args}
        return json.dumps({"tools": tools})
    if kind == "unknown":
        entries = {}
        size = 20
        i = 0
        while True:
            key = "noSuchCommand%06d" % i
            entry = {"title": "t" * 60}
            size += len(json.dumps({key: entry})) + 1
            if size > budget:
                break
            entries[key] = entry
            i += 1
        return json.dumps({"tools": entries})
    raise ValueError(kind)


class Server:
    def __init__(self, binary: str, tools: str) -> None:
        self.proc = subprocess.Popen(
            [binary, "mcp", SHAPES, "--tools-file", tools, "--lazy-pools"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: list[tuple[float, str]] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._stderr, daemon=True).start()
        self.next_id = 1
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "bench", "version": "1"}}})
        self.proc.stdout.readline()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _stderr(self) -> None:
        for raw in self.proc.stderr:
            with self.lock:
                self.lines.append((time.perf_counter(), raw.decode(errors="replace")))

    def send(self, msg: dict) -> None:
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def ping(self) -> float:
        start = time.perf_counter()
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": "ping"})
        self.next_id += 1
        self.proc.stdout.readline()
        return time.perf_counter() - start

    def line_after(self, since: float, needles: tuple[str, ...]) -> float | None:
        with self.lock:
            for at, line in self.lines:
                if at >= since and any(n in line for n in needles):
                    return at
        return None

    def cpu(self) -> float:
        """Seconds of CPU the server used so far (user and system)."""
        with open("/proc/%d/stat" % self.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def hwm_kib(self) -> int:
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        return 0


def measure(server: Server, path: str, text: str) -> tuple[float, float, float]:
    """(stall, baseline, CPU) in seconds for one reload to `text`; CPU is
    what the server used from the write to the end of the window, less
    what its pings cost at the baseline's rate."""
    pings: list[tuple[float, float]] = []
    cpu0, t0 = server.cpu(), time.perf_counter()
    end = t0 + 2.0
    while time.perf_counter() < end:
        pings.append((time.perf_counter(), server.ping()))
    baseline = max(rt for _, rt in pings)
    rate = (server.cpu() - cpu0) / len(pings)
    cpu_before = server.cpu()
    wrote = time.perf_counter()
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
    seen = None
    deadline = wrote + 30
    window: list[float] = []
    while time.perf_counter() < deadline:
        window.append(server.ping())
        seen = seen or server.line_after(wrote, ("reloaded", "tools file"))
        if seen and time.perf_counter() > seen + 1.0:
            break
    if seen is None:
        sys.exit("no reload seen on stderr")
    cpu = server.cpu() - cpu_before - rate * len(window)
    return max(window), baseline, max(cpu, 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("binary")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    kinds = ["description", "escapes", "arguments", "unknown"]
    texts = {k: shaped(k) for k in kinds}
    for k, t in texts.items():
        assert len(t.encode()) <= CAP, (k, len(t))
    stalls: dict[str, list[float]] = {k: [] for k in kinds}
    bases: dict[str, list[float]] = {k: [] for k in kinds}
    cpus: dict[str, list[float]] = {k: [] for k in kinds}
    hwm: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "tools.json")
        for kind in kinds:
            with open(path, "w") as f:
                f.write(small())
            server = Server(args.binary, path)
            try:
                for _ in range(args.rounds):
                    stall, base, cpu = measure(server, path, texts[kind])
                    stalls[kind].append(stall)
                    bases[kind].append(base)
                    cpus[kind].append(cpu)
                    measure(server, path, small())
                hwm[kind] = server.hwm_kib()
            finally:
                server.proc.stdin.close()
                server.proc.wait(10)
    load = open("/proc/loadavg").read().split()[:3]
    print("load average at the end: %s, %d CPUs" % (" ".join(load), os.cpu_count()))
    print("| tools file (4 MiB) | server CPU for the reload: median (ms) | stall: median, worst (ms) | ping baseline worst (ms) | peak RSS |")
    print("|---|---|---|---|---|")
    for kind in kinds:
        s = sorted(stalls[kind])
        c = sorted(cpus[kind])
        print("| %s | %.0f | %.1f, %.1f | %.1f | %.1f MiB |" % (
            kind, 1000 * c[len(c) // 2], 1000 * s[len(s) // 2], 1000 * s[-1],
            1000 * max(bases[kind]), hwm[kind] / 1024))


if __name__ == "__main__":
    main()
