"""Checks a minimal image (or its layout) by serving one program from it:
a stdio session and an HTTP session, each initialising and calling a tool.

    python3 deploy/container/check.py --stdio CMD --http CMD [--tool NAME] [--expect TEXT]

Each CMD is a shell-quoted command line that runs the image's entrypoint,
for instance

    --stdio "docker run -i --rm --network none IMAGE"
    --http  "docker run --rm --network host -e MORLOC_MCP_TOKEN IMAGE"

(`make static` runs it with `chroot DIR /morloc-mcp mcp /program/manifest.json`
instead). The HTTP command gets `--http-host 127.0.0.1 --http-port 0` added
and MORLOC_MCP_TOKEN in its environment; a request without the token must
get 401. The tool (default pureAnswer, of bench/data/nopool) must answer
TEXT (default 42). Prints one line per session; exits 1 on a failure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import urllib.error
import urllib.request

TOKEN = "container-check-token"
TIMEOUT = 60


def msg(i: int | None, method: str, params: dict | None = None) -> dict:
    m: dict = {"jsonrpc": "2.0", "method": method}
    if i is not None:
        m["id"] = i
    if params is not None:
        m["params"] = params
    return m


INIT = msg(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "container-check", "version": "1"}})
INITIALIZED = msg(None, "notifications/initialized")


def tool_named(tools: list[dict], tool: str) -> str:
    """The listed name of `tool`: itself, or `<module>__<tool>` over HTTP."""
    names = [t["name"] for t in tools]
    for name in names:
        if name == tool or name.endswith("__" + tool):
            return name
    raise AssertionError(f"no tool {tool} in {names}")


def check_stdio(cmd: list[str], tool: str, expect: str) -> None:
    lines = [INIT, INITIALIZED, msg(1, "tools/list")]
    out = subprocess.run(cmd, input="".join(json.dumps(m) + "\n" for m in lines).encode(),
                         capture_output=True, timeout=TIMEOUT, check=False)
    replies = [json.loads(line) for line in out.stdout.decode().splitlines()]
    assert out.returncode == 0 and len(replies) == 2, (out.returncode, out.stdout, out.stderr[-2000:])
    name = tool_named(replies[1]["result"]["tools"], tool)
    call = msg(2, "tools/call", {"name": name, "arguments": {}})
    out = subprocess.run(cmd, input="".join(json.dumps(m) + "\n" for m in (INIT, INITIALIZED, call)).encode(),
                         capture_output=True, timeout=TIMEOUT, check=False)
    replies = [json.loads(line) for line in out.stdout.decode().splitlines()]
    assert out.returncode == 0 and len(replies) == 2, (out.returncode, out.stdout, out.stderr[-2000:])
    text = replies[1]["result"]["content"][0]["text"]
    assert text == expect, replies[1]
    print(f"check: stdio: {name} -> {text}")


def check_http(cmd: list[str], tool: str, expect: str) -> None:
    server = subprocess.Popen(cmd + ["--http-host", "127.0.0.1", "--http-port", "0"], stdin=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, env={**os.environ, "MORLOC_MCP_TOKEN": TOKEN})
    try:
        url = None
        assert server.stderr is not None
        for raw in server.stderr:
            found = re.search(rb"http://[0-9.]+:[0-9]+", raw)
            if found:
                url = found.group(0).decode() + "/mcp"
                break
        assert url, "no address on stderr"

        def post(body: dict, session: str | None = None, auth: bool = True) -> tuple[str | None, bytes]:
            headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
            if auth:
                headers["Authorization"] = "Bearer " + TOKEN
            if session:
                headers["Mcp-Session-Id"] = session
            req = urllib.request.Request(url, json.dumps(body).encode(), headers)
            with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:
                return resp.headers.get("Mcp-Session-Id"), resp.read()

        try:
            post(INIT, auth=False)
            raise AssertionError("a request without the token was served")
        except urllib.error.HTTPError as e:
            assert e.code == 401, e.code
        session, _ = post(INIT)
        # Session ids are <instance id>.<32 hex digits>: the kernel's random
        # source works in the image.
        name, _, rand = (session or "").rpartition(".")
        assert name and len(rand) == 32 and all(c in "0123456789abcdef" for c in rand), session
        post(INITIALIZED, session)
        _, body = post(msg(1, "tools/list"), session)
        name = tool_named(json.loads(body)["result"]["tools"], tool)
        _, body = post(msg(2, "tools/call", {"name": name, "arguments": {}}), session)
        text = json.loads(body)["result"]["content"][0]["text"]
        assert text == expect, body
        print(f"check: HTTP: {name} -> {text} (and 401 without the token)")
    finally:
        server.terminate()
        try:
            server.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stdio", required=True, help="command line serving the program over stdio")
    parser.add_argument("--http", required=True, help="command line to which the HTTP options are added")
    parser.add_argument("--tool", default="pureAnswer")
    parser.add_argument("--expect", default="42")
    args = parser.parse_args()
    try:
        check_stdio(shlex.split(args.stdio), args.tool, args.expect)
        check_http(shlex.split(args.http), args.tool, args.expect)
    except (AssertionError, OSError, subprocess.SubprocessError, ValueError, KeyError) as e:
        print(f"check: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
