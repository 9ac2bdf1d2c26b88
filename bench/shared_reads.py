#!/usr/bin/env python3
"""Many clients reading one big stored result at once, over HTTP: the
server's peak memory and the time until every client has its answer.

    python3 bench/shared_reads.py BIN [BIN2 ...] [--readers 60] [--chars 8000000] [--rounds 3]

Serves the shapes program with the test pool over HTTP. `bigText` makes a
value of `--chars` characters (its JSON text `"xx…"`), then `--readers`
clients, each on its own loopback address (127.0.0.10 on, so no address's
bound on unread answers holds any back), send the same request at once,
wait until every request has been sent and the server has had a second to
answer, and then all read together. Three requests:

  task get      `--task-after 0`: the call became a task; `tasks/get` of
                the finished task (its result inlined: the value's text
                escaped, and raw again as `structuredContent`);
  page          `--max-result-chars 1000`: `resources/read` of the stored
                result as one page of every character (`?offset=0&limit=N`);
  read whole    the same, without a query.

Every server gets `--max-buffered 2g` so that no request is refused for the
answers already queued. Time: from the first request sent to the last answer
read whole; peak: the server's VmHWM at the end (its idle size and the
stored value included). Every answer is checked byte for byte against the
first and its value against the one made. Binaries given together run in
turns within each round (before/after on the same load). The load average
is printed with each row. No figure is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import http_bench  # noqa: E402
from paged_results import peak_rss  # noqa: E402
from programs import test_pool_manifest  # noqa: E402

MODERN = "2026-07-28"
TOKEN = "bench-token"


def post(host: str, port: int, body: dict, headers: dict[str, str]) -> bytes:
    data = json.dumps(body).encode()
    head = (f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {len(data)}\r\n")
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return (head + "\r\n").encode() + data


def read_answer(sock: socket.socket) -> bytes:
    """One response's body (Content-Length framed)."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(1 << 16)
        if not chunk:
            raise http_bench.BenchError("closed before the head")
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    parts, have = [rest], len(rest)
    while have < length:
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise http_bench.BenchError("closed before the body's end")
        parts.append(chunk)
        have += len(chunk)
    body = b"".join(parts)
    if status != 200:
        raise http_bench.BenchError(f"status {status}: {body[:200]!r}")
    return body


def modern(method: str, params: dict, name: str) -> tuple[dict, dict[str, str]]:
    params["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities":
            {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method, "Mcp-Name": name,
               "Authorization": f"Bearer {TOKEN}"}
    return body, headers


def prepare(way: str, host: str, port: int, chars: int) -> tuple[bytes, str]:
    """The request every reader sends, and the text its answer must carry."""
    if way == "task get":
        call, headers = modern("tools/call", {"name": "bigText", "arguments": {"_1": chars}},
                               "bigText")
        sock = socket.create_connection((host, port))
        sock.sendall(post(host, port, call, headers))
        task = json.loads(read_answer(sock))["result"]["taskId"]
        get, headers = modern("tasks/get", {"taskId": task}, task)
        request = post(host, port, get, headers)
        while True:
            sock.sendall(request)
            if json.loads(read_answer(sock))["result"]["status"] != "working":
                break
            time.sleep(0.05)
        sock.close()
        return request, '"' + "x" * chars + '"'
    client = http_bench.Client(host, port)
    client.initialize()
    _, _, body = client.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                              "params": {"name": "bigText", "arguments": {"_1": chars}}})
    uri = json.loads(body)["result"]["structuredContent"]["resultLink"]["uri"]
    client.sock.close()
    if way == "page":
        uri += f"?offset=0&limit={chars}"
    read = {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": uri}}
    request = post(host, port, read, {"Mcp-Session-Id": client.session or ""})
    return request, ("x" * chars if way == "page" else '"' + "x" * chars + '"')


def run(binary: str, manifest: str, way: str, readers: int, chars: int) -> tuple[float, int]:
    extra = ["--plain-tool-names", "--max-buffered", "2g"]
    extra += (["--task-after", "0", "--auth-token", TOKEN] if way == "task get"
              else ["--max-result-chars", "1000"])
    proc, host, port = http_bench.start_server(binary, manifest, extra)
    try:
        request, text = prepare(way, host, port, chars)
        socks = []
        start = time.perf_counter()
        for i in range(readers):
            sock = socket.socket()
            sock.bind((f"127.0.0.{10 + i}", 0))
            sock.connect((host, port))
            sock.sendall(request)
            socks.append(sock)
        time.sleep(1.0)
        bodies: list[bytes] = [b""] * readers

        def take(k: int) -> None:
            bodies[k] = read_answer(socks[k])

        threads = [threading.Thread(target=take, args=(k,)) for k in range(readers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took = time.perf_counter() - start
        peak = peak_rss(proc.pid)
    finally:
        proc.terminate()
        proc.wait()
    if any(b != bodies[0] for b in bodies):
        raise http_bench.BenchError(f"{way}: the readers got different answers")
    answer = json.loads(bodies[0])["result"]
    got = (answer["result"]["content"][0]["text"] if way == "task get"
           else answer["contents"][0]["text"])
    if got != text:
        raise http_bench.BenchError(f"{way}: the value read back is wrong")
    return took, peak


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binaries", nargs="+")
    parser.add_argument("--readers", type=int, default=60)
    parser.add_argument("--chars", type=int, default=8_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"# {args.readers} readers of one stored `bigText {args.chars:,}` at once, over HTTP; "
          f"{args.rounds} rounds, {os.cpu_count()} CPUs")
    print()
    print("| request | binary | round | time to the last answer | server peak RSS | load average |")
    print("|--|--|--:|--:|--:|--:|")
    results: dict[tuple[str, str], list[tuple[float, int]]] = {}
    with tempfile.TemporaryDirectory(prefix="shared-reads-") as tmp:
        manifest = test_pool_manifest(tmp)
        for way in ("task get", "page", "read whole"):
            for round_no in range(1, args.rounds + 1):
                for binary in args.binaries:
                    took, peak = run(binary, manifest, way, args.readers, args.chars)
                    results.setdefault((way, binary), []).append((took, peak))
                    print(f"| {way} | `{binary}` | {round_no} | {took:.2f} s | {peak / 2**20:.0f} MiB "
                          f"| {os.getloadavg()[0]:.2f} |", flush=True)
    print()
    for (way, binary), runs in results.items():
        times = [t for t, _ in runs]
        peaks = [p for _, p in runs]
        print(f"- {way}, `{binary}`: median {statistics.median(times):.2f} s "
              f"({min(times):.2f}-{max(times):.2f}), peak {statistics.median(peaks) / 2**20:.0f} MiB "
              f"({min(peaks) / 2**20:.0f}-{max(peaks) / 2**20:.0f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
