#!/bin/sh
# `make test-real`: the server against a real Morloc 0.98.2 installation
# on this machine, serving programs the real compiler compiled
# (tests/real/real_pools.py).
#
# Needs, and skips with one line without:
#   - a Morloc installation at $MORLOC_HOME (default ~/.local/share/morloc):
#     lib/libmorloc.so, the pymorloc binding under opt/, the installed
#     modules under src/morloc/plane/;
#   - the `morloc` compiler on PATH, which compiles the suite's own programs
#     (tests/real/programs/) into .cache/real-programs/ (tests/real/compile.sh,
#     reused while the sources and the compiler stay the same).
# The manifests of other compiled programs, when a directory of them is
# given (MORLOC_MANIFESTS, default ../shared/morloc/programs when it
# exists), have their tools/list checked against tests/data/real/ too.
# Nothing here builds Morloc.
#
#   sh tests/real/run.sh [--only NAME]...   (arguments go to real_pools.py)
#   REAL_BIN=path       the server binary (default: cargo builds target/release/morloc-mcp)
set -eu

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
home=${MORLOC_HOME:-$HOME/.local/share/morloc}

# Prints why the Morloc installation $1 cannot serve the programs, or
# nothing when it can: the runtime library, the Python binding that the
# generated pools import (from $MORLOC_HOME/opt, as their sys.path line
# says), and the root-py module the programs import.
why_unusable() {
    if [ ! -d "$1" ]; then
        echo "no such directory"
    elif [ ! -f "$1/lib/libmorloc.so" ]; then
        echo "no lib/libmorloc.so"
    elif [ ! -d "$1/src/morloc/plane/default/root-py" ]; then
        echo "no root-py module in src/morloc/plane/default"
    elif ! err=$(MORLOC_HOME=$1 LD_LIBRARY_PATH=$1/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
        PYTHONPATH=$1/opt${PYTHONPATH:+:$PYTHONPATH} python3 -c 'import pymorloc' 2>&1); then
        echo "python3 cannot import pymorloc from opt/: $(printf '%s\n' "$err" | tail -n 1)"
    fi
}

why=$(why_unusable "$home")
if [ -n "$why" ]; then
    echo "test-real: skipped: no usable Morloc installation at $home ($why; MORLOC_HOME names another)"
    exit 0
fi
if ! command -v morloc >/dev/null 2>&1; then
    echo "test-real: skipped: the morloc compiler is not on PATH (the installation at $home is usable)"
    exit 0
fi
echo "test-real: runtime from $home, compiler $(command -v morloc)"

export MORLOC_HOME="$home"
export LD_LIBRARY_PATH="$home/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$home/opt${PYTHONPATH:+:$PYTHONPATH}"

programs=$(sh "$ROOT/tests/real/compile.sh" "$ROOT/.cache/real-programs" "$ROOT"/tests/real/programs/*/)

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
exec "${PYTHON:-python3}" "$ROOT/tests/real/real_pools.py" --bin "$BIN" --programs "$programs" "$@"
