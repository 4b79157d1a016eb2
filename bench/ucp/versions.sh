#!/bin/bash
#
# UCP tag_bw between two processes on the emulated node, Gaudi->Gaudi and
# host->host, on two UCX releases in one run (interleaved rounds, median of
# ROUNDS): the installed UCX with the module preloaded (build A), and an
# upstream UCX that loads the module itself (build B, made by
# contrib/build-ucx.sh; its default protocols are UCX's "new" ones).
#
# usage: bench/ucp/versions.sh [BUILD_A [BUILD_B UCX_PREFIX_B]]
#   default: <repo>/build, and <repo>/build/ucx-1.22.0 on
#   ~/.cache/ucx-gaudi/upstream/ucx-1.22.0/install
# env: ROUNDS (3), SIZES ("1048576 16777216"), ITERS_LARGE (messages per
#   measurement at 16 MiB and above, 10; 200 below)
#
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/test/suites/wait.sh"
build_a=${1:-$top/build}
build_b=${2:-$top/build/ucx-1.22.0}
prefix_b=${3:-${XDG_CACHE_HOME:-$HOME/.cache}/ucx-gaudi/upstream/ucx-1.22.0/install}
rounds=${ROUNDS:-3}
sizes=${SIZES:-"1048576 16777216"}

export UCX_WARN_UNUSED_ENV_VARS=n
export HLSIM_ROOT=$(mktemp -d /tmp/hlsim-bench.XXXXXX) HLSIM_NUM_DEVICES=2
trap 'rm -rf "$HLSIM_ROOT"' EXIT

# run A|B command...: the installed UCX with the wrapper, or UCX B's own
# binaries finding the module through UCX_PLUGIN_PATH
run() {
    local which=$1; shift
    if [ "$which" = A ]; then
        GAUDI_UCX_LIBDIR=$build_a/lib LD_PRELOAD="$build_a/lib/libhlsim.so" \
            timeout 300 "$build_a/contrib/ucx-gaudi-run" "$@"
    else
        PATH="$prefix_b/bin:$PATH" UCX_PLUGIN_PATH=$build_b/lib \
            LD_PRELOAD="$build_b/lib/libhlsim.so" timeout 300 "$@"
    fi
}

# the memory type holding Gaudi memory in UCX A or B
gaudi_mem() {
    local types
    types=$(run "$1" ucx_perftest -h 2>&1 | awk '$2 == "-" {print $1}')
    echo "$types" | grep -x -m1 gaudi || echo "$types" | grep -x -m1 rocm
}

# one measurement: MB/s of tag_bw, or 0
one() {
    local which=$1 mem=$2 size=$3 port=$((20000 + RANDOM % 20000))
    local iters=$(( size >= 16777216 ? ${ITERS_LARGE:-10} : 200 )) out
    out=$(mktemp)
    run "$which" ucx_perftest -p $port -t tag_bw -m $mem -s $size \
        -n $iters -w 5 >/dev/null 2>&1 &
    wait_listen $port $! || true
    run "$which" ucx_perftest 127.0.0.1 -p $port -t tag_bw -m $mem \
        -s $size -n $iters -w 5 > "$out" 2>&1
    wait
    awk '/^Final:/ { v = $7 } END { print v + 0 }' "$out"
    rm -f "$out"
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ a[NR] = $1 }
    END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

ver() { run "$1" ucx_info -v | sed -n -e 's/^# Library version: //p' \
            -e 's/^# Version //p'; }
ga=$(gaudi_mem A); gb=$(gaudi_mem B)
va=$(ver A); vb=$(ver B)
echo "A: UCX $va (-m $ga, module preloaded); B: UCX $vb (-m $gb, UCX_PLUGIN_PATH)"
printf "%-9s %10s %10s %10s %10s %8s %8s\n" size "A host" "A gaudi" \
    "B host" "B gaudi" "B/A gd" "B/A hst"
for size in $sizes; do
    ah=""; ag=""; bh=""; bg=""
    for r in $(seq "$rounds"); do
        ah="$ah $(one A host $size)"
        bh="$bh $(one B host $size)"
        ag="$ag $(one A $ga $size)"
        bg="$bg $(one B $gb $size)"
    done
    ah=$(echo $ah | median); ag=$(echo $ag | median)
    bh=$(echo $bh | median); bg=$(echo $bg | median)
    awk -v z=$size -v ah=$ah -v ag=$ag -v bh=$bh -v bg=$bg 'BEGIN {
        printf "%-9s %10.1f %10.1f %10.1f %10.1f %8.2f %8.2f\n", z, ah, ag,
               bh, bg, (ag > 0) ? bg / ag : 0, (ah > 0) ? bh / ah : 0 }'
done
