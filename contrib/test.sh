#!/bin/bash
#
# Build ucx-gaudi and run every test suite on the emulated Gaudi node
# (test/emu/hlsim), against the installed UCX (Debian's); then, against each
# upstream UCX release in GAUDI_UCX_VERSIONS (built once from the tarballs
# in ../shared/ucx-src and cached, contrib/build-ucx.sh), the per-release
# suite test/suites/ucx-version.sh. Prints the results per UCX version and
# the time per suite, and ends with "N passed, N failed"; exits non-zero on
# failure.
#
# The releases, and the module against each, are built ahead: in the
# background at idle priority (SCHED_IDLE, else nice 19), on what the
# installed-UCX suites leave of the cores; a suite that wakes takes its core
# back at once. GAUDI_UCX_BUILD_AHEAD=0 builds each release just before its
# suite instead.
#
# --device: run on this machine's real Gaudi devices (/dev/accel/accelN or
# /dev/hlN, habanalabs driver) instead: the suites that need the emulator
# (fault injection, resets, driver flavours, counters) are skipped with the
# reason; the others use only devices no other process holds open.
#
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
export GAUDI_UCX_DEVICE_MODE=0
case "${1:-}" in
--device)
    export GAUDI_UCX_DEVICE_MODE=1
    . "$top/test/suites/devices.sh"
    if [ -z "$(free_devices)" ]; then
        if ls /dev/accel/accel[0-9]* /dev/hl[0-9]* >/dev/null 2>&1; then
            echo "--device: every Gaudi device is held by another process"
        else
            echo "--device: no Gaudi device nodes (/dev/accel/accelN or" \
                 "/dev/hlN of the habanalabs driver) on this machine"
        fi
        echo "0 passed, 1 failed"
        exit 1
    fi
    echo "device mode: free devices: $(free_devices | tr '\n' ' ')"
    ;;
"") ;;
*)
    echo "usage: $0 [--device]"; exit 2 ;;
esac
buildlog=$(mktemp)
if ! build=$("$top/contrib/build.sh" 2>"$buildlog"); then
    tail -n 60 "$buildlog"; rm -f "$buildlog"
    echo "build failed"; echo "0 passed, 1 failed"; exit 1
fi
rm -f "$buildlog"

logdir="$build/test-logs"
rm -rf "$logdir"
mkdir -p "$logdir"

# The other UCX releases Gaudi hosts run (on the emulated node: not in
# device mode)
versions=${GAUDI_UCX_VERSIONS-1.12.1 1.16.0 1.18.1 1.22.0}
if [ "$GAUDI_UCX_DEVICE_MODE" = 1 ]; then
    versions=
fi

# build_release VERSION: contrib/build-ucx.sh into $logdir/build-ucx-VERSION.*
# (.out its output, .log its log, .rc its status, .time its seconds)
build_release() {
    local ver=$1 started=$SECONDS rc=0 pfx=$logdir/build-ucx-$1
    JOBS=${JOBS:-$(nproc)} "$top/contrib/build-ucx.sh" "$ver" \
        >"$pfx.out" 2>"$pfx.log" || rc=$?
    echo $((SECONDS - started)) > "$pfx.time"
    echo "$rc" > "$pfx.rc"
}

# build_ahead VERSION...: each release in turn, at idle priority
build_ahead() {
    chrt -i -p 0 $$ 2>/dev/null || renice -n 19 -p $$ >/dev/null
    ionice -c 3 -p $$ 2>/dev/null || true
    for ver in "$@"; do
        build_release "$ver"
    done
}

ahead_pid=
if [ -n "$versions" ] && [ "${GAUDI_UCX_BUILD_AHEAD:-1}" = 1 ]; then
    export -f build_release build_ahead
    # its own process group, stopped with the run
    top=$top logdir=$logdir setsid bash -c 'build_ahead "$@"' build_ahead \
        $versions </dev/null >/dev/null 2>&1 &
    ahead_pid=$!
    trap '[ -z "$ahead_pid" ] || kill -- -"$ahead_pid" 2>/dev/null' EXIT
fi

if ! make -C "$build" -j"${JOBS:-$(nproc)}" check >"$build/check-build.log" 2>&1
then
    tail -n 60 "$build/check-build.log"
    echo "building the tests failed"; echo "0 passed, 1 failed"; exit 1
fi

export GAUDI_UCX_BUILD="$build"
export GAUDI_UCX_LIBDIR="$build/lib"
export HLSIM_LIB="$build/lib/libhlsim.so"
export PATH="$build/contrib:$PATH"

total_pass=0
total_fail=0
failed_suites=()
skipped_suites=()

# Count a suite's results from its own summary line (gtest's, or
# "N passed, N failed"): gtest_counts of test/suites/lib.sh
. "$top/test/suites/lib.sh"
# each suite keeps its own emulator totals (lib.sh): none here
hlsim_totals_cleanup
unset HLSIM_TOTALS_FILE
count_results() {
    local counts
    counts=$(gtest_counts "$1")
    echo "${counts:-0 0}"
}

suite_times=()
run_started=$SECONDS

run_suite() {
    local name=$1; shift
    local log="$logdir/$name.log" rc pass fail started=$SECONDS
    echo "=== $name: $*"
    # a suite that hangs is stopped and counted as failed
    timeout -k 10 "${GAUDI_UCX_SUITE_TIMEOUT:-1200}" "$@" >"$log" 2>&1
    rc=$?
    suite_times+=("$(printf '%5d s  %s' $((SECONDS - started)) "$name")")
    # a whole suite that cannot apply says why: "SKIP (<what>): <why>"
    if [ "$rc" -eq 0 ] && grep -q '^SKIP ([^)]*): ' "$log"; then
        echo "    skipped: $(sed -n 's/^SKIP (\([^)]*\)): /\1: /p' "$log")"
        skipped_suites+=("$name")
        return
    fi
    read -r pass fail < <(count_results "$log")
    if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then
        fail=1   # crashed or failed outside a counted test
    fi
    if [ "$pass" -eq 0 ] && [ "$fail" -eq 0 ]; then
        fail=1   # a suite that ran nothing is a failure
    fi
    echo "    $pass passed, $fail failed (exit $rc, log $log)"
    if [ "$fail" -ne 0 ]; then
        failed_suites+=("$name")
        tail -n 40 "$log" | sed 's/^/    | /'
    fi
    total_pass=$((total_pass + pass))
    total_fail=$((total_fail + fail))
}

stock=$(ucx_info -v | sed -n -e 's/^# Library version: //p' \
        -e 's/^# Version //p')
for suite in "$top"/test/suites/[0-9]*.sh; do
    run_suite "$(basename "$suite" .sh)" bash "$suite"
done
per_version=("UCX $stock (installed, all suites): $total_pass passed, $total_fail failed")
# UCX's own uct suites on Gaudi buffers, as each run reported them
# (test/suites/ucx-gtest.sh)
gtest_reports() {
    grep -s '^UCX .* uct suites on Gaudi buffers.*: [0-9]* run, ' "$1"
}
while read -r line; do
    per_version+=("  $line")
done < <(gtest_reports "$logdir/60-ucx-gtest.log")

# each release: its build (done ahead, or now), then its suite
for ver in $versions; do
    before_pass=$total_pass
    before_fail=$total_fail
    vlog="$logdir/build-ucx-$ver.log"
    started=$SECONDS
    if [ -n "$ahead_pid" ]; then
        echo "=== UCX $ver: built ahead in the background (cached after" \
             "the first run)"
        while [ ! -f "$logdir/build-ucx-$ver.rc" ] &&
              kill -0 "$ahead_pid" 2>/dev/null; do
            sleep 1
        done
        how="waited for; built in the background in"
        how+=" $(cat "$logdir/build-ucx-$ver.time" 2>/dev/null) s"
    else
        echo "=== UCX $ver: building (cached after the first run)"
        build_release "$ver"
        how="built"
    fi
    vrc=$(cat "$logdir/build-ucx-$ver.rc" 2>/dev/null || echo 1)
    vbuild=$(cat "$logdir/build-ucx-$ver.out" 2>/dev/null)
    suite_times+=("$(printf '%5d s  %s (%s)' $((SECONDS - started)) \
                   "build-ucx-$ver" "$how")")
    if [ "$vrc" -ne 0 ]; then
        tail -n 30 "$vlog" | sed 's/^/    | /'
        echo "    building against UCX $ver failed (log $vlog)"
        failed_suites+=("build-ucx-$ver")
        total_fail=$((total_fail + 1))
    else
        read -r vdir vprefix <<< "$vbuild"
        run_suite "ucx-$ver" env GAUDI_UCX_BUILD="$vdir" \
            GAUDI_UCX_LIBDIR="$vdir/lib" UCX_PREFIX="$vprefix" \
            HLSIM_LIB="$vdir/lib/libhlsim.so" \
            bash "$top/test/suites/ucx-version.sh"
    fi
    per_version+=("UCX $ver: $((total_pass - before_pass)) passed, $((total_fail - before_fail)) failed")
    while read -r line; do
        per_version+=("  $line")
    done < <(gtest_reports "$logdir/ucx-$ver.log")
done

echo
echo "time per suite (the build of the module and its tests before them):"
printf '    %s\n' "${suite_times[@]}"
echo "    total $((SECONDS - run_started)) s of suites, $SECONDS s in all"
echo "per UCX version:"
printf '    %s\n' "${per_version[@]}"
if [ ${#skipped_suites[@]} -gt 0 ]; then
    echo "skipped suites (not applicable here, reasons above): ${skipped_suites[*]}"
fi
if [ ${#failed_suites[@]} -gt 0 ]; then
    echo "failed suites: ${failed_suites[*]}"
fi
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
