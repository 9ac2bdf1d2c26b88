#!/bin/sh
# Builds a fully static release binary, checks it and runs the whole
# integration suite against it.
#
# Usage: sh bench/static.sh              build, verify, test
#        sh bench/static.sh --build-only  only build it (`make test` does so
#                                         beside the release build; the
#                                         full run then finds it built)
#        sh bench/static.sh --profiles   also compare [profile.release] options
#                                        for size and speed (slow: one full
#                                        build per row)
#
# The C library is musl, linked statically; one of these must be installed:
#   - Rust's x86_64-unknown-linux-musl target (`rustup target add ...`), or
#   - musl's own libc.a and start files (Debian/Ubuntu: `musl-tools`), which
#     are linked under the glibc target through a gcc specs file written
#     below, with the `musl-libc` feature supplying the two glibc symbols the
#     prebuilt standard library and libgcc's unwinder ask for (src/main.rs).
# The static binary has the same features as the release build, OAuth
# included: `ring`'s C and assembly are compiled by musl-gcc, against musl's
# headers, when musl's libc.a is linked under the glibc target.
# Either way the binary uses our own allocator (src/musl/alloc.rs) and memcpy
# (src/musl/memcopy.rs), not musl's, which are slow for this server.
# STATIC_LIBC=glibc links glibc statically instead: about 2 MB, and
# resolving host names (NSS) would still need the system's shared libraries.
#
# The static binary is built at opt-level 2 (STATIC_OPT_LEVEL; the release
# profile says 3): about 62 KB smaller, for as many instructions per call
# (bench/RESULTS.md, "The static binary's size budget").
# Checks: `file` and `ldd` say static; the size is at most STATIC_MAX_BYTES
# (2,200,000 unless set; not checked for glibc); `--version` and `tools` run
# with an empty environment from an empty directory, and `tools` matches the
# golden file; the minimal container's layout (deploy/container) serves stdio
# and HTTP sessions from an otherwise empty root directory (chroot), and so
# does the image itself when a Docker daemon answers; then `cargo test --test
# tests` runs the integration tests of what differs between the builds (below)
# with MORLOC_MCP_TEST_BIN pointing at the static binary (the test build is
# the one `cargo test` makes: same features, so nothing is built again).
#
# What differs: the static binary is the release build's code, features and
# profile (but at opt-level 2); only the C library (musl: processes, signals,
# sockets, files, shared memory, clocks), the allocator and memcpy (src/musl, under every
# buffer; their unit tests run in `cargo test`) and ring's C and assembly
# (compiled against musl's headers) are others. So these modules run against
# it: stdio and scale (signals, exit statuses, stdin and stdout, drains),
# pools and tasks (processes, crashes, Unix sockets, task files), http,
# hostile and limits (TCP, many connections and descriptors), results,
# bigresults and sliced (shared memory, large buffers), oauth (ring), and
# faults, cli, golden_tools and log_lines (start-up, arguments, the
# environment, time stamps). The others test protocol logic, scheduling and
# the documentation, the same code in both builds: they run once, in
# `make test-rust`. STATIC_TESTS=all runs the whole suite here too.
set -eu

cd "$(dirname "$0")/.."
root=$(pwd)
manifest="$root/tests/data/shapes/manifest.json"
expected="$root/tests/data/shapes/expected-mcp-tools.json"
max_bytes=${STATIC_MAX_BYTES:-2200000}
opt_level=${STATIC_OPT_LEVEL:-2}

die() {
    echo "static: $*" >&2
    exit 1
}

# Without what the static build needs, `make test` still passes: this says so
# in one line and removes any earlier static binary, so `make e2e-static`
# does not test a stale one. MORLOC_MCP_REQUIRE_STATIC=1 (CI) makes it an error.
# Usage: skip <what is missing> <how to get it>
skip() {
    [ "${MORLOC_MCP_REQUIRE_STATIC:-}" != 1 ] || die "$1; $2 (MORLOC_MCP_REQUIRE_STATIC=1 requires the static build)"
    rm -f "$root/target/static/morloc-mcp"
    echo "static: skipped (the static binary is not built or tested): $1; to enable it, $2"
    exit 0
}

for tool in cargo rustc; do
    command -v "$tool" >/dev/null 2>&1 || die "'$tool' is required but not installed"
done
for tool in file ldd cmp; do
    command -v "$tool" >/dev/null 2>&1 ||
        skip "'$tool' is not installed (it checks the binary)" "install it (Debian/Ubuntu: apt-get install file libc-bin diffutils)"
done

host=$(rustc -vV | sed -n 's/^host: //p')
arch=${host%%-*}

# The tests are built the ordinary way, with the caller's flags.
user_rustflags=${RUSTFLAGS:-}

features=
target_cc=
case ${STATIC_LIBC:-musl} in
musl)
    if command -v rustup >/dev/null 2>&1 && rustup target list --installed 2>/dev/null | grep -qx "$arch-unknown-linux-musl"; then
        libc="musl (Rust's $arch-unknown-linux-musl target)"
        triple="$arch-unknown-linux-musl"
        export RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static"
    elif command -v musl-gcc >/dev/null 2>&1; then
        # musl-gcc's own specs do not handle -static-pie, so write specs that
        # do. musl-gcc is a script that adds `-specs <file>`; that file names
        # the directory of musl's start files and libc.a.
        musl_specs=$(sed -n 's/.*-specs *"\{0,1\}\([^" ]*\).*/\1/p' "$(command -v musl-gcc)" | head -n 1)
        musl_lib=$(grep -o '/[^ ;}]*/Scrt1\.o' "$musl_specs" 2>/dev/null | head -n 1 | sed 's|/Scrt1\.o$||')
        for dir in "$musl_lib" /usr/lib/musl/lib "/usr/lib/$arch-linux-musl" /usr/local/musl/lib; do
            if [ -n "$dir" ] && [ -f "$dir/rcrt1.o" ] && [ -f "$dir/libc.a" ]; then
                musl_lib=$dir
                break
            fi
        done
        [ -f "$musl_lib/rcrt1.o" ] ||
            die "musl-gcc is installed but musl's rcrt1.o and libc.a were not found (looked in the directory its specs name and the usual places)"
        # gcc's own support files, named in full: rustc's -B option for its
        # bundled lld changes where relative names are looked up.
        libgcc_dir=$(dirname "$(cc -print-libgcc-file-name)")
        crtbegin_t=$(cc -print-file-name=crtbeginT.o)
        crtbegin_s=$(cc -print-file-name=crtbeginS.o)
        crtend=$(cc -print-file-name=crtend.o)
        crtend_s=$(cc -print-file-name=crtendS.o)
        specs="$root/target/static/musl.specs"
        mkdir -p "$(dirname "$specs")"
        cat >"$specs" <<EOF
%rename link_libgcc old_link_libgcc

*link_libgcc:
-L$musl_lib -L$libgcc_dir

*startfile:
%{static-pie:$musl_lib/rcrt1.o;static:$musl_lib/crt1.o;:$musl_lib/Scrt1.o} $musl_lib/crti.o %{static:$crtbegin_t;:$crtbegin_s}

*endfile:
%{static:$crtend;:$crtend_s} $musl_lib/crtn.o
EOF
        libc="musl ($musl_lib/libc.a under the $arch-unknown-linux-gnu target)"
        triple="$arch-unknown-linux-gnu"
        features="--features musl-libc"
        # C code in crates (ring's) is compiled with musl's headers, for the
        # libc.a it is linked with (build() passes it as CC_<target>, which
        # the cc crate reads; build scripts are linked with the host's cc).
        target_cc=musl-gcc
        export RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static -C link-arg=-specs=$specs"
    else
        skip "no musl found" "install musl-tools (Debian/Ubuntu: apt-get install musl-tools) or run 'rustup target add $arch-unknown-linux-musl'; STATIC_LIBC=glibc builds a larger glibc binary instead"
    fi
    ;;
glibc)
    libc="glibc"
    triple="$arch-unknown-linux-gnu"
    max_bytes=
    export RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static"
    ;;
*) die "STATIC_LIBC must be musl or glibc, not '$STATIC_LIBC'" ;;
esac
# Naming --target keeps RUSTFLAGS off build scripts, which must stay
# dynamic to run on the host.

# Builds into the given target directory; prints the binary's path.
build() {
    (
        [ -z "$target_cc" ] || export "CC_$(echo "$triple" | tr - _)=$target_cc"
        # The --profiles rows set their own.
        export CARGO_PROFILE_RELEASE_OPT_LEVEL="${CARGO_PROFILE_RELEASE_OPT_LEVEL:-$opt_level}"
        # shellcheck disable=SC2086 # $features is empty or two words
        cargo build --release --locked --quiet $features --target "$triple" --target-dir "$1" >&2
    ) || die "cargo build --release --target $triple failed"
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

# The minimal container image (deploy/container): lays out its files with
# stage.sh (the binary and a program without pools) and serves a stdio and
# an HTTP session from them with deploy/container/check.py: chrooted into a
# directory holding only those files (no /dev, /proc, /tmp or /etc), running
# the Dockerfile's ENTRYPOINT as its USER when this runs as root; then, when
# a Docker daemon answers, from the real image built from that directory
# (its size is printed). The chroot needs root or an unprivileged user
# namespace; says so when neither is there.
container() {
    bin=$1
    stage_dir=$(mktemp -d)
    sh "$root/deploy/container/stage.sh" --bin "$bin" "$root/bench/data/nopool" "$stage_dir/image" >/dev/null ||
        die "deploy/container/stage.sh failed"
    command -v python3 >/dev/null 2>&1 || die "the container check needs python3"
    dockerfile=$stage_dir/image/Dockerfile
    entry=$(python3 -c 'import json,shlex,sys
print(shlex.join(next(json.loads(l.split(None, 1)[1]) for l in open(sys.argv[1]) if l.startswith("ENTRYPOINT "))))' "$dockerfile")
    user=$(sed -n 's/^USER  *//p' "$dockerfile")
    # The root directory holds the image's files only.
    mkdir "$stage_dir/rootfs"
    cp -R "$stage_dir/image/morloc-mcp" "$stage_dir/image/program" "$stage_dir/rootfs/"
    if [ "$(id -u)" -eq 0 ] && command -v chroot >/dev/null 2>&1; then
        jail="chroot ${user:+--userspec=$user} $stage_dir/rootfs"
    elif command -v unshare >/dev/null 2>&1 && unshare -r true 2>/dev/null; then
        jail="unshare -r chroot $stage_dir/rootfs"
    else
        jail=
        echo "static: skipped the container layout check: it needs root or user namespaces for chroot"
    fi
    if [ -n "$jail" ]; then
        env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin python3 "$root/deploy/container/check.py" \
            --stdio "$jail $entry" --http "$jail $entry" >"$stage_dir/out" 2>&1 || {
            cat "$stage_dir/out" >&2
            die "the binary failed in the container layout (an otherwise empty root directory)"
        }
        echo "static: the container layout (deploy/container: its files, ENTRYPOINT and USER) serves stdio and HTTP from an otherwise empty root directory"
    fi
    if command -v docker >/dev/null 2>&1 && timeout 20 docker info >/dev/null 2>&1; then
        tag=morloc-mcp-static-check:$$
        docker build -q -t "$tag" "$stage_dir/image" >/dev/null 2>"$stage_dir/out" || {
            cat "$stage_dir/out" >&2
            die "docker build of deploy/container/Dockerfile failed"
        }
        image_bytes=$(docker image inspect -f '{{.Size}}' "$tag")
        python3 "$root/deploy/container/check.py" --stdio "docker run -i --rm --network none $tag" \
            --http "docker run --rm --network host -e MORLOC_MCP_TOKEN $tag" >"$stage_dir/out" 2>&1 || {
            cat "$stage_dir/out" >&2
            docker rmi -f "$tag" >/dev/null 2>&1 || true
            die "the scratch image failed to serve"
        }
        docker rmi -f "$tag" >/dev/null 2>&1 || true
        echo "static: the FROM scratch image (deploy/container/Dockerfile, $image_bytes bytes) serves stdio and HTTP under Docker"
    else
        echo "static: no Docker daemon answers: the scratch image itself was not built (its layout was checked above)"
    fi
    rm -rf "$stage_dir"
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

built=$(build "$root/target/static")
# A fixed path for other tools (`make e2e-static`), whatever the target.
bin="$root/target/static/morloc-mcp"
cp "$built" "$bin"
[ "${1:-}" != "--build-only" ] || exit 0
verify_static "$bin"
size=$(size_of "$bin")
echo "static: $bin (built as $built)"
echo "static: C library: $libc"
echo "static: $(file -b "$bin")"
echo "static: size $size bytes"
if [ -n "$max_bytes" ] && [ "$size" -gt "$max_bytes" ]; then
    die "the binary is $size bytes, over the budget of $max_bytes (STATIC_MAX_BYTES)"
fi
smoke "$bin"
container "$bin"
if [ "${STATIC_TESTS:-}" = all ]; then
    modules=
    echo "static: running every end-to-end test against it"
else
    # Test name filters: `results::` also selects `bigresults::`.
    modules="stdio:: scale:: pools:: tasks:: http:: hostile:: limits:: results:: sliced:: oauth:: faults:: cli:: golden_tools:: log_lines::"
    echo "static: running the end-to-end tests of what differs between the builds against it: $modules"
fi
# As many at once as `make test` runs (the Makefile's RUST_TEST_THREADS).
: "${RUST_TEST_THREADS:=$((4 * $(nproc 2>/dev/null || echo 1)))}"
export RUST_TEST_THREADS
# shellcheck disable=SC2086 # $modules is a list of filters
RUSTFLAGS=$user_rustflags MORLOC_MCP_TEST_BIN="$bin" cargo test --locked --quiet --test tests -- $modules ||
    die "end-to-end tests failed against the static binary $bin"
echo "static: ok"

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
