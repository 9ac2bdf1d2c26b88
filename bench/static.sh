#!/bin/sh
# Builds a fully static release binary and checks that it runs with an empty
# environment from an empty directory.
#
# Usage: sh bench/static.sh             build, verify, smoke-run
#        sh bench/static.sh --profiles  also compare [profile.release] options
#                                       for size and speed (slow: one full
#                                       build per row)
#
# musl is used when its Rust target is already installed; otherwise glibc is
# linked statically (`+crt-static`, static libraries from libc6-dev). A static
# glibc binary behaves like a dynamic one except for NSS: resolving a host
# name (getaddrinfo) still loads the system's libnss modules at run time, and
# fails if they are missing or from another glibc version.
set -eu

cd "$(dirname "$0")/.."
root=$(pwd)
manifest="$root/tests/data/shapes/manifest.json"
expected="$root/tests/data/shapes/expected-mcp-tools.json"

die() {
    echo "static: $*" >&2
    exit 1
}

for tool in cargo rustc file ldd cmp; do
    command -v "$tool" >/dev/null 2>&1 || die "'$tool' is required but not installed"
done

host=$(rustc -vV | sed -n 's/^host: //p')
arch=${host%%-*}
if command -v rustup >/dev/null 2>&1 && rustup target list --installed 2>/dev/null | grep -qx "$arch-unknown-linux-musl"; then
    triple="$arch-unknown-linux-musl"
else
    triple="$arch-unknown-linux-gnu"
fi
# Naming --target keeps RUSTFLAGS off build scripts, which must stay
# dynamic to run on the host.
export RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static"

# Builds into the given target directory; prints the binary's path.
build() {
    cargo build --release --locked --quiet --target "$triple" --target-dir "$1" >&2 ||
        die "cargo build --release --target $triple failed"
    echo "$1/$triple/release/morloc-mcp"
}

# Fails unless the binary is statically linked.
verify_static() {
    kind=$(file -b "$1")
    case $kind in
        *"statically linked"* | *"static-pie linked"*) ;;
        *) die "$1 is not static: $kind" ;;
    esac
    # ldd exits non-zero on a static binary; only its words matter here.
    deps=$(ldd "$1" 2>&1 || true)
    case $deps in
        *"not a dynamic executable"* | *"statically linked"*) ;;
        *) die "ldd lists shared libraries for $1: $deps" ;;
    esac
}

size_of() {
    wc -c <"$1" | tr -d ' '
}

# Runs the binary from an empty directory with no environment at all.
smoke() {
    bin=$1
    empty=$(mktemp -d)
    out=$(mktemp)
    (cd "$empty" && env -i "$bin" --version) >"$out" 2>&1 || {
        cat "$out" >&2
        die "'morloc-mcp --version' failed with an empty environment"
    }
    echo "static: version: $(cat "$out")"
    (cd "$empty" && env -i "$bin" tools "$manifest") >"$out" 2>"$out.err" || {
        cat "$out.err" >&2
        die "'morloc-mcp tools' failed with an empty environment"
    }
    if ! cmp -s "$out" "$expected"; then
        diff -u "$expected" "$out" | head -n 40 >&2 || true
        die "'morloc-mcp tools' output differs from tests/data/shapes/expected-mcp-tools.json"
    fi
    [ -z "$(ls -A "$empty")" ] || die "the binary left files in its working directory: $(ls -A "$empty")"
    rm -rf "$empty" "$out" "$out.err"
    echo "static: tools output matches tests/data/shapes/expected-mcp-tools.json"
}

# A CPU-bound workload for comparing builds: the tool surface of a manifest
# with many commands (JSON and schema parsing, schema-to-JSON-Schema, JSON
# output). Writes it once; prints its path.
big_manifest() {
    big="$root/target/static-bench/big-manifest.json"
    if [ ! -f "$big" ]; then
        mkdir -p "$(dirname "$big")"
        python3 - "$manifest" "$big" <<'EOF'
import copy, json, sys
src, dst = sys.argv[1], sys.argv[2]
m = json.load(open(src))
remote = [c for c in m["commands"] if c["type"] == "remote"]
cmds = []
for i in range(200):
    for c in remote:
        c = copy.deepcopy(c)
        c["name"] = f'{c["name"]}{i}'
        cmds.append(c)
m["commands"] = cmds
json.dump(m, open(dst, "w"))
EOF
    fi
    echo "$big"
}

# Times every build on the workload, taking turns so that load from other
# processes falls on all of them alike, and prints the table. Input lines:
# "<opt> <lto> <cgu> <panic> <strip> <binary>". CPU time (user + system) is
# reported as the best and the median of the rounds.
compare() {
    python3 - "$1" "$2" <<'EOF'
import os, resource, statistics, subprocess, sys
rows = [line.split() for line in open(sys.argv[1]) if line.strip()]
big = sys.argv[2]
rounds = int(os.environ.get("ROUNDS", "30"))
times = {i: [] for i in range(len(rows))}
for _ in range(rounds):
    for i, row in enumerate(rows):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([row[5], "tools", big], stdout=subprocess.DEVNULL, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times[i].append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
mib = os.path.getsize(big) / 2**20
print(f"| opt-level | lto | codegen-units | panic | strip | size (bytes) | CPU ms, best | CPU ms, median |")
print("| --- | --- | --- | --- | --- | ---: | ---: | ---: |")
for i, row in enumerate(rows):
    size = os.path.getsize(row[5])
    print(f"| {' | '.join(row[:5])} | {size} | {min(times[i]):.0f} | {statistics.median(times[i]):.0f} |")
print(f"\nworkload: `morloc-mcp tools` on a {mib:.1f} MiB manifest, {rounds} rounds")
EOF
}

bin=$(build "$root/target/static")
verify_static "$bin"
echo "static: $bin ($triple)"
echo "static: $(file -b "$bin")"
echo "static: size $(size_of "$bin") bytes"
smoke "$bin"

[ "${1:-}" = "--profiles" ] || exit 0

command -v python3 >/dev/null 2>&1 || die "--profiles needs python3"
big=$(big_manifest)
list="$root/target/static-bench/builds.txt"
: >"$list"
# opt-level lto codegen-units panic strip
while read -r opt lto cgu panic strip; do
    echo "static: building opt-level=$opt lto=$lto codegen-units=$cgu panic=$panic strip=$strip" >&2
    dir="$root/target/static-bench/o$opt-$lto-$cgu-$panic-$strip"
    bin=$(
        CARGO_PROFILE_RELEASE_OPT_LEVEL=$opt CARGO_PROFILE_RELEASE_LTO=$lto \
            CARGO_PROFILE_RELEASE_CODEGEN_UNITS=$cgu CARGO_PROFILE_RELEASE_PANIC=$panic \
            CARGO_PROFILE_RELEASE_STRIP=$strip build "$dir"
    )
    verify_static "$bin"
    echo "$opt $lto $cgu $panic $strip $bin" >>"$list"
done <<'EOF'
3 false 16 unwind none
3 false 16 unwind symbols
3 fat 1 unwind symbols
3 fat 1 abort symbols
2 fat 1 abort symbols
s fat 1 abort symbols
z fat 1 abort symbols
s thin 16 abort symbols
EOF
echo
compare "$list" "$big"
