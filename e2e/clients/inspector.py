"""Drives the server with the MCP Inspector CLI (`mcp-inspector --cli`, 2.x).

    python3 inspector.py --stdio CMD [ARG...]
    python3 inspector.py --url http://127.0.0.1:PORT/mcp

The Inspector CLI makes one connection per invocation (over stdio it starts
the server each time), so every step below is its own run of
`mcp-inspector --cli --format json`, whose stdout is one JSON object
(`{"result": ...}`) and whose exit status says what happened (0 ok, 5 the
tool reported an error, 1 any other error, with `{"error": ...}` on stderr).

Two differences from the SDK drivers: the Inspector refuses to call a tool
that tools/list did not list (it answers `tool_not_found` itself), so the
protocol-error step sends an unknown *argument* instead, which the server
must reject with JSON-RPC error -32602; and tools/list runs with `--strict`,
so a schema the Inspector deems unportable (exit 6) fails the step.

Environment: E2E_INSPECTOR (the `mcp-inspector` executable, default
.cache/node/node_modules/.bin/mcp-inspector), E2E_NODE_BIN (a directory put
first on PATH, for the `node` the Inspector needs). Standard library only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from checks import CALLS, Reporter, check_tools, parse_args

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE_BIN = os.path.join(HERE, "..", "..", ".cache", "node", "node_modules", ".bin")
EXIT_TOOL_ERROR = 5
TIMEOUT = 60


def inspector(target: list[str], *args: str) -> tuple[int, Any, str]:
    """Runs one Inspector CLI invocation; returns (status, stdout JSON or None, stderr)."""
    exe = os.environ.get("E2E_INSPECTOR", os.path.join(CACHE_BIN, "mcp-inspector"))
    env = dict(os.environ)
    env["PATH"] = os.environ.get("E2E_NODE_BIN", CACHE_BIN) + os.pathsep + env.get("PATH", "")
    argv = [exe, "--cli", "--format", "json", *args, *target]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        return -1, None, f"mcp-inspector did not finish within {TIMEOUT} s"
    try:
        out = json.loads(done.stdout) if done.stdout.strip() else None
    except ValueError:
        out = None
    return done.returncode, out, done.stderr


def inspector_version() -> str:
    """The version in the Inspector package's package.json, found from the executable."""
    path = os.path.realpath(os.environ.get("E2E_INSPECTOR", os.path.join(CACHE_BIN, "mcp-inspector")))
    while os.path.dirname(path) != path:
        path = os.path.dirname(path)
        try:
            with open(os.path.join(path, "package.json"), encoding="utf-8") as f:
                package = json.load(f)
        except (OSError, ValueError):
            continue
        if package.get("name") == "@modelcontextprotocol/inspector":
            return str(package.get("version"))
    return "(unknown version)"


def last_error(stderr: str) -> str:
    """The Inspector's error envelope, else the last stderr lines."""
    for line in reversed(stderr.strip().splitlines()):
        if line.startswith('{"error"'):
            return line
    return " | ".join(stderr.strip().splitlines()[-3:])


def main() -> int:
    kind, where = parse_args(sys.argv[1:])
    target = ["--", *where] if kind == "stdio" else ["--transport", "http", "--server-url", where]
    report = Reporter()
    report.step("client", None, f"@modelcontextprotocol/inspector {inspector_version()}")

    status, out, err = inspector(target, "--strict", "--method", "tools/list")
    if status != 0 or not isinstance(out, dict):
        report.step("initialize", f"exit status {status}: {last_error(err)}")
        return report.exit_code()
    report.step("initialize", None, "connected and listed tools (one Inspector run)")
    tools = out.get("result", {}).get("tools", [])
    names, error = check_tools(tools)
    warnings = [line for line in err.splitlines() if "across" in line and "tool" in line]
    if not report.step("tools/list", error, f"{len(tools)} tools; {' '.join(warnings) or 'no portability notes'}"):
        return report.exit_code()

    for step, base, args, check in CALLS:
        status, out, err = inspector(
            target, "--method", "tools/call", "--tool-name", names[base], "--tool-args-json", json.dumps(args))
        result = out.get("result") if isinstance(out, dict) else None
        if not isinstance(result, dict):
            report.step(step, f"exit status {status}, no result: {last_error(err)}")
            continue
        expected_status = EXIT_TOOL_ERROR if base == "pyFail" else 0
        error = check(result)
        if error is None and status != expected_status:
            error = f"exit status {status}, expected {expected_status}"
        report.step(step, error, str(result.get("content"))[:200])

    status, out, err = inspector(
        target, "--method", "tools/call", "--tool-name", names["addOne"], "--tool-args-json", '{"bogus":1}')
    message = last_error(err)
    error = None
    if status == 0 or "unknown argument 'bogus'" not in message:
        error = f"expected the server's -32602 \"unknown argument 'bogus'\", got exit status {status}: {message}"
    report.step("protocol error", error, f"protocol error via an unknown argument: {message}")
    return report.exit_code()


if __name__ == "__main__":
    sys.exit(main())
