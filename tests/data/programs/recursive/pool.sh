#!/bin/sh
# The manifest cannot set a pool's environment, so this wrapper selects the
# test pool's recursive-records function table and passes the pool's argv through.
TESTPOOL_PROGRAM=recursive
export TESTPOOL_PROGRAM
exec python3 "$(dirname "$0")/../../../pool/testpool.py" "$@"
