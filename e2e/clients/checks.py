"""What every real-client run must observe, shared by the Python drivers.

A driver connects with its client library, then runs the steps below in
order and reports each one as a JSON line on stdout:

    {"step": "call addOne", "ok": true, "detail": "..."}

The harness (e2e/harness.py) knows the same step names and reports the first
one that failed or never ran. Results are checked as plain JSON (the MCP wire
shape, camelCase keys), so each driver only converts its library's objects.

Tool names: over HTTP a tool may be namespaced `<module>__<command>`; the
drivers look each base name up in the listed tools with `resolve_names`.
Standard library only: the drivers run in their own virtual environments.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Callable

STEPS = [
    "initialize",
    "tools/list",
    "call addOne",
    "call mkResult",
    "call maybeDouble",
    "call pureAnswer",
    "call pyFail",
    "protocol error",
]

UNKNOWN_TOOL = "noSuchTool"
# JSON-RPC "invalid params": what the server answers for a tool it lacks.
INVALID_PARAMS = -32602

MK_RESULT = {"status": "ok", "value": 7}

# (step, base tool name, arguments, check of the result as wire JSON)
Check = Callable[[dict[str, Any]], "str | None"]


def _first_text(result: dict[str, Any]) -> str | None:
    content = result.get("content")
    if not isinstance(content, list) or not content:
        return None
    block = content[0]
    if not isinstance(block, dict) or block.get("type") != "text":
        return None
    text = block.get("text")
    return text if isinstance(text, str) else None


def text_is(expected: str) -> Check:
    def check(result: dict[str, Any]) -> str | None:
        if result.get("isError"):
            return f"unexpected isError result: {_first_text(result)!r}"
        text = _first_text(result)
        if text != expected:
            return f"expected text {expected!r}, got {text!r}"
        return None
    return check


def structured_is(expected: dict[str, Any]) -> Check:
    def check(result: dict[str, Any]) -> str | None:
        if result.get("isError"):
            return f"unexpected isError result: {_first_text(result)!r}"
        got = result.get("structuredContent")
        if got != expected:
            return f"expected structuredContent {expected}, got {got!r}"
        text = _first_text(result)
        try:
            parsed = json.loads(text) if text is not None else None
        except ValueError:
            parsed = None
        if parsed != expected:
            return f"text block {text!r} does not hold the same value as structuredContent"
        return None
    return check


def text_only(expected: str) -> Check:
    """The legacy shape of a non-record value: its text, no structuredContent."""
    def check(result: dict[str, Any]) -> str | None:
        if "structuredContent" in result:
            return f"a legacy answer carries structuredContent {result['structuredContent']!r}"
        return text_is(expected)(result)
    return check


def error_mentions(fragment: str) -> Check:
    def check(result: dict[str, Any]) -> str | None:
        if result.get("isError") is not True:
            return f"expected isError: true, got {result.get('isError')!r}"
        text = _first_text(result)
        if text is None or fragment not in text:
            return f"expected an error text mentioning {fragment!r}, got {text!r}"
        return None
    return check


CALLS: list[tuple[str, str, dict[str, Any], Check]] = [
    ("call addOne", "addOne", {"_1": 41}, text_is("42")),
    ("call mkResult", "mkResult", {"_1": 7}, structured_is(MK_RESULT)),
    ("call maybeDouble", "maybeDouble", {}, text_is("null")),
    ("call pureAnswer", "pureAnswer", {}, text_is("42")),
    ("call pyFail", "pyFail", {"_1": 1}, error_mentions("boom")),
]

NEEDED = ["addOne", "mkResult", "maybeDouble", "pureAnswer", "pyFail", "bigList", "scaleReal"]


# The steps of structured_calls, in order.
STRUCTURED_STEPS = ["structured list", "structured number"]


def structured_calls(era: str) -> list[tuple[str, str, dict[str, Any], Check]]:
    """An array- and a number-returning call (SEP-2106): in the modern era
    (2026-07-28) the raw value is `structuredContent`, which the client
    library validates against the tool's `outputSchema`; in the legacy eras
    only records carry one, as the reference does."""
    modern = era == "modern"
    return [
        ("structured list", "bigList", {"_1": 5},
         structured_is(list(range(5))) if modern else text_only("[0,1,2,3,4]")),  # type: ignore[arg-type]
        ("structured number", "scaleReal", {"_1": 1.5, "_2": 2.0},
         structured_is(3.0) if modern else text_only("3.0")),  # type: ignore[arg-type]
    ]

# The task jobs (clients that speak the tasks extension, against a server
# started with `--task-after 0`, so every remote call becomes a task): a slow
# call whose exact result must arrive through the task, and a tool error,
# which a task reports as completed with isError. Same tuple shape as CALLS.
# The harness checks in the wire transcript that each went through a task.
TASK_MS = 1500
TASK_CALLS = [
    ("task call", "slowEcho", {"_1": TASK_MS}, text_is(str(TASK_MS))),
    ("task tool error", "pyFail", {"_1": 2}, error_mentions("boom")),
]
TASK_STEPS = ["initialize", "tools/list", *(step for step, *_ in TASK_CALLS)]


def find_tool(names: list[str], base: str) -> str | None:
    """The listed name of `base`: itself, or `<module>__<base>`."""
    return next((n for n in names if n == base or n.endswith("__" + base)), None)


def resolve_names(names: list[str]) -> dict[str, str]:
    """Maps each needed base name to the listed name: the name itself, or
    `<module>__<name>` as a front-end lists it."""
    found: dict[str, str] = {}
    for base in NEEDED:
        for name in names:
            if name == base or name.endswith("__" + base):
                found[base] = name
                break
    return found


def check_tools(tools: list[dict[str, Any]]) -> tuple[dict[str, str], str | None]:
    """Checks the listed tools; returns the name map and an error, if any."""
    names = [t.get("name") for t in tools if isinstance(t.get("name"), str)]
    found = resolve_names(names)
    missing = [n for n in NEEDED if n not in found]
    if missing:
        return found, f"tools missing from tools/list: {', '.join(missing)} (listed: {', '.join(names)})"
    by_name = {t["name"]: t for t in tools}
    mk = by_name[found["mkResult"]]
    if not isinstance(mk.get("outputSchema"), dict):
        return found, "mkResult has no outputSchema"
    maybe = by_name[found["maybeDouble"]]
    required = maybe.get("inputSchema", {}).get("required")
    if required != []:
        return found, f"maybeDouble should require no argument, inputSchema.required is {required!r}"
    return found, None


def unknown_tool_error(code: Any, message: Any) -> str | None:
    """Checks the JSON-RPC error a client raised for the unknown tool."""
    if code != INVALID_PARAMS:
        return f"expected JSON-RPC error {INVALID_PARAMS}, got {code!r}: {message!r}"
    if UNKNOWN_TOOL not in str(message):
        return f"error message does not name the tool: {message!r}"
    return None


# The protocol era a client adopted, as the drivers name it:
#   modern    server/discover answered and adopted; no initialize was sent
#   fallback  server/discover probed, then the legacy initialize handshake
#   legacy    initialize only (clients that know no other way)
# E2E_EXPECT_ERA (set by the harness per client) says which one must happen.
ERAS = ("modern", "fallback", "legacy")


def session_era(session: Any) -> tuple[str, str]:
    """(era, description) of a connected 2.x Python SDK `ClientSession`, which
    keeps the result of whichever handshake it ran."""
    if getattr(session, "discover_result", None) is not None and session.initialize_result is None:
        return "modern", "server/discover adopted"
    if getattr(session, "initialize_result", None) is not None:
        return "fallback", "initialize after server/discover probe"
    return "unknown", "neither discover_result nor initialize_result is set"


def check_era(era: str, detail: str) -> str | None:
    """The `era` step: the adopted era against E2E_EXPECT_ERA."""
    expected = os.environ.get("E2E_EXPECT_ERA", "legacy")
    if era != expected:
        return f"expected the {expected} era, the client adopted {era} ({detail})"
    return None


def describe(exc: BaseException) -> str:
    """`Type: message`, looking inside the exception groups anyio raises."""
    inner = getattr(exc, "exceptions", None)
    if isinstance(inner, (list, tuple)) and inner:
        return "; ".join(describe(e) for e in inner)
    return f"{type(exc).__name__}: {exc}"


class Reporter:
    """Prints one JSON line per step; remembers whether all passed."""

    def __init__(self) -> None:
        self.failed = False

    def step(self, name: str, error: str | None, detail: str = "") -> bool:
        ok = error is None
        self.failed |= not ok
        line = {"step": name, "ok": ok, "detail": detail if ok else error}
        print(json.dumps(line), flush=True)
        return ok

    def crash(self, name: str, exc: BaseException) -> None:
        self.step(name, describe(exc))

    def exit_code(self) -> int:
        return 1 if self.failed else 0


def parse_args(argv: list[str]) -> tuple[str, list[str] | str]:
    """`--stdio CMD ARG...` or `--url URL`."""
    if len(argv) >= 2 and argv[0] == "--stdio":
        return "stdio", argv[1:]
    if len(argv) == 2 and argv[0] == "--url":
        return "http", argv[1]
    sys.exit(f"usage: {sys.argv[0]} --stdio CMD [ARG...] | --url URL")
