#!/bin/bash
#
# gaudi_cpy benchmark on the emulated node (docs/performance.md): zcopy
# bandwidth H2D/D2H/D2D at 64 KiB..16 MiB as a ratio to memcpy measured
# in the same run, put_short latency; with CALLGRIND=1 also host
# instructions per operation (valgrind --tool=callgrind).
# Usage: bench/dma/run.sh [total_mib [window]]
#   GAUDI_UCX_BUILD=<build dir> (default: the current directory)
#   HLSIM_DMA_GBPS=<GB/s per engine> to model engine bandwidth (default off)
#
set -eu
build=${GAUDI_UCX_BUILD:-$PWD}
bench=$build/test/gtest/dma/gaudi_dma_bench
[ -x "$bench" ] || make -C "$build/test/gtest/dma" gaudi_dma_bench >/dev/null
root=$(mktemp -d /tmp/hlsim-bench.XXXXXX)
trap 'rm -rf "$root"' EXIT
export HLSIM_ROOT=$root HLSIM_NUM_DEVICES=1
preload="$build/test/hlsim/.libs/libhlsim.so $build/src/uct/gaudi/.libs/libuct_gaudi.so"
echo "# $(nproc) CPUs, HLSIM_ASIC=${HLSIM_ASIC:-gaudi2}, HLSIM_DMA_GBPS=${HLSIM_DMA_GBPS:-0}"
LD_PRELOAD="$preload" "$bench" "$@"

if [ "${CALLGRIND:-0}" = 1 ]; then
    out=$root/cg.out
    LD_PRELOAD="$preload" valgrind --tool=callgrind --callgrind-out-file="$out" \
        --toggle-collect='uct_gaudi_copy_ep_put_short' \
        --toggle-collect='uct_gaudi_copy_ep_put_zcopy' \
        --toggle-collect='uct_gaudi_copy_iface_progress' \
        "$bench" 32 16 >/dev/null 2>&1 || true
    callgrind_annotate --inclusive=yes "$out" 2>/dev/null |
        grep -E 'uct_gaudi_copy_ep_put_short|uct_gaudi_copy_ep_put_zcopy|uct_gaudi_copy_iface_progress|ioctl' | head -10
fi
