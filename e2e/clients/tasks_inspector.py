"""Drives a task to completion with the MCP Inspector CLI (2.x, modern era).

    python3 tasks_inspector.py --stdio CMD [ARG...]
    python3 tasks_inspector.py --url http://127.0.0.1:PORT/mcp

The Inspector runs its tool calls through the `@modelcontextprotocol/ext-tasks`
requester: with `--protocol-era modern` it sends `server/discover`, sees the
`io.modelcontextprotocol/tasks` extension among the server's capabilities,
declares it in every request's `clientCapabilities`, and when `tools/call`
is answered with a task (`resultType: "task"`) it polls `tasks/get` until the
task settles, then prints the tool's result as if the call had been
synchronous. The harness starts the server with `--task-after 0` and checks
in the wire transcript that both calls below really went through a task.

Steps (checks.py TASK_STEPS): `initialize` and `tools/list` (one run, to learn
the tool names), `task call` (slowEcho 1500 ms: exit 0, text `1500`), `task
tool error` (pyFail: exit 5, isError with the pool's message).
Environment: as inspector.py. Standard library only.
"""

from __future__ import annotations

import json
import sys

from checks import TASK_CALLS, Reporter, find_tool, parse_args
from inspector import EXIT_TOOL_ERROR, inspector, inspector_version, last_error

MODERN = ["--protocol-era", "modern"]


def main() -> int:
    kind, where = parse_args(sys.argv[1:])
    target = ["--", *where] if kind == "stdio" else ["--transport", "http", "--server-url", where]
    report = Reporter()
    report.step("client", None, f"@modelcontextprotocol/inspector {inspector_version()}, protocol era modern")

    status, out, err = inspector(target, *MODERN, "--method", "tools/list")
    if status != 0 or not isinstance(out, dict):
        report.step("initialize", f"exit status {status}: {last_error(err)}")
        return report.exit_code()
    report.step("initialize", None, "connected in the modern era and listed tools (one Inspector run)")
    names = [t.get("name") for t in out.get("result", {}).get("tools", []) if isinstance(t, dict)]
    found = {base: find_tool(names, base) for _, base, _, _ in TASK_CALLS}
    missing = [base for base, name in found.items() if name is None]
    if not report.step("tools/list", f"not listed: {', '.join(missing)}" if missing else None,
                       f"{len(names)} tools"):
        return report.exit_code()

    for step, base, args, check in TASK_CALLS:
        status, out, err = inspector(target, *MODERN, "--method", "tools/call", "--tool-name", str(found[base]),
                                     "--tool-args-json", json.dumps(args))
        result = out.get("result") if isinstance(out, dict) else None
        if not isinstance(result, dict):
            report.step(step, f"exit status {status}, no result: {last_error(err)}")
            continue
        expected_status = EXIT_TOOL_ERROR if base == "pyFail" else 0
        error = check(result)
        if error is None and status != expected_status:
            error = f"exit status {status}, expected {expected_status}"
        report.step(step, error, str(result.get("content"))[:200])
    return report.exit_code()


if __name__ == "__main__":
    sys.exit(main())
