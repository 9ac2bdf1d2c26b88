#!/bin/sh
# Builds a fully static release binary, checks it and runs the whole
# integration suite against it.
#
# Usage: sh bench/static.sh             build, verify, test
#        sh bench/static.sh --profiles  also compare [profile.release] options
#                                       for size and speed (slow: one full
#                                       build per row)
#
# The C library is musl, linked statically; one of these must be installed:
#   - Rust's x86_64-unknown-linux-musl target (`rustup target add ...`), or
#   - musl's own libc.a and start files (Debian/Ubuntu: `musl-tools`), which
#     are linked under the glibc target through a gcc specs file written
#     below, with the `musl-libc` feature supplying the two glibc symbols the
#     prebuilt standard library and libgcc's unwinder ask for (src/main.rs).
# The static binary is built without the default `oauth` feature (the OAuth
# resource server and its signature crate, about 300 KB; README "OAuth"), and
# the end-to-end tests run against it without the tests of that feature.
# Either way the binary uses our own allocator (src/musl/alloc.rs) and memcpy
# (src/musl/memcopy.rs), not musl's, which are slow for this server.
# STATIC_LIBC=glibc links glibc statically instead: about 2 MB, and
# resolving host names (NSS) would still need the system's shared libraries.
#
# Checks: `file` and `ldd` say static; the size is at most STATIC_MAX_BYTES
# (1,700,000 unless set; not checked for glibc); `--version` and `tools` run
# with an empty environment from an empty directory, and `tools` matches the
# golden file; stdio and HTTP sessions work from an otherwise empty root
# directory (chroot); then `cargo test --test tests` runs every end-to-end test with
# MORLOC_MCP_TEST_BIN pointing at the static binary.
set -eu

cd "$(dirname "$0")/.."
root=$(pwd)
manifest="$root/tests/data/shapes/manifest.json"
expected="$root/tests/data/shapes/expected-mcp-tools.json"
max_bytes=${STATIC_MAX_BYTES:-1900000}

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
    # shellcheck disable=SC2086 # $features is empty or two words
    cargo build --release --locked --quiet --no-default-features $features --target "$triple" --target-dir "$1" >&2 ||
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

# Serves a manifest without pools from inside an otherwise empty root
# directory (no /dev, /proc, /tmp or /etc): an stdio session with a pure call,
# then an HTTP session (whose id needs the kernel's random source). Needs
# chroot, so root or an unprivileged user namespace; says so when neither is
# there.
jail() {
    bin=$1
    jail_dir=$(mktemp -d)
    cp "$bin" "$jail_dir/morloc-mcp"
    cp "$root/bench/data/nopool/manifest.json" "$jail_dir/manifest.json"
    if [ "$(id -u)" -eq 0 ] && command -v chroot >/dev/null 2>&1; then
        set -- chroot "$jail_dir"
    elif command -v unshare >/dev/null 2>&1 && unshare -r true 2>/dev/null; then
        set -- unshare -r chroot "$jail_dir"
    else
        echo "static: skipped the empty-root check: it needs root or user namespaces for chroot"
        rm -rf "$jail_dir"
        return 0
    fi
    command -v python3 >/dev/null 2>&1 || die "the empty-root check needs python3"
    python3 - "$@" <<'EOF' || die "the binary failed in an empty root directory"
import json, re, subprocess, sys, urllib.request
jail = sys.argv[1:]
env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
def msg(i, method, params=None):
    m = {"jsonrpc": "2.0", "method": method}
    if i is not None:
        m["id"] = i
    if params is not None:
        m["params"] = params
    return m
init = msg(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "static", "version": "1"}})
call = msg(1, "tools/call", {"name": "pureAnswer", "arguments": {}})
lines = "".join(json.dumps(m) + "\n" for m in (init, msg(None, "notifications/initialized"), call))
out = subprocess.run(jail + ["/morloc-mcp", "mcp", "/manifest.json"], input=lines.encode(),
                     capture_output=True, timeout=20, env=env)
replies = [json.loads(l) for l in out.stdout.decode().splitlines()]
assert out.returncode == 0 and len(replies) == 2, (out.returncode, out.stdout, out.stderr)
assert replies[1]["result"]["content"][0]["text"] == "42", replies
server = subprocess.Popen(jail + ["/morloc-mcp", "mcp", "/manifest.json", "--http-port", "0"],
                          stderr=subprocess.PIPE, env=env)
try:
    url = None
    for raw in server.stderr:
        found = re.search(rb"http://[0-9.]+:[0-9]+", raw)
        if found:
            url = found.group(0).decode() + "/mcp"
            break
    assert url, "no address on stderr"
    def post(body, session=None):
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if session:
            headers["Mcp-Session-Id"] = session
        req = urllib.request.Request(url, json.dumps(body).encode(), headers)
        with urllib.request.urlopen(req, timeout=20) as resp:
            return resp.headers.get("Mcp-Session-Id"), resp.read()
    session, _ = post(init)
    # Session ids are <instance id>.<32 hex digits>.
    name, _, rand = (session or "").rpartition(".")
    assert name and len(rand) == 32 and all(c in "0123456789abcdef" for c in rand), session
    post(msg(None, "notifications/initialized"), session)
    # Over HTTP, tools are named <module>__<command>.
    call["params"]["name"] = "nopool__pureAnswer"
    _, body = post(call, session)
    assert b'"text":"42"' in body, body
finally:
    server.terminate()
    server.wait(timeout=20)
EOF
    rm -rf "$jail_dir"
    echo "static: serves stdio and HTTP from an empty root directory"
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
jail "$bin"
echo "static: running the end-to-end tests against it"
RUSTFLAGS=$user_rustflags MORLOC_MCP_TEST_BIN="$bin" cargo test --locked --quiet --no-default-features --test tests ||
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
