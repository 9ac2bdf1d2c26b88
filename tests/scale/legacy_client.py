"""A legacy (2025-06-18) session from the real Python MCP SDK 1.x through a
load balancer: initialize, then CALLS tools/call requests on the one session.
Prints one JSON line: the session id and how many calls returned the right
answer. Run with the e2e suite's py-mcp1 environment."""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client


async def main(url: str, calls: int) -> None:
    async with streamablehttp_client(url) as (read, write, get_session_id):
        async with ClientSession(read, write) as session:
            await session.initialize()
            ok = 0
            for n in range(calls):
                result = await session.call_tool("main__addOne", {"_1": n})
                if not result.isError and result.content[0].text == str(n + 1):
                    ok += 1
            print(json.dumps({"session": get_session_id(), "ok": ok}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
