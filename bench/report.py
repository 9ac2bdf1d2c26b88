"""Writing a benchmark's section into bench/RESULTS.md (or another file)."""

from __future__ import annotations

import os
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def provenance() -> str:
    """When, at which commit, on how many CPUs and under what load (at the
    end of the run) the figures were measured, as one sentence."""
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    load = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else []
    return "%s, commit %s, %d CPUs, load average at the end %s." % (
        time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), commit or "?", os.cpu_count() or 0,
        " ".join(load) or "?")


def write_section(out: str, begin: str, end: str, section: str) -> None:
    """Replaces the text from `begin` to `end` (and the newline after it) in
    `out` with `section`, or appends `section` when the markers are not
    there. `section` starts with `begin` and ends with `end` and a newline."""
    text = open(out, encoding="utf-8").read() if os.path.exists(out) else ""
    if begin in text and end in text:
        text = text[:text.index(begin)] + section + text[text.index(end) + len(end) + 1:]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
