#!/usr/bin/env python3
"""Drive a short scripted MCP session against morloc-mcp and check every reply.

Usage:

    python3 examples/demo.py <path-to-morloc-mcp> [manifest]

The server is started as `morloc-mcp mcp examples/shapes/manifest.json` (or
the manifest given). That manifest is the `shapes` test program with its
Python pool replaced by the repository's test pool, so no Morloc compiler is
needed. The script speaks newline-delimited JSON-RPC on the server's stdin and
stdout, prints each exchange (`->` what we sent, `<-` what came back; long
replies are cut for display), checks each reply, then closes stdin and expects
the server to exit with status 0.

Exit status: 0 when every check passed, 1 otherwise (the first failed check is
printed, with the tail of the server's stderr). Standard library only.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MANIFEST = os.path.join(HERE, "shapes", "manifest.json")

# How long any single reply may take. The first remote call also waits for
# the pool (a Python process) to come up, so this is generous.
REPLY_TIMEOUT_S = 20.0
EXIT_TIMEOUT_S = 10.0
DISPLAY_WIDTH = 150

EXPECTED_TOOLS = [
    "addOne", "sumMany", "scale", "maybeDouble", "hello", "configFlat",
    "configWhole", "mkResult", "noisyAdd", "scaleReal", "sumPoints",
    "swapPair", "mapInc", "bigList", "bigText", "pyFail", "slowEcho",
    "pureAnswer", "mustFail",
]


class CheckFailed(Exception):
    """A reply was not what the script expected."""


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def shorten(text: str, width: int = DISPLAY_WIDTH) -> str:
    if len(text) <= width:
        return text
    return f"{text[:width]}... ({len(text)} chars)"


class Server:
    """The server process with a line reader over its stdout."""

    def __init__(self, argv: list[str], stderr_file: Any):
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=stderr_file, bufsize=0)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin = self.proc.stdin
        self.stdout_fd = self.proc.stdout.fileno()
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.stdout_fd, selectors.EVENT_READ)
        self.buffer = b""
        self.eof = False

    def send(self, message: dict) -> None:
        self.stdin.write((compact(message) + "\n").encode())

    def read_line(self, timeout: float) -> bytes | None:
        """One line from stdout without its LF; None at end of file."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            if self.eof:
                return None
            left = deadline - time.monotonic()
            if left <= 0 or not self.selector.select(left):
                raise CheckFailed(f"no reply within {timeout:.0f} s")
            chunk = os.read(self.stdout_fd, 1 << 20)
            if not chunk:
                self.eof = True
                if self.buffer:
                    raise CheckFailed(f"stdout ended inside a line: {self.buffer[:200]!r}")
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def close(self) -> int:
        self.stdin.close()
        try:
            return self.proc.wait(timeout=EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise CheckFailed(f"server still running {EXIT_TIMEOUT_S:.0f} s after stdin was closed")


class Demo:
    def __init__(self, server: Server):
        self.server = server
        self.next_id = 1

    def notify(self, method: str, params: dict | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        print(f"-> {shorten(compact(message))}")
        self.server.send(message)

    def request(self, method: str, params: dict | None = None, *, show: bool = True) -> dict:
        request_id = self.next_id
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        print(f"-> {shorten(compact(message))}")
        self.server.send(message)
        line = self.server.read_line(REPLY_TIMEOUT_S)
        if line is None:
            raise CheckFailed(f"server closed stdout before answering {method} (id {request_id})")
        try:
            reply = json.loads(line)
        except ValueError:
            raise CheckFailed(f"reply is not JSON: {shorten(line.decode(errors='replace'))}") from None
        if show:
            print(f"<- {shorten(line.decode(errors='replace'))}")
        if not isinstance(reply, dict) or reply.get("jsonrpc") != "2.0":
            raise CheckFailed(f"not a JSON-RPC 2.0 reply: {shorten(compact(reply))}")
        if reply.get("id") != request_id:
            raise CheckFailed(f"reply id {reply.get('id')!r}, expected {request_id}")
        return reply

    def call(self, name: str, arguments: dict, check: Callable[[dict], None],
             show: bool = True) -> dict:
        reply = self.request("tools/call", {"name": name, "arguments": arguments}, show=show)
        if "result" not in reply:
            raise CheckFailed(f"{name}: expected a result, got {shorten(compact(reply))}")
        result = reply["result"]
        try:
            check(result)
        except CheckFailed as err:
            raise CheckFailed(f"{name}: {err}") from None
        return result


# --- result checks ------------------------------------------------------------

def text_of(result: dict) -> str:
    content = result.get("content")
    if not isinstance(content, list) or len(content) != 1:
        raise CheckFailed(f"expected one content block, got {shorten(compact(content))}")
    block = content[0]
    if block.get("type") != "text" or not isinstance(block.get("text"), str):
        raise CheckFailed(f"expected a text block, got {shorten(compact(block))}")
    return block["text"]


def ok_value(expected: Any, structured: bool = False) -> Callable[[dict], None]:
    """A successful result whose text is the JSON of `expected`."""

    def check(result: dict) -> None:
        if result.get("isError") is not False:
            raise CheckFailed(f"expected isError false, got {shorten(compact(result))}")
        text = text_of(result)
        try:
            value = json.loads(text)
        except ValueError:
            raise CheckFailed(f"result text is not JSON: {shorten(text)}") from None
        if value != expected:
            raise CheckFailed(f"expected {shorten(compact(expected))}, got {shorten(text)}")
        if structured:
            if result.get("structuredContent") != expected:
                raise CheckFailed(f"structuredContent is {compact(result.get('structuredContent'))}, "
                                  f"expected {compact(expected)}")
        elif "structuredContent" in result:
            raise CheckFailed("unexpected structuredContent on a non-record result")
    return check


def tool_error(fragment: str) -> Callable[[dict], None]:
    """An isError result whose text contains `fragment`."""

    def check(result: dict) -> None:
        if result.get("isError") is not True:
            raise CheckFailed(f"expected isError true, got {shorten(compact(result))}")
        text = text_of(result)
        if fragment not in text:
            raise CheckFailed(f"error text {text!r} does not mention {fragment!r}")
    return check


# --- the session ----------------------------------------------------------------

def run_session(demo: Demo) -> None:
    reply = demo.request("initialize", {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "demo", "version": "1"},
    })
    result = reply.get("result") or {}
    if result.get("protocolVersion") != "2025-06-18":
        raise CheckFailed(f"initialize: protocolVersion {result.get('protocolVersion')!r}")
    info = result.get("serverInfo") or {}
    if info.get("name") != "main" or info.get("version") != "0.98.2":
        raise CheckFailed(f"initialize: serverInfo {compact(info)}")
    if "tools" not in (result.get("capabilities") or {}):
        raise CheckFailed(f"initialize: no tools capability in {compact(result.get('capabilities'))}")

    demo.notify("notifications/initialized")

    reply = demo.request("tools/list", show=False)
    tools = (reply.get("result") or {}).get("tools")
    if not isinstance(tools, list):
        raise CheckFailed(f"tools/list: no tools array in {shorten(compact(reply))}")
    names = [t.get("name") for t in tools]
    print(f"<- tools/list: {len(names)} tools: {', '.join(map(str, names))}")
    if names != EXPECTED_TOOLS:
        raise CheckFailed(f"tools/list: names {names}, expected {EXPECTED_TOOLS}")
    for tool in tools:
        if not isinstance(tool.get("inputSchema"), dict):
            raise CheckFailed(f"tools/list: {tool.get('name')} has no inputSchema")
    by_name = {t["name"]: t for t in tools}
    if "outputSchema" not in by_name["mkResult"]:
        raise CheckFailed("tools/list: mkResult (record return) has no outputSchema")

    print("\n# remote calls (the pool is a separate process on a Unix socket)")
    demo.call("addOne", {"_1": 41}, ok_value(42))
    demo.call("hello", {"_1": "Ada"}, ok_value("Hello, Ada!"))
    demo.call("mkResult", {"_1": 7}, ok_value({"status": "ok", "value": 7}, structured=True))
    demo.call("scale", {"_1": 21}, ok_value(42))  # factor omitted: its default 2 is used
    demo.call("maybeDouble", {}, ok_value(None))  # optional positional omitted: null
    demo.call("sumPoints", {"_1": [{"x": 1, "y": 2}, {"x": 3, "y": 4}, {"x": 5, "y": 6}]},
              ok_value({"x": 9, "y": 12}, structured=True))
    demo.call("swapPair", {"_1": [1, "one"]}, ok_value(["one", 1]))
    demo.call("bigList", {"_1": 5}, ok_value([0, 1, 2, 3, 4]))
    result = demo.call("bigList", {"_1": 10000}, ok_value(list(range(10000))))
    print(f"   bigList 10000: {len(json.loads(text_of(result)))} elements, "
          f"{len(text_of(result))} characters of JSON text")

    print("\n# pure commands (evaluated inside the server, no pool)")
    demo.call("pureAnswer", {}, ok_value(42))
    demo.call("mustFail", {"_1": 1}, tool_error("intentional failure: boom"))

    print("\n# a bad argument is a JSON-RPC error, not a tool result")
    reply = demo.request("tools/call", {"name": "addOne", "arguments": {"n": 41}})
    error = reply.get("error")
    if not isinstance(error, dict) or error.get("code") != -32602:
        raise CheckFailed(f"bad argument: expected error -32602, got {shorten(compact(reply))}")
    # The message must name the argument it refuses; the server may add a hint
    # after it (the arguments the tool has), whose wording is not checked.
    message = error.get("message")
    if not isinstance(message, str) or not re.match(r"unknown argument 'n'(?![\w'])", message):
        raise CheckFailed(f"bad argument: the message does not name the unknown argument 'n': {message!r}")


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(f"usage: {argv[0]} <path-to-morloc-mcp> [manifest]", file=sys.stderr)
        return 2
    binary = argv[1]
    manifest = argv[2] if len(argv) == 3 else DEFAULT_MANIFEST
    if not os.path.exists(binary):
        print(f"demo: no server binary at '{binary}' (build it with `cargo build --release`)",
              file=sys.stderr)
        return 2
    command = [binary, "mcp", manifest]
    print(f"$ {binary} mcp {os.path.relpath(manifest)}\n")
    with tempfile.TemporaryFile() as stderr_file:
        server = Server(command, stderr_file)
        demo = Demo(server)
        failure = None
        try:
            run_session(demo)
            print("\n# close stdin: the server stops its pools and exits")
            status = server.close()
            if status != 0:
                raise CheckFailed(f"server exited with status {status}, expected 0")
            print(f"   exit status {status}")
        except CheckFailed as err:
            failure = str(err)
        except BrokenPipeError:
            failure = "the server closed its stdin (did it crash?)"
        finally:
            if server.proc.poll() is None:
                server.proc.kill()
                server.proc.wait()
        if failure is not None:
            stderr_file.seek(0)
            tail = stderr_file.read().decode(errors="replace").splitlines()[-20:]
            print(f"\ndemo FAILED: {failure}", file=sys.stderr)
            if tail:
                print("last lines of the server's stderr:", file=sys.stderr)
                for line in tail:
                    print(f"  {line}", file=sys.stderr)
            return 1
    print("\ndemo passed: every reply was as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
