#!/bin/sh
# The manifest cannot set a pool's environment, so this wrapper selects the
# test pool's conformance function table and passes the pool's argv through.
TESTPOOL_PROGRAM=conformance
export TESTPOOL_PROGRAM
# One thread per connection: a cancelled task's call (slow_compute) sleeps on
# in its worker, as in a real pool, and must not hold up the calls after it.
TESTPOOL_WORKERS=threads
export TESTPOOL_WORKERS
exec python3 "$(dirname "$0")/../../../pool/testpool.py" "$@"
