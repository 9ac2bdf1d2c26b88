"""A loopback HTTP proxy that records an MCP conversation over Streamable HTTP.

    tap = HttpTap("http://127.0.0.1:PORT/mcp", log_path)
    ... point the client at tap.url ...
    tap.close()

The HTTP counterpart of stdio_tap.py, used by the harness where it must see
what crossed the wire (the task jobs). Every request is forwarded to the
upstream server as it came (headers and body), and the answer is streamed
back as it arrives, so server-sent event streams keep working. The log gets,
per request, one `http> METHOD PATH mcp-name=... mcp-method=...` line, then
`client> BODY`, then `server> MESSAGE` for each JSON-RPC message of the
answer (a JSON body, or each `data:` line of an event stream). The proxy
answers HTTP/1.0 style (the connection closes after each answer), which every
client handles. Standard library only.
"""

from __future__ import annotations

import http.client
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

MAX_LOGGED = 4000  # characters of one message kept in the log
# Headers that describe one hop, not the message.
HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "upgrade",
       "proxy-connection", "te", "trailer"}
UPSTREAM_TIMEOUT = 120  # seconds without a byte from the server


class HttpTap:
    def __init__(self, upstream: str, log_path: Path):
        target = urllib.parse.urlsplit(upstream)
        self.host = target.hostname or "127.0.0.1"
        self.port = target.port or 80
        self.path = target.path or "/mcp"
        self.lock = threading.Lock()
        self.log = open(log_path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()
        tap = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server naming
                tap.forward(self)

            def do_POST(self) -> None:  # noqa: N802
                tap.forward(self)

            def do_DELETE(self) -> None:  # noqa: N802
                tap.forward(self)

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{self.path}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def record(self, prefix: str, text: str) -> None:
        text = text.rstrip("\r\n")
        if len(text) > MAX_LOGGED:
            text = text[:MAX_LOGGED] + f"...({len(text)} characters)"
        with self.lock:
            if self.log.closed:
                return
            self.log.write(f"{prefix}{text}\n")
            self.log.flush()

    def forward(self, req: BaseHTTPRequestHandler) -> None:
        length = int(req.headers.get("Content-Length") or 0)
        body = req.rfile.read(length) if length else b""
        headers = {k: v for k, v in req.headers.items() if k.lower() not in HOP}
        self.record("http> ", f"{req.command} {req.path} mcp-name={req.headers.get('Mcp-Name')} "
                              f"mcp-method={req.headers.get('Mcp-Method')}")
        if body:
            self.record("client> ", body.decode("utf-8", "replace"))
        upstream = http.client.HTTPConnection(self.host, self.port, timeout=UPSTREAM_TIMEOUT)
        try:
            upstream.request(req.command, req.path, body=body or None, headers=headers)
            answer = upstream.getresponse()
        except OSError as e:
            self.record("tap: ", f"upstream failed: {e}")
            req.send_error(502, "upstream failed")
            upstream.close()
            return
        try:
            req.send_response_only(answer.status, answer.reason)
            for key, value in answer.getheaders():
                if key.lower() not in HOP:
                    req.send_header(key, value)
            req.send_header("Connection", "close")
            req.end_headers()
            streaming = "text/event-stream" in (answer.getheader("Content-Type") or "")
            pending = b""
            whole = b""
            while True:
                chunk = answer.read1(65536)
                if not chunk:
                    break
                req.wfile.write(chunk)
                req.wfile.flush()
                if streaming:
                    pending += chunk
                    *lines, pending = pending.split(b"\n")
                    for line in lines:
                        if line.startswith(b"data:"):
                            self.record("server> ", line[5:].strip().decode("utf-8", "replace"))
                else:
                    whole += chunk
            if whole.strip():
                self.record("server> ", whole.decode("utf-8", "replace"))
            elif not streaming:
                self.record("server> ", f"(HTTP {answer.status}, no body)")
        except OSError:
            pass  # the client went away; the upstream answer is dropped with it
        finally:
            upstream.close()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        with self.lock:
            self.log.close()
