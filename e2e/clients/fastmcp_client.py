"""Drives the server with the FastMCP client (`fastmcp.Client`).

    python fastmcp_client.py --stdio CMD [ARG...]
    python fastmcp_client.py --url http://127.0.0.1:PORT/mcp

FastMCP sits on the 2.x Python SDK and connects in its default `mode="auto"`
(a `server/discover` probe, adopted, or else `initialize`; the `era` step
checks which, see checks.py). It hydrates
`structuredContent` through the tool's `outputSchema` into `.data`, and
raises `ToolError` for an `isError` result, which is how the failing tool is
checked here. Steps and checks: see checks.py.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import fastmcp
from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError
from mcp.shared.exceptions import MCPError

from checks import CALLS, MK_RESULT, UNKNOWN_TOOL, Reporter, check_era, check_tools, parse_args, session_era, unknown_tool_error


def wire(model: Any) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def result_wire(result: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"content": [wire(c) for c in result.content]}
    if result.structured_content is not None:
        out["structuredContent"] = result.structured_content
    out["isError"] = result.is_error
    return out


def data_as_dict(data: Any) -> Any:
    """FastMCP turns a record result into an object typed from outputSchema."""
    if isinstance(data, dict):
        return data
    return getattr(data, "__dict__", data)


async def run(client: Any, report: Reporter) -> None:
    try:
        await client.__aenter__()
    except BaseException as e:  # noqa: BLE001
        report.crash("initialize", e)
        return
    try:
        info = client.server_info
        report.step("initialize", None, f"protocol {client.protocol_version}; server {info.name if info else '?'}")
        era, how = session_era(client.session)
        report.step("era", check_era(era, how), f"{era}: {how}; protocol {client.protocol_version}")
        try:
            tools = [wire(t) for t in await client.list_tools()]
            names, error = check_tools(tools)
        except Exception as e:  # noqa: BLE001
            report.crash("tools/list", e)
            return
        if not report.step("tools/list", error, f"{len(tools)} tools"):
            return
        for step, base, args, check in CALLS:
            try:
                if base == "pyFail":
                    await client.call_tool(names[base], args)
                    report.step(step, "expected ToolError for an isError result, got none")
                    continue
                result = await client.call_tool(names[base], args)
            except ToolError as e:
                error = None if "boom" in str(e) else f"ToolError does not mention 'boom': {e}"
                report.step(step, error if base == "pyFail" else f"unexpected ToolError: {e}", str(e)[:200])
                continue
            except Exception as e:  # noqa: BLE001
                report.crash(step, e)
                continue
            error = check(result_wire(result))
            if error is None and base == "mkResult" and data_as_dict(result.data) != MK_RESULT:
                error = f"hydrated .data is {result.data!r}, expected {MK_RESULT}"
            report.step(step, error, str(result_wire(result).get("content"))[:200])
        try:
            result = await client.call_tool(UNKNOWN_TOOL, {})
            report.step("protocol error", f"expected a JSON-RPC error, got a result: {result_wire(result)}")
        except MCPError as e:
            report.step("protocol error", unknown_tool_error(e.error.code, e.error.message), e.error.message)
        except Exception as e:  # noqa: BLE001
            report.crash("protocol error", e)
    finally:
        try:
            await client.__aexit__(None, None, None)
        except BaseException as e:  # noqa: BLE001
            report.crash("shutdown", e)


async def main() -> int:
    kind, target = parse_args(sys.argv[1:])
    report = Reporter()
    report.step("client", None, f"fastmcp {fastmcp.__version__}")
    if kind == "stdio":
        transport: Any = StdioTransport(command=target[0], args=list(target[1:]), keep_alive=False)
    else:
        transport = target
    await run(fastmcp.Client(transport), report)
    return report.exit_code()


if __name__ == "__main__":
    sys.exit(anyio.run(main))
