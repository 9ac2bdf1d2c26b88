#!/usr/bin/env python3
"""Bursts of slow calls into real single-threaded pools: how long 8
concurrent 0.5 s calls take, the first round and the rounds after.

    python3 bench/bursts.py target/release/morloc-mcp [--trials N] [--rounds N] [--out FILE]
                            [--only LANG] [--before OLD] [--server NAME] [--log DIR]

For each real pool language (Python: `workbench` `slowEcho 500`; R:
`rbench` `rSleep 0.5`; C++: `cppbench` `cppSleep 0.5`, the suite's own
programs as `make test-real` compiled them, natively or inside a root;
bench/programs.py finds them) and each server, a trial starts a fresh
server, initializes it, makes one small call (so the pool's first process
is up, as it is on a server that has served anything), then sends 8 calls
at once and waits for all 8 (the first round), then `--rounds` more rounds
the same way. Every result is checked (exactly the argument back). The
servers: morloc-mcp with its defaults, morloc-mcp with `--pool-min LANG=8`
(8 processes kept ready from the start), for R the same with R's JIT off
(`R_ENABLE_JIT=0` in the pools' environment: R compiles a closure on its
second call, in every process, so a burst's second round pays that
compile in 8 processes at once), an older morloc-mcp with its defaults
(`--before`), and the reference `morloc-nexus mcp` where it is installed;
trials take turns between them. `--server` keeps the servers whose name
contains it; `--log DIR` runs morloc-mcp at `--log-level debug`, keeps each
trial's stderr (which process took which call, when each process started
and was ready) and prints every round.

Reported: the median over trials of the first round and of the later
rounds, with the smallest and largest beside them (seconds), and the load
average at the start. The section between the `bursts` markers of
bench/RESULTS.md is replaced (or written to --out). No figure is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from report import provenance, write_section
from programs import NEEDS, real_runtime

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- bursts:begin -->"
END = "<!-- bursts:end -->"
BEGIN_COLD = "<!-- bursts-cold:begin -->"
END_COLD = "<!-- bursts-cold:end -->"
BURST = 8

# language: (program, slow tool, its argument, the result's text, a small
# call (tool, arguments, text), the --pool-min name)
POOLS = {
    "Python": ("workbench", "slowEcho", 500, "500", ("addOne", {"_1": 1}, "2"), "py"),
    "R": ("rbench", "rSleep", 0.5, "0.5", ("sumInts", {"_1": [1, 2]}, "3"), "r"),
    "C++": ("cppbench", "cppSleep", 0.5, "0.5", ("sumInts", {"_1": [1, 2]}, "3"), "cpp"),
}


class Server:
    def __init__(self, argv: list[str], env: dict[str, str], log: str | None = None):
        self.log = open(log, "wb") if log else None
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log or subprocess.DEVNULL, env=env)
        self.next_id = 1
        rid = self.send("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                       "clientInfo": {"name": "bursts-bench", "version": "1"}})
        self.read(rid)
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.proc.stdin.flush()
        self.pending: dict[int, dict] = {}

    def send(self, method: str, params: dict) -> int:
        rid = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()
        return rid

    def read(self, rid: int) -> dict:
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the server closed its stdout")
            msg = json.loads(line)
            if msg.get("id") == rid and "method" not in msg:
                return msg

    def call(self, tool: str, arguments: dict, want: str) -> None:
        check(self.read(self.send("tools/call", {"name": tool, "arguments": arguments})), tool, want)

    def burst(self, tool: str, arguments: dict, want: str, n: int) -> float:
        started = time.monotonic()
        ids = {self.send("tools/call", {"name": tool, "arguments": arguments}) for _ in range(n)}
        while ids:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the server closed its stdout")
            msg = json.loads(line)
            if msg.get("id") in ids and "method" not in msg:
                check(msg, tool, want)
                ids.discard(msg["id"])
        return time.monotonic() - started

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.log:
            self.log.close()


def check(msg: dict, tool: str, want: str) -> None:
    result = msg.get("result", {})
    text = (result.get("content") or [{}])[0].get("text")
    if result.get("isError") or text != want:
        raise RuntimeError("%s: unexpected reply %s" % (tool, json.dumps(msg)[:300]))


def spread(values: list[float]) -> str:
    return "%.2f (%.2f-%.2f)" % (statistics.median(values), min(values), max(values))


def render(rows, trials: int, rounds: int, load: str, cold: bool, begin: str, end: str) -> str:
    title = "Cold bursts" if cold else "Bursts"
    into = ("into a fresh server right after `initialize`, while its first pool process starts (`--cold`)"
            if cold else "into a fresh server whose first pool process is up (one small call made first)")
    lines = [begin, "", "## %s into real single-threaded pools (`bench/bursts.py`)" % title, "",
             "8 concurrent 0.5 s calls (Python `slowEcho 500`, R `rSleep 0.5`, C++ `cppSleep 0.5`) "
             + into + "; then "
             "%d more rounds. Seconds: median over %d trials (trials of the servers taking turns), "
             "smallest-largest in brackets; every result checked. Load average at the start: %s. %s"
             % (rounds, trials, load, provenance()), "",
             "| pool | server | first round | later rounds |", "|---|---|---|---|"]
    for lang, name, first, later in rows:
        lines.append("| %s | %s | %s | %s |" % (lang, name, spread(first), spread(later)))
    lines += ["", end, ""]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Bursts of slow calls into real pools.")
    parser.add_argument("binary")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3, help="rounds after the first")
    parser.add_argument("--only", action="append", default=[], help="a pool language (Python, R, C++)")
    parser.add_argument("--before", help="an older morloc-mcp binary, measured with its defaults beside")
    parser.add_argument("--cold", action="store_true",
                        help="send the burst at once after initialize, while the pool starts (its own section)")
    parser.add_argument("--server", action="append", default=[],
                        help="measure only the servers whose name contains this (repeatable)")
    parser.add_argument("--log", metavar="DIR",
                        help="run morloc-mcp with --log-level debug and keep each trial's stderr in DIR "
                        "(which process took which call, when each started and was ready); print each round")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    args = parser.parse_args(argv)
    real = real_runtime()
    if real is None:
        print("bursts: skipped: %s" % NEEDS)
        return 0
    load = "%.2f %.2f %.2f" % os.getloadavg()
    rows = []
    with real.mounted():
        for lang, (program, tool, arg, want, small, short_name) in POOLS.items():
            if args.only and lang not in args.only:
                continue
            manifest = real.manifest(program)
            if manifest is None:
                print("bursts: %s skipped: %s is not compiled (make test-real compiles it)" % (lang, program))
                continue
            env = real.env()
            pool_min = ["--pool-min", "%s=8" % short_name]
            servers = [("morloc-mcp", real.argv(args.binary, manifest, []), env),
                       ("morloc-mcp " + " ".join(pool_min), real.argv(args.binary, manifest, pool_min), env)]
            if lang == "R":
                # R compiles a closure on its second call (its JIT), in every
                # process: the same servers with R's JIT off show that cost.
                no_jit = {"R_ENABLE_JIT": "0"}
                servers.append(("morloc-mcp %s, R_ENABLE_JIT=0" % " ".join(pool_min),
                                real.argv(args.binary, manifest, pool_min, no_jit), real.env(no_jit)))
            if args.before:
                servers.append(("morloc-mcp before", real.argv(args.before, manifest, []), env))
            ref = real.reference_argv(manifest)
            if ref is not None:
                servers.append(("morloc-nexus", ref, env))
            if args.server:
                servers = [s for s in servers if any(want in s[0] for want in args.server)]
            got = {name: ([], []) for name, _, _ in servers}
            for trial in range(args.trials):
                for name, server_argv, server_env in servers:
                    log = None
                    if args.log and name.startswith("morloc-mcp"):
                        os.makedirs(args.log, exist_ok=True)
                        log = os.path.join(args.log, "%s-%s-%d.log" % (
                            short_name, name.replace(" ", "_").replace("=", ""), trial))
                        server_argv = server_argv + ["--log-level", "debug"]
                    server = Server(server_argv, server_env, log)
                    try:
                        if not args.cold:
                            server.call(small[0], small[1], small[2])
                        rounds = [server.burst(tool, {"_1": arg}, want, BURST)]
                        for _ in range(args.rounds):
                            rounds.append(server.burst(tool, {"_1": arg}, want, BURST))
                        got[name][0].append(rounds[0])
                        got[name][1].extend(rounds[1:])
                        if args.log:
                            print("%s, %s, trial %d: %s (load %.2f)%s" % (
                                lang, name, trial, " ".join("%.2f" % r for r in rounds), os.getloadavg()[0],
                                " " + log if log else ""), flush=True)
                    finally:
                        server.close()
            for name, _, _ in servers:
                first, later = got[name]
                print("%s, %s: first round %s s, later rounds %s s" % (lang, name, spread(first), spread(later)),
                      flush=True)
                rows.append((lang, name, first, later))
    begin, end = (BEGIN_COLD, END_COLD) if args.cold else (BEGIN, END)
    write_section(args.out, begin, end, render(rows, args.trials, args.rounds, load, args.cold, begin, end))
    print("bursts: wrote %s" % os.path.relpath(args.out, ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
