"""Big results as resources with the official Python MCP SDK 2.x.

    python bigresults_py.py N CMD [ARG...]   # the client starts the server
    python bigresults_py.py N URL            # a server serving HTTP at URL

E2E_PY_MODE picks the SDK's negotiation: "auto" (the default:
server/discover, so 2026-07-28 here) or "legacy" (initialize).

The server (CMD) runs with --max-result-chars; the shapes program's
`bigList N` then comes back as a link. Tools are looked up by base name in
tools/list (`bigList`, or `<module>__bigList` through the router). Steps
(one JSON line each):
  connect   mcp.Client over stdio (its default: server/discover, falling
            back to initialize)
  link      bigList N: a preview text block, a resource_link and the link
            object as structuredContent, passing the SDK's validation
            against the tool's outputSchema (call_tool validates)
  record    mkResult, whose record result is longer than the limit too:
            its link object passes the record tool's outputSchema (anyOf the
            record and the link)
  templates resources/templates/list names the page template
  pages     resources/read page by page (following _meta.next): the pages
            reassemble the list exactly, 0..N-1
"""

from __future__ import annotations

import json
import os
import sys
import time
from importlib.metadata import version
from typing import Any

import anyio
import mcp

PAGE = 500_000


def say(step: str, error: str | None, detail: str = "") -> bool:
    print(json.dumps({"step": step, "ok": error is None, "detail": detail if error is None else error}),
          flush=True)
    return error is None


def wire(model: Any) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def link_of(result: dict[str, Any], kind: str, count: int) -> tuple[str | None, str]:
    content = result.get("content", [])
    if len(content) != 2 or content[1].get("type") != "resource_link":
        return None, f"expected text + resource_link, got {str(content)[:300]}"
    link = (result.get("structuredContent") or {}).get("resultLink") or {}
    if link.get("uri") != content[1].get("uri") or link.get("type") != kind or link.get("count") != count:
        return None, f"link object {link} does not match {content[1]}"
    return link["uri"], ""


async def main() -> int:
    n = int(sys.argv[1])
    # A URL (a server already serving HTTP) or a command to start over stdio.
    server: Any = sys.argv[2]
    if not server.startswith("http"):
        server = mcp.StdioServerParameters(command=sys.argv[2], args=sys.argv[3:])
    failed = False
    async with mcp.Client(server, mode=os.environ.get("E2E_PY_MODE", "auto")) as client:
        say("connect", None, f"mcp {version('mcp')}; protocol {client.protocol_version}")
        listed = [t.name for t in (await client.list_tools()).tools]
        name = {base: next((t for t in listed if t == base or t.endswith("__" + base)), base)
                for base in ("bigList", "mkResult")}
        started = time.monotonic()
        result = wire(await client.call_tool(name["bigList"], {"_1": n}))
        uri, why = link_of(result, "list", n)
        failed |= not say("link", why or None, f"{name['bigList']}: {uri} in {time.monotonic() - started:.1f} s; "
                          f"preview {len(result['content'][0]['text'])} chars")
        record = wire(await client.call_tool(name["mkResult"], {"_1": 7}))
        _, why = link_of(record, "record", len('{"status":"ok","value":7}'))
        failed |= not say("record", why or None, "the link object validates against anyOf(record, link)")
        templates = wire(await client.list_resource_templates())
        names = [t.get("uriTemplate") for t in templates.get("resourceTemplates", [])]
        failed |= not say("templates", None if names == ["morloc://result/{id}{?offset,limit}"]
                          else f"templates {names}", str(names))
        if uri is None:
            return 1
        started = time.monotonic()
        expected, pages, page_uri = 0, 0, f"{uri}?offset=0&limit={PAGE}"
        error = None
        while page_uri:
            read = wire(await client.read_resource(page_uri))
            content = read["contents"][0]
            items = json.loads(content["text"])
            if items != list(range(expected, expected + len(items))):
                error = f"page {page_uri} does not continue at {expected}"
                break
            expected += len(items)
            pages += 1
            page_uri = (content.get("_meta") or {}).get("next")
        if error is None and expected != n:
            error = f"the pages hold {expected} elements, not {n}"
        failed |= not say("pages", error, f"{pages} pages of {PAGE} reassemble 0..{n - 1} "
                          f"in {time.monotonic() - started:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
