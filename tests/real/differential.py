"""The server and the reference side by side: every tool surface and every
call compared with `morloc-nexus mcp` (Morloc 0.98.2) on the same compiled
program, through the same installation.

Used by real_pools.py (one check per program) where the reference is
installed. For each program both servers are started, initialized alike,
and asked the same requests in the same order:

- `tools/list` (legacy, 2025-06-18): the two reply lines must be byte for
  byte the same;
- each call of the program's list (the suite's own programs have theirs,
  with the values to expect; any other program gets calls made from its
  tools' input schemas, two per tool: the required arguments only, then
  every argument): the two replies are compared.

Replies that differ are a failure unless the difference is one that
docs/differences.md documents; each such kind is listed below with the
words of its bullet there (checked to be present, so this list and the
document stay in step), and counted in the check's note.
"""

from __future__ import annotations

import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
DIFFERENCES = os.path.join(HERE, "..", "..", "docs", "differences.md")

# Kinds of documented difference: name -> words of its bullet in
# docs/differences.md.
DOCUMENTED = {
    "floats": "Floats are printed in the shortest form that reads back exactly",
    "big integers": "Integers are exact at any size",
    "error wording": "a failure is an `isError` result naming the argument path",
    "dead pool": "A pool that dies is restarted at once",
    "strings intact": "String arguments arrive intact",
    "hints": "An unknown tool or argument gets the reference's `-32602` message followed by a hint",
}


class Mismatch(Exception):
    """Replies that differ in a way no documented difference explains."""


def check_documented() -> None:
    """Every kind above still has its bullet in docs/differences.md."""
    with open(DIFFERENCES, encoding="utf-8") as f:
        text = f.read()
    missing = [name for name, words in DOCUMENTED.items() if words not in text]
    if missing:
        raise Mismatch("docs/differences.md no longer documents: %s" % ", ".join(missing))


def _number_close(ours, ref) -> bool:
    """`ref` is what the reference prints for the number `ours`: the same
    integer, or the float through %.15g (an integral float as an integer)."""
    if isinstance(ours, bool) or isinstance(ref, bool):
        return ours is ref
    if isinstance(ours, int) and isinstance(ref, int):
        return ours == ref
    if isinstance(ours, (int, float)) and isinstance(ref, (int, float)):
        if isinstance(ours, float) and (math.isnan(ours) or math.isinf(ours)):
            return False
        return float("%.15g" % ours) == float(ref)
    return False


def _floats_only(ours, ref) -> bool:
    """The two values differ only in how their numbers are printed."""
    if isinstance(ours, (int, float)) and not isinstance(ours, bool):
        return _number_close(ours, ref)
    if isinstance(ours, list) and isinstance(ref, list):
        return len(ours) == len(ref) and all(_floats_only(a, b) for a, b in zip(ours, ref))
    if isinstance(ours, dict) and isinstance(ref, dict):
        return list(ours) == list(ref) and all(_floats_only(ours[k], ref[k]) for k in ours)
    return ours == ref


def _text(result):
    content = result.get("content") or [{}]
    return content[0].get("text") if isinstance(content, list) and content else None


def _value(text):
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def _awkward_strings(value) -> bool:
    """Whether `value` holds a string the reference cannot pass on: one
    with a quote, a backslash or a control character."""
    if isinstance(value, str):
        return any(c in value for c in '"\\') or any(ord(c) < 0x20 for c in value)
    if isinstance(value, list):
        return any(_awkward_strings(v) for v in value)
    if isinstance(value, dict):
        return any(_awkward_strings(v) for v in value.values())
    return False


def judge(ours: dict, ref: dict, what: str, arguments=None) -> str | None:
    """None when the two JSON-RPC replies are the same (ids aside), else
    the documented difference they show; raises Mismatch otherwise.
    `arguments` are the call's."""
    ours = {k: v for k, v in ours.items() if k != "id"}
    ref = {k: v for k, v in ref.items() if k != "id"}
    if ours == ref:
        return None
    why = "%s: ours %s, the reference's %s" % (what, short(ours), short(ref))
    if "error" in ours or "error" in ref:
        o, r = ours.get("error"), ref.get("error")
        if o and r and o.get("code") == r.get("code") == -32602 and o.get("message", "").startswith(
            r.get("message", "\0") + " ("
        ):
            return "hints"
        raise Mismatch(why)
    o, r = ours.get("result", {}), ref.get("result", {})
    if o.get("isError") and r.get("isError"):
        # Both failed. Where the pool died, each says so its own way.
        texts = (_text(o) or "") + " " + (_text(r) or "")
        if "died" in texts or "crash" in texts or "exited" in texts:
            return "dead pool"
        # Ours checked the arguments against the schema and names the path.
        if (_text(o) or "").startswith("argument '"):
            return "error wording"
        raise Mismatch(why)
    if r.get("isError") and not o.get("isError"):
        # The reference wraps string arguments in quotes without escaping.
        if (_text(r) or "").startswith("serialization error: JSON parse error") and _awkward_strings(arguments):
            return "strings intact"
        raise Mismatch(why)
    if o.get("isError"):
        raise Mismatch(why)
    ot, rt = _text(o), _text(r)
    ov, rv = _value(ot), _value(rt)
    if ot is not None and rt is not None and ov is not None and rv is not None and _floats_only(ov, rv):
        rest_o = {k: v for k, v in o.items() if k not in ("content", "structuredContent")}
        rest_r = {k: v for k, v in r.items() if k not in ("content", "structuredContent")}
        sc_o, sc_r = o.get("structuredContent"), r.get("structuredContent")
        if rest_o == rest_r and (sc_o == sc_r or _floats_only(sc_o, sc_r)):
            return "floats"
    raise Mismatch(why)


def short(value, limit=240) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[:limit] + "... (%d chars)" % len(text)


# -- the programs to compare ---------------------------------------------------


def programs_at(entry: str) -> list[tuple[str, str]]:
    """(name, manifest) of the compiled programs one MORLOC_REAL_PROGRAMS
    entry names, sorted: a `manifest.json`, a program's directory (holding
    `nexus-build/manifest.json`, as `morloc make` leaves it), its build
    directory (holding `manifest.json`), or a directory of program
    directories. The name is the program's directory's."""
    def named(manifest: str) -> tuple[str, str]:
        build = os.path.dirname(os.path.abspath(manifest))
        program = os.path.dirname(build) if os.path.basename(build) == "nexus-build" else build
        return os.path.basename(program), manifest

    if os.path.isfile(entry):
        return [named(entry)]
    for inner in (os.path.join("nexus-build", "manifest.json"), "manifest.json"):
        if os.path.isfile(os.path.join(entry, inner)):
            return [named(os.path.join(entry, inner))]
    out = []
    if os.path.isdir(entry):
        for name in sorted(os.listdir(entry)):
            path = os.path.join(entry, name, "nexus-build", "manifest.json")
            if os.path.isfile(path):
                out.append((name, path))
    return out


# -- calls made from input schemas -------------------------------------------


def sample(schema: dict, defs: dict | None = None, depth: int = 0):
    """A small value that `schema` (a tool's input property) accepts."""
    if not isinstance(schema, dict):
        return None
    if "default" in schema and depth > 0:
        return schema["default"]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return sample(options[0], defs, depth)
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"] or kind
        kind = kinds[0]
    if kind == "integer":
        return 3
    if kind == "number":
        return 1.5
    if kind == "string":
        return "ab"
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    if kind == "array":
        items = schema.get("items")
        if isinstance(items, list):  # a tuple
            return [sample(s, defs, depth + 1) for s in items]
        if "prefixItems" in schema:
            return [sample(s, defs, depth + 1) for s in schema["prefixItems"]]
        return [] if depth > 3 else [sample(items or {}, defs, depth + 1)]
    if kind == "object":
        props = schema.get("properties", {})
        need = schema.get("required", list(props))
        return {k: sample(props[k], defs, depth + 1) for k in props if k in need}
    return None


def generated_calls(tools: list[dict]) -> list[tuple[str, dict]]:
    """Two calls per tool: the required arguments only, then every one."""
    calls = []
    for tool in tools:
        schema = tool.get("inputSchema", {})
        props = schema.get("properties", {})
        required = schema.get("required", [])
        first = {k: sample(props[k], depth=1) for k in props if k in required}
        calls.append((tool["name"], first))
        every = {k: sample(props[k], depth=1) for k in props}
        if every != first:
            calls.append((tool["name"], every))
    return calls
