# Helpers for the shell test suites (sourced). Each suite prints one
# "PASS name" / "FAIL name: why" line per check and ends with
# "N passed, N failed".

: "${GAUDI_UCX_BUILD:?run through contrib/test.sh}"
# Not UCX_-prefixed on purpose: UCX warns about UCX_* variables it does not
# know. The old names stay usable inside suites as plain shell variables.
UCX_GAUDI_BUILD=$GAUDI_UCX_BUILD
HLSIM_LIB=${HLSIM_LIB:-$GAUDI_UCX_BUILD/lib/libhlsim.so}
GAUDI_UCX_RUN=${GAUDI_UCX_RUN:-$GAUDI_UCX_BUILD/contrib/ucx-gaudi-run}
export GAUDI_UCX_LIBDIR=${GAUDI_UCX_LIBDIR:-$GAUDI_UCX_BUILD/lib}
# the build's emulated libSynapse (test/emu/synsim)
synsim_lib=$GAUDI_UCX_BUILD/test/emu/synsim/.libs/libSynapse.so

. "$(dirname "${BASH_SOURCE[0]}")/wait.sh"

npass=0
nfail=0
tmpdirs=()

pass() { echo "PASS $1"; npass=$((npass + 1)); }
fail() { echo "FAIL $1: $2"; nfail=$((nfail + 1)); }

# check NAME FILE PATTERN: the file has a line matching the ERE
expect_match() {
    if grep -Eq -- "$3" "$2"; then pass "$1"; else
        fail "$1" "no line matches /$3/ in $2"; sed 's/^/      /' "$2" | tail -20
    fi
}

expect_no_match() {
    if grep -Eq -- "$3" "$2"; then
        fail "$1" "unexpected /$3/ in $2"; grep -E -- "$3" "$2" | head -5
    else pass "$1"; fi
}

# perftest_ok NAME LOG: a ucx_perftest run reported a "Final:" line with
# numbers > 0
perftest_ok() {
    local name=$1 log=$2
    if awk '/^Final:/ { ok = ($3 + 0 > 0) && ($5 + 0 > 0) } END { exit !ok }' \
        "$log"; then
        pass "$name ($(awk '/^Final:/ {print $5 " us, " $7 " MB/s"}' "$log"))"
    else
        fail "$name" "no valid Final line"
        grep -v '^\s*[0-9]\+ ' "$log" | tail -15 | sed 's/^/      /'
    fi
}

# Device mode (contrib/test.sh --device): the real /dev/accel or /dev/hl
# nodes, no emulator. Suites that need the emulator's help call
# emulator_only; the others run unchanged, through the module's own
# device selection, which never opens a device another process holds
# open (auto selection moves on at EBUSY, and the suites check first).
GAUDI_UCX_DEVICE_MODE=${GAUDI_UCX_DEVICE_MODE:-0}

# emulator_only REASON: in device mode, skip this suite with the reason
emulator_only() {
    if [ "$GAUDI_UCX_DEVICE_MODE" = 1 ]; then
        echo "SKIP (device mode): $1"
        exit 0
    fi
}

# in_device_mode: true on real nodes
in_device_mode() { [ "$GAUDI_UCX_DEVICE_MODE" = 1 ]; }

. "$(dirname "${BASH_SOURCE[0]}")/devices.sh"

# need_free_devices N: in device mode, skip the suite unless N are free
need_free_devices() {
    local free
    in_device_mode || return 0
    free=$(free_devices | wc -l)
    if [ "$free" -lt "$1" ]; then
        echo "SKIP (device mode): needs $1 free Gaudi devices, $free free"
        exit 0
    fi
}

# with_flavour FLAVOUR CMD...: run CMD on an emulated driver flavour:
# habana (Habana's out-of-tree driver, the default), upstream (accel
# nodes, Linux >= 6.3) or legacy (the Linux 6.1/6.2 misc driver); see
# docs/hlsim.md, "Driver flavours"
with_flavour() {
    local f=$1; shift
    case $f in
    legacy)   HLSIM_NODES=legacy "$@" ;;
    upstream) HLSIM_FLAVOUR=upstream "$@" ;;
    *)        "$@" ;;
    esac
}

# A fresh emulated node; extra HLSIM_* settings come from the environment
new_node() {
    HLSIM_ROOT=$(mktemp -d /tmp/hlsim-test.XXXXXX)
    tmpdirs+=("$HLSIM_ROOT")
    export HLSIM_ROOT
}

# Run a command on the emulated node with the Gaudi module loaded
# (bounded: a hang is a failure, not a stuck CI run)
on_node() {
    if in_device_mode; then
        timeout -k 10 "${GAUDI_UCX_TEST_TIMEOUT:-600}" "$GAUDI_UCX_RUN" "$@"
        return
    fi
    LD_PRELOAD="$HLSIM_LIB" timeout -k 10 "${GAUDI_UCX_TEST_TIMEOUT:-600}" \
        "$GAUDI_UCX_RUN" "$@"
}

# Run a command on the emulated node without the wrapper: for the test
# programs linked with the module's test build (libuct_gaudi_test.so),
# which must not load libuct_gaudi.so a second time
on_emulator() {
    LD_PRELOAD="$HLSIM_LIB" timeout -k 10 "${GAUDI_UCX_TEST_TIMEOUT:-600}" "$@"
}

# gtest_counts LOG: "PASSED FAILED" from gtest's summary lines
# ("[  PASSED  ] N tests." / "[  FAILED  ] N tests, listed below:"), or
# from a suite's "N passed, N failed" line; nothing when it has neither
gtest_counts() {
    local log=$1 p f
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\?\.$/\1/p' "$log" | tail -1)
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) tests\?, listed below:$/\1/p' \
            "$log" | tail -1)
    if [ -z "$p" ] && [ -z "$f" ]; then
        p=$(sed -n 's/^\([0-9]*\) passed, [0-9]* failed.*$/\1/p' "$log" |
            tail -1)
        f=$(sed -n 's/^[0-9]* passed, \([0-9]*\) failed.*$/\1/p' "$log" |
            tail -1)
    fi
    if [ -n "$p$f" ]; then
        echo "${p:-0} ${f:-0}"
    fi
}

# Several gtest runs reported as one gtest-style summary (gtest_add each
# run, gtest_summary at the end)
gt_pass=0
gt_fail=0
gt_failed=()

# gtest_add LABEL LOG [RC]: add one run. A run without a summary (crashed)
# or that exited non-zero with no failed test counts as one failure.
gtest_add() {
    local label=$1 log=$2 rc=${3:-0} p f t counts
    counts=$(gtest_counts "$log")
    if [ -z "$counts" ]; then
        p=0; f=1
        gt_failed+=("$label: no gtest summary (exit $rc)")
    else
        read -r p f <<< "$counts"
        if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
            f=1
            gt_failed+=("$label: exit $rc")
        fi
    fi
    while read -r t; do
        gt_failed+=("$label: $t")
    done < <(sed -n 's/^\[  FAILED  \] \([^ ]*\) (.*$/\1/p' "$log")
    gt_pass=$((gt_pass + p))
    gt_fail=$((gt_fail + f))
}

# no_page_faults: no node of this suite (the roots in tmpdirs) recorded an
# MMU page fault (docs/hlsim.md, "MMU page fault"): a DMA to an address
# the context has not mapped fails the suite on every driver flavour,
# whatever the emulated driver did about it. Prints the faults.
no_page_faults() {
    local d ok=0
    for d in "${tmpdirs[@]}"; do
        [ -s "$d/page-faults" ] || continue
        echo "MMU page faults recorded on node $d:"
        sed 's/^/      /' "$d/page-faults"
        ok=1
    done
    return $ok
}

# Emulator totals (docs/hlsim.md, "Totals"). Every emulated process of the
# suite appends its node's totals at exit to HLSIM_TOTALS_FILE (nodes that
# their creators remove, e.g. the gtests' per-test nodes); the nodes under
# tmpdirs are read as they are at the end (hlsim_totals tool), which also
# counts processes that were killed. One file per suite.
if ! in_device_mode; then
    HLSIM_TOTALS_FILE=$(mktemp /tmp/hlsim-totals.XXXXXX)
    export HLSIM_TOTALS_FILE
fi
hlsim_provoked=""
hlsim_want_in_flight=0

# hlsim_provokes WHAT...: this suite makes page_faults or stale_pin_dmas on
# purpose (its tests check what follows): they do not fail it
hlsim_provokes() { hlsim_provoked="$hlsim_provoked $*"; }

# hlsim_covers_in_flight: this suite claims to run the module's in-flight
# paths: it fails unless some WAIT_CS poll found its CS still running
hlsim_covers_in_flight() { hlsim_want_in_flight=1; }

# hlsim_roots: the emulated nodes under the suite's tmpdirs
hlsim_roots() {
    local d s
    for d in "${tmpdirs[@]}"; do
        find "$d" -maxdepth 4 -name state -type f 2>/dev/null
    done | while read -r s; do
        [ -f "${s%/state}/config" ] && echo "${s%/state}"
    done
}

# hlsim_totals: print "hlsim totals: page_faults=N stale_pin_dmas=N
# polls_in_flight=N", summed over the suite's nodes, and set
# tot_page_faults, tot_stale_pin_dmas, tot_polls_in_flight. Returns 1 if
# a node could not be read.
hlsim_totals() {
    local roots live rc=0
    tot_page_faults=0; tot_stale_pin_dmas=0; tot_polls_in_flight=0
    if in_device_mode; then
        echo "hlsim totals: none (device mode: no emulator)"
        return 0
    fi
    mapfile -t roots < <(hlsim_roots)
    live=$("$GAUDI_UCX_BUILD/test/emu/hlsim/hlsim_totals" "${roots[@]}") ||
        rc=1
    read -r tot_page_faults tot_stale_pin_dmas tot_polls_in_flight < <(
        { printf '%s\n' "${roots[@]}" | sed 's/^/live=/'
          cat "$HLSIM_TOTALS_FILE" 2>/dev/null
          echo "$live" | sed 's/^hlsim totals: /sum /'; } |
        awk '/^live=/ { live[substr($0, 6)] = 1; next }
             /^sum / { for (i = 2; i <= NF; i++) { split($i, kv, "=");
                                                   t[kv[1]] += kv[2] } }
             /^root=/ { r = substr($1, 6); if (r in live) next
                        for (i = 2; i <= NF; i++) { split($i, kv, "=");
                                                    last[r, kv[1]] = kv[2] }
                        roots[r] = 1 }
             END { for (r in roots) {
                       t["page_faults"] += last[r, "page_faults"]
                       t["stale_pin_dmas"] += last[r, "stale_pin_dmas"]
                       t["polls_in_flight"] += last[r, "polls_in_flight"] }
                   print t["page_faults"] + 0, t["stale_pin_dmas"] + 0,
                         t["polls_in_flight"] + 0 }')
    echo "hlsim totals: page_faults=$tot_page_faults" \
         "stale_pin_dmas=$tot_stale_pin_dmas" \
         "polls_in_flight=$tot_polls_in_flight"
    return $rc
}

# hlsim_totals_check: print the totals line, then each reason to fail the
# suite on a line of its own (none: clean): page faults or stale-pin DMAs
# it did not provoke, no poll that met a copy in flight when it claims to
# cover them, nodes that could not be read
hlsim_totals_check() {
    local rc=0
    hlsim_totals || rc=1
    if in_device_mode; then return 0; fi
    [ "$rc" -eq 0 ] || echo "the totals of a node could not be read"
    if [ "$tot_page_faults" -gt 0 ] &&
       [[ " $hlsim_provoked " != *" page_faults "* ]]; then
        echo "$tot_page_faults MMU page faults: DMAs to unmapped addresses"
    fi
    if [ "$tot_stale_pin_dmas" -gt 0 ] &&
       [[ " $hlsim_provoked " != *" stale_pin_dmas "* ]]; then
        echo "$tot_stale_pin_dmas DMAs through stale USERPTR pins"
    fi
    if [ "$hlsim_want_in_flight" = 1 ] && [ "$tot_polls_in_flight" -eq 0 ]
    then
        echo "no WAIT_CS poll found a copy in flight: the in-flight paths" \
             "did not run"
    fi
}

# hlsim_totals_cleanup: remove the suite's nodes and totals file
hlsim_totals_cleanup() {
    local d
    for d in "${tmpdirs[@]}"; do rm -rf "$d"; done
    if [ -n "${HLSIM_TOTALS_FILE:-}" ]; then rm -f "$HLSIM_TOTALS_FILE"; fi
}

# gtest_summary TITLE: print the summary of every run, clean up, exit
gtest_summary() {
    local d t why
    if [[ " $hlsim_provoked " != *" page_faults "* ]] && ! no_page_faults
    then
        gt_fail=$((gt_fail + 1))
        gt_failed+=("MMU page faults: DMAs to unmapped addresses")
    fi
    while read -r why; do
        case $why in
        "hlsim totals:"*) echo "$why" ;;
        ?*) gt_fail=$((gt_fail + 1)); gt_failed+=("hlsim totals: $why") ;;
        esac
    done < <(hlsim_totals_check)
    hlsim_totals_cleanup
    echo "=== $1"
    echo "[  PASSED  ] $gt_pass tests."
    if [ "$gt_fail" -ne 0 ]; then
        echo "[  FAILED  ] $gt_fail tests, listed below:"
        for t in "${gt_failed[@]}"; do echo "[  FAILED  ] $t"; done
        exit 1
    fi
    exit 0
}

finish() {
    local why
    if [[ " $hlsim_provoked " != *" page_faults "* ]]; then
        no_page_faults || fail page_faults "DMAs to unmapped addresses"
    fi
    while read -r why; do
        case $why in
        "hlsim totals:"*) echo "$why" ;;
        ?*) fail hlsim_totals "$why" ;;
        esac
    done < <(hlsim_totals_check)
    hlsim_totals_cleanup
    echo "$npass passed, $nfail failed"
    [ "$nfail" -eq 0 ]
}

# run_test_program NAME CMD...: a test program of test/common/test_runner.h
# (its own "PASS"/"FAIL" lines and "N passed, N failed") on the emulator
# (LD_PRELOAD, as the program's tests need), its nodes kept
# in a directory of the suite for the hlsim totals; ends the suite with
# the program's counts plus the totals' failures, like finish
run_test_program() {
    local name=$1 d log rc p f why
    shift
    d=$(mktemp -d /dev/shm/hlsim-suite.XXXXXX 2>/dev/null) ||
        d=$(mktemp -d /tmp/hlsim-suite.XXXXXX)
    tmpdirs+=("$d")
    log=$(mktemp /tmp/hlsim-suite-log.XXXXXX)
    TEST_RUNNER_DIR=$d HLSIM_TEST_KEEP=1 LD_PRELOAD="$HLSIM_LIB" "$@" \
        > "$log" 2>&1
    rc=$?
    grep -v '^[0-9]* passed, [0-9]* failed$' "$log"
    read -r p f < <(gtest_counts "$log")
    rm -f "$log"
    if [ -z "$p$f" ]; then
        p=0; f=1; echo "FAIL $name: no summary (exit $rc)"
    elif [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then
        f=1; echo "FAIL $name: exit $rc"
    fi
    npass=$((npass + p)); nfail=$((nfail + f))
    finish
}
