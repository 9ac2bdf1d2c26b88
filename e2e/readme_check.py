"""Runs README.md's MCP Inspector command line with the Inspector installed in the cache.

Every other shell block of README.md and docs/ runs in `make test`
(tests/docs/check_docs.py); this one needs npm and the network, so it runs
here. The line is taken from the README text itself (so the README cannot
drift from what works): `npx -y @modelcontextprotocol/inspector@<version>`
becomes the Inspector installed in the cache, and `target/release/morloc-mcp`
the binary under test. It runs in the repository root, where the README's
paths (`examples/shapes`) are.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NPX = re.compile(r"^npx -y @modelcontextprotocol/inspector(@[\w.-]+)? ")


class ReadmeError(Exception):
    pass


def inspector_line(readme: Path) -> str:
    blocks = re.findall(r"```sh\n(.*?)```", readme.read_text(), re.S)
    lines = [line.strip() for block in blocks for line in block.splitlines() if NPX.match(line.strip())]
    if len(lines) != 1:
        raise ReadmeError(f"expected one Inspector line in README.md, found {len(lines)}")
    return lines[0]


def run(readme: Path, binary: str, manifest: Path, inspector: str, env: dict[str, str]) -> list[str]:
    line = inspector_line(readme)
    args = shlex.split(NPX.sub("", line))
    argv = [inspector] + [binary if a in ("target/release/morloc-mcp", "morloc-mcp") else a for a in args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    if done.returncode != 0:
        raise ReadmeError(f"Inspector exited {done.returncode}: {done.stderr[-2000:]}")
    names = re.findall(r'"name":\s*"([^"]+)"', done.stdout)
    if "addOne" not in names:
        raise ReadmeError(f"Inspector listed no addOne: {done.stdout[:2000]}")
    return [f"Inspector listed {len(set(names))} names"]


if __name__ == "__main__":
    import os
    import sys
    print(run(ROOT / "README.md", sys.argv[1], ROOT / "examples/shapes/manifest.json", sys.argv[2], dict(os.environ)))
