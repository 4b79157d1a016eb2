# A framework process (PyTorch + NIXL, test/mpi/gaudi_fw_test.c) on two
# ranks under Open MPI (pml ucx), sourced after lib.sh by 93-framework.sh
# and ucx-version.sh. The caller sets:
#   fw_mpi_env  mpirun arguments that make UCX load the module (-x ...)
#   fw_wrapper  the command before the program (the ucx-gaudi-run wrapper,
#               or nothing where UCX's loader finds the module)
# and may set:
#   fw_preload  LD_PRELOAD of the ranks (default: the emulator, as for
#               mpirun)
#   fw_net      the transport between two nodes (default tcp)
#   fw_net_get  ... for gets, if another
#   fw_check    a function called with the log of a passing run, which
#               fails the run by returning non-zero with fw_why set
#   fw_env      more mpirun -x arguments (e.g. UCX_GAUDI_IPC_SYNAPSE_IMPORT)
#   fw_local    the transport expected on one node (default gaudi_ipc;
#               "!gaudi_ipc": anything else, e.g. host-staged)
# fw_run NAME NODES ASIC BACKEND[:EXPECTED] [ARGS...]: one run, NODES 1
# (both ranks on one emulated node of two devices) or 2 (a node each, tcp
# between them), on ASIC (gaudi2, gaudi3) with
# UCX_GAUDI_COPY_BACKEND=BACKEND, which must give the EXPECTED backend
# (default: BACKEND itself); ARGS go to the program. PASS when each rank reports its checks with none failed,
# the log has no ERROR line, each rank logged the copy backend asked for,
# and UCX's protocol tables (UCX_PROTO_INFO=y) show Gaudi -> Gaudi put and
# get on gaudi_ipc (one node) or on tcp, never gaudi_ipc (two nodes).

fw_prog=$GAUDI_UCX_BUILD/test/mpi/gaudi_fw_test
fw_synapse=$synsim_lib
fw_suites=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# fw_paths LOG OP: the transports of the last size range of every
# UCX_PROTO_INFO table for OP ("put" or "get") between Gaudi buffers, one
# line per table ("<pid> <transports>")
fw_paths() {
    awk -v op="$2" '
        match($0, /\[[^]]*:[0-9]+ *:[0-9]+\]/) {
            pid = substr($0, RSTART, RLENGTH)
        }
        index($0, "ucp_" op "*(multi)") &&
        $0 ~ /(rocm|gaudi)\/[^ ]+ (to|from) (rocm|gaudi)[ \/]/ {
            table[pid] = 1; last[pid] = ""; next
        }
        table[pid] && /\| +[0-9.]+[KMG]?\.\.inf +\|/ {
            n = split($0, col, "|"); last[pid] = col[n - 1]
            print pid, last[pid]; table[pid] = 0
        }' "$1"
}

# fw_noise LOG: the log without the check lines, UCX's protocol tables,
# diag lines and mpirun's boilerplate
fw_noise() {
    grep -Ev '^(PASS|FAIL) rank|\| |\+-| DIAG |^-+$|^ *$' "$1" |
        grep -Ev 'Primary job|Per user-direction|mpirun detected|the job to be|Process name|Exit code'
}

fw_run() {
    local name=$1 nodes=$2 asic=$3 backend=${4%%:*} expect=${4#*:}
    local log p0 p1 rc nodes_dir launch=() env=()
    shift 4
    log=$(mktemp); tmpdirs+=("$log")
    if [ "$nodes" = 2 ]; then
        nodes_dir=$(mktemp -d /tmp/hlsim-fw.XXXXXX); tmpdirs+=("$nodes_dir")
        env=(-x NODES_DIR="$nodes_dir" -x HLSIM_NUM_DEVICES=1)
        # mpirun's own node (it runs with the emulator preloaded too)
        export HLSIM_ROOT=$nodes_dir/launcher
        mkdir "$HLSIM_ROOT"
        launch=("$fw_suites/rank-node.sh")
    else
        new_node
        env=(-x HLSIM_ROOT -x HLSIM_NUM_DEVICES=2)
    fi
    # UCX_TLS unset, as NIXL runs: UCX picks every transport it has.
    # (HLSIM_ASIC for mpirun too: the first process on a node records it)
    HLSIM_ASIC=$asic LD_PRELOAD="$HLSIM_LIB" timeout -k 10 300 \
        mpirun --allow-run-as-root --oversubscribe -np 2 \
        --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
        --mca osc ^ucx --mca btl ^openib,uct \
        -x LD_PRELOAD="${fw_preload:-$HLSIM_LIB}" -x HLSIM_ASIC "${env[@]}" \
        "${fw_mpi_env[@]}" "${fw_env[@]}" \
        -x UCX_WARN_UNUSED_ENV_VARS=n -x UCX_PROTO_ENABLE=y \
        -x UCX_PROTO_INFO=y -x UCX_LOG_LEVEL=diag \
        -x UCX_GAUDI_COPY_BACKEND="$backend" \
        -x UCX_GAUDI_SYNAPSE_LIB="$fw_synapse" \
        -x FW_SYNAPSE_LIB="$fw_synapse" \
        "${launch[@]}" "${fw_wrapper[@]}" "$fw_prog" "$@" > "$log" 2>&1
    rc=$?
    grep -E '^(PASS|FAIL) rank' "$log" | sed 's/^/    /'
    p0=$(sed -n 's/^rank 0: \([0-9]*\) passed, 0 failed$/\1/p' "$log")
    p1=$(sed -n 's/^rank 1: \([0-9]*\) passed, 0 failed$/\1/p' "$log")
    if [ "$rc" -ne 0 ] || [ -z "$p0" ] || [ -z "$p1" ]; then
        fail "$name" "exit $rc; $(grep -E '^rank [01]: [0-9]+ passed' "$log" |
                                  tr '\n' ' ')"
        fw_noise "$log" | tail -15 | sed 's/^/      /'
        return
    fi
    if grep -Eq ' ERROR |UCX  ERROR' "$log"; then
        fail "$name" "ERROR lines in the log"
        grep -E ' ERROR |UCX  ERROR' "$log" | head -5 | sed 's/^/      /'
        return
    fi
    if [ "$(grep "copy backend $expect" "$log" | grep -o '\[[^] ]*:[0-9 ]*:' |
            tr -d ' ' | sort -u | wc -l)" -lt 2 ]; then
        fail "$name" "not both ranks on the $expect copy backend"
        grep 'copy backend' "$log" | head -4 | sed 's/^/      /'
        return
    fi
    if ! fw_path_ok "$log" "$nodes"; then
        fail "$name" "$fw_why"
        return
    fi
    if [ -n "$fw_check" ] && ! "$fw_check" "$log"; then
        fail "$name" "$fw_why"
        return
    fi
    pass "$name ($p0 + $p1 checks; $fw_seen)"
}

# fw_path_ok LOG NODES: both ranks' Gaudi -> Gaudi puts and gets took the
# expected transport; sets fw_seen (what was seen) and fw_why
fw_path_ok() {
    local log=$1 nodes=$2 op lines want
    fw_seen=""
    for op in put get; do
        lines=$(fw_paths "$log" "$op")
        if [ "$(echo "$lines" | grep -c .)" -lt 2 ]; then
            fw_why="no UCX_PROTO_INFO table of Gaudi -> Gaudi $op on both ranks"
            return 1
        fi
        if [ "$nodes" = 1 ] && [ "${fw_local:-gaudi_ipc}" = '!gaudi_ipc' ]
        then
            if echo "$lines" | grep -q gaudi_ipc; then
                fw_why="$op on gaudi_ipc: $lines"
                return 1
            fi
            fw_seen="$fw_seen${fw_seen:+, }$op not on gaudi_ipc ($(echo \
                "$lines" | awk '{$1=""; print}' | sort -u | tr -s ' ' |
                tr '\n' ';'))"
            continue
        elif [ "$nodes" = 1 ]; then
            want=gaudi_ipc
        else
            want=${fw_net:-tcp}
            [ "$op" = get ] && want=${fw_net_get:-$want}
            if echo "$lines" | grep -q gaudi_ipc; then
                fw_why="$op between two nodes on gaudi_ipc: $lines"
                return 1
            fi
        fi
        if echo "$lines" | grep -vq "$want"; then
            fw_why="$op not on $want: $(echo "$lines" | tr -s ' ' | tr '\n' ';')"
            return 1
        fi
        fw_seen="$fw_seen${fw_seen:+, }$op on $want"
    done
}
