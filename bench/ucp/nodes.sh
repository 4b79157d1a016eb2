#!/bin/bash
#
# UCP RMA between two emulated nodes over tcp (each process on a node of
# its own, HLSIM_ROOT, one Gaudi2 each), the way NIXL moves data: stock
# ucx_perftest -t ucp_put_bw / ucp_get with registered buffers (-z: the
# memh is passed to ucp_put_nbx / ucp_get_nbx) in PEER error mode (-e).
# Gaudi->Gaudi against host->host over the same tcp link, interleaved in
# one run; ratio = Gaudi / host of the same run, median of ROUNDS rounds.
# Each setting of VARIANTS (";"-separated lists of UCX variables, "default"
# for none) is measured for both memory types, its ratio against its own
# host->host.
#
# usage: bench/ucp/nodes.sh [BUILD_DIR [UCX_PREFIX]]
#   BUILD_DIR default <repo>/build/ucx-1.22.0 on
#   ~/.cache/ucx-gaudi/upstream/ucx-1.22.0/install (UCX's loader finds the
#   module through UCX_PLUGIN_PATH); BUILD_DIR alone (e.g. <repo>/build):
#   the installed UCX with the module preloaded and UCX_PROTO_ENABLE=y
#   (UCX 1.13's default protocols have no RMA on Gaudi memory).
# env: ROUNDS (3), SIZES ("4194304"), TESTS ("ucp_put_bw ucp_get"),
#   ITERS (messages per measurement, 100; warm-up 10), VARIANTS ("default")
#
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/test/suites/wait.sh"
if [ $# -ge 1 ]; then
    build=$1
    prefix=${2:-}
else
    build=$top/build/ucx-1.22.0
    prefix=${XDG_CACHE_HOME:-$HOME/.cache}/ucx-gaudi/upstream/ucx-1.22.0/install
fi
rounds=${ROUNDS:-3}
sizes=${SIZES:-4194304}
tests=${TESTS:-"ucp_put_bw ucp_get"}
iters=${ITERS:-100}
IFS=';' read -r -a variants <<< "${VARIANTS:-default}"

export UCX_WARN_UNUSED_ENV_VARS=n HLSIM_NUM_DEVICES=1
nodes=$(mktemp -d /tmp/hlsim-nodes.XXXXXX)
trap 'rm -rf "$nodes"' EXIT

# run NODE VARIANT command...: on emulated node NODE with the variables of
# VARIANT
run() {
    local node=$1 variant=$2; shift 2
    local -a vars=()
    [ "$variant" = default ] || read -r -a vars <<< "$variant"
    if [ -n "$prefix" ]; then
        env "${vars[@]}" HLSIM_ROOT="$nodes/$node" PATH="$prefix/bin:$PATH" \
            UCX_PLUGIN_PATH="$build/lib" \
            LD_PRELOAD="$build/lib/libhlsim.so" timeout 300 "$@"
    else
        env UCX_PROTO_ENABLE=y "${vars[@]}" HLSIM_ROOT="$nodes/$node" \
            GAUDI_UCX_LIBDIR="$build/lib" \
            LD_PRELOAD="$build/lib/libhlsim.so" \
            timeout 300 "$build/contrib/ucx-gaudi-run" "$@"
    fi
}

# the memory type holding Gaudi memory (gaudi from UCX 1.21, else rocm)
gaudi_mem() {
    local types
    types=$(run a default ucx_perftest -h 2>&1 | awk '$2 == "-" {print $1}')
    echo "$types" | grep -x -m1 gaudi || echo "$types" | grep -x -m1 rocm
}

# one TEST MEM SIZE VARIANT: MB/s of one ucx_perftest between node a
# (server) and node b (client), or 0
one() {
    local test=$1 mem=$2 size=$3 variant=$4 port out
    port=$((20000 + RANDOM % 20000))
    out=$(mktemp)
    rm -rf "$nodes/a" "$nodes/b"
    mkdir -p "$nodes/a" "$nodes/b"
    run a "$variant" ucx_perftest -p $port -t $test -m $mem -s $size \
        -n $iters -w 10 -e -z >/dev/null 2>&1 &
    wait_listen $port $! 60 || true
    run b "$variant" ucx_perftest 127.0.0.1 -p $port -t $test -m $mem \
        -s $size -n $iters -w 10 -e -z > "$out" 2>&1
    wait
    awk '/^Final:/ { v = $7 } END { print v + 0 }' "$out"
    rm -f "$out"
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ a[NR] = $1 }
    END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

gm=$(gaudi_mem)
echo "UCX $(run a default ucx_info -v | sed -n -e 's/^# Library version: //p' \
    -e 's/^# Version //p') (-m $gm), two emulated nodes over tcp," \
    "-e -z, $iters messages, median of $rounds; load: $(cut -d' ' -f1-3 \
    /proc/loadavg)"
printf "%-10s %-9s %10s %10s %6s %5s  %s\n" test size "host MB/s" \
    "gaudi MB/s" ratio load variables
for test in $tests; do
    for size in $sizes; do
        for variant in "${variants[@]}"; do
            h=""; g=""
            for _ in $(seq "$rounds"); do
                h="$h $(one $test host $size "$variant")"
                g="$g $(one $test $gm $size "$variant")"
            done
            h=$(echo $h | median); g=$(echo $g | median)
            awk -v t=$test -v z=$size -v h=$h -v g=$g -v v="$variant" \
                -v l="$(cut -d' ' -f1 /proc/loadavg)" \
                'BEGIN { printf "%-10s %-9s %10.1f %10.1f %6.2f %5s  %s\n",
                         t, z, h, g, (h > 0) ? g / h : 0, l, v }'
        done
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
