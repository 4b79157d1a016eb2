#!/bin/bash
#
# The ucx-gaudi demo: build, then show stock UCX using the Gaudi transports
# on an emulated node of two Gaudi2 devices (test/hlsim).
#
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=$("$top/contrib/build.sh")

export HLSIM_ROOT=$(mktemp -d /tmp/hlsim-demo.XXXXXX)
export HLSIM_NUM_DEVICES=${HLSIM_NUM_DEVICES:-2}
export HLSIM_ASIC=${HLSIM_ASIC:-gaudi2}
export GAUDI_UCX_LIBDIR="$build/lib"
trap 'rm -rf "$HLSIM_ROOT"' EXIT

run() {
    LD_PRELOAD="$build/lib/libhlsim.so" "$build/contrib/ucx-gaudi-run" "$@"
}

echo "== Emulated node: $HLSIM_NUM_DEVICES x $HLSIM_ASIC in $HLSIM_ROOT"
echo
echo "== stock ucx_info -d (Gaudi part), module loaded by ucx-gaudi-run"
run ucx_info -d | awk '
    /^# Memory domain:/ { show = ($0 ~ /gaudi/) }
    /^# Connection manager:/ { show = 0 }
    show'
