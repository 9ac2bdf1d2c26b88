"""Big results behind a load balancer: instances started with
--max-result-chars, behind the shipped configuration (deploy/nginx.conf or
deploy/haproxy.cfg, as lb_test.py starts them). Modern tool calls through
the balancer go round-robin, so their long results are stored on different
instances; every page of each is then read with resources/read through the
balancer, which must route on the instance named in the URI (Mcp-Name
"morloc://result/<instance>.<random>?..."). A read sent straight to another
instance finds nothing, so the reads could only succeed by that routing.

Usage: results_test.py BINARY nginx|haproxy LB_PATH
Prints one line; exits 1 on failure.
"""

import http.client
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from lb_test import MODERN, META, NAMES, Cluster, Failure, post

N = 20_000
PAGE = 3_000


class ResultCluster(Cluster):
    def start(self) -> None:
        for name in NAMES:
            log = open(self.tmp / f"{name}.log", "wb")
            self.instances[name] = subprocess.Popen(
                [self.binary, "mcp", str(self.manifest), "--http-port", "0",
                 "--instance-id", name, "--max-result-chars", "1000"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        for name in NAMES:
            self.wait_listening(name)
        self.start_balancer()
        self.wait_health(self.lb_port, self.kind)


def ask(port: int, method: str, name: str, params: dict) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": META}}
        status, _, raw = post(conn, body, {"MCP-Protocol-Version": MODERN, "Mcp-Method": method,
                                           "Mcp-Name": name})
        reply = json.loads(raw)
        if status != 200 and "error" not in reply:
            raise Failure(f"{method}: status {status}: {raw[:200]!r}")
        return reply
    finally:
        conn.close()


def read(port: int, uri: str) -> dict:
    return ask(port, "resources/read", uri, {"uri": uri})


def scenario(binary: str, kind: str, lb_path: str) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="morloc-lb-results-"))
    cluster = ResultCluster(binary, kind, lb_path, tmp)
    try:
        cluster.start()
        lb = cluster.lb_port
        uris = []
        for _ in range(6):
            reply = ask(lb, "tools/call", "main__bigList",
                        {"name": "main__bigList", "arguments": {"_1": N}})
            link = reply.get("result", {}).get("structuredContent", {}).get("resultLink")
            if not link or link.get("count") != N:
                raise Failure(f"no result link: {json.dumps(reply)[:300]}")
            uris.append(link["uri"])
        holders = {u.removeprefix("morloc://result/").split(".")[0] for u in uris}
        if len(holders) < 2:
            raise Failure(f"every result landed on {holders}: round-robin expected")
        pages = 0
        for uri in uris:
            got = []
            for offset in range(0, N, PAGE):
                reply = read(lb, f"{uri}?offset={offset}&limit={PAGE}")
                contents = reply.get("result", {}).get("contents")
                if not contents:
                    raise Failure(f"page {offset} of {uri}: {json.dumps(reply)[:300]}")
                got.extend(json.loads(contents[0]["text"]))
                pages += 1
            if got != list(range(N)):
                raise Failure(f"{uri}: the pages do not reassemble the list")
        # Straight to an instance that does not hold it: not found.
        uri = uris[0]
        holder = uri.removeprefix("morloc://result/").split(".")[0]
        other = next(n for n in NAMES if n != holder)
        reply = read(cluster.ports[other], f"{uri}?offset=0&limit=10")
        if reply.get("error", {}).get("code") != -32602:
            raise Failure(f"instance {other} answered a read of {holder}'s result: {reply}")
        print(f"{kind}: {len(uris)} results of {N} elements stored on instances "
              f"{', '.join(sorted(holders))}; {pages} pages read through the balancer, each "
              f"routed to its holder; another instance answers not found")
    finally:
        cluster.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str]) -> int:
    binary, kind, lb_path = argv[1:4]
    try:
        scenario(binary, kind, lb_path)
    except Failure as e:
        print(f"{kind}: FAILED: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
