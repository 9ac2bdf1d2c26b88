#!/bin/sh
# Lays out the build context of a minimal image (Dockerfile beside this
# script): the static binary, the program and the Dockerfile to build.
#
#   sh deploy/container/stage.sh [--with-pools] [--bin PATH] PROGRAM DIR
#
# PROGRAM is a program's build directory or its manifest.json; DIR is made
# (or emptied) and receives
#   DIR/morloc-mcp        the binary (default target/static/morloc-mcp,
#                         from `make static`)
#   DIR/program/          manifest.json only, for a program without pools;
#                         with --with-pools, the whole build directory
#   DIR/Dockerfile        Dockerfile (FROM scratch), or with --with-pools
#                         Dockerfile.runtime (FROM the BASE build argument)
# Then `docker build DIR` (or `podman build DIR`). A program with pools is
# refused without --with-pools: a scratch image has nothing to run them.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=$root/target/static/morloc-mcp
pools=0
while [ $# -gt 0 ]; do
    case $1 in
    --with-pools) pools=1 ;;
    --bin) bin=${2:?--bin needs a path}; shift ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "stage: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) break ;;
    esac
    shift
done
[ $# -eq 2 ] || { echo "stage: usage: stage.sh [--with-pools] [--bin PATH] PROGRAM DIR" >&2; exit 2; }
program=$1
dir=$2
if [ -d "$program" ]; then
    manifest=$program/manifest.json
else
    manifest=$program
    program=$(dirname "$program")
fi
[ -f "$manifest" ] || { echo "stage: no manifest.json at $manifest" >&2; exit 1; }
[ -x "$bin" ] || { echo "stage: no binary at $bin (run 'make static' first, or pass --bin)" >&2; exit 1; }
case $(file -b "$bin" 2>/dev/null || echo unknown) in
*"statically linked"* | *"static-pie linked"*) ;;
*) [ "$pools" = 1 ] || { echo "stage: $bin is not a static binary: a scratch image has no C library for it" >&2; exit 1; } ;;
esac
count=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1])).get("pools") or []))' "$manifest") ||
    { echo "stage: cannot read $manifest as JSON" >&2; exit 1; }
if [ "$count" != 0 ] && [ "$pools" = 0 ]; then
    echo "stage: $manifest has $count pool(s): a scratch image cannot run them; use --with-pools and an image with the Morloc runtime (Dockerfile.runtime)" >&2
    exit 1
fi

rm -rf "$dir"
mkdir -p "$dir/program"
cp "$bin" "$dir/morloc-mcp"
if [ "$pools" = 1 ]; then
    cp -R "$program/." "$dir/program/"
    cp "$here/Dockerfile.runtime" "$dir/Dockerfile"
else
    cp "$manifest" "$dir/program/manifest.json"
    cp "$here/Dockerfile" "$dir/Dockerfile"
fi
echo "stage: $dir: morloc-mcp, program/ ($( [ "$pools" = 1 ] && echo "with $count pool(s)" || echo "no pools")), Dockerfile"
