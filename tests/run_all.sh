#!/bin/sh
# `make test`: every test stage, in order, each run even when an earlier one
# failed; then a table of what passed, failed or was skipped (and why), and
# how long each took. Exits 1 when any stage failed.
#
#   sh tests/run_all.sh [STAGE...]     (default: every stage)
#
# A stage that cannot run here (no musl, no Morloc installation, no npm, no
# load balancer) says so in one line, `<name>: skipped: <why>` (or
# `skipped (...): <why>`, or `SKIPPED: <why>`), and exits 0: the table shows
# it as skipped with that reason. Other lines that mention a skip (one
# balancer of two, one check) become a note on a stage that passed. Each
# stage's output is shown as it runs and kept in .cache/make-test/<stage>.log.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
MAKE=${MAKE:-make}
LOGS=$ROOT/.cache/make-test
mkdir -p "$LOGS"
STAGES=${*:-test-pool test-rust test-real static e2e e2e-static test-scale}

# The command of a stage.
run_stage() {
    case $1 in
    e2e)
        # When the static stage built and passed a static binary, e2e-static
        # runs every job against it, and the release binary (the same code)
        # gets the representative subset: every client, every transport,
        # both conformance suites (e2e/harness.py --subset).
        if [ "$static_ok" = 1 ] && [ -x "$ROOT/target/static/morloc-mcp" ] &&
            case " $STAGES " in *" e2e-static "*) true ;; *) false ;; esac; then
            echo "e2e: the representative subset (every job runs in e2e-static, against the static binary)"
            E2E_SUBSET=1 "$MAKE" --no-print-directory e2e
        else
            "$MAKE" --no-print-directory e2e
        fi
        ;;
    e2e-static)
        # `make e2e-static` would make `static` again; it ran already.
        if [ -x "$ROOT/target/static/morloc-mcp" ]; then
            E2E_BIN=$ROOT/target/static/morloc-mcp sh "$ROOT/e2e/run.sh"
        else
            echo "e2e-static: skipped: no static binary (the static stage did not build one)"
        fi
        ;;
    *) "$MAKE" --no-print-directory "$1" ;;
    esac
}

# "1m05s" or "7s".
duration() {
    if [ "$1" -ge 60 ]; then
        printf '%dm%02ds' $(($1 / 60)) $(($1 % 60))
    else
        printf '%ds' "$1"
    fi
}

# Sets $cpu to the CPU seconds (user + system) used so far by the finished
# children of this shell: the second line of `times`, "XmY.YYs XmY.YYs".
# (`times` must run in this shell, not in a command substitution.)
cpu_mark() {
    times >"$LOGS/.times"
    cpu=$(tail -n 1 "$LOGS/.times" | awk '{t=0; for(i=1;i<=2;i++){split($i,p,"m"); sub("s","",p[2]); t+=p[1]*60+p[2]}; printf "%d", t}')
}

# A short count for the table, from a stage's log.
counts() {
    case $1 in
    test-rust)
        awk '/^test result: /{for(i=1;i<=NF;i++){if($(i+1)~/^passed/)p+=$i;if($(i+1)~/^failed/)f+=$i}}
             END{if(p+f>0)printf "%d tests passed, %d failed", p, f}' "$2"
        ;;
    test-real)
        sed -n 's/^test-real: \([0-9]* passed, [0-9]* failed, [0-9]* skipped\).*/\1 checks/p' "$2" | tail -n 1
        ;;
    esac
}

# The static binary's build runs beside test-real's release build: each is
# one long compile on one core (fat LTO, one codegen unit), in target
# directories of their own. The static stage waits for it first (its CPU
# time, and whatever of its wall clock outlasts test-real, count there) and
# then finds the binary built; a build that failed here fails again there,
# with its message.
prebuild=
start_static_build() {
    # Only when the static stage comes after test-real.
    case " ${STAGES#*test-real} " in *" static "*) ;; *) return ;; esac
    [ -f "$ROOT/bench/static.sh" ] || return
    echo "make test: building the static binary beside test-real (log: .cache/make-test/static-build.log)"
    sh "$ROOT/bench/static.sh" --build-only >"$LOGS/static-build.log" 2>&1 &
    prebuild=$!
}

table=$LOGS/summary
: >"$table"
all_started=$(date +%s)
failed=0
static_ok=0
for stage in $STAGES; do
    log=$LOGS/$stage.log
    echo "=== make test: $stage"
    started=$(date +%s)
    cpu_mark
    cpu_before=$cpu
    [ "$stage" != test-real ] || start_static_build
    if [ "$stage" = static ] && [ -n "$prebuild" ]; then
        wait "$prebuild" || true
        prebuild=
    fi
    { run_stage "$stage" 2>&1; echo "$?" >"$log.status"; } | tee "$log"
    code=$(cat "$log.status")
    rm -f "$log.status"
    took=$(duration $(($(date +%s) - started)))
    cpu_mark
    cpu=$(duration $((cpu - cpu_before)))
    whole=$(sed -n -E 's/^[a-z0-9-]+: (skipped|SKIPPED)( \([^)]*\))?: (.*)/\3/p' "$log" | head -n 1)
    partial=$(grep -E '^[a-z0-9-]+: .*(skipped|SKIPPED)' "$log" | grep -v -E '^[a-z0-9-]+: (skipped|SKIPPED)( \([^)]*\))?: ' | head -n 2 | tr '\n' ';' | sed 's/;$//; s/;/; /g')
    note=$(counts "$stage" "$log")
    if [ "$code" != 0 ]; then
        result=FAILED
        failed=1
        why="${note:+$note; }exit status $code; log: .cache/make-test/$stage.log"
    elif [ -n "$whole" ]; then
        result=skipped
        why=$whole
    else
        result=passed
        why=$note${note:+${partial:+; }}$partial
        [ "$stage" != static ] || static_ok=1
    fi
    printf '%s\t%s\t%s\t%s\t%s\n' "$stage" "$result" "$took" "$cpu" "$why" >>"$table"
done

echo
echo "=== make test: summary"
printf '%-11s %-8s %7s %7s  %s\n' stage result time cpu "notes (why skipped, counts)"
while IFS="$(printf '\t')" read -r stage result took cpu why; do
    printf '%-11s %-8s %7s %7s  %s\n' "$stage" "$result" "$took" "$cpu" "$why"
done <"$table"
cpu_mark
rm -f "$LOGS/.times"
echo "make test: $(duration $(($(date +%s) - all_started))) in all, $(duration "$cpu") of CPU time (time: wall clock; cpu: user + system time of the stage's processes)"
if [ "$failed" -ne 0 ]; then
    echo "make test: FAILED (see the stages marked FAILED and their logs)"
    exit 1
fi
echo "make test: every stage passed or was skipped for the reason shown"
