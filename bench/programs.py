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


class RealRuntime:
    """A real Morloc installation found as `make test-real` finds one
    (tests/real/place.py): natively, or inside a root directory served with
    chroot. Gives the compiled programs (host paths), the command line that
    serves one with a given server binary, and the reference server."""

    def __init__(self, place, programs: str):
        self.place = place
        self.programs = programs

    def manifest(self, name: str) -> str | None:
        path = os.path.join(self.programs, name, "nexus-build", "manifest.json")
        return path if os.path.isfile(path) else None

    def argv(self, binary: str, manifest: str, args: list[str],
             extra_env: dict[str, str] | None = None) -> list[str]:
        """`binary mcp manifest args` run where the installation is (the
        binary is copied into a root), with `extra_env` added to its
        environment (give the same to `env`)."""
        p = self.place
        return p.argv([p.inside(p.install_binary(binary)), "mcp", p.inside(manifest), *args], extra_env)

    def reference_argv(self, manifest: str) -> list[str] | None:
        ref = self.place.reference()
        if ref is None:
            return None
        p = self.place
        return p.argv([p.inside(ref), "mcp", p.inside(manifest)])

    def env(self, extra_env: dict[str, str] | None = None) -> dict[str, str]:
        return self.place.popen_env(extra_env)

    def mounted(self):
        return _place().mounted(self.place)


def _place():
    import sys
    sys.path.insert(0, os.path.join(ROOT, "tests", "real"))
    import place  # noqa: E402  (tests/real/place.py)
    return place


def real_runtime() -> RealRuntime | None:
    """The real installation and its compiled programs ($MORLOC_PROGRAMS,
    else where `make test-real` compiled them: .cache/real-programs/current,
    or /var/cache/morloc-mcp/programs/current inside a root), or None."""
    place_mod = _place()
    found, _ = place_mod.find(need_compiler=False)
    if found is None:
        return None
    programs = os.environ.get("MORLOC_PROGRAMS")
    if not programs:
        if found.root is None:
            programs = os.path.join(ROOT, ".cache", "real-programs", "current")
        else:
            programs = found.host(os.path.join(place_mod.ROOT_CACHE, "programs", "current"))
    return RealRuntime(found, programs)
