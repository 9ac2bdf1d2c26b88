#!/bin/sh
# `make test-real`: the server against a real Morloc 0.98.2 installation
# on this machine, serving programs the real compiler compiled
# (tests/real/real_pools.py), and, where the reference server
# `morloc-nexus` is installed too, the same programs served by both and
# compared tool surface by tool surface and call by call.
#
# Where Morloc lives (tests/real/place.py finds it; skips with one line
# without):
#   - natively: an installation at $MORLOC_HOME (default
#     ~/.local/share/morloc: lib/libmorloc.so, the pymorloc binding under
#     opt/, the installed modules under src/morloc/plane/) and the `morloc`
#     compiler on PATH;
#   - or inside a root directory, $MORLOC_ROOT (default /opt/morloc-root),
#     with the installation at its default place there and the compiler at
#     /usr/local/bin/morloc: programs are compiled and served inside it
#     with chroot (run as root), the server binary copied in.
# The suite's own programs (tests/real/programs/) are compiled into a cache
# (tests/real/compile.sh: .cache/real-programs/, or /var/cache/morloc-mcp
# inside the root) and reused while the sources and the compiler stay the
# same. MORLOC_REAL_PROGRAMS may name more compiled programs (colon-separated:
# a manifest.json, a program's directory holding nexus-build/manifest.json,
# or a directory of those; inside the root for a root): they are compared
# with the reference too (`--only differential` runs only the comparisons). The manifests of
# other programs (MORLOC_MANIFESTS, default ../shared/morloc/programs when
# it exists) have their tools/list checked against tests/data/real/.
# Nothing here builds Morloc.
#
#   sh tests/real/run.sh [--only NAME]...   (arguments go to real_pools.py)
#   REAL_BIN=path       the server binary (default: cargo builds target/release/morloc-mcp)
set -eu

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PYTHON:-python3}

if ! where=$("$PY" "$ROOT/tests/real/place.py" check); then
    echo "test-real: skipped: $where"
    exit 0
fi
echo "test-real: $where"

programs=$("$PY" "$ROOT/tests/real/place.py" compile "$ROOT/.cache/real-programs" "$ROOT"/tests/real/programs/*/)

manifests=${MORLOC_MANIFESTS:-}
if [ -z "$manifests" ] && [ -d "$ROOT/../shared/morloc/programs" ]; then
    manifests=$ROOT/../shared/morloc/programs
fi

if [ -n "${REAL_BIN:-}" ]; then
    BIN=$REAL_BIN
else
    (cd "$ROOT" && ${CARGO:-cargo} build --release --quiet --bin morloc-mcp)
    BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/morloc-mcp
fi

if [ -n "$manifests" ]; then
    set -- --manifests "$manifests" "$@"
fi
exec "$PY" "$ROOT/tests/real/real_pools.py" --bin "$BIN" --programs "$programs" "$@"
