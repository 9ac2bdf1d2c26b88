"""Runs the documentation: every shell block of README.md and docs/*.md.

    python3 tests/docs/check_docs.py <morloc-mcp binary> [page...]   (pages: README.md, docs/x.md)
    python3 tests/docs/check_docs.py <morloc-mcp binary> --flags

A fenced block whose language is `sh`, `shell`, `bash` or `console` is run,
unless the line before it (blank lines aside) is a marker with the reason it
cannot be: `<!-- not run: needs nginx -->`. A block that is run gets a fresh
shell (bash), started in the repository root, with `morloc-mcp` on `PATH`
and `target/release/morloc-mcp` both meaning the binary under test.

- A `console` block is a session: `$ ` starts a command (a line ending in a
  backslash continues it), and the lines up to the next command are what it
  prints on stdout. The output is compared with what the command really
  printed, modulo what changes from run to run: session, task and job ids
  (`<instance>.<32 hex digits>`), instance ids, trace and span ids, times
  (`2026-12-01T10:35:10.772Z`, `running for 0.3 s`, `"ttlMs":3602936`,
  `duration_ms=0.412`, `Content-Length: 173`), and `…`, which stands for
  text left out. An id the block shows is replaced by the id really printed
  in the commands that follow, so `$ SID=<id shown above>` works.
- An `sh` block is a script; it must exit 0.
- Every command must exit 0. A port given with `--http-port N` (N not 0) is
  replaced by a free one throughout the block; after a command put in the
  background with `&`, the block waits until its port accepts connections.
  When the block ends, what it started in the background gets SIGTERM.
- Paths: the repository root and the binary under test are printed as
  `/src/morloc-mcp` and `/src/morloc-mcp/target/release/morloc-mcp`.

Every relative link of a page must lead to a file, and to a heading of it
when it names one; README.md must link every page of docs/ (its map).

`--flags` checks the flag reference instead: every option that
`morloc-mcp [command] --help` (and, under the name `morloc-nexus`,
`morloc-nexus [mcp] --help`) prints is documented in the tables of
docs/usage.md, and every option that page, or any command line running
`morloc-mcp` in a shell block, names exists.

Python 3.9 or newer, standard library only; prints one line per block and
exits 1 if any failed.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
SHOWN_ROOT = "/src/morloc-mcp"
SHOWN_BIN = SHOWN_ROOT + "/target/release/morloc-mcp"
LANGUAGES = ("sh", "shell", "bash", "console")
NOT_RUN = re.compile(r"<!--\s*not run:\s*(.+?)\s*-->")
FENCE = re.compile(r"^(\s*)```([A-Za-z]*)\s*$")
BLOCK_TIMEOUT = 180  # seconds for a whole block; a block normally takes a few

# What varies from run to run, in the order tried. Kinds ending in "id" are
# carried from the output shown into the commands that follow.
VARIABLE = [
    ("sid", r"[A-Za-z0-9_-]{1,64}\.[0-9a-f]{32}"),
    ("iid", r"\bi[0-9a-f]{12}\b"),
    ("time", r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z"),
    ("hex", r"\b[0-9a-f]{32}\b|\b[0-9a-f]{16}\b"),
    ("running", r"running for \d+(?:\.\d+)? s"),
    ("ttl", r'"ttlMs":\d+'),
    ("ms", r"duration_ms=[0-9.]+|\"duration_ms\":[0-9.]+"),
    ("uptime", r'"uptimeSeconds":\d+'),
    ("length", r"(?i:content-length): \d+"),
]
GENERIC = {
    "sid": r"[A-Za-z0-9_-]{1,64}\.[0-9a-f]{32}",
    "iid": r"i[0-9a-f]{12}",
    "time": r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z",
    "hex": r"[0-9a-f]{32}|[0-9a-f]{16}",
    "running": r"running for \d+(?:\.\d+)? s",
    "ttl": r'"ttlMs":\d+',
    "ms": r"duration_ms=[0-9.]+|\"duration_ms\":[0-9.]+",
    "uptime": r'"uptimeSeconds":\d+',
    "length": r"(?i:content-length): \d+",
}
SCANNER = re.compile("|".join(f"(?P<{k}>{p})" for k, p in VARIABLE))
ELLIPSIS = "…"


class DocError(Exception):
    pass


@dataclass
class Block:
    page: str
    line: int  # 1-based line of the opening fence
    section: int  # the line of the heading it is under: one shell per section
    language: str
    text: str
    skip: str | None  # the reason it is not run


@dataclass
class Step:
    command: str
    shown: list[str] = field(default_factory=list)


def blocks(page: Path) -> list[Block]:
    """Every fenced shell block of a page, with its not-run marker if any."""
    lines = page.read_text().splitlines()
    out = []
    section = 0
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            if lines[i].startswith("#"):
                section = i + 1
            i += 1
            continue
        indent, language = m.group(1), m.group(2)
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        if language in LANGUAGES:
            before = i - 1
            while before >= 0 and not lines[before].strip():
                before -= 1
            marker = NOT_RUN.search(lines[before]) if before >= 0 else None
            body = "\n".join(line[len(indent):] if line.startswith(indent) else line
                             for line in lines[i + 1:end])
            out.append(Block(os.path.relpath(page, ROOT), i + 1, section, language, body,
                             marker.group(1) if marker else None))
        i = end + 1
    return out


def steps(block: Block) -> list[Step]:
    if block.language != "console":
        return [Step(block.text)]
    out: list[Step] = []
    lines = block.text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            command = line[2:]
            while command.endswith("\\") and i + 1 < len(lines):
                i += 1
                command += "\n" + lines[i]
            out.append(Step(command))
        elif out:
            out[-1].shown.append(line)
        else:
            raise DocError(f"{block.page}:{block.line}: output before the first `$ ` command")
        i += 1
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ports_of(text: str) -> dict[str, str]:
    return {p: str(free_port()) for p in dict.fromkeys(re.findall(r"--http-port[ =](\d+)", text)) if p != "0"}


def with_ports(text: str, ports: dict[str, str]) -> str:
    for old, new in ports.items():
        text = re.sub(rf"(?<=[:\s=]){old}\b", new, text)
    return text


def with_binary(command: str, binary: str) -> str:
    return re.sub(r"(?<![\w/.-])target/release/morloc-mcp\b", binary, command)


def pattern(shown: str) -> tuple[re.Pattern, list[tuple[str, str]]]:
    """A regex for the shown output, and the variable parts in its groups."""
    parts: list[str] = []
    captured: list[tuple[str, str]] = []
    at = 0

    def literal(text: str) -> str:
        return ".*?".join(re.escape(piece) for piece in text.split(ELLIPSIS))

    for m in SCANNER.finditer(shown):
        parts.append(literal(shown[at:m.start()]))
        kind = m.lastgroup
        parts.append(f"({GENERIC[kind]})")
        captured.append((kind, m.group(0)))
        at = m.end()
    parts.append(literal(shown[at:]))
    return re.compile("".join(parts), re.S), captured


def normal(actual: str, binary: str) -> str:
    for path in dict.fromkeys([str(Path(binary).resolve()), os.path.abspath(binary)]):
        actual = actual.replace(path, SHOWN_BIN)
    return actual.replace(str(ROOT), SHOWN_ROOT).replace("\r\n", "\n")


def run_section(section: list[Block], binary: str, bindir: Path) -> list[tuple[Block, str | None]]:
    """Runs the blocks of one section in one shell, in order, so that a server
    started in one block serves the next. Returns each block with None when it
    passed, or what went wrong; a block after a failed one is not run."""
    ports = ports_of("\n".join(b.text for b in section))
    ids: dict[str, str] = {}  # shown id -> real id
    results: list[tuple[Block, str | None]] = []
    with tempfile.TemporaryDirectory(prefix="docs-check-") as tmp:
        env = dict(os.environ)
        env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
        env.pop("MORLOC_MCP_TOKEN", None)
        env.pop("MORLOC_MCP_METRICS_TOKEN", None)
        # One bash for the section, fed a step at a time, so that variables and
        # functions carry over, and each step's output is read before the next
        # step is written (an id it printed may be needed there).
        shell = subprocess.Popen(["bash", "--norc", "--noprofile"], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                 start_new_session=True)
        assert shell.stdin and shell.stdout
        n = 0
        try:
            shell.stdin.write(PRELUDE)
            for block in section:
                try:
                    for step in steps(block):
                        n += 1
                        run_step(shell, block, step, Path(tmp), n, ports, ids, binary)
                    results.append((block, None))
                except DocError as e:
                    results.append((block, str(e)))
                    break
            shell.stdin.write("__stop\nexit 0\n")
            shell.stdin.flush()
            shell.wait(timeout=60)
        except (subprocess.TimeoutExpired, BrokenPipeError) as e:
            results.append((section[len(results)] if len(results) < len(section) else section[-1],
                            f"the shell did not finish: {e}"))
        finally:
            if shell.poll() is None:
                try:
                    os.killpg(shell.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
                shell.wait(timeout=30)
    return results


def run_step(shell: subprocess.Popen, block: Block, step: Step, tmp: Path, n: int,
             ports: dict[str, str], ids: dict[str, str], binary: str) -> None:
    assert shell.stdin
    command = step.command
    for shown_id, real_id in ids.items():
        command = command.replace(shown_id, real_id)
    command = with_binary(with_ports(command, ports), binary)
    background = command.rstrip().endswith("&")
    wait = ""
    if background:
        port = re.search(r"--http-port[ =](\d+)", command)
        wait = f"__bg=\"$__bg $!\"; __wait_port {port.group(1)} $!" if port else "__bg=\"$__bg $!\""
    script = tmp / f"step{n}.sh"
    out = tmp / f"step{n}.out"
    script.write_text(command + "\n")
    shell.stdin.write(f"__run {script} {out}\n{wait}\nprintf '@@done %s\\n' \"$__status\"\n")
    shell.stdin.flush()
    status = read_done(shell)
    actual = out.read_text(errors="replace")
    if status != "0" and not background:
        errors = Path(f"{out}.err").read_text(errors="replace")
        raise DocError(f"`{first_line(step.command)}` exited {status}; it printed:\n{actual[-2000:]}{errors[-2000:]}")
    if block.language == "console":
        compare(step, normal(actual, binary), ids)


PRELUDE = r"""
__bg=""
__run() { { . "$1"; } >"$2" 2>"$2.err" </dev/null; __status=$?; }
__wait_port() {  # port, pid of the server: until it listens, or has exited
    for __i in $(seq 600); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        kill -0 "$2" 2>/dev/null || return 0
        sleep 0.1
    done
}
__stop() {
    [ -n "$__bg" ] || return 0
    kill $__bg 2>/dev/null
    wait $__bg 2>/dev/null
}
"""


def read_done(shell: subprocess.Popen) -> str:
    import select
    assert shell.stdout
    ready, _, _ = select.select([shell.stdout], [], [], BLOCK_TIMEOUT)
    if not ready:
        raise DocError(f"a step did not finish within {BLOCK_TIMEOUT} s")
    line = shell.stdout.readline()
    m = re.match(r"@@done (\d+)", line)
    if not m:
        raise DocError(f"the block's shell ended early: {line!r}")
    return m.group(1)


def first_line(command: str) -> str:
    line = command.splitlines()[0]
    return line if len(line) <= 120 else line[:117] + "..."


def compare(step: Step, actual: str, ids: dict[str, str]) -> None:
    # A background command's stdout goes to the terminal; here to its file.
    shown = "\n".join(step.shown).rstrip("\n")
    got = actual.rstrip("\n")
    if step.command.rstrip().endswith("&"):
        return
    regex, captured = pattern(shown)
    m = regex.fullmatch(got)
    if not m:
        raise DocError(f"`{first_line(step.command)}` printed something else.\n"
                       f"--- shown\n{shown}\n--- printed\n{got}\n--- first difference\n"
                       f"{first_difference(shown, got)}")
    for (kind, shown_value), real in zip(captured, m.groups()):
        if kind in ("sid", "iid"):
            if ids.get(shown_value, real) != real:
                raise DocError(f"the block shows {shown_value} for two different ids ({ids[shown_value]}, {real})")
            ids[shown_value] = real


def first_difference(shown: str, got: str) -> str:
    for i, (a, b) in enumerate(zip(shown, got)):
        if a != b:
            return f"at character {i}: shown {shown[max(0, i - 40):i + 40]!r}, printed {got[max(0, i - 40):i + 40]!r}"
    return f"one is a prefix of the other (shown {len(shown)} characters, printed {len(got)})"


def pages(args: list[str]) -> list[Path]:
    if args:
        return [ROOT / a for a in args]  # an absolute path stays as it is
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def has_oauth(binary: str) -> bool:
    # A default build stops at the missing key file; one without OAuth at the option.
    try:
        done = subprocess.run([binary, "mcp", "examples/shapes", "--http-port", "0",
                               "--oauth-issuer", "https://a.example/", "--oauth-jwks", "/nonexistent/jwks.json"],
                              cwd=ROOT, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return True  # it served: the options were taken
    return "no OAuth support" not in done.stderr


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*_\[\]()]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def broken_links(page: Path) -> list[str]:
    """Relative links of a page whose file, or heading, does not exist."""
    out = []
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            out.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md":
            anchors = {slug(h) for h in re.findall(r"^#+\s+(.*)$", dest.read_text(), re.M)}
            if anchor not in anchors:
                out.append(f"{target}: no such heading")
    return out


def unmapped(readme: Path) -> list[str]:
    """The pages of docs/ that README.md, the front door, does not link."""
    linked = set(re.findall(r"\]\((docs/[^)#\s]+)", readme.read_text()))
    return [f"docs/{p.name}" for p in sorted((ROOT / "docs").glob("*.md")) if f"docs/{p.name}" not in linked]


def check_blocks(binary: str, names: list[str]) -> int:
    failed = 0
    for page in pages(names):
        for problem in broken_links(page):
            failed += 1
            print(f"{os.path.relpath(page, ROOT)}: FAILED: link {problem}")
        if page.name == "README.md":
            for missing in unmapped(page):
                failed += 1
                print(f"README.md: FAILED: {missing} is not in the map of the docs")
    with tempfile.TemporaryDirectory(prefix="docs-bin-") as bindir:
        (Path(bindir) / "morloc-mcp").symlink_to(Path(binary).resolve())
        for page in pages(names):
            sections: dict[int, list[Block]] = {}
            for block in blocks(page):
                if not block.skip and "--oauth-" in block.text and not has_oauth(binary):
                    block.skip = "this build has no OAuth support (built without the `oauth` feature)"
                if block.skip:
                    print(f"{block.page}:{block.line}: not run: {block.skip}")
                else:
                    sections.setdefault(block.section, []).append(block)
            for section in sections.values():
                results = run_section(section, binary, Path(bindir))
                for block, problem in results:
                    where = f"{block.page}:{block.line}"
                    if problem is None:
                        print(f"{where}: ok, {len(steps(block))} command(s)", flush=True)
                    else:
                        failed += 1
                        print(f"{where}: FAILED: {problem}", flush=True)
                for block in section[len(results):]:
                    print(f"{block.page}:{block.line}: not reached (an earlier block of its section failed)")
    return 1 if failed else 0


# --- flags ------------------------------------------------------------------

COMMANDS = ("mcp", "router", "tools", "config")
LONG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def help_flags(binary: str) -> set[str]:
    """Every option the help texts print: of `morloc-mcp` and each command,
    and of the binary run under the name `morloc-nexus` (its `--help` and
    `mcp --help`)."""
    flags: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="docs-nexus-") as tmp:
        nexus = Path(tmp) / "morloc-nexus"
        nexus.symlink_to(Path(binary).resolve())
        runs = [(binary, "morloc-mcp", args) for args in ([], *([c] for c in COMMANDS))]
        runs += [(str(nexus), "morloc-nexus", args) for args in ([], ["mcp"])]
        for program, name, args in runs:
            done = subprocess.run([program, *args, "--help"], capture_output=True, text=True, timeout=30)
            if done.returncode != 0:
                raise DocError(f"`{name} {' '.join(args)} --help` exited {done.returncode}: {done.stderr}")
            flags.update(LONG.findall(done.stdout))
    return flags


def table_flags(usage: Path) -> set[str]:
    """The options named in the first cell of the flag tables of the usage page."""
    flags: set[str] = set()
    for line in usage.read_text().splitlines():
        if line.startswith("| `--") or line.startswith("| `-"):
            flags.update(LONG.findall(line.split("|")[1]))
    return flags


def command_flags() -> dict[str, set[str]]:
    """The options of every `morloc-mcp` command line in the shell blocks."""
    found: dict[str, set[str]] = {}
    for page in pages([]):
        for block in blocks(page):
            text = re.sub(r"\\\n", " ", block.text)
            for line in text.splitlines():
                # morloc-mcp as the command (not an argument of another program).
                for m in re.finditer(r"(?:^\$?\s*|[|;&]\s*)(?:[A-Z_]+=\S*\s+)*(?:\S*/)?morloc-mcp\s+(\w+)([^|&;#]*)",
                                     line):
                    if m.group(1) in COMMANDS:
                        for flag in LONG.findall(m.group(2)):
                            found.setdefault(flag, set()).add(f"{block.page}:{block.line}")
    return found


def check_flags(binary: str) -> int:
    usage = ROOT / "docs" / "usage.md"
    have = help_flags(binary)
    documented = table_flags(usage)
    problems = [f"`{f}` is in --help but not documented in docs/usage.md" for f in sorted(have - documented)]
    problems += [f"`{f}` is documented in docs/usage.md but not in --help" for f in sorted(documented - have)]
    for flag, where in sorted(command_flags().items()):
        if flag not in have:
            problems.append(f"`{flag}` is used in {', '.join(sorted(where))} but not in --help")
    for p in problems:
        print(f"flags: {p}")
    print(f"flags: {len(have)} options in --help, {len(documented)} documented, {len(problems)} problem(s)")
    return 1 if problems else 0


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary = argv[1]
    if argv[2:] == ["--flags"]:
        return check_flags(binary)
    return check_blocks(binary, argv[2:])


def _stopped(signum: int, _frame) -> None:
    # Unwind, so that each section's `finally` stops the servers its shell
    # started (their own process group) instead of leaving them serving.
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _stopped)
    signal.signal(signal.SIGHUP, _stopped)
    sys.exit(main(sys.argv))
