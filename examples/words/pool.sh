#!/bin/sh
# The manifest cannot set a pool's environment, so this wrapper selects the
# test pool's `words` function table and passes the pool's argv through.
TESTPOOL_PROGRAM=words
export TESTPOOL_PROGRAM
exec python3 "$(dirname "$0")/../../tests/pool/testpool.py" "$@"
