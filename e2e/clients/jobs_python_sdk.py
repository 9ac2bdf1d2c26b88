"""Drives a long call to completion through the job tools (`--job-tools`)
with the official Python SDK 2.x, a client without the Tasks extension.

    python jobs_python_sdk.py --stdio CMD [ARG...]
    python jobs_python_sdk.py --url http://127.0.0.1:PORT/mcp

The harness starts the server with `--job-tools --task-after 1000`. The
client is the high-level `mcp.Client` as most code uses it (default
`mode="auto"`: the modern era, no extension declared), so a call that runs
longer than a second is answered with a job handle, which the SDK accepts
as an ordinary result (it validates `structuredContent` against the tool's
`outputSchema` when there is one).

Steps: `initialize`, `era`, `tools/list` (job_status, job_result and
job_cancel listed, with their input schemas; mkResult's output schema
widened to also accept a handle), `job handle` (slowEcho 5000 ms: a result
that is not an error, whose structuredContent names the job, status
`working`, and whose text names job_result), `job status` (job_status says
`working`), `job result` (job_result polled every pollIntervalMs until the
job has finished: exactly the result the call would have had, text
`5000`), `job cancel` (a second long call cancelled with job_cancel; its
job_result is then an isError result), `job schema` (mkResult's record
result, handle or not, passes the SDK's validation against the widened
schema and ends as the record; a handle's structuredContent passes the same
validator).
"""

from __future__ import annotations

import sys
import time
from importlib.metadata import version
from typing import Any

import anyio
import mcp

from checks import MK_RESULT, Reporter, check_era, find_tool, parse_args, session_era

LONG_MS = 5000
JOB_TOOLS = ("job_status", "job_result", "job_cancel")


def wire(model: Any) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def text_of(result: dict[str, Any]) -> str | None:
    content = result.get("content") or [{}]
    return content[0].get("text")


def job_of(result: dict[str, Any]) -> dict[str, Any] | None:
    """The job status object of a handle (or of job_status, job_result of
    a running job), else None."""
    structured = result.get("structuredContent")
    if isinstance(structured, dict) and isinstance(structured.get("jobId"), str):
        return structured
    return None


async def finish(client: Any, job: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """Polls job_result until the job has finished; returns its result and
    the number of polls."""
    polls = 0
    while True:
        await anyio.sleep(job.get("pollIntervalMs", 1000) / 1000)
        polls += 1
        result = wire(await client.call_tool("job_result", {"job_id": job["jobId"]}))
        running = job_of(result)
        if running is None or running.get("status") != "working":
            return result, polls


async def steps(kind: str, target: Any, report: Reporter) -> None:
    server: Any = mcp.StdioServerParameters(command=target[0], args=target[1:]) if kind == "stdio" else target
    async with mcp.Client(server) as client:
        era, how = session_era(client.session)
        report.step("initialize", None, f"{how}; protocol {client.protocol_version}")
        report.step("era", check_era(era, how), f"{era}: {how}")

        tools = {t["name"]: t for t in (wire(t) for t in (await client.list_tools()).tools)}
        names = list(tools)
        slow, mk = find_tool(names, "slowEcho"), find_tool(names, "mkResult")
        missing = [n for n in JOB_TOOLS if n not in tools] + [b for b, n in (("slowEcho", slow), ("mkResult", mk)) if not n]
        error = f"not listed: {', '.join(missing)}" if missing else None
        if error is None:
            bad = [n for n in JOB_TOOLS if tools[n].get("inputSchema", {}).get("required") != ["job_id"]]
            wide = tools[mk].get("outputSchema", {}).get("anyOf")
            if bad:
                error = f"job tools without a required 'job_id': {bad}"
            elif not isinstance(wide, list) or len(wide) != 2:
                error = f"mkResult's outputSchema is not widened: {tools[mk].get('outputSchema')}"
        if not report.step("tools/list", error, f"{len(names)} tools"):
            return

        started = time.monotonic()
        handle = wire(await client.call_tool(slow, {"_1": LONG_MS}))
        waited = time.monotonic() - started
        job = job_of(handle)
        error = None
        if handle.get("isError"):
            error = f"an isError result: {text_of(handle)!r}"
        elif job is None:
            error = f"no job in the result: {handle}"
        elif job.get("status") != "working":
            error = f"status {job.get('status')!r} in the handle"
        elif "job_result" not in (text_of(handle) or ""):
            error = f"the text does not say what to call: {text_of(handle)!r}"
        if not report.step("job handle", error, f"after {waited:.1f} s: {text_of(handle)!r}"[:300]):
            return

        status = wire(await client.call_tool("job_status", {"job_id": job["jobId"]}))
        shown = job_of(status) or {}
        report.step("job status", None if shown.get("status") == "working" else f"job_status gave {status}",
                    str(shown.get("statusMessage")))

        result, polls = await finish(client, job)
        total = time.monotonic() - started
        error = None
        if result != {"content": [{"type": "text", "text": str(LONG_MS)}], "isError": False}:
            # The modern era adds resultType and _meta, which wire() keeps
            # only when the SDK models them; compare what a result is.
            core = {k: result.get(k) for k in ("content", "isError")}
            if core != {"content": [{"type": "text", "text": str(LONG_MS)}], "isError": False}:
                error = f"expected the call's own result (text {str(LONG_MS)!r}), got {result}"
        report.step("job result", error, f"{polls} polls, {total:.1f} s in all: {text_of(result)!r}")

        handle = wire(await client.call_tool(slow, {"_1": 20_000}))
        long = job_of(handle)
        if long is None:
            report.step("job cancel", f"no job for a 20 s call: {handle}")
        else:
            cancelled = job_of(wire(await client.call_tool("job_cancel", {"job_id": long["jobId"]}))) or {}
            after = wire(await client.call_tool("job_result", {"job_id": long["jobId"]}))
            error = None
            if cancelled.get("status") != "cancelled":
                error = f"job_cancel left status {cancelled.get('status')!r}"
            elif not after.get("isError"):
                error = f"job_result of a cancelled job is not an error: {after}"
            report.step("job cancel", error, str(text_of(after))[:200])

        record = wire(await client.call_tool(mk, {"_1": 7}))
        how = "a plain result"
        if job_of(record) is not None:
            how = "a handle, then its result"
            record, _ = await finish(client, job_of(record))
        got = record.get("structuredContent")
        error = None if got == MK_RESULT else f"expected {MK_RESULT}, got {record}"
        # A handle standing in for mkResult must pass the same validation
        # (the SDK's own validator class for the schema's dialect).
        from jsonschema.validators import validator_for
        schema = tools[mk]["outputSchema"]
        problems = [e.message for e in validator_for(schema)(schema).iter_errors(job)]
        if error is None and problems:
            error = f"a job handle does not satisfy mkResult's widened outputSchema: {problems}"
        report.step("job schema", error, f"{how}: {got}; a handle validates too")


async def main() -> int:
    kind, target = parse_args(sys.argv[1:])
    report = Reporter()
    report.step("client", None, f"mcp {version('mcp')} (python SDK 2.x, no tasks extension)")
    try:
        await steps(kind, target, report)
    except BaseException as e:  # noqa: BLE001 - any failure is the step's result
        report.crash("jobs", e)
    return report.exit_code()


if __name__ == "__main__":
    sys.exit(anyio.run(main))
