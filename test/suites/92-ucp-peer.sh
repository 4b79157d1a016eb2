# UCP between processes that misbehave (test/mpi/gaudi_ucp_peer_test.c):
# forged gaudi_ipc rkeys, a peer killed during a 16 MiB Gaudi -> Gaudi
# tag message, and emulator faults during tag and stream traffic. Each
# case is one run of the test's launcher (its roles are processes on
# devices 0, 1, 2 of a fresh emulated node); docs/ipc.md, "Trust model",
# "Peer failure" and "Device faults during UCP traffic" say what each
# case expects and why.
. "$(dirname "$0")/lib.sh"
emulator_only "fault injection and a third device of the emulator"
# peers die and faults hit while copies are in flight on the engines
hlsim_covers_in_flight

prog=$GAUDI_UCX_BUILD/test/mpi/gaudi_ucp_peer_test
[ -x "$prog" ] || { fail "gaudi_ucp_peer_test" "not built"; finish; exit; }

# UCX's peer detection, short for the test (defaults: 20 s keepalive)
export UCX_KEEPALIVE_INTERVAL=200ms UCX_TCP_KEEPIDLE=1s UCX_TCP_KEEPINTVL=1s
export UCX_TCP_KEEPCNT=2 UCX_WARN_UNUSED_ENV_VARS=n
export HLSIM_NUM_DEVICES=3 PEER_TEST_TIMEOUT=30

# peer_case NAME TLS ARGS... [-- CHECK...]: one launcher run, PASS on its
# own verdict and on each CHECK (an ERE that must match its output; with
# a leading "!", one that must not)
peer_case() {
    local name=$1 tls=$2 log args=() rc
    shift 2
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do args+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    log=$(mktemp); tmpdirs+=("$log")
    new_node
    UCX_TLS=$tls GAUDI_UCX_TEST_TIMEOUT=60 on_node "$prog" "${args[@]}" \
        >"$log" 2>&1
    rc=$?
    if [ "$rc" -ne 0 ] || ! grep -q '^1 passed, 0 failed$' "$log"; then
        fail "$name" "exit $rc"
        grep -v '^#' "$log" | tail -25 | sed 's/^/      /'
        return
    fi
    while [ $# -gt 0 ]; do
        if [ "${1:0:1}" = "!" ]; then
            if grep -Eq -- "${1:1}" "$log"; then
                fail "$name" "a line matches /${1:1}/"
                grep -E -- "${1:1}" "$log" | head -5 | sed 's/^/      /'
                return
            fi
        elif ! grep -Eq -- "$1" "$log"; then
            fail "$name" "no line matches /$1/"
            grep -v '^#' "$log" | tail -25 | sed 's/^/      /'
            return
        fi
        shift
    done
    pass "$name"
}

ipc=gaudi_cpy,gaudi_ipc,sm,self

# 1. Forged keys through UCP (UCX_PROTO_ENABLE=y: RMA on gaudi_ipc). A key
# that does not unpack must not crash UCX 1.13's cleanup of it either.
UCX_PROTO_ENABLE=y peer_case "forged and foreign rkeys, ucp_get/put_nbx" \
    $ipc forged -- '^PASS inconsistent key' '^PASS another process' \
    '^PASS grown key, buffer imported, host buffer'

# 2. Peer killed during a 16 MiB Gaudi -> Gaudi tag message. With error
# handling (PEER), UCX 1.13 needs transports with peer-failure support
# for every lane: its shared-memory ones have none, so the AM lanes run
# on tcp. "ipc": gaudi_ipc available (the rendezvous runs on it in both
# modes: it invalidates memory, docs/ipc.md); "staged": no gaudi_ipc.
for victim in sender receiver; do
    for tls in "gaudi_cpy,gaudi_ipc,tcp,self ipc" "gaudi_cpy,tcp,self staged"
    do
        set -- $tls
        peer_case "peer mode, $victim killed, $2" "$1" \
            "kill-$victim" peer "$2" -- 'ep error callback'
    done
done
# Without error handling (NONE): UCX 1.13 fails the requests of a failed
# endpoint only if it tracks them (UCX_PROTO_INDIRECT_ID=y), and only a
# transport that notices the death can fail it: gaudi_ipc does (the
# receiver's get from a dead exporter), tcp does (connection reset);
# shared memory does not.
export UCX_PROTO_INDIRECT_ID=y
peer_case "no error handling, sender killed, ipc over shm" $ipc \
    kill-sender none ipc -- 'receive completed with .Connection reset'
peer_case "no error handling, sender killed, ipc" \
    gaudi_cpy,gaudi_ipc,tcp,self kill-sender none ipc
peer_case "no error handling, receiver killed, ipc" \
    gaudi_cpy,gaudi_ipc,tcp,self kill-receiver none ipc
peer_case "no error handling, receiver killed, staged" \
    gaudi_cpy,tcp,self kill-receiver none staged
# Mid-transfer ("mid"): the receive is posted first and the victim dies
# 0.2 s into the message, whose copies the slowed emulated DMA stretches
# to seconds (on gaudi_ipc: the receiver's get from the exporter is in
# flight). A sender may die after all its data left: the receive may then
# succeed, with the data intact.
export HLSIM_DMA_GBPS=0.005
peer_case "no error handling, sender killed mid-get, ipc over shm" $ipc \
    kill-sender none ipc mid -- 'receive completed with .Connection reset'
peer_case "no error handling, receiver killed mid-get, ipc" \
    gaudi_cpy,gaudi_ipc,tcp,self kill-receiver none ipc mid -- \
    'send completed with .Endpoint timeout'
unset UCX_PROTO_INDIRECT_ID
peer_case "peer mode, receiver killed mid-transfer, ipc" \
    gaudi_cpy,gaudi_ipc,tcp,self kill-receiver peer ipc mid -- \
    'ep error callback'
peer_case "peer mode, sender killed mid-transfer, staged" \
    gaudi_cpy,tcp,self kill-sender peer staged mid -- \
    'receive completed with .(Endpoint timeout|Success)'
# RMA (UCX_PROTO_ENABLE=y: gaudi_ipc is the RMA lane) in flight when the
# exporter dies: each of the importer's puts and gets completes (most with
# an error), and UCX reports no request left out of its pool at cleanup
export HLSIM_DMA_GBPS=0.05
for mode in peer none; do
    UCX_PROTO_ENABLE=y peer_case \
        "exporter killed during ucp_put/get_nbx, $mode" \
        gaudi_cpy,gaudi_ipc,tcp,self kill-exporter-rma "$mode" ipc -- \
        'role 1: ([0-9]+) requests posted, \1 completed \([1-9]' \
        '!not returned to mpool'
done
unset HLSIM_DMA_GBPS
# A dead exporter, NIXL's pattern (PEER mode, a progress thread): role 1
# imported role 0's buffer (cached), role 0 dies; each later put and get
# fails with a connection error, never "invalid address" from the cache's
# identity check, whether role 0 is still a zombie (its fd table gone) or
# reaped. No keepalive rounds: the transfer itself must notice. 20 runs
# each: the liveness check must win every race.
for state in zombie reaped; do
    st=Z; [ $state = reaped ] && st='[?]'
    for run in $(seq 1 "${DEAD_EXPORTER_RUNS:-20}"); do
        UCX_PROTO_ENABLE=y UCX_KEEPALIVE_INTERVAL=inf peer_case \
            "dead exporter ($state), run $run" \
            gaudi_cpy,gaudi_ipc,tcp,self dead-exporter peer ipc "$state" -- \
            'role 1: dead exporter: first transfer failed with a connection error; ep error callback (Connection reset|Endpoint timeout)' \
            "exporter pid [0-9]+ gone, state $st" \
            '!Invalid address|stale rkey|not returned to mpool'
    done
done
# (no error handling, sender killed, staged: UCX 1.13's put pipeline
# crashes in ucp_ep_req_purge when the endpoint fails, or its receive never
# ends without indirect ids; docs/ipc.md)

# 3. Emulator faults during tag and stream traffic (role 0 sends, role 1
# receives; FAULTS_ROLE<n> is that role's HLSIM_FAULTS). Each either fails
# a request or leaves the data intact, or the receiver's data check finds
# what a failed copy lost (UCX 1.13 drops the status of memory-type
# copies), and no process aborts. The counts land in: the receiver's
# unpack of an eager message into Gaudi memory (put_short, cs 5), the
# sender's pack of a stream message (get_short, cs 6), the receiver's
# rendezvous get on gaudi_ipc (cs 8, cs_timeout 8, mem_reg_dmabuf 2 = the
# first import);
# mem_export 1 is the export probe at MD open (that process cannot
# export: gaudi_ipc is unreachable both ways), 2 the first registration.
export HLSIM_RESET_ON_LOCKUP=0
all_tag='^PASS tag 16777216 B'
all_stream='^PASS stream 16777216 B'
FAULTS_ROLE1=cs:5:EIO peer_case "tag, CS failure in the eager unpack" \
    $ipc faults-tag -- "$all_tag" 'put_short of 4096 bytes: CS submission'
# (a CS timeout leaves the device NEEDS_RESET under reset_on_lockup=0: the
# receiver's later copies fail and its data check sees the lost message)
FAULTS_ROLE1=cs_timeout:5:ETIMEDOUT peer_case \
    "tag, CS timeout in the eager unpack" $ipc faults-tag -- \
    '^ERROR copy check of 4096 B' 'the device needs a reset' '^PASS faults-tag'
FAULTS_ROLE1=cs:8:EIO peer_case "tag, CS failure in the rendezvous get" \
    $ipc faults-tag -- '^ERROR request tag receive of 65536 B'
# (the timed-out CS stays in flight, K612 command_submission.c:838-842: the
# get fails with an I/O error when the device reports it needs a reset)
FAULTS_ROLE1=cs_timeout:8:ETIMEDOUT peer_case \
    "tag, CS timeout in the rendezvous get" $ipc faults-tag -- \
    '^ERROR request tag receive of 65536 B: Input/output error' \
    'the device needs a reset'
FAULTS_ROLE1=mem_reg_dmabuf:2:EINVAL peer_case \
    "tag, import failure in the rendezvous get" $ipc faults-tag -- \
    '^ERROR request tag receive'
FAULTS_ROLE0=mem_export:1:EIO peer_case "tag, export probe failure" \
    $ipc faults-tag -- "$all_tag"
FAULTS_ROLE0=mem_export:2:EIO peer_case "tag, export failure" \
    $ipc faults-tag -- "$all_tag"
FAULTS_ROLE1=cs:8:EIO peer_case "stream, CS failure in the unpack" \
    $ipc faults-stream -- "$all_stream" 'put_short of .* CS submission'
FAULTS_ROLE0=cs:6:EIO peer_case "stream, CS failure in the pack" \
    $ipc faults-stream -- "$all_stream" 'get_short of .* CS submission'
FAULTS_ROLE1=cs_timeout:8:ETIMEDOUT peer_case "stream, CS timeout in the unpack" \
    $ipc faults-stream -- '^ERROR copy check of 65536 B' \
    'the device needs a reset' '^PASS faults-stream'
FAULTS_ROLE0=mem_export:1:EIO peer_case "stream, export probe failure" \
    $ipc faults-stream -- "$all_stream"

# Freed and reused host buffers under UCP (test/mpi/gaudi_ucp_reuse_test.c,
# one process): tag messages and RMA through host buffers that get new
# pages at the same address; the data arrives and no DMA goes through a
# stale pin (docs/hlsim.md, "Pinned pages"). Gaudi2 on both copy backends,
# Gaudi3 on SynapseAI. Without the emulator's frame check (not root) the
# cases say SKIP, which is no pass.
reuse=$GAUDI_UCX_BUILD/test/mpi/gaudi_ucp_reuse_test
reuse_case() {   # NAME VAR=VALUE...
    local name=$1 log rc
    shift
    log=$(mktemp); tmpdirs+=("$log")
    new_node
    (export HLSIM_NUM_DEVICES=1 "$@"; on_node "$reuse") > "$log" 2>&1
    rc=$?
    if grep -q '^SKIP' "$log"; then
        echo "SKIP $name: $(sed -n 's/^SKIP [^:]*: //p' "$log" | head -1)"
    elif [ $rc -eq 0 ] && grep -q '^5 passed, 0 failed$' "$log"; then
        pass "$name"
    else
        fail "$name" "exit $rc"
        grep -E '^FAIL|stale-pin|ERROR' "$log" | head -10 | sed 's/^/      /'
    fi
}
reuse_case "UCP, reused host buffers, Gaudi2, kernel backend" \
    HLSIM_ASIC=gaudi2 UCX_GAUDI_COPY_BACKEND=kernel
reuse_case "UCP, reused host buffers, Gaudi2, SynapseAI backend" \
    HLSIM_ASIC=gaudi2 UCX_GAUDI_COPY_BACKEND=synapse \
    UCX_GAUDI_SYNAPSE_LIB="$synsim_lib"
reuse_case "UCP, reused host buffers, Gaudi3" \
    HLSIM_ASIC=gaudi3 UCX_GAUDI_SYNAPSE_LIB="$synsim_lib"

finish
