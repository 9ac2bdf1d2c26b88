"""Runs real MCP clients against morloc-mcp and reports what failed where.

    python3 e2e/harness.py [--bin PATH] [PATTERN...]

Usually started by e2e/run.sh, which installs the clients into .cache/ and
builds the server first. Each job is one client on one transport, or one
run of the official conformance suite:

    clients     python-sdk-1, python-sdk-2, fastmcp, typescript-sdk,
                typescript-sdk-2 (negotiating), typescript-sdk-2-legacy (its
                default, initialize only), inspector; task jobs (server with
                --task-after 0, the wire checked by check_task_wire, HTTP
                recorded through e2e/http_tap.py): inspector-tasks,
                fastmcp-tasks; jobs-python-sdk-2 (the Python SDK 2.x, no
                Tasks extension, server with --job-tools --task-after 1000:
                a 5-s call driven to its result through the job tools)
    transports  stdio   (`morloc-mcp mcp PROGRAM`, started by the client
                         through e2e/stdio_tap.py, which records the wire)
                http    (`morloc-mcp mcp PROGRAM --http-port 0`)
                router  (`morloc-mcp router --http-port 0 PROGRAM`)
    conformance conformance:2025-06-18 and conformance:all (suite 0.1.16),
                conformance:2026-07-28 (suite 0.2.0-alpha.12, --suite all),
                against tests/data/programs/conformance over HTTP, and
                conformance:2026-07-28-router, the same through the router;
                conformance:tasks (and -router): every tasks-* scenario the
                suite lists, one run each (--force --scenario), server
                started with --task-after 0
    schemas     json-schema-2020-12: every modern tools/list schema of several
                programs compiled as JSON Schema 2020-12 (Ajv, strict)
    bigresults  bigresults:python-sdk-2:auto|legacy:stdio|http|router and
                bigresults:typescript-sdk-2:auto|legacy:stdio|http|router: the
                server with --max-result-chars, a 5 M-element list result read
                page by page through resources/read (e2e/clients/bigresults_*;
                through the router the tools are module-prefixed)
    metrics     GET /metrics parsed by prometheus_client after a known mix of
                calls (e2e/clients/metrics_check.py): every counter equals
                what was done

A PATTERN selects jobs by name prefix (`typescript-sdk`, `inspector:stdio`,
`conformance`). `--subset` (or E2E_SUBSET=1) runs a representative subset
instead, for a second binary of the same code (`make test` runs everything
against the static binary and this against the release one): every client
once, the transports taken in turn so each is used, one conformance run per
suite (conformance:all, conformance:2026-07-28), one big-results job per
client, and the single jobs (schemas, readme, OAuth, metrics). Each client driver prints one JSON line per step (see
e2e/clients/checks.py); a job passes when every expected step passed. A
failure names the client, transport and step, then shows the driver's
stderr, the server's stderr and, on stdio, the end of the wire transcript.
The last line is the count: `e2e: N passed, M failed`.

Environment: E2E_JOBS (parallel jobs, default 4; the longest start first), E2E_SUBSET, E2E_CACHE (default
.cache), E2E_TRANSPORTS (comma list, default stdio,http,router),
E2E_PROGRESS_MS (how long the TypeScript progress call runs).
Standard library only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
E2E = ROOT / "e2e"
CACHE = Path(os.environ.get("E2E_CACHE", ROOT / ".cache"))
NODE_BIN = CACHE / "node" / "node_modules" / ".bin"
RESULTS = CACHE / "e2e-results"

sys.path.insert(0, str(E2E / "clients"))
sys.path.insert(0, str(E2E))
from checks import STEPS, STRUCTURED_STEPS, TASK_STEPS  # noqa: E402
from http_tap import HttpTap  # noqa: E402

CLIENT_TIMEOUT = 180  # seconds for one client run
BANNER_TIMEOUT = 30  # seconds for an HTTP server to print its address
URL_RE = re.compile(r"(http://\S+/mcp)\b")
TAIL = 60  # lines of a log shown with a failure


# Whether the server speaks the 2026-07-28 revision (server/discover and
# stateless requests). Clients that negotiate (the 2.x Python SDK and
# FastMCP in their default mode="auto", the 2.x TypeScript SDK in
# versionNegotiation mode "auto") must then adopt the modern era with no
# fallback to initialize; until then they must fall back.
MODERN_ERA_SERVED = True


@dataclass
class Client:
    name: str
    argv: list[str]
    steps: list[str]
    env: dict[str, str] = field(default_factory=dict)
    # "legacy" (initialize only) or "auto" (server/discover first: modern
    # when MODERN_ERA_SERVED, else the fallback); None: not checked.
    era: str | None = None
    # A task job: the server runs with `--task-after 0`, the wire is
    # recorded on every transport (HTTP through e2e/http_tap.py) and
    # check_task_wire must find every tools/call settled through a task.
    tasks: bool = False
    # Server flags added after `--task-after 0` (a later one wins).
    server_args: list[str] = field(default_factory=list)

    def expected_era(self) -> str | None:
        if self.era == "auto":
            return "modern" if MODERN_ERA_SERVED else "fallback"
        return self.era


def clients() -> list[Client]:
    node = str(NODE_BIN / "node")
    clients_dir = E2E / "clients"
    node_modules = str(CACHE / "node" / "node_modules")
    era_steps = [*STEPS[:1], "era", *STEPS[1:]]
    return [
        Client("python-sdk-1", [str(CACHE / "py-mcp1/bin/python"), str(clients_dir / "python_sdk.py")], era_steps,
               era="legacy"),
        Client("python-sdk-2", [str(CACHE / "py-mcp2/bin/python"), str(clients_dir / "python_sdk.py")],
               [*era_steps, *STRUCTURED_STEPS], era="auto"),
        Client("fastmcp", [str(CACHE / "py-fastmcp/bin/python"), str(clients_dir / "fastmcp_client.py")], era_steps,
               era="auto"),
        Client("typescript-sdk", [node, str(clients_dir / "ts_sdk.mjs")], [*era_steps, "cancel", "progress"],
               {"E2E_NODE_MODULES": node_modules}, era="legacy"),
        Client("typescript-sdk-2", [node, str(clients_dir / "ts_sdk.mjs")],
               [*era_steps, *STRUCTURED_STEPS, "cancel", "progress"],
               {"E2E_NODE_MODULES": node_modules, "E2E_TS_SDK": "2"}, era="auto"),
        # The 2.x client as most code runs it: its default negotiation, "legacy".
        Client("typescript-sdk-2-legacy", [node, str(clients_dir / "ts_sdk.mjs")], [*era_steps, "cancel", "progress"],
               {"E2E_NODE_MODULES": node_modules, "E2E_TS_SDK": "2", "E2E_TS_NEGOTIATION": "legacy"},
               era="legacy"),
        Client("inspector", [sys.executable, str(clients_dir / "inspector.py")], STEPS,
               {"E2E_INSPECTOR": str(NODE_BIN / "mcp-inspector"), "E2E_NODE_BIN": str(NODE_BIN),
                "HOME": str(CACHE / "inspector-home")}),
        # Clients of the tasks extension (io.modelcontextprotocol/tasks).
        Client("inspector-tasks", [sys.executable, str(clients_dir / "tasks_inspector.py")], TASK_STEPS,
               {"E2E_INSPECTOR": str(NODE_BIN / "mcp-inspector"), "E2E_NODE_BIN": str(NODE_BIN),
                "HOME": str(CACHE / "inspector-home")}, tasks=True),
        Client("fastmcp-tasks", [str(CACHE / "py-fastmcp-tasks/bin/python"), str(clients_dir / "tasks_fastmcp.py")],
               [*TASK_STEPS, "task handle", "task cancel"], tasks=True),
        # A client without the extension, through the job tools.
        Client("jobs-python-sdk-2", [str(CACHE / "py-mcp2/bin/python"), str(clients_dir / "jobs_python_sdk.py")],
               ["initialize", "era", "tools/list", "job handle", "job status", "job result", "job cancel",
                "job schema"], era="auto", server_args=["--job-tools", "--task-after", "1000"]),
    ]


@dataclass
class Outcome:
    job: str
    ok: bool
    seconds: float
    summary: str
    report: str = ""


def tail(text: str, lines: int = TAIL) -> str:
    rows = text.rstrip("\n").splitlines()
    cut = rows[-lines:]
    head = [f"... ({len(rows) - lines} earlier lines)"] if len(rows) > lines else []
    return "\n".join(head + cut) if rows else "(empty)"


def indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


class HttpServer:
    """A morloc-mcp HTTP server on an OS-chosen port; stderr kept in memory."""

    def __init__(self, argv: list[str], log_path: Path, env: dict[str, str] | None = None):
        self.argv = argv
        self.lines: list[str] = []
        self.url: str | None = None
        self.log_path = log_path
        self._seen = threading.Event()
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})}, cwd=ROOT, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        with open(self.log_path, "w", encoding="utf-8") as log:
            for raw in self.proc.stderr:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                self.lines.append(line)
                log.write(line + "\n")
                log.flush()
                match = URL_RE.search(line)
                if self.url is None and match:
                    self.url = match.group(1)
                    self._seen.set()
        self._seen.set()

    def wait_url(self) -> str | None:
        self._seen.wait(BANNER_TIMEOUT)
        return self.url

    def stderr(self) -> str:
        return "\n".join(self.lines)

    def stop(self) -> str:
        """Stops the server; returns a note if it had died or would not stop."""
        note = ""
        status = self.proc.poll()
        if status is not None:
            note = f"the server had exited with status {status}"
        else:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                note = "the server did not stop within 60 s of SIGTERM"
        return note


def server_argv(binary: str, transport: str, manifest: Path, extra: list[str] | None = None) -> list[str]:
    extra = extra or []
    if transport == "http":
        return [binary, "mcp", str(manifest), "--http-port", "0", *extra]
    if transport == "router":
        return [binary, "router", "--http-port", "0", *extra, str(manifest)]
    return [binary, "mcp", str(manifest), *extra]


def parse_steps(stdout: str) -> dict[str, tuple[bool, str]]:
    steps: dict[str, tuple[bool, str]] = {}
    for line in stdout.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict) and "step" in item:
            steps[str(item["step"])] = (bool(item.get("ok")), str(item.get("detail", "")))
    return steps


def wire_era(wire_log: str, expected: str) -> tuple[str | None, str]:
    """On stdio, the era the transcript shows, against the expected one:
    `modern` is server/discover first and no initialize at all, `fallback`
    server/discover first and then initialize, `legacy` initialize first.
    Returns (error, description)."""
    sent = []
    answers: dict[object, str] = {}
    for line in wire_log.splitlines():
        prefix, _, body = line.partition("> ")
        try:
            msg = json.loads(body)
        except ValueError:
            continue
        if prefix == "client" and isinstance(msg, dict) and "method" in msg:
            sent.append(msg)
        elif prefix == "server" and isinstance(msg, dict) and "id" in msg:
            answers[json.dumps(msg["id"])] = json.dumps(msg.get("error") or msg.get("result"))[:160]
    methods = [m["method"] for m in sent]
    if expected == "legacy":
        if not methods or methods[0] != "initialize":
            return f"expected initialize first, the client sent {methods[:3]}", ""
        return None, ""
    if not methods or methods[0] != "server/discover":
        return f"expected server/discover first, the client sent {methods[:3]}", ""
    probe = sent[0]
    version = (probe.get("params") or {}).get("_meta", {}).get("io.modelcontextprotocol/protocolVersion")
    answer = answers.get(json.dumps(probe.get("id")), "no answer")
    if expected == "modern":
        if "initialize" in methods:
            return (f"the client fell back to initialize after server/discover (protocol {version}) "
                    f"was answered {answer}"), ""
        return None, f"server/discover (protocol {version}) adopted, no initialize"
    if "initialize" not in methods:
        return "the client never fell back to initialize", ""
    init = sent[methods.index("initialize")]
    asked = (init.get("params") or {}).get("protocolVersion")
    return None, (f"sent server/discover (protocol {version}), server answered {answer}; "
                  f"then initialize asking {asked}")


def wire_exchanges(wire_log: str) -> list[tuple[dict, dict | None, str]]:
    """The requests of a transcript (stdio_tap.py or http_tap.py format) in
    order, each with its answer (None if none came) and, over HTTP, the
    tap's `http>` line of its HTTP request. A client that runs once per call
    (the Inspector over stdio) reuses ids, so an answer goes to the oldest
    unanswered request with its id."""
    exchanges: list[list] = []
    waiting: dict[str, list[list]] = {}
    http_line = ""
    for line in wire_log.splitlines():
        prefix, _, body = line.partition("> ")
        if prefix == "http":
            http_line = body
            continue
        try:
            msg = json.loads(body)
        except ValueError:
            continue
        if not isinstance(msg, dict):
            continue
        if prefix == "client" and "method" in msg and "id" in msg:
            entry = [msg, None, http_line]
            exchanges.append(entry)
            waiting.setdefault(json.dumps(msg["id"]), []).append(entry)
        elif prefix == "server" and "method" not in msg and "id" in msg:
            queue = waiting.get(json.dumps(msg["id"]))
            if queue:
                queue.pop(0)[1] = msg
        http_line = ""
    return [(req, resp, meta) for req, resp, meta in exchanges]


def check_task_wire(wire_log: str, over_http: bool) -> tuple[str | None, str]:
    """In a task job's transcript: every tools/call was answered with a task
    (`resultType: "task"` and a taskId), the client polled that task with
    tasks/get until it was `completed`, and the inlined result is the call's
    own (slowEcho: its argument as text; pyFail: isError); a task the client
    sent tasks/cancel for must have been acknowledged and polled to
    `cancelled` instead. Over HTTP every tasks/get and tasks/cancel also
    carried `Mcp-Name: <taskId>`. Returns (error, summary)."""
    exchanges = wire_exchanges(wire_log)
    calls = [(req, resp) for req, resp, _ in exchanges if req.get("method") == "tools/call"]
    gets = [(req, resp, meta) for req, resp, meta in exchanges if req.get("method") == "tasks/get"]
    cancels = {(r.get("params") or {}).get("taskId"): (r, a, m) for r, a, m in exchanges
               if r.get("method") == "tasks/cancel"}
    if not calls:
        return "the client sent no tools/call", ""
    polls = 0
    cancelled = 0
    for req, resp in calls:
        params = req.get("params") or {}
        name, args = str(params.get("name")), params.get("arguments") or {}
        declared = ((params.get("_meta") or {}).get("io.modelcontextprotocol/clientCapabilities") or {}) \
            .get("extensions", {})
        if "io.modelcontextprotocol/tasks" not in declared:
            return f"tools/call {name} did not declare io.modelcontextprotocol/tasks", ""
        result = (resp or {}).get("result") or {}
        task_id = result.get("taskId")
        if result.get("resultType") != "task" or not isinstance(task_id, str):
            return f"tools/call {name} was not answered with a task: {json.dumps(resp)[:300]}", ""
        mine = [(r, a, m) for r, a, m in gets if (r.get("params") or {}).get("taskId") == task_id]
        if not mine:
            return f"task {task_id} ({name}) was never polled with tasks/get", ""
        polls += len(mine)
        if over_http:
            for _, _, meta in mine:
                if f"mcp-name={task_id} " not in meta + " " or "mcp-method=tasks/get" not in meta:
                    return f"a tasks/get for {task_id} went without Mcp-Name/Mcp-Method headers: {meta}", ""
        settled = [((a or {}).get("result") or {}) for _, a, _ in mine]
        done = [t for t in settled if t.get("status") in ("completed", "failed", "cancelled")]
        if task_id in cancels:
            _, ack, meta = cancels[task_id]
            if not isinstance((ack or {}).get("result"), dict):
                return f"tasks/cancel for {task_id} was answered {json.dumps(ack)[:200]}", ""
            if over_http and f"mcp-name={task_id} " not in meta + " ":
                return f"the tasks/cancel for {task_id} went without its Mcp-Name header: {meta}", ""
            if not done or done[-1].get("status") != "cancelled":
                return f"task {task_id} ({name}) was cancelled but tasks/get showed {[t.get('status') for t in settled]}", ""
            cancelled += 1
            continue
        if not done or done[0].get("status") != "completed":
            states = [t.get("status") or (a or {}).get("error") for t, (_, a, _) in zip(settled, mine)]
            return f"task {task_id} ({name}) did not complete; tasks/get answered {states}", ""
        inlined = done[0].get("result") or {}
        content = inlined.get("content") or [{}]
        text = content[0].get("text") if isinstance(content[0], dict) else None
        if name.endswith("pyFail"):
            if inlined.get("isError") is not True:
                return f"task {task_id} (pyFail) completed without isError: {json.dumps(inlined)[:200]}", ""
        elif inlined.get("isError") or text != str(args.get("_1")):
            return f"task {task_id} ({name} {args}) completed with {json.dumps(inlined)[:200]}", ""
    headers = ", each with its Mcp-Name header" if over_http else ""
    ending = f" ({cancelled} cancelled by tasks/cancel)" if cancelled else ""
    return None, (f"{len(calls)} tools/call answered with a task, settled after {polls} tasks/get{headers}{ending}")


def run_client(binary: str, manifest: Path, client: Client, transport: str) -> Outcome:
    job = f"{client.name}:{transport}"
    started = time.monotonic()
    logs = RESULTS / job.replace(":", "-")
    logs.mkdir(parents=True, exist_ok=True)
    server_log = logs / "server.log"
    server_log.unlink(missing_ok=True)
    env = {**os.environ, **client.env}
    expected_era = client.expected_era()
    if expected_era:
        env["E2E_EXPECT_ERA"] = expected_era
    http: HttpServer | None = None
    tap: HttpTap | None = None
    wire_log = logs / "wire.log"
    wire_log.unlink(missing_ok=True)
    # Every job serves with `--task-after 0`: a client that does not declare
    # the tasks extension must get plain results all the same.
    server_extra = ["--task-after", "0", *client.server_args]
    if transport == "stdio":
        target = ["--stdio", sys.executable, str(E2E / "stdio_tap.py"), str(server_log), "--",
                  *server_argv(binary, "stdio", manifest, server_extra)]
    else:
        http = HttpServer(server_argv(binary, transport, manifest, server_extra), server_log)
        url = http.wait_url()
        if url is None:
            note = http.stop()
            return Outcome(job, False, time.monotonic() - started, "server did not start",
                           f"no 'http://.../mcp' address on the server's stderr within {BANNER_TIMEOUT} s"
                           f"{'; ' + note if note else ''}\n  server stderr:\n{indent(tail(http.stderr()))}")
        if client.tasks:
            tap = HttpTap(url, wire_log)
            url = tap.url
        target = ["--url", url]
    try:
        done = subprocess.run([*client.argv, *target], capture_output=True, text=True, env=env,
                              timeout=CLIENT_TIMEOUT, cwd=ROOT, check=False)
        stdout, stderr, status = done.stdout, done.stderr, done.returncode
    except subprocess.TimeoutExpired as e:
        stdout = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        stderr = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        status = None
    note = http.stop() if http else ""
    if tap:
        tap.close()
    steps = parse_steps(stdout)
    problems = []
    for name in client.steps:
        if name not in steps:
            problems.append(f"step '{name}' never ran")
            break
        ok, detail = steps[name]
        if not ok:
            problems.append(f"step '{name}' failed: {detail}")
    for name, (ok, detail) in steps.items():
        if not ok and name not in client.steps:
            problems.append(f"step '{name}' failed: {detail}")
    server_text = http.stderr() if http else (server_log.read_text("utf-8", "replace") if server_log.exists() else "")
    extra = ""
    if transport == "stdio" and expected_era and not problems:
        error, extra = wire_era(server_text, expected_era)
        if error:
            problems.append(f"era on the wire: {error}")
    wire_text = server_text if transport == "stdio" else (
        wire_log.read_text("utf-8", "replace") if wire_log.exists() else "")
    if client.tasks and not problems:
        error, extra = check_task_wire(wire_text, transport != "stdio")
        if error:
            problems.append(f"tasks on the wire: {error}")
    elif transport == "stdio" and not problems:
        made = [req.get("params", {}).get("name") for req, resp, _ in wire_exchanges(wire_text)
                if ((resp or {}).get("result") or {}).get("resultType") == "task"]
        if made:
            problems.append(f"a client without the tasks extension was answered with a task: {made}")
    if status is None:
        problems.append(f"the client did not finish within {CLIENT_TIMEOUT} s")
    elif status != 0 and not problems:
        problems.append(f"the client exited with status {status}")
    if note and not problems and transport != "stdio" and "exited" in note:
        problems.append(note)
    seconds = time.monotonic() - started
    (logs / "client.out").write_text(stdout)
    (logs / "client.err").write_text(stderr)
    if not problems:
        detail = steps.get("initialize", (True, ""))[1]
        return Outcome(job, True, seconds, f"{len(client.steps)} steps ({detail}){'; ' + extra if extra else ''}")
    label = "server stderr and wire (client> / server>)" if transport == "stdio" else "server stderr"
    report = "\n".join([
        *(f"  {p}" for p in problems),
        *([f"  {note}"] if note else []),
        "  client stderr:", indent(tail(stderr, 30)),
        f"  {label}:", indent(tail(server_text)),
        *(["  wire (http> / client> / server>):", indent(tail(wire_text))] if tap else []),
        f"  logs: {logs}",
    ])
    return Outcome(job, False, seconds, problems[0], report)


def failed_checks(logs: Path, skip: set[str]) -> list[str]:
    """`scenario: check: message` for every failed or warning check the suite
    saved under `logs` (one folder per scenario, `server-<name>-<time>`),
    leaving out the scenarios and `scenario:check` entries in `skip`."""
    found = []
    for path in sorted(logs.glob("server-*/checks.json")):
        scenario = re.sub(r"-\d{4}-\d\d-\d\dT[\d-]+Z$", "", path.parent.name)[len("server-"):]
        if scenario in skip:
            continue
        try:
            checks = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            continue
        for check in checks if isinstance(checks, list) else []:
            if isinstance(check, dict) and check.get("status") in ("FAILURE", "WARNING"):
                if f"{scenario}:{check.get('id')}" in skip:
                    continue
                found.append(f"{scenario}: {check.get('id')}: {check.get('status')}: {check.get('errorMessage')}")
    return found


def check_counts(logs: Path) -> tuple[int, int]:
    """(passed, total) over every check the suite saved under `logs`,
    SKIPPED and INFO rows left out; only used when the suite printed no
    `Total:` line (its own count leaves out some warning rows)."""
    passed = total = 0
    for path in logs.glob("server-*/checks.json"):
        try:
            checks = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            continue
        for check in checks if isinstance(checks, list) else []:
            status = check.get("status") if isinstance(check, dict) else None
            if status in ("SUCCESS", "FAILURE", "WARNING"):
                total += 1
                passed += status == "SUCCESS"
    return passed, total


def baseline(path: Path) -> set[str]:
    """The entries of a baseline file: scenario names and `scenario:check`."""
    return set(re.findall(r"^\s*-\s*([\w./:$-]+)", path.read_text("utf-8"), re.M))


SCHEMA_PROGRAMS = [
    "tests/data/shapes", "tests/data/tools/geo", "tests/data/tools/kinds",
    "tests/data/programs/recursive", "tests/data/programs/conformance",
]


def run_schemas(binary: str, manifest: Path) -> Outcome:
    """Every tool schema a 2026-07-28 client is shown, over several programs,
    compiled as JSON Schema 2020-12 (e2e/clients/schema_check.mjs)."""
    started = time.monotonic()
    manifests = [str(manifest), *(str(ROOT / d / "manifest.json") for d in SCHEMA_PROGRAMS)]
    argv = [str(NODE_BIN / "node"), str(E2E / "clients" / "schema_check.mjs"), binary, *manifests]
    env = {**os.environ, "E2E_NODE_MODULES": str(CACHE / "node" / "node_modules")}
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=CLIENT_TIMEOUT,
                              cwd=ROOT, check=False)
        stdout, stderr, status = done.stdout, done.stderr, done.returncode
    except subprocess.TimeoutExpired:
        stdout, stderr, status = "", "", None
    steps = parse_steps(stdout)
    bad = [f"{name}: {detail}" for name, (ok, detail) in steps.items() if not ok]
    seconds = time.monotonic() - started
    if status == 0 and not bad and len(steps) == len(manifests):
        count = sum(int(re.search(r"(\d+) schemas", d).group(1)) for _, d in steps.values()
                    if re.search(r"(\d+) schemas", d))
        return Outcome("json-schema-2020-12", True, seconds, f"{count} schemas of {len(manifests)} programs compile")
    problems = [f"  {b}" for b in bad] or [f"  exit status {status}, {len(steps)} of {len(manifests)} programs checked"]
    report = "\n".join([*problems, "  stderr:", indent(tail(stderr, 30))])
    return Outcome("json-schema-2020-12", False, seconds, bad[0] if bad else f"exit status {status}", report)


BIG_RESULT_ELEMENTS = 5_000_000


def run_bigresults(binary: str, manifest: Path, job: str, argv: list[str], env: dict[str, str],
                   transport: str) -> Outcome:
    """Big results as resources (--max-result-chars) with a real client: a
    5 M-element list result read page by page through resources/read
    (e2e/clients/bigresults_py.py, bigresults_ts.mjs say what is checked),
    the client starting the server over stdio or reaching it over HTTP, or
    reaching `morloc-mcp router` (whose tool names carry the module prefix)."""
    started = time.monotonic()
    server = [binary, "mcp", str(manifest), "--max-result-chars", "20"]
    if transport == "router":
        server = [binary, "router", "--http-port", "0", "--max-result-chars", "20", str(manifest)]
    elif transport == "http":
        server = [*server, "--http-port", "0", "--plain-tool-names"]
    http = None
    with tempfile.TemporaryDirectory(prefix="e2e-bigresults-") as tmp:
        if transport != "stdio":
            http = HttpServer(server, Path(tmp) / "server.log")
            url = http.wait_url()
            server = [url or "http://127.0.0.1:1/mcp"]
        try:
            done = subprocess.run([*argv, str(BIG_RESULT_ELEMENTS), *server], capture_output=True, text=True,
                                  env={**os.environ, **env}, timeout=CLIENT_TIMEOUT, cwd=ROOT, check=False)
            stdout, stderr, status = done.stdout, done.stderr, done.returncode
        except subprocess.TimeoutExpired:
            stdout, stderr, status = "", "", None
        finally:
            if http is not None:
                http.stop()
    steps = parse_steps(stdout)
    bad = [f"{name}: {detail}" for name, (ok, detail) in steps.items() if not ok]
    seconds = time.monotonic() - started
    if status == 0 and not bad and "pages" in steps:
        tool = steps.get("link", (True, ""))[1].partition(": ")[0]
        return Outcome(job, True, seconds, f"{tool}: {steps['pages'][1]}")
    problems = [f"  {b}" for b in bad] or [f"  exit status {status}, steps {sorted(steps)}"]
    report = "\n".join([*problems, "  stderr:", indent(tail(stderr, 30))])
    return Outcome(job, False, seconds, bad[0] if bad else f"exit status {status}", report)


def bigresult_jobs(binary: str, manifest: Path) -> list[tuple[str, object]]:
    node_modules = str(CACHE / "node" / "node_modules")
    clients = [
        ("python-sdk-2", [str(CACHE / "py-mcp2/bin/python"), str(E2E / "clients" / "bigresults_py.py")],
         "E2E_PY_MODE"),
        ("typescript-sdk-2", [str(NODE_BIN / "node"), str(E2E / "clients" / "bigresults_ts.mjs")],
         "E2E_TS_NEGOTIATION"),
    ]
    jobs: list[tuple[str, object]] = []
    for name, argv, mode_var in clients:
        for mode in ("auto", "legacy"):
            env = {mode_var: mode, "E2E_NODE_MODULES": node_modules}
            for transport in ("stdio", "http", "router"):
                job = f"bigresults:{name}:{mode}:{transport}"
                jobs.append((job, lambda j=job, a=argv, e=env, t=transport:
                             run_bigresults(binary, manifest, j, a, e, t)))
    return jobs


def run_oauth(binary: str, manifest: Path) -> Outcome:
    """The Python SDK 2.x client's OAuth flow against the server as a
    resource server and a test authorization server (e2e/clients/oauth_flow.py).
    Every binary `make` builds has OAuth, the static one included: a binary
    without it fails here."""
    started = time.monotonic()
    argv = [str(CACHE / "py-mcp2/bin/python"), str(E2E / "clients" / "oauth_flow.py"), binary, str(manifest)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=CLIENT_TIMEOUT, cwd=ROOT, check=False)
        stdout, stderr, status = done.stdout, done.stderr, done.returncode
    except subprocess.TimeoutExpired:
        stdout, stderr, status = "", "", None
    seconds = time.monotonic() - started
    steps = [line[5:] for line in stdout.splitlines() if line.startswith("ok  ")]
    if status == 0 and len(steps) == 3:
        return Outcome("oauth:python-sdk-2", True, seconds, "; ".join(steps))
    report = "\n".join(["  stdout:", indent(tail(stdout, 40)), "  stderr:", indent(tail(stderr, 30))])
    return Outcome("oauth:python-sdk-2", False, seconds, f"exit status {status}", report)


def run_metrics(binary: str) -> Outcome:
    """/metrics through a real Prometheus text-format parser
    (e2e/clients/metrics_check.py, in .cache/py-prometheus)."""
    started = time.monotonic()
    python = CACHE / "py-prometheus" / "bin" / "python"
    argv = [str(python), str(E2E / "clients" / "metrics_check.py"), binary]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=CLIENT_TIMEOUT,
                              cwd=ROOT, check=False)
        stdout, stderr, status = done.stdout, done.stderr, done.returncode
    except (subprocess.TimeoutExpired, OSError) as e:
        stdout, stderr, status = "", str(e), None
    steps = parse_steps(stdout)
    bad = [f"{name}: {detail}" for name, (ok, detail) in steps.items() if not ok]
    seconds = time.monotonic() - started
    if status == 0 and not bad and steps:
        return Outcome("metrics", True, seconds, f"{len(steps)} checks of the exposition and the access lines")
    problems = [f"  {b}" for b in bad] or [f"  exit status {status}, {len(steps)} steps"]
    report = "\n".join([*problems, "  stderr:", indent(tail(stderr, 30))])
    return Outcome("metrics", False, seconds, bad[0] if bad else f"exit status {status}", report)


def run_readme(binary: str, manifest: Path) -> Outcome:
    """The README's MCP Inspector line, as written (the rest of the README runs in `make test`)."""
    import readme_check
    started = time.monotonic()
    env = dict(os.environ)
    env["PATH"] = str(NODE_BIN) + os.pathsep + env.get("PATH", "")
    env["HOME"] = str(CACHE / "inspector-home")
    try:
        done = readme_check.run(ROOT / "README.md", binary, manifest, str(NODE_BIN / "mcp-inspector"), env)
        return Outcome("readme", True, time.monotonic() - started, "; ".join(done))
    except Exception as e:  # any failure is this job's failure
        return Outcome("readme", False, time.monotonic() - started, f"README snippet failed: {e}",
                       f"  {type(e).__name__}: {e}")


@dataclass
class Conformance:
    """One run of the official conformance suite (server mode, over HTTP)."""
    job: str
    package: str  # folder under .cache/node/node_modules
    args: list[str]
    baseline: Path
    # Serve a scratch copy of the program that its pool may rewrite (the
    # 2026-07-28 scenarios trigger a tool-list change through a rebuild).
    scratch: bool = False
    # `http` (morloc-mcp mcp --http-port) or `router` (morloc-mcp router,
    # one program, so --plain-tool-names keeps the bare names).
    front: str = "http"
    # More server options than --plain-tool-names.
    server_args: list[str] = field(default_factory=list)
    # Run the suite once per scenario whose name starts with this, as the
    # installed suite lists them (`list --server`), each with `--scenario`:
    # extension scenarios run no other way (--suite all skips them).
    scenarios: str | None = None


CONFORMANCE_RUNS = [
    Conformance("conformance:2025-06-18", "@modelcontextprotocol/conformance", ["--spec-version", "2025-06-18"],
                E2E / "conformance-baseline.yml"),
    Conformance("conformance:all", "@modelcontextprotocol/conformance", [], E2E / "conformance-baseline.yml"),
    Conformance("conformance:2026-07-28", "conformance-2026", ["--spec-version", "2026-07-28", "--suite", "all"],
                E2E / "conformance-baseline-2026.yml", scratch=True),
    Conformance("conformance:2026-07-28-router", "conformance-2026", ["--spec-version", "2026-07-28", "--suite", "all"],
                E2E / "conformance-baseline-2026.yml", scratch=True, front="router"),
    # The tasks extension (io.modelcontextprotocol/tasks): every tasks-*
    # scenario, forced (they are not tied to a spec version), with every
    # remote call made a task at once, so `failing_job` becomes one.
    Conformance("conformance:tasks", "conformance-2026", ["--spec-version", "2026-07-28", "--force"],
                E2E / "conformance-baseline-tasks.yml", server_args=["--task-after", "0"], scenarios="tasks-"),
    Conformance("conformance:tasks-router", "conformance-2026", ["--spec-version", "2026-07-28", "--force"],
                E2E / "conformance-baseline-tasks.yml", server_args=["--task-after", "0"], scenarios="tasks-",
                front="router"),
]


def scratch_program(source: Path, into: Path) -> Path:
    """A copy of the program folder's manifest in `into`, its pool scripts
    made absolute so they still run from the original folder. Returns the
    copy's manifest path."""
    source = source.resolve()
    manifest = json.loads((source / "manifest.json").read_text("utf-8"))
    for pool in manifest.get("pools", []):
        exe = pool.get("exec") or []
        if exe and not Path(exe[-1]).is_absolute():
            exe[-1] = str(source / exe[-1])
    into.mkdir(parents=True, exist_ok=True)
    path = into / "manifest.json"
    path.write_text(json.dumps(manifest, indent=2) + "\n", "utf-8")
    return path


def pending_entries(path: Path) -> list[str]:
    """The entries after the baseline's `# --- Pending` line: failures of
    features the server does not have yet, as opposed to ones that cannot
    apply to it."""
    text = path.read_text("utf-8")
    marker = text.find("# --- Pending")
    return [] if marker < 0 else re.findall(r"^\s*-\s*([\w./:$-]+)", text[marker:], re.M)


def listed_scenarios(suite: Path, prefix: str) -> list[str]:
    """The server scenarios the installed suite lists whose name starts
    with `prefix`, in its order (`conformance list --server`)."""
    done = subprocess.run([str(NODE_BIN / "node"), str(suite), "list", "--server"], capture_output=True,
                          text=True, timeout=60, cwd=ROOT, check=False)
    names = re.findall(r"^\s*-\s*(\S+)", done.stdout, re.M)
    return [n for n in names if n.startswith(prefix)]


def run_suite(argv: list[str], cwd: Path, timeout: int) -> tuple[str, int | None]:
    """(output, exit status) of one suite run; status None on a timeout."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd, check=False)
        return done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode("utf-8", "replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return out + f"\n(the suite did not finish in {timeout} s)\n", None


def plain_verdict(summary: str, expected: int, baseline_file: Path) -> str:
    """A passing run's line in plain words. The suite counts checks ("200
    passed, 27 failed"); its baseline lists whole scenarios or single checks,
    so one entry can cover several failed checks. Said as "N passed; the M
    that failed are all expected, covered by K baseline entries" rather than
    "M failed; K expected failures", which reads as a contradiction."""
    m = re.search(r"(\d+) passed, (\d+) failed", summary)
    if not m:
        return (f"{summary}; every failure expected ({expected} baseline entries of {baseline_file.name}, "
                f"features this server does not offer: e2e/CONFORMANCE.md)")
    passed, failed = int(m.group(1)), int(m.group(2))
    rest = summary[m.end():].strip(" ,;")
    text = f"{passed} checks passed"
    if failed == 0:
        text += ", none failed"
    else:
        text += (f"; the {failed} that failed are all expected (covered by {expected} entries of "
                 f"{baseline_file.name}: features this server does not offer, e2e/CONFORMANCE.md says why)")
    return text + (f"; {rest}" if rest else "")


def run_conformance(binary: str, run: Conformance) -> Outcome:
    job = run.job
    started = time.monotonic()
    logs = RESULTS / job.replace(":", "-")
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir(parents=True)
    program = ROOT / "tests/data/programs/conformance"
    manifest = program / "manifest.json"
    env: dict[str, str] = {}
    if run.scratch:
        manifest = scratch_program(program, logs / "program")
        env["TESTPOOL_RELOADABLE"] = "1"
    suite = CACHE / "node/node_modules" / run.package / "dist/index.js"
    # One suite run without --scenario, or one per listed scenario.
    scenarios: list[str | None] = [None]
    if run.scenarios is not None:
        scenarios = list(listed_scenarios(suite, run.scenarios))
        if not scenarios:
            return Outcome(job, False, time.monotonic() - started, f"the suite lists no {run.scenarios}* scenario",
                           f"  `{suite} list --server` shows no server scenario named {run.scenarios}*")
    http = HttpServer(server_argv(binary, run.front, manifest, ["--plain-tool-names", *run.server_args]),
                      logs / "server.log", env)
    url = http.wait_url()
    if url is None:
        note = http.stop()
        return Outcome(job, False, time.monotonic() - started, "server did not start",
                       f"  no address on the server's stderr{'; ' + note if note else ''}\n"
                       f"  server stderr:\n{indent(tail(http.stderr()))}")
    argv = [str(NODE_BIN / "node"), str(suite), "server", "--url", url,
            "--expected-failures", str(run.baseline), "-o", str(logs), *run.args]
    outputs: list[str] = []
    shown: list[str] = []  # what a failure report shows of the suite's output
    status: int | None = 0
    for scenario in scenarios:
        extra = ["--scenario", scenario] if scenario else []
        output, code = run_suite([*argv, *extra], logs, 600 if scenario is None else 120)
        outputs.append(f"=== scenario {scenario}\n{output}" if scenario else output)
        if code != 0:
            # The suite's verdict (stale and unexpected entries) ends its output.
            shown.append(f"scenario {scenario}:\n{indent(tail(output, 15))}" if scenario else tail(output, 50))
        status = None if status is None or code is None else max(status, code)
    output = "\n".join(outputs)
    note = http.stop()
    seconds = time.monotonic() - started
    # The suite's own count ("Total: N passed, M failed[, K warnings]"),
    # else one made from the saved checks.
    totals = re.findall(r"^Total: (.*)$", output, re.M)
    passed, total = check_counts(logs)
    summary = f"checks {totals[-1]}" if totals and len(scenarios) == 1 else f"{passed}/{total} checks passed"
    expected = re.findall(r"^\s+~ (\S+)", output, re.M)
    if run.scenarios is not None:
        summary += f" in {len(scenarios)} {run.scenarios}* scenarios"
        # The suite judges each run by the scenario that ran, so a baselined
        # check no scenario reports any more (renamed, or its scenario gone)
        # would pass unnoticed: every entry must be seen failing.
        stale = re.findall(r"^\s+\u2713 (\S+)", output, re.M)
        unseen = sorted(baseline(run.baseline) - set(expected) - set(stale))
        if unseen:
            verdict = ("baseline entries no scenario reported as failing (renamed or gone?):\n"
                       + "\n".join(f"  ? {e}" for e in unseen))
            output += "\n" + verdict + "\n"
            shown.append(verdict)
            status = 1 if status == 0 else status
    (logs / "suite.out").write_text(output)
    if status == 0:
        pending = pending_entries(run.baseline)
        return Outcome(job, True, seconds, plain_verdict(summary, len(expected), run.baseline)
                       + (f"; {len(pending)} baseline entries pending: {', '.join(pending)}" if pending else ""))
    report = "\n".join([
        f"  the suite exited with status {status}" if status is not None else "  the suite did not finish in time",
        *([f"  {note}"] if note else []),
        "  failed checks outside the baseline:",
        indent("\n".join(failed_checks(logs, baseline(run.baseline))) or "(none: see the suite output)"),
        "  suite output:", indent("\n".join(shown)),
        "  server stderr:", indent(tail(http.stderr())),
        f"  logs: {logs}",
    ])
    return Outcome(job, False, seconds, summary, report)


# The conformance runs of the representative subset: one per suite version.
SUBSET_CONFORMANCE = ("conformance:all", "conformance:2026-07-28")


def subset(jobs: list[tuple[str, object]], transports: list[str]) -> list[tuple[str, object]]:
    """The representative subset (`--subset`): each client on one transport,
    taken in turn from `transports` so that every transport is used; each
    big-results client once, in turn over its modes and transports; the
    conformance runs of SUBSET_CONFORMANCE; every job that has no variants."""
    kept: list[tuple[str, object]] = []
    client_names = [c.name for c in clients()]
    big_clients: list[str] = []
    for name, job in jobs:
        head, _, rest = name.partition(":")
        if head in client_names:
            if rest == transports[client_names.index(head) % len(transports)]:
                kept.append((name, job))
        elif head == "bigresults":
            client, _, variant = rest.partition(":")
            if client not in big_clients:
                big_clients.append(client)
            k = big_clients.index(client)
            if variant == f"{('auto', 'legacy')[k % 2]}:{transports[k % len(transports)]}":
                kept.append((name, job))
        elif head == "conformance":
            if name in SUBSET_CONFORMANCE:
                kept.append((name, job))
        else:
            kept.append((name, job))
    return kept


# Rough durations of the longest jobs, in seconds (all 52 jobs, 4 at a time,
# on 2 CPUs under load): jobs start longest first, so that a run does not end
# waiting on a long job that started last. Only their order matters; a job
# not listed counts as 10 s.
EXPECTED_SECONDS = (
    ("conformance:tasks", 130),
    ("bigresults:", 70),
    ("inspector:", 55),
    ("fastmcp-tasks:", 48),
    ("json-schema", 35),
    ("inspector-tasks:", 30),
    ("fastmcp:", 30),
    ("jobs-python-sdk-2:", 27),
    ("python-sdk-2:", 23),
    ("oauth:", 22),
    ("conformance:", 20),
)


def expected_seconds(job: str) -> int:
    return next((s for prefix, s in EXPECTED_SECONDS if job.startswith(prefix)), 10)


def main(argv: list[str]) -> int:
    binary = str(ROOT / "target/release/morloc-mcp")
    patterns = []
    only_subset = os.environ.get("E2E_SUBSET", "") not in ("", "0")
    args = iter(argv)
    for arg in args:
        if arg == "--bin":
            binary = str(Path(next(args, "")).resolve())
        elif arg == "--subset":
            only_subset = True
        else:
            patterns.append(arg)
    manifest = ROOT / "examples/shapes/manifest.json"
    if not manifest.exists():
        manifest = E2E / "shapes/manifest.json"
    transports = [t for t in os.environ.get("E2E_TRANSPORTS", "stdio,http,router").split(",") if t]
    jobs: list[tuple[str, object]] = []
    for client in clients():
        for transport in transports:
            jobs.append((f"{client.name}:{transport}",
                         lambda c=client, t=transport: run_client(binary, manifest, c, t)))
    for run in CONFORMANCE_RUNS:
        jobs.append((run.job, lambda r=run: run_conformance(binary, r)))
    jobs.append(("json-schema-2020-12", lambda: run_schemas(binary, manifest)))
    jobs.append(("readme", lambda: run_readme(binary, manifest)))
    jobs.extend(bigresult_jobs(binary, manifest))
    jobs.append(("oauth:python-sdk-2", lambda: run_oauth(binary, manifest)))
    jobs.append(("metrics", lambda: run_metrics(binary)))
    if only_subset:
        jobs = subset(jobs, transports)
    if patterns:
        jobs = [(n, f) for n, f in jobs if any(n.startswith(p) for p in patterns)]
    if not jobs:
        print(f"e2e: no job matches {' '.join(patterns)}", file=sys.stderr)
        return 2
    RESULTS.mkdir(parents=True, exist_ok=True)
    kind = " (the representative subset)" if only_subset else ""
    print(f"e2e: {len(jobs)} jobs{kind} against {binary} serving {manifest.relative_to(ROOT)}", flush=True)
    width = max(len(n) for n, _ in jobs)
    outcomes: list[Outcome] = []
    # The jobs mostly wait (clients and servers starting, answering each
    # other), so more run at once than there are CPUs. One line per job as
    # it ends; the failures are reported afterwards in the jobs' order.
    order = sorted(jobs, key=lambda job: -expected_seconds(job[0]))
    with ThreadPoolExecutor(max_workers=int(os.environ.get("E2E_JOBS", "4"))) as pool:
        for future in as_completed([pool.submit(job) for _, job in order]):
            outcome = future.result()
            outcomes.append(outcome)
            mark = "ok  " if outcome.ok else "FAIL"
            print(f"{mark} {outcome.job:<{width}} {outcome.seconds:5.1f}s  {outcome.summary}", flush=True)
    rank = {name: i for i, (name, _) in enumerate(jobs)}
    outcomes.sort(key=lambda o: rank.get(o.job, len(rank)))
    failed = [o for o in outcomes if not o.ok]
    for o in failed:
        client, _, transport = o.job.partition(":")
        if client == "conformance":
            print(f"\n=== FAILED: conformance suite ({transport}) over HTTP\n{o.report}")
        else:
            print(f"\n=== FAILED: client {client}, transport {transport}\n{o.report}")
    print(f"\ne2e: {len(outcomes) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
