# UCX's own uct gtest suites, built against a UCX release with every suite
# UCX instantiates for its GPU transports or for every MD instantiated for
# the Gaudi components as well (test/gtest/ucx), on Gaudi buffers: the
# filter, the cases excluded (each with the UCX behaviour that makes it
# inapplicable, docs/ucx-loading.md section 5) and the report. Sourced by
# 60-ucx-gtest.sh and ucx-version.sh, after lib.sh.

ucx_gtest_bin=$GAUDI_UCX_BUILD/test/gtest/ucx/ucx_gtest
ucx_gtest_filter='gaudi_copy/*:gaudi_ipc/*:gaudi_cpy/*'

# The exclusions, "pattern|reason" per line; those of tests this release
# does not have match nothing
ucx_gtest_exclusions() {
    cat <<'LIST'
*/test_md.mem_type_detect_mds/*|mem_query answers with the whole allocation, as the UCT header allows and UCP's memtype cache wants (docs/md.md); UCX's test expects that only of its CUDA MDs
*/uct_p2p_am_alignment.invalid_*|UCX skips AM alignment for its GPU transports by name (has_gpu()); like them the Gaudi transports have no active messages, so no alignment to refuse
*/uct_p2p_err_test.invalid_put_short_length/*|put/get_short take any length by design (UCP's memtype pack/unpack calls them without checking max_short, ucp/dt/dt.c); UCX's memtype transport cuda_copy reports an unlimited max_short, which the test skips
gaudi_ipc/uct_flush_test.put_bcopy_*|puts into the receiver's host memory, which gaudi_ipc cannot reach (it moves registered Gaudi memory only; the op refuses UCT_INVALID_RKEY); cuda_ipc, which UCX runs it on, has no bcopy
gaudi_ipc/test_uct_peer_failure_keepalive.*|UCX fakes the peer's death by editing the keepalive start time of mm, cma and cuda_ipc endpoints only (kill_receiver); a gaudi_ipc peer in the same process stays alive
gaudi_ipc/test_uct_ep.is_connected/*|UCX changes the receiver's address to a foreign pid for cuda_ipc by name, because same-process cuda_ipc peers are unreachable; so are gaudi_ipc's, and without that change both entities are this process
gaudi_ipc/test_uct_iface.is_reachable/*|UCX expects same-process peers to be unreachable only of cuda_ipc, by name; gaudi_ipc's are unreachable as well
LIST
}

# The Gaudi components' tests matching $ucx_gtest_filter_now, one per line
ucx_gtest_list() {
    "$@" --gtest_list_tests --gtest_filter="$ucx_gtest_filter_now" 2>/dev/null |
        awk '/^[^ ]/ { suite = $1 } /^  / { print suite $1 }' |
        grep -E '^(gaudi_copy|gaudi_ipc|gaudi_cpy)/'
}

# ucx_gtest_run LABEL LOG RUNNER...: runs the suites with RUNNER (e.g.
# on_node) and prints the exclusions that apply, then one line
# "LABEL: N run, N passed, N skipped by capability, N excluded, N failed,
# N crashed" (also in $ucx_gtest_report; UCX reports a case skipped for a
# missing capability as passed, with a SKIP line; a crash ends the run
# inside a case). Returns gtest's exit status.
ucx_gtest_run() {
    local label=$1 log=$2; shift 2
    local exclude= pattern reason n excluded=0 run passed skipped failed rc
    while IFS='|' read -r pattern reason; do
        ucx_gtest_filter_now="$pattern"
        n=$(ucx_gtest_list "$@" "$ucx_gtest_bin" | grep -c .)
        [ "$n" -gt 0 ] || continue
        echo "excluded ($n): $pattern: $reason"
        exclude="$exclude${exclude:+:}$pattern"
        excluded=$((excluded + n))
    done < <(ucx_gtest_exclusions; ucx_gtest_release_exclusions)
    "$@" "$ucx_gtest_bin" --gtest_filter="$ucx_gtest_filter${exclude:+-$exclude}" \
        > "$log" 2>&1
    rc=$?
    run=$(grep -c '^\[ RUN      \]' "$log")
    skipped=$(grep -c '^\[     SKIP \]' "$log")
    failed=$(grep -c '^\[  FAILED  \] .* ([0-9]* ms)$' "$log")
    passed=$(grep -c '^\[       OK \]' "$log")
    ucx_gtest_report="$label: $run run, $((passed - skipped)) passed,"
    ucx_gtest_report+=" $skipped skipped by capability, $excluded excluded,"
    ucx_gtest_report+=" $failed failed, $((run - passed - failed)) crashed"
    echo "$ucx_gtest_report"
    return $rc
}

# Exclusions of one release's test assumptions (in its own test source)
ucx_gtest_release_exclusions() {
    local md_cc=$UCX_SRC_DIR_TEST/uct/test_md.cc
    local rma_cc=$UCX_SRC_DIR_TEST/uct/test_p2p_rma.cc
    local flush_cc=$UCX_SRC_DIR_TEST/uct/test_flush.cc
    # (releases whose remote flush test runs on IB transports only skip it)
    if ! grep -A4 'void test_flush_put_zcopy' "$flush_cc" 2>/dev/null |
           grep -q 'access_mem_types' &&
       ! grep -A3 'void check_skip_test_flush_remote' "$flush_cc" |
           grep -q 'tl_name'; then
        echo "gaudi_ipc/uct_flush_test.put_zcopy_*|this release's test puts into the receiver's host memory (later releases use the MD's access memory type), which gaudi_ipc cannot reach; this release never runs it on cuda_ipc"
    fi
    if ! grep -A12 'test_p2p_rma_madvise, madvise' "$rma_cc" 2>/dev/null |
           grep -q 'access_mem_types'; then
        echo "gaudi_ipc/test_p2p_rma_madvise.*|this release's test reads the receiver's host memory (later releases use the MD's access memory type), which gaudi_ipc cannot reach; this release never runs it on cuda_ipc"
    fi
    if awk '/test_md, alloc,/ { p = 1 } p && /^}/ { exit } p' "$md_cc" \
           2>/dev/null | grep -q '&pack_params, &key)'; then
        echo "*/test_md.alloc/*|this release's test packs each allocation's key into 8 bytes (later releases size it by rkey_packed_size); gaudi_copy's key has 40"
    fi
    if grep -A1 'UCS_TEST_SKIP_COND_P(test_md, rkey_compare' "$md_cc" \
           2>/dev/null | grep -q 'is_gpu_ipc' &&
       ! grep -A1 'UCS_TEST_SKIP_COND_P(test_md, rkey_compare' "$md_cc" |
           grep -q 'check_reg_mem_type'; then
        echo "gaudi_ipc/test_md.rkey_compare/*|this release's test registers host memory on every MD that registers, without checking reg_mem_types (later releases skip such MDs); gaudi_ipc registers Gaudi memory only"
    fi
    # (releases whose UCX has no UCX_RCACHE_PURGE_ON_FORK keep cached
    # regions across fork)
    if grep -q 'UCS_TEST_SKIP_COND_P(test_md_fork, fork' "$md_cc" \
           2>/dev/null &&
       ! ucx_info -c -f 2>/dev/null |
           grep -q 'RCACHE_PURGE_ON_FORK'; then
        echo "gaudi_copy/test_md_fork.*|this release keeps registration-cache regions across fork (no UCX_RCACHE_PURGE_ON_FORK) and its test checks that the parent's registered page keeps its frame after fork; on Linux >= 5.9 the driver's long-term pin makes fork give the child a copy of a pinned page (early copy-on-write, Linux 6.1 mm/memory.c:967-969, include/linux/rmap.h:234-341), which the emulator cannot do from user space (docs/hlsim.md, Not emulated), so the parent's page moves here"
    fi
    if ! grep -A2 'UCS_TEST_SKIP_COND_P(test_md, invalidate' "$md_cc" \
           2>/dev/null | grep -q 'check_reg_mem_type'; then
        echo "gaudi_ipc/test_md.invalidate/*|this release's test registers host memory on every MD with UCT_MD_FLAG_INVALIDATE (later releases skip MDs without host registration); gaudi_ipc registers Gaudi memory only, and its invalidation is tested on Gaudi memory (gaudi_ipc_invalidate, 70-ipc.sh)"
    fi
}

UCX_SRC_DIR_TEST=$(sed -n "s|^UCX_SRC_DIR = ||p" "$GAUDI_UCX_BUILD/Makefile")/test/gtest
