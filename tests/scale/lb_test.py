"""Three morloc-mcp instances behind a load balancer started from the shipped
configuration (deploy/nginx.conf or deploy/haproxy.cfg, with its addresses
replaced by free loopback ports), driven through the balancer:

1. 1,000 modern tools/call requests from 8 concurrent clients: no errors,
   and every instance served some of them;
2. a legacy session from the Python MCP SDK 1.x: 50 calls; a task
   (io.modelcontextprotocol/tasks) created through the balancer and polled
   to completion through it;
3. SIGKILL of the instance holding a legacy session while load runs: modern
   calls started after its death all succeed, that session gets 404 (the
   client must re-initialize) and its task the unknown-task error -32602,
   a session and a task on another instance still work;
4. SIGTERM of an instance with a slow call in flight: the call completes,
   new requests go elsewhere, and the instance exits with status 0;
5. with --job-tools (three fresh instances): a modern call without the
   Tasks extension answered with a job handle through the balancer, then
   job_status and job_result through it, each routed on Mcp-Param-Job-Id
   to the instance holding the job, until the call's own result.

Usage: lb_test.py BINARY nginx|haproxy LB_PATH SDK_PYTHON
Prints one line per step; exits 1 on the first failure.
"""

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}}
NAMES = ["a", "b", "c"]
DEFAULT_PORTS = {"a": 8101, "b": 8102, "c": 8103}
DEFAULT_LB_PORT = 8100
STEP_TIMEOUT = 60
# Balancer starts on a fresh port after the last one was taken first.
BIND_ATTEMPTS = 10


class Failure(Exception):
    pass


def wait_for(what: str, probe, timeout: float = STEP_TIMEOUT) -> None:
    """Polls `probe` until it is true; fails naming `what` after `timeout`
    seconds. The steps wait for what they need to have happened, never for
    a fixed time, so a loaded machine only makes them slower."""
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            raise Failure(f"{what}: not seen within {timeout:.0f} s")
        time.sleep(0.02)


def text_of(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def holds_listener(pid: int, port: int) -> bool:
    """Whether process `pid` holds a socket listening on loopback `port`
    (the inodes of /proc/net/tcp's listening sockets among its
    descriptors)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].split(":")[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return False
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                return True
        except OSError:
            continue
    return False


def post(conn: http.client.HTTPConnection, body: dict, headers: dict) -> tuple[int, dict, bytes]:
    data = json.dumps(body).encode()
    conn.request("POST", "/mcp", data, {"Content-Type": "application/json",
                                        "Accept": "application/json, text/event-stream", **headers})
    resp = conn.getresponse()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()


def modern_call(conn, n: int) -> None:
    body = {"jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": {"name": "main__addOne", "arguments": {"_1": n}, "_meta": META}}
    status, _, raw = post(conn, body, {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call",
                                       "Mcp-Name": "main__addOne"})
    if status != 200:
        raise Failure(f"status {status}: {raw[:200]!r}")
    reply = json.loads(raw)
    text = reply.get("result", {}).get("content", [{}])[0].get("text")
    if text != str(n + 1):
        raise Failure(f"wrong answer {raw[:200]!r}")


TASK_META = {**META, "io.modelcontextprotocol/clientCapabilities": {
    "extensions": {"io.modelcontextprotocol/tasks": {}}}}


def modern_post(port: int, method: str, name: str, params: dict) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        body = {"jsonrpc": "2.0", "id": 5, "method": method, "params": {**params, "_meta": TASK_META}}
        status, _, raw = post(conn, body, {"MCP-Protocol-Version": MODERN, "Mcp-Method": method,
                                           "Mcp-Name": name})
        return status, json.loads(raw)
    finally:
        conn.close()


def create_task(port: int, ms: int) -> str:
    """A tools/call that becomes a task (the instances run --task-after 0)."""
    status, reply = modern_post(port, "tools/call", "main__slowEcho",
                                {"name": "main__slowEcho", "arguments": {"_1": ms}})
    result = reply.get("result", {})
    if status != 200 or result.get("resultType") != "task" or "taskId" not in result:
        raise Failure(f"the call did not become a task: {status} {reply}")
    return result["taskId"]


def get_task(port: int, task_id: str) -> tuple[int, dict]:
    return modern_post(port, "tasks/get", task_id, {"taskId": task_id})


def task_on(port: int, name: str, ms: int) -> str:
    for _ in range(30):
        task_id = create_task(port, ms)
        if task_id.startswith(name + "."):
            return task_id
    raise Failure(f"no task landed on instance {name} in 30 tries")


def legacy_init(port: int) -> tuple[http.client.HTTPConnection, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "lb-test", "version": "1"}}}
    status, headers, raw = post(conn, init, {})
    if status != 200 or "mcp-session-id" not in headers:
        raise Failure(f"initialize: {status} {raw[:200]!r}")
    sid = headers["mcp-session-id"]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    status, _, _ = post(conn, note, {"Mcp-Session-Id": sid})
    if status != 202:
        raise Failure(f"notifications/initialized: {status}")
    return conn, sid


def legacy_ping(port: int, sid: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        status, _, _ = post(conn, {"jsonrpc": "2.0", "id": 7, "method": "ping"}, {"Mcp-Session-Id": sid})
        return status
    finally:
        conn.close()


def session_on(lb_port: int, name: str) -> tuple[http.client.HTTPConnection, str]:
    """A legacy session made through the balancer that landed on `name`."""
    for _ in range(30):
        conn, sid = legacy_init(lb_port)
        if sid.startswith(name + "."):
            return conn, sid
        conn.close()
    raise Failure(f"no session landed on instance {name} in 30 tries")


def closed_connections(port: int) -> int:
    """Connections to or from `port` in TIME_WAIT: both balancers use one
    upstream connection per request, so this counts the requests an
    instance served lately."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            ports = {int(fields[1].split(":")[1], 16), int(fields[2].split(":")[1], 16)}
            if fields[3] == "06" and port in ports:
                count += 1
    return count


class Cluster:
    def __init__(self, binary: str, kind: str, lb_path: str, tmp: Path, extra: list[str] | None = None):
        self.binary, self.kind, self.lb_path, self.tmp = binary, kind, lb_path, tmp
        self.extra = extra or []
        self.instances: dict[str, subprocess.Popen] = {}
        # Each instance binds a port the kernel picks (`--http-port 0`) and
        # names it in its start-up line: a port chosen here and bound later
        # could be taken meanwhile by the other balancer's cluster, which
        # runs beside this one, and its instance would answer for ours.
        self.ports: dict[str, int] = {}
        # The balancer's own port cannot be left to the kernel: it is chosen
        # here and bound by the balancer, which is started again on a new
        # port if another process took this one first (start_balancer).
        self.lb_port = 0
        self.lb = None
        manifest = json.loads((ROOT / "tests/data/shapes/manifest.json").read_text())
        manifest["pools"][0]["exec"] = ["python3", str(ROOT / "tests/pool/testpool.py")]
        self.manifest = tmp / "manifest.json"
        self.manifest.write_text(json.dumps(manifest))

    def start(self) -> None:
        for name in NAMES:
            log = open(self.log(name), "wb")
            # Each instance's test pools say when a call starts and ends.
            env = {**os.environ, "TESTPOOL_TRACE": str(self.trace(name))}
            self.instances[name] = subprocess.Popen(
                [self.binary, "mcp", str(self.manifest), "--http-port", "0",
                 "--instance-id", name, "--drain-timeout", "20", "--task-after", "0", *self.extra],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, env=env)
        for name in NAMES:
            self.wait_listening(name)
        self.start_balancer()
        self.wait_health(self.lb_port, self.kind)

    def wait_listening(self, name: str) -> None:
        """Instance `name`'s port, from its start-up line, then its health."""
        deadline = time.monotonic() + STEP_TIMEOUT
        while time.monotonic() < deadline:
            found = re.search(r"\(instance %s\) over HTTP at http://127\.0\.0\.1:(\d+)/" % re.escape(name),
                              text_of(self.log(name)))
            if found:
                self.ports[name] = int(found.group(1))
                self.wait_health(self.ports[name], f"instance {name}")
                return
            if self.instances[name].poll() is not None:
                raise Failure(f"instance {name} exited before listening: {text_of(self.log(name))[-500:]}")
            time.sleep(0.02)
        raise Failure(f"instance {name} never said where it listens; logs in {self.tmp}")

    def trace(self, name: str) -> Path:
        """The call trace of instance `name`'s pools (TESTPOOL_TRACE)."""
        return self.tmp / f"{name}.trace"

    def log(self, name: str) -> Path:
        """Instance `name`'s stderr."""
        return self.tmp / f"{name}.log"

    def start_balancer(self) -> None:
        """The balancer on a free port, once it listens there. A port is
        chosen here and bound by the balancer later, so another process (the
        other balancer's cluster runs beside this one) may take it meanwhile:
        the balancer then exits saying the address is in use and is started
        again on another port."""
        for attempt in range(1, BIND_ATTEMPTS + 1):
            self.lb_port = free_port()
            self.lb = self.spawn_balancer()
            if self.wait_balancer_listening():
                return
            print(f"{self.kind}: port {self.lb_port} was taken before the balancer bound it "
                  f"(attempt {attempt}); trying another", file=sys.stderr)
        raise Failure(f"{self.kind} found no free port in {BIND_ATTEMPTS} attempts; logs in {self.tmp}")

    def spawn_balancer(self) -> subprocess.Popen:
        shipped = "nginx.conf" if self.kind == "nginx" else "haproxy.cfg"
        text = (ROOT / "deploy" / shipped).read_text()
        for name in NAMES:
            old = f"127.0.0.1:{DEFAULT_PORTS[name]}"
            if old not in text:
                raise Failure(f"deploy/{shipped} has no {old}")
            text = text.replace(old, f"127.0.0.1:{self.ports[name]}")
        old = f"127.0.0.1:{DEFAULT_LB_PORT}"
        if old not in text:
            raise Failure(f"deploy/{shipped} has no {old}")
        text = text.replace(old, f"127.0.0.1:{self.lb_port}")
        conf = self.tmp / shipped
        conf.write_text(text)
        log = open(self.balancer_log(), "wb")
        if self.kind == "nginx":
            argv = [self.lb_path, "-p", str(self.tmp), "-e", "stderr", "-c", str(conf)]
        else:
            argv = [self.lb_path, "-f", str(conf), "-db"]
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)

    def balancer_log(self) -> Path:
        return self.tmp / f"{self.kind}.log"

    def wait_balancer_listening(self) -> bool:
        """True once the balancer process holds the listening socket of
        `lb_port` (so whatever answers there is the balancer); False when it
        exited because the port was in use; any other exit fails."""
        deadline = time.monotonic() + STEP_TIMEOUT
        while time.monotonic() < deadline:
            if self.lb.poll() is not None:
                log = text_of(self.balancer_log())
                if "Address already in use" in log:
                    return False
                raise Failure(f"{self.kind} exited with {self.lb.returncode}: {log[-1000:]}")
            if holds_listener(self.lb.pid, self.lb_port):
                return True
            time.sleep(0.02)
        raise Failure(f"{self.kind} never listened on port {self.lb_port}; logs in {self.tmp}")

    def wait_health(self, port: int, what: str) -> None:
        deadline = time.monotonic() + STEP_TIMEOUT
        while time.monotonic() < deadline:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", "/health")
                if conn.getresponse().status == 200:
                    conn.close()
                    return
                conn.close()
            except OSError:
                pass
            time.sleep(0.05)
        raise Failure(f"{what} never became healthy; logs in {self.tmp}")

    def stop(self) -> None:
        # The balancer gets SIGTERM (a killed nginx master leaves its
        # workers running), the instances SIGTERM, then SIGKILL.
        procs = [p for p in [self.lb, *self.instances.values()] if p is not None]
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def load(port: int, clients: int, per_client: int | None, stop: threading.Event | None,
         results: list) -> list[threading.Thread]:
    """Modern calls from `clients` threads, each on its own keep-alive
    connection to the balancer; appends (start time, error or None)."""
    def run(k: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        n = 0
        while (per_client is None or n < per_client) and not (stop and stop.is_set()):
            started = time.monotonic()
            try:
                modern_call(conn, k * 100_000 + n)
                results.append((started, None))
            except (Failure, OSError, http.client.HTTPException) as e:
                results.append((started, f"{type(e).__name__}: {e}"))
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            n += 1
        conn.close()
    threads = [threading.Thread(target=run, args=(k,), daemon=True) for k in range(clients)]
    for t in threads:
        t.start()
    return threads


def scenario(binary: str, kind: str, lb_path: str, sdk_python: str) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="morloc-lb-"))
    cluster = Cluster(binary, kind, lb_path, tmp)
    try:
        cluster.start()
        lb = cluster.lb_port

        # 1. 1,000 modern calls from 8 clients, spread over every instance.
        before = {n: closed_connections(cluster.ports[n]) for n in NAMES}
        results: list = []
        started = time.monotonic()
        for t in load(lb, 8, 125, None, results):
            t.join(STEP_TIMEOUT)
        took = time.monotonic() - started
        errors = [e for _, e in results if e]
        grown = {n: closed_connections(cluster.ports[n]) - before[n] for n in NAMES}
        if len(results) != 1000 or errors:
            raise Failure(f"{len(results)} calls, {len(errors)} errors: {errors[:3]}")
        idle = [n for n, g in grown.items() if g < 100]
        if idle:
            raise Failure(f"instances {idle} served (almost) nothing: requests {grown}")
        print(f"{kind}: 1000 modern tools/call from 8 clients: 0 errors in {took:.1f} s, "
              f"every instance used (requests: {', '.join(f'{n} {g}' for n, g in grown.items())})")

        # 2. A legacy session from the real SDK, 50 calls.
        out = subprocess.run([sdk_python, str(ROOT / "tests/scale/legacy_client.py"),
                              f"http://127.0.0.1:{lb}/mcp", "50"],
                             capture_output=True, text=True, timeout=STEP_TIMEOUT)
        if out.returncode != 0:
            raise Failure(f"the SDK client failed: {out.stderr[-2000:]}")
        report = json.loads(out.stdout.strip().splitlines()[-1])
        if report["ok"] != 50:
            raise Failure(f"SDK session: {report}")
        print(f"{kind}: Python SDK legacy session {report['session']}: 50/50 calls through the balancer")

        # 2b. A task created through the balancer, polled to completion
        # through it (each tasks/get goes to the instance holding the task).
        task_id = create_task(lb, 300)
        deadline = time.monotonic() + STEP_TIMEOUT
        polls = 0
        while True:
            status, reply = get_task(lb, task_id)
            polls += 1
            state = reply.get("result", {}).get("status")
            if status != 200 or state not in ("working", "completed"):
                raise Failure(f"tasks/get {task_id}: {status} {reply}")
            if state == "completed":
                break
            if time.monotonic() > deadline:
                raise Failure(f"task {task_id} still working after {STEP_TIMEOUT} s")
            time.sleep(0.05)
        text = reply["result"]["result"]["content"][0]["text"]
        if text != "300":
            raise Failure(f"task {task_id} completed with {reply}")
        print(f"{kind}: task {task_id} created through the balancer, completed after {polls} tasks/get through it")

        # 3. SIGKILL instance a under load.
        _, sid_a = session_on(lb, "a")
        _, sid_b = session_on(lb, "b")
        task_a = task_on(lb, "a", 60_000)
        task_b = task_on(lb, "b", 100)
        results = []
        stop = threading.Event()
        threads = load(lb, 8, None, stop, results)
        wait_for("16 calls under load", lambda: len(results) >= 16)
        victim = cluster.instances["a"]
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
        dead_at = time.monotonic()
        wait_for("32 calls started after the kill",
                 lambda: sum(1 for s, _ in list(results) if s > dead_at) >= 32)
        stop.set()
        for t in threads:
            t.join(STEP_TIMEOUT)
        after = [e for s, e in results if s > dead_at]
        late_errors = [e for e in after if e]
        early_errors = [e for s, e in results if s <= dead_at and e]
        if not after or late_errors:
            raise Failure(f"{len(after)} calls after the kill, {len(late_errors)} errors: {late_errors[:3]}")
        dead_status = legacy_ping(lb, sid_a)
        live_status = legacy_ping(lb, sid_b)
        if dead_status != 404 or live_status != 200:
            raise Failure(f"after the kill: the dead instance's session got {dead_status} "
                          f"(want 404), the live one's {live_status} (want 200)")
        # The dead instance's task is unknown wherever it lands (-32602);
        # the live instance's task is intact: it completes.
        dead_task_status, dead_task = get_task(lb, task_a)
        if dead_task.get("error", {}).get("code") != -32602:
            raise Failure(f"the dead instance's task: {dead_task_status} {dead_task}")
        deadline = time.monotonic() + STEP_TIMEOUT
        while True:
            live_task_status, live_task = get_task(lb, task_b)
            working = live_task.get("result", {}).get("status") == "working"
            if not working or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if live_task_status != 200 or live_task.get("result", {}).get("status") != "completed":
            raise Failure(f"the live instance's task: {live_task_status} {live_task}")
        print(f"{kind}: SIGKILL of instance a under load: {len(after)} modern calls started afterwards, "
              f"0 errors ({len(early_errors)} of the calls in flight at the kill failed); "
              f"its legacy session gets 404 and its task -32602 (HTTP {dead_task_status}), "
              f"b's session and task unaffected")

        # 4. SIGTERM instance b with a slow call in flight, once the
        # balancer has taken a out: HAProxy on its health checks
        # (deploy/haproxy.cfg), nginx on the first failed attempt.
        if kind == "haproxy":
            wait_for("HAProxy marking instance a down",
                     lambda: "morloc_mcp/a is DOWN" in text_of(tmp / "haproxy.log"))
        conn_b, sid = session_on(lb, "b")
        slow = {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                "params": {"name": "main__slowEcho", "arguments": {"_1": 2000}}}
        box: dict = {}

        def slow_call() -> None:
            try:
                box["reply"] = post(conn_b, slow, {"Mcp-Session-Id": sid})
            except Exception as e:  # noqa: BLE001 - reported below
                box["error"] = repr(e)
        caller = threading.Thread(target=slow_call, daemon=True)
        started_on_b = text_of(cluster.trace("b")).count("start slowEcho ")
        caller.start()
        # The call is in flight once b's pool has started it (the load uses
        # addOne); the load begins once b has closed its listener.
        wait_for("the slow call running on instance b",
                 lambda: text_of(cluster.trace("b")).count("start slowEcho ") > started_on_b)
        term = cluster.instances["b"]
        term.send_signal(signal.SIGTERM)
        wait_for("instance b draining", lambda: "SIGTERM: draining" in text_of(cluster.log("b")))
        results = []
        for t in load(lb, 4, 25, None, results):
            t.join(STEP_TIMEOUT)
        errors = [e for _, e in results if e]
        caller.join(STEP_TIMEOUT)
        code = term.wait(30)
        if "reply" not in box:
            raise Failure(f"the slow call failed: {box}")
        status, _, raw = box["reply"]
        text = json.loads(raw)["result"]["content"][0]["text"] if status == 200 else None
        if status != 200 or text != "2000":
            raise Failure(f"the slow call: {status} {raw[:200]!r}")
        if errors:
            raise Failure(f"{len(errors)} of 100 modern calls during the drain failed: {errors[:3]}")
        if code != 0:
            raise Failure(f"the drained instance exited with {code}")
        try:
            socket.create_connection(("127.0.0.1", cluster.ports["b"]), timeout=1).close()
            raise Failure("the drained instance still accepts connections")
        except OSError:
            pass
        print(f"{kind}: SIGTERM of instance b with a 2 s call in flight: the call completed, "
              f"100 new modern calls went elsewhere with 0 errors, b exited 0")
    finally:
        cluster.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def job_post(port: int, tool: str, arguments: dict) -> tuple[int, dict]:
    """A modern tools/call without the Tasks extension; a job tool's call
    mirrors its job id in Mcp-Param-Job-Id, as the tool's x-mcp-header asks."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": tool}
    if "job_id" in arguments:
        headers["Mcp-Param-Job-Id"] = arguments["job_id"]
    try:
        body = {"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                "params": {"name": tool, "arguments": arguments, "_meta": META}}
        status, _, raw = post(conn, body, headers)
        return status, json.loads(raw)
    finally:
        conn.close()


def jobs_scenario(binary: str, kind: str, lb_path: str) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="morloc-lb-jobs-"))
    cluster = Cluster(binary, kind, lb_path, tmp, ["--job-tools"])
    try:
        cluster.start()
        lb = cluster.lb_port
        status, handle = job_post(lb, "main__slowEcho", {"_1": 600})
        job = handle.get("result", {}).get("structuredContent", {}).get("jobId")
        if status != 200 or not job:
            raise Failure(f"no job handle through the balancer: {status} {handle}")
        # Round-robin alone would send two polls in three elsewhere, where
        # the job is unknown: every one must find it.
        polls, deadline = 0, time.monotonic() + STEP_TIMEOUT
        while True:
            polls += 1
            tool = "job_status" if polls % 2 else "job_result"
            status, reply = job_post(lb, tool, {"job_id": job})
            result = reply.get("result", {})
            if status != 200 or result.get("isError"):
                raise Failure(f"{tool} {job} through the balancer (poll {polls}): {status} {reply}")
            # A handle's structuredContent is the job's status object; a
            # finished job's is the call's own value (2026-07-28).
            structured = result.get("structuredContent")
            handle_shaped = isinstance(structured, dict) and structured.get("jobId") == job
            if tool == "job_result" and not (handle_shaped and structured.get("status") == "working"):
                break
            if time.monotonic() > deadline:
                raise Failure(f"job {job} still working after {STEP_TIMEOUT} s")
            time.sleep(0.05)
        if result.get("content") != [{"type": "text", "text": "600"}] or result.get("structuredContent") != 600:
            raise Failure(f"job {job} ended with {result}")
        print(f"{kind}: job {job} created through the balancer, {polls} job_status/job_result calls "
              f"routed to its instance by Mcp-Param-Job-Id, then its result")
    finally:
        cluster.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str]) -> int:
    binary, kind, lb_path, sdk_python = argv[1:5]
    try:
        scenario(binary, kind, lb_path, sdk_python)
        jobs_scenario(binary, kind, lb_path)
    except Failure as e:
        print(f"{kind}: FAILED: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
