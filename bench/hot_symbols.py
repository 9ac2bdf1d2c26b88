#!/usr/bin/env python3
"""Writes link/hot-symbols.txt: the functions of the release binary that a
start-up and the first requests run, which build.rs has the LLVM linker
place together (see build.rs for why: the idle server's peak RSS).

    python3 bench/hot_symbols.py [--check]

Needs ld.lld and valgrind. Steps: the release build exactly as `cargo
build --release` makes it (the names' hashes depend on the profile, `strip`
included), with the linker's map; that binary started under callgrind
(`--dump-instr=yes`) for two pure programs and the bundled example (with
its pool) over stdio (initialize, ping, tools/list) and over HTTP
(initialize, /health); every instruction address
it ran is looked up in the map, and each function met is listed once.
`--check` says how many of the listed names the current build still has,
and writes nothing.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORDER = ROOT / "link" / "hot-symbols.txt"
# Two pure programs, and the bundled example, whose pool start-up code an idle
# server with pools has run too.
PROGRAMS = [ROOT / "tests" / "data" / "tools" / "geo", ROOT / "bench" / "data" / "nopool",
            ROOT / "examples" / "shapes"]


def build(map_file: Path) -> None:
    env = {**os.environ, "MORLOC_MCP_LINK_MAP": str(map_file)}
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, env=env, check=True)
    if not map_file.is_file():
        sys.exit("hot_symbols: the build wrote no link map (is ld.lld installed?)")


def symbols(map_file: Path) -> list[tuple[int, int, str]]:
    """(address, size, name) of the functions in an lld link map, sorted,
    read from their input sections (`.text.<name>`, one per function; the
    map's symbol column is demangled)."""
    rows: list[tuple[int, int, str]] = []
    section = re.compile(r":\(\.text\.(?:unlikely\.|hot\.|startup\.|exit\.)?([^)\s]+)\)$")
    for line in map_file.read_text(errors="replace").splitlines():
        m = section.search(line)
        if m:
            parts = line.split()
            rows.append((int(parts[0], 16), int(parts[2], 16), m.group(1)))
    rows.sort()
    return rows


def stdio_run(argv: list[str], program: Path) -> None:
    proc = subprocess.Popen([*argv, "mcp", str(program)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin and proc.stdout
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "hot", "version": "1"}}}
    for message in (init, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                    {"jsonrpc": "2.0", "id": 2, "method": "ping"},
                    {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}):
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()
        if "id" in message:
            proc.stdout.readline()
    proc.stdin.close()
    proc.wait(timeout=120)


def http_run(argv: list[str], program: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([*argv, "mcp", str(program), "--http-port", str(port)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "hot", "version": "1"}}}).encode()
        requests = [
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nContent-Length: "
            + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body,
            b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        ]
        for request in requests:
            for _ in range(600):
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=60) as conn:
                        conn.sendall(request)
                        while conn.recv(65536):
                            pass
                    break
                except OSError:
                    time.sleep(0.1)
    finally:
        proc.terminate()
        proc.wait(timeout=120)


def traced(out_dir: Path, binary: Path) -> list[Path]:
    outs = []
    for i, program in enumerate(PROGRAMS):
        for kind, run in (("stdio", stdio_run), ("http", http_run)):
            out = out_dir / f"cg.{kind}.{i}"
            argv = ["valgrind", "--tool=callgrind", "--quiet", "--dump-instr=yes", f"--callgrind-out-file={out}", str(binary)]
            run(argv, program)
            outs.append(out)
    return outs


def ran(outs: list[Path], binary: Path, rows: list[tuple[int, int, str]]) -> list[str]:
    """The functions of `binary` whose instructions callgrind saw run, in
    the order met. Its cost lines start with the instruction's address,
    absolute (`0x…`) or relative to the previous one (`+n`, `-n`, `*`)."""
    starts = [row[0] for row in rows]
    names: list[str] = []
    seen: set[str] = set()
    objects: dict[str, str] = {}
    for out in outs:
        current, position = "", 0
        for line in out.read_text(errors="replace").splitlines():
            m = re.match(r"^(c?ob)=\((\d+)\)(?: (.*))?$", line)
            if m:
                if m.group(3):
                    objects[m.group(2)] = m.group(3)
                if m.group(1) == "ob":
                    current = objects.get(m.group(2), "")
                continue
            token = line.split(maxsplit=1)[0] if line else ""
            if token.startswith("0x"):
                position = int(token, 16)
            elif token[:1] in ("+", "-") and token[1:].isdigit():
                position += int(token)
            elif token != "*":
                continue
            if current != str(binary):
                continue
            i = bisect.bisect_right(starts, position) - 1
            if i >= 0 and position < rows[i][0] + rows[i][1] and rows[i][2] not in seen:
                seen.add(rows[i][2])
                names.append(rows[i][2])
    return names


def main(argv: list[str]) -> int:
    if any(arg != "--check" for arg in argv):
        sys.exit("usage: python3 bench/hot_symbols.py [--check]")
    for tool in ("ld.lld", "valgrind"):
        if shutil.which(tool) is None:
            sys.exit(f"hot_symbols: {tool} is not installed")
    binary = ROOT / "target" / "release" / "morloc-mcp"
    with tempfile.TemporaryDirectory(prefix="hot-symbols-") as tmp:
        map_file = Path(tmp) / "morloc-mcp.map"
        build(map_file)
        rows = symbols(map_file)
        if "--check" in argv:
            listed = ORDER.read_text().split() if ORDER.is_file() else []
            have = {row[2] for row in rows}
            kept = sum(1 for n in listed if n in have)
            print(f"{kept} of {len(listed)} listed names are in this build")
            return 0
        order = ran(traced(Path(tmp), binary), binary, rows)
    ORDER.parent.mkdir(exist_ok=True)
    ORDER.write_text("".join(f"{name}\n" for name in order))
    size = sum(row[1] for row in rows if row[2] in set(order))
    print(f"hot_symbols: {len(order)} functions ({size} bytes of code) written to {ORDER.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
