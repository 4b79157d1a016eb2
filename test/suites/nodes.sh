# Two emulated nodes on one machine (sourced after lib.sh by 85-tcp.sh and
# ucx-version.sh): each has its own HLSIM_ROOT, hence its own devices and
# boot id (docs/hlsim.md). Commands run through "run" (the suite's way of
# loading the module) and write to $srv (server) and $out (client).
# death_bound: seconds a survivor may take to learn that its peer died
# (UCX's tcp transport sees the reset connection at once)
death_bound=${GAUDI_UCX_PEER_DEATH_BOUND:-30}

# Two fresh nodes, NODE_A and NODE_B
new_nodes() {
    NODE_A=$(mktemp -d /tmp/hlsim-tcp-a.XXXXXX)
    NODE_B=$(mktemp -d /tmp/hlsim-tcp-b.XXXXXX)
    tmpdirs+=("$NODE_A" "$NODE_B")
}

# free_port: a random port no local TCP socket uses, in any state (a bind
# to a port in use, e.g. by another test on this machine, fails)
free_port() {
    local port hex
    while :; do
        port=$((20000 + RANDOM % 20000))
        hex=$(printf ':%04X$' "$port")
        awk -v p="$hex" '$2 ~ p || $3 ~ p { f = 1 } END { exit !f }' \
            /proc/net/tcp /proc/net/tcp6 2>/dev/null || break
    done
    echo "$port"
}

# start_server PORT ARGS...: ucx_perftest server on node A (pid: $server)
start_server() {
    local port=$1; shift
    HLSIM_ROOT=$NODE_A run ucx_perftest -p "$port" "$@" > "$srv" 2>&1 &
    server=$!
    wait_listen "$port" "$server" 60
}

# wait_line LOG PATTERN PID SECONDS [FROM]: LOG has a line matching the
# ERE (from line FROM on), or PID exited without one
wait_line() {
    local tries=$(($4 * 10)) from=${5:-1}
    while [ "$tries" -gt 0 ]; do
        tail -n +"$from" "$1" | grep -Eq -- "$2" && return 0
        kill -0 "$3" 2>/dev/null ||
            { tail -n +"$from" "$1" | grep -Eq -- "$2"; return; }
        sleep 0.1
        tries=$((tries - 1))
    done
    return 1
}

# wait_gone PID SECONDS: PID (not necessarily our child) has exited
wait_gone() {
    local tries=$(($2 * 10))
    while kill -0 "$1" 2>/dev/null; do
        [ "$tries" -gt 0 ] || return 1
        sleep 0.1
        tries=$((tries - 1))
    done
}

# stop_run PID...: end commands started in the background with run (the
# ucx_perftest below each first: killing the subshell alone would orphan it)
stop_run() {
    local p t
    for p in "$@"; do
        t=$(perftest_pid "$p")
        [ -z "$t" ] || kill "$t" 2>/dev/null
        kill "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
}

# perftest_pid PID: the ucx_perftest process PID runs (through a subshell,
# timeout(1) and the wrapper, which execs it)
perftest_pid() {
    local todo=$1 p n
    # breadth-first over the whole process tree below $1: a wrapper may
    # have short-lived children beside the one that runs ucx_perftest
    for n in $(seq 20); do
        for p in $todo; do
            if [ "$(cat /proc/"$p"/comm 2>/dev/null)" = ucx_perftest ]; then
                echo "$p"
                return
            fi
        done
        todo=$(for p in $todo; do pgrep -P "$p"; done)
        [ -n "$todo" ] || return
    done
}

# death_pair VICTIM NAME ARGS...: a long ucx_perftest between the nodes,
# server on node A, client on node B, both running; sets server, client,
# vpid (VICTIM's wrapper), spid (the survivor's) and slog (the survivor's
# output). Non-zero, with the failure reported, if no transfer started.
death_pair() {
    local victim=$1 name=$2 port; shift 2
    port=$(free_port)
    new_nodes
    if ! start_server "$port" "$@"; then
        fail "$name" "the server did not listen on port $port"
        stop_run "$server"
        return 1
    fi
    HLSIM_ROOT=$NODE_B GAUDI_UCX_TEST_TIMEOUT=120 run ucx_perftest \
        127.0.0.1 -p "$port" "$@" > "$out" 2>&1 &
    client=$!
    # the client's progress lines (the server prints none): Gaudi buffers
    # are in flight, both sides are running
    if ! wait_line "$out" '^\[thread 0\] +[0-9]' "$client" 60 ||
       ! kill -0 "$server" 2>/dev/null; then
        fail "$name" "no transfer started"
        stop_run "$client" "$server"
        tail -n 10 "$out" "$srv" | sed 's/^/      /'
        return 1
    fi
    if [ "$victim" = server ]; then
        vpid=$server; spid=$client; slog=$out
    else
        vpid=$client; spid=$server; slog=$srv
    fi
}

# perftest_death VICTIM NAME ARGS...: a long tag_bw of Gaudi buffers
# between the nodes; once both sides have reported progress, SIGKILL
# VICTIM (server or client). The survivor must, within death_bound
# seconds, exit non-zero or report the peer's failure through UCX (with
# -e: the endpoint's error handler; UCX 1.13's ucx_perftest only logs it
# and then waits on its own bootstrap socket, whose EOF it does not check:
# tools/perf/perftest.c, sock_io; UCX 1.22's exits from the handler). It
# must never exit 0.
perftest_death() {
    local victim=$1 name=$2; shift 2
    local pid from t0 t1 rc how
    local pattern='error handler called with status|UCX  ERROR'
    death_pair "$victim" "$name" "$@" || return
    pid=$(perftest_pid "$vpid")
    if [ -z "$pid" ]; then
        fail "$name" "no ucx_perftest process to kill"
        stop_run "$client" "$server"
        return
    fi
    from=$(($(wc -l < "$slog") + 1))   # only what the survivor says after
    kill -9 "$pid"
    t0=$(date +%s.%N)
    wait "$vpid" 2>/dev/null
    if wait_line "$slog" "$pattern" "$spid" "$death_bound" "$from"; then
        t1=$(date +%s.%N)
        if wait_gone "$spid" 5; then
            wait "$spid"; rc=$?
            how="exit $rc"
        else
            # told by UCX, still in its bootstrap (UCX 1.12/1.13 perftest)
            stop_run "$spid"
            rc=running
            how="still waiting in its bootstrap"
        fi
        if [ "$rc" = 0 ]; then
            fail "$name" "the survivor reported success"
        else
            pass "$name (error after $(printf '%.1f' \
                 "$(echo "$t1 - $t0" | bc)") s, $how: $(grep -Eo -- \
                 "$pattern.*" <(tail -n +"$from" "$slog") | head -1 |
                 cut -c1-60))"
        fi
        return
    fi
    if kill -0 "$spid" 2>/dev/null; then
        fail "$name" "no error within $death_bound s, still running"
        stop_run "$spid"
    else
        wait "$spid"; rc=$?
        if [ "$rc" = 0 ]; then
            fail "$name" "the survivor reported success"
        elif [ "$rc" = 141 ]; then
            # SIGPIPE: UCX 1.12/1.13 ucx_perftest writes to its own
            # bootstrap socket without MSG_NOSIGNAL once the peer is gone
            pass "$name (killed by SIGPIPE on ucx_perftest's bootstrap" \
                 "socket, no UCX error line)"
        elif [ "$rc" -ge 124 ]; then
            fail "$name" "the survivor hung (stopped by timeout, exit $rc)"
        else
            pass "$name (exit $rc without a UCX error line)"
        fi
    fi
    tail -n 8 "$slog" | sed 's/^/      /'
}

