#!/bin/sh
# make test-scale: three instances behind nginx and behind HAProxy, each
# started from the shipped configuration in deploy/ (tests/scale/lb_test.py
# says what is checked; tests/scale/results_test.py checks that resources/read
# of a stored big result reaches the instance holding it). Needs nginx, haproxy (Debian packages; .ci/run
# installs them) and the Python MCP SDK 1.x environment of the e2e suite
# (.cache/py-mcp1, made by e2e/install.sh). A balancer that is not installed
# is skipped with one line.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
BIN=${SCALE_BIN:-$ROOT/target/release/morloc-mcp}
PYTHON=${PYTHON:-python3}
SDK=$ROOT/.cache/py-mcp1/bin/python

find_tool() {
    command -v "$1" 2>/dev/null || { [ -x "/usr/sbin/$1" ] && echo "/usr/sbin/$1"; } || true
}
NGINX=$(find_tool nginx)
HAPROXY=$(find_tool haproxy)
if [ -z "$NGINX" ] && [ -z "$HAPROXY" ]; then
    echo "test-scale: SKIPPED: neither nginx nor haproxy is installed (apt-get install nginx haproxy)"
    exit 0
fi
cargo build --release --quiet
if [ ! -x "$SDK" ]; then
    sh e2e/install.sh mcp1
fi
# Both checks of one balancer; fails if either failed.
run_kind() {
    ok=0
    timeout 300 "$PYTHON" tests/scale/lb_test.py "$BIN" "$1" "$2" "$SDK" || ok=1
    timeout 300 "$PYTHON" tests/scale/results_test.py "$BIN" "$1" "$2" || ok=1
    return $ok
}
# The two balancers' runs share nothing (ports, directories, processes) and
# mostly wait, so they run at once; each one's output is shown whole.
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
for kind in nginx haproxy; do
    if [ "$kind" = nginx ]; then path=$NGINX; else path=$HAPROXY; fi
    if [ -z "$path" ]; then
        echo "test-scale: $kind SKIPPED: not installed (apt-get install $kind)"
        continue
    fi
    run_kind "$kind" "$path" >"$out/$kind.log" 2>&1 &
    echo $! >"$out/$kind.pid"
done
for kind in nginx haproxy; do
    [ -f "$out/$kind.pid" ] || continue
    wait "$(cat "$out/$kind.pid")" || status=1
    cat "$out/$kind.log"
done
exit $status
