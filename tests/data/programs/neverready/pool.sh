#!/bin/sh
# A pool that starts and stays alive but never binds its socket, so a readiness
# probe never succeeds. Arguments are the usual <socket> <tmpdir> <shm basename>.
echo "neverready: pool started, it will never listen on $1" >&2
TESTPOOL_NEVER_LISTEN=1
export TESTPOOL_NEVER_LISTEN
exec python3 "$(dirname "$0")/../../../pool/testpool.py" "$@"
