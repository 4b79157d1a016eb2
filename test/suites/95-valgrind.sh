# Memory errors and leaks: the heap's, MD and transport tests that
# exercise allocation, registration, DMA-BUF export, copies and error paths, under
# valgrind memcheck on the emulated node. Any memcheck error or definite
# leak fails the run (--error-exitcode).
. "$(dirname "$0")/lib.sh"
emulator_only "runs MD and transport gtests that need the emulator"
export LD_LIBRARY_PATH=$GAUDI_UCX_BUILD/src/uct/gaudi/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
vg="valgrind --error-exitcode=99 --leak-check=full --show-leak-kinds=definite
    --errors-for-leak-kinds=definite --trace-children=yes -q"
log=$(mktemp); tmpdirs+=("$log")

# vg_run NAME RUNNER BINARY FILTER (RUNNER: on_node, or on_emulator for a
# test linked with the module's test build)
vg_run() {
    local name=$1 runner=$2 bin=$3 filter=$4 rc p f
    new_node
    # 16 GiB of HBM, not the real 96: valgrind's address space manager
    # refuses the emulator's mapping of 96 GiB (EINVAL); the page stays
    # the real 768 MiB
    HLSIM_NUM_DEVICES=1 HLSIM_HBM_SIZE=16G $runner $vg "$bin" \
        --gtest_filter="$filter" > "$log" 2>&1
    rc=$?
    read -r p f <<< "$(gtest_counts "$log")"
    if [ $rc -eq 0 ] && [ "${p:-0}" -gt 0 ] && [ "${f:-1}" -eq 0 ]; then
        pass "$name ($p tests)"
    else
        fail "$name" "exit $rc"
        grep -E '^==|FAILED' "$log" | head -40 | sed 's/^/      /'
    fi
}

vg_run "memcheck: gaudi_copy MD" on_emulator \
    "$GAUDI_UCX_BUILD/test/gtest/.libs/gaudi_md_test" \
    'gaudi_md.alloc_free_sizes:gaudi_md.host_reg_unaligned_overlapping:gaudi_md.device_reg_and_rkey:gaudi_md.rcache_hit_miss:gaudi_md.dmabuf_export:gaudi_md.bad_input:gaudi_md.driver_faults'
vg_run "memcheck: the memory layer's heap" on_emulator \
    "$GAUDI_UCX_BUILD/test/gtest/gaudi_mem_test" '*'
vg_run "memcheck: gaudi_cpy transport" on_node \
    "$GAUDI_UCX_BUILD/test/gtest/gaudi_cpy_test" \
    'cpy_test.caps:cpy_test.short_all_directions:cpy_test.bcopy:cpy_test.bad_input'

finish
