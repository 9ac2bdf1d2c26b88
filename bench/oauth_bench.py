#!/usr/bin/env python3
"""OAuth's cost per call: keep-alive HTTP throughput under `--auth-token` against
OAuth with RS256 and ES256 tokens, at the same client count, runs interleaved.

    python3 bench/oauth_bench.py target/release/morloc-mcp
    python3 bench/oauth_bench.py BIN --clients 16 --seconds 10 --rounds 3 --tool pureAnswer
    python3 bench/oauth_bench.py BIN --quick          # 2 s per run, to check the script

Each mode starts its own server on `examples/shapes` (`--http-port 0`): `token`
with `--auth-token`, `rs256` and `es256` with `--oauth-issuer` and a key file
made from the committed test keys (`tests/data/oauth`). Tokens are minted with
the `openssl` command (RS256, and ES256 with its DER signature turned into the
raw `r || s` JWS wants), valid for an hour. Clients, sessions, warm-up and the
checks of every reply are `http_bench.py`'s; every request carries the mode's
`Authorization` header. The modes run one after another in each round, so a
change in the machine's load touches them alike; the load average is printed
with each run. `pureAnswer` (evaluated inside the server) shows the cost of
the check best; `addOne` adds a pool round trip. Standard library and openssl.

Besides calls per second (which follow the machine's load), each run reports
the server's CPU time per call: its user + system time (`/proc/<pid>/stat`)
over the timed window, divided by the calls answered in it. That is the
figure to compare on a busy machine: what a call costs the server's one
thread, whoever else runs. The summary gives each mode's median against
`--auth-token`'s.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import http_bench  # noqa: E402

KEYS = os.path.join(http_bench.REPO, "tests", "data", "oauth")
ISSUER = "https://issuer.bench/"
AUDIENCE = "https://mcp.bench/mcp"
AUTH = {"value": ""}


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def openssl(*args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["openssl", *args], input=data, capture_output=True, check=True).stdout


def der_ints(der: bytes) -> list[int]:
    """The INTEGERs of a DER SEQUENCE (an ECDSA signature)."""
    out, i = [], 2 if der[1] < 0x80 else 2 + (der[1] & 0x7F)
    while i < len(der):
        assert der[i] == 0x02, "an INTEGER"
        n = der[i + 1]
        out.append(int.from_bytes(der[i + 2:i + 2 + n], "big"))
        i += 2 + n
    return out


def jwk(name: str, kid: str) -> dict:
    path = os.path.join(KEYS, f"{name}.pk8")
    spki = openssl("pkey", "-inform", "DER", "-in", path, "-pubout", "-outform", "DER")
    if name.startswith("ec"):
        point = spki[-65:]
        return {"kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256", "use": "sig",
                "x": b64(point[1:33]), "y": b64(point[33:])}
    text = openssl("rsa", "-inform", "DER", "-in", path, "-noout", "-modulus").decode()
    n = bytes.fromhex(text.strip().split("=", 1)[1])
    return {"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig", "n": b64(n),
            "e": b64((65537).to_bytes(3, "big"))}


def mint(name: str, kid: str, alg: str) -> str:
    now = int(time.time())
    header = {"alg": alg, "typ": "JWT", "kid": kid}
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "bench", "exp": now + 3600, "iat": now}
    signing = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}".encode()
    path = os.path.join(KEYS, f"{name}.pk8")
    signature = openssl("dgst", "-sha256", "-keyform", "DER", "-sign", path, data=signing)
    if alg == "ES256":
        r, s = der_ints(signature)
        signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    return f"{signing.decode()}.{b64(signature)}"


def with_auth(original):
    def request_bytes(self, body: bytes) -> bytes:
        raw = original(self, body)
        head, sep, rest = raw.partition(b"\r\n")
        return head + sep + f"Authorization: {AUTH['value']}\r\n".encode() + rest
    return request_bytes


def cpu_seconds(pid: int) -> float:
    """The user + system CPU time of process `pid` so far, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # After "pid (comm)": state is field 3, utime 14 and stime 15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary")
    parser.add_argument("--tool", default="pureAnswer", choices=sorted(http_bench.TOOLS))
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.warmup, args.rounds = 2.0, 5, 1
    http_bench.Client.request_bytes = with_auth(http_bench.Client.request_bytes)
    work = tempfile.mkdtemp(prefix="oauth-bench-")
    keys = os.path.join(work, "jwks.json")
    with open(keys, "w") as f:
        json.dump({"keys": [jwk("rsa1", "rsa-1"), jwk("ec1", "ec-1")]}, f)
    oauth = ["--oauth-issuer", ISSUER, "--oauth-jwks", keys, "--oauth-audience", AUDIENCE]
    modes = {
        "token": (["--auth-token", "bench-token"], "Bearer bench-token"),
        "rs256": (oauth, "Bearer " + mint("rsa1", "rsa-1", "RS256")),
        "es256": (oauth, "Bearer " + mint("ec1", "ec-1", "ES256")),
    }
    print(f"# OAuth against --auth-token: `{args.tool}`, {args.clients} keep-alive clients, "
          f"{args.seconds:g} s per run" + (" (quick: not worth publishing)" if args.quick else ""))
    print()
    print(f"- binary: `{args.binary}`; {os.cpu_count()} CPUs")
    print()
    print("| round | mode | calls/s | p50 (ms) | p99 (ms) | server CPU per call (µs) "
          "| load average |")
    print("|--:|--|--:|--:|--:|--:|--:|")
    rates: dict[str, list[float]] = {m: [] for m in modes}
    cpu: dict[str, list[float]] = {m: [] for m in modes}
    for round_no in range(1, args.rounds + 1):
        for mode, (extra, auth) in modes.items():
            AUTH["value"] = auth
            proc, host, port = http_bench.start_server(args.binary, http_bench.SHAPES, extra)
            try:
                name = http_bench.served_name(host, port, args.tool)
                r = http_bench.run_level(host, port, name, args.tool, args.clients, args.seconds,
                                         args.warmup, probe=lambda: cpu_seconds(proc.pid))
            finally:
                proc.terminate()
                proc.wait()
            rates[mode].append(r["rate"])
            per_call = 1e6 * r["probed"] / max(r["calls"], 1)
            cpu[mode].append(per_call)
            print(f"| {round_no} | {mode} | {r['rate']:.0f} | {r['p50']:.3f} | {r['p99']:.3f} "
                  f"| {per_call:.1f} | {os.getloadavg()[0]:.2f} |", flush=True)
    print()
    base, base_cpu = median(rates["token"]), median(cpu["token"])
    for mode in ("rs256", "es256"):
        rate, used = median(rates[mode]), median(cpu[mode])
        print(f"- {mode}: median {rate:.0f} calls/s, {100 * (rate / base - 1):+.1f} % against "
              f"--auth-token ({base:.0f}); server CPU per call {used:.1f} µs, "
              f"{100 * (used / base_cpu - 1):+.1f} % against --auth-token ({base_cpu:.1f} µs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
