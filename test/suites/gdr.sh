# GPUDirect RDMA on the emulated NIC (test/emu/nicsim, docs/gdr.md), sourced
# after lib.sh by 94-gdr.sh and ucx-version.sh. The caller sets:
#   run          how a program runs on the current node with the module
#   gdr_mpi_env  mpirun arguments that make UCX load the module (-x ...)
#   gdr_wrapper  the command before the program (the ucx-gaudi-run
#                wrapper, or nothing where UCX's loader finds the module)
#   gdr_peer_get the transport of a PEER-mode ucp_get between nodes:
#                nicsim, or tcp where UCX's get/zcopy protocol refuses
#                PEER mode (UCX 1.16, 1.18: get_offload.c's zcopy init
#                lacks UCP_PROTO_COMMON_INIT_FLAG_ERR_HANDLING, which
#                ucp_proto_common_init_check_err_handling requires; 1.22
#                has it), so the get is software emulation over tcp
# gdr_suite runs everything: the uct-level test on one node, then UCP on
# two emulated nodes (one rank each, test/suites/rank-node.sh) with the
# NIC preloaded in each rank: tag rendezvous and RMA of module memory
# (gaudi_mpi_test, gaudi_ucp_rma_test), tag and RMA of SynapseAI tensors
# (gaudi_fw_test, test/suites/framework.sh), each checked byte by byte by
# the programs, the path by UCX_PROTO_INFO (nicsim for Gaudi memory) and
# by the NIC's counters (bytes it moved from and to dma-buf
# registrations, on both ranks); then the negative runs: the NIC given a
# wrong fd, offset or length for the module's dma-buf must make the test
# fail visibly.

gdr_nic=$GAUDI_UCX_BUILD/test/emu/nicsim/.libs/libuct_nicsim.so
gdr_suites=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# gdr_available: the NIC was built (UCX with dma-buf registration)
gdr_available() {
    [ -f "$gdr_nic" ]
}

# gdr_counters LOG: the last "nicsim counters" line of each process
# (printed at each MD close; the counters are the process's) shows dma-buf
# bytes read and written and no registration left; two processes at
# least (a rank each). Sets gdr_why / gdr_seen.
gdr_counters() {
    local lines bad
    lines=$(grep -o 'nicsim counters pid [0-9]*: .*' "$1" |
            awk '{ last[$4] = $0 } END { for (p in last) print last[p] }')
    if [ "$(echo "$lines" | grep -c .)" -lt 2 ]; then
        gdr_why="no NIC counters of both ranks"
        return 1
    fi
    bad=$(echo "$lines" |
          grep -Ev ' dmabuf_read=[1-9][0-9]* dmabuf_written=[1-9]' || true)
    if [ -n "$bad" ]; then
        gdr_why="a rank moved no dma-buf bytes: $(echo "$bad" | head -1)"
        return 1
    fi
    if echo "$lines" | grep -qv ' live_regs=0 '; then
        gdr_why="registrations left: $(echo "$lines" |
                                        grep -v ' live_regs=0 ' | head -1)"
        return 1
    fi
    gdr_seen=$(echo "$lines" | sed -n \
        's/.*dmabuf_read=\([0-9]*\) dmabuf_written=\([0-9]*\).*/\1+\2/p' |
        tr '\n' ' ')
}

# gdr_paths LOG OP: the transport of the last size range of each
# UCX_PROTO_INFO table of OP (tag_send, put, get) from (get: into) Gaudi
# memory, and for put/get to (get: from) Gaudi memory, one line per table
gdr_paths() {
    awk -v op="$2" '
        index($0, "ucp_" op "*") &&
        $0 ~ /(from|into) (rocm|gaudi)\// &&
        (op == "tag_send" || $0 ~ / (to|from) (rocm|gaudi)( |\/)/) {
            table = 1; next
        }
        table && /\| +[0-9.]+[KMG]?\.\.inf +\|/ {
            n = split($0, col, "|"); print col[n - 1]; table = 0
        }' "$1"
}

# gdr_path_ok LOG OPS...: each OP's tables exist and all end on nicsim
gdr_path_ok() {
    local log=$1 op lines; shift
    for op in "$@"; do
        lines=$(gdr_paths "$log" "$op")
        if [ -z "$lines" ]; then
            gdr_why="no UCX_PROTO_INFO table of $op from Gaudi memory"
            return 1
        fi
        if echo "$lines" | grep -vq nicsim; then
            gdr_why="$op not on nicsim: $(echo "$lines" | tr -s ' ' |
                                           tr '\n' ';')"
            return 1
        fi
    done
}

# gdr_mpi NAME OPS PROG [MPIRUN ARGS...]: PROG on two nodes, one rank each;
# sets gdr_log, gdr_rc, gdr_res ("N passed, N failed" of the program)
gdr_mpi() {
    local name=$1 prog=$3 nodes_dir; shift 3
    gdr_log=$(mktemp); tmpdirs+=("$gdr_log")
    nodes_dir=$(mktemp -d /tmp/hlsim-gdr.XXXXXX); tmpdirs+=("$nodes_dir")
    echo "=== $name"
    HLSIM_ROOT=$nodes_dir/launcher
    mkdir "$HLSIM_ROOT"
    HLSIM_ROOT=$HLSIM_ROOT LD_PRELOAD="$HLSIM_LIB" timeout -k 10 600 \
        mpirun --allow-run-as-root --oversubscribe -np 2 \
        --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
        --mca osc ^ucx --mca btl ^openib,uct \
        -x NODES_DIR="$nodes_dir" -x HLSIM_NUM_DEVICES=1 \
        -x LD_PRELOAD="$HLSIM_LIB:$gdr_nic" "${gdr_mpi_env[@]}" \
        -x UCX_WARN_UNUSED_ENV_VARS=n -x UCX_PROTO_ENABLE=y \
        -x UCX_PROTO_INFO=y -x UCX_NICSIM_PRINT_COUNTERS=y "$@" \
        "$gdr_suites/rank-node.sh" "${gdr_wrapper[@]}" $prog \
        > "$gdr_log" 2>&1
    gdr_rc=$?
    gdr_res=$(sed -n 's/^\([0-9]* passed, [0-9]* failed\)$/\1/p' "$gdr_log" |
              tail -1)
}

# gdr_verdict OPS: the last gdr_mpi run passed as GPUDirect: the program
# passed, nothing logged an ERROR, the Gaudi tables of OPS end on nicsim
# and both ranks' NICs moved dma-buf bytes; else gdr_why says why not
gdr_verdict() {
    if [ "$gdr_rc" -ne 0 ] || [ -z "$gdr_res" ] ||
       [ "${gdr_res#* passed, }" != "0 failed" ]; then
        gdr_why="exit $gdr_rc, ${gdr_res:-no result}"
    elif grep -Eq ' ERROR |UCX  ERROR' "$gdr_log"; then
        gdr_why="ERROR: $(grep -Eo 'UCX  ERROR .*' "$gdr_log" | head -1 |
                          cut -c12-100)"
    else
        gdr_path_ok "$gdr_log" "$@" && gdr_counters "$gdr_log"
        return
    fi
    return 1
}

# gdr_mpi_ok NAME OPS PROG [MPIRUN ARGS...]
gdr_mpi_ok() {
    local name=$1 ops=$2
    gdr_mpi "$@"
    if gdr_verdict $ops; then
        pass "$name ($gdr_res; $ops on nicsim; dma-buf bytes read+written$(
              ) per rank: $gdr_seen)"
    else
        fail "$name" "$gdr_why"
        grep -Ev '\| |\+-' "$gdr_log" | tail -15 | sed 's/^/      /'
    fi
}

# gdr_mpi_fails NAME FAULT OPS PROG [MPIRUN ARGS...]: with the NIC's
# dma-buf fault FAULT the same run must fail as GPUDirect, visibly: a
# failed data check, an error, or Gaudi memory not moved by the NIC
gdr_mpi_fails() {
    local name=$1 fault=$2 ops=$3 prog=$4; shift 4
    gdr_mpi "$name" "$ops" "$prog" -x UCX_NICSIM_DMABUF_FAULT="$fault" "$@"
    if gdr_verdict $ops; then
        fail "$name" "the run passed with a wrong dma-buf $fault"
    else
        pass "$name: fails visibly ($gdr_why)"
    fi
}

# fw_check for the framework process: its NICs moved dma-buf bytes
gdr_fw_check() {
    gdr_counters "$1" || { fw_why=$gdr_why; return 1; }
    fw_seen="$fw_seen; dma-buf bytes per rank: $gdr_seen"
}

gdr_suite() {
    local out rma=$GAUDI_UCX_BUILD/test/mpi/gaudi_ucp_rma_test
    local mpi=$GAUDI_UCX_BUILD/test/mpi/gaudi_mpi_test
    out=$(mktemp); tmpdirs+=("$out")

    # uct level, one node: gaudi_copy's dma-buf registered and moved
    new_node
    HLSIM_NUM_DEVICES=1 run \
        "$GAUDI_UCX_BUILD/test/emu/nicsim/nicsim_uct_test" > "$out" 2>&1
    if grep -q '^[0-9]* passed, 0 failed$' "$out"; then
        pass "uct: the NIC registers the module's dma-buf, put/get$(
              ) byte-checked ($(tail -1 "$out"))"
    else
        fail "uct: the NIC registers the module's dma-buf" \
             "$(grep -E '^FAIL|passed' "$out" | head -5)"
    fi

    if [ ! -x "$mpi" ] || [ ! -x "$rma" ]; then
        fail "UCP on two nodes" "test/mpi not built (mpicc missing?)"
        return
    fi

    # UCP, two nodes: module memory (uct_gaudi_mem_alloc)
    gdr_mpi_ok "tag rendezvous of Gaudi buffers NIC-to-HBM (module memory)" \
        tag_send "$mpi"
    gdr_mpi_ok "ucp_put/get between Gaudi buffers NIC-to-HBM (module memory)" \
        "put get" "$rma gg"

    # SynapseAI tensors (synDeviceMalloc): the framework process
    . "$gdr_suites/framework.sh"
    fw_mpi_env=("${gdr_mpi_env[@]}" -x UCX_NICSIM_PRINT_COUNTERS=y)
    fw_wrapper=("${gdr_wrapper[@]}")
    fw_preload=$HLSIM_LIB:$gdr_nic fw_net=nicsim \
        fw_net_get=${gdr_peer_get:-nicsim} fw_check=gdr_fw_check \
        fw_run "framework process (SynapseAI tensors), two nodes, NIC-to-HBM" \
        2 gaudi2 kernel

    # the module's dma-buf made wrong in the NIC: the tests must fail
    gdr_mpi_fails "wrong dma-buf offset in the NIC, RMA" offset "put get" \
        "$rma gg"
    gdr_mpi_fails "wrong dma-buf fd in the NIC, RMA" fd "put get" "$rma gg"
    gdr_mpi_fails "wrong dma-buf length in the NIC, tag" length tag_send \
        "$mpi"
    new_node   # what follows runs on a node of its own again
}
