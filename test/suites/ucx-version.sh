# The module against one more UCX release (contrib/test.sh runs this once
# per release, on a build made by contrib/build-ucx.sh):
# - stock ucx_info -d lists both components, without a warning;
# - the op tables (test/ops);
# - ucx_perftest tag_bw between two processes, Gaudi -> Gaudi and
#   host -> host; peer death (SIGKILL, either side) between two emulated
#   nodes over tcp, with UCP error handling;
# - Open MPI (Debian's 4.1, run on this UCX with LD_LIBRARY_PATH) moves
#   Gaudi buffers with UCP tag messages, data checked (test/mpi);
# - GPUDirect RDMA on the emulated NIC between two emulated nodes, where
#   UCX registers dma-bufs (test/suites/gdr.sh);
# - this release's own uct gtest suites on Gaudi buffers, for the Gaudi
#   components (test/suites/ucx-gtest.sh).
# Where UCX loads modules by itself (it has UCX_PLUGIN_PATH, 1.22), nothing
# is preloaded: the module is installed ("make install") and found through
# UCX_PLUGIN_PATH. Elsewhere the ucx-gaudi-run wrapper preloads it.
#
# Environment: GAUDI_UCX_BUILD (a build configured --with-ucx=UCX_PREFIX),
# UCX_PREFIX, HLSIM_LIB.
. "$(dirname "$0")/lib.sh"
: "${UCX_PREFIX:?the UCX installation to test}"
out=$(mktemp); srv=$(mktemp); tmpdirs+=("$out" "$srv")
export UCX_WARN_UNUSED_ENV_VARS=n
export PATH="$UCX_PREFIX/bin:$PATH"
ver=$("$UCX_PREFIX/bin/ucx_info" -v | sed -n -e 's/^# Library version: //p' \
      -e 's/^# Version //p' -e 's/^# UCT version=\([^ ]*\).*/\1/p')
echo "UCX $ver at $UCX_PREFIX"

# How this UCX finds the module
if "$UCX_PREFIX/bin/ucx_info" -c -f 2>/dev/null | grep -q '^UCX_PLUGIN_PATH='
then
    loader=plugin
    # the build tree's lib/ holds the .so.0 files the test programs are
    # linked with: one copy of the module per process
    export UCX_PLUGIN_PATH="$GAUDI_UCX_BUILD/lib"
    run() { LD_PRELOAD="$HLSIM_LIB" timeout -k 10 600 "$@"; }
    mpi_load=(-x UCX_PLUGIN_PATH)
    mpi_run=()
    echo "module found by UCX's loader in UCX_PLUGIN_PATH=$UCX_PLUGIN_PATH"
else
    loader=preload
    run() { on_node "$@"; }
    mpi_load=(-x GAUDI_UCX_LIBDIR)
    mpi_run=("$GAUDI_UCX_RUN")
    echo "module preloaded by ucx-gaudi-run"
fi

new_node
export HLSIM_NUM_DEVICES=2

# ucx_info
run ucx_info -d > "$out" 2>&1
rc=$?
[ $rc -eq 0 ] && pass "ucx_info -d exits 0" || fail "ucx_info -d exits 0" "exit $rc"
expect_match "gaudi_copy MD listed" "$out" '^# Memory domain: gaudi_copy$'
expect_match "gaudi_ipc MD listed" "$out" '^# Memory domain: gaudi_ipc$'
expect_match "gaudi_cpy transport listed" "$out" '^#      Transport: gaudi_cpy$'
expect_match "gaudi_ipc transport listed" "$out" '^#      Transport: gaudi_ipc$'
expect_no_match "no errors or warnings" "$out" 'UCX  (ERROR|WARN)'
if [ $loader = plugin ]; then
    expect_no_match "no preload" <(echo "LD_PRELOAD=$LD_PRELOAD") 'gaudi'
    UCX_PLUGIN_PATH=/nonexistent LD_PRELOAD="$HLSIM_LIB" ucx_info -d \
        > "$out" 2>&1
    expect_no_match "without the plugin path: not loaded" "$out" \
        'Memory domain: gaudi'
    # "make install": modules in <libdir>/ucx, found from there
    inst=$GAUDI_UCX_BUILD/install
    if make -C "$GAUDI_UCX_BUILD" install > "$out" 2>&1; then
        UCX_PLUGIN_PATH="$inst/lib/ucx" run ucx_info -d > "$out" 2>&1
        expect_match "installed module: gaudi_copy listed" "$out" \
            '^# Memory domain: gaudi_copy$'
        UCX_PLUGIN_PATH="$inst/lib/ucx" run ucx_perftest -h > "$out" 2>&1
        expect_match "installed perftest allocator: -m gaudi" "$out" \
            '^ +gaudi - '
    else
        fail "make install" "$(tail -3 "$out")"
    fi
    # a second copy (the wrapper preloads the build tree's, the loader finds
    # the installed one): the first registered serves, no error
    UCX_PLUGIN_PATH="$inst/lib/ucx" on_node ucx_info -d > "$out" 2>&1
    expect_match "preloaded and plugin path: gaudi_copy listed once" \
        <(grep -c '^# Memory domain: gaudi_copy$' "$out") '^1$'
    expect_no_match "preloaded and plugin path: no error" "$out" \
        'UCX  (ERROR|WARN)'
fi

# op tables; dma-buf of a slice of Gaudi memory from mem_query
for prog in gaudi_ops_test gaudi_dmabuf_test; do
    if run "$GAUDI_UCX_BUILD/test/ops/$prog" > "$out" 2>&1; then
        pass "$prog ($(tail -1 "$out"))"
    else
        fail "$prog" "$(grep -E '^FAIL|entry' "$out" | head -5)"
    fi
done

# ucx_perftest: the memory type that holds Gaudi memory in this UCX
# (Gaudi's own where UCX has one, else the ROCM slot the module borrows)
run ucx_perftest -h > "$out" 2>&1
mem=$(awk '$2 == "-" {print $1}' "$out" | grep -x -m1 gaudi ||
      awk '$2 == "-" {print $1}' "$out" | grep -x -m1 rocm)
if [ -n "$mem" ]; then
    pass "ucx_perftest has a Gaudi allocator (-m $mem)"
else
    fail "ucx_perftest has a Gaudi allocator" "no gaudi/rocm memory type"
    mem=rocm
fi

perftest_pair() {
    local name=$1; shift
    local port=$((20000 + RANDOM % 20000)) rc
    run ucx_perftest -p "$port" "$@" > "$srv" 2>&1 &
    wait_listen "$port" $! || true
    run ucx_perftest 127.0.0.1 -p "$port" "$@" > "$out" 2>&1
    rc=$?
    wait $! || rc=1
    if [ $rc -eq 0 ] &&
       awk '/^Final:/ { ok = ($2 + 0 > 0) && ($9 + 0 > 0) } END { exit !ok }' \
           "$out"; then
        # iterations and message rate (MB/s of 8 B can print as 0.00)
        pass "$name ($(awk '/^Final:/ {print $7 " MB/s, " $9 " msg/s"}' \
                       "$out"))"
        # e.g. a registration UCX leaked keeping device memory exported
        cat "$out" "$srv" > "$out.both"
        expect_no_match "$name: no errors or warnings" "$out.both" \
            'UCX  (ERROR|WARN)'
        rm -f "$out.both"
    else
        fail "$name" "exit $rc"
        tail -n 8 "$out" "$srv" | sed 's/^/      /'
    fi
}

for size in 8 1048576 16777216; do
    perftest_pair "tag_bw -m $mem -s $size" -t tag_bw -m "$mem" -s $size \
        -n 20 -w 2
done
perftest_pair "tag_bw -m host -s 16777216" -t tag_bw -m host -s 16777216 \
    -n 20 -w 2

# PEER error mode (-e): the rendezvous runs on gaudi_ipc too, which
# declares the memory invalidation this UCX asks for (docs/ipc.md,
# "Invalidation")
# (UCX_PREFIX aside: at debug level UCX warns of unused UCX_ variables)
ucx_prefix=$UCX_PREFIX
unset UCX_PREFIX
UCX_LOG_LEVEL=debug perftest_pair "tag_bw -e -m $mem -s 16777216" \
    -t tag_bw -e -m "$mem" -s 16777216 -n 20 -w 2
export UCX_PREFIX=$ucx_prefix
expect_match "PEER mode: rendezvous lane is gaudi_ipc" "$out" \
    'lane\[[0-9]+\]: +[0-9]+:gaudi_ipc/.* rma_bw'

# RMA on gaudi_ipc in flight when the exporter dies: every request
# completes, none is left out of UCX's pool (docs/ipc.md, "Completions
# when a peer dies")
peer_test=$GAUDI_UCX_BUILD/test/mpi/gaudi_ucp_peer_test
if [ -x "$peer_test" ]; then
    new_node
    HLSIM_NUM_DEVICES=2 HLSIM_DMA_GBPS=0.05 UCX_PROTO_ENABLE=y \
        UCX_TLS=gaudi_cpy,gaudi_ipc,tcp,self UCX_KEEPALIVE_INTERVAL=200ms \
        run "$peer_test" kill-exporter-rma peer ipc > "$out" 2>&1
    expect_match "exporter killed during ucp_put/get_nbx: run passed" \
        "$out" '^1 passed, 0 failed$'
    expect_match "exporter killed during ucp_put/get_nbx: all complete" \
        "$out" 'role 1: ([0-9]+) requests posted, \1 completed \([1-9]'
    expect_no_match "exporter killed during ucp_put/get_nbx: no request leak" \
        "$out" 'not returned to mpool'
    new_node
fi

# Freed and reused host buffers on this UCX (its memory events and its
# registration caches, UCP's own from 1.15 on): the module's gtest
# (gaudi_reuse_test) and UCP's (gaudi_ucp_reuse_test); no DMA through a
# stale pin (docs/hlsim.md, "Pinned pages"). Gaudi2 on both copy backends
# and Gaudi3. Not root: the cases skip, which is no pass.
reuse_gtest=$GAUDI_UCX_BUILD/test/gtest/gaudi_reuse_test
reuse_ucp=$GAUDI_UCX_BUILD/test/mpi/gaudi_ucp_reuse_test
case $ver in
1.12.*)
    # UCX 1.12 sends a put into this process's own Gaudi memory through
    # the self transport's software RMA, whose header marks every target
    # as host memory (ucp/rma/rma_sw.c, ucp_rma_sw_put_pack_cb): its put
    # handler then memcpy's into the Gaudi address and faults inside UCX
    # (seen: ucp_put_handler <- uct_self_ep_am_bcopy <- ucp_put_nbx).
    # Later releases do not take that path for it. The UCP case moves
    # its data by tag only there.
    echo "UCP reuse test on UCX $ver: tag transfers only (a put into" \
         "the process's own Gaudi memory faults inside UCX 1.12's software" \
         "RMA)"
    export GAUDI_UCP_REUSE_NO_RMA=1 ;;
esac
for cfg in "gaudi2 kernel" "gaudi2 synapse" "gaudi3 synapse"; do
    set -- $cfg
    new_node
    if [ -x "$reuse_gtest" ]; then
        HLSIM_ASIC=$1 HLSIM_NUM_DEVICES=1 UCX_GAUDI_COPY_BACKEND=$2 \
            UCX_GAUDI_SYNAPSE_LIB=$synsim_lib \
            LD_PRELOAD="$HLSIM_LIB" timeout -k 10 600 "$reuse_gtest" \
            > "$out" 2>&1
        rc=$?
        res=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\?\.$/\1/p' "$out")
        if [ $rc -eq 0 ] && [ "${res:-0}" -gt 0 ]; then
            pass "reused registered buffers, UCT, $1 $2 ($res passed)"
        else
            fail "reused registered buffers, UCT, $1 $2" "exit $rc"
            grep -E 'FAILED|Failure|stale-pin|SKIPPED' "$out" | head -8 |
                sed 's/^/      /'
        fi
    else
        fail "reused registered buffers, UCT" "gaudi_reuse_test not built"
    fi
    new_node
    (export HLSIM_ASIC=$1 HLSIM_NUM_DEVICES=1 UCX_GAUDI_COPY_BACKEND=$2 \
            UCX_GAUDI_SYNAPSE_LIB=$synsim_lib; run "$reuse_ucp") \
        > "$out" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && grep -q '^5 passed, 0 failed$' "$out"; then
        pass "reused host buffers, UCP, $1 $2"
    else
        fail "reused host buffers, UCP, $1 $2" "exit $rc"
        grep -E '^(FAIL|SKIP)|stale-pin|ERROR' "$out" | head -8 |
            sed 's/^/      /'
    fi
done
new_node
export HLSIM_NUM_DEVICES=2

# Peer death between two emulated nodes over tcp (test/suites/nodes.sh):
# with UCP error handling (-e), the survivor of a SIGKILL mid-transfer of
# Gaudi buffers learns it within GAUDI_UCX_PEER_DEATH_BOUND; from UCX 1.16
# on, ucx_perftest then exits non-zero
. "$(dirname "$0")/nodes.sh"
for victim in server client; do
    UCX_TLS=tcp,gaudi_cpy,gaudi_ipc,self HLSIM_NUM_DEVICES=1 perftest_death \
        $victim "peer death over tcp, $victim killed, tag_bw -m $mem (-e)" \
        -t tag_bw -m "$mem" -s 16777216 -n 1000000 -w 1 -e
done

# Open MPI on this UCX: Gaudi buffers 1 B .. 64 MiB, data checked
if [ -x "$GAUDI_UCX_BUILD/test/mpi/gaudi_mpi_test" ]; then
    LD_PRELOAD="$HLSIM_LIB" timeout -k 10 600 \
        mpirun --allow-run-as-root --oversubscribe -np 2 \
        --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
        --mca osc ^ucx --mca btl ^openib,uct \
        -x LD_LIBRARY_PATH="$UCX_PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        -x HLSIM_ROOT -x HLSIM_NUM_DEVICES -x LD_PRELOAD "${mpi_load[@]}" \
        -x UCX_TLS=gaudi_cpy,gaudi_ipc,sm,self -x UCX_WARN_UNUSED_ENV_VARS=n \
        "${mpi_run[@]}" "$GAUDI_UCX_BUILD/test/mpi/gaudi_mpi_test" \
        > "$out" 2>&1
    rc=$?
    res=$(sed -n 's/^\([0-9]* passed, [0-9]* failed\)$/\1/p' "$out" | tail -1)
    if [ $rc -eq 0 ] && [ -n "$res" ] && [ "${res#* passed, }" = "0 failed" ]
    then
        pass "Open MPI on UCX $ver: $res"
    else
        fail "Open MPI on UCX $ver" "exit $rc, ${res:-no result}"
        tail -15 "$out" | sed 's/^/      /'
    fi
else
    fail "Open MPI test" "not built (mpicc missing?)"
fi

# A framework process (PyTorch + NIXL: UCX first, then SynapseAI's device,
# synDeviceMalloc tensors; test/suites/framework.sh), on UCX 1.22 only:
# one node (gaudi_ipc) on Gaudi2 with either copy backend and on Gaudi3,
# and two emulated nodes over tcp
case $ver in
1.22.*)
    . "$(dirname "$0")/framework.sh"
    fw_mpi_env=(-x LD_LIBRARY_PATH="$UCX_PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
                "${mpi_load[@]}")
    fw_wrapper=("${mpi_run[@]}")
    fw_run "framework process, one node, Gaudi2, kernel backend" \
        1 gaudi2 kernel
    # (gaudi_ipc on SynapseAI only when told, docs/ipc.md, "SynapseAI and
    # imported buffers"; by default the transport is not gaudi_ipc)
    fw_env=(-x UCX_GAUDI_IPC_SYNAPSE_IMPORT=y)
    fw_run "framework process, one node, Gaudi2, SynapseAI backend" \
        1 gaudi2 synapse
    fw_run "framework process, one node, Gaudi3" 1 gaudi3 auto:synapse
    fw_env=()
    fw_local='!gaudi_ipc'
    fw_run "framework process, one node, Gaudi3, default" 1 gaudi3 \
        auto:synapse
    unset fw_local
    fw_run "framework process, two nodes over tcp, Gaudi2, kernel backend" \
        2 gaudi2 kernel
    ;;
esac

# GPUDirect RDMA on the emulated NIC (test/suites/gdr.sh, docs/gdr.md):
# where UCX registers dma-bufs (the NIC is built only there), UCP moves
# Gaudi memory NIC-to-HBM between two emulated nodes
. "$(dirname "$0")/gdr.sh"
if gdr_available; then
    gdr_mpi_env=(-x LD_LIBRARY_PATH="$UCX_PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
                 "${mpi_load[@]}")
    gdr_wrapper=("${mpi_run[@]}")
    case $ver in
    1.16.*|1.18.*) gdr_peer_get=tcp ;;   # see gdr.sh
    *)             gdr_peer_get=nicsim ;;
    esac
    gdr_suite
else
    echo "SKIP GPUDirect on the emulated NIC: UCX $ver has no dma-buf" \
         "registration (UCT_MD_FLAG_REG_DMABUF)"
fi

# this release's own uct gtest suites on Gaudi buffers: every suite UCX
# instantiates for its GPU transports or every MD, for the Gaudi
# components too (test/suites/ucx-gtest.sh: exclusions and report)
. "$(dirname "$0")/ucx-gtest.sh"
ucx_gtest_run "UCX $ver uct suites on Gaudi buffers" "$out" run
rc=$?
if [ $rc -eq 0 ] && grep -q '^\[  PASSED  \] [1-9]' "$out"; then
    pass "$ucx_gtest_report"
else
    fail "$ucx_gtest_report" "exit $rc"
    grep -E '^\[  FAILED  \]' "$out" | head -10 | sed 's/^/      /'
    tail -5 "$out" | sed 's/^/      /'
fi

finish
