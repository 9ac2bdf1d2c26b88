"""The OAuth flow of the official Python MCP SDK (2.x) against the server as
an OAuth resource server, with a test authorization server written here.

    python oauth_flow.py BINARY MANIFEST

The authorization server runs in a thread on loopback: RFC 8414 metadata,
dynamic client registration, an authorization endpoint that approves at
once (redirecting with a code), a token endpoint that checks PKCE and mints
an RS256 JWT for the `resource` the client asked for, and the JWKS. The
server is started trusting it (`--oauth-issuer`, `--oauth-jwks` by URL).
The SDK's `OAuthClientProvider` then meets the 401, reads the protected
resource metadata, registers, authorizes, exchanges the code and retries;
the script lists the tools and calls one. Prints one `ok`/`FAIL` line per
step and exits non-zero if any failed. Needs `cryptography` and `pyjwt`
(dependencies of the SDK).
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import subprocess
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import httpx2
import jwt
import mcp
from cryptography.hazmat.primitives.serialization import load_der_private_key
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

ROOT = Path(__file__).resolve().parents[2]
KEY = load_der_private_key((ROOT / "tests/data/oauth/rsa1.pk8").read_bytes(), password=None)
SCOPE = "mcp:tools"


def b64(n: int) -> str:
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


class AuthServer(BaseHTTPRequestHandler):
    """The test authorization server (one per process; state on the class)."""

    issuer = ""
    codes: dict[str, dict] = {}
    issued: list[dict] = []

    def log_message(self, *args) -> None:  # quiet
        pass

    def reply(self, status: int, body: dict | None = None, headers: dict | None = None) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        if url.path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
            return self.reply(200, {
                "issuer": self.issuer,
                "authorization_endpoint": f"{self.issuer}/authorize",
                "token_endpoint": f"{self.issuer}/token",
                "registration_endpoint": f"{self.issuer}/register",
                "jwks_uri": f"{self.issuer}/jwks",
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic"],
                "scopes_supported": [SCOPE],
            })
        if url.path == "/jwks":
            numbers = KEY.public_key().public_numbers()
            return self.reply(200, {"keys": [{"kty": "RSA", "kid": "e2e", "use": "sig", "alg": "RS256",
                                              "n": b64(numbers.n), "e": b64(numbers.e)}]})
        if url.path == "/authorize":
            # The user approves at once.
            code = secrets.token_urlsafe(16)
            AuthServer.codes[code] = query
            location = query["redirect_uri"] + "?" + urllib.parse.urlencode(
                {"code": code, "state": query.get("state", ""), "iss": self.issuer})
            return self.reply(302, None, {"Location": location})
        self.reply(404, {"error": "not_found"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length).decode()
        if self.path == "/register":
            meta = json.loads(body)
            meta.update({"client_id": secrets.token_hex(8), "client_id_issued_at": int(time.time()),
                         "token_endpoint_auth_method": "none"})
            return self.reply(201, meta)
        if self.path == "/token":
            form = dict(urllib.parse.parse_qsl(body))
            asked = AuthServer.codes.pop(form.get("code", ""), None)
            if asked is None:
                return self.reply(400, {"error": "invalid_grant"})
            verifier = form.get("code_verifier", "").encode()
            challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=").decode()
            if challenge != asked.get("code_challenge"):
                return self.reply(400, {"error": "invalid_grant", "error_description": "PKCE"})
            resource = form.get("resource") or asked.get("resource")
            now = int(time.time())
            claims = {"iss": self.issuer, "sub": "e2e-user", "aud": resource, "iat": now, "nbf": now,
                      "exp": now + 600, "scope": asked.get("scope") or SCOPE, "client_id": form.get("client_id")}
            AuthServer.issued.append(claims)
            token = jwt.encode(claims, KEY, algorithm="RS256", headers={"kid": "e2e"})
            return self.reply(200, {"access_token": token, "token_type": "Bearer", "expires_in": 600,
                                    "scope": claims["scope"]})
        self.reply(404, {"error": "not_found"})


class Memory:
    """Token storage in memory."""

    def __init__(self) -> None:
        self.tokens = None
        self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens) -> None:
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, info) -> None:
        self.client = info


def step(name: str, ok: bool, detail: str) -> bool:
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}", flush=True)
    return ok


async def flow(url: str) -> bool:
    redirect = "http://127.0.0.1:1/callback"
    landed: dict[str, str] = {}

    async def redirect_handler(authorization_url: str) -> None:
        # The "browser": follow the authorization URL to its redirect.
        async with httpx2.AsyncClient() as browser:
            answer = await browser.get(authorization_url)
        location = urllib.parse.urlsplit(answer.headers["location"])
        landed.update(urllib.parse.parse_qsl(location.query))

    async def callback_handler() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=landed["code"], state=landed.get("state"), iss=landed.get("iss"))

    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(client_name="morloc-mcp e2e", redirect_uris=[redirect],
                                            grant_types=["authorization_code", "refresh_token"],
                                            response_types=["code"], scope=SCOPE),
        storage=Memory(),
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    ok = True
    async with httpx2.AsyncClient(auth=provider, timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            read, write = streams[0], streams[1]
            async with mcp.ClientSession(read, write) as session:
                init = await session.initialize()
                ok &= step("authorized", bool(AuthServer.issued),
                           f"token for aud {AuthServer.issued[-1]['aud'] if AuthServer.issued else '?'}; "
                           f"server {init.server_info.name if hasattr(init, 'server_info') else init.serverInfo.name}")
                tools = await session.list_tools()
                names = [t.name for t in tools.tools]
                ok &= step("tools/list", "addOne" in names, f"{len(names)} tools")
                result = await session.call_tool("addOne", {"_1": 41})
                text = " ".join(getattr(c, "text", "") for c in result.content)
                is_error = getattr(result, "is_error", getattr(result, "isError", None))
                ok &= step("tools/call", not is_error and "42" in text, f"addOne(41) = {text}")
    return ok


def main() -> int:
    binary, manifest = sys.argv[1], sys.argv[2]
    auth = ThreadingHTTPServer(("127.0.0.1", 0), AuthServer)
    AuthServer.issuer = f"http://127.0.0.1:{auth.server_address[1]}"
    threading.Thread(target=auth.serve_forever, daemon=True).start()
    server = subprocess.Popen(
        [binary, "mcp", manifest, "--http-port", "0", "--plain-tool-names", "--oauth-issuer", AuthServer.issuer,
         "--oauth-jwks", f"{AuthServer.issuer}/jwks", "--oauth-scopes", SCOPE],
        stderr=subprocess.PIPE, text=True)
    url = None
    lines = []
    try:
        for line in server.stderr:
            lines.append(line)
            if " over HTTP at " in line:
                url = line.rsplit(" over HTTP at ", 1)[1].strip()
                break
        if url is None:
            step("start", False, "".join(lines)[-2000:])
            return 1
        threading.Thread(target=lambda: [lines.append(x) for x in server.stderr], daemon=True).start()
        ok = anyio.run(flow, url)
    except BaseException as e:  # noqa: BLE001 - any failure is the result
        step("flow", False, f"{type(e).__name__}: {e}")
        ok = False
    finally:
        server.terminate()
        server.wait(timeout=30)
    if not ok:
        print("server stderr:\n" + "".join(lines)[-3000:])
    print(f"{3 if ok else 0} passed, {0 if ok else 1} failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
