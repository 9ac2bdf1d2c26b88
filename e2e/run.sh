#!/bin/sh
# `make e2e`: installs the real MCP clients (e2e/install.sh; nothing when
# they are already there), builds the release binary (the one `make build`,
# `make test-real` and `make test-scale` use, so `make test` builds it once),
# then runs every client on every transport and the official conformance
# suite (e2e/harness.py).
#
#   sh e2e/run.sh                      # everything
#   sh e2e/run.sh typescript-sdk:stdio conformance   # jobs by name prefix
#   sh e2e/run.sh --subset             # the representative subset
#
# E2E_BIN=path uses that server binary instead of building one.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# The Node clients and the conformance suite are installed with npm. Without
# it (and without them installed already) there is nothing to run: say so
# and pass, except in CI (MORLOC_MCP_REQUIRE_E2E=1), where it is an error.
if ! command -v npm >/dev/null 2>&1 && [ ! -x "${E2E_CACHE:-$ROOT/.cache}/node/node_modules/.bin/node" ]; then
    echo "e2e: skipped: npm is not installed (Node >= 20 with npm; Debian/Ubuntu: apt-get install nodejs npm)"
    [ "${MORLOC_MCP_REQUIRE_E2E:-}" = 1 ] && exit 1
    exit 0
fi
sh "$ROOT/e2e/install.sh"
if [ -z "${E2E_BIN:-}" ]; then
    (cd "$ROOT" && ${CARGO:-cargo} build --release --quiet --bin morloc-mcp)
    E2E_BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/morloc-mcp
fi
exec "${PYTHON:-python3}" "$ROOT/e2e/harness.py" --bin "$E2E_BIN" "$@"
