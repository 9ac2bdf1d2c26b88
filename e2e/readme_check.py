"""Runs the commands of README.md's "Use it with your MCP client" section.

The section shows three things a user copies: the `config` command, the MCP
Inspector command line and an HTTP session with a token. Each snippet is
taken from the README text itself (so the README cannot drift from what
works), with the placeholders mapped onto this checkout: `morloc-mcp` is the
binary under test, `prog-build/manifest.json` the example program, `npx
@modelcontextprotocol/inspector` the Inspector installed in the cache, the
fixed port a free one, and `curl` replayed with Python's HTTP client.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

SECTION = "## Use it with your MCP client"


class ReadmeError(Exception):
    pass


def section(readme: Path) -> str:
    text = readme.read_text()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start:end if end != -1 else None]


def shell_blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", text, re.S)


def command_lines(block: str) -> list[str]:
    """Joins backslash continuations; drops comments and blank lines."""
    joined = re.sub(r"\\\n\s*", " ", block)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


def map_args(args: list[str], binary: str, manifest: Path) -> list[str]:
    out = []
    for a in args:
        if a == "morloc-mcp":
            out.append(binary)
        elif a.endswith("prog-build/manifest.json"):
            out.append(str(manifest))
        else:
            out.append(a)
    return out


def check_config(line: str, binary: str, manifest: Path) -> str:
    args = map_args(shlex.split(line), binary, manifest)
    done = subprocess.run(args, capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise ReadmeError(f"`{line}` exited {done.returncode}: {done.stderr}")
    entry = json.loads(done.stdout)["mcpServers"]
    (name, server), = entry.items()
    expected_args = ["mcp", str(manifest.resolve()), "--max-result-chars", "80000"]
    if server.get("command") != str(Path(binary).resolve()) or server.get("args") != expected_args:
        raise ReadmeError(f"`{line}` printed {done.stdout}")
    return f"config entry for {name!r}"


def check_inspector(line: str, binary: str, manifest: Path, inspector: str, env: dict[str, str]) -> str:
    args = shlex.split(line)
    if args[:2] != ["npx", "@modelcontextprotocol/inspector"]:
        raise ReadmeError(f"unexpected Inspector command: {line}")
    argv = [inspector] + map_args(args[2:], binary, manifest)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
    if done.returncode != 0:
        raise ReadmeError(f"Inspector exited {done.returncode}: {done.stderr[-2000:]}")
    names = re.findall(r'"name":\s*"([^"]+)"', done.stdout)
    if "addOne" not in names:
        raise ReadmeError(f"Inspector listed no addOne: {done.stdout[:2000]}")
    return f"Inspector listed {len(set(names))} names"


def check_http(lines: list[str], binary: str, manifest: Path) -> str:
    serve = next(l for l in lines if "--http-port" in l)
    curl = next(l for l in lines if l.startswith("curl"))
    words = shlex.split(serve.rstrip("&").strip())
    env = dict(os.environ)
    while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    port_at = words.index("--http-port") + 1
    words[port_at] = "0"
    argv = map_args(words, binary, manifest)
    server = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, env=env)
    try:
        banner = server.stderr.readline()
        match = re.search(r"http://([0-9.]+):(\d+)/mcp", banner)
        if not match:
            raise ReadmeError(f"no address in the server banner: {banner!r}")
        host, port = match.groups()
        c = shlex.split(curl)
        url = next(a for a in c if a.startswith("http://"))
        url = re.sub(r"http://[^/]+", f"http://{host}:{port}", url)
        headers = {}
        body = None
        for flag, value in zip(c, c[1:]):
            if flag == "-H":
                key, _, val = value.partition(":")
                headers[key.strip()] = val.strip()
            elif flag == "-d":
                body = value.encode()
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            session = response.headers.get("Mcp-Session-Id")
            reply = json.loads(response.read())
        if not session or reply.get("result", {}).get("serverInfo", {}).get("name") != "main":
            raise ReadmeError(f"unexpected initialize reply: {reply}")
        # The same request without the token must be refused.
        anonymous = {k: v for k, v in headers.items() if k.lower() != "authorization"}
        try:
            urllib.request.urlopen(urllib.request.Request(url, data=body, headers=anonymous, method="POST"),
                                   timeout=30)
            raise ReadmeError("a request without the token was accepted")
        except urllib.error.HTTPError as e:
            if e.code != 401:
                raise ReadmeError(f"a request without the token got {e.code}, expected 401")
        return "HTTP session with a token (and 401 without)"
    finally:
        server.terminate()
        server.wait(timeout=10)


def run(readme: Path, binary: str, manifest: Path, inspector: str, env: dict[str, str]) -> list[str]:
    blocks = shell_blocks(section(readme))
    if len(blocks) != 3:
        raise ReadmeError(f"expected 3 shell snippets in {SECTION!r}, found {len(blocks)}")
    config_lines, inspector_lines, http_lines = (command_lines(b) for b in blocks)
    done = [check_config(config_lines[0], binary, manifest),
            check_inspector(inspector_lines[0], binary, manifest, inspector, env),
            check_http(http_lines, binary, manifest)]
    return done


if __name__ == "__main__":
    import sys
    root = Path(__file__).resolve().parent.parent
    print(run(root / "README.md", sys.argv[1], root / "examples/shapes/manifest.json", sys.argv[2], dict(os.environ)))
