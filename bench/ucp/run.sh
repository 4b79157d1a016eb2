#!/bin/bash
#
# UCP tag_bw between two processes on the emulated node (stock
# ucx_perftest), Gaudi->Gaudi with gaudi_ipc, Gaudi->Gaudi host-staged
# (gaudi_ipc excluded), and host->host, all in one run; reported as ratios
# to host->host of the same run. Median of ROUNDS runs, interleaved.
#
# usage: bench/ucp/run.sh [BUILD_DIR]   (default: <repo>/build)
#
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/build}
rounds=${ROUNDS:-3}
sizes=${SIZES:-"65536 1048576 16777216"}

export GAUDI_UCX_LIBDIR=$build/lib UCX_WARN_UNUSED_ENV_VARS=n
export HLSIM_ROOT=$(mktemp -d /tmp/hlsim-bench.XXXXXX) HLSIM_NUM_DEVICES=2
trap 'rm -rf "$HLSIM_ROOT"' EXIT

run() {
    LD_PRELOAD="$build/lib/libhlsim.so" timeout 300 \
        "$build/contrib/ucx-gaudi-run" "$@"
}

# one measurement: MB/s of tag_bw, or 0
one() {
    local mem=$1 size=$2 tls=$3 port=$((20000 + RANDOM % 20000)) iters out
    iters=$(( size >= 16777216 ? 10 : 200 ))
    out=$(mktemp)
    UCX_TLS=$tls run ucx_perftest -p $port -t tag_bw -m $mem -s $size \
        -n $iters -w 5 >/dev/null 2>&1 &
    sleep 1
    UCX_TLS=$tls run ucx_perftest 127.0.0.1 -p $port -t tag_bw -m $mem \
        -s $size -n $iters -w 5 > "$out" 2>&1
    wait
    awk '/^Final:/ { v = $7 } END { print v + 0 }' "$out"
    rm -f "$out"
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ a[NR] = $1 }
    END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

gmem=$(run ucx_perftest -h 2>&1 | awk '/GPU memory/ { print $1; exit }')
printf "%-9s %11s %13s %13s %9s %9s\n" size "host MB/s" "gaudi ipc" \
    "gaudi staged" "ipc/host" "stg/host"
for size in $sizes; do
    h=""; g=""; s=""
    for r in $(seq "$rounds"); do
        h="$h $(one host $size all)"
        g="$g $(one $gmem $size all)"
        s="$s $(one $gmem $size ^gaudi_ipc)"
    done
    h=$(echo $h | median); g=$(echo $g | median); s=$(echo $s | median)
    awk -v z=$size -v h=$h -v g=$g -v s=$s 'BEGIN {
        printf "%-9s %11.1f %13.1f %13.1f %9.2f %9.2f\n", z, h, g, s,
               (h > 0) ? g / h : 0, (h > 0) ? s / h : 0 }'
done
