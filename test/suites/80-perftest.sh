# Stock ucx_perftest on Gaudi buffers ("rocm" memory type on UCX 1.13,
# see src/uct/gaudi/compat/gaudi_compat.h): UCP tests between two processes, each
# on its own emulated device, and UCT tests over gaudi_cpy in loopback.
# Each run must complete and report a positive bandwidth or latency.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/nodes.sh"     # free_port, wait_line, perftest_pid, stop_run
need_free_devices 2
out=$(mktemp); srv=$(mktemp); tmpdirs+=("$out" "$srv")
export UCX_WARN_UNUSED_ENV_VARS=n

# two processes: a server and a client on the same emulated node
ucp_pair() {
    local name=$1; shift
    local port rc crc src server try up=0
    # a random port may still be bound (TIME_WAIT of an earlier run):
    # another one is tried then
    for try in 1 2 3; do
        port=$((20000 + RANDOM % 20000))
        on_node ucx_perftest -p "$port" "$@" > "$srv" 2>&1 &
        server=$!
        if wait_listen "$port" "$server" 60; then
            up=1
            break
        fi
        grep -q 'Address already in use' "$srv" || break
        wait "$server"
    done
    if [ $up -eq 0 ]; then
        fail "$name" "the server did not listen on port $port"
        kill "$server" 2>/dev/null; wait "$server"
        tail -15 "$srv" | sed 's/^/      /'
        return
    fi
    on_node ucx_perftest 127.0.0.1 -p "$port" "$@" > "$out" 2>&1
    crc=$?
    wait "$server"
    src=$?
    rc=$((crc | src))
    if [ $rc -ne 0 ]; then
        fail "$name" "client exit $crc, server exit $src"
        tail -n 15 "$out" "$srv" | sed 's/^/      /'
        return
    fi
    perftest_ok "$name" "$out"
}

new_node
export HLSIM_NUM_DEVICES=2

for mem in rocm rocm,host host,rocm; do
    for size in 8 65536 1048576 67108864; do
        iters=100; [ $size -ge 1048576 ] && iters=10
        [ $size -ge 67108864 ] && iters=3
        ucp_pair "tag_bw -m $mem -s $size" -t tag_bw -m $mem -s $size \
            -n $iters -w 1
        ucp_pair "stream_bw -m $mem -s $size" -t stream_bw -m $mem \
            -s $size -n $iters -w 1
    done
    ucp_pair "tag_lat -m $mem -s 8" -t tag_lat -m $mem -s 8 -n 200 -w 10
done

# Rendezvous between two processes on Gaudi memory uses gaudi_ipc when the
# driver imports dma-bufs (the default "habana" flavour)
UCX_LOG_LEVEL=debug ucp_pair "tag_bw -m rocm -s 16777216 (debug log)" \
    -t tag_bw -m rocm -s 16777216 -n 3 -w 1
if in_device_mode; then
    echo "skip: rendezvous lane check (gaudi_ipc needs op 99, which only" \
         "Habana's driver has)"
else
    expect_match "rendezvous lane is gaudi_ipc" "$out" \
        'lane\[[0-9]+\]: +[0-9]+:gaudi_ipc/.* rma_bw'
fi

# ... and in PEER error mode (-e: UCP_ERR_HANDLING_MODE_PEER), where UCP
# takes a rendezvous lane only from an MD that invalidates memory
# (docs/ipc.md, "Invalidation")
UCX_LOG_LEVEL=debug ucp_pair "tag_bw -e -m rocm -s 16777216 (debug log)" \
    -t tag_bw -e -m rocm -s 16777216 -n 3 -w 1
if ! in_device_mode; then
    expect_match "PEER mode: rendezvous lane is gaudi_ipc" "$out" \
        'lane\[[0-9]+\]: +[0-9]+:gaudi_ipc/.* rma_bw'
fi

# dmabuf_ids PID: the emulated dma-buf files PID holds open, by name
# (hlsim: $HLSIM_ROOT/dmabuf/devN.ID, ID node-wide, one per export)
dmabuf_ids() {
    find /proc/"$1"/fd -lname '*/dmabuf/dev*' -printf '%l\n' 2>/dev/null |
        sed -n 's|.*/dmabuf/\(dev[0-9]*\.[0-9]*\).*|\1|p'
}

# cpu_ticks PID: user + system clock ticks PID used so far
cpu_ticks() {
    awk '{ sub(/^.*\) /, ""); print $12 + $13 }' /proc/"$1"/stat 2>/dev/null
}

# No retry storm (docs/ipc.md, "Limits"): a PEER-mode tag_bw of 1 MiB
# Gaudi buffers on gaudi_ipc, the receiver (the server) SIGKILLed; the
# sender's failed rendezvous sends deregister with INVALIDATE, which must
# not export a dma-buf each. Over $storm_secs s after the kill, the
# survivor opens no dma-buf file it did not hold before; it reports the
# failure (UCX's error handler) without an ERROR flood.
storm_secs=5
storm_check() {
    local name="no retry storm: tag_bw -e -m rocm, receiver killed"
    local port server client cpid spid from t0 ticks0 ticks1 n
    local before after fresh nerr
    # UCX's endpoint error handler with a connection error (1.13 reports
    # tcp's keepalive: Endpoint timeout)
    local reported='error handler called with status -[0-9]+ \((Endpoint'
    reported+=' timeout|Connection reset)\)'
    port=$(free_port)
    on_node ucx_perftest -p "$port" -t tag_bw -e -m rocm -s 1048576 \
        -n 100000000 -w 1 > "$srv" 2>&1 &
    server=$!
    if ! wait_listen "$port" "$server" 60; then
        fail "$name" "the server did not listen on port $port"
        stop_run "$server"
        return
    fi
    on_node ucx_perftest 127.0.0.1 -p "$port" -t tag_bw -e -m rocm \
        -s 1048576 -n 100000000 -w 1 > "$out" 2>&1 &
    client=$!
    if ! wait_line "$out" '^\[thread 0\] +[0-9]' "$client" 60; then
        fail "$name" "no transfer started"
        stop_run "$client" "$server"
        tail -n 10 "$out" "$srv" | sed 's/^/      /'
        return
    fi
    cpid=$(perftest_pid "$client"); spid=$(perftest_pid "$server")
    before=$(mktemp); after=$(mktemp); tmpdirs+=("$before" "$after")
    for n in $(seq 10); do dmabuf_ids "$cpid"; sleep 0.05; done |
        sort -u > "$before"
    from=$(($(wc -l < "$out") + 1))
    kill -9 "$spid"
    wait "$server" 2>/dev/null
    ticks0=$(cpu_ticks "$cpid")
    t0=$(date +%s.%N)
    while [ "$(echo "$(date +%s.%N) - $t0 < $storm_secs" | bc)" = 1 ] &&
          kill -0 "$cpid" 2>/dev/null; do
        dmabuf_ids "$cpid"
        sleep 0.02
    done | sort -u > "$after"
    ticks1=$(cpu_ticks "$cpid")
    fresh=$(comm -13 "$before" "$after" | wc -l)
    # a loaded machine may take longer to tell
    wait_line "$out" "$reported" "$cpid" "$death_bound" "$from"
    nerr=$(tail -n +"$from" "$out" | grep -c 'UCX  ERROR')
    stop_run "$client"
    if [ "$fresh" -ne 0 ]; then
        fail "$name" "the sender opened $fresh new dma-buf file(s) in \
$storm_secs s after the kill (e.g. $(comm -13 "$before" "$after" | tail -3 |
             tr '\n' ' ')), sender CPU $((ticks1 - ticks0)) ticks"
    elif [ ! -s "$before" ]; then
        fail "$name" "the sender held no dma-buf before the kill (not on \
gaudi_ipc?)"
    elif ! tail -n +"$from" "$out" | grep -Eq "$reported"; then
        fail "$name" "the sender did not report the failure (UCX's error \
handler with a connection error)"
    elif [ "$nerr" -gt 10 ]; then
        fail "$name" "$nerr ERROR lines after the kill"
    else
        pass "$name (0 new dma-bufs in $storm_secs s, $nerr ERROR \
line(s), sender CPU $((ticks1 - ticks0)) ticks)"
    fi
    tail -n +"$from" "$out" | grep -v '^\[thread' | head -5 | sed 's/^/      /'
}

if in_device_mode; then
    echo "skip: no retry storm (counts the emulator's dma-buf files)"
else
    storm_check
fi

# Host-staged rendezvous (gaudi_ipc excluded): UCX's pipeline stages
# 512 KiB fragments through host memory with gaudi_cpy copies on each side
# (once hung: a parked copy was refused while others were queued behind it)
for mem in rocm rocm,host host,rocm; do
    UCX_TLS=^gaudi_ipc ucp_pair "staged tag_bw -m $mem -s 67108864" \
        -t tag_bw -m $mem -s 67108864 -n 4 -w 2
done
UCX_TLS=^gaudi_ipc ucp_pair "staged tag_bw -m rocm -s 16777216 -O 1" \
    -t tag_bw -m rocm -s 16777216 -n 20 -w 5 -O 1
# a user's own rendezvous scheme still works (get_zcopy: data over AM)
UCX_TLS=^gaudi_ipc UCX_RNDV_SCHEME=get_zcopy ucp_pair \
    "staged tag_bw -m rocm -s 1048576 (UCX_RNDV_SCHEME=get_zcopy)" \
    -t tag_bw -m rocm -s 1048576 -n 5 -w 1

# UCP RMA on Gaudi memory needs UCX 1.13's new protocols (the default ones
# copy with the CPU what they cannot offload); data is verified by
# 90-mpi.sh (gaudi_ucp_rma_test)
for mem in rocm rocm,host host,rocm; do
    for size in 8 67108864; do
        UCX_PROTO_ENABLE=y ucp_pair "ucp_put_bw -m $mem -s $size (proto v2)" \
            -t ucp_put_bw -m $mem -s $size -n 3 -w 1
        UCX_PROTO_ENABLE=y ucp_pair "ucp_get -m $mem -s $size (proto v2)" \
            -t ucp_get -m $mem -s $size -n 3 -w 1
    done
done
# and the new protocols' rendezvous with gaudi_ipc (needs the PCI bus view
# of the emulated devices in sysfs: UCX resolves it for the distance)
UCX_PROTO_ENABLE=y ucp_pair "tag_bw -m rocm -s 16777216 (proto v2)" \
    -t tag_bw -m rocm -s 16777216 -n 5 -w 1

# UCT over gaudi_cpy: in-process (the copy transport reaches its own iface)
# (UCX_GAUDI_DEVICE=0: the device name is then gaudi_0)
# (device mode: the device the module's selection picks, a free one)
uct_dev=gaudi_0
if in_device_mode; then
    uct_dev=$(on_node ucx_info -d 2>/dev/null |
              sed -n 's/^# *Device: \(gaudi_[0-9]*\)$/\1/p' | head -1)
fi
uct_loop() {
    local name=$1; shift
    UCX_GAUDI_DEVICE=${uct_dev#gaudi_} on_node ucx_perftest -l -d "$uct_dev" \
        -x gaudi_cpy -m rocm "$@" > "$out" 2>&1
    perftest_ok "$name" "$out"
}

for layout in short bcopy zcopy; do
    uct_loop "UCT put_bw $layout -s 8" -t put_bw -D $layout -s 8 -n 100
    uct_loop "UCT get $layout -s 8" -t get -D $layout -s 8 -n 100
done
for size in 65536 16777216; do
    uct_loop "UCT put_bw zcopy -s $size" -t put_bw -D zcopy -s $size -n 20
    uct_loop "UCT get zcopy -s $size" -t get -D zcopy -s $size -n 20
done

# The SynapseAI copy backend (emulated libSynapse): Gaudi3, where auto
# picks it, and Gaudi2 with UCX_GAUDI_COPY_BACKEND=synapse; UCP eager and
# rendezvous (gaudi_ipc) in every direction, latency, and the UCT loops
if ! in_device_mode; then
    export UCX_GAUDI_SYNAPSE_LIB=$synsim_lib
    for run in auto:gaudi3 synapse:gaudi2; do
        new_node
        export HLSIM_ASIC=${run#*:} UCX_GAUDI_COPY_BACKEND=${run%%:*}
        tag="[$HLSIM_ASIC, backend $UCX_GAUDI_COPY_BACKEND]"
        for mem in rocm rocm,host host,rocm; do
            for size in 8 1048576 67108864; do
                ucp_pair "tag_bw -m $mem -s $size $tag" -t tag_bw -m $mem \
                    -s $size -n 3 -w 1
            done
        done
        ucp_pair "tag_lat -m rocm -s 8 $tag" -t tag_lat -m rocm -s 8 -n 200 \
            -w 10
        UCX_TLS=^gaudi_ipc ucp_pair "staged tag_bw -m rocm -s 67108864 $tag" \
            -t tag_bw -m rocm -s 67108864 -n 4 -w 2
        for layout in short bcopy zcopy; do
            uct_loop "UCT put_bw $layout -s 8 $tag" -t put_bw -D $layout \
                -s 8 -n 100
        done
        uct_loop "UCT get zcopy -s 16777216 $tag" -t get -D zcopy \
            -s 16777216 -n 20
    done
    # device memory from synDeviceMalloc, exported to the peer (gaudi_ipc)
    # and kept for reuse: Gaudi3 with UCX_GAUDI_DEVICE_MEM=synapse, and
    # Gaudi1 on the SynapseAI backend, where it is the default
    for run in gaudi3:auto:synapse gaudi1:synapse:auto; do
        IFS=: read -r HLSIM_ASIC UCX_GAUDI_COPY_BACKEND mem <<< "$run"
        export HLSIM_ASIC UCX_GAUDI_COPY_BACKEND
        new_node
        for size in 1048576 67108864; do
            UCX_GAUDI_DEVICE_MEM=$mem ucp_pair \
                "tag_bw -m rocm -s $size [$HLSIM_ASIC, backend $UCX_GAUDI_COPY_BACKEND, UCX_GAUDI_DEVICE_MEM=$mem]" \
                -t tag_bw -m rocm -s $size -n 3 -w 1
        done
    done
    unset HLSIM_ASIC UCX_GAUDI_COPY_BACKEND UCX_GAUDI_SYNAPSE_LIB
fi

finish
