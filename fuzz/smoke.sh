#!/bin/sh
# Runs every fuzz target that has a source file for a few seconds each,
# starting from the committed seeds in fuzz/seeds/<target>/.
#
# Usage: sh fuzz/smoke.sh [seconds] [target...]
#   seconds  time per target (default 10)
#   target   run only these targets (default: every declared target whose
#            fuzz_targets/<name>.rs exists)
#
# Exits non-zero if a target fails to build or finds a crash, a leak or a
# timeout, and prints the path of the input that triggered it. Needs the
# nightly toolchain; installs cargo-fuzz if it is missing.
set -u

cd "$(dirname "$0")" || exit 2
secs=${1:-10}
[ $# -gt 0 ] && shift
case $secs in
    '' | *[!0-9]*) echo "smoke: seconds must be a whole number, got '$secs'" >&2; exit 2 ;;
esac

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "smoke: the nightly toolchain is required (rustup toolchain install nightly)" >&2
    exit 2
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "smoke: installing cargo-fuzz"
    cargo install cargo-fuzz --locked || exit 2
fi

# Declared targets, in Cargo.toml order.
declared=$(sed -n 's/^name = "\([a-z0-9_]*\)"$/\1/p' Cargo.toml | grep -v '^morloc-mcp-fuzz$')
if [ $# -gt 0 ]; then
    for t in "$@"; do
        if ! printf '%s\n' "$declared" | grep -qx "$t"; then
            echo "smoke: '$t' is not a target declared in fuzz/Cargo.toml" >&2
            exit 2
        fi
    done
    wanted=$*
else
    wanted=$declared
fi

logs=$(mktemp -d) || exit 2
trap 'rm -rf "$logs"' EXIT
failed=0
ran=0
for t in $wanted; do
    if [ ! -f "fuzz_targets/$t.rs" ]; then
        echo "smoke: $t: skipped, fuzz_targets/$t.rs does not exist yet"
        continue
    fi
    log="$logs/$t.log"
    if ! cargo +nightly fuzz build "$t" >"$log" 2>&1; then
        tail -n 30 "$log"
        echo "smoke: $t: BUILD FAILED" >&2
        failed=1
        continue
    fi
    # The first directory collects new inputs (ignored by git); the seeds
    # are read only.
    mkdir -p "corpus/$t" "seeds/$t"
    cargo +nightly fuzz run "$t" "corpus/$t" "seeds/$t" -- \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1
    status=$?
    ran=$((ran + 1))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    if [ "$status" -eq 0 ]; then
        echo "smoke: $t: ok, ${execs:-?} runs in ${secs}s"
        continue
    fi
    failed=1
    tail -n 40 "$log"
    artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
    if [ -z "$artifact" ]; then
        artifact=$(ls -t "artifacts/$t" 2>/dev/null | head -n 1)
        [ -n "$artifact" ] && artifact="artifacts/$t/$artifact"
    fi
    echo "smoke: $t: FAILED (exit $status)" >&2
    if [ -n "$artifact" ]; then
        case $artifact in
            /*) ;;
            *) artifact="$(pwd)/${artifact#./}" ;;
        esac
        echo "smoke: $t: artifact: $artifact" >&2
        echo "smoke: $t: reproduce: (cd fuzz && cargo +nightly fuzz run $t $artifact)" >&2
    fi
done

echo "smoke: $ran target(s) run"
exit $failed
