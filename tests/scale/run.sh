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
status=0
for kind in nginx haproxy; do
    if [ "$kind" = nginx ]; then path=$NGINX; else path=$HAPROXY; fi
    if [ -z "$path" ]; then
        echo "test-scale: $kind SKIPPED: not installed (apt-get install $kind)"
        continue
    fi
    timeout 300 "$PYTHON" tests/scale/lb_test.py "$BIN" "$kind" "$path" "$SDK" || status=1
    timeout 120 "$PYTHON" tests/scale/results_test.py "$BIN" "$kind" "$path" || status=1
done
exit $status
