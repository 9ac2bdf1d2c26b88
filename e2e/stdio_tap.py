"""Runs a stdio MCP server and records its conversation.

    python3 stdio_tap.py LOG -- CMD [ARG...]

Clients start this instead of the server. Every line the client sends is
copied to the server and appended to LOG as `client> LINE`; every line the
server answers is copied back and appended as `server> LINE`; the server's
stderr goes straight to LOG. So a failing end-to-end run can show exactly
what crossed the wire, and the harness can check what a client sent first.
EOF from the client closes the server's stdin; SIGTERM and SIGINT are passed
on. The exit status is the server's. Standard library only.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

MAX_LOGGED = 4000  # characters of one message kept in the log


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: stdio_tap.py LOG -- CMD [ARG...]\n")
        return 2
    log_path, command = argv[1], argv[3:]
    log = open(log_path, "ab", buffering=0)  # noqa: SIM115 - lives as long as the process
    lock = threading.Lock()

    def record(prefix: bytes, line: bytes) -> None:
        body = line.rstrip(b"\n")
        if len(body) > MAX_LOGGED:
            body = body[:MAX_LOGGED] + b"...(%d bytes)" % len(body)
        with lock:
            log.write(prefix + body + b"\n")

    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda s, _f: server.send_signal(s))

    def pump_requests() -> None:
        assert server.stdin is not None
        try:
            for line in sys.stdin.buffer:
                record(b"client> ", line)
                server.stdin.write(line)
                server.stdin.flush()
        except (BrokenPipeError, OSError):
            pass
        finally:
            try:
                server.stdin.close()
            except OSError:
                pass

    threading.Thread(target=pump_requests, daemon=True).start()
    assert server.stdout is not None
    out = sys.stdout.buffer
    try:
        for line in server.stdout:
            record(b"server> ", line)
            out.write(line)
            out.flush()
    except (BrokenPipeError, OSError):
        pass
    status = server.wait()
    record(b"tap: ", b"server exited with status %d" % status)
    log.close()
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stdout.flush()
    # Leave at once: the thread copying requests may still sit in a read of
    # stdin, and a normal interpreter shutdown would wait on its lock.
    os._exit(code)
