#!/bin/bash
#
# UCP tag_bw between two processes on the emulated node (stock
# ucx_perftest), Gaudi->Gaudi with gaudi_ipc, Gaudi->Gaudi with gaudi_ipc
# in PEER error mode (-e: UCP_ERR_HANDLING_MODE_PEER, whose rendezvous
# needs memory invalidation, docs/ipc.md), Gaudi->Gaudi host-staged
# (gaudi_ipc excluded), and host->host, all in one run; reported as ratios
# to host->host of the same run (PEER: to gaudi_ipc without -e). Median of
# ROUNDS runs, interleaved.
#
# Two send windows, the same for every configuration:
#  - one message in flight (-O 1): the transfer path itself;
#  - ucx_perftest's default window: for rendezvous through host fragments,
#    UCX 1.13 allocates the fragments of every outstanding message when its
#    rendezvous starts, so a short run mostly measures the growth of that
#    staging pool (first access to new memory is slow on this VM; see
#    docs/performance.md).
#
# usage: bench/ucp/run.sh [BUILD_DIR]   (default: <repo>/build)
#
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/build}
rounds=${ROUNDS:-3}
sizes=${SIZES:-"65536 1048576 16777216"}
windows=${WINDOWS:-"1 default"}

. "$top/test/suites/wait.sh"

export GAUDI_UCX_LIBDIR=$build/lib UCX_WARN_UNUSED_ENV_VARS=n
export HLSIM_ROOT=$(mktemp -d /tmp/hlsim-bench.XXXXXX) HLSIM_NUM_DEVICES=2
trap 'rm -rf "$HLSIM_ROOT"' EXIT

run() {
    LD_PRELOAD="$build/lib/libhlsim.so" timeout 300 \
        "$build/contrib/ucx-gaudi-run" "$@"
}

# one measurement: MB/s of tag_bw, or 0 (extra ucx_perftest flags after
# the window)
one() {
    local mem=$1 size=$2 tls=$3 window=$4 port=$((20000 + RANDOM % 20000))
    local iters warmup args out
    shift 4
    if [ "$window" = default ]; then
        iters=$(( size >= 16777216 ? 10 : 200 ))
        warmup=5
        args=()
    else
        iters=$(( size >= 16777216 ? 50 : 500 ))
        warmup=$(( size >= 16777216 ? 20 : 50 ))
        args=(-O "$window")
    fi
    args+=("$@")
    out=$(mktemp)
    UCX_TLS=$tls run ucx_perftest -p $port -t tag_bw -m $mem -s $size \
        -n $iters -w $warmup "${args[@]}" >/dev/null 2>&1 &
    wait_listen "$port" $! 60
    UCX_TLS=$tls run ucx_perftest 127.0.0.1 -p $port -t tag_bw -m $mem \
        -s $size -n $iters -w $warmup "${args[@]}" > "$out" 2>&1
    wait
    awk '/^Final:/ { v = $7 } END { print v + 0 }' "$out"
    rm -f "$out"
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ a[NR] = $1 }
    END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

gmem=$(run ucx_perftest -h 2>&1 |
    awk '/GPU memory/ && !m { m = $1 } END { print m }')
for window in $windows; do
    echo "window: $window ($( [ "$window" = default ] && echo \
        "ucx_perftest default, short run" || echo "-O $window"))"
    printf "%-9s %11s %13s %13s %13s %9s %9s %9s\n" size "host MB/s" \
        "gaudi ipc" "gaudi ipc -e" "gaudi staged" "ipc/host" "-e/ipc" \
        "stg/host"
    for size in $sizes; do
        h=""; g=""; e=""; s=""
        for r in $(seq "$rounds"); do
            h="$h $(one host $size all $window)"
            g="$g $(one $gmem $size all $window)"
            e="$e $(one $gmem $size all $window -e)"
            s="$s $(one $gmem $size ^gaudi_ipc $window)"
        done
        h=$(echo $h | median); g=$(echo $g | median)
        e=$(echo $e | median); s=$(echo $s | median)
        awk -v z=$size -v h=$h -v g=$g -v e=$e -v s=$s 'BEGIN {
            printf "%-9s %11.1f %13.1f %13.1f %13.1f %9.2f %9.2f %9.2f\n",
                   z, h, g, e, s, (h > 0) ? g / h : 0, (g > 0) ? e / g : 0,
                   (h > 0) ? s / h : 0 }'
    done
    echo
done
