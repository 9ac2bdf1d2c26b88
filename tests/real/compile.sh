#!/bin/sh
# Compiles the real-runtime suite's own Morloc programs with the `morloc`
# compiler on PATH, into a cache keyed by their sources and the compiler's
# version, and prints the directory that holds them, one subdirectory per
# program with its `nexus-build/manifest.json` (the layout real_pools.py
# reads).
#
#   sh tests/real/compile.sh CACHE PROGRAM_DIR...
#
# Each PROGRAM_DIR holds NAME.loc (NAME is the directory's name) and the
# files it sources. It is compiled with `morloc make -o nexus NAME.loc` in a
# copy under CACHE/<hash> (a failed or interrupted compilation leaves no
# entry), and reused while neither its files nor `morloc --version` change.
# CACHE/current/NAME links to the entry in use. Exits 1, with the
# compiler's output, when a program does not compile.
set -eu

if [ $# -lt 2 ]; then
    echo "usage: compile.sh CACHE PROGRAM_DIR..." >&2
    exit 2
fi
cache=$1
shift
mkdir -p "$cache/current"
version=$(morloc --version 2>&1 || true)

for src in "$@"; do
    name=$(basename "$src")
    if [ ! -f "$src/$name.loc" ]; then
        echo "test-real: $src has no $name.loc" >&2
        exit 1
    fi
    # The key: the compiler's version, then every file's name and contents.
    key=$(
        cd "$src"
        {
            printf '%s\n' "$version"
            find . -type f | LC_ALL=C sort | while IFS= read -r f; do
                printf '%s\n' "$f"
                cat "$f"
            done
        } | sha256sum | cut -c1-16
    )
    entry=$cache/$name-$key
    if [ ! -f "$entry/nexus-build/manifest.json" ]; then
        work=$cache/.work-$name-$key-$$
        rm -rf "$work"
        mkdir -p "$work"
        cp -R "$src/." "$work/"
        echo "test-real: compiling $name ($version) into $entry" >&2
        if ! (cd "$work" && morloc make -o nexus "$name.loc") >"$work.log" 2>&1 ||
            [ ! -f "$work/nexus-build/manifest.json" ]; then
            echo "test-real: morloc make -o nexus $name.loc failed:" >&2
            tail -n 40 "$work.log" >&2
            rm -rf "$work" "$work.log"
            exit 1
        fi
        rm -f "$work.log"
        rm -rf "$entry"
        mv "$work" "$entry"
    fi
    rm -f "$cache/current/$name"
    ln -s "../$name-$key" "$cache/current/$name"
done
printf '%s\n' "$cache/current"
