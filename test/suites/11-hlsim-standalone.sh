# The emulator built on its own, without autotools, as docs/hlsim.md says
# (test/emu/hlsim/build-standalone.sh): it builds, and its tests of node
# creation and of a DMA copy pass on the library it built
. "$(dirname "$0")/lib.sh"
emulator_only "builds and tests the emulator itself"
top=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d /tmp/hlsim-standalone.XXXXXX)
tmpdirs+=("$out")

if ! command -v "${CC:-gcc}" > /dev/null; then
    fail "standalone build" "no C compiler (${CC:-gcc})"
elif ! CFLAGS="-O0 -w" bash "$top/test/emu/hlsim/build-standalone.sh" \
        "$out" > "$out/build.log" 2>&1; then
    fail "standalone build" "$(tail -3 "$out/build.log")"
else
    pass "standalone build"
    new_node
    if TEST_RUNNER_DIR=$out HLSIM_TEST_KEEP=1 \
            LD_PRELOAD="$out/libhlsim.so" "$out/test_hlsim" nodes_accel \
            dma_gaudi2 > "$out/test.log" 2>&1; then
        expect_match "standalone tests ran" "$out/test.log" \
            '^[1-9][0-9]* passed, 0 failed$'
    else
        fail "standalone tests" "exit $?: $(tail -3 "$out/test.log")"
    fi
fi

finish
