#!/bin/sh
# `make test-real`: the server against the real Morloc 0.98.2 runtime, on
# the programs compiled by the real compiler (tests/real/real_pools.py).
#
# The runtime comes from $MORLOC_HOME when a usable Morloc installation is
# there (a Morloc user's own), else ../shared/morloc/install.sh builds it into
# .cache/morloc once (4-5 minutes cold, cached after). Without
# ../shared/morloc, as in a clone on its own, it prints one line and passes.
# This is the only test suite that reads ../shared.
#
#   sh tests/real/run.sh [--only NAME]...   (arguments go to real_pools.py)
#   MORLOC_SHARED=dir   the runtime source and programs/ (default ../shared/morloc)
#   REAL_BIN=path       the server binary (default: cargo builds target/release/morloc-mcp)
set -eu

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SHARED=${MORLOC_SHARED:-$ROOT/../shared/morloc}

if [ ! -d "$SHARED/programs" ] || [ ! -f "$SHARED/install.sh" ]; then
    echo "test-real: skipped: no real Morloc runtime and programs beside the project (../shared/morloc; MORLOC_SHARED names another place)"
    exit 0
fi

# Prints why the Morloc installation $1 cannot serve the programs, or
# nothing when it can: the runtime library, the Python binding that the
# generated pools import (from $MORLOC_HOME/opt, as their sys.path line
# says), and the root-py module that some of them import.
why_unusable() {
    if [ ! -f "$1/lib/libmorloc.so" ]; then
        echo "no lib/libmorloc.so"
    elif [ ! -d "$1/src/morloc/plane/default/root-py" ]; then
        echo "no root-py module in src/morloc/plane/default"
    elif ! err=$(MORLOC_HOME=$1 LD_LIBRARY_PATH=$1/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
        PYTHONPATH=$1/opt${PYTHONPATH:+:$PYTHONPATH} python3 -c 'import pymorloc' 2>&1); then
        echo "python3 cannot import pymorloc from opt/: $(printf '%s\n' "$err" | tail -n 1)"
    fi
}

home=
if [ -n "${MORLOC_HOME:-}" ]; then
    why=$(why_unusable "$MORLOC_HOME")
    if [ -z "$why" ]; then
        home=$MORLOC_HOME
        echo "test-real: runtime from MORLOC_HOME=$home"
    else
        echo "test-real: MORLOC_HOME=$MORLOC_HOME is not a usable Morloc installation ($why); using .cache/morloc"
    fi
fi
if [ -z "$home" ]; then
    home=$ROOT/.cache/morloc
    bash "$SHARED/install.sh" "$home"
    why=$(why_unusable "$home")
    if [ -n "$why" ]; then
        echo "test-real: the runtime built into $home is not usable: $why" >&2
        exit 1
    fi
fi

if [ -n "${REAL_BIN:-}" ]; then
    BIN=$REAL_BIN
else
    (cd "$ROOT" && ${CARGO:-cargo} build --release --quiet --bin morloc-mcp)
    BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/morloc-mcp
fi

if [ -f "$home/env.sh" ]; then
    # shellcheck disable=SC1091 # written by install.sh
    . "$home/env.sh"
else
    export MORLOC_HOME="$home"
    export LD_LIBRARY_PATH="$home/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export PYTHONPATH="$home/opt${PYTHONPATH:+:$PYTHONPATH}"
fi
exec "${PYTHON:-python3}" "$ROOT/tests/real/real_pools.py" --bin "$BIN" --programs "$SHARED/programs" "$@"
