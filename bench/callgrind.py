#!/usr/bin/env python3
"""Instructions the server executes per remote call, counted by callgrind.

    python3 bench/callgrind.py target/release/morloc-mcp [--calls N] [--top K]
    python3 bench/callgrind.py BIN --mode http-legacy   # or stdio-modern, http-modern
    python3 bench/callgrind.py BIN --inclusive --keep DIR   # with callees; profiles kept

Wall-clock figures swing with the load on the machine; an instruction count
does not. The server runs under `valgrind --tool=callgrind` (its pools do
not: valgrind does not follow `exec`) serving the `shapes` manifest with
the test pool (tests/pool/testpool.py) and `--pool-replicas py=1`. One
legacy stdio session makes sequential `addOne 41` calls, each reply checked
(`--mode`: a modern (2026-07-28) stdio client, or one keep-alive HTTP
connection with a legacy session or modern requests, `--http-port 0`).
Besides instructions, the calls to `malloc` (and `calloc`, `realloc`) per
call are counted from the same profiles.
Two sessions are run, one with 100 calls and one with 100 + N; the
difference of their totals divided by N is the count per call, so start-up
and shutdown cancel out. The K functions with the most instructions
(self cost; with `--inclusive`, with their callees') in the longer session
are listed, with their share of its per-call difference.

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

import socket

from programs import test_pool_manifest

LINE = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":{"_1":41}}}'
MODERN_LINE = (b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":{"_1":41},'
               b'"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
               b'"io.modelcontextprotocol/clientInfo":{"name":"callgrind","version":"1"},'
               b'"io.modelcontextprotocol/clientCapabilities":{}}}}')
INIT = (b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":'
        b'"2025-06-18","capabilities":{},"clientInfo":{"name":"callgrind","version":"1"}}}')
EXPECT = b'"text":"42"'
BASE = 100
MODES = ("stdio-legacy", "stdio-modern", "http-legacy", "http-modern")


def session(binary: str, manifest: str, calls: int, out: str, mode: str = "stdio-legacy") -> None:
    """One server under callgrind, `calls` sequential addOne calls, then EOF."""
    if mode.startswith("http"):
        return http_session(binary, manifest, calls, out, mode == "http-modern")
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
            binary, "mcp", manifest, "--pool-replicas", "py=1"]
    line = MODERN_LINE if mode == "stdio-modern" else LINE
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, bufsize=0)
    try:
        if line is LINE:
            proc.stdin.write(INIT + b"\n")
            proc.stdout.readline()
            proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        for i in range(calls):
            proc.stdin.write(line % (i + 1, b"addOne") + b"\n")
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


class Http:
    """One keep-alive connection to the server: POST /mcp, read the answer."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.headers: list[str] = []

    def post(self, body: bytes, extra: list[str]) -> tuple[dict[str, str], bytes]:
        head = ["POST /mcp HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json",
                "Accept: application/json, text/event-stream",
                "Content-Length: %d" % len(body)] + self.headers + extra
        self.sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        while b"\r\n\r\n" not in self.buf:
            self.fill()
        raw, _, self.buf = self.buf.partition(b"\r\n\r\n")
        fields = {}
        for line in raw.decode("latin-1").split("\r\n")[1:]:
            key, _, value = line.partition(":")
            fields[key.strip().lower()] = value.strip()
        length = int(fields.get("content-length", "0"))
        while len(self.buf) < length:
            self.fill()
        payload, self.buf = self.buf[:length], self.buf[length:]
        return fields, payload

    def fill(self) -> None:
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise RuntimeError("the server closed the connection")
        self.buf += chunk


def http_session(binary: str, manifest: str, calls: int, out: str, modern: bool) -> None:
    """[`session`] over HTTP: one keep-alive connection, a legacy session
    (or modern requests), then SIGTERM twice (drain, then stop)."""
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
            binary, "mcp", manifest, "--pool-replicas", "py=1",
            "--http-port", "0", "--http-host", "127.0.0.1"]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, bufsize=0)
    try:
        port = None
        for raw in proc.stderr:
            m = re.search(rb"http://[^/:\s]+:(\d+)", raw)
            if m:
                port = int(m.group(1))
                break
        if port is None:
            raise RuntimeError("the server did not say where it listens")
        # Keep reading stderr so the server never blocks on it.
        import threading
        threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
        client = Http(port)
        if modern:
            extra = ["MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call"]
            listed = client.post(b'{"jsonrpc":"2.0","id":0,"method":"tools/list","params":{"_meta":'
                                 b'{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
                                 b'"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},'
                                 b'"io.modelcontextprotocol/clientCapabilities":{}}}}',
                                 ["MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/list"])[1]
        else:
            extra = []
            fields, _ = client.post(INIT, ["MCP-Protocol-Version: 2025-06-18"])
            client.headers = ["MCP-Protocol-Version: 2025-06-18",
                              "Mcp-Session-Id: " + fields["mcp-session-id"]]
            client.post(b'{"jsonrpc":"2.0","method":"notifications/initialized"}', [])
            listed = client.post(b'{"jsonrpc":"2.0","id":0,"method":"tools/list"}', [])[1]
        name = re.search(rb'"name":"([^"]*addOne)"', listed).group(1)
        line = MODERN_LINE if modern else LINE
        for i in range(calls):
            _, reply = client.post(line % (i + 1, name), extra + (["Mcp-Name: " + name.decode()] if modern else []))
            if EXPECT not in reply:
                raise RuntimeError("addOne answered %r" % reply[:300])
        client.sock.close()
        proc.send_signal(15)
        proc.send_signal(15)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def mallocs(path: str) -> int:
    """Calls to the C library's allocation functions in a profile (their
    call counts, summed over every caller)."""
    calls = 0
    callee = None
    names: dict[str, str] = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith(("fn=", "cfn=")):
                # Names are compressed: `(id) name` the first time, `(id)` after.
                m = re.match(r"c?fn=(\(\d+\))?\s*(.*)", line.rstrip("\n"))
                key, name = m.group(1), m.group(2)
                if key and name:
                    names[key] = name
                name = name or names.get(key, "")
                if line.startswith("cfn="):
                    callee = name
            elif line.startswith("calls=") and callee is not None:
                if callee in ("malloc", "calloc", "realloc"):
                    calls += int(line[6:].split()[0])
    return calls


def per_function(path: str, inclusive: bool = False) -> dict[str, int]:
    """Self (or inclusive) instruction counts by function, from
    callgrind_annotate."""
    flag = "--inclusive=yes" if inclusive else "--inclusive=no"
    text = subprocess.run(["callgrind_annotate", flag, "--threshold=100", path],
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
    parser.add_argument("--mode", choices=MODES, default=MODES[0])
    parser.add_argument("--inclusive", action="store_true",
                        help="rank functions by inclusive cost (what they and their callees run)")
    parser.add_argument("--keep", metavar="DIR",
                        help="copy the two profiles there (for callgrind_annotate --tree=caller)")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None or shutil.which("callgrind_annotate") is None:
        print("callgrind: skipped, valgrind is not installed")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        manifest = test_pool_manifest(tmp)
        short, long = os.path.join(tmp, "short.out"), os.path.join(tmp, "long.out")
        session(args.binary, manifest, BASE, short, args.mode)
        session(args.binary, manifest, BASE + args.calls, long, args.mode)
        if args.keep:
            os.makedirs(args.keep, exist_ok=True)
            for path in (short, long):
                shutil.copy(path, os.path.join(args.keep, args.mode + "-" + os.path.basename(path)))
        per_call = (total(long) - total(short)) / args.calls
        print("instructions per sequential addOne call (test pool, %s): %.0f" % (args.mode, per_call))
        print("  (%d-call session %d, %d-call session %d)" % (BASE, total(short), BASE + args.calls, total(long)))
        print("allocations per call: %.1f" % ((mallocs(long) - mallocs(short)) / args.calls))
        before = per_function(short, args.inclusive)
        after = per_function(long, args.inclusive)
        diffs = sorted(((after.get(k, 0) - before.get(k, 0), k) for k in after), reverse=True)
        kind = "inclusive" if args.inclusive else "self"
        print("top functions by %s instructions per call:" % kind)
        for diff, name in diffs[:args.top]:
            print("  %8.0f  %5.1f %%  %s" % (diff / args.calls, 100 * diff / args.calls / per_call, name[:140]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
