#!/usr/bin/env python3
"""Instructions the server executes per remote call, counted by callgrind.

    python3 bench/callgrind.py target/release/morloc-mcp [--calls N] [--top K]

Wall-clock figures swing with the load on the machine; an instruction count
does not. The server runs under `valgrind --tool=callgrind` (its pools do
not: valgrind does not follow `exec`) serving the `shapes` manifest with
the test pool (tests/pool/testpool.py) and `--pool-replicas py=1`. One
legacy stdio session makes sequential `addOne 41` calls, each reply checked.
Two sessions are run, one with 100 calls and one with 100 + N; the
difference of their totals divided by N is the count per call, so start-up
and shutdown cancel out. The K functions with the most instructions
(inclusive of nothing: self cost) in the longer session are listed, with
their share of its per-call difference.

Function names need a binary with symbols (the release profile strips
them): `CARGO_PROFILE_RELEASE_STRIP=false cargo build --release
--target-dir /tmp/sym`; the counts are the same. Needs valgrind (and
callgrind_annotate, which comes with it); without it, one line says so and
the script exits 0. No figure is asserted.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

from programs import test_pool_manifest

LINE = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"addOne","arguments":{"_1":41}}}\n'
EXPECT = b'"text":"42"'
BASE = 100


def session(binary: str, manifest: str, calls: int, out: str) -> None:
    """One server under callgrind, `calls` sequential addOne calls, then EOF."""
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
            binary, "mcp", manifest, "--pool-replicas", "py=1"]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, bufsize=0)
    try:
        proc.stdin.write(b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":'
                         b'"2025-06-18","capabilities":{},"clientInfo":{"name":"callgrind","version":"1"}}}\n')
        proc.stdout.readline()
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        for i in range(calls):
            proc.stdin.write(LINE % (i + 1))
            reply = proc.stdout.readline()
            if EXPECT not in reply:
                raise RuntimeError("addOne answered %r" % reply[:300])
        proc.stdin.close()
        if proc.wait(timeout=120) != 0:
            raise RuntimeError("the server exited with status %d" % proc.returncode)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def per_function(path: str) -> dict[str, int]:
    """Self instruction counts by function, from callgrind_annotate."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", path],
                          capture_output=True, text=True, check=True).stdout
    counts: dict[str, int] = {}
    for line in text.splitlines():
        m = re.match(r"^\s*([\d,]+)\s+\([^)]*\)\s+[^:\s]*:(.*?)(?: \[[^]]*\])?$", line)
        if m:
            name = m.group(2).strip()
            counts[name] = counts.get(name, 0) + int(m.group(1).replace(",", ""))
    return counts


def total(path: str) -> int:
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError("no total in " + path)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("binary")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None or shutil.which("callgrind_annotate") is None:
        print("callgrind: skipped, valgrind is not installed")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        manifest = test_pool_manifest(tmp)
        short, long = os.path.join(tmp, "short.out"), os.path.join(tmp, "long.out")
        session(args.binary, manifest, BASE, short)
        session(args.binary, manifest, BASE + args.calls, long)
        per_call = (total(long) - total(short)) / args.calls
        print("instructions per sequential addOne call (test pool, stdio): %.0f" % per_call)
        print("  (%d-call session %d, %d-call session %d)" % (BASE, total(short), BASE + args.calls, total(long)))
        before, after = per_function(short), per_function(long)
        diffs = sorted(((after.get(k, 0) - before.get(k, 0), k) for k in after), reverse=True)
        print("top functions by self instructions per call:")
        for diff, name in diffs[:args.top]:
            print("  %8.0f  %5.1f %%  %s" % (diff / args.calls, 100 * diff / args.calls / per_call, name[:140]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
