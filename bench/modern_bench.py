#!/usr/bin/env python3
"""MCP 2026-07-28 (stateless) against the legacy path: one `tools/call` round trip.

Usage:

    python3 bench/modern_bench.py <path-to-morloc-mcp> [--quick] [--out FILE]

Measures, from the outside like bench/run.py (whose helpers it uses), the
latency of one sequential `tools/call` (remote `addOne` in the test pool, and
the in-process `pureAnswer`) over stdio and over keep-alive HTTP, once as a
legacy client (after `initialize`, with a session over HTTP) and once as a
modern one (no handshake, no session: every request carries its `_meta`, and
over HTTP the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers).
The section between the `modern-bench` markers of bench/RESULTS.md is
replaced with the table (or written to --out). No timing is asserted.
"""

from __future__ import annotations

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402
from run import (SHAPES, BenchError, HttpClient, Sample, Server, check_ok, fmt_ms,  # noqa: E402
                 quiet_gc, start_http)
from report import write_section  # noqa: E402

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}}
BEGIN = "<!-- modern-bench:begin -->"
END = "<!-- modern-bench:end -->"


def legacy_call(request_id: int, name: str, arguments: dict) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments}},
                      separators=(",", ":")).encode()


def modern_call(request_id: int, name: str, arguments: dict) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments, "_meta": META}},
                      separators=(",", ":")).encode()


def check_modern(line: bytes, request_id: int, expected: bytes) -> None:
    check_ok(line, request_id, expected)
    if b'"resultType":"complete"' not in line:
        raise BenchError(f"modern reply without resultType: {line[:300]!r}")


def stdio_sample(binary: str, modern: bool, name: str, arguments: dict, runs: int,
                 warmup: int) -> Sample:
    server = Server(binary, SHAPES)
    try:
        if not modern:
            server.handshake()
        make = modern_call if modern else legacy_call
        check = check_modern if modern else check_ok
        times = []
        with quiet_gc():
            for k in range(warmup + runs):
                request_id = server.take_id()
                line = make(request_id, name, arguments) + b"\n"
                t0 = time.perf_counter_ns()
                server.write(line)
                reply = server.readline()
                t1 = time.perf_counter_ns()
                check(reply, request_id, b'"text":"42"')
                if k >= warmup:
                    times.append(t1 - t0)
        server.close()
        return Sample(times)
    finally:
        server.kill()


class ModernHttpClient(HttpClient):
    """POSTs with the modern headers and no session."""

    def post_modern(self, body: bytes, name: str) -> tuple[int, dict[str, str], bytes]:
        headers = ["POST /mcp HTTP/1.1", f"Host: {self.host}",
                   "Content-Type: application/json",
                   "Accept: application/json, text/event-stream",
                   f"MCP-Protocol-Version: {MODERN}", "Mcp-Method: tools/call",
                   f"Mcp-Name: {name}", f"Content-Length: {len(body)}"]
        self.sock.sendall(("\r\n".join(headers) + "\r\n\r\n").encode() + body)
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        fields = {}
        for line in lines[1:]:
            key, _, value = line.partition(":")
            fields[key.strip().lower()] = value.strip()
        length = int(fields.get("content-length", "0"))
        while len(self.buf) < length:
            self._fill()
        payload, self.buf = self.buf[:length], self.buf[length:]
        return status, fields, payload


def http_samples(binary: str, runs: int, warmup: int) -> dict[tuple[str, str], Sample]:
    started = start_http(binary, SHAPES)
    if isinstance(started, str):
        raise BenchError(started)
    proc, host, port = started
    out: dict[tuple[str, str], Sample] = {}
    try:
        legacy = ModernHttpClient(host, port)
        status, fields, _ = legacy.post(run.INIT_LINE.strip())
        if status != 200:
            raise BenchError(f"HTTP initialize: status {status}")
        legacy.session = fields["mcp-session-id"]
        legacy.post(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        modern = ModernHttpClient(host, port)
        for tool in ("addOne", "pureAnswer"):
            name = f"main__{tool}"
            arguments = {"_1": 41} if tool == "addOne" else {}
            for era in ("legacy", "modern"):
                times = []
                with quiet_gc():
                    for k in range(warmup + runs):
                        request_id = 1000 + k
                        if era == "legacy":
                            body = legacy_call(request_id, name, arguments)
                            t0 = time.perf_counter_ns()
                            status, _, reply = legacy.post(body)
                        else:
                            body = modern_call(request_id, name, arguments)
                            t0 = time.perf_counter_ns()
                            status, _, reply = modern.post_modern(body, name)
                        t1 = time.perf_counter_ns()
                        if status != 200:
                            raise BenchError(f"HTTP {era} {name}: status {status} {reply[:200]!r}")
                        (check_modern if era == "modern" else check_ok)(reply, request_id, b'"text":"42"')
                        if k >= warmup:
                            times.append(t1 - t0)
                out[(tool, era)] = Sample(times)
        legacy.close()
        modern.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return out


def render(rows: list[tuple[str, str, str, Sample]], binary: str, runs: int) -> str:
    lines = [BEGIN, "", "## MCP 2026-07-28 (stateless) against the legacy path", "",
             f"`python3 bench/modern_bench.py {run.display_path(binary)}`, {runs} sequential calls per row "
             f"(one in flight), {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
             f"{run.load_average()}. Modern requests need no handshake and no session: each carries its "
             "`_meta` (and over HTTP the mirrored headers, which the server checks), and each result "
             "carries `resultType` and the server identity.", "",
             "| transport | tool | era | median | p90 | p99 |", "|---|---|---|---|---|---|"]
    for transport, tool, era, sample in rows:
        lines.append(f"| {transport} | `{tool}` | {era} | {fmt_ms(sample.median)} ms | "
                     f"{fmt_ms(sample.percentile(90))} ms | {fmt_ms(sample.percentile(99))} ms |")
    lines += ["", END]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    binary = os.path.abspath(argv[0])
    quick = "--quick" in argv
    out = argv[argv.index("--out") + 1] if "--out" in argv else os.path.join(run.BENCH_DIR, "RESULTS.md")
    runs, warmup = (100, 20) if quick else (2000, 300)
    rows = []
    for tool, arguments in (("addOne", {"_1": 41}), ("pureAnswer", {})):
        for era in ("legacy", "modern"):
            rows.append(("stdio", tool, era, stdio_sample(binary, era == "modern", tool, arguments,
                                                         runs, warmup)))
    for (tool, era), sample in http_samples(binary, runs, warmup).items():
        rows.append(("HTTP keep-alive", tool, era, sample))
    section = render(rows, binary, runs)
    print(section)
    write_section(out, BEGIN, END, section)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
