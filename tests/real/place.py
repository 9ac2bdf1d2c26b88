#!/usr/bin/env python3
"""Where a real Morloc installation lives, and how to run things there.

Two kinds of place, both found by `make test-real` and the benchmarks:

- *native*: the installation at $MORLOC_HOME (default
  ~/.local/share/morloc) with the `morloc` compiler on PATH. Programs are
  compiled and served here, in this environment.
- *root*: a root directory (MORLOC_ROOT, default /opt/morloc-root, e.g. a
  Debian root made with debootstrap) holding an installation at its own
  default place (~/.local/share/morloc of the root's superuser, whose home
  its /etc/passwd gives; or MORLOC_ROOT_HOME) and the compiler at
  /usr/local/bin/morloc. Programs are compiled and served
  inside it with chroot(8), which needs root: the server binary is copied
  in, the sources and compiled programs live under /var/cache/morloc-mcp
  inside it, and the drivers (tests, benchmarks) run outside and speak
  stdio or HTTP to the server inside. /proc, /dev and /dev/shm are bound
  into the root while a run needs them (`mounted`), and unbound after
  (those this run bound).

A path "inside" is what processes in the place see; a path "on the host"
is where the driver finds the same file (the root's path before it). For
a native place they are the same.

    python3 tests/real/place.py check          # prints the place, or why none (exit 1)
    python3 tests/real/place.py compile CACHE PROGRAM_DIR...
                                               # tests/real/compile.sh in the place; prints the
                                               # host path of the compiled programs

Nothing here builds or installs Morloc.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ROOT = "/opt/morloc-root"
# Inside a root: where the suite keeps what it copies in and compiles.
ROOT_CACHE = "/var/cache/morloc-mcp"
# Bound into a root while it serves (in this order; unbound in reverse).
ROOT_MOUNTS = ("proc", "dev", "dev/shm")


class Unusable(Exception):
    """No installation here; the message says why."""


class Place:
    """An installation and the way to run programs with it."""

    def __init__(self, root: str | None, home: str):
        self.root = root
        self.home = home  # inside

    # -- paths -----------------------------------------------------------------

    def host(self, inside: str) -> str:
        """The host path of an absolute path inside the place."""
        if self.root is None:
            return inside
        return os.path.join(self.root, inside.lstrip("/"))

    def inside(self, host: str) -> str:
        """The path inside the place of a host path under it."""
        if self.root is None:
            return host
        host = os.path.abspath(host)
        rel = os.path.relpath(host, self.root)
        if rel == os.pardir or rel.startswith(os.pardir + os.sep):
            raise ValueError("%s is not inside the root %s" % (host, self.root))
        return "/" + ("" if rel == "." else rel)

    def mkdtemp(self, prefix: str) -> str:
        """A new directory in the place's /tmp (host path)."""
        base = None if self.root is None else self.host("/tmp")
        return tempfile.mkdtemp(prefix=prefix, dir=base)

    def tmp(self) -> str:
        """The place's /tmp on the host."""
        return tempfile.gettempdir() if self.root is None else self.host("/tmp")

    # -- running ---------------------------------------------------------------

    def env(self) -> dict[str, str]:
        """The environment of a process run in the place: the runtime's
        variables (inside a root, only those and a few basics)."""
        home = self.home
        if self.root is None:
            env = dict(os.environ)
            env["MORLOC_HOME"] = home
            env["LD_LIBRARY_PATH"] = os.pathsep.join(
                p for p in (os.path.join(home, "lib"), env.get("LD_LIBRARY_PATH", "")) if p)
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (os.path.join(home, "opt"), env.get("PYTHONPATH", "")) if p)
            return env
        return {
            "PATH": "%s/bin:/usr/local/bin:/usr/bin:/bin" % home,
            "HOME": superuser_home(self.root),
            "LANG": "C.UTF-8",
            "MORLOC_HOME": home,
            "LD_LIBRARY_PATH": os.path.join(home, "lib"),
            "PYTHONPATH": os.path.join(home, "opt"),
        }

    def argv(self, argv: list[str], extra_env: dict[str, str] | None = None) -> list[str]:
        """The command line that runs `argv` (paths inside) in the place.
        Inside a root the process keeps the pid chroot started with (chroot
        and env exec), so signals and /proc reach it directly."""
        if self.root is None:
            return list(argv)
        env = dict(self.env(), **(extra_env or {}))
        return ["chroot", self.root, "/usr/bin/env", "-i"] + ["%s=%s" % kv for kv in env.items()] + list(argv)

    def popen_env(self, extra_env: dict[str, str] | None = None) -> dict[str, str]:
        """The environment to give Popen with `argv` (chroot itself runs
        with the driver's)."""
        if self.root is None:
            return dict(self.env(), **(extra_env or {}))
        return dict(os.environ)

    def run(self, argv: list[str], **kw) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv(argv), env=self.popen_env(), **kw)

    def reference(self) -> str | None:
        """The reference server, `morloc-nexus` (host path), if installed."""
        path = self.host(os.path.join(self.home, "bin", "morloc-nexus"))
        if os.access(path, os.X_OK):
            return path
        if self.root is None:
            return shutil.which("morloc-nexus")
        return None

    def install_binary(self, binary: str) -> str:
        """The server binary as the place runs it (host path): inside a
        root, a copy under its cache (replaced atomically)."""
        if self.root is None:
            return os.path.abspath(binary)
        # One directory per source path, so two binaries of one name differ.
        key = hashlib.sha256(os.path.abspath(binary).encode()).hexdigest()[:12]
        target = self.host(os.path.join(ROOT_CACHE, "bin", key, os.path.basename(binary)))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        tmp = target + ".new"
        shutil.copy2(binary, tmp)
        os.replace(tmp, target)
        return target

    def copy_in(self, source: str, name: str) -> str:
        """Directory `source` as the place sees it (host path): inside a
        root, a fresh copy under its cache, named `name`."""
        if self.root is None:
            return source
        target = self.host(os.path.join(ROOT_CACHE, name))
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(source, target, symlinks=True)
        return target

    def describe(self) -> str:
        if self.root is None:
            return "runtime from %s, compiler %s" % (self.home, shutil.which("morloc"))
        return "runtime inside the root %s at %s (served with chroot)" % (self.root, self.home)


def superuser_home(root: str) -> str:
    """The home directory of uid 0 inside `root`, from its /etc/passwd."""
    try:
        with open(os.path.join(root, "etc", "passwd"), encoding="utf-8") as f:
            for line in f:
                fields = line.rstrip("\n").split(":")
                if len(fields) >= 6 and fields[2] == "0":
                    return fields[5]
    except OSError:
        pass
    return "/"


def root_home(root: str) -> str:
    """Where the installation inside `root` is: MORLOC_ROOT_HOME, else the
    default place for its superuser."""
    return os.environ.get("MORLOC_ROOT_HOME") or os.path.join(
        superuser_home(root), ".local", "share", "morloc")


def native_home() -> str:
    return os.environ.get("MORLOC_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share", "morloc")


def why_unusable(place: Place, need_compiler: bool = True) -> str | None:
    """Why `place` cannot serve the programs, or None when it can: the
    runtime library, the Python binding the generated pools import (from
    $MORLOC_HOME/opt, as their sys.path line says), the root-py module, and
    (when asked) the compiler."""
    home = place.host(place.home)
    if place.root is not None and os.geteuid() != 0:
        return "serving inside it needs chroot, which needs root"
    if not os.path.isdir(home):
        return "no such directory %s" % home
    if not os.path.isfile(os.path.join(home, "lib", "libmorloc.so")):
        return "no lib/libmorloc.so in %s" % home
    if not os.path.isdir(os.path.join(home, "src", "morloc", "plane", "default", "root-py")):
        return "no root-py module in %s/src/morloc/plane/default" % home
    with mounted(place):
        probe = place.run(["python3", "-c", "import pymorloc"], capture_output=True)
    if probe.returncode != 0:
        err = probe.stderr.decode("utf-8", "replace").strip().splitlines() or ["exit %d" % probe.returncode]
        return "python3 cannot import pymorloc from opt/: %s" % err[-1]
    if need_compiler:
        if place.root is None and shutil.which("morloc") is None:
            return "the morloc compiler is not on PATH"
        if place.root is not None and not os.access(place.host("/usr/local/bin/morloc"), os.X_OK):
            return "no compiler at /usr/local/bin/morloc inside it"
    return None


def find(need_compiler: bool = True) -> tuple[Place | None, str]:
    """The place to use, or None and why there is none: a usable native
    installation first, then the root at MORLOC_ROOT (default
    /opt/morloc-root)."""
    native = Place(None, native_home())
    why = why_unusable(native, need_compiler)
    if why is None:
        return native, ""
    reasons = ["no usable Morloc installation at %s (%s; MORLOC_HOME names another)" % (native.home, why)]
    root = os.path.abspath(os.environ.get("MORLOC_ROOT") or DEFAULT_ROOT)
    if os.path.isdir(root):
        place = Place(root, root_home(root))
        why = why_unusable(place, need_compiler)
        if why is None:
            return place, ""
        reasons.append("nor in the root %s (%s)" % (root, why))
    else:
        reasons.append("no root directory %s (MORLOC_ROOT names another)" % root)
    return None, "; ".join(reasons)


def is_mountpoint(path: str) -> bool:
    real = os.path.realpath(path)
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        return any(line.split()[4] == real for line in f)


@contextlib.contextmanager
def mounted(place: Place):
    """/proc, /dev and /dev/shm bound into a root for the duration (a
    native place needs nothing); what this bound is unbound after. Nested
    uses bind nothing more."""
    done = []
    try:
        if place.root is not None:
            for sub in ROOT_MOUNTS:
                target = os.path.join(place.root, sub)
                os.makedirs(target, exist_ok=True)
                if not is_mountpoint(target):
                    subprocess.run(["mount", "--bind", "/" + sub, target], check=True)
                    done.append(target)
        yield place
    finally:
        for target in reversed(done):
            subprocess.run(["umount", target], check=False)


def compile_programs(place: Place, cache: str, sources: list[str]) -> str:
    """Compiles the program directories `sources` with compile.sh in the
    place; returns the host path of the directory of compiled programs. A
    native place uses `cache`; a root, its own cache (sources copied in)."""
    script = os.path.join(HERE, "compile.sh")
    if place.root is None:
        out = subprocess.run(["sh", script, cache] + sources, env=place.env(), stdout=subprocess.PIPE, check=True)
        return out.stdout.decode().strip().splitlines()[-1]
    base = place.host(ROOT_CACHE)
    os.makedirs(base, exist_ok=True)
    shutil.copy2(script, os.path.join(base, "compile.sh"))
    inner = [place.inside(place.copy_in(source, os.path.join("src", os.path.basename(os.path.normpath(source)))))
             for source in sources]
    with mounted(place):
        out = place.run(["sh", os.path.join(ROOT_CACHE, "compile.sh"), os.path.join(ROOT_CACHE, "programs")] + inner,
                        stdout=subprocess.PIPE, check=True)
    return place.host(out.stdout.decode().strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    if argv[:1] == ["check"]:
        place, why = find()
        if place is None:
            print(why)
            return 1
        print(place.describe())
        return 0
    if argv[:1] == ["compile"] and len(argv) >= 3:
        place, why = find()
        if place is None:
            print(why, file=sys.stderr)
            return 1
        try:
            print(compile_programs(place, argv[1], argv[2:]))
        except subprocess.CalledProcessError:
            return 1
        return 0
    print(__doc__.split("\n\n")[-2], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
