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

# A fresh emulated node; extra HLSIM_* settings come from the environment
new_node() {
    HLSIM_ROOT=$(mktemp -d /tmp/hlsim-test.XXXXXX)
    tmpdirs+=("$HLSIM_ROOT")
    export HLSIM_ROOT
}

# Run a command on the emulated node with the Gaudi module loaded
# (bounded: a hang is a failure, not a stuck CI run)
on_node() {
    LD_PRELOAD="$HLSIM_LIB" timeout -k 10 "${GAUDI_UCX_TEST_TIMEOUT:-600}" \
        "$GAUDI_UCX_RUN" "$@"
}

# Run a command on the emulated node without the wrapper: for the test
# programs linked with the module's test build (libuct_gaudi_test.so),
# which must not load libuct_gaudi.so a second time
on_emulator() {
    LD_PRELOAD="$HLSIM_LIB" timeout -k 10 "${GAUDI_UCX_TEST_TIMEOUT:-600}" "$@"
}

finish() {
    local d
    for d in "${tmpdirs[@]}"; do rm -rf "$d"; done
    echo "$npass passed, $nfail failed"
    [ "$nfail" -eq 0 ]
}
