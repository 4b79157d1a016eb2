# Readiness waits (sourced by lib.sh, bench/ucp/run.sh, contrib/demo.sh):
# poll for the thing a peer needs instead of sleeping a fixed time. Each
# gives up after SECONDS (default 30), or as soon as PID has exited.

# wait_listen PORT PID [SECONDS]: a TCP socket of this host listens on PORT
wait_listen() {
    local port=$1 pid=$2 tries=$((${3:-30} * 10)) hex
    hex=$(printf ':%04X$' "$port")
    while [ "$tries" -gt 0 ]; do
        # /proc/net/tcp*: local_address is field 2, state 0A is LISTEN
        if awk -v p="$hex" '$2 ~ p && $4 == "0A" { f = 1 } END { exit !f }' \
               /proc/net/tcp /proc/net/tcp6 2>/dev/null; then
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.1
        tries=$((tries - 1))
    done
    return 1
}

# wait_file FILE PID [SECONDS]: FILE exists (the peer creates it when ready)
wait_file() {
    local file=$1 pid=$2 tries=$((${3:-30} * 10))
    while [ "$tries" -gt 0 ]; do
        [ -e "$file" ] && return 0
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.1
        tries=$((tries - 1))
    done
    return 1
}
