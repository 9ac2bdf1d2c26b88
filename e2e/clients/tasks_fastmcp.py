"""Drives tasks to completion with the FastMCP client and `fastmcp-tasks`.

    python tasks_fastmcp.py --stdio CMD [ARG...]
    python tasks_fastmcp.py --url http://127.0.0.1:PORT/mcp

Importing `fastmcp_tasks` registers its client extension on every
`fastmcp.Client`: in the modern era (the default `mode="auto"` adopts
2026-07-28) the client declares `io.modelcontextprotocol/tasks`, claims a
`tools/call` answered with `resultType: "task"`, and `call_tool` polls
`tasks/get` until the task settles, returning the tool's own result. The
explicit handle, `fastmcp_tasks.call_tool_task`, returns at once with the
task and lets the caller ask its status and await its result. The harness
starts the server with `--task-after 0` and checks in the wire transcript
that every call went through a task.

A client bug, worked around here: over HTTP the spec (SEP-2663 "Routing
Headers", on top of SEP-2243) says `tasks/get`, `tasks/update` and
`tasks/cancel` MUST carry `Mcp-Name: <taskId>`, and a server must reject a
request that lacks a required header (`-32020`, as morloc-mcp does). The
2.x SDK sends `Mcp-Name` for a request class whose `name_param` names the
field, and fastmcp-tasks 4.1.4 leaves it unset on its three request classes
(its own server does not insist on the header, so it goes unnoticed there).
`mirror_task_ids` sets it to `taskId` when it is unset; the `client` step
says whether that was needed.

Steps (checks.py TASK_STEPS, then `task handle` and `task cancel`): `initialize` (protocol
2026-07-28), `tools/list`, `task call` (slowEcho 1500 ms through `call_tool`:
text `1500`), `task tool error` (pyFail: `ToolError` with the pool's message),
`task handle` (slowEcho 1200 ms through `call_tool_task`: a task id, status
`working`, then the result `1200`), `task cancel` (slowEcho 3000 ms through
`call_tool_task`, then `ToolTask.cancel`, which sends `tasks/cancel`; waiting
on the handle ends with status `cancelled`).
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import fastmcp
import fastmcp_tasks
from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError

from checks import TASK_CALLS, Reporter, find_tool, parse_args

MODERN = "2026-07-28"
HANDLE_MS = 1200
CANCEL_MS = 3000


def mirror_task_ids() -> list[str]:
    """Makes the SDK send `Mcp-Name: <taskId>` on fastmcp-tasks' tasks/*
    requests where the package does not ask for it; returns those patched."""
    from fastmcp_tasks import client_models
    patched = []
    for cls in (client_models.GetTaskRequest, client_models.UpdateTaskRequest, client_models.CancelTaskRequest):
        if getattr(cls, "name_param", None) is None:
            cls.name_param = "taskId"
            patched.append(cls.__name__)
    return patched


def result_wire(result: Any) -> dict[str, Any]:
    content = [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in result.content]
    return {"content": content, "isError": result.is_error}


def version(package: str) -> str:
    from importlib.metadata import version as installed
    return installed(package)


async def run(client: Any, report: Reporter) -> None:
    try:
        await client.__aenter__()
    except BaseException as e:  # noqa: BLE001
        report.crash("initialize", e)
        return
    try:
        protocol = client.protocol_version
        report.step("initialize", None if protocol == MODERN else f"protocol {protocol}, expected {MODERN}",
                    f"protocol {protocol}")
        names = [t.name for t in await client.list_tools()]
        found = {base: find_tool(names, base) for _, base, _, _ in TASK_CALLS}
        missing = [base for base, name in found.items() if name is None]
        if not report.step("tools/list", f"not listed: {', '.join(missing)}" if missing else None,
                           f"{len(names)} tools"):
            return
        for step, base, args, check in TASK_CALLS:
            try:
                result = await client.call_tool(found[base], args)
            except ToolError as e:
                error = None if "boom" in str(e) else f"ToolError does not mention 'boom': {e}"
                report.step(step, error if base == "pyFail" else f"unexpected ToolError: {e}", str(e)[:200])
                continue
            except Exception as e:  # noqa: BLE001
                report.crash(step, e)
                continue
            if base == "pyFail":
                report.step(step, "expected ToolError for an isError result, got none")
                continue
            report.step(step, check(result_wire(result)), str(result.content)[:200])
        try:
            task = await fastmcp_tasks.call_tool_task(client, str(found["slowEcho"]), {"_1": HANDLE_MS})
            status = await task.status()
            result = await task.result()
        except Exception as e:  # noqa: BLE001
            report.crash("task handle", e)
            return
        text = result.content[0].text if result.content else None
        error = None
        if not task.task_id:
            error = "the handle has no task id"
        elif status.status not in ("working", "completed"):
            error = f"status {status.status!r} while the call runs"
        elif text != str(HANDLE_MS):
            error = f"expected text {str(HANDLE_MS)!r}, got {text!r}"
        report.step("task handle", error, f"task {task.task_id}: {status.status}, then {text!r}")
        try:
            task = await fastmcp_tasks.call_tool_task(client, str(found["slowEcho"]), {"_1": CANCEL_MS})
            await task.cancel()
            settled = await task.wait(timeout=30)
        except Exception as e:  # noqa: BLE001
            report.crash("task cancel", e)
            return
        error = None if settled.status == "cancelled" else f"status {settled.status!r} after tasks/cancel"
        report.step("task cancel", error, f"task {task.task_id}: {settled.status}")
    finally:
        await client.__aexit__(None, None, None)


def main() -> int:
    kind, where = parse_args(sys.argv[1:])
    report = Reporter()
    patched = mirror_task_ids()
    workaround = (f"; worked around: {', '.join(patched)} sent no Mcp-Name" if patched
                  else "; tasks/* requests carry Mcp-Name on their own")
    report.step("client", None, f"fastmcp {version('fastmcp')}, fastmcp-tasks {version('fastmcp-tasks')}, "
                                f"mcp {version('mcp')}{workaround}")
    if kind == "stdio":
        assert isinstance(where, list)
        client = fastmcp.Client(StdioTransport(where[0], where[1:]))
    else:
        client = fastmcp.Client(str(where))
    anyio.run(run, client, report)
    return report.exit_code()


if __name__ == "__main__":
    sys.exit(main())
