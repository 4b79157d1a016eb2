#!/bin/bash
#
# The ucx-gaudi demo: build, then show stock UCX using the Gaudi transports
# on an emulated node of two Gaudi2 devices (test/emu/hlsim), then on a node of
# two Gaudi3 devices, where the copies go through SynapseAI (the emulated
# libSynapse of test/emu/synsim, docs/synapse.md).
#
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=$("$top/contrib/build.sh")
. "$top/test/suites/wait.sh"

export HLSIM_ROOT=$(mktemp -d /tmp/hlsim-demo.XXXXXX)
export HLSIM_NUM_DEVICES=${HLSIM_NUM_DEVICES:-2}
export HLSIM_ASIC=${HLSIM_ASIC:-gaudi2}
export GAUDI_UCX_LIBDIR="$build/lib"
g3_root=$(mktemp -d /tmp/hlsim-demo.XXXXXX)
trap 'rm -rf "$HLSIM_ROOT" "$g3_root"' EXIT

run() {
    LD_PRELOAD="$build/lib/libhlsim.so" "$build/contrib/ucx-gaudi-run" "$@"
}

echo "== Emulated node: $HLSIM_NUM_DEVICES x $HLSIM_ASIC in $HLSIM_ROOT"
echo
echo "== ucx-gaudi-check: what this node gives a job"
LD_PRELOAD="$build/lib/libhlsim.so" "$build/src/tools/check/ucx-gaudi-check"
echo
echo "== stock ucx_info -d (Gaudi part), module loaded by ucx-gaudi-run"
run ucx_info -d | awk '
    /^# Memory domain:/ { show = ($0 ~ /gaudi/) }
    /[Cc]onnection manager/ { show = 0 }
    show'

# Two ucx_perftest processes on this node, each owning its own device (the
# plugin takes the first free one), stock binary, UCP tag matching.
perftest_bw() {
    local mem=$1 size=$2 port=$((20000 + RANDOM % 20000)) out
    out=$(mktemp)
    UCX_WARN_UNUSED_ENV_VARS=n run ucx_perftest -p $port -t tag_bw -m $mem \
        -s $size -n 20 -w 2 >/dev/null 2>&1 &
    wait_listen "$port" $! 60
    UCX_WARN_UNUSED_ENV_VARS=n run ucx_perftest 127.0.0.1 -p $port \
        -t tag_bw -m $mem -s $size -n 20 -w 2 > "$out" 2>&1
    wait
    awk '/^Final:/ { print $7 }' "$out"
    rm -f "$out"
}

echo
echo "== stock ucx_perftest tag_bw between two processes (MB/s)"
# awk reads to the end: an early exit could kill ucx_perftest with SIGPIPE,
# which pipefail turns into a failure of the whole demo
mem_name=$(run ucx_perftest -h 2>&1 |
    awk '/GPU memory/ && !m { m = $1 } END { print m }')
printf "%-10s %14s %14s %8s\n" size host "Gaudi ($mem_name)" ratio
for size in 65536 1048576 16777216; do
    host_bw=$(perftest_bw host $size)
    dev_bw=$(perftest_bw "$mem_name" $size)
    printf "%-10s %14s %14s %8s\n" $size "${host_bw:-failed}" \
        "${dev_bw:-failed}" \
        "$(awk -v a="$dev_bw" -v b="$host_bw" \
            'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "-" }')"
done
echo
echo "Gaudi memory is presented as the '$mem_name' memory type on UCX"\
     "$(ucx_info -v | sed -n 's/^# Version //p') (docs/configuration.md)."

echo
echo "== A Gaudi3 node: no kernel DMA queue, the copies go through SynapseAI"
export HLSIM_ROOT=$g3_root HLSIM_ASIC=gaudi3
export UCX_GAUDI_SYNAPSE_LIB="$build/test/emu/synsim/.libs/libSynapse.so"
UCX_LOG_LEVEL=diag run ucx_info -d 2>&1 | awk '
    /copy backend/ { sub(/.*UCX  DIAG  /, ""); print "  " $0 }
    /^# Memory domain:/ { show = ($0 ~ /gaudi/) }
    /[Cc]onnection manager/ { show = 0 }
    show && /Memory domain:|Transport:/'
printf "%-10s %14s\n" size "Gaudi3 ($mem_name)"
for size in 65536 16777216; do
    dev_bw=$(perftest_bw "$mem_name" $size)
    printf "%-10s %14s\n" $size "${dev_bw:-failed}"
done
