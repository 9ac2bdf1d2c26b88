#!/usr/bin/env python3
"""Rebuild the committed seed corpora in fuzz/seeds/<target>/ from the
repository's test data.

Run from anywhere: `python3 fuzz/make_seeds.py`. Each seed file is named
after the SHA-1 of its bytes (as libFuzzer names corpus entries), so
rerunning is idempotent. Targets that read leading control bytes (a split
point, a line cap) get them prepended here, so a seed reaches the code
under test in the shape the target expects.
"""

import hashlib
import json
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
SEEDS = ROOT / "fuzz" / "seeds"

# Seeds bigger than this are skipped: the corpus is committed and must stay small.
MAX_SEED = 16 * 1024


def write(target, seeds):
    out = SEEDS / target
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    kept = 0
    for seed in seeds:
        if len(seed) > MAX_SEED:
            continue
        (out / hashlib.sha1(seed).hexdigest()).write_bytes(seed)
        kept += 1
    print(f"{target}: {kept} seeds")


def manifest():
    return json.loads((DATA / "shapes" / "manifest.json").read_text())


def walk(value):
    """Every nested JSON value, depth first."""
    yield value
    if isinstance(value, dict):
        for v in value.values():
            yield from walk(v)
    elif isinstance(value, list):
        for v in value:
            yield from walk(v)


def edge_case_lines():
    lines = []
    for line in (DATA / "reference" / "protocol_edge_cases.jsonl").read_text().splitlines():
        lines.append(json.loads(line)["in"].encode())
    return lines


def http_requests():
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    reqs = [
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body),
        b"GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n"
        b"Mcp-Session-Id: 0123456789abcdef\r\n\r\n",
        b"DELETE /mcp HTTP/1.1\r\nHost: localhost\r\nMcp-Session-Id: abc\r\n\r\n",
        b"POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\n{\"a\":\r\n2;ext=1\r\n1}\r\n0\r\nTrailer: t\r\n\r\n",
        b"POST /mcp HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}",
        b"GET / HTTP/1.0\r\n\r\nGET /mcp HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
        b"OPTIONS * HTTP/1.1\r\nHost: a\r\nOrigin: http://evil.example\r\n\r\n",
    ]
    # The first byte picks the split point.
    return [bytes([i * 37 % 256]) + r for i, r in enumerate(reqs)]


def jsonrpc_seeds():
    lines = edge_case_lines()
    # Two leading bytes: split point and line cap (see the target).
    seeds = [bytes([i * 29 % 256, 63]) + line for i, line in enumerate(lines)]
    seeds.append(bytes([7, 63]) + b"".join(lines[:4]))
    seeds.append(bytes([3, 4]) + b"0123456789\nok\n12345\nlast")
    return seeds


def schema_seeds():
    schemas = {v["schema"] for v in walk(manifest()) if isinstance(v, dict) and isinstance(v.get("schema"), str)}
    return [s.encode() for s in sorted(schemas)]


def wire_packets():
    wire = DATA / "wire"
    return [p.read_bytes() for p in sorted(wire.glob("*.bin")) + sorted((wire / "variants").glob("*.bin"))]


def schema_table(target):
    """The `SCHEMAS` table of a target whose first byte picks a schema."""
    src = (ROOT / "fuzz" / "fuzz_targets" / f"{target}.rs").read_text()
    table = re.search(r"const SCHEMAS: &\[&str\] = &\[(.*?)\];", src, re.S)
    return re.findall(r'"((?:[^"\\]|\\.)*)"', table.group(1)) if table else []


def pick(table, schema):
    """The leading byte that selects `schema`, or None if the table lacks it."""
    return bytes([table.index(schema)]) if schema in table else None


def voidstar_seeds():
    """The flat payload of each inline voidstar data packet, behind the byte
    that picks its schema (packets whose schema is not in the table are skipped)."""
    table = schema_table("voidstar_decode")
    seeds = []
    txts = sorted((DATA / "wire").glob("*.txt")) + sorted((DATA / "wire" / "variants").glob("*.txt"))
    for txt in txts:
        voidstar = False
        schema = None
        for line in txt.read_text().splitlines():
            if "DATA source=" in line:
                voidstar = "format=voidstar" in line
                schema = None
            m = re.search(r"metadata magic='mmh' type=1 size=\d+ value=b'([^']*)'", line)
            if m:
                schema = m.group(1).replace("\\x00", "")
            m = re.search(r"payload\(\d+ bytes\)=([0-9a-f]+)$", line)
            if m and voidstar and schema is not None and pick(table, schema) is not None:
                seeds.append(pick(table, schema) + bytes.fromhex(m.group(1)))
                schema = None
    return seeds


def msgpack_seeds():
    """Msgpack values behind the byte that picks their schema."""
    table = schema_table("msgpack_decode")
    cases = [(p.read_bytes(), "aj") for p in sorted((DATA / "wire" / "variants").glob("*.mpk"))]
    cases += [
        (b"\xc0", "?j"),  # nil
        (b"\x2a", "?j"),  # 42
        (b"\x2a", "j"),
        (b"\xd3\x80\x00\x00\x00\x00\x00\x00\x00", "j"),  # i64 min
        (b"\xcf\xff\xff\xff\xff\xff\xff\xff\xff", "u8"),  # u64 max
        (b"\xd0\x80", "i1"),  # -128
        (b"\xca\x3d\xcc\xcc\xcd", "f4"),  # 0.1f
        (b"\x92\xcb\x3f\xb9\x99\x99\x99\x99\x99\x9a\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00", "af8"),  # [0.1, NaN]
        (b"\xa5hello", "s"),  # fixstr
        (b"\x93\x01\x02\x03", "aj"),  # [1,2,3]
        (b"\x93\xc3\xc2\xc3", "ab"),  # [true,false,true]
        (b"\x92\x01\xa1a", "t2js"),  # (1,"a")
        (b"\x92\x92\xa1a\x01\x92\xa1b\x02", "at2sj"),  # [("a",1),("b",2)]
        (b"\x91\x92\x01\x02", "am21xj1yj"),  # [{x:1,y:2}] as a positional record
        (b"\x82\xa1x\x01\xa1y\x02", "am21xj1yj"),  # a map where a record is expected
        (b"\x92\x01\x92\x92\x02\x90\x90", "&4Treem25valuej8childrena^4Tree"),
        (b"\xdd\xff\xff\xff\xff", "aj"),  # array32 claiming 4 billion elements
    ]
    return [pick(table, schema) + data for data, schema in cases if pick(table, schema) is not None]


def manifest_seeds():
    text = (DATA / "shapes" / "manifest.json").read_bytes()
    return [text, (DATA / "wire" / "shapes-manifest.json").read_bytes()]


def args_seeds():
    seeds = []
    for line in edge_case_lines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        params = msg.get("params") if isinstance(msg, dict) else None
        if isinstance(params, dict) and "arguments" in params:
            seeds.append(json.dumps(params, separators=(",", ":")).encode())
    return seeds


def args_stream_seeds():
    """Schema selector bytes (see fuzz_targets/args_stream.rs), a newline,
    then JSON: each argument value of the edge cases and a few hand-picked
    values, under a handful of schemas."""
    selectors = [b"\x03", b"\x0b\x03", b"\x0e\x03\x07", b"\x07", b"\x05", b"\x0c\x00",
                 b"\x0d\x03\x07", b"\x0b\x0e\x03\x03", b"\x10", b"\x11", b"\x0f\x06"]
    values = [
        b"[1,2,3]", b"-0", b"1e400", b"99999999999999999999999999999999999999999", b'"12"',
        b'{"x":1,"y":"a"}', b'{"x":1,"y":"a","x":2}', b'[{"x":1,"y":"\\u00e9"}]', b"null",
        b'"\\ud83d\\ude00"', b'{"v":1,"n":{"v":2,"n":null}}', b'[null,{"v":"s","c":[]}]',
    ]
    for line in edge_case_lines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        params = msg.get("params") if isinstance(msg, dict) else None
        arguments = params.get("arguments") if isinstance(params, dict) else None
        if isinstance(arguments, dict):
            values += [json.dumps(v, separators=(",", ":")).encode() for v in arguments.values()]
    return [sel + b"\n" + v for sel in selectors for v in dict.fromkeys(values)]


def eval_seeds():
    return [
        json.dumps(c["expr"], separators=(",", ":")).encode()
        for c in manifest()["commands"]
        if isinstance(c.get("expr"), dict)
    ]


def b64url(data):
    import base64
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def oauth_token_seeds():
    """Tokens of every shape the validator distinguishes (none is signed by
    a key the target holds: signatures are random bytes)."""
    claims = {"iss": "https://issuer.example", "aud": "https://mcp.example/mcp",
              "sub": "a", "exp": 4102444800, "nbf": 0, "scope": "mcp"}
    headers = [{"alg": "RS256", "kid": "r"}, {"alg": "ES256", "kid": "e"},
               {"alg": "ES256"}, {"alg": "none"}, {"alg": "HS256", "kid": "r"},
               {"alg": "RS256", "kid": "x", "crit": ["b64"]}]
    seeds = []
    for h in headers:
        for sig in (b"", bytes(range(64)), bytes(256)):
            head = b64url(json.dumps(h).encode())
            body = b64url(json.dumps(claims).encode())
            seeds.append(f"{head}.{body}.{b64url(sig)}".encode())
    seeds += [b"a.b.c", b"..", b"eyJ9.e30.", b""]
    return seeds


def oauth_jwks_seeds():
    rsa = {"kty": "RSA", "kid": "r", "use": "sig", "alg": "RS256",
           "n": b64url(b"\x01" * 256), "e": "AQAB"}
    ec = {"kty": "EC", "crv": "P-256", "kid": "e", "x": b64url(bytes(32)), "y": b64url(bytes(32))}
    docs = [{"keys": [rsa, ec]}, {"keys": [ec, {"kty": "oct", "k": "AA"}]}, {"keys": []}, {}]
    seeds = [json.dumps(d).encode() for d in docs]
    body = json.dumps(docs[0]).encode()
    seeds.append(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    seeds.append(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
    seeds += [b"http://127.0.0.1:8080/jwks", b"http://[::1]/a?b", b"https://x/"]
    return seeds


def main():
    write("http_parse", http_requests())
    write("jsonrpc_decode", jsonrpc_seeds())
    write("schema_parse", schema_seeds())
    write("manifest_load", manifest_seeds())
    write("args_invert", args_seeds())
    write("args_stream", args_stream_seeds())
    write("packet_decode", wire_packets())
    write("voidstar_decode", voidstar_seeds())
    write("msgpack_decode", msgpack_seeds())
    write("eval", eval_seeds())
    write("oauth_token", oauth_token_seeds())
    write("oauth_jwks", oauth_jwks_seeds())
    return 0


if __name__ == "__main__":
    sys.exit(main())
