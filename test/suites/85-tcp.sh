# Two emulated nodes over TCP: each process (ucx_perftest) or MPI rank runs
# on an emulated node of its own (its own HLSIM_ROOT: own devices, own boot
# id, hence another UCX system id), with one Gaudi2 each. Between them only
# tcp can carry data: gaudi_ipc and the shared-memory transports must be
# unreachable, and Gaudi buffers move host-staged (gaudi_cpy copies on each
# side). Data is checked by the MPI programs (test/mpi). Then the peer
# dies mid-transfer (SIGKILL, each side in turn): the survivor must learn
# it within a bounded time instead of hanging, and never report success.
. "$(dirname "$0")/lib.sh"
emulator_only "two emulated nodes are two emulator roots"
suites=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp); srv=$(mktemp); tmpdirs+=("$out" "$srv")
export UCX_WARN_UNUSED_ENV_VARS=n
export HLSIM_NUM_DEVICES=1
tls=tcp,gaudi_cpy,gaudi_ipc,self
run() { on_node "$@"; }
. "$suites/nodes.sh"

# node_pair NAME ARGS...: server on node A, client on node B
node_pair() {
    local name=$1; shift
    local port=$(free_port) rc
    new_nodes
    if ! start_server "$port" "$@"; then
        fail "$name" "the server did not listen on port $port"
        stop_run "$server"
        tail -15 "$srv" | sed 's/^/      /'
        return
    fi
    HLSIM_ROOT=$NODE_B on_node ucx_perftest 127.0.0.1 -p "$port" "$@" \
        > "$out" 2>&1
    rc=$?
    wait "$server" || rc=1
    if [ $rc -ne 0 ]; then
        fail "$name" "exit status $rc"
        tail -n 15 "$out" "$srv" | sed 's/^/      /'
        return
    fi
    perftest_ok "$name" "$out"
}

# lanes_tcp_only NAME LOG: the wireup put every lane of the endpoint to the
# other node on tcp (UCX_LOG_LEVEL=debug lines "lane[N]: N:tl/dev ...");
# gaudi_cpy lanes are the local memory-type endpoint, not the peer
lanes_tcp_only() {
    local name=$1 log=$2 one_node='gaudi_ipc|sysv|posix|cma|knem|xpmem'
    if ! grep -Eq 'lane\[[0-9]+\]: +[0-9]+:tcp/' "$log"; then
        fail "$name" "no tcp lane"
    elif grep -Eq "lane\\[[0-9]+\\]: +[0-9]+:($one_node)/" "$log"; then
        fail "$name" "a lane on a transport of one node"
        grep -E 'lane\[[0-9]+\]:' "$log" | sed 's/^.*ep /      ep /' | head
    else
        pass "$name"
    fi
}

# The two nodes are two machines to UCX: distinct boot ids
new_nodes
boot_id=/proc/sys/kernel/random/boot_id
a=$(HLSIM_ROOT=$NODE_A LD_PRELOAD=$HLSIM_LIB cat $boot_id)
b=$(HLSIM_ROOT=$NODE_B LD_PRELOAD=$HLSIM_LIB cat $boot_id)
if [ -n "$a" ] && [ -n "$b" ] && [ "$a" != "$b" ] &&
   [ "$a" != "$(cat $boot_id)" ]; then
    pass "each emulated node has its own boot id"
else
    fail "each emulated node has its own boot id" "'$a' / '$b'"
fi

# Every transport offered (UCX_TLS unset): UCX itself must find that only
# tcp reaches the other node (not gaudi_ipc, not shared memory)
unset UCX_TLS
UCX_LOG_LEVEL=debug node_pair "all transports: tag_bw -m rocm -s 16777216" \
    -t tag_bw -m rocm -s 16777216 -n 3 -w 1
lanes_tcp_only "all transports: only tcp between the nodes" "$out"
UCX_TLS=$tls UCX_LOG_LEVEL=debug node_pair \
    "UCX_TLS=$tls: tag_bw -m rocm -s 16777216" \
    -t tag_bw -m rocm -s 16777216 -n 3 -w 1
lanes_tcp_only "UCX_TLS=$tls: only tcp between the nodes" "$out"

export UCX_TLS=$tls
for mem in rocm rocm,host host,rocm; do
    for size in 8 65536 16777216; do
        iters=50; [ $size -ge 16777216 ] && iters=4
        node_pair "tag_bw -m $mem -s $size" -t tag_bw -m $mem -s $size \
            -n $iters -w 1
    done
done
node_pair "stream_bw -m rocm -s 1048576" -t stream_bw -m rocm -s 1048576 \
    -n 10 -w 1
# RMA to the other node's Gaudi memory: UCX 1.13's new protocols emulate
# it over tcp active messages, packed through gaudi_cpy
for size in 8 1048576; do
    UCX_PROTO_ENABLE=y node_pair "ucp_put_bw -m rocm -s $size (proto v2)" \
        -t ucp_put_bw -m rocm -s $size -n 5 -w 1
    UCX_PROTO_ENABLE=y node_pair "ucp_get -m rocm -s $size (proto v2)" \
        -t ucp_get -m rocm -s $size -n 5 -w 1
done

# Open MPI, one rank per node (test/suites/rank-node.sh), data checked by
# the program: send/recv of Gaudi buffers, then UCP RMA on Gaudi and host
# buffers
run_mpi() {
    local name=$1 prog=$2; shift 2
    local log p f rc
    log=$(mktemp); tmpdirs+=("$log")
    NODES_DIR=$(mktemp -d /tmp/hlsim-tcp-mpi.XXXXXX); tmpdirs+=("$NODES_DIR")
    echo "=== $name"
    NODES_DIR=$NODES_DIR timeout -k 10 600 \
        mpirun --allow-run-as-root --oversubscribe -np 2 \
        --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
        --mca osc ^ucx --mca btl ^openib,uct \
        -x NODES_DIR -x HLSIM_NUM_DEVICES -x LD_PRELOAD="$HLSIM_LIB" \
        -x GAUDI_UCX_LIBDIR -x UCX_TLS -x UCX_WARN_UNUSED_ENV_VARS "$@" \
        "$suites/rank-node.sh" "$GAUDI_UCX_RUN" $prog > "$log" 2>&1
    rc=$?
    cat "$log"
    p=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$log")
    f=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$log")
    if [ -z "$p" ] || [ "$rc" -ne 0 ] || [ "$f" -ne 0 ]; then
        fail "$name" "exit $rc, '${p:-no} passed, ${f:-no} failed'"
    elif [ ! -d "$NODES_DIR/node0/dev" ] || [ ! -d "$NODES_DIR/node1/dev" ]
    then
        fail "$name" "the ranks did not run on two nodes"
    else
        pass "$name ($p checks)"
    fi
}
run_mpi "MPI send/recv of Gaudi buffers between two nodes" \
    "$GAUDI_UCX_BUILD/test/mpi/gaudi_mpi_test"
run_mpi "MPI UCP RMA between two nodes (UCX_PROTO_ENABLE=y)" \
    "$GAUDI_UCX_BUILD/test/mpi/gaudi_ucp_rma_test gg,hg,gh,hh" \
    -x UCX_PROTO_ENABLE=y

# --- peer death ---

# perftest_death: test/suites/nodes.sh
for victim in server client; do
    perftest_death $victim \
        "peer death, $victim killed, tag_bw -m rocm, error handling (-e)" \
        -t tag_bw -m rocm -s 16777216 -n 1000000 -w 1 -e
done

# Without error handling (no -e) UCX 1.13 promises no report of a peer's
# failure (UCP_ERR_HANDLING_MODE_NONE), and a posted tag receive belongs
# to no endpoint, so nothing ends it: ucx_perftest then waits for ever (a
# launcher such as mpirun is what bounds it, below). What must hold: the
# survivor never reports a result, and it still answers SIGTERM at once
# (it polls; it is not stuck in the device).
perftest_death_noerr() {
    local victim=$1 name=$2 pid; shift 2
    death_pair "$victim" "$name" "$@" || return
    kill -9 "$(perftest_pid "$vpid")"
    wait "$vpid" 2>/dev/null
    sleep 5
    pid=$(perftest_pid "$spid")
    if ! kill -0 "$spid" 2>/dev/null; then
        wait "$spid"
        fail "$name" "the survivor exited (status $?) without error handling"
        { grep -E 'Fatal|ERROR|Assertion|signal' "$slog" | head -5
          tail -n 6 "$slog"; } | sed 's/^/      /'
    elif grep -q '^Final:' "$slog"; then
        fail "$name" "the survivor reported a result"
    elif [ -z "$pid" ]; then
        fail "$name" "no ucx_perftest process left"
    elif kill -TERM "$pid" && wait_gone "$pid" 5; then
        pass "$name (no result, ended by SIGTERM)"
    else
        fail "$name" "the survivor does not answer SIGTERM"
    fi
    stop_run "$spid"
}

for victim in server client; do
    perftest_death_noerr $victim \
        "peer death, $victim killed, tag_bw -m rocm, no error handling" \
        -t tag_bw -m rocm -s 16777216 -n 1000000 -w 1
done

# mpi_death_reported RANK LOG: the job said why it ended. Either mpirun
# names the dead rank, or the survivor's own MPI call failed first (UCX
# reports the lost connection, MPI_ERRORS_ARE_FATAL aborts the job before
# mpirun reports the death: seen on a loaded machine)
mpi_death_reported() {
    local victim=$1 log=$2
    grep -Eq "process rank $victim .*(exited|killed|signal)" "$log" ||
        { grep -q "An error occurred in MPI_" "$log" &&
          grep -Eq "reported by process \[[0-9]+,$((1 - victim))\]" "$log"; }
}

# mpi_death RANK: both ranks exchange 16 MiB Gaudi buffers in a loop
# (gaudi_mpi_test --loop); once it runs, SIGKILL RANK. The job must end
# within death_bound seconds, non-zero, saying which rank died or that the
# survivor's MPI call failed (mpi_death_reported; Open MPI's runtime
# aborts the job when a process dies: orte_enable_recovery is off).
mpi_death() {
    local victim=$1 name="MPI peer death, rank $1 killed mid-transfer"
    local log mpid vpid t0 t1 rc
    log=$(mktemp); tmpdirs+=("$log")
    NODES_DIR=$(mktemp -d /tmp/hlsim-tcp-mpi.XXXXXX); tmpdirs+=("$NODES_DIR")
    NODES_DIR=$NODES_DIR timeout -k 10 300 \
        mpirun --allow-run-as-root --oversubscribe -np 2 \
        --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
        --mca osc ^ucx --mca btl ^openib,uct \
        -x NODES_DIR -x HLSIM_NUM_DEVICES -x LD_PRELOAD="$HLSIM_LIB" \
        -x GAUDI_UCX_LIBDIR -x UCX_TLS -x UCX_WARN_UNUSED_ENV_VARS \
        "$suites/rank-node.sh" "$GAUDI_UCX_RUN" \
        "$GAUDI_UCX_BUILD/test/mpi/gaudi_mpi_test" --loop 240 > "$log" 2>&1 &
    mpid=$!
    if ! wait_line "$log" '^LOOP started' "$mpid" 240; then
        fail "$name" "the loop did not start"
        kill "$mpid" 2>/dev/null; wait "$mpid"
        tail -n 15 "$log" | sed 's/^/      /'
        return
    fi
    sleep 1   # a few 16 MiB exchanges are in flight
    vpid=$(cat "$NODES_DIR/rank$victim.pid")
    kill -9 "$vpid"
    t0=$(date +%s.%N)
    if ! wait_gone "$mpid" "$death_bound"; then
        fail "$name" "the job still runs $death_bound s after the kill"
        kill "$mpid" 2>/dev/null
        wait "$mpid"
        tail -n 15 "$log" | sed 's/^/      /'
        return
    fi
    t1=$(date +%s.%N)
    wait "$mpid"; rc=$?
    # (the job ended long before timeout(1) could stop it: 137 is
    # mpirun's report of the rank's SIGKILL)
    if [ "$rc" -eq 0 ]; then
        fail "$name" "exit status 0"
    elif ! mpi_death_reported "$victim" "$log"; then
        fail "$name" "no message naming the dead rank or the survivor's error"
    else
        pass "$name (job ended after $(printf '%.1f' \
             "$(echo "$t1 - $t0" | bc)") s, exit $rc)"
        return
    fi
    tail -n 15 "$log" | sed 's/^/      /'
}

for victim in 1 0; do
    mpi_death $victim
done

finish
