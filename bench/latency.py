#!/usr/bin/env python3
"""What the server adds to one remote call, against a floor measured by a
compiled client.

    python3 bench/latency.py target/release/morloc-mcp [--reference NEXUS] [--runs N]
                             [--rounds N] [--out FILE]

A sequential `addOne 41` over stdio, and the same call packet sent straight
to the pool socket the server itself uses (the raw floor), are timed by one
small C client (bench/callfloor.c, built here with $CC or cc) in
alternating blocks: no Python on the timed path, and the two figures share
the pool, the client and the moment, so their difference is the server's
own share. For each server the script also reads the CPU time the server
process used per call (user + system, from /proc) over the timed calls.

Pools: the test pool (tests/pool/testpool.py) always; the real Morloc
Python pool serving the compiled `shapes` program when the real runtime and
programs are there (bench/programs.py says where it looks), else one line
says it was skipped. `--reference` adds a `morloc-nexus` binary (the
reference server, `morloc-nexus mcp`), measured the same way, in the same
rounds, interleaved with ours.

Beside them, bench/idealproxy.c (built the same way) serves the same
calls on the same pool socket with blocking reads and fixed bytes: the
least any stdio server adds (two pipe hops and wake-ups), so each server's
time over it is its own work.

Every reply is checked (the JSON text, and the raw reply byte for byte).
The section between the `latency` markers of bench/RESULTS.md is replaced
(or written to --out). No figure is asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import re
import shutil
import socket
import stat
import statistics
import struct
import subprocess
import sys
import tempfile
import time

from report import provenance, write_section
from programs import NEEDS, real_runtime, test_pool_manifest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WIRE = os.path.join(ROOT, "tests", "data", "wire")
BEGIN = "<!-- latency:begin -->"
END = "<!-- latency:end -->"
LINE = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"addOne","arguments":{"_1":41}}}'
EXPECT = '"text":"42"'
BLOCKS = 10


class Target:
    """One call to time: its request line, a substring of its answer, and
    the packet exchange with the pool (files) for the raw floor."""

    def __init__(self, line: str, expect: str, request: str, reply: str):
        self.line, self.expect, self.request, self.reply = line, expect, request, reply


ADD_ONE = Target(LINE, EXPECT, os.path.join(WIRE, "addOne.req.bin"), os.path.join(WIRE, "addOne.resp.bin"))


class Server:
    """A server on stdio, initialized, warmed, with its pool's socket found
    (`host` maps a path the server sees to the driver's)."""

    def __init__(self, argv: list[str], env: dict[str, str], target: Target = ADD_ONE, host=lambda p: p):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, bufsize=0)
        self.target = target
        self.rpc({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "latency-bench", "version": "1"}}})
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        for _ in range(200):
            line = self.rpc_line(target.line)
            if target.expect.encode() not in line:
                raise RuntimeError("the call answered %r" % line[:300])
        self.socket = pool_socket(self.proc.pid, host)

    def rpc_line(self, line: str) -> bytes:
        self.proc.stdin.write(line.encode() + b"\n")
        return self.read_line()

    def rpc(self, msg: dict) -> bytes:
        return self.rpc_line(json.dumps(msg))

    def read_line(self) -> bytes:
        out = b""
        while not out.endswith(b"\n"):
            chunk = self.proc.stdout.read(1)
            if not chunk:
                raise RuntimeError("the server closed its stdout")
            out += chunk
        return out

    def cpu_seconds(self) -> float:
        fields = open("/proc/%d/stat" % self.proc.pid).read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Proxy(Server):
    """bench/idealproxy.c on the pool socket of a running server: the least
    a stdio server can do for the call (no parsing, no encoding, blocking
    I/O), so its time over the raw floor is what the two extra hops cost."""

    def __init__(self, exe: str, socket_path: str, target: Target):
        line = '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text",%s}]}}' % target.expect
        self.proc = subprocess.Popen([exe, socket_path, target.request, line], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, bufsize=0)
        self.target = target
        self.socket = socket_path


def pool_socket(pid: int, host=lambda p: p) -> str:
    """The Unix socket named on the command line of one of `pid`'s children
    (a pool is started as `<exec> <socket> <tmpdir> <shm basename>`)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for task in os.listdir("/proc/%d/task" % pid):
            try:
                children = open("/proc/%d/task/%s/children" % (pid, task)).read().split()
            except OSError:
                continue
            for child in children:
                try:
                    argv = open("/proc/%s/cmdline" % child, "rb").read().split(b"\0")
                except OSError:
                    continue
                for arg in argv:
                    path = arg.decode(errors="replace")
                    if not path.startswith("/"):
                        continue
                    path = host(path)
                    try:
                        if stat.S_ISSOCK(os.stat(path).st_mode):
                            return path
                    except OSError:
                        pass
        time.sleep(0.05)
    raise RuntimeError("no pool socket found among the children of pid %d" % pid)


def build_client(directory: str, name: str = "callfloor") -> str | None:
    """bench/<name>.c built into `directory` (None without a C compiler)."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    exe = os.path.join(directory, name)
    subprocess.run([cc, "-O2", "-o", exe, os.path.join(ROOT, "bench", name + ".c")], check=True)
    return exe


def measure(client: str, server: Server, runs: int) -> tuple[list[int], list[int], float]:
    """One round: `runs` calls of each kind; returns both samples (ns) and
    the server's CPU seconds per call."""
    in_fd, out_fd = server.proc.stdin.fileno(), server.proc.stdout.fileno()
    cpu0 = server.cpu_seconds()
    t = server.target
    done = subprocess.run(
        [client, str(in_fd), str(out_fd), server.socket, t.request, t.reply, t.line, t.expect,
         str(runs), str(BLOCKS)],
        pass_fds=(in_fd, out_fd), capture_output=True, text=True)
    cpu = server.cpu_seconds() - cpu0
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip())
    lines = dict(line.split(" ", 1) for line in done.stdout.strip().split("\n"))
    return ([int(x) for x in lines["server"].split()], [int(x) for x in lines["raw"].split()],
            cpu / runs)


HEADER_LEN = 32


def measure_python(server: Server, runs: int) -> tuple[list[int], list[int], float]:
    """The same round with the client in Python (how the figures in the
    issue tracker were taken): the server through its pipes, the floor with
    a socket per call."""
    t = server.target
    with open(t.request, "rb") as f:
        request = f.read()
    with open(t.reply, "rb") as f:
        expected = f.read()
    line = t.line.encode() + b"\n"
    want = t.expect.encode()
    stdin, stdout = server.proc.stdin.fileno(), server.proc.stdout.fileno()
    pending = b""

    def call() -> None:
        nonlocal pending
        os.write(stdin, line)
        while b"\n" not in pending:
            chunk = os.read(stdout, 65536)
            if not chunk:
                raise RuntimeError("the server closed its stdout")
            pending += chunk
        reply, _, pending = pending.partition(b"\n")
        if want not in reply:
            raise RuntimeError("addOne answered %r" % reply[:300])

    def raw() -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(server.socket)
            sock.sendall(request)
            data = b""
            need = HEADER_LEN
            while len(data) < need:
                chunk = sock.recv(65536)
                if not chunk:
                    raise RuntimeError("the pool closed the connection early")
                data += chunk
                if len(data) >= HEADER_LEN:
                    offset, length = struct.unpack_from("<IQ", data, 20)
                    need = HEADER_LEN + offset + length
        finally:
            sock.close()
        if data != expected:
            raise RuntimeError("the pool's reply differs from addOne.resp.bin")

    calls, floors = [], []
    clock = time.perf_counter_ns
    cpu0 = server.cpu_seconds()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        per = runs // BLOCKS
        for _ in range(BLOCKS):
            for _ in range(per):
                t = clock()
                call()
                calls.append(clock() - t)
            for _ in range(per):
                t = clock()
                raw()
                floors.append(clock() - t)
    finally:
        if was_enabled:
            gc.enable()
    return calls, floors, (server.cpu_seconds() - cpu0) / (per * BLOCKS)


def pct(values: list[int], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def render(rows, runs: int, rounds: int, binary: str, reference: str | None) -> str:
    lines = [BEGIN, "", "## One remote call, against the raw floor (`bench/latency.py`)", "",
             "Sequential `addOne 41` over stdio (legacy session), and the same call packet sent straight "
             "to the same pool socket (raw floor), timed in %d alternating blocks by the compiled client "
             "`bench/callfloor.c` (C) and by the same exchange written in Python (how the issue tracker's "
             "figures were taken: the client's own costs then weigh on both sides); %d calls of each kind "
             "per round, %d rounds, servers taking turns round by round. "
             "Medians in ms, p10-p90 beside them; *added* is the median call minus the median floor, per "
             "round, then the median over rounds; *CPU* is the server process's user + system time over "
             "all rounds divided by the calls (it includes what the server does after answering, such as "
             "closing the connection). %s" % (BLOCKS, runs, rounds, provenance()), "",
             "| pool | client | server | call | raw floor | added | CPU per call |",
             "|---|---|---|---|---|---|---|"]
    for pool, kind, name, calls, floors, added, cpus in rows:
        lines.append("| %s | %s | %s | %.4f (%.4f-%.4f) | %.4f (%.4f-%.4f) | %.4f | %.1f µs |" % (
            pool, kind, name, statistics.median(calls) / 1e6, pct(calls, .1) / 1e6, pct(calls, .9) / 1e6,
            statistics.median(floors) / 1e6, pct(floors, .1) / 1e6, pct(floors, .9) / 1e6,
            statistics.median(added) / 1e6, statistics.mean(cpus) * 1e6))
    by_pool: dict[tuple[str, str], dict[str, list[float]]] = {}
    totals: dict[tuple[str, str], dict[str, list[int]]] = {}
    for pool, kind, name, calls, _, added, _ in rows:
        by_pool.setdefault((pool, kind), {})[name] = added
        totals.setdefault((pool, kind), {})[name] = calls
    for (pool, kind), names in by_pool.items():
        if "ideal proxy" in names:
            ideal = statistics.median(names["ideal proxy"])
            said = ", ".join("%s %.4f ms (%.4f over it)" % (n, statistics.median(a) / 1e6,
                                                           (statistics.median(a) - ideal) / 1e6)
                             for n, a in names.items() if n != "ideal proxy")
            lines.append("")
            lines.append("%s, %s client: the least a stdio server adds (ideal proxy, bench/idealproxy.c: "
                         "two pipe hops and wake-ups, nothing else) %.4f ms; added by %s." % (
                             pool, kind, ideal / 1e6, said))
            if "morloc-nexus" in names:
                lines[-1] += " Half the reference's added latency is %.4f ms, %s the ideal proxy's." % (
                    statistics.median(names["morloc-nexus"]) / 2e6,
                    "below" if statistics.median(names["morloc-nexus"]) / 2 < ideal else "above")
        if "morloc-mcp" in names and "morloc-nexus" in names:
            ours, ref = names["morloc-mcp"], names["morloc-nexus"]
            paired = sorted(a / b for a, b in zip(ours, ref) if b > 0)
            lines.append("")
            lines.append("%s, %s client: added latency, morloc-mcp / morloc-nexus = %.2f (medians over rounds); "
                         "per round, side by side: median %.2f, p25-p75 %.2f-%.2f; the whole call, "
                         "morloc-mcp / morloc-nexus = %.2f (medians of all calls)." % (
                             pool, kind, statistics.median(ours) / statistics.median(ref),
                             statistics.median(paired), paired[len(paired) // 4],
                             paired[3 * len(paired) // 4],
                             statistics.median(totals[(pool, kind)]["morloc-mcp"])
                             / statistics.median(totals[(pool, kind)]["morloc-nexus"])))
    lines += ["", END, ""]
    return "\n".join(lines)


# The real programs timed: pool label, program, request line, answer.
REAL_CALLS = [
    ("real Python pool", "workbench", LINE, EXPECT),
    ("real C++ pool", "cppbench",
     '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sumInts","arguments":{"_1":[1,2,3]}}}',
     '"text":"6"'),
    ("real R pool", "rbench",
     '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sumInts","arguments":{"_1":[1,2,3]}}}',
     '"text":"6"'),
]

MAGIC = bytes.fromhex("6df80707")


def capture(argv: list[str], env: dict[str, str], line: str, expect: str, host, directory: str,
            name: str) -> Target | None:
    """The packet a server sends its pool for `line`, and the pool's reply,
    read off the server with strace(1) during one call (None without
    strace). The floor then sends the same bytes straight to the pool."""
    if shutil.which("strace") is None:
        return None
    server = Server(argv, env, Target(line, expect, "", ""), host)
    log = os.path.join(directory, name + ".strace")
    try:
        tracer = subprocess.Popen(["strace", "-f", "-qq", "-xx", "-s", "16777216", "-o", log, "-p",
                                   str(server.proc.pid), "-e",
                                   "trace=write,writev,sendto,sendmsg,read,readv,recvfrom,recvmsg"])
        time.sleep(1.0)  # attached
        for _ in range(3):
            server.rpc_line(line)
        time.sleep(0.3)
        tracer.terminate()
        tracer.wait()
    finally:
        server.close()
    request = reply = None
    fd = None
    pending = b""
    with open(log, encoding="utf-8", errors="replace") as f:
        for entry in f:
            call = re.search(r"(write|writev|sendto|sendmsg|read|readv|recvfrom|recvmsg)\((\d+), ", entry)
            if not call:
                continue
            data = b"".join(bytes.fromhex(g.replace("\\x", "")) for g in re.findall(r'"((?:\\x[0-9a-f]{2})*)"', entry))
            kind, this = call.group(1), int(call.group(2))
            if request is None and kind in ("write", "writev", "sendto", "sendmsg") and data.startswith(MAGIC):
                request, fd = data, this
            elif request is not None and this == fd and kind in ("read", "readv", "recvfrom", "recvmsg"):
                pending += data
                if len(pending) >= 32:
                    offset, length = struct.unpack_from("<IQ", pending, 20)
                    if len(pending) >= 32 + offset + length:
                        reply = pending[:32 + offset + length]
                        break
    if request is None or reply is None:
        raise RuntimeError("no pool exchange seen in %s" % log)
    paths = os.path.join(directory, name + ".req.bin"), os.path.join(directory, name + ".resp.bin")
    for path, data in zip(paths, (request, reply)):
        with open(path, "wb") as f:
            f.write(data)
    return Target(line, expect, *paths)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="What the server adds to one remote call.")
    parser.add_argument("binary")
    parser.add_argument("--reference", help="a morloc-nexus binary, measured the same way (default: the one "
                        "installed with the real runtime)")
    parser.add_argument("--runs", type=int, default=1000, help="calls of each kind per round")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--only", action="append", default=[], help="a pool label (e.g. 'real R pool')")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    args = parser.parse_args(argv)
    if args.runs < BLOCKS or args.rounds < 1:
        parser.error("--runs must be at least %d and --rounds at least 1" % BLOCKS)
    runs, rounds, out = args.runs, args.rounds, args.out
    reference = os.path.abspath(args.reference) if args.reference else None
    binary = os.path.abspath(args.binary)
    tmp = tempfile.TemporaryDirectory()
    client = build_client(tmp.name)
    if client is None:
        print("latency: skipped: no C compiler (cc, gcc or $CC) to build bench/callfloor.c")
        return 0
    proxy = build_client(tmp.name, "idealproxy")
    # Each pool: label, the servers (name, argv), environment, target, host-path map.
    pools = []
    test_manifest = test_pool_manifest(tmp.name)
    servers = [("morloc-mcp", [binary, "mcp", test_manifest, "--pool-replicas", "py=1"])]
    if reference is not None:
        servers.append(("morloc-nexus", [reference, "mcp", test_manifest]))
    pools.append(("test pool", servers, dict(os.environ), ADD_ONE, lambda p: p))
    real = real_runtime()
    if real is None:
        print(f"latency: real pools skipped: {NEEDS}")
    mounts = real.mounted() if real is not None else contextlib.nullcontext()
    rows = []
    with mounts:
        for label, program, line, expect in REAL_CALLS if real is not None else []:
            manifest = real.manifest(program)
            if manifest is None or (args.only and label not in args.only):
                if manifest is None:
                    print("latency: %s skipped: %s is not compiled (make test-real compiles it)" % (label, program))
                continue
            ours = real.argv(binary, manifest, ["--pool-replicas", "py=1", "--pool-replicas", "r=1",
                                                "--pool-replicas", "cpp=1"])
            target = capture(ours, real.env(), line, expect, real.place.host, tmp.name, program)
            if target is None:
                print("latency: %s skipped: no strace to read the pool packets with" % label)
                continue
            servers = [("morloc-mcp", ours)]
            ref = real.reference_argv(manifest)
            if ref is not None:
                servers.append(("morloc-nexus", ref))
            pools.append((label, servers, real.env(), target, real.place.host))
        for pool, servers, pool_env, target, host in pools:
            if args.only and pool not in args.only:
                continue
            started = [(name, Server(server_argv, pool_env, target, host)) for name, server_argv in servers]
            if proxy is not None:
                # On the pool our server started (the same process as its floor).
                started.insert(1, ("ideal proxy", Proxy(proxy, started[0][1].socket, target)))
            try:
                kinds = (("C", lambda server: measure(client, server, runs)),
                         ("Python", lambda server: measure_python(server, runs)))
                samples = {(kind, name): ([], [], [], []) for kind, _ in kinds for name, _ in started}
                for _ in range(rounds):
                    for kind, run in kinds:
                        for name, server in started:
                            calls, floors, cpu = run(server)
                            acc = samples[(kind, name)]
                            acc[0].extend(calls)
                            acc[1].extend(floors)
                            acc[2].append(statistics.median(calls) - statistics.median(floors))
                            acc[3].append(cpu)
                for kind, _ in kinds:
                    for name, _ in started:
                        calls, floors, added, cpus = samples[(kind, name)]
                        print("%s, %s client, %s: call %.4f ms, floor %.4f ms, added %.4f ms, CPU %.1f us/call" % (
                            pool, kind, name, statistics.median(calls) / 1e6, statistics.median(floors) / 1e6,
                            statistics.median(added) / 1e6, statistics.mean(cpus) * 1e6), flush=True)
                        rows.append((pool, kind, name, calls, floors, added, cpus))
            finally:
                for _, server in started:
                    server.close()
    section = render(rows, runs, rounds, binary, reference)
    write_section(out, BEGIN, END, section)
    print("latency: wrote %s" % os.path.relpath(out, ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
