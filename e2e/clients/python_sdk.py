"""Drives the server with the official Python MCP SDK, 1.x or 2.x.

    python python_sdk.py --stdio CMD [ARG...]   # the client starts the server
    python python_sdk.py --url http://127.0.0.1:PORT/mcp

1.x: `ClientSession` over `stdio_client` / `streamable_http_client`, with the
`initialize` handshake. 2.x: the high-level `mcp.Client` in its default
`mode="auto"`, which first probes `server/discover` at the newest protocol
revision: a discover result is adopted (the modern era, no `initialize`), an
error makes it fall back to `initialize`. The session records which one
happened (`discover_result` or `initialize_result`); the `era` step checks
that against E2E_EXPECT_ERA (see checks.py), and on stdio the harness checks
the transcript too. Both SDK lines validate `structuredContent` against the
tool's `outputSchema`. Steps and checks: see checks.py.
"""

from __future__ import annotations

import sys
from contextlib import AsyncExitStack
from importlib.metadata import version
from typing import Any

import anyio
import mcp

from checks import (CALLS, UNKNOWN_TOOL, Reporter, check_era, check_tools, parse_args, session_era, structured_calls,
                    unknown_tool_error)

V2 = hasattr(mcp, "Client")

if V2:
    from mcp.shared.exceptions import MCPError as ProtocolError
else:
    from mcp.shared.exceptions import McpError as ProtocolError


def wire(model: Any) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def connect(stack: AsyncExitStack, kind: str, target: Any) -> tuple[Any, str, str]:
    """Returns (object with list_tools/call_tool, description of the
    handshake, era: modern / fallback / legacy)."""
    if V2:
        if kind == "stdio":
            server: Any = mcp.StdioServerParameters(command=target[0], args=target[1:])
        else:
            server = target
        client = await stack.enter_async_context(mcp.Client(server))
        era, how = session_era(client.session)
        info = client.server_info
        return client, f"{how}; protocol {client.protocol_version}; server {info.name if info else '?'}", era
    if kind == "stdio":
        from mcp.client.stdio import stdio_client
        params = mcp.StdioServerParameters(command=target[0], args=target[1:])
        read, write = await stack.enter_async_context(stdio_client(params))
    else:
        from mcp.client.streamable_http import streamable_http_client
        read, write, _ = await stack.enter_async_context(streamable_http_client(target))
    session = await stack.enter_async_context(mcp.ClientSession(read, write))
    init = await session.initialize()
    return session, f"initialize; protocol {init.protocolVersion}; server {init.serverInfo.name}", "legacy"


async def main() -> int:
    kind, target = parse_args(sys.argv[1:])
    report = Reporter()
    report.step("client", None, f"mcp {version('mcp')} (python SDK {'2.x' if V2 else '1.x'})")
    try:
        await steps(kind, target, report)
    except BaseException as e:  # noqa: BLE001 - closing the connection failed
        report.crash("shutdown", e)
    return report.exit_code()


async def steps(kind: str, target: Any, report: Reporter) -> None:
    async with AsyncExitStack() as stack:
        try:
            client, how, era = await connect(stack, kind, target)
        except BaseException as e:  # noqa: BLE001 - any failure is the step's result
            report.crash("initialize", e)
            return
        report.step("initialize", None, how)
        report.step("era", check_era(era, how), f"{era}: {how}")

        try:
            listed = await client.list_tools()
            tools = [wire(t) for t in listed.tools]
            names, error = check_tools(tools)
        except Exception as e:  # noqa: BLE001
            report.crash("tools/list", e)
            return
        if not report.step("tools/list", error, f"{len(tools)} tools"):
            return

        for step, base, args, check in [*CALLS, *structured_calls(era)]:
            try:
                result = wire(await client.call_tool(names[base], args))
            except Exception as e:  # noqa: BLE001
                report.crash(step, e)
                continue
            report.step(step, check(result), str(result.get("content"))[:200])

        try:
            result = await client.call_tool(UNKNOWN_TOOL, {})
            report.step("protocol error", f"expected a JSON-RPC error, got a result: {wire(result)}")
        except ProtocolError as e:
            report.step("protocol error", unknown_tool_error(e.error.code, e.error.message), e.error.message)
        except Exception as e:  # noqa: BLE001
            report.crash("protocol error", e)


if __name__ == "__main__":
    sys.exit(anyio.run(main))
