#!/bin/sh
# A pool that fails at once, like one whose interpreter cannot load the program.
echo "crashstart: pool failed to start: simulated import error" >&2
exit 1
