"""GET /metrics read by a real Prometheus text-format parser after a known
mix of calls: every counter equals what was done.

    .cache/py-prometheus/bin/python e2e/clients/metrics_check.py BINARY

Serves the shapes program with the test pool over HTTP, with an MCP token,
a separate --metrics-token and --log-format json; makes a known mix of
tool calls (results, refused arguments, a failing function, a pure command,
a call that times out); then scrapes /metrics with the metrics token and
parses it with prometheus_client. Checks: the call counter per tool and
outcome, the duration histogram (count per series, cumulative buckets,
+Inf equal to the count), the metrics token opening /metrics only, and one
JSON access line per tools/call. Prints one JSON line per step, as the
client drivers do (e2e/clients/checks.py); exits non-zero on a failure.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[2]
MCP_TOKEN = "e2e-mcp-token"
METRICS_TOKEN = "e2e-metrics-token"
CALL_TIMEOUT_S = 0.5

# The mix: (tool, arguments, outcome label of mcp_server_tool_calls_total).
MIX = [
    ("addOne", {"_1": 1}, "ok"),
    ("addOne", {"_1": 2}, "ok"),
    ("addOne", {"_1": 3}, "ok"),
    ("addOne", {"_1": "three"}, "tool_error"),
    ("pyFail", {"_1": 1}, "tool_error"),
    ("pyFail", {"_1": 2}, "tool_error"),
    ("pureAnswer", {}, "ok"),
    ("mustFail", {"_1": 0}, "tool_error"),
    ("slowEcho", {"_1": 5000}, "call_failed"),
]

failures = 0


def step(name: str, ok: bool, detail: str = "") -> None:
    global failures
    failures += 0 if ok else 1
    print(json.dumps({"step": name, "ok": ok, "detail": detail}), flush=True)


class Server:
    def __init__(self, binary: str, manifest: Path):
        argv = [binary, "mcp", str(manifest), "--http-port", "0", "--plain-tool-names",
                "--auth-token", MCP_TOKEN, "--metrics-token", METRICS_TOKEN,
                "--log-format", "json", "--call-timeout", str(CALL_TIMEOUT_S)]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.url: str | None = None
        self.ready = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        if not self.ready.wait(30) or self.url is None:
            raise SystemExit(f"the server printed no address:\n{''.join(self.lines)}")

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            found = re.search(r"over HTTP at (http://\S+?/mcp)", line)
            if found and self.url is None:
                self.url = found.group(1)
                self.ready.set()
        self.ready.set()

    def stop(self) -> None:
        """SIGTERM (a drain, then exit), and every line read."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.reader.join(10)


def request(url: str, body: dict | None, token: str, session: str | None = None):
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
    data = None
    if body is not None:
        headers["Content-Type"] = "application/json"
        data = json.dumps(body).encode()
    if session:
        headers["Mcp-Session-Id"] = session
    req = urllib.request.Request(url, data=data, headers=headers, method="POST" if data else "GET")
    try:
        with urllib.request.urlopen(req, timeout=30) as reply:
            return reply.status, dict(reply.headers), reply.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def main(binary: str) -> int:
    manifest = json.loads((ROOT / "tests/data/shapes/manifest.json").read_text())
    manifest["pools"][0]["exec"] = ["python3", str(ROOT / "tests/pool/testpool.py")]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "manifest.json"
        path.write_text(json.dumps(manifest))
        server = Server(binary, path)
        try:
            run(server)
        finally:
            server.stop()
    return 1 if failures else 0


def run(server: Server) -> None:
    url = server.url
    assert url is not None
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "metrics-check", "version": "1"}}}
    status, headers, _ = request(url, init, MCP_TOKEN)
    session = {k.lower(): v for k, v in headers.items()}.get("mcp-session-id")
    step("initialize", status == 200 and bool(session), f"status {status}")
    request(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, MCP_TOKEN, session)
    for n, (tool, args, outcome) in enumerate(MIX, start=10):
        call = {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                "params": {"name": tool, "arguments": args}}
        status, _, body = request(url, call, MCP_TOKEN, session)
        result = json.loads(body).get("result", {}) if status == 200 else {}
        step(f"call {n} {tool} ({outcome})", status == 200 and result.get("isError") == (outcome != "ok"),
             body[:200])

    metrics_url = url.removesuffix("/mcp") + "/metrics"
    status, _, _ = request(metrics_url, None, MCP_TOKEN)
    step("the MCP token does not open /metrics", status == 401, f"status {status}")
    status, _, text = request(metrics_url, None, METRICS_TOKEN)
    step("the metrics token opens /metrics", status == 200, f"status {status}")
    families = {f.name: f for f in text_string_to_metric_families(text)}
    step("parsed", True, f"{len(families)} families: {', '.join(sorted(families))}")

    expected: dict[tuple[str, str], int] = {}
    for tool, _, outcome in MIX:
        expected[(tool, outcome)] = expected.get((tool, outcome), 0) + 1
    calls = families.get("mcp_server_tool_calls")
    got: dict[tuple[str, str], float] = {}
    if calls is not None:
        step("calls counter type", calls.type == "counter", calls.type)
        for s in calls.samples:
            if s.name == "mcp_server_tool_calls_total":
                got[(s.labels["gen_ai_tool_name"], s.labels["outcome"])] = s.value
    step("every call counted by tool and outcome",
         got == {k: float(v) for k, v in expected.items()}, f"got {got}, expected {expected}")

    histogram = families.get("mcp_server_operation_duration_seconds")
    ok = histogram is not None and histogram.type == "histogram"
    detail = "no histogram"
    if histogram is not None:
        series: dict[tuple[str, str], dict] = {}
        for s in histogram.samples:
            key = (s.labels["gen_ai_tool_name"], s.labels["error_type"] or "ok")
            entry = series.setdefault(key, {"buckets": []})
            if s.name.endswith("_bucket"):
                entry["buckets"].append((float(s.labels["le"]), s.value))
            elif s.name.endswith("_count"):
                entry["count"] = s.value
            elif s.name.endswith("_sum"):
                entry["sum"] = s.value
            ok = ok and s.labels.get("mcp_method_name") == "tools/call"
        counts = {k: v.get("count") for k, v in series.items()}
        ok = ok and counts == {k: float(v) for k, v in expected.items()}
        for entry in series.values():
            values = [v for _, v in sorted(entry["buckets"])]
            ok = ok and values == sorted(values) and values[-1] == entry["count"] and entry["sum"] >= 0
        slow = series.get(("slowEcho", "call_failed"), {})
        ok = ok and slow.get("sum", 0) >= CALL_TIMEOUT_S
        detail = f"counts {counts}"
    step("the duration histogram matches the calls", ok, detail)

    # One JSON access line per tools/call, read once the server has exited.
    server.stop()
    access = []
    for line in server.lines:
        try:
            record = json.loads(line)
        except ValueError:
            step("every stderr line is JSON", False, line[:200])
            return
        if record.get("msg") == "access" and record.get("method") == "tools/call":
            access.append(record)
    tools = [(r["tool"], r["status"]) for r in access]
    step("one access line per call", tools == [(t, 200) for t, _, _ in MIX], str(tools))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    sys.exit(main(sys.argv[1]))
