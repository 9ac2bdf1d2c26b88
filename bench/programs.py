"""The programs the benchmarks serve.

- Test-pool programs: the `shapes` manifest of tests/data served by
  tests/pool/testpool.py, and `spin`, one CPU-bound function with small
  arguments and results (the test pool's `bench` program).
- Programs compiled by the real Morloc compiler, with the real runtime, for
  the benchmarks that use them (big_results.py, replicas.py, latency.py).
  The runtime is the Morloc installation at $MORLOC_HOME (default
  ~/.local/share/morloc). The compiled programs are those `make test-real`
  compiled into .cache/real-programs/current (the `workbench` program), or
  under $MORLOC_PROGRAMS (<dir>/<name>/nexus-build/manifest.json). Nothing
  here builds Morloc.
"""

from __future__ import annotations

import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Printed by a benchmark that skips its real-pool part.
NEEDS = ("needs a Morloc installation (MORLOC_HOME, default ~/.local/share/morloc) and the program "
         "compiled by `make test-real` (or under MORLOC_PROGRAMS)")


def usable_home(home: str) -> bool:
    return (os.path.isfile(os.path.join(home, "lib", "libmorloc.so"))
            and os.path.isdir(os.path.join(home, "opt")))


def runtime_env() -> dict[str, str] | None:
    """The environment real pools run in, or None without a runtime."""
    home = os.environ.get("MORLOC_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share", "morloc")
    if not usable_home(home):
        return None
    env = dict(os.environ)
    env["MORLOC_HOME"] = home
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        p for p in (os.path.join(home, "lib"), env.get("LD_LIBRARY_PATH", "")) if p)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (os.path.join(home, "opt"), env.get("PYTHONPATH", "")) if p)
    return env


def program_manifest(name: str) -> str | None:
    """The manifest of a compiled program, or None when it is not there."""
    programs = os.environ.get("MORLOC_PROGRAMS") or os.path.join(ROOT, ".cache", "real-programs", "current")
    path = os.path.join(programs, name, "nexus-build", "manifest.json")
    return path if os.path.isfile(path) else None


TESTPOOL = os.path.join(ROOT, "tests", "pool", "testpool.py")


def test_pool_manifest(directory: str) -> str:
    """The shapes manifest with the test pool as its Python pool, written
    into `directory`; returns its path."""
    with open(os.path.join(ROOT, "tests", "data", "shapes", "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    manifest["pools"][0]["exec"] = ["python3", TESTPOOL]
    path = os.path.join(directory, "manifest.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(manifest, f)
    return path


def spin_manifest(directory: str) -> tuple[str, dict[str, str]]:
    """A one-command program, `spin(_1: int) -> int` (N steps of Python
    integer work in the test pool), written into `directory`; returns its
    path and the environment its pool needs."""
    with open(os.path.join(ROOT, "tests", "data", "shapes", "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    command = next(c for c in manifest["commands"] if c["name"] == "addOne")
    command = {**command, "name": "spin", "mid": 1, "desc": ["CPU-bound: N steps of integer work"]}
    manifest.update(name="spin", commands=[command])
    manifest["pools"][0]["exec"] = ["python3", TESTPOOL]
    path = os.path.join(directory, "manifest.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(manifest, f)
    return path, dict(os.environ, TESTPOOL_PROGRAM="bench")


def spin_answer(n: int) -> str:
    """What `spin n` returns, as the tool's text."""
    x = 1
    for i in range(n):
        x = (x * 31 + i) % 1_000_003
    return str(x)
